# TRANSITIONAL SHIM (issue 26): re-exports for the integrator; delete after imports are rewritten.
"""Old home of ``coref fit``: now :mod:`coref.jobs.fit` (job) and :mod:`coref.cli.fit` (command line)."""
from coref.cli.fit import add_arguments, main  # noqa: F401
from coref.jobs.fit import fit  # noqa: F401
