"""Margins of cluster membership: how much a mention gains by staying in its cluster.

The margin of a mention is the sum of the pairwise factors f_theta (natural-log odds)
to the other members of its final cluster: the Gibbs score of staying against opening
a new cluster of its own (score 0). ``coref predict`` / ``add`` list the weakest merges
in report.md; ``coref explain`` breaks one pair down by feature.

References
----------
.. [1] Chen, Y. & Ghahramani, Z. (2016). Scalable discrete sampling as a multi-armed
   bandit problem. ICML. Sec. 5.3 (the pairwise factors of author coreference).
"""
from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from sampling.utils.kernels import load_kernel

__all__ = ["MAX_MEMBERS", "cluster_margins", "member_margins", "weakest_merges"]

_factors = load_kernel("coref.factors._factors")

#: clusters larger than this: margins from a random subsample of members
MAX_MEMBERS = 300


def member_margins(enc, theta, bias, idx, ref, mine):
    """Margins of some members of ONE cluster against a set of reference members of it.

    Parameters
    ----------
    enc : coref.encoding.EncodedBlock
    theta : ndarray of float64, shape (n_features,)
        C-contiguous.
    bias : float
    idx : ndarray of int64, shape (n,)
        The cluster's rows of the block, ascending.
    ref : ndarray of int, shape (k,)
        Positions in ``idx`` of the members compared against (ascending).
    mine : ndarray of int, shape (m,)
        Positions in ``idx`` of the members whose margin is wanted (ascending).

    Returns
    -------
    ndarray of float, shape (m,)
        The sum of f_theta from each member of ``mine`` to the members of ``ref`` other
        than itself, scaled by (n - 1) / (members compared).
    """
    n = len(idx)
    a = np.repeat(mine, len(ref))
    b = np.tile(ref, len(mine))
    keep = a != b
    a, b = a[keep], b[keep]
    vals = np.empty(len(a))
    _factors.pair_factors(enc, theta, float(bias), np.ascontiguousarray(idx[a]), np.ascontiguousarray(idx[b]), vals)
    sums = np.bincount(a, weights=vals, minlength=n)[mine]
    n_ref = len(ref) - np.isin(mine, ref).astype(float)
    return sums * (n - 1) / np.maximum(n_ref, 1.0)


def cluster_margins(enc, theta, bias, labels, *, rng=0, max_members=None, rows=None):
    """Margin of every mention of one block: the sum of f_theta to the other members of its cluster.

    Parameters
    ----------
    enc : coref.encoding.EncodedBlock
        The encoded block (rows aligned with ``labels``).
    theta : ndarray of shape (n_features,)
    bias : float
    labels : array-like of shape (n,)
        Final cluster label of each row.
    rng : int
        Seed of the member subsample of clusters above ``max_members``.
    max_members : int or None
        Default :data:`MAX_MEMBERS`.
    rows : ndarray of bool, shape (n,), or None
        Only these mentions' margins are computed (``coref add``: the new ones); the
        others are NaN.

    Returns
    -------
    ndarray of float, shape (n,)
        Natural-log odds; NaN for singletons. It is the Gibbs score of staying in the
        cluster against opening a new one (score 0). For a cluster above ``max_members``
        the sum over a uniform subsample of that many members is scaled by
        (n_c - 1) / (members compared).
    """
    cap = MAX_MEMBERS if max_members is None else int(max_members)
    codes, _ = pd.factorize(np.asarray(labels))
    out = np.full(len(codes), np.nan)
    gen = None                                        # made on first need (most blocks have no big cluster)
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    order = np.argsort(codes, kind="stable")          # each cluster's rows, ascending, clusters by code
    sizes = np.bincount(codes) if len(codes) else np.zeros(0, np.int64)
    start = np.cumsum(sizes) - sizes                  # first position of each cluster in ``order``
    want = np.ones(len(codes), bool) if rows is None else np.asarray(rows, dtype=bool)
    n_of = sizes[codes]
    # clusters of 2..cap members: every wanted mention against all the other members, in one
    # compiled call (the pairs of a mention in ascending member order, as one cluster at a
    # time would sum them)
    w = np.flatnonzero(want & (n_of >= 2) & (n_of <= cap))
    if len(w):
        n_w = n_of[w]
        sums = np.empty(len(w))
        i64 = functools.partial(np.ascontiguousarray, dtype=np.int64)
        _factors.member_sums(enc, theta, float(bias), i64(order), i64(start), i64(sizes), i64(codes), i64(w), sums)
        n_ref = n_w - 1.0
        out[w] = sums * (n_w - 1) / np.maximum(n_ref, 1.0)
    # clusters above cap: a uniform subsample of members (one draw per cluster, by code)
    for c in np.flatnonzero(sizes > cap):
        idx = order[start[c]:start[c] + sizes[c]].astype(np.int64)
        if not want[idx].any():
            continue
        if gen is None:
            gen = np.random.default_rng(rng)
        ref = np.sort(gen.choice(len(idx), cap, replace=False))
        mine = np.flatnonzero(want[idx])
        out[idx[mine]] = member_margins(enc, theta, bias, idx, ref, mine)
    return out


def weakest_merges(clusters, margins, *, n_weakest=10, focus=None):
    """The ``n_weakest`` mentions with the smallest margin (see :func:`cluster_margins`).

    Parameters
    ----------
    clusters : pandas.DataFrame
        mention_id, cluster_id.
    margins : pandas.Series
        Margin by mention_id (NaN = singleton).
    focus : set of str or None
        Only these mentions are candidates (``coref add``: the new ones).

    Returns
    -------
    pandas.DataFrame
        mention_id, cluster_id, n_mentions, margin, mean_factor.
    """
    mid = clusters["mention_id"].astype(str).to_numpy(dtype=object)
    cid = clusters["cluster_id"].astype(str).to_numpy(dtype=object)
    codes, uniq = pd.factorize(cid)
    n = np.bincount(codes)[codes]
    m = margins.reindex(mid).to_numpy(dtype=float)
    keep = np.isfinite(m) & (n >= 2)
    if focus is not None:
        keep &= np.fromiter((x in focus for x in mid), bool, len(mid))
    w = pd.DataFrame({"mention_id": mid[keep], "cluster_id": cid[keep], "n_mentions": n[keep], "margin": m[keep]})
    w["mean_factor"] = w["margin"] / (w["n_mentions"] - 1)
    return w.sort_values(["margin", "mention_id"], kind="stable").head(n_weakest).reset_index(drop=True)
