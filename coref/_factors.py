# TRANSITIONAL SHIM (issue 26): re-exports for the integrator; delete after imports are rewritten.
from coref.factors._factors import *  # noqa: F401,F403
from coref.factors._factors import (MEMO_MAX_BYTES, factor_matrix, factor_rate, member_sums,  # noqa: F401
                                    n_base, n_features, pair_factors, pair_features, row_factors,
                                    share_memo, shared_memo, unshare_memo)
