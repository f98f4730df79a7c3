# TRANSITIONAL SHIM (issue 26): re-exports for the integrator; delete after imports are rewritten.
"""Old home of ``coref predict``: now :mod:`coref.jobs.predict`, :mod:`coref.jobs.clusters`, :mod:`coref.cli.predict`."""
from coref.cli.common import ERRORS, add_common_arguments, print_summary, report_error  # noqa: F401
from coref.cli.predict import add_arguments, main  # noqa: F401
from coref.jobs.clusters import canonical_cluster_ids, predict_clusters  # noqa: F401
from coref.jobs.predict import cache_params, predict  # noqa: F401
from coref.jobs.writing import BlockEncodings as _BlockEncodings  # noqa: F401
from coref.jobs.writing import write_outputs  # noqa: F401
