# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled hot loops of Racing (Chen & Ghahramani 2016, Alg. 1).

Private: :mod:`sampling.racing` validates every input before calling these.
The pure-Python twin is :mod:`sampling._racing_py`; tests compare the two.
"""
from libc.math cimport INFINITY, log, sqrt

import numpy as np


cdef enum:
    _BLOCK = 512


cdef double[::1] cython_view_empty(Py_ssize_t n):
    return np.empty(n, dtype=np.float64)


def merge_block(const double[:, ::1] rewards,   # IN  (k, m) rewards of the k surviving arms
                const long long[::1] arms,       # IN  (k,) arm ids of the rows of ``rewards``
                long long n_old,                 # IN  rewards already merged per arm (shared)
                double[::1] mean,                # INOUT (D,) running means
                double[::1] m2,                  # INOUT (D,) running sums of squared deviations
                double[:, ::1] pair_m2,          # INOUT (D, D) same for pairwise differences
                bint do_pairs,                   # IN  update ``pair_m2`` too
                double[::1] work):               # work (k,) block means
    """Merge one shared mini-batch into the running moments (Chan et al. update)."""
    cdef Py_ssize_t k = rewards.shape[0]
    cdef Py_ssize_t m = rewards.shape[1]
    cdef Py_ssize_t a, b, n, n0, n1
    cdef long long ia, ib
    cdef double s, da, db, dab, caa, dd, w, c0, c1, c2, c3, d0, d1, d2, d3
    cdef double n_new = <double>(n_old + m)
    with nogil:
        w = (<double>n_old) * (<double>m) / n_new
        for a in range(k):
            s = 0.0
            for n in range(m):
                s += rewards[a, n]
            work[a] = s / m
        if do_pairs:
            # column blocks keep the k rows of a block in cache while all pairs use them
            n0 = 0
            while n0 < m:
                n1 = n0 + _BLOCK if n0 + _BLOCK < m else m
                for a in range(k):
                    ia = arms[a]
                    for b in range(a + 1, k):
                        ib = arms[b]
                        dab = work[a] - work[b]
                        c0 = 0.0
                        c1 = 0.0
                        c2 = 0.0
                        c3 = 0.0
                        n = n0
                        while n + 4 <= n1:  # four independent sums: no FP dependency chain
                            d0 = rewards[a, n] - rewards[b, n] - dab
                            d1 = rewards[a, n + 1] - rewards[b, n + 1] - dab
                            d2 = rewards[a, n + 2] - rewards[b, n + 2] - dab
                            d3 = rewards[a, n + 3] - rewards[b, n + 3] - dab
                            c0 += d0 * d0
                            c1 += d1 * d1
                            c2 += d2 * d2
                            c3 += d3 * d3
                            n += 4
                        while n < n1:
                            d0 = rewards[a, n] - rewards[b, n] - dab
                            c0 += d0 * d0
                            n += 1
                        pair_m2[ia, ib] += (c0 + c1) + (c2 + c3)
                n0 = n1
            for a in range(k):
                ia = arms[a]
                da = work[a] - mean[ia]
                for b in range(a + 1, k):
                    ib = arms[b]
                    db = work[b] - mean[ib]
                    pair_m2[ia, ib] += (da - db) * (da - db) * w
                    pair_m2[ib, ia] = pair_m2[ia, ib]
        for a in range(k):
            ia = arms[a]
            caa = 0.0
            for n in range(m):
                dd = rewards[a, n] - work[a]
                caa += dd * dd
            da = work[a] - mean[ia]
            m2[ia] += caa + da * da * w
            mean[ia] += da * m / n_new


def eliminate(const double[::1] mean,            # IN  (D,) running means
              const double[::1] m2,              # IN  (D,)
              const double[:, ::1] pair_m2,      # IN  (D, D)
              const long long[::1] arms,         # IN  (k,) surviving arm ids
              long long n_seen,                  # IN  T, rewards seen per arm
              double coef_sd,                    # IN  G = coef_sd * sigma_hat + coef_c * C
              double coef_c,                     # IN
              const double[::1] c_range,         # IN  (D,) reward ranges C_i (0 if unused)
              bint pairwise,                     # IN  sigma_hat_{x,i} (True) or sigma_x + sigma_i
              unsigned char[::1] alive):         # OUT (k,) 1 = keep
    """Find the leader and mark arms whose gap to it exceeds the bound G; return the leader id."""
    cdef Py_ssize_t k = arms.shape[0]
    cdef Py_ssize_t a, best = 0
    cdef long long ix, ia
    cdef double gap, g, v
    cdef double t = <double>n_seen
    with nogil:
        for a in range(1, k):
            if mean[arms[a]] > mean[arms[best]]:
                best = a
        ix = arms[best]
        for a in range(k):
            ia = arms[a]
            if a == best:
                alive[a] = 1
                continue
            gap = mean[ix] - mean[ia]
            if pairwise:
                v = pair_m2[ix, ia] / t
                g = coef_sd * sqrt(v if v > 0.0 else 0.0)
            else:
                v = m2[ix] / t
                g = coef_sd * sqrt(v if v > 0.0 else 0.0)
                v = m2[ia] / t
                g += coef_sd * sqrt(v if v > 0.0 else 0.0)
            g += coef_c * (c_range[ix] + c_range[ia])
            alive[a] = 0 if gap > g else 1
    return ix


cdef inline double _lil_ucb_value(double total, long long t, long long n_data, double sigma,
                                  double coef, double eps, double delta) noexcept nogil:
    cdef double inner
    if t >= n_data:
        return total / t  # the exact mean (adaptation 2 of Sec. 3.2)
    inner = log((1.0 + eps) * t)
    if inner <= 0.0 or inner <= delta:
        return INFINITY  # log log undefined or negative: arm not yet pulled often enough
    return total / t + coef * sqrt(2.0 * sigma * sigma * (1.0 + eps) * log(inner / delta) / t)


def lil_ucb_run(const double[:, ::1] buf,     # IN  (D, cap) fetched, not yet pulled rewards
                long long[::1] buf_len,       # IN  (D,) valid entries of each buffer row
                long long[::1] buf_pos,       # INOUT (D,) next entry to pull
                long long[::1] pulls,         # INOUT (D,) T_i
                double[::1] sums,             # INOUT (D,) sum of pulled rewards
                const unsigned char[::1] active,  # IN (D,) arms that may win
                const double[::1] sigma,      # IN  (D,) sub-Gaussian scales
                long long n_data,             # IN  N
                double eps, double beta, double lam, double delta):
    """Run adapted lil'UCB until it stops or needs more rewards of an arm.

    Returns ``(status, arm)``: status 0 = original stop rule met by ``arm``,
    1 = ``arm`` has the highest UCB and an exact mean, 2 = ``arm`` needs a refill.
    """
    cdef Py_ssize_t d = pulls.shape[0]
    cdef Py_ssize_t i, best
    cdef long long total = 0
    cdef double coef = (1.0 + beta) * (1.0 + sqrt(eps))
    cdef double r, bval
    cdef int status = 0
    cdef double[::1] ucb = cython_view_empty(d)
    with nogil:
        for i in range(d):
            total += pulls[i]
            if active[i]:
                ucb[i] = _lil_ucb_value(sums[i], pulls[i], n_data, sigma[i], coef, eps, delta)
        while True:
            best = -1
            bval = 0.0
            for i in range(d):
                if active[i] and (best < 0 or ucb[i] > bval):
                    best = i
                    bval = ucb[i]
            if pulls[best] >= n_data:
                status = 1
                break
            if buf_pos[best] >= buf_len[best]:
                status = 2
                break
            r = buf[best, buf_pos[best]]
            buf_pos[best] += 1
            pulls[best] += 1
            sums[best] += r
            total += 1
            ucb[best] = _lil_ucb_value(sums[best], pulls[best], n_data, sigma[best], coef, eps, delta)
            if pulls[best] * (1.0 + lam) >= 1.0 + lam * total:
                status = 0
                break
    return status, best


def merge_pairs(const double[:, ::1] rewards,    # IN  (k, m) rewards of the surviving arms
                const long long[::1] arms,        # IN  (k,) arm ids
                long long n_old,                  # IN  rewards merged per arm before this block
                const double[::1] mean,           # IN  (D,) running means BEFORE this block
                const double[::1] block_mean,     # IN  (k,) means of this block's rows
                const double[:, ::1] gram,        # IN  (k, k) block-centred Gram matrix Rc Rc^T
                double[:, ::1] pair_m2,           # INOUT (D, D) sums of squared deviations of differences
                double rtol):                     # IN  recompute a pair directly below this ratio
    """Merge a block into the pairwise moments using its centred Gram matrix.

    The block sum of squares of ``l_a - l_b`` about its mean is
    ``G_aa + G_bb - 2 G_ab``; when that is below ``rtol * (G_aa + G_bb)`` (strongly
    correlated arms, where the subtraction would lose digits) it is recomputed
    directly from the rewards. Then the Chan et al. update adds the between-block term.
    """
    cdef Py_ssize_t k = rewards.shape[0]
    cdef Py_ssize_t m = rewards.shape[1]
    cdef Py_ssize_t a, b, n
    cdef long long ia, ib
    cdef double c, da, db, dab, d0, w
    with nogil:
        w = (<double>n_old) * (<double>m) / (<double>(n_old + m))
        for a in range(k):
            ia = arms[a]
            da = block_mean[a] - mean[ia]
            for b in range(a + 1, k):
                ib = arms[b]
                c = gram[a, a] + gram[b, b] - 2.0 * gram[a, b]
                if c < rtol * (gram[a, a] + gram[b, b]):
                    dab = block_mean[a] - block_mean[b]
                    c = 0.0
                    for n in range(m):
                        d0 = rewards[a, n] - rewards[b, n] - dab
                        c += d0 * d0
                db = block_mean[b] - mean[ib]
                pair_m2[ia, ib] += c + (da - db) * (da - db) * w
                pair_m2[ib, ia] = pair_m2[ia, ib]
