"""Labeled within-block pairs for the pairwise model's regression (``coref.model.pairwise``)."""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["labeled_pairs", "gold_labels"]


def labeled_pairs(enc, gold: np.ndarray, *, max_pairs: int, rng) -> tuple:
    """Pairs (i < j) of labeled mentions of one block and their same-entity flags.

    All pairs if there are at most ``max_pairs``, else a uniform sample of
    ``max_pairs`` distinct pairs.  ``gold`` is an object array with None for
    unlabeled mentions.

    Returns
    -------
    I, J : ndarray of int64, shape (m,)
    y : ndarray of int8, shape (m,)
    """
    lab = np.flatnonzero(np.array([g is not None for g in gold], dtype=bool))
    k = lab.shape[0]
    n_all = k * (k - 1) // 2
    if n_all == 0:
        e = np.zeros(0, np.int64)
        return e, e, np.zeros(0, np.int8)
    if n_all <= max_pairs:
        a, b = np.triu_indices(k, 1)
    else:
        a = np.empty(0, np.int64)
        b = np.empty(0, np.int64)
        while len(a) < max_pairs:
            x = rng.integers(0, k, size=2 * max_pairs)
            z = rng.integers(0, k, size=2 * max_pairs)
            keep = x != z
            lo, hi = np.minimum(x, z)[keep], np.maximum(x, z)[keep]
            code = np.concatenate([a * k + b, lo * k + hi])
            _, first = np.unique(code, return_index=True)
            first = np.sort(first)[:max_pairs]
            code = code[first]
            a, b = code // k, code % k
    I = lab[a].astype(np.int64)
    J = lab[b].astype(np.int64)
    g = np.asarray(gold, dtype=object)
    y = np.array([g[i] == g[j] for i, j in zip(I, J)], dtype=np.int8)
    return I, J, y


def gold_labels(sub):
    """The ``gold`` column of one block as an object array, None for unlabeled mentions."""
    return np.array([None if pd.isna(g) else str(g) for g in sub["gold"]], dtype=object)
