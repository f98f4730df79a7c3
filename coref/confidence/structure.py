"""How well a mention fits its predicted cluster: per-mention signs of an over-merged cluster.

The confident errors on names never seen are over-merges in big blocks: two or more
authors joined into one cluster that the pairwise posterior is sure of (a chain of strong
links, or coauthor groups whose profiles make every cross pair look alike).  The
posterior probability ``p`` of such a mention's assignment is high; what gives it away is
the cluster itself.  :func:`cluster_structure` computes, from what the confidence step
already holds for a block (its encoding, the factor matrix F, the pair marginals P and the
reported clustering), one row per mention:

``fit_title``, ``fit_venue``, ``fit_coauthor``, ``fit_topic``
    cosine of the mention's title-word / venue-word / coauthor / topic vector with the
    profile of its cluster without it (sum of the other members' unit vectors); 0 for a
    singleton or a mention without that field;
``rel_title``, ``rel_venue``, ``rel_coauthor``, ``rel_topic``
    that cosine minus the mean of the same cosine over the cluster's members that have the
    field (how the mention fits compared with the cluster's typical member; 0 where
    the field is missing or the cluster is a singleton);
``rel_f``
    the mention's mean factor f (log-odds) to the other members minus the mean of that
    over the cluster's members;
``neg_share``
    share of the other members with f < 0 (links the pairwise model itself rejects);
``cluster_neg_share``
    share of the cluster's member pairs with f < 0 (internal coherence);
``cluster_p_low``
    share of the cluster's member pairs with posterior P(same) < 0.5;
``single_link``
    1 when the mention has exactly one other member with f > 0 in a cluster of three or
    more (it hangs on a single strong link);
``log_groups``
    log of the number of coauthor groups (``comp1``) the cluster spans;
``group_share``
    share of the cluster's mentions in the mention's own coauthor group;
``year_dev``
    |year - median known year of the cluster| / 10, capped at 3 (0 when the year is
    unknown or the cluster a singleton);
``split_f``
    the mean factor f between the mention's coauthor group within its cluster and the
    cluster's other members: what joins the two parts per pair (0 when the group is the
    whole cluster).  Over hundreds of cross pairs even a modest mean adds up to a sum the
    posterior is sure of; the mean says how strongly the two parts are joined per pair;
``split``
    1 when the cluster spans coauthor groups other than the mention's;
``minor_group``
    1 when the mention's coauthor group holds less than half of its cluster (the side an
    over-merge gets wrong).

Singletons get 0 in every column except ``group_share`` (1).  All are deterministic
functions of the inputs (no sampling).
"""
from __future__ import annotations

import numpy as np

__all__ = ["STRUCTURE_FEATURES", "cluster_structure", "empty_structure"]

STRUCTURE_FEATURES = ("fit_title", "fit_venue", "fit_coauthor", "fit_topic", "rel_title", "rel_venue",
                      "rel_coauthor", "rel_topic", "rel_f", "neg_share", "cluster_neg_share", "cluster_p_low",
                      "single_link", "log_groups", "group_share", "year_dev", "split_f", "split", "minor_group")

_VIEWS = (("title", "ti"), ("venue", "ve"), ("coauthor", "co"))


def empty_structure(n):
    """The :func:`cluster_structure` columns of ``n`` mentions in singleton clusters (dict of arrays)."""
    out = {c: np.zeros(n) for c in STRUCTURE_FEATURES}
    out["group_share"] = np.ones(n)
    return out


def _unit_rows(enc, prefix):
    """One CSR field of the mentions as (row, token id, unit weight) entries, and which rows are non-empty."""
    ptr = np.asarray(getattr(enc, f"{prefix}_ptr"), np.int64)
    nnz = int(ptr[-1])
    ids = np.asarray(getattr(enc, f"{prefix}_ids"), np.int64)[:nnz]
    w = np.asarray(getattr(enc, f"{prefix}_w"), float)[:nnz]
    row = np.repeat(np.arange(enc.n), np.diff(ptr))
    norm = np.sqrt(np.bincount(row, weights=w * w, minlength=enc.n))
    has = norm > 0
    return row, ids, w / np.where(has, norm, 1.0)[row], has


def _cosines(dot, s2, has, labels):
    """cos(x_i, S_{C(i)} - x_i) from x_i . S_{C(i)} (``dot``) and |S_c|^2 (``s2``), for unit or empty x_i."""
    self2 = has.astype(float)                       # unit rows: |x_i|^2 is 1 or 0
    prof2 = s2[labels] - 2.0 * dot + self2          # |S - x_i|^2
    ok = has & (prof2 > 1e-12)
    return np.where(ok, (dot - self2) / np.sqrt(np.where(ok, prof2, 1.0)), 0.0), ok


def _sparse_profile_cosines(row, ids, w, has, labels, K):
    """cos(x_i, sum_{j in C(i), j != i} x_j) for the unit rows given as CSR entries (``_unit_rows``)."""
    if not ids.size:
        return np.zeros(labels.size), np.zeros(labels.size, bool)
    key = labels[row] * (int(ids.max()) + 1) + ids  # (cluster, token) of every entry
    uk, inv = np.unique(key, return_inverse=True)
    S = np.bincount(inv.ravel(), weights=w)          # cluster sums, one value per (cluster, token)
    dot = np.bincount(row, weights=w * S[inv.ravel()], minlength=labels.size)
    s2 = np.bincount(uk // (int(ids.max()) + 1), weights=S * S, minlength=K)
    return _cosines(dot, s2, has, labels)


def _dense_profile_cosines(Z, has, labels, K):
    """The same for dense unit (or zero) rows ``Z`` of shape (n, T)."""
    S = np.zeros((K, Z.shape[1]))
    np.add.at(S, labels, Z)
    return _cosines(np.einsum("ij,ij->i", Z, S[labels]), np.einsum("ij,ij->i", S, S), has, labels)


def _relative(v, ok, labels, K):
    """v_i minus the mean of v over the members of C(i) where ``ok`` (0 where not ok)."""
    cnt = np.bincount(labels, weights=ok.astype(float), minlength=K)
    tot = np.bincount(labels, weights=np.where(ok, v, 0.0), minlength=K)
    mean = tot / np.maximum(cnt, 1.0)
    return np.where(ok, v - mean[labels], 0.0)


def _group_split(F, f_row, group, g_size, k):
    """``split_f``, ``split``, ``minor_group`` from each mention's (cluster, coauthor group) index ``group``,
    the groups' sizes ``g_size``, the cluster sizes ``k`` per mention and the row sums ``f_row`` within clusters."""
    same_g = group[:, None] == group[None, :]
    np.fill_diagonal(same_g, False)
    cross = f_row - np.where(same_g, F, 0.0).sum(axis=1)      # sum of f to the cluster outside the group
    g = g_size[group].astype(float)
    n_cross = g * (k - g)                                     # pairs between the group and the rest
    split = n_cross > 0
    cross_sum = np.bincount(group, weights=cross, minlength=g_size.size)[group]
    return {"split_f": np.where(split, cross_sum / np.where(split, n_cross, 1.0), 0.0),
            "split": split.astype(float), "minor_group": (g < 0.5 * k).astype(float)}


def cluster_structure(enc, F, P, labels):
    """Per-mention fit to its cluster and the cluster's coherence (module docstring).

    Parameters
    ----------
    enc : coref.encoding.EncodedBlock or None
        The block's encoding (None for a block of one mention).
    F : numpy.ndarray of shape (n, n)
        Pairwise factors f(x_i, x_j) (natural-log odds).
    P : numpy.ndarray of shape (n, n)
        Posterior pair marginals P(y_i = y_j | x).
    labels : numpy.ndarray of int of shape (n,)
        Reported clustering, labels 0..K-1.

    Returns
    -------
    dict of str to numpy.ndarray of shape (n,)
        The columns :data:`STRUCTURE_FEATURES`.
    """
    labels = np.unique(np.asarray(labels, np.int64), return_inverse=True)[1].ravel()
    n = labels.size
    if n <= 1 or enc is None:
        return empty_structure(n)
    K = int(labels.max()) + 1
    size = np.bincount(labels, minlength=K).astype(float)
    k = size[labels]
    multi = k > 1
    out = empty_structure(n)
    for name, prefix in _VIEWS:
        row, ids, w, has = _unit_rows(enc, prefix)
        cos, ok = _sparse_profile_cosines(row, ids, w, has, labels, K)
        out[f"fit_{name}"] = cos
        out[f"rel_{name}"] = _relative(cos, ok & multi, labels, K)
    T = int(enc.n_topics)
    if T > 0:
        Z = np.asarray(enc.topic, float)[: n * T].reshape(n, T)
        has = np.einsum("ij,ij->i", Z, Z) > 1e-12
        Z = Z / np.sqrt(np.where(has, np.einsum("ij,ij->i", Z, Z), 1.0))[:, None]
        cos, ok = _dense_profile_cosines(Z, has, labels, K)
        out["fit_topic"] = cos
        out["rel_topic"] = _relative(cos, ok & multi, labels, K)
    same = labels[:, None] == labels[None, :]
    np.fill_diagonal(same, False)
    others = np.maximum(k - 1.0, 1.0)
    f_row = np.where(same, F, 0.0).sum(axis=1)       # sum of f to the other members
    f_mean = f_row / others
    out["rel_f"] = _relative(f_mean, multi, labels, K)
    neg = same & (F < 0)
    n_neg = neg.sum(axis=1)
    out["neg_share"] = np.where(multi, n_neg / others, 0.0)
    pairs = np.maximum(size * (size - 1.0), 1.0)     # ordered pairs within each cluster
    out["cluster_neg_share"] = (np.bincount(labels, weights=n_neg, minlength=K) / pairs)[labels]
    low = (same & (P < 0.5)).sum(axis=1)
    out["cluster_p_low"] = (np.bincount(labels, weights=low, minlength=K) / pairs)[labels]
    n_pos = (same & (F > 0)).sum(axis=1)
    out["single_link"] = ((k >= 3) & (n_pos == 1)).astype(float)
    comp = np.asarray(enc.comp1, np.int64)[:n]
    key = labels * (int(comp.max()) + 1) + comp
    uk, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
    out["group_share"] = cnt[inv] / k
    out.update(_group_split(F, f_row, inv.ravel(), cnt, k))
    groups = np.bincount(uk // (int(comp.max()) + 1), minlength=K)
    out["log_groups"] = np.log(np.maximum(groups[labels], 1.0))
    year = np.asarray(enc.year, float)[:n]
    known = year >= 0
    med = np.full(K, -1.0)
    kn = np.flatnonzero(known)
    order = kn[np.lexsort((year[kn], labels[kn]))]  # known years, by cluster then year
    cnt = np.bincount(labels[order], minlength=K)
    start = np.concatenate(([0], np.cumsum(cnt)[:-1]))
    has_y = (cnt > 0) & (size > 1)
    lo = start + (cnt - 1) // 2
    hi = start + cnt // 2
    ys = year[order]
    med[has_y] = 0.5 * (ys[lo[has_y]] + ys[hi[has_y]])   # median known year of each cluster
    med = med[labels]
    ok = known & multi & (med >= 0)
    out["year_dev"] = np.where(ok, np.minimum(np.abs(year - med) / 10.0, 3.0), 0.0)
    return out
