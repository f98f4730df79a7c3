"""Exact partition functions of coreference sub-models (:mod:`coref.confidence.submodels`).

Exact evaluation (:func:`exact_log_z`) does not use the graphical model: a subset
dynamic program over the existing clusters (each takes a subset of S, disjoint),
then the set partitions of the rest into new clusters, in O(K 3^m) time.
"""
from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

__all__ = ["exact_log_z", "log_block_probabilities", "MAX_EXACT_SUBSET", "DEFAULT_MAX_EXACT"]


#: largest |S| the exact subset dynamic program accepts (3^m pairs are materialised)
MAX_EXACT_SUBSET = 14
#: default largest sub-model summed exactly (subset dynamic program, O(K 3^m))
DEFAULT_MAX_EXACT = 12


_PAIRS_CACHE = {}


def _submask_pairs(m):
    """All (T, U) with U a subset of T (bit masks over m), sorted by T; 3^m pairs."""
    if m in _PAIRS_CACHE:
        return _PAIRS_CACHE[m]
    Ts, Us = [], []
    for T in range(1 << m):
        # enumerate submasks of T (vectorised over the bits of T)
        bits = [b for b in range(m) if T >> b & 1]
        k = len(bits)
        idx = np.arange(1 << k, dtype=np.int64)
        sub = np.zeros(1 << k, dtype=np.int64)
        for pos, b in enumerate(bits):
            sub |= ((idx >> pos) & 1) << b
        Ts.append(np.full(1 << k, T, dtype=np.int64))
        Us.append(sub)
    T = np.concatenate(Ts)
    U = np.concatenate(Us)
    starts = np.searchsorted(T, np.arange(1 << m))
    _PAIRS_CACHE[m] = (T, U, starts)
    return _PAIRS_CACHE[m]


def _segment_lse(values, starts):
    """log-sum-exp of ``values`` over the segments beginning at ``starts`` (all non-empty)."""
    mx = np.maximum.reduceat(values, starts)
    safe = np.where(np.isfinite(mx), mx, 0.0)
    rep = np.repeat(safe, np.diff(np.append(starts, values.size)))
    with np.errstate(divide="ignore"):
        s = np.log(np.add.reduceat(np.exp(values - rep), starts))
    return np.where(np.isfinite(mx), s + safe, -np.inf)


def _bits(m):
    """ndarray of shape (2^m, m): bit k of each subset mask."""
    allU = np.arange(1 << m, dtype=np.int64)
    return ((allU[:, None] >> np.arange(m)[None, :]) & 1).astype(np.float64)


def _subset_tables(sub):
    """Per subset U of S: within-sum of f and, per existing cluster, the sum of u."""
    X = _bits(sub.m)
    within = 0.5 * np.einsum("uk,uk->u", X @ sub.f, X)
    usum = X @ sub.u
    return within, usum


_LAYER_CACHE = {}


def _new_cluster_layers(m):
    """Pairs (T, V) with V a subset of T holding lowbit(T), grouped by popcount(T)."""
    if m in _LAYER_CACHE:
        return _LAYER_CACHE[m]
    T, U, _ = _submask_pairs(m)
    sel = (U & (T & -T)) != 0
    Tn, Un = T[sel], U[sel]
    pc = np.array([bin(t).count("1") for t in range(1 << m)])
    layers = []
    for p in range(1, m + 1):
        idx = np.flatnonzero(pc[Tn] == p)
        t = Tn[idx]
        starts = np.flatnonzero(np.r_[True, t[1:] != t[:-1]])
        layers.append((Tn[idx], Un[idx], t[starts], starts))
    _LAYER_CACHE[m] = layers
    return layers


def _all_B(log_new, m):
    """ln B(T) for every subset T: B(T) = sum over set partitions of T of prod exp(log_new[V])."""
    B = np.full(1 << m, -np.inf)
    B[0] = 0.0
    for Tn, Un, Tu, starts in _new_cluster_layers(m):
        B[Tu] = _segment_lse(log_new[Un] + B[Tn ^ Un], starts)
    return B


def _masks(m, constraints):
    """Allowed-group masks: ``ok_new[U]`` (U may be a new cluster) and ``ok_ex[U, c]``."""
    n_sub = 1 << m
    allU = np.arange(n_sub)
    ok_new = np.ones(n_sub, bool)
    ok_ex = None
    extra = []
    for con in constraints:
        if con[0] == "same":
            bi = (allU >> con[1]) & 1
            bj = (allU >> con[2]) & 1
            ok_new &= bi == bj
            extra.append(("any", bi == bj))
        elif con[0] == "cluster":
            k, ci = con[1], con[2]
            has = ((allU >> k) & 1).astype(bool)
            ok_new &= ~has
            extra.append(("cluster", ci, has))
        else:
            k = con[1]
            has = ((allU >> k) & 1).astype(bool)
            ok_new &= ~has | (allU == (1 << k))
            extra.append(("none", ~has))
    return ok_new, extra


def exact_log_z(sub, constraints=()):
    """Exact ln Z_S (or ln Z_A) of a sub-model by the subset dynamic program.

    Parameters
    ----------
    sub : SubProblem
    constraints : list of tuple
        Output of :func:`check_constraints`.

    Returns
    -------
    float
        Natural log (``-inf`` when the event is impossible).

    Raises
    ------
    ValueError
        If ``sub.m`` exceeds :data:`MAX_EXACT_SUBSET`.

    Notes
    -----
    g_c(T) = sum_{U subset of T} g_{c-1}(T minus U) w_c(U) over the existing clusters
    (w_c(U) = exp(within(U) + sum_{s in U} u[s, c]), w_c(empty) = 1), B(U) = sum over
    the blocks V of U holding its lowest element of exp(within(V)) B(U minus V), and
    Z = sum_T g_K(T) B(S minus T).  Constraints zero the groups that break them.
    """
    m, K = sub.m, sub.K
    if m > MAX_EXACT_SUBSET:
        raise ValueError(f"exact evaluation is limited to {MAX_EXACT_SUBSET} mentions; the sub-model has {m}")
    T, U, starts = _submask_pairs(m)
    n_sub = 1 << m
    full = n_sub - 1
    within, usum = _subset_tables(sub)
    ok_new, extra = _masks(m, constraints)
    log_new = np.where(ok_new, within, -np.inf)
    B = _all_B(log_new, m)
    # g over existing clusters
    g = np.full(n_sub, -np.inf)
    g[0] = 0.0
    allU = np.arange(n_sub)
    for c in range(K):
        w = within + usum[:, c]
        ok = np.ones(n_sub, bool)
        for e in extra:
            if e[0] == "any":
                ok &= e[1]
            elif e[0] == "none":
                ok &= e[1]
            else:  # cluster: U must contain i for c = ci, must not otherwise
                ok &= e[2] if e[1] == c else ~e[2]
        w = np.where(ok, w, -np.inf)
        w[0] = 0.0 if _empty_ok(extra, c) else -np.inf
        g = _segment_lse(g[T ^ U] + w[U], starts)
    total = g + B[full ^ allU]
    return float(logsumexp(total)) if np.isfinite(total).any() else -np.inf


def _empty_ok(extra, c):
    """Whether existing cluster c may take no mention of S (not if an event forces one)."""
    return not any(e[0] == "cluster" and e[1] == c for e in extra)


def log_block_probabilities(sub):
    """For a sub-model without existing clusters (K = 0): ln P(V is one cluster) per subset V.

    Returns
    -------
    log_p : ndarray of shape (2^m,)
        ln of the probability that exactly the mentions of V (bit mask over S) form one
        cluster; ``log_p[0] = -inf``.
    log_Z : float
    """
    if sub.K:
        raise ValueError("log_block_probabilities needs a sub-model without fixed mentions (K = 0)")
    m = sub.m
    n_sub = 1 << m
    full = n_sub - 1
    within, _ = _subset_tables(sub)
    log_Z = exact_log_z(sub)
    # ln B(S minus V): B over every subset
    B = _all_B(within, m)
    allV = np.arange(n_sub)
    lp = within + B[full ^ allV] - log_Z
    lp[0] = -np.inf
    return lp, log_Z
