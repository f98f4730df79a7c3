"""The pairwise coreference model: theta, the block prior, saving and loading.

* :mod:`coref.model.pairwise`: :class:`PairwiseModel` (f = theta . phi + b fitted on
  labeled pairs), :func:`labeled_pairs`.
* :mod:`coref.model.block_prior`: the per-block prior odds of coreference,
  :func:`rate_pairs`, :func:`block_bias_evals`, :func:`block_theta`.
* :mod:`coref.model.shift_tree`: the block prior's learned correction (:class:`ShiftTree`, a small
  regression tree on a block's factor statistics; fitted by :mod:`coref.prior_fit`).
* :mod:`coref.model.big_blocks`: the weights of blocks larger than any labeled one.
* :mod:`coref.model.persist`: :func:`save_model` / :func:`load_model` (JSON + npz +
  manifest with SHA-256 checksums; the format is in that module's docstring).
* :mod:`coref.model._pseudolik`: the maximum pseudo-likelihood refit of theta.

Tuning the intercept shift by running Gibbs is above this package:
:func:`coref.training.tune_shift`, called by ``PairwiseModel.fit``.
"""
from sampling.utils.cli import lazy_exports

# Lazy, so that importing coref.model.block_prior (what the Gibbs sampler needs) does not
# import coref.model.pairwise, which sits above the sampler (it tunes its shift by Gibbs).
_EXPORTS = {name: f"coref.model.{module}" for module, names in (
    ("pairwise", ("PairwiseModel", "labeled_pairs")),
    ("block_prior", ("rate_pairs", "block_bias_evals", "block_theta")),
    ("persist", ("save_model", "load_model", "MODEL_FORMAT", "MODEL_VERSION")),
) for name in names}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports("coref.model", _EXPORTS, globals())
