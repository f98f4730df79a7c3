"""Weights for blocks larger than any labeled block: fitted on simulated one-name blocks.

The labeled data we ship (AMiner names) has no block above about 300 mentions, so a theta
fitted on it has never seen what makes a block of thousands of mentions hard: dozens of
same-named authors in one field, whose titles, venues and topics agree as well as one
author's do. Applied to such blocks it trusts topical agreement as it learned to in small
blocks and merges strangers (a one-name block of 10,000 ``coref synth --one-name``
mentions: B3 F1 0.65, precision 0.54).

A :class:`PairwiseModel` fitted with ``big_blocks`` therefore carries a second set of
weights, :class:`BigBlockWeights` (fitted by ``PairwiseModel._fit_big_blocks``), used for every block of at least ``min_n`` mentions
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

Measured (shipped model without / with these weights, 2026-11-27; docs/performance.md):
``coref synth --one-name`` blocks of 10,000 mentions B3 F1 0.65 -> 0.92 and 30,000 mentions
0.70 -> 0.89; the blocks of 1,000-2,999 and of >= 3,000 mentions of a streamed
``coref synth --mentions 1000000`` run (a different generator: coauthor communities, no
personal vocabularies) 0.745 -> 0.863 and 0.759 -> 0.825. No labeled real block of that
size was available to check them on.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from coref.factors.names import FEATURE_GROUPS, FEATURE_NAMES

__all__ = ["BIG_BLOCK_MIN_N", "SYNTHETIC_BLOCKS", "SYNTHETIC_SEED", "BigBlockWeights", "block_level_features",
           "synthetic_training_blocks", "check_big_blocks"]

#: Blocks of at least this many mentions use the big-block weights.
BIG_BLOCK_MIN_N = 1000
#: The simulated training set: (mentions per block, size exponent), six one-name blocks each
#: (:func:`coref.synth_block.synthesize_block`, seed ``SYNTHETIC_SEED + k``): 30 blocks,
#: 81,000 mentions. The 6,000-mention blocks were chosen on the other generator's big blocks
#: (blocks of >= 1,000 mentions of ``coref synth --mentions 1000000``: B3 F1 0.839 without them,
#: 0.858 with them, 0.856 adding blocks of 10,000 as well).
SYNTHETIC_BLOCKS = ((1000, 1.7), (1500, 1.8), (2000, 1.9), (3000, 2.0), (6000, 1.8))
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
    pandas.DataFrame of shape (81000, 9)
        The mention schema, 30 blocks; the same frame on every call.
    """
    from coref.synth_block import synthesize_block

    parts = []
    for k, (size, exponent) in enumerate(SYNTHETIC_BLOCKS):
        df = synthesize_block(6 * size, rng=SYNTHETIC_SEED + k, n_blocks=6, size_exponent=exponent)
        for c in ("mention_id", "block", "gold"):
            df[c] = f"big{k}:" + df[c].astype(str)
        parts.append(df)
    return pd.concat(parts, ignore_index=True)
