# TRANSITIONAL SHIM (issue 26): re-exports for the integrator; delete after imports are rewritten.
from coref.gibbs._gibbs_py import *  # noqa: F401,F403
from coref.gibbs._gibbs_py import Xoshiro, anneal, step  # noqa: F401
