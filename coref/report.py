# TRANSITIONAL SHIM (issue 26): re-exports for the integrator; delete after imports are rewritten.
"""Moved: report files to :mod:`coref.outputs.report`, figures to :mod:`coref.outputs.plots`,
margins to :mod:`coref.margins`."""
from coref.margins import cluster_margins, weakest_merges
from coref.outputs.plots import FIGURES, plot_curves, plot_reliability
from coref.outputs.report import (CLUSTER_COLUMNS, CURVE_COLUMNS, format_summary, largest_clusters,
                                  render_confidence_md, render_predict_md, render_report_md, sampler_items,
                                  write_csv, write_json, write_report)

__all__ = ["CLUSTER_COLUMNS", "CURVE_COLUMNS", "FIGURES", "cluster_margins", "format_summary", "largest_clusters",
           "plot_curves", "plot_reliability", "render_confidence_md", "render_predict_md", "render_report_md",
           "sampler_items", "weakest_merges", "write_csv", "write_json", "write_report"]
