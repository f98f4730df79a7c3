"""Posterior marginals from Gibbs sweeps at temperature 1 (``GibbsCoref(n_samples=...)``).

After the annealed sweeps, ``n_samples`` sweeps at temperature 1 run from a copy of the
MAP state; the pairs that share a cluster are counted (``pair_probs_``) and each
mention's mean Jaccard agreement with its predicted cluster is kept
(``mention_confidence_``; see :class:`coref.gibbs.GibbsCoref`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["sample_marginals", "pair_frame", "within_pairs", "merge_counts"]


def sample_marginals(sweep, map_labels, map_size, n_samples):
    """``n_samples`` sweeps at temperature 1 from a copy of the MAP state.

    Parameters
    ----------
    sweep : callable
        ``sweep(labels, size, inv_temp)`` runs one Gibbs sweep in place and returns the
        factors it evaluated.
    map_labels, map_size : ndarray of int64, shape (n,)
        The annealed state (not modified).
    n_samples : int >= 1

    Returns
    -------
    (pair_keys, pair_counts, confidence, evals)
        Co-occurrence counts of the pairs (a < b, key a * n + b) that shared a cluster
        in at least one sample, plus every pair inside a predicted cluster (count
        possibly 0); the mean Jaccard confidence of each mention; factors evaluated.
    """
    n = len(map_labels)
    labels = map_labels.copy()
    size = map_size.copy()
    pred_size = np.bincount(map_labels, minlength=n)[map_labels]
    conf = np.zeros(n)
    keys = within_pairs(map_labels)
    counts = np.zeros(len(keys), np.int64)
    pending = []
    n_pending = 0
    evals = 0
    for _ in range(int(n_samples)):
        evals += sweep(labels, size, 1.0)
        samp_size = size[labels]
        joint = np.unique(map_labels * n + labels, return_inverse=True,
                          return_counts=True)
        inter = joint[2][joint[1].ravel()] - 1
        union = (pred_size - 1) + (samp_size - 1) - inter
        conf += np.where(union > 0, inter / np.maximum(union, 1), 1.0)
        pk = within_pairs(labels)
        pending.append(pk)
        n_pending += len(pk)
        if n_pending > 2_000_000:
            keys, counts = merge_counts(keys, counts, pending)
            pending, n_pending = [], 0
    keys, counts = merge_counts(keys, counts, pending)
    return keys, counts, conf / int(n_samples), evals


def pair_frame(block, mids, labels, keys, counts, n_samples):
    """Rows of ``pair_probs_`` for one block: pairs with p >= 0.01 or inside one predicted cluster.

    ``mids``: the block's mention ids in canonical order; ``labels``: its final labels;
    ``keys`` / ``counts``: from :func:`sample_marginals`.
    """
    n_b = len(mids)
    a, b = keys // n_b, keys % n_b
    p = counts / float(n_samples)
    keep = (p >= 0.01) | (labels[a] == labels[b])
    return pd.DataFrame({"block": str(block), "mention_a": mids[a[keep]],
                         "mention_b": mids[b[keep]], "p": p[keep]})


def within_pairs(labels):
    """Keys a * n + b (a < b) of every pair of positions sharing a label, sorted.

    Vectorised; memory is the number of such pairs (sum of m (m - 1) / 2 over
    clusters of size m), never n^2 for a block of singletons.
    """
    labels = np.asarray(labels, np.int64)
    n = len(labels)
    order = np.lexsort((np.arange(n), labels))
    lab_sorted = labels[order]
    # end (exclusive) of the group of each sorted position
    bounds = np.flatnonzero(np.diff(lab_sorted)) + 1
    ends = np.repeat(np.append(bounds, n), np.diff(np.concatenate([[0], bounds, [n]])))
    c = ends - np.arange(n) - 1                       # partners after each position
    total = int(c.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    first = np.repeat(np.arange(n), c)
    step = np.arange(total) - np.repeat(np.cumsum(c) - c, c) + 1
    a, b = order[first], order[first + step]
    return np.sort(a * n + b)


def merge_counts(keys, counts, pending):
    """Add the occurrences of the key arrays in ``pending`` to (keys, counts)."""
    if not pending:
        return keys, counts
    allk = np.concatenate([keys] + pending)
    allc = np.concatenate([counts, np.ones(len(allk) - len(keys), np.int64)])
    uk, inv = np.unique(allk, return_inverse=True)
    return uk, np.bincount(inv.ravel(), weights=allc, minlength=len(uk)).astype(np.int64)
