# TRANSITIONAL SHIM (issue 26): re-exports for the integrator; delete after imports are rewritten.
"""Old home of ``coref run``: now :mod:`coref.jobs.run` (job), :mod:`coref.cli.run` (command line)."""
from coref.cli.run import add_arguments, main  # noqa: F401
from coref.inference import BlockResult, infer_blocks  # noqa: F401
from coref.jobs.folds import assign_folds  # noqa: F401
from coref.jobs.folds import fit_fold_model as _fit_fold_model  # noqa: F401
from coref.jobs.heldout import heldout_confidence  # noqa: F401
from coref.jobs.run import RunResult, run  # noqa: F401
from coref.jobs.scoring import scores as _scores  # noqa: F401
from coref.jobs.scoring import sweep_curves as _sweep_curves  # noqa: F401
from coref.jobs.scoring import within_block_b3 as _within_block_b3  # noqa: F401
