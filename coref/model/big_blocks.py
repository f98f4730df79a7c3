"""Weights for blocks larger than any labeled block: fitted on simulated one-name blocks.

The labeled data we ship (AMiner names) has no block above about 300 mentions, so a theta
fitted on it has never seen what makes a block of thousands of mentions hard: dozens of
same-named authors in one field, whose titles, venues and topics agree as well as one
author's do. Applied to such blocks it trusts topical agreement as it learned to in small
blocks and merges strangers (a one-name block of 10,000 ``coref synth --one-name``
mentions: B3 F1 0.65, precision 0.54).

A :class:`PairwiseModel` fitted with ``big_blocks`` therefore carries a second set of
weights, :class:`BigBlockWeights`, used for every block of at least ``min_n`` mentions
(:data:`BIG_BLOCK_MIN_N`, about three times the largest labeled block): the same features
and the same vocabulary, theta and intercept refitted by the same logistic regression on
labeled big blocks, and its own reference rate for the block prior. Without labeled big
blocks, the default is a simulated set (:func:`synthetic_training_blocks`,
:mod:`coref.synth_block`: heavy-tailed authors, one name per block, fields shared by many
authors, personal coauthor circles and vocabularies), deterministic.

The block-level features (``FEATURE_GROUPS`` "block": block size, coherences, share of
middle names) and their ``*same_comp1`` products are left out of this fit (weight 0):
with a few dozen training blocks they would only learn to recognise those blocks. The
intercept shift is 0 (the block prior sets each block's intercept). Confidence
calibration maps are the model's own, fitted on the labeled (small) blocks.

Measured (``coref predict`` defaults, shipped AMiner model with and without these
weights, 2026-11-27): ``coref synth --one-name`` 10,000-mention block B3 F1 0.65 -> 0.90;
the 64 blocks of >= 1,000 mentions of ``coref synth --mentions 1000000`` (a different
generator: coauthor communities, no personal vocabularies) 0.749 -> 0.861. No labeled
real block of that size was available to check them on.
"""
from __future__ import annotations

import copy
import numbers
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from coref.factors.names import FEATURE_GROUPS, FEATURE_NAMES
from coref.model.block_prior import rate_scores
from coref.model.name_priors import apply_name_priors

__all__ = ["BIG_BLOCK_MIN_N", "SYNTHETIC_BLOCKS", "SYNTHETIC_SEED", "BigBlockWeights", "block_level_features",
           "synthetic_training_blocks", "fit_big_block_weights", "check_big_blocks"]

#: Blocks of at least this many mentions use the big-block weights.
BIG_BLOCK_MIN_N = 1000
#: The simulated training set: (mentions per block, size exponent), six one-name blocks each
#: (:func:`coref.synth_block.synthesize_block`, seed ``SYNTHETIC_SEED + k``): 24 blocks,
#: 45,000 mentions, 10,776 authors.
SYNTHETIC_BLOCKS = ((1000, 1.7), (1500, 1.8), (2000, 1.9), (3000, 2.0))
SYNTHETIC_SEED = 1000


@dataclass
class BigBlockWeights:
    """The factor's weights for blocks of at least ``min_n`` mentions.

    f(x_i, x_j) = theta . phi(x_i, x_j) + bias + d_b in those blocks, d_b the block prior
    against ``pair_rate`` (:mod:`coref.model.block_prior`).

    Attributes
    ----------
    min_n : int >= 2
    theta : ndarray of float64, shape (N_FEATURES,)
    intercept, shift, bias : float
        Natural-log odds; ``bias = intercept + shift``.
    pair_rate : float in (0, 1)
        The reference rate r_train of the block prior over the big training blocks.
    n_pairs : int
        Labeled pairs the weights were fitted on.
    feature_varied : ndarray of bool, shape (N_FEATURES,)
        Features that varied on those pairs (the others, and the block-level ones, have weight 0).
    source : dict
        What they were fitted on (JSON-able).
    """

    min_n: int
    theta: np.ndarray
    intercept: float
    shift: float
    bias: float
    pair_rate: float
    n_pairs: int
    feature_varied: np.ndarray
    source: dict = field(default_factory=dict)


def check_big_blocks(big_blocks, min_n, error):
    """Raise ``error(message)`` unless ``big_blocks`` is None, "synthetic" or a DataFrame and
    ``min_n`` an integer >= 2."""
    if not (big_blocks is None or isinstance(big_blocks, pd.DataFrame)
            or (isinstance(big_blocks, str) and big_blocks == "synthetic")):
        raise error(f"big_blocks must be None, 'synthetic' or a DataFrame of labeled mentions; got {big_blocks!r}")
    if not (isinstance(min_n, numbers.Integral) and not isinstance(min_n, bool) and min_n >= 2):
        raise error(f"big_block_min_n must be an integer >= 2; got {min_n!r}")


def block_level_features():
    """Indices of the features left out of the big-block fit: the block-level ones and their ``*same_comp1`` products."""
    return np.array([k for k, name in enumerate(FEATURE_NAMES) if FEATURE_GROUPS.get(name.split("*")[0]) == "block"],
                    dtype=np.int64)


def synthetic_training_blocks():
    """The simulated labeled big blocks of :data:`SYNTHETIC_BLOCKS` (mention, block and gold ids prefixed ``big<k>:``).

    Returns
    -------
    pandas.DataFrame of shape (45000, 9)
        The mention schema, 24 blocks; the same frame on every call.
    """
    from coref.synth_block import synthesize_block

    parts = []
    for k, (size, exponent) in enumerate(SYNTHETIC_BLOCKS):
        df = synthesize_block(6 * size, rng=SYNTHETIC_SEED + k, n_blocks=6, size_exponent=exponent)
        for c in ("mention_id", "block", "gold"):
            df[c] = f"big{k}:" + df[c].astype(str)
        parts.append(df)
    return pd.concat(parts, ignore_index=True)


def fit_big_block_weights(model, df, gen, min_n, source):
    """Fit :class:`BigBlockWeights` for ``model`` on the labeled blocks of ``df``.

    The same steps as :meth:`PairwiseModel.fit` with ``model``'s vocabulary (the one every
    block is encoded with at prediction) and parameters: labeled pairs, logistic
    regression, constant features folded into the intercept, name-conflict priors; then
    the block-prior reference rate. Block-level features are left out
    (:func:`block_level_features`); the shift is 0.

    Parameters
    ----------
    model : PairwiseModel
        Fitted on the labeled (small) blocks; not changed.
    df : pandas.DataFrame
        Labeled mentions of big blocks (``gold``).
    gen : numpy.random.Generator
        Subsamples the pairs (advanced in place).
    min_n : int
        Stored as :attr:`BigBlockWeights.min_n`.
    source : dict
        Stored as :attr:`BigBlockWeights.source`.

    Returns
    -------
    BigBlockWeights

    Raises
    ------
    ValueError
        If ``df`` has no block with two labeled mentions or its pairs are all of one class.
    """
    sub = copy.copy(model)          # the model's parameters and vocabulary; its own theta
    sub.big_ = None
    encs = []
    X, y = sub._pairs(df, model.vocabulary_, gen, encs)
    X[:, block_level_features()] = 0.0
    sub.theta_, sub.intercept_ = sub._regress(X, y)
    sub.fold_constant_features(X)
    prior = {}
    if model.name_priors:
        sub.theta_, prior = apply_name_priors(sub.theta_, sub.feature_varied_)
    z, w = rate_scores(encs, sub.theta_, int(model.block_prior_pairs))
    sub._rate_z, sub._rate_w = z, w
    sub.set_shift(0.0)
    return BigBlockWeights(min_n=int(min_n), theta=np.ascontiguousarray(sub.theta_, dtype=np.float64),
                           intercept=float(sub.intercept_), shift=0.0, bias=float(sub.bias_),
                           pair_rate=float(sub.pair_rate_), n_pairs=int(len(y)),
                           feature_varied=np.asarray(sub.feature_varied_, dtype=bool),
                           source={**source, "n_mentions": int(len(df)), "n_blocks": int(df["block"].nunique()),
                                   "prior_weights": {k: float(v) for k, v in prior.items()}})
