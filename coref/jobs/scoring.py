"""Scores of ``coref run``: B3 and pairwise per sampler and fold, and B3 after each sweep.

Only labeled mentions of labeled blocks are scored (the ``scored`` column of
clusters.csv); each mention is inferred once per sampler, in the fold holding its
block, and scores are pooled over folds.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from coref.evaluate import b3, evaluate_clusters
from coref.inference import pad
from coref.outputs.report import CURVE_COLUMNS

__all__ = ["sweep_curves", "scores", "within_block_b3", "sampler_metrics", "SCORE_KEYS"]

#: The keys of :func:`scores`.
SCORE_KEYS = ("b3_precision", "b3_recall", "b3_f1", "pairwise_precision", "pairwise_recall", "pairwise_f1")


def sweep_curves(results, gold, scored_ids):
    """B3 after each sweep, pooled over blocks (all folds) of one sampler.

    ``gold``: Series mention_id -> gold (NA = unlabeled); only ``scored_ids`` count.
    """
    rows = []
    for sampler in sorted({r.sampler for r in results}):
        rs = [r for r in results if r.sampler == sampler and r.labels_history is not None]
        if not rs:
            continue
        n_rows = max(r.labels_history.shape[0] for r in rs)
        evals = np.zeros(n_rows, dtype=np.int64)
        parts_ids, parts_hist = [], []
        offset = 0
        for r in rs:
            evals += pad(r.evals_history, n_rows)
            h = pad(r.labels_history, n_rows).astype(np.int64)
            h = h - h.min(initial=0)
            parts_hist.append(h + offset)
            offset += int(h.max(initial=0)) + 1
            parts_ids.append(r.mention_id)
        ids = np.concatenate(parts_ids)
        hist = np.concatenate(parts_hist, axis=1)
        keep = pd.Index(ids).isin(scored_ids) & gold.reindex(ids).notna().to_numpy()
        ids_k = ids[keep]
        gold_k = gold.reindex(ids_k)
        for t in range(n_rows):
            res = b3(pd.Series(hist[t, keep], index=ids_k), gold_k)
            rows.append((sampler, t, int(evals[t]), float(res.precision), float(res.recall), float(res.f1)))
    return pd.DataFrame(rows, columns=CURVE_COLUMNS)


def scores(pred, gold):
    """:data:`SCORE_KEYS` of ``pred`` against ``gold`` (Series by mention id), None without a label."""
    if gold.notna().sum() == 0:
        return {k: None for k in SCORE_KEYS}
    m = evaluate_clusters(pred, gold)
    return {k: float(m[k]) for k in SCORE_KEYS}


def within_block_b3(scored):
    """B3 with each gold author cut at block boundaries (S2AND's within-block protocol).

    ``scored``: the scored rows of clusters.csv (``block``, ``mention_id``, ``cluster_id``,
    ``gold``). Predicted clusters never span blocks, so this differs from the pooled B3
    only in recall, and only where a gold author's mentions fall into several blocks (24 gold
    clusters of the S2AND Qian fixture); those cross-block pairs are not counted as missed.
    Returns ``b3_within_block_precision`` / ``_recall`` / ``_f1`` (None without a label).
    """
    keys = ("b3_within_block_precision", "b3_within_block_recall", "b3_within_block_f1")
    if len(scored) == 0 or scored["gold"].notna().sum() == 0:
        return dict.fromkeys(keys)
    ids = scored["mention_id"].to_numpy()
    gold = scored["block"].astype(str) + "\x1f" + scored["gold"].astype(str)
    r = b3(pd.Series(scored["cluster_id"].to_numpy(), index=ids), pd.Series(gold.to_numpy(), index=ids))
    return dict(zip(keys, (float(r.precision), float(r.recall), float(r.f1))))


def _series(frame, column):
    return pd.Series(frame[column].to_numpy(), index=frame["mention_id"].to_numpy())


def sampler_metrics(clusters, results, *, sampler, folds, fold_of, labeled, fit_s):
    """The metrics.json entry of one sampler: pooled scores, costs and one row per fold.

    Parameters
    ----------
    clusters : pandas.DataFrame
        clusters.csv of the run (every sampler).
    results : list of coref.inference.BlockResult
        The block results of this sampler.
    sampler : str
    folds : int
    fold_of : dict
        Block -> fold.
    labeled : set
        The labeled (scored) blocks.
    fit_s : dict
        Fold -> seconds to fit its model (None when unknown).

    Returns
    -------
    dict
    """
    cs = clusters[clusters["sampler"] == sampler]
    sc = cs[cs["scored"]]
    m = scores(_series(sc, "cluster_id"), _series(sc, "gold"))
    m.update(within_block_b3(sc))
    m["n_factor_evals"] = int(sum(r.n_factor_evals for r in results))
    m["n_factor_evals_scored_blocks"] = int(sum(r.n_factor_evals for r in results if r.block in labeled))
    m["wall_s"] = float(sum(r.wall_s for r in results))
    fold_rows = []
    for f in range(folds):
        fr = [r for r in results if r.fold == f]
        fsc = sc[sc["fold"] == f]
        fold_rows.append({
            "fold": f,
            "n_blocks": len(fr),
            "n_train_blocks": int(sum(1 for b in labeled if fold_of[b] != f)),
            "n_mentions": int(sum(len(r.mention_id) for r in fr)),
            "n_scored_mentions": int(len(fsc)),
            **scores(_series(fsc, "cluster_id"), _series(fsc, "gold")),
            "n_factor_evals": int(sum(r.n_factor_evals for r in fr)),
            "wall_s": float(sum(r.wall_s for r in fr)),
            "fit_s": fit_s.get(f),
        })
    m["folds"] = fold_rows
    return m
