# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled greedy first clustering of one block over an inverted index of coauthor ids.

One pass over the mentions i = 0 .. n - 1 (canonical order).  The candidates of i are
the clusters of the earlier mentions j < i that share a coauthor id with it (the
postings of each of i's ids, read up to i; each cluster once).  Candidate C scores

    S_C = (|C| / m_C) * sum_{j in H_C} f_theta(x_i, x_j),

H_C the first ``max_members`` members of C in order of joining (m_C = |H_C|; the
factor |C| / m_C is 1.0 when H_C = C, so small clusters are summed exactly), summed in
that order.  i joins the candidate with the largest S_C when S_C > 0 (ties to the
lower label), else opens a new cluster (label = number of clusters so far).  Each
candidate's factors are evaluated in row mode (``coref.factors._rows.row_set``), same
values bit for bit as the twin ``coref.gibbs._start_py``, which gives the same labels.
No random number is drawn.
"""
import numpy as np

from coref.factors._factors cimport BlockData, make_block, block_factor, row_set, row_clear

from coref.factors._factors import shared_memo


def greedy_start(object enc,                     # IN  EncodedBlock
                 const double[::1] theta,        # IN  (N_FEATURES,)
                 double bias,
                 Py_ssize_t max_members,
                 long long[::1] labels):         # OUT (n,) labels in [0, n)
    """Greedy labels of the block into ``labels``; returns (clusters, factors evaluated).

    Raises
    ------
    ValueError
        If ``max_members`` < 1 or ``labels`` does not have one entry per mention.
    """
    cdef list keep = []
    cdef BlockData d = make_block(enc, theta, bias, keep, 64 * 1024 * 1024, True,
                                  shared_memo(enc))
    cdef Py_ssize_t n = d.n
    if max_members < 1:
        raise ValueError(f"max_members must be >= 1; got {max_members}")
    if labels.shape[0] != n:
        raise ValueError(f"labels must have one entry per mention ({n}); got {labels.shape[0]}")
    ptr = np.asarray(enc.co_ptr, dtype=np.int64)[: n + 1]
    ids = np.asarray(enc.co_ids, dtype=np.int64)[: int(ptr[n]) if n else 0]
    n_ids = int(ids.max()) + 1 if len(ids) else 0
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
    o = np.argsort(ids, kind="stable")          # postings: mentions of each id, ascending
    cdef long long[::1] post = np.ascontiguousarray(rows[o])
    cdef long long[::1] pp = np.concatenate([[0], np.cumsum(np.bincount(ids, minlength=n_ids))]
                                            ).astype(np.int64)
    cdef long long[::1] cp = np.ascontiguousarray(ptr)
    cdef long long[::1] ci = np.ascontiguousarray(ids)
    cdef long long[::1] size = np.zeros(max(n, 1), np.int64)
    cdef long long[::1] hcnt = np.zeros(max(n, 1), np.int64)
    cdef long long[::1] stamp = np.full(max(n, 1), -1, np.int64)
    cdef long long[::1] cand = np.zeros(max(n, 1), np.int64)
    cdef long long[::1] head = np.zeros(max(n, 1) * max_members, np.int64)
    cdef Py_ssize_t i, p, q, k, j, c, m, nc = 0, ncand, best
    cdef long long a
    cdef long long ev = 0
    cdef double s, score, bs
    with nogil:
        for i in range(n):
            ncand = 0
            for p in range(cp[i], cp[i + 1]):
                a = ci[p]
                for q in range(pp[a], pp[a + 1]):
                    j = post[q]
                    if j >= i:
                        break
                    c = labels[j]
                    if stamp[c] != i:
                        stamp[c] = i
                        cand[ncand] = c
                        ncand += 1
            best = -1
            bs = 0.0
            if ncand > 0:
                row_set(&d, i)
                for k in range(ncand):
                    c = cand[k]
                    m = hcnt[c]
                    s = 0.0
                    for q in range(m):
                        s += block_factor(&d, i, head[c * max_members + q])
                    ev += m
                    score = s * (<double>size[c] / <double>m)
                    if score > 0.0 and (best < 0 or score > bs or (score == bs and c < best)):
                        best = c
                        bs = score
                row_clear(&d)
            if best < 0:
                best = nc
                nc += 1
            labels[i] = best
            if hcnt[best] < max_members:
                head[best * max_members + hcnt[best]] = i
                hcnt[best] += 1
            size[best] += 1
    return int(nc), int(ev)
