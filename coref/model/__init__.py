"""The pairwise coreference model: theta, the block prior, saving and loading.

* :mod:`coref.model.pairwise`: :class:`PairwiseModel` (f = theta . phi + b fitted on
  labeled pairs), :func:`labeled_pairs`.
* :mod:`coref.model.block_prior`: the per-block prior odds of coreference,
  :func:`rate_pairs`, :func:`block_bias_evals`.
* :mod:`coref.model.persist`: :func:`save_model` / :func:`load_model` (JSON + npz +
  manifest with SHA-256 checksums; the format is in that module's docstring).
* :mod:`coref.model._pseudolik`: the maximum pseudo-likelihood refit of theta.

Tuning the intercept shift by running Gibbs is above this package:
:func:`coref.training.fit_model`.
"""
from coref.model.block_prior import block_bias_evals, rate_pairs
from coref.model.pairwise import PairwiseModel, labeled_pairs
from coref.model.persist import MODEL_FORMAT, MODEL_VERSION, load_model, save_model
from sampling.utils.kernels import load_kernel

# TRANSITIONAL SHIM (issue 26): coref/report.py imports the kernel from here; delete after imports are rewritten.
_factors = load_kernel("coref._factors")

__all__ = ["PairwiseModel", "labeled_pairs", "rate_pairs", "block_bias_evals", "save_model", "load_model",
           "MODEL_FORMAT", "MODEL_VERSION"]
