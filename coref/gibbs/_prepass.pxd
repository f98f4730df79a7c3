# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The passes of ``coref.gibbs._gibbs.anneal`` before its first sweep (row mode, as a step).

``row_maxima``: racing's exact small-arm bound fmax_j = max_{k != j} f(x_j, x_k)
(``small_arm_bound`` 1); ``matrix_rows``: the exact sampler's cached factor matrix
(``fmat_mode`` 1).  Each returns the factors it evaluated.
"""
from libc.math cimport INFINITY

from coref.factors._factors cimport BlockData, block_factor, row_set, row_clear


cdef inline long long row_maxima(BlockData* d, Py_ssize_t n, const long long* movable,
                                 Py_ssize_t n_mov, double* fmax, char* alive) noexcept nogil:
    """fmax[j] = max_{k != j} f(x_j, x_k) for every mention (n (n - 1) / 2 factors) when all
    n are movable; otherwise only a movable mention's fmax is read (as fmax_i), so only its
    row is computed and a fixed j gets +inf (min(fmax_i, fmax_j) = fmax_i still bounds
    f(i, j)): n_mov (n - 1) - n_mov (n_mov - 1) / 2 factors (distinct movable mentions);
    alive[0:n] marks the movable mentions meanwhile and is zero again on return."""
    cdef Py_ssize_t i, j, k
    cdef double fv
    cdef long long ev = 0
    if n_mov == n:
        for i in range(n):
            fmax[i] = -INFINITY
        for i in range(n):
            row_set(d, i)
            for j in range(i + 1, n):
                fv = block_factor(d, i, j)
                if fv > fmax[i]:
                    fmax[i] = fv
                if fv > fmax[j]:
                    fmax[j] = fv
            row_clear(d)
        return n * (n - 1) // 2
    for i in range(n):
        fmax[i] = INFINITY
        alive[i] = 0
    for k in range(n_mov):
        fmax[movable[k]] = -INFINITY
        alive[movable[k]] = 1
    for i in range(n):
        if not alive[i]:
            continue
        row_set(d, i)
        for j in range(n):
            if j == i or (alive[j] and j < i):
                continue
            fv = block_factor(d, i, j)
            ev += 1
            if fv > fmax[i]:
                fmax[i] = fv
            if alive[j] and fv > fmax[j]:
                fmax[j] = fv
        row_clear(d)
    for i in range(n):
        alive[i] = 0
    return ev


cdef inline long long matrix_rows(BlockData* d, Py_ssize_t n, const long long* movable,
                                  Py_ssize_t n_mov, double* fmp) noexcept nogil:
    """fmp[i * n + j] = f(x_i, x_j) for every movable i and every j != i (fmp[i * n + i] =
    0): n_mov (n - 1) factors."""
    cdef Py_ssize_t i, j, k
    for k in range(n_mov):
        i = movable[k]
        row_set(d, i)
        for j in range(n):
            if j != i:
                fmp[i * n + j] = block_factor(d, i, j)
        fmp[i * n + i] = 0.0
        row_clear(d)
    return n_mov * (n - 1)
