"""Extremes of the topic terms of the factor, for the bound of racing's partner memo.

:mod:`coref.gibbs.partners` bounds f(i, j) for every partner j outside i's candidates; for the
two terms of the topic vectors a per-mention interval from norms (|t_i| max |t|) is loose, and
these give their extremes over the block: ``comp_topic_cos`` per coauthor group
(:func:`comp_topic_interval`) and ``topic_cos`` / ``topic_drift`` per mention
(:func:`topic_extremes`), by dense float32 products in chunks of :data:`TOPIC_CHUNK_BYTES`, each end
widened outward by the products' rounding bound (:func:`_f32_error`).
"""
from __future__ import annotations

import numpy as np

__all__ = ["comp_topic_interval", "topic_extremes", "TOPIC_CHUNK_BYTES"]

#: Bytes of the product held at a time by :func:`comp_topic_interval` and :func:`topic_extremes`
#: (float32 entries: this / (4 G) rows of the group x group product, this / (4 n) of the mention x
#: mention one; at least one row).
TOPIC_CHUNK_BYTES = 32 * 2**20


def _f32_error(kt):
    """c with |fl32(a . b) - a . b| <= c |a| |b| for float64 vectors a, b of length ``kt``
    rounded to float32 and multiplied in float32 (any summation order, FMA or not).

    Rounding the inputs costs (2u + u^2) sum |a_k b_k|, the float32 dot product of kt terms
    gamma_kt = kt u / (1 - kt u) times that (Higham 2002, Eq. 3.5), u = 2^-24; together below
    gamma_(kt+3), and sum |a_k b_k| <= |a| |b| (Cauchy-Schwarz).  Doubled for a margin.
    """
    m = (int(kt) + 3) * 2.0**-24
    return 2.0 * m / (1.0 - m)


def comp_topic_interval(enc):
    """Per mention i, an interval of ``comp_topic_cos`` against any mention of another comp1 group.

    The feature is the dot product of the two groups' mean topic vectors, damped by a
    factor in (0, 1] (``COMPONENT_DAMPING``): it lies between 0 and the undamped product, so
    ``[min(0, min_g P_i . P_g), max(0, max_g P_i . P_g)]`` over the block's other groups g
    holds it (extremes over the groups, not |P_i| max |P|: in one 11,515-mention first-initial block the
    negative weight's term fell from 1.0 to 0.27 nats on average).  The products are taken in
    float32, each end widened by the rounding bound of :func:`_f32_error` (about 4e-6 |P_i| max
    |P| for 32 topics), so the interval holds the float64 products.  Costs G^2 n_topics / 2
    flops for G groups (each pair once), in chunks of :data:`TOPIC_CHUNK_BYTES`.

    Returns
    -------
    (lo, hi) : ndarrays of float64, shape (n,), or None without topics.
    """
    n, kt = int(enc.n), int(enc.n_topics)
    if kt == 0 or n == 0:
        return None
    comp1 = np.asarray(enc.comp1, dtype=np.int64)
    groups, pos = np.unique(comp1, return_inverse=True)
    prof = np.asarray(enc.comp_topic, dtype=np.float64)[: n * kt].reshape(n, kt)[groups]
    G = len(groups)
    q = prof.astype(np.float32)
    # extremes over the other groups (+inf / -inf: none yet); each chunk of rows a:b is
    # multiplied by the groups a: only, its rows' extremes taken along the rows and the later
    # groups' along the columns
    g_lo, g_hi = np.full(G, np.inf, np.float32), np.full(G, -np.inf, np.float32)
    rows = max(1, int(TOPIC_CHUNK_BYTES) // (4 * G))
    buf = np.empty(min(rows, G) * G, np.float32)
    for a in range(0, G, rows):
        b = min(G, a + rows)
        d = np.matmul(q[a:b], q[a:].T, out=buf[: (b - a) * (G - a)].reshape(b - a, G - a))
        diag = (np.arange(b - a), np.arange(b - a))
        d[diag] = np.inf                   # the own group is not a partner
        np.minimum(g_lo[a:b], d.min(axis=1), out=g_lo[a:b])
        d[diag] = -np.inf
        np.maximum(g_hi[a:b], d.max(axis=1), out=g_hi[a:b])
        if b < G:
            np.minimum(g_lo[b:], d[:, b - a:].min(axis=0), out=g_lo[b:])
            np.maximum(g_hi[b:], d[:, b - a:].max(axis=0), out=g_hi[b:])
    norm = np.sqrt((prof * prof).sum(axis=1))
    slack = _f32_error(kt) * norm * norm.max(initial=0.0)
    lo = np.minimum(0.0, g_lo.astype(np.float64) - slack)      # (one group: +inf -> 0)
    hi = np.maximum(0.0, g_hi.astype(np.float64) + slack)
    pos = pos.reshape(-1)
    return lo[pos], hi[pos]


def topic_extremes(enc, rows):
    """Extremes of ``topic_cos`` and ``topic_drift`` of mentions ``rows`` against every mention.

    ``topic_cos(i, j)`` is the dot product of the two topic vectors, ``topic_drift`` that
    times the year gap in decades (capped at 3; 0 when a year is missing), as the kernel
    computes them.  The pair (i, i) counts as 0, which every interval may hold.  The products
    are taken in float32 and each end widened by their rounding bound (:func:`_f32_error`), so
    the ends hold the exact extremes and are within about 4e-6 |t_i| max |t| (32 topics, times
    the gap for the drift) of them.  Costs len(rows) n n_topics flops, in chunks of
    :data:`TOPIC_CHUNK_BYTES`.

    Parameters
    ----------
    enc : coref.encoding.EncodedBlock
    rows : ndarray of int, shape (m,)

    Returns
    -------
    (cos_lo, cos_hi, drift_lo, drift_hi) : four ndarrays of float64, shape (m,), or None without topics.
    """
    n, kt = int(enc.n), int(enc.n_topics)
    rows = np.asarray(rows, dtype=np.int64)
    if kt == 0 or n == 0:
        return None
    year = np.asarray(enc.year, dtype=np.int64)[:n]
    # the partners by year (a missing year last): per row, the extremes of the products within
    # each year, then the drift's over the years (the gap is >= 0 and fixed within a year)
    order = np.argsort(np.where(year >= 0, year, np.iinfo(np.int64).max), kind="stable")
    ys = year[order]
    starts = np.flatnonzero(np.r_[True, ys[1:] != ys[:-1]])
    years = ys[starts]
    topic = np.asarray(enc.topic, dtype=np.float64)[: n * kt].reshape(n, kt)
    T = topic[order].astype(np.float32)
    norm = np.sqrt((topic * topic).sum(axis=1))
    where = np.empty(n, dtype=np.int64)
    where[order] = np.arange(n)
    widen = _f32_error(kt) * norm * norm.max()             # per mention: its products' rounding bound
    out = np.zeros((4, len(rows)))
    step = max(1, int(TOPIC_CHUNK_BYTES) // (4 * n))
    buf = np.empty(min(step, max(1, len(rows))) * n, np.float32)
    for a in range(0, len(rows), step):
        r = rows[a:a + step]
        d = np.matmul(topic[r].astype(np.float32), T.T, out=buf[: len(r) * n].reshape(len(r), n))
        own = (np.arange(len(r)), where[r])
        d[own] = np.inf
        lo = np.minimum.reduceat(d, starts, axis=1).astype(np.float64)
        d[own] = -np.inf
        hi = np.maximum.reduceat(d, starts, axis=1).astype(np.float64)
        s = widen[r][:, None]
        # a year of the own mention alone: +-inf -> the own pair's 0
        lo = np.where(np.isinf(lo), 0.0, lo - s)
        hi = np.where(np.isinf(hi), 0.0, hi + s)
        g = np.minimum(np.abs(year[r][:, None] - years[None, :]), 30) / 10.0
        g *= (year[r][:, None] >= 0) & (years[None, :] >= 0)
        out[0, a:a + len(r)] = np.minimum(lo.min(axis=1), 0.0)
        out[1, a:a + len(r)] = np.maximum(hi.max(axis=1), 0.0)
        out[2, a:a + len(r)] = np.minimum((g * lo).min(axis=1), 0.0)          # (g >= 0)
        out[3, a:a + len(r)] = np.maximum((g * hi).max(axis=1), 0.0)
    return tuple(out)
