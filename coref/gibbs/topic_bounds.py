"""Exact extremes of the topic terms of the factor, for the bound of racing's partner memo.

:mod:`coref.gibbs.partners` bounds f(i, j) for every partner j outside i's candidates; for the
two terms of the topic vectors a per-mention interval from norms (|t_i| max |t|) is loose, and
these give their exact extremes over the block: ``comp_topic_cos`` per coauthor group
(:func:`comp_topic_interval`) and ``topic_cos`` / ``topic_drift`` per mention
(:func:`topic_extremes`), by dense products in chunks of :data:`TOPIC_CHUNK_BYTES`.
"""
from __future__ import annotations

import numpy as np

__all__ = ["comp_topic_interval", "topic_extremes", "TOPIC_CHUNK_BYTES"]

#: Bytes of the group x group product held at a time by :func:`comp_topic_interval` (rows of
#: it per chunk: this / (8 G) for G comp1 groups, at least one).
TOPIC_CHUNK_BYTES = 32 * 2**20


def comp_topic_interval(enc):
    """Per mention i, an interval of ``comp_topic_cos`` against any mention of another comp1 group.

    The feature is the dot product of the two groups' mean topic vectors, damped by a
    factor in (0, 1] (``COMPONENT_DAMPING``): it lies between 0 and the undamped product, so
    ``[min(0, min_g P_i . P_g), max(0, max_g P_i . P_g)]`` over the block's other groups g
    holds it (exact extremes, not |P_i| max |P|: in one 11,515-mention first-initial block the
    negative weight's term fell from 1.0 to 0.27 nats on average).  Costs G^2 n_topics flops
    for G groups, in chunks of :data:`TOPIC_CHUNK_BYTES`.

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
    g_lo, g_hi = np.zeros(G), np.zeros(G)
    rows = max(1, int(TOPIC_CHUNK_BYTES) // (8 * G))
    for a in range(0, G, rows):
        b = min(G, a + rows)
        d = prof[a:b] @ prof.T
        # the own group is not a partner; its entry becomes the 0 every interval holds
        d[np.arange(b - a), np.arange(a, b)] = 0.0
        g_lo[a:b] = d.min(axis=1)
        g_hi[a:b] = d.max(axis=1)
    pos = pos.reshape(-1)
    return g_lo[pos], g_hi[pos]


def topic_extremes(enc, rows):
    """Exact extremes of ``topic_cos`` and ``topic_drift`` of mentions ``rows`` against every mention.

    ``topic_cos(i, j)`` is the dot product of the two topic vectors, ``topic_drift`` that
    times the year gap in decades (capped at 3; 0 when a year is missing), as the kernel
    computes them.  The pair (i, i) counts as 0, which every interval may hold.  Costs
    len(rows) n n_topics flops, in chunks of :data:`TOPIC_CHUNK_BYTES`.

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
    T = topic[order]
    where = np.empty(n, dtype=np.int64)
    where[order] = np.arange(n)
    out = np.zeros((4, len(rows)))
    step = max(1, int(TOPIC_CHUNK_BYTES) // (8 * n))
    for a in range(0, len(rows), step):
        r = rows[a:a + step]
        d = topic[r] @ T.T
        d[np.arange(len(r)), where[r]] = 0.0
        lo = np.minimum.reduceat(d, starts, axis=1)
        hi = np.maximum.reduceat(d, starts, axis=1)
        g = np.minimum(np.abs(year[r][:, None] - years[None, :]), 30) / 10.0
        g *= (year[r][:, None] >= 0) & (years[None, :] >= 0)
        out[0, a:a + len(r)], out[1, a:a + len(r)] = lo.min(axis=1), hi.max(axis=1)
        out[2, a:a + len(r)] = (g * lo).min(axis=1)          # (g >= 0)
        out[3, a:a + len(r)] = (g * hi).max(axis=1)
    return tuple(out)
