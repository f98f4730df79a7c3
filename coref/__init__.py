"""End-to-end author coreference with Racing-Normal Gibbs.

Chen & Ghahramani (2016), Sec. 5.3 and Appx. C.3, after Singh et al. (2012):
a pairwise CRF over cluster assignments of author mentions within blocks, sampled
by annealed Gibbs whose conditionals are subsampled with a Racing-Normal test.

Train once, cluster, add::

    est = coref.AuthorCoref(rng=0).fit(df_labeled)      # or coref.AuthorCoref.load("model_dir")
    clusters = est.predict(df)                          # mention_id, block, cluster_id
    clusters = est.add(clusters, df_new, mentions=df)   # ids of existing clusters never change

The same jobs as the command line, as functions returning result objects:
``coref.jobs.predict.predict``, ``coref.jobs.add.add``, ``coref.jobs.fit.fit``,
``coref.jobs.explain.explain`` and ``coref.run`` (:mod:`coref.jobs`).

Names are imported lazily from their modules (table below) so that importing
``coref`` does not import Dask or scikit-learn until they are needed. The compiled
kernels are imported with :func:`sampling.utils.kernels.load_kernel`: on an unbuilt source
tree the first name that needs them raises an ImportError saying to run
``pip install -e .``.
"""
import importlib

from sampling.utils.cli import lazy_exports

__version__ = "0.2.0"

_EXPORTS = {
    "AuthorCoref": "coref.estimator",
    "load_mentions": "coref.io",
    "MENTION_COLUMNS": "coref.io",
    "LoadReport": "coref.io",
    "write_mentions": "coref.io",
    "add_optional_columns": "coref.io",
    "FORMATS": "coref.io",
    "OPTIONAL_COLUMNS": "coref.io",
    "ALL_COLUMNS": "coref.io",
    "IDENTIFIER_COLUMNS": "coref.io",
    "assignment_confidence": "coref.confidence",
    "submodel": "coref.confidence",
    "calibration_scores": "coref.confidence",
    "fit_calibration": "coref.confidence",
    "apply_calibration": "coref.confidence",
    "write_confidence_report": "coref.confidence",
    "assign_blocks": "coref.blocking",
    "b3": "coref.evaluate",
    "B3Result": "coref.evaluate",
    "pairwise_scores": "coref.evaluate",
    "evaluate_clusters": "coref.evaluate",
    "encode_mentions": "coref.encoding",
    "PairwiseModel": "coref.model",
    "save_model": "coref.model",
    "load_model": "coref.model",
    "GibbsCoref": "coref.gibbs",
    "explain_pair": "coref.explain",
    "run": "coref.jobs.run",
    "synthesize_mentions": "coref.synth",
    "MentionFormatError": "coref.exceptions",
    "ModelFormatError": "coref.exceptions",
    "MixedFormatsError": "coref.exceptions",
    "SkippedRecordsWarning": "coref.exceptions",
    "SkippedFilesWarning": "coref.exceptions",
}

#: Sub-packages reachable as attributes right after ``import coref`` (imported on first use).
_SUBMODULES = ("datasets", "io", "jobs")

__all__ = sorted(_EXPORTS) + list(_SUBMODULES)

_getattr, _dir = lazy_exports('coref', _EXPORTS, globals())


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"coref.{name}")
    return _getattr(name)


def __dir__():
    return sorted(set(_dir()) | set(_SUBMODULES))
