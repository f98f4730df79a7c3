# TRANSITIONAL SHIM (issue 26): re-exports for the integrator; delete after imports are rewritten.
from coref.gibbs._gibbs import *  # noqa: F401,F403
from coref.gibbs._gibbs import anneal, gumbel_lower, gumbel_upper, marginal_sweep  # noqa: F401
