"""The pairwise coreference model: theta, the block prior, saving and loading.

* :mod:`coref.model.pairwise`: :class:`PairwiseModel` (f = theta . phi + b fitted on
  labeled pairs), :func:`labeled_pairs`.
* :mod:`coref.model.block_prior`: the per-block prior odds of coreference,
  :func:`rate_pairs`, :func:`block_bias_evals`.
* :mod:`coref.model.persist`: :func:`save_model` / :func:`load_model` (JSON + npz +
  manifest with SHA-256 checksums; the format is in that module's docstring).
* :mod:`coref.model._pseudolik`: the maximum pseudo-likelihood refit of theta.

Tuning the intercept shift by running Gibbs is above this package:
:func:`coref.training.tune_shift`, called by ``PairwiseModel.fit``.
"""
from sampling.utils.cli import lazy_exports

# Lazy, so that importing coref.model.block_prior (what the Gibbs sampler needs) does not
# import coref.model.pairwise, which sits above the sampler (it tunes its shift by Gibbs).
_EXPORTS = {
    "PairwiseModel": "coref.model.pairwise",
    "labeled_pairs": "coref.model.pairwise",
    "rate_pairs": "coref.model.block_prior",
    "block_bias_evals": "coref.model.block_prior",
    "save_model": "coref.model.persist",
    "load_model": "coref.model.persist",
    "MODEL_FORMAT": "coref.model.persist",
    "MODEL_VERSION": "coref.model.persist",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports("coref.model", _EXPORTS, globals())
