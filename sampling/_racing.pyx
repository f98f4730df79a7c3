# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled hot loops of Racing (Chen & Ghahramani 2016, Alg. 1).

Private: :mod:`sampling.racing` validates every input before calling these.
The pure-Python twin is :mod:`sampling._racing_py`; tests compare the two.
"""
from libc.math cimport INFINITY, log, sqrt
from cpython.pycapsule cimport PyCapsule_GetPointer
from numpy.random cimport bitgen_t

import numpy as np


cdef enum:
    _BLOCK = 512


cdef double[::1] cython_view_empty(Py_ssize_t n):
    return np.empty(n, dtype=np.float64)


cdef void race_merge_block(const double* rewards, Py_ssize_t k, Py_ssize_t m,
                           const long long* arms, long long n_old, double* mean, double* m2,
                           double* pair_m2, Py_ssize_t n_states, bint do_pairs,
                           double* work) noexcept nogil:
    """Merge one shared mini-batch (rows ``k`` x columns ``m``, row-major) into the moments."""
    cdef Py_ssize_t a, b, n, n0, n1
    cdef long long ia, ib
    cdef double s, da, db, dab, caa, dd, w, c0, c1, c2, c3, d0, d1, d2, d3
    cdef double n_new = <double>(n_old + m)
    cdef const double* ra
    cdef const double* rb
    w = (<double>n_old) * (<double>m) / n_new
    for a in range(k):
        s = 0.0
        ra = rewards + a * m
        for n in range(m):
            s += ra[n]
        work[a] = s / m
    if do_pairs:
        # column blocks keep the k rows of a block in cache while all pairs use them
        n0 = 0
        while n0 < m:
            n1 = n0 + _BLOCK if n0 + _BLOCK < m else m
            for a in range(k):
                ia = arms[a]
                ra = rewards + a * m
                for b in range(a + 1, k):
                    ib = arms[b]
                    rb = rewards + b * m
                    dab = work[a] - work[b]
                    c0 = 0.0
                    c1 = 0.0
                    c2 = 0.0
                    c3 = 0.0
                    n = n0
                    while n + 4 <= n1:  # four independent sums: no FP dependency chain
                        d0 = ra[n] - rb[n] - dab
                        d1 = ra[n + 1] - rb[n + 1] - dab
                        d2 = ra[n + 2] - rb[n + 2] - dab
                        d3 = ra[n + 3] - rb[n + 3] - dab
                        c0 += d0 * d0
                        c1 += d1 * d1
                        c2 += d2 * d2
                        c3 += d3 * d3
                        n += 4
                    while n < n1:
                        d0 = ra[n] - rb[n] - dab
                        c0 += d0 * d0
                        n += 1
                    pair_m2[ia * n_states + ib] += (c0 + c1) + (c2 + c3)
            n0 = n1
        for a in range(k):
            ia = arms[a]
            da = work[a] - mean[ia]
            for b in range(a + 1, k):
                ib = arms[b]
                db = work[b] - mean[ib]
                pair_m2[ia * n_states + ib] += (da - db) * (da - db) * w
                pair_m2[ib * n_states + ia] = pair_m2[ia * n_states + ib]
    for a in range(k):
        ia = arms[a]
        ra = rewards + a * m
        caa = 0.0
        for n in range(m):
            dd = ra[n] - work[a]
            caa += dd * dd
        da = work[a] - mean[ia]
        m2[ia] += caa + da * da * w
        mean[ia] += da * m / n_new


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
    if k == 0 or m == 0:
        return
    with nogil:
        race_merge_block(&rewards[0, 0], k, m, &arms[0], n_old, &mean[0], &m2[0], &pair_m2[0, 0],
                         pair_m2.shape[1], do_pairs, &work[0])


cdef long long race_eliminate(const double* mean, const double* m2, const double* pair_m2,
                              Py_ssize_t n_states, const long long* arms, Py_ssize_t k,
                              long long n_seen, double coef_sd, double coef_c,
                              const double* c_range, bint pairwise,
                              unsigned char* alive) noexcept nogil:
    """Leader id; ``alive[a] = 0`` for arms whose gap to it exceeds G (``c_range`` may be NULL)."""
    cdef Py_ssize_t a, best = 0
    cdef long long ix, ia
    cdef double gap, g, v
    cdef double t = <double>n_seen
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
            v = pair_m2[ix * n_states + ia] / t
            g = coef_sd * sqrt(v if v > 0.0 else 0.0)
        else:
            v = m2[ix] / t
            g = coef_sd * sqrt(v if v > 0.0 else 0.0)
            v = m2[ia] / t
            g += coef_sd * sqrt(v if v > 0.0 else 0.0)
        if c_range != NULL:
            g += coef_c * (c_range[ix] + c_range[ia])
        alive[a] = 0 if gap > g else 1
    return ix


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
    cdef long long ix
    with nogil:
        ix = race_eliminate(&mean[0], &m2[0], &pair_m2[0, 0], pair_m2.shape[1], &arms[0],
                            arms.shape[0], n_seen, coef_sd, coef_c, &c_range[0], pairwise, &alive[0])
    return ix


cdef Py_ssize_t race_perm_draw(bitgen_t* rng, long long* perm, Py_ssize_t n, Py_ssize_t pos,
                               Py_ssize_t m, long long* out) noexcept nogil:
    """Partial Fisher-Yates batch (the compiled twin of ``_race_core.PermutationSampler.draw``).

    Writes the batch ``perm[pos:end]`` (in shuffle order) to ``out`` and returns ``end``.
    """
    cdef Py_ssize_t i, j, end
    cdef long long tmp
    cdef double u
    if pos + m < n:
        for i in range(pos, pos + m):
            u = rng.next_double(rng.state)
            j = i + <Py_ssize_t>(u * <double>(n - i))
            if j > n - 1:
                j = n - 1
            tmp = perm[i]
            perm[i] = perm[j]
            perm[j] = tmp
        end = pos + m
    else:
        end = n
    for i in range(pos, end):
        out[i - pos] = perm[i]
    return end


cdef inline double _normal_coef(long long n_seen, long long n_data, double b) noexcept nogil:
    cdef double fpc
    if n_seen >= n_data:
        return 0.0
    fpc = 1.0 - (n_seen - 1.0) / (n_data - 1.0)
    return sqrt((fpc if fpc > 0.0 else 0.0) / n_seen) * b


cdef long long race_run(race_reward_fn fn, void* ctx, const double* offset, Py_ssize_t n_states,
                        Py_ssize_t n_data, Py_ssize_t first_batch, double b_norm, bitgen_t* rng,
                        long long* perm, RaceWork* w, long long* n_evals) noexcept nogil:
    """Racing-Normal (Alg. 1, Eq. 9) with pairwise variances over all ``n_states`` arms.

    The compiled engine of the ARCH chain; the arithmetic is that of
    ``_race_core.run_race(..., variance="pairwise", bound="normal", pairs="direct",
    sampler=PermutationSampler)`` with rewards ``fn(ctx, arms, k, idx, m, out)``
    (row-major ``k x m``; finite). Returns the selected arm; adds to ``n_evals``.
    """
    cdef Py_ssize_t k = n_states, a, m, pos = 0, kk
    cdef long long n_seen = 0, leader
    cdef double coef
    for a in range(n_states):
        w.arms[a] = a
        w.mean[a] = 0.0
        w.m2[a] = 0.0
    for a in range(n_states * n_states):
        w.pair_m2[a] = 0.0
    while True:
        m = first_batch if n_seen == 0 else (n_seen if n_seen < n_data - n_seen else n_data - n_seen)
        pos = race_perm_draw(rng, perm, n_data, pos, m, w.idx)
        fn(ctx, w.arms, k, w.idx, m, w.rewards)
        n_evals[0] += k * m
        race_merge_block(w.rewards, k, m, w.arms, n_seen, w.mean, w.m2, w.pair_m2, n_states,
                         True, w.work)
        n_seen += m
        if k == 1:
            return w.arms[0]
        for a in range(n_states):
            w.full_mean[a] = w.mean[a] + offset[a]
        if n_seen >= n_data:
            leader = w.arms[0]
            for a in range(1, k):
                if w.full_mean[w.arms[a]] > w.full_mean[leader]:
                    leader = w.arms[a]
            return leader
        coef = _normal_coef(n_seen, n_data, b_norm)
        leader = race_eliminate(w.full_mean, w.m2, w.pair_m2, n_states, w.arms, k, n_seen, coef,
                                0.0, NULL, True, w.alive)
        kk = 0
        for a in range(k):
            if w.alive[a]:
                w.arms[kk] = w.arms[a]
                kk += 1
        k = kk
        if k == 1:
            return leader


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


# ----------------------------------------------------------------- test wrappers
cdef struct _MatrixCtx:
    const double* data
    Py_ssize_t n_data


cdef void _matrix_rewards(void* ctx, const long long* arms, Py_ssize_t k, const long long* idx,
                          Py_ssize_t m, double* out) noexcept nogil:
    cdef _MatrixCtx* c = <_MatrixCtx*>ctx
    cdef Py_ssize_t a, n
    for a in range(k):
        for n in range(m):
            out[a * m + n] = c.data[arms[a] * c.n_data + idx[n]]


cdef bitgen_t* bitgen_of(object capsule) except NULL:
    """The ``bitgen_t`` behind ``Generator.bit_generator.capsule`` (the caller keeps it alive)."""
    return <bitgen_t*>PyCapsule_GetPointer(capsule, "BitGenerator")


def perm_draw_wrapper(object gen, long long[::1] perm, Py_ssize_t pos, Py_ssize_t m):
    """Test wrapper of ``race_perm_draw``: returns ``(batch, end)``."""
    cdef object capsule = gen.bit_generator.capsule
    cdef bitgen_t* rng = bitgen_of(capsule)
    cdef Py_ssize_t n = perm.shape[0], end
    out = np.empty(n, dtype=np.int64)
    cdef long long[::1] o = out
    with gen.bit_generator.lock:
        end = race_perm_draw(rng, &perm[0], n, pos, m, &o[0])
    return out[:end - pos], end


def race_matrix_wrapper(const double[:, ::1] rewards,   # IN (D, N) all rewards
                        const double[::1] offset,       # IN (D,) finite per-arm constants
                        Py_ssize_t first_batch, double b_norm, object gen,
                        long long[::1] perm):           # INOUT (N,) kept arrangement
    """Test wrapper of ``race_run`` over a reward matrix; returns ``(state, n_evals)``."""
    cdef Py_ssize_t D = rewards.shape[0], N = rewards.shape[1]
    cdef _MatrixCtx c
    cdef RaceWork w
    cdef long long n_evals = 0, state
    cdef object capsule = gen.bit_generator.capsule
    cdef bitgen_t* rng = bitgen_of(capsule)
    cap = max(first_batch, N // 2 + 1)
    arms = np.empty(D, dtype=np.int64)
    idx = np.empty(N, dtype=np.int64)
    fl = np.zeros(5 * D + D * D + D * cap)
    alive = np.empty(D, dtype=np.uint8)
    cdef long long[::1] arms_v = arms
    cdef long long[::1] idx_v = idx
    cdef double[::1] fl_v = fl
    cdef unsigned char[::1] alive_v = alive
    c.data = &rewards[0, 0]
    c.n_data = N
    w.arms = &arms_v[0]
    w.idx = &idx_v[0]
    w.mean = &fl_v[0]
    w.m2 = &fl_v[D]
    w.full_mean = &fl_v[2 * D]
    w.work = &fl_v[3 * D]
    w.pair_m2 = &fl_v[5 * D]
    w.rewards = &fl_v[5 * D + D * D]
    w.alive = &alive_v[0]
    with gen.bit_generator.lock:
        state = race_run(_matrix_rewards, &c, &offset[0], D, N, first_batch, b_norm, rng,
                         &perm[0], &w, &n_evals)
    return int(state), int(n_evals)
