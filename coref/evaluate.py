"""Scores of a predicted mention clustering against gold: B3 and pairwise P / R / F1.

Both are computed from the contingency table of (predicted cluster, gold
cluster) counts with pandas, in O(n_mentions) time and memory; no list of
mention pairs is ever built.

Let n_pg be the number of mentions in predicted cluster p and gold cluster g,
n_p = sum_g n_pg, n_g = sum_p n_pg and N the number of (labelled) mentions.

* B3 (Bagga & Baldwin 1998), per mention, singletons included:
  precision = (1/N) sum_{p,g} n_pg^2 / n_p,   recall = (1/N) sum_{p,g} n_pg^2 / n_g.
* Pairwise (co-referent pairs): TP = sum_{p,g} C(n_pg, 2),
  precision = TP / sum_p C(n_p, 2),   recall = TP / sum_g C(n_g, 2).

References
----------
.. [1] Bagga & Baldwin (1998), "Algorithms for scoring coreference chains",
   LREC workshop on linguistic coreference.
.. [2] Amigó, Gonzalo, Artiles & Verdejo (2009), "A comparison of extrinsic
   clustering evaluation metrics based on formal constraints", Inf. Retrieval.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["b3", "Scores", "B3Result", "PairwiseResult", "pairwise_scores", "evaluate_clusters"]


@dataclass(frozen=True)
class Scores:
    """Precision, recall and their harmonic mean F1, each in [0, 1]."""

    precision: float
    recall: float
    f1: float


@dataclass(frozen=True)
class B3Result(Scores):
    """B-cubed scores; ``n_mentions`` labelled mentions were scored."""

    n_mentions: int = 0


@dataclass(frozen=True)
class PairwiseResult(Scores):
    """Pairwise scores over co-referent mention pairs, with the pair counts."""

    n_true_pairs: int = 0
    n_pred_pairs: int = 0
    n_gold_pairs: int = 0


def _f1(p, r):
    return 0.0 if p + r == 0 else 2.0 * p * r / (p + r)


def _as_series(x, name):
    if isinstance(x, pd.Series):
        return x
    if isinstance(x, dict):
        return pd.Series(x)
    raise TypeError(f"the {name} parameter must be a pandas Series indexed by mention_id (or a dict); "
                    f"got {type(x).__name__} instead")


def _contingency(pred, gold):
    """Validate, drop unlabelled mentions and return (n_pg, n_p, n_g, N) as int64 arrays."""
    pred, gold = _as_series(pred, "pred"), _as_series(gold, "gold")
    for s, name in ((pred, "pred"), (gold, "gold")):
        if s.index.has_duplicates:
            dup = s.index[s.index.duplicated()][:3].tolist()
            raise ValueError(f"the {name} index (mention_id) has duplicates, e.g. {dup}")
    if len(pred) != len(gold) or not pred.index.equals(gold.index):
        if len(pred) != len(gold) or not pred.index.sort_values().equals(gold.index.sort_values()):
            only_p = pred.index.difference(gold.index)[:3].tolist()
            only_g = gold.index.difference(pred.index)[:3].tolist()
            raise ValueError("pred and gold must be indexed by the same mention_ids; "
                             f"got {len(pred)} vs {len(gold)} mentions (only in pred: {only_p}, only in gold: {only_g})")
        gold = gold.reindex(pred.index)
    if pred.isna().any():
        raise ValueError(f"pred has {int(pred.isna().sum())} mention(s) without a cluster (NA); "
                         "every mention needs a predicted cluster")
    labelled = gold.notna().to_numpy()
    if not labelled.any():
        raise ValueError("no labelled mention to score: gold is empty or all NA")
    p_codes = pd.factorize(pred.to_numpy()[labelled])[0].astype(np.int64)
    g_codes = pd.factorize(gold.to_numpy()[labelled])[0].astype(np.int64)
    n_g_clusters = int(g_codes.max()) + 1
    joint = p_codes * n_g_clusters + g_codes
    cells, n_pg = np.unique(joint, return_counts=True)
    n_p = np.bincount(p_codes)
    n_g = np.bincount(g_codes)
    return n_pg, n_p[cells // n_g_clusters], n_g[cells % n_g_clusters], n_p, n_g, int(labelled.sum())


def b3(pred, gold):
    """B-cubed precision, recall and F1 of a mention clustering [1]_.

    Parameters
    ----------
    pred : pandas.Series of shape (n_mentions,)
        Predicted cluster id per mention, indexed by mention_id.
    gold : pandas.Series of shape (n_mentions,)
        Gold author id per mention, indexed by the same mention_ids (any order).
        NA marks an unlabelled mention.

    Returns
    -------
    B3Result
        ``precision``, ``recall``, ``f1`` in [0, 1] and ``n_mentions`` scored.

    Raises
    ------
    TypeError
        If ``pred`` or ``gold`` is not a Series (or dict).
    ValueError
        If the indexes hold different or duplicate mention_ids, ``pred`` has NA,
        or no mention is labelled.

    Notes
    -----
    Unlabelled mentions (gold NA) are excluded from scoring: they are removed
    from *both* clusterings before the scores are computed, so a predicted
    cluster is judged only by its labelled members. Singletons count as
    clusters of one (per-mention B3, as in S2AND). With ``n_pg`` mentions in
    predicted cluster p and gold cluster g: precision =
    (1/N) sum n_pg^2 / n_p and recall = (1/N) sum n_pg^2 / n_g.

    References
    ----------
    .. [1] Bagga & Baldwin (1998), "Algorithms for scoring coreference chains".

    Examples
    --------
    >>> import pandas as pd
    >>> pred = pd.Series(["a", "a", "b"], index=["m1", "m2", "m3"])
    >>> gold = pd.Series(["x", "y", "y"], index=["m1", "m2", "m3"])
    >>> b3(pred, gold)
    B3Result(precision=0.6666666666666666, recall=0.6666666666666666, f1=0.6666666666666666, n_mentions=3)
    """
    n_pg, n_p_cell, n_g_cell, _, _, n = _contingency(pred, gold)
    sq = n_pg.astype(np.float64) ** 2
    p = float(np.sum(sq / n_p_cell) / n)
    r = float(np.sum(sq / n_g_cell) / n)
    return B3Result(p, r, _f1(p, r), n)


def pairwise_scores(pred, gold):
    """Pairwise precision, recall and F1 over co-referent mention pairs.

    Parameters
    ----------
    pred, gold : pandas.Series of shape (n_mentions,)
        As in :func:`b3` (gold NA = unlabelled, excluded from scoring).

    Returns
    -------
    PairwiseResult
        ``precision`` = true pairs / predicted pairs, ``recall`` = true pairs /
        gold pairs, ``f1``, and the three pair counts. Counted from cluster
        sizes (sum of C(n, 2)), never by listing pairs. With no predicted pair
        precision is 1 (nothing was claimed); with no gold pair recall is 1.

    Raises
    ------
    TypeError, ValueError
        As for :func:`b3`.
    """
    n_pg, _, _, n_p, n_g, _ = _contingency(pred, gold)

    def pairs(c):
        c = c.astype(np.int64)
        return int(np.sum(c * (c - 1) // 2))

    tp, pp, gp = pairs(n_pg), pairs(n_p), pairs(n_g)
    p = 1.0 if pp == 0 else tp / pp
    r = 1.0 if gp == 0 else tp / gp
    return PairwiseResult(p, r, _f1(p, r), tp, pp, gp)


def evaluate_clusters(pred, gold):
    """All scores as a flat dict (for metrics.json and reports).

    Returns
    -------
    dict
        ``b3_precision``, ``b3_recall``, ``b3_f1``, ``pairwise_precision``,
        ``pairwise_recall``, ``pairwise_f1`` (floats in [0, 1]) and
        ``n_mentions`` (labelled mentions scored).

    Raises
    ------
    TypeError, ValueError
        As for :func:`b3`.
    """
    b = b3(pred, gold)
    pw = pairwise_scores(pred, gold)
    return {"b3_precision": b.precision, "b3_recall": b.recall, "b3_f1": b.f1,
            "pairwise_precision": pw.precision, "pairwise_recall": pw.recall, "pairwise_f1": pw.f1,
            "n_mentions": b.n_mentions}
