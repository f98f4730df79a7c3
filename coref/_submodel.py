# TRANSITIONAL SHIM (issue 26): re-exports for the integrator; delete after imports are rewritten.
from coref.confidence.exact import MAX_EXACT_SUBSET, exact_log_z, log_block_probabilities  # noqa: F401
from coref.confidence.submodels import (ENCODINGS, SubProblem, build_graphical_model,  # noqa: F401
                                        check_constraints, subproblem)
