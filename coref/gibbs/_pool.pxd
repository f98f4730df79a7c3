# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The candidate clusters of a Gibbs step and their members, kept up to date by moves.

``pool`` holds every mention sorted by (label, index); ``cand`` the labels with
members (increasing), ``cstart`` where each candidate's run starts in ``pool`` and
``cidx[label]`` its candidate position (-1 = empty).  A step moves one mention
(``pool_update``) instead of rebuilding the pool from all n labels.
"""
from libc.string cimport memmove, memcpy

from coref.factors._factors cimport BlockData, row_clear


cdef inline void pool_members(long long* members, const long long* pool, const long long* fill,
                              Py_ssize_t c, Py_ssize_t c_old, Py_ssize_t i, Py_ssize_t m) noexcept nogil:
    """Candidate c's m members other than i, in pool order, into members[fill[c]:fill[c] + m]."""
    cdef Py_ssize_t q, k
    if c == c_old:
        k = fill[c]
        for q in range(fill[c], fill[c + 1]):
            if pool[q] != i:
                members[k] = pool[q]
                k += 1
    else:
        memcpy(&members[fill[c]], &pool[fill[c]], m * sizeof(long long))


cdef inline void mates_mark(BlockData* d, Py_ssize_t i, const long long* labels,
                             const long long* cidx) noexcept nogil:
    """Flag (``d.forb``) the candidate clusters holding a paper mate of mention i
    (``coref.factors.papers``): racing drops them before its race and clears the flags."""
    cdef long long q
    if d.mate_ptr == NULL:
        return
    for q in range(d.mate_ptr[i], d.mate_ptr[i + 1]):
        d.forb[cidx[labels[d.mate_idx[q]]]] = 1


cdef inline Py_ssize_t merge_act(long long* act, Py_ssize_t na, const long long* add,
                                  Py_ssize_t m, long long* tmp) noexcept nogil:
    """Merge the increasing arm lists act[0:na] and add[0:m] into act; return the length."""
    cdef Py_ssize_t a = 0, b = 0, k = 0
    while a < na or b < m:
        if b >= m or (a < na and act[a] < add[b]):
            tmp[k] = act[a]
            a += 1
        else:
            tmp[k] = add[b]
            b += 1
        k += 1
    memcpy(act, tmp, k * sizeof(long long))
    return k



cdef inline void pool_init(Py_ssize_t n, const long long* labels, const long long* size,
                     long long* cand, long long* cidx, long long* cstart, long long* pool,
                     long long* tmp, long long* nC) noexcept nogil:
    """Candidate clusters (labels with members, increasing) and their members.

    ``pool`` holds every mention sorted by (label, index); the members of candidate c
    are pool[cstart[c]:cstart[c + 1]], in increasing index -- the order in which the
    step used to bucket them -- and ``cidx[label]`` is the candidate position (-1 =
    empty).  A step keeps this up to date by moving one mention (``_pool_remove`` /
    ``_pool_insert``) instead of rebuilding it from all n labels.
    """
    cdef Py_ssize_t l, c, C = 0, pos = 0, j
    for l in range(n):
        if size[l] > 0:
            cand[C] = l
            cidx[l] = C
            C += 1
        else:
            cidx[l] = -1
    for c in range(C):
        cstart[c] = pos
        tmp[c] = pos
        pos += size[cand[c]]
    cstart[C] = pos
    for j in range(n):
        c = cidx[labels[j]]
        pool[tmp[c]] = j
        tmp[c] += 1
    nC[0] = C


cdef inline void pool_remove(Py_ssize_t i, Py_ssize_t old, const long long* size,
                              long long* cand, long long* cidx, long long* cstart,
                              long long* pool, long long* nC) noexcept nogil:
    """Take mention i out of cluster ``old`` (size[old] already decremented)."""
    cdef Py_ssize_t C = nC[0], c = cidx[old], p, c2
    p = cstart[c]
    while pool[p] != i:
        p += 1
    memmove(&pool[p], &pool[p + 1], (cstart[C] - p - 1) * sizeof(long long))
    for c2 in range(c + 1, C + 1):
        cstart[c2] -= 1
    if size[old] == 0:
        memmove(&cand[c], &cand[c + 1], (C - 1 - c) * sizeof(long long))
        memmove(&cstart[c], &cstart[c + 1], (C - c) * sizeof(long long))
        C -= 1
        for c2 in range(c, C):
            cidx[cand[c2]] = c2
        cidx[old] = -1
        nC[0] = C


cdef inline void pool_insert(Py_ssize_t i, Py_ssize_t l, long long* cand, long long* cidx,
                              long long* cstart, long long* pool, long long* nC) noexcept nogil:
    """Put mention i into cluster l (a candidate or a new label)."""
    cdef Py_ssize_t C = nC[0], c = cidx[l], c2, q, e
    if c < 0:
        c = 0
        while c < C and cand[c] < l:
            c += 1
        memmove(&cand[c + 1], &cand[c], (C - c) * sizeof(long long))
        memmove(&cstart[c + 1], &cstart[c], (C + 1 - c) * sizeof(long long))
        cand[c] = l
        C += 1
        for c2 in range(c, C):
            cidx[cand[c2]] = c2
        nC[0] = C
    q = cstart[c]
    e = cstart[c + 1]
    while q < e and pool[q] < i:
        q += 1
    memmove(&pool[q + 1], &pool[q], (cstart[C] - q) * sizeof(long long))
    pool[q] = i
    for c2 in range(c + 1, C + 1):
        cstart[c2] += 1


cdef inline void pool_update(Py_ssize_t i, Py_ssize_t old, Py_ssize_t l, Py_ssize_t c_old,
                              const long long* size, long long* cand, long long* cidx,
                              long long* cstart, long long* pool, long long* nC) noexcept nogil:
    """End of a step: mention i now in cluster l (size[l] counted).

    ``c_old`` < 0: i already left the pool (its cluster emptied); otherwise i is still
    in the run of cluster ``old`` and moves only if l differs.
    """
    if c_old < 0:
        pool_insert(i, l, cand, cidx, cstart, pool, nC)
    elif l != old:
        pool_remove(i, old, size, cand, cidx, cstart, pool, nC)
        pool_insert(i, l, cand, cidx, cstart, pool, nC)


cdef inline Py_ssize_t _finish(BlockData* d, long long* labels, long long* size, Py_ssize_t i,
                               Py_ssize_t old, Py_ssize_t l, Py_ssize_t c_old, long long evals,
                               long long* n_evals, long long* cand, long long* cidx,
                               long long* fill, long long* pool, long long* nC) noexcept nogil:
    """End of a step: mention i joins cluster l; count the factors; leave row mode; return l."""
    n_evals[0] += evals
    labels[i] = l
    size[l] += 1
    pool_update(i, old, l, c_old, size, cand, cidx, fill, pool, nC)
    row_clear(d)              # no-op when the step read the factor matrix (no row set)
    return l
