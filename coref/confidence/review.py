"""The curator's review queue (``review.csv`` of ``coref predict --confidence``).

:func:`review_table` orders the mentions by the expected number of errors a curator fixes
by looking at one of them, ``expected_errors = 1 - confidence`` (the probability that its
assignment is wrong, so that the first k rows hold the largest expected number of wrong
assignments of any k rows), and gives what the curator needs to decide:

==================== =====================================================================
column               meaning
==================== =====================================================================
rank                 1 = look first
mention_id, block    the mention
cluster_id           its reported cluster; ``cluster_size`` its mentions
confidence           calibrated probability that the assignment is right (``confidence.csv``)
expected_errors      1 - confidence
p                    posterior probability of the assignment (before calibration)
competing_cluster    the most probable other place: another cluster's id, or empty for
                     "a cluster of its own" (:func:`coref.confidence.marginals.competing_clusters`)
p_competing          its support (mean posterior pair probability to its members, or
                     P(alone))
evidence             the largest pairwise-factor terms between the mention and the other
                     members of its cluster: ``label (+w); ...`` with w = theta_k times the
                     mean of phi_k over those pairs, natural-log odds (:mod:`coref.explain`
                     terms; block-level and missing-information terms left out); empty
                     for a singleton and below the first ``max_evidence`` rows
evidence_competing   the same terms towards the members of the competing cluster
cluster_fit          how the mention sits in its cluster, from the cluster-structure columns
                     (:mod:`coref.confidence.structure`), when the confidence frame has them:
                     the profiles it fits worse than the cluster's typical member (``title
                     -0.21``: its cosine to the cluster's title profile minus the typical
                     member's), the share of its links the pairwise model rejects (f < 0), a
                     single strong link holding it, and its distance in years from the
                     cluster's median year; empty when none stands out, for singletons and
                     below the first ``max_evidence`` rows
==================== =====================================================================
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from coref.explain import feature_groups
from coref.factors.names import FEATURE_NAMES
from coref.model import block_theta

__all__ = ["REVIEW_COLUMNS", "review_table", "DEFAULT_MAX_EVIDENCE"]

REVIEW_COLUMNS = ("rank", "mention_id", "block", "cluster_id", "cluster_size", "confidence", "expected_errors", "p",
                  "competing_cluster", "p_competing", "evidence", "evidence_competing", "cluster_fit")
#: a profile is named in ``cluster_fit`` when the mention's fit is this much below the typical member's
FIT_MARGIN = 0.1
#: the cluster-structure columns (:mod:`coref.confidence.structure`) ``cluster_fit`` is written from
_FIT_FEATURES = ("rel_title", "rel_venue", "rel_coauthor", "rel_topic", "neg_share", "single_link", "year_dev")
#: rows (from the top of the queue) that get their evidence terms
DEFAULT_MAX_EVIDENCE = 100
_TOP_TERMS = 3


def review_table(model, df, confidence_df, *, encodings=None, max_evidence=DEFAULT_MAX_EVIDENCE):
    """The review queue of a scored clustering.

    Parameters
    ----------
    model : coref.model.PairwiseModel
    df : pandas.DataFrame
        The mentions (``mention_id``, ``block`` and features), whole blocks.
    confidence_df : pandas.DataFrame
        From :func:`coref.confidence.assignment.assignment_confidence` (``confidence``,
        ``competing_cluster``, ``p_competing`` and the rest).
    encodings : coref.encoding.EncodingCache, optional
        Blocks already encoded.
    max_evidence : int >= 0, default :data:`DEFAULT_MAX_EVIDENCE`
        Rows, from the top, whose evidence columns are filled.

    Returns
    -------
    pandas.DataFrame
        :data:`REVIEW_COLUMNS` (module docstring), one row per mention, queue order
        (ties: block, mention_id).

    Raises
    ------
    ValueError
        If ``max_evidence`` is negative or ``confidence_df`` lacks a column.
    """
    if isinstance(max_evidence, bool) or not isinstance(max_evidence, (int, np.integer)) or max_evidence < 0:
        raise ValueError(f"the max_evidence parameter must be an int >= 0; got {max_evidence!r}")
    need = ("mention_id", "block", "cluster_id", "confidence", "p", "competing_cluster", "p_competing")
    miss = [c for c in need if c not in confidence_df.columns]
    if miss:
        raise ValueError(f"the confidence frame is missing the column(s) {miss}")
    has_fit = all(c in confidence_df.columns for c in _FIT_FEATURES)
    q = confidence_df[list(need) + (list(_FIT_FEATURES) if has_fit else [])].copy()
    q["mention_id"] = q["mention_id"].astype(str)
    q["cluster_id"] = q["cluster_id"].astype(str)
    q["block"] = q["block"].astype(str)
    q["cluster_size"] = q.groupby(["block", "cluster_id"])["mention_id"].transform("size").astype(np.int64)
    q["expected_errors"] = 1.0 - q["confidence"].astype(float)
    q = q.sort_values(["expected_errors", "block", "mention_id"], ascending=[False, True, True], kind="stable")
    q = q.reset_index(drop=True)
    q["rank"] = np.arange(1, len(q) + 1)
    q["competing_cluster"] = q["competing_cluster"].fillna("").astype(str)
    q["evidence"] = ""
    q["evidence_competing"] = ""
    q["cluster_fit"] = ""
    top = q.head(int(max_evidence))
    if len(top):
        _fill_evidence(model, df, q, top, encodings)
        if has_fit:
            q.loc[top.index, "cluster_fit"] = [cluster_fit_text(r) for r in
                                               top[list(_FIT_FEATURES) + ["cluster_size"]].itertuples()]
    return q[list(REVIEW_COLUMNS)]


def cluster_fit_text(r):
    """The ``cluster_fit`` text of one mention from its structure columns (module docstring).

    ``r`` has the attributes ``rel_title``, ``rel_venue``, ``rel_coauthor``, ``rel_topic``,
    ``neg_share``, ``single_link``, ``year_dev`` and ``cluster_size``; returns "" for a
    singleton or when nothing stands out.
    """
    if int(r.cluster_size) < 2:
        return ""
    parts = []
    worse = [f"{v} {float(getattr(r, 'rel_' + v)):+.2f}" for v in ("title", "venue", "coauthor", "topic")
             if float(getattr(r, "rel_" + v)) <= -FIT_MARGIN]
    if worse:
        parts.append("fits worse than its typical member: " + ", ".join(worse))
    if float(r.neg_share) > 0:
        parts.append(f"{float(r.neg_share):.0%} of its links rejected (f < 0)")
    if float(r.single_link) > 0:
        parts.append("held by a single strong link")
    if float(r.year_dev) >= 1.0:
        parts.append(f"{10 * float(r.year_dev):.0f} years from the cluster's median year")
    return "; ".join(parts)


def _fill_evidence(model, df, q, top, encodings):
    labels, groups = feature_groups()
    keep = np.array([g != "block" and "missing" not in n.split("*")[0] for n, g in zip(FEATURE_NAMES, groups)])
    cid = q.set_index("mention_id")["cluster_id"]
    blocks = df["block"].astype(str)
    for block, rows in top.groupby("block", sort=False):
        sub = df[(blocks == block).to_numpy()]
        sub = sub.iloc[np.argsort(sub["mention_id"].astype(str).to_numpy(), kind="stable")]
        ids = sub["mention_id"].astype(str).to_numpy()
        if len(ids) < 2:
            continue
        enc = model.encode(sub) if encodings is None else encodings.encode(sub)
        theta = block_theta(model, enc)     # the big-block weights in a big block
        pos = {m: k for k, m in enumerate(ids)}
        lab = cid.reindex(ids).to_numpy()
        for r in rows.itertuples():
            i = pos[r.mention_id]
            for col, target in (("evidence", r.cluster_id), ("evidence_competing", r.competing_cluster)):
                J = np.flatnonzero((lab == target) & (np.arange(len(ids)) != i)) if target else np.zeros(0, int)
                if J.size == 0:
                    continue
                phi = np.asarray(model.pair_features(enc, np.full(J.size, i), J), float).mean(axis=0)
                w = np.where(keep, theta * phi, 0.0)
                best = np.argsort(-np.abs(w), kind="stable")[:_TOP_TERMS]
                q.at[r.Index, col] = "; ".join(f"{labels[k]} ({w[k]:+.2f})" for k in best if w[k] != 0.0)
