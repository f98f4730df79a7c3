# TRANSITIONAL SHIM (issue 26): re-exports for the integrator; delete after imports are rewritten.
"""Old home of ``coref add``: now :mod:`coref.jobs.add`, :mod:`coref.jobs.incremental`, :mod:`coref.cli.add`."""
from coref.cli.add import add_arguments, main  # noqa: F401
from coref.jobs.add import ADD_SWEEPS, add, read_clustered, reuse_encodings  # noqa: F401
from coref.jobs.incremental import add_clusters  # noqa: F401
from coref.jobs.incremental import next_cluster_k as _next_k  # noqa: F401
