# TRANSITIONAL SHIM (issue 26): re-exports for the integrator; delete after imports are rewritten.
from coref.factors._factors_py import *  # noqa: F401,F403
from coref.factors._factors_py import (block_factor, block_phi, factor_matrix, factor_rate,  # noqa: F401
                                       member_sums, n_features, pair_factors, pair_features)
