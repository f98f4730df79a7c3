"""End-to-end author coreference with Racing-Normal Gibbs.

Chen & Ghahramani (2016), Sec. 5.3 and Appx. C.3, after Singh et al. (2012):
a pairwise CRF over cluster assignments of author mentions within blocks, sampled
by annealed Gibbs whose conditionals are subsampled with a Racing-Normal test.

Names are imported lazily from their modules (table below) so that importing
``coref`` does not import Dask or scikit-learn until they are needed.
"""
from sampling._cli import lazy_exports

_EXPORTS = {
    "load_mentions": "coref.io",
    "MENTION_COLUMNS": "coref.io",
    "LoadReport": "coref.io",
    "assign_blocks": "coref.blocking",
    "b3": "coref.evaluate",
    "B3Result": "coref.evaluate",
    "pairwise_scores": "coref.evaluate",
    "evaluate_clusters": "coref.evaluate",
    "encode_mentions": "coref.features",
    "PairwiseModel": "coref.model",
    "GibbsCoref": "coref.gibbs",
    "run": "coref.pipeline",
    "synthesize_mentions": "coref.synth",
    "MentionFormatError": "coref.exceptions",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports('coref', _EXPORTS, globals())
