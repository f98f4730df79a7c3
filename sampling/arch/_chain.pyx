# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled sweep of the Carlin-Chib ARCH chain (Chen & Ghahramani 2016, Sec. 5.2, Appx. C.2).

One call of :meth:`ChainKernel.sweep` makes one whole sweep of
:mod:`sampling.arch.sampler` without returning to Python:

1. pseudo-prior refresh of every model but the current one;
2. ``n_mh`` Langevin-MH steps on the current model's parameters: full-data MALA
   (``method="exact"``), or an SGLD proposal (gradient exact on the outliers,
   linearised control variate plus a mini-batch remainder on the inliers) corrected
   by the Racing-Normal MH test (Eq. 12) over the inliers (``"subsampled"``);
3. the Gibbs draw of q: exact Gumbel-max over all N terms of every model, or
   Racing-Normal (Alg. 1, Eq. 9) over the inliers with the control variates
   (Eq. 11: Taylor, or the paper's binned proxies) and the outliers summed exactly (the current model's sum is
   the one cached by its Langevin step, not recomputed);
4. the Wang-Landau / step-size updates.

Both methods use this same kernel, so their wall times compare like with like.
Random numbers: the normals, Gumbels and uniforms of a sweep are drawn by the caller
(NumPy ``Generator``) and passed in; the mini-batch indices are drawn here from the
same Generator's bit generator (``next_double``, partial Fisher-Yates over a kept
arrangement of the inliers, :func:`sampling._racing.race_perm_draw`). The Python
reference of this file is :mod:`sampling.arch._chain_py` (used by tests only):
on the same random stream it makes the same decisions.

Callers validate; nothing here checks its inputs.
"""
from libc.math cimport INFINITY, M_PI, exp, isfinite, lgamma, log, log1p, sqrt
from libc.stdlib cimport free, malloc

from numpy.random cimport bitgen_t

from sampling._racing cimport RaceWork, bitgen_of, race_perm_draw, race_run

import numpy as np


cdef extern from *:
    """
    #define ARCH_PREFETCH(p) __builtin_prefetch((const void*)(p))
    """
    void ARCH_PREFETCH(const void* p) noexcept nogil

cdef enum:
    _AHEAD = 8   # rewards computed ahead of their table rows' prefetch

#: indices of the per-chain counters in ``stats``
STATS = ("n_evals", "check_evals", "gibbs_checks", "gibbs_errors", "mh_checks", "mh_errors",
         "n_accept", "n_mh", "param_evals", "gibbs_evals")


cdef struct Slot:
    # one model's quantities at one parameter point
    Py_ssize_t j
    Py_ssize_t q
    double nu
    double a
    double k
    double base        # c0 + k log a
    double dc0
    double dn          # nu - nu0
    double mean_h      # population mean of the Taylor proxy over the inliers
    double* alpha      # (q + 1,)
    double* da         # (q + 1,) alpha - alpha0
    double* ref_s      # (n_bins,) binned proxy: reference variance of each bin at this point
    double* bcoef      # (n_bins, 6) binned proxy: f, f_r, f_s, f_rr, f_rs, f_ss at the references


cdef struct Ctx:
    const double* r2
    Py_ssize_t n_obs
    const long long* inliers
    const double* tab  # (D, n_obs, 8): f_s, f_ss, f_snu, f_nu, f_nunu, l_t, s_t at the
                       # reference, 0 (one 64-byte record per (model, time): one cache line)
    Slot* slots        # D + 2 (Gibbs arms, then MH old / new)
    Py_ssize_t D
    bint binned        # racing proxy: the paper's binned one (else the Taylor one)
    const double* r    # (n_obs,) returns (binned proxy)
    const long long* bin_of  # (D, n_obs) bin of each time (binned proxy)
    const double* ref_r      # (D, n_bins)
    Py_ssize_t n_bins


cdef inline double _softplus(double x) noexcept nogil:
    if x == 0.0:
        return log(2.0)
    if x < 0.0:
        return log1p(exp(x))
    return x + log1p(exp(-x))


cdef inline double _sigmoid(double x) noexcept nogil:
    return 1.0 / (1.0 + exp(-x))


cdef double _digamma(double x) noexcept nogil:
    """psi(x) for x > 0: recurrence up to x >= 6, then the asymptotic series."""
    cdef double r = 0.0, f, t
    while x < 6.0:
        r -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    t = f * (-1.0 / 12 + f * (1.0 / 120 + f * (-1.0 / 252 + f * (1.0 / 240 + f * (-1.0 / 132)))))
    return r + log(x) - 0.5 / x + t


cdef inline double _variance(const double* r2, const double* alpha, Py_ssize_t t,
                             Py_ssize_t q) noexcept nogil:
    cdef double s = alpha[0]
    cdef Py_ssize_t i
    for i in range(1, q + 1):
        s += alpha[i] * r2[t - i]
    return s


cdef inline double _term(const Slot* sl, const double* r2, Py_ssize_t t) noexcept nogil:
    cdef double s = _variance(r2, sl.alpha, t, sl.q)
    cdef double g = sl.a * s + r2[t]
    return sl.base + (sl.k - 0.5) * log(s) - sl.k * log(g)


cdef inline double _reward_taylor(const Slot* sl, const Ctx* c, Py_ssize_t t) noexcept nogil:
    """Residual reward ``l_t - h_t + E[h]`` (Eq. 11) with the Taylor proxy ``h``.

    ``ud = (alpha - alpha0) . u_t`` is ``s_t - s0_t`` (``s0`` the variance at the
    reference, tabulated), so one pass over the lags serves both.
    """
    cdef const double* r2 = c.r2
    cdef double s = _variance(r2, sl.alpha, t, sl.q), ud, g, l, h
    cdef const double* sc = c.tab + (sl.j * c.n_obs + t) * 8
    ud = s - sc[6]
    g = sl.a * s + r2[t]
    l = sl.base + (sl.k - 0.5) * log(s) - sl.k * log(g)
    h = (sc[5] + sc[0] * ud + sc[3] * sl.dn
         + 0.5 * (sc[1] * ud * ud + 2.0 * sc[2] * ud * sl.dn + sc[4] * sl.dn * sl.dn))
    return l - h + sl.mean_h


cdef inline double _reward_binned(const Slot* sl, const Ctx* c, Py_ssize_t t) noexcept nogil:
    """Residual reward ``l_t - h_t + E[h]`` (Eq. 11) with the paper's binned proxy ``h``."""
    cdef const double* r2 = c.r2
    cdef double s = _variance(r2, sl.alpha, t, sl.q), g, l, h, dr, ds
    cdef Py_ssize_t b = c.bin_of[sl.j * c.n_obs + t]
    cdef const double* bc = sl.bcoef + 6 * b
    g = sl.a * s + r2[t]
    l = sl.base + (sl.k - 0.5) * log(s) - sl.k * log(g)
    dr = c.r[t] - c.ref_r[sl.j * c.n_bins + b]
    ds = s - sl.ref_s[b]
    h = (bc[0] + bc[1] * dr + bc[2] * ds
         + 0.5 * bc[3] * dr * dr + bc[4] * dr * ds + 0.5 * bc[5] * ds * ds)
    return l - h + sl.mean_h


cdef void _gibbs_rewards(void* ctx, const long long* arms, Py_ssize_t k, const long long* idx,
                         Py_ssize_t m, double* out) noexcept nogil:
    cdef Ctx* c = <Ctx*>ctx
    cdef Py_ssize_t a, n, ta
    cdef const Slot* sl
    for a in range(k):
        sl = &c.slots[arms[a]]
        if c.binned:
            for n in range(m):
                out[a * m + n] = _reward_binned(sl, c, c.inliers[idx[n]])
            continue
        for n in range(m):
            if n + _AHEAD < m:  # random rows of a multi-MB table: fetch them early
                ta = c.inliers[idx[n + _AHEAD]]
                ARCH_PREFETCH(c.tab + (sl.j * c.n_obs + ta) * 8)
                ARCH_PREFETCH(c.r2 + ta - sl.q)
            out[a * m + n] = _reward_taylor(sl, c, c.inliers[idx[n]])


cdef void _mh_rewards(void* ctx, const long long* arms, Py_ssize_t k, const long long* idx,
                      Py_ssize_t m, double* out) noexcept nogil:
    # arm 0: reject (the constant mu0 is its offset); arm 1: accept, l_n(x') - l_n(x)
    cdef Ctx* c = <Ctx*>ctx
    cdef Py_ssize_t a, n, t, ta
    cdef const Slot* old = &c.slots[c.D]
    cdef const Slot* new = &c.slots[c.D + 1]
    for a in range(k):
        if arms[a] == 0:
            for n in range(m):
                out[a * m + n] = 0.0
        elif c.binned:
            for n in range(m):
                t = c.inliers[idx[n]]
                out[a * m + n] = _reward_binned(new, c, t) - _reward_binned(old, c, t)
        else:
            for n in range(m):
                if n + _AHEAD < m:
                    ta = c.inliers[idx[n + _AHEAD]]
                    ARCH_PREFETCH(c.tab + (old.j * c.n_obs + ta) * 8)
                    ARCH_PREFETCH(c.r2 + ta - old.q)
                t = c.inliers[idx[n]]
                out[a * m + n] = _reward_taylor(new, c, t) - _reward_taylor(old, c, t)


cdef class ChainKernel:
    """One chain's compiled sweep over a fixed :class:`~sampling.arch.sampler.ChainContext`.

    Parameters
    ----------
    ctx : ChainContext
        Its ``kernel_arrays()`` (data, index sets, pseudo-priors, whitening
        transforms and Taylor control-variate tables, flattened) are read once.
    state : ChainState
        Holds the arrays this kernel updates in place: ``xs_flat``, ``log_pi``,
        ``log_step``, ``istate`` (q index, t, cached model), ``fstate`` (cached
        log-likelihood sum), ``cache_g``, ``perm``, ``stats``.
    settings : dict
        ``method`` ("exact" / "subsampled"), ``first_batch``, ``grad_batch``,
        ``n_mh``, ``target_accept``, ``b_gibbs`` and ``b_mh`` (B_Normal of the two
        races at their delta / D' and pi1).
    """

    cdef object _keep
    cdef const double* r2
    cdef const long long* inliers
    cdef const long long* outliers
    cdef const long long* all_idx
    cdef Py_ssize_t n_obs, n_in, n_out, n_all, D, P_max, sum_p
    cdef const long long* qs
    cdef const long long* poff
    cdef const long long* moff
    cdef const double* ps_mean
    cdef const double* ps_chol
    cdef const double* ps_const
    cdef const double* wh_mean
    cdef const double* wh_chol
    cdef const double* ref
    cdef const double* L0_in
    cdef const double* G0
    cdef const double* J_in
    cdef double* xs
    cdef double* log_pi
    cdef double* log_step
    cdef long long* istate
    cdef double* fstate
    cdef double* cache_g
    cdef long long* perm
    cdef long long* stats
    cdef bint exact
    cdef Py_ssize_t first_batch, grad_batch, n_mh
    cdef double target_accept, b_gibbs, b_mh
    cdef Ctx ctx
    cdef RaceWork rw
    cdef double* fbuf
    cdef long long* ibuf
    cdef int _n_acc
    cdef double* bbuf
    cdef const long long* xoff
    cdef const long long* xxoff
    cdef const double* ref_x
    cdef const double* cov_rx
    cdef const double* cov_xx
    cdef const double* var_r
    cdef const double* bcount

    def __cinit__(self, object ctx, object state, dict settings):
        self.fbuf = NULL
        self.ibuf = NULL
        self.rw.alive = NULL
        self.ctx.slots = NULL
        self.bbuf = NULL

    def __init__(self, object ctx, object state, dict settings):
        if ctx.control_variate not in ("taylor", "binned"):
            raise ValueError("the control_variate of the ARCH chain must be 'taylor' or 'binned'; "
                             f"got {ctx.control_variate!r}")
        cdef dict pack = ctx.kernel_arrays()
        cdef const double[::1] r2 = pack["r2"]
        cdef const long long[::1] inl = pack["inliers"]
        cdef const long long[::1] outl = pack["outliers"]
        cdef const long long[::1] alli = pack["all_idx"]
        cdef const long long[::1] qs = pack["q"]
        cdef const long long[::1] poff = pack["poff"]
        cdef const long long[::1] moff = pack["moff"]
        cdef const double[::1] psm = pack["pseudo_mean"]
        cdef const double[::1] psc = pack["pseudo_chol"]
        cdef const double[::1] psk = pack["pseudo_const"]
        cdef const double[::1] whm = pack["whiten_mean"]
        cdef const double[::1] whc = pack["whiten_chol"]
        cdef const double[::1] ref = pack["ref"]
        cdef const double[::1] tab = pack["tab"]
        cdef const double[::1] rr = pack["r"]
        cdef const long long[::1] bin_of = pack["bin_of"]
        cdef const double[::1] ref_r = pack["ref_r"]
        cdef const double[::1] ref_x = pack["ref_x"]
        cdef const double[::1] cov_rx = pack["cov_rx"]
        cdef const double[::1] cov_xx = pack["cov_xx"]
        cdef const double[::1] var_r = pack["var_r"]
        cdef const double[::1] bcount = pack["count"]
        cdef const long long[::1] xoff = pack["xoff"]
        cdef const long long[::1] xxoff = pack["xxoff"]
        cdef const double[::1] L0 = pack["L0_in"]
        cdef const double[::1] G0 = pack["G0"]
        cdef const double[::1] J = pack["J_in"]
        cdef double[::1] xs = state.xs_flat
        cdef double[::1] lpi = state.log_pi
        cdef double[::1] lst = state.log_step
        cdef long long[::1] ist = state.istate
        cdef double[::1] fst = state.fstate
        cdef double[::1] cg = state.cache_g
        cdef long long[::1] perm = state.perm
        cdef long long[::1] stats = state.stats
        cdef Py_ssize_t cap, D, j
        cdef double* sbase
        self._keep = (pack, state)
        self.r2 = &r2[0]
        self.n_obs = r2.shape[0]
        self.inliers = &inl[0]
        self.n_in = inl.shape[0]
        self.outliers = &outl[0] if outl.shape[0] else NULL
        self.n_out = outl.shape[0]
        self.all_idx = &alli[0]
        self.n_all = alli.shape[0]
        self.qs = &qs[0]
        self.D = D = qs.shape[0]
        self.poff = &poff[0]
        self.moff = &moff[0]
        self.sum_p = poff[D]
        self.P_max = 0
        for j in range(D):
            if qs[j] + 2 > self.P_max:
                self.P_max = qs[j] + 2
        self.ps_mean = &psm[0]
        self.ps_chol = &psc[0]
        self.ps_const = &psk[0]
        self.wh_mean = &whm[0]
        self.wh_chol = &whc[0]
        self.ref = &ref[0]
        self.L0_in = &L0[0]
        self.G0 = &G0[0]
        self.J_in = &J[0]
        self.xs = &xs[0]
        self.log_pi = &lpi[0]
        self.log_step = &lst[0]
        self.istate = &ist[0]
        self.fstate = &fst[0]
        self.cache_g = &cg[0]
        self.perm = &perm[0]
        self.stats = &stats[0]
        self.exact = settings["method"] == "exact"
        self.first_batch = settings["first_batch"]
        self.grad_batch = min(int(settings["grad_batch"]), self.n_in)
        self.n_mh = settings["n_mh"]
        self.target_accept = settings["target_accept"]
        self.b_gibbs = settings["b_gibbs"]
        self.b_mh = settings["b_mh"]
        cap = max(self.first_batch, self.n_in // 2 + 1)
        # float work: race (5 D + D^2 + D cap), slots (D + 2) x 2 P_max, vectors 16 P_max, 4 D
        self.fbuf = <double*>malloc(sizeof(double) * (5 * D + D * D + D * cap
                                                      + 2 * (D + 2) * self.P_max
                                                      + 16 * self.P_max + 4 * D + 8))
        self.ibuf = <long long*>malloc(sizeof(long long) * (D + 2 * self.n_in + 8))
        self.rw.alive = <unsigned char*>malloc(D + 8)
        if self.fbuf == NULL or self.ibuf == NULL or self.rw.alive == NULL:
            raise MemoryError("ChainKernel work buffers")
        self.rw.arms = self.ibuf
        self.rw.idx = self.ibuf + D
        self.rw.mean = self.fbuf
        self.rw.m2 = self.fbuf + D
        self.rw.full_mean = self.fbuf + 2 * D
        self.rw.work = self.fbuf + 3 * D
        self.rw.pair_m2 = self.fbuf + 5 * D
        self.rw.rewards = self.fbuf + 5 * D + D * D
        self.ctx.r2 = self.r2
        self.ctx.n_obs = self.n_obs
        self.ctx.inliers = self.inliers
        self.ctx.tab = &tab[0]
        self.ctx.D = D
        self.ctx.slots = <Slot*>malloc(sizeof(Slot) * (D + 2))
        if self.ctx.slots == NULL:
            raise MemoryError("ChainKernel slots")
        sbase = self.fbuf + 5 * D + D * D + D * cap
        for j in range(D + 2):
            self.ctx.slots[j].alpha = sbase + 2 * j * self.P_max
            self.ctx.slots[j].da = sbase + (2 * j + 1) * self.P_max
        self.ctx.binned = ctx.control_variate == "binned"
        self.ctx.r = &rr[0]
        self.ctx.bin_of = &bin_of[0]
        self.ctx.ref_r = &ref_r[0]
        self.ctx.n_bins = pack["n_bins"]
        self.xoff = &xoff[0]
        self.xxoff = &xxoff[0]
        self.ref_x = &ref_x[0]
        self.cov_rx = &cov_rx[0]
        self.cov_xx = &cov_xx[0]
        self.var_r = &var_r[0]
        self.bcount = &bcount[0]
        self.bbuf = <double*>malloc(sizeof(double) * (D + 2) * 7 * self.ctx.n_bins + 8)
        if self.bbuf == NULL:
            raise MemoryError("ChainKernel binned-proxy buffers")
        for j in range(D + 2):
            self.ctx.slots[j].ref_s = self.bbuf + j * 7 * self.ctx.n_bins
            self.ctx.slots[j].bcoef = self.bbuf + (j * 7 + 1) * self.ctx.n_bins

    def __dealloc__(self):
        if self.fbuf != NULL:
            free(self.fbuf)
        if self.ibuf != NULL:
            free(self.ibuf)
        if self.rw.alive != NULL:
            free(self.rw.alive)
        if self.ctx.slots != NULL:
            free(self.ctx.slots)
        if self.bbuf != NULL:
            free(self.bbuf)

    # ------------------------------------------------------------ small pieces
    cdef double* _vec(self, int k) noexcept nogil:
        cdef Py_ssize_t cap = max(self.first_batch, self.n_in // 2 + 1)
        return (self.fbuf + 5 * self.D + self.D * self.D + self.D * cap
                + 2 * (self.D + 2) * self.P_max + k * self.P_max)

    cdef void _prepare(self, Slot* sl, Py_ssize_t j, const double* x) noexcept nogil:
        """Constrained parameters, constants and Taylor-proxy mean of model j at x."""
        cdef Py_ssize_t q = self.qs[j], i, l
        cdef const double* a0 = self.ref + self.poff[j]
        cdef const double* G0 = self.G0 + self.poff[j]
        cdef const double* J = self.J_in + self.moff[j]
        cdef Py_ssize_t P = q + 2
        cdef double nu, quad, lin, di
        cdef double* d = self._vec(15)
        sl.j = j
        sl.q = q
        for i in range(q + 1):
            sl.alpha[i] = _softplus(x[i])
            sl.da[i] = sl.alpha[i] - a0[i]
            d[i] = sl.da[i]
        nu = 2.0 + _softplus(x[q + 1])
        sl.nu = nu
        sl.a = nu - 2.0
        sl.k = 0.5 * (nu + 1.0)
        sl.base = (lgamma(sl.k) - lgamma(0.5 * nu) - 0.5 * log(M_PI * sl.a)) + sl.k * log(sl.a)
        sl.dc0 = 0.5 * (_digamma(sl.k) - _digamma(0.5 * nu)) - 0.5 / sl.a
        sl.dn = nu - a0[q + 1]
        d[q + 1] = sl.dn
        lin = 0.0
        quad = 0.0
        for i in range(P):
            lin += G0[i] * d[i]
            di = 0.0
            for l in range(P):
                di += J[i * P + l] * d[l]
            quad += d[i] * di
        sl.mean_h = (self.L0_in[j] + lin + 0.5 * quad) / self.n_in
        if self.ctx.binned and not self.exact:
            self._prepare_binned(sl, j)

    cdef void _prepare_binned(self, Slot* sl, Py_ssize_t j) noexcept nogil:
        """Binned proxy at the slot's point (``BinnedProxy.coefficients``, Appx. C.2)."""
        cdef Py_ssize_t nb = self.ctx.n_bins, q = sl.q, b, i, l
        cdef const double* rx = self.ref_x + self.xoff[j]
        cdef const double* crx = self.cov_rx + self.xoff[j]
        cdef const double* cxx = self.cov_xx + self.xxoff[j]
        cdef const double* a1 = sl.alpha + 1
        cdef double s, r, g, a = sl.a, k = sl.k, var_s, cov_rs, v, tot = 0.0
        cdef double* c
        for b in range(nb):
            s = sl.alpha[0]
            cov_rs = 0.0
            var_s = 0.0
            for i in range(q):
                s += rx[b * q + i] * a1[i]
                cov_rs += crx[b * q + i] * a1[i]
                v = 0.0
                for l in range(q):
                    v += cxx[(b * q + i) * q + l] * a1[l]
                var_s += v * a1[i]
            sl.ref_s[b] = s
            r = self.ctx.ref_r[j * nb + b]
            g = a * s + r * r
            c = sl.bcoef + 6 * b
            c[0] = sl.base + (k - 0.5) * log(s) - k * log(g)
            c[1] = -2.0 * k * r / g
            c[2] = (k - 0.5) / s - k * a / g
            c[3] = -2.0 * k / g + 4.0 * k * r * r / (g * g)
            c[4] = 2.0 * k * r * a / (g * g)
            c[5] = -(k - 0.5) / (s * s) + k * a * a / (g * g)
            tot += self.bcount[j * nb + b] * (c[0] + 0.5 * c[3] * self.var_r[j * nb + b]
                                             + c[4] * cov_rs + 0.5 * c[5] * var_s)
        sl.mean_h = tot / self.n_in

    cdef double _sum_terms(self, const Slot* sl, const long long* idx, Py_ssize_t n) noexcept nogil:
        cdef double tot = 0.0
        cdef Py_ssize_t i
        for i in range(n):
            tot += _term(sl, self.r2, idx[i])
        return tot

    cdef double _sum_grad(self, const Slot* sl, const double* x, const long long* idx,
                          Py_ssize_t n, double* grad) noexcept nogil:
        """Sum of l_t over idx; ``grad`` = its gradient w.r.t. x (softplus chain rule)."""
        cdef Py_ssize_t i, l, t, q = sl.q
        cdef double tot = 0.0, s, g, fs, gnu = 0.0
        cdef const double* r2 = self.r2
        cdef double log_a = log(sl.a), ls, lg
        for l in range(q + 2):
            grad[l] = 0.0
        for i in range(n):
            t = idx[i]
            s = _variance(r2, sl.alpha, t, q)
            g = sl.a * s + r2[t]
            ls = log(s)
            lg = log(g)
            tot += sl.base + (sl.k - 0.5) * ls - sl.k * lg
            fs = (sl.k - 0.5) / s - sl.k * sl.a / g
            grad[0] += fs
            for l in range(1, q + 1):
                grad[l] += fs * r2[t - l]
            gnu += sl.dc0 - 0.5 * (lg - log_a - ls) + sl.k * r2[t] / (sl.a * g)
        grad[q + 1] = gnu
        for l in range(q + 2):
            grad[l] *= _sigmoid(x[l])
        return tot

    cdef void _grad_est(self, const Slot* sl, const double* x, const double* g_out,
                        const long long* batch, Py_ssize_t m, double* out) noexcept nogil:
        """SGLD gradient: outliers exact + linearised CV + (N_in / m) * batch remainder + prior."""
        cdef Py_ssize_t j = sl.j, q = sl.q, P = q + 2, i, l, t
        cdef const double* G0 = self.G0 + self.poff[j]
        cdef const double* J = self.J_in + self.moff[j]
        cdef const double* sc
        cdef const double* r2 = self.r2
        cdef double* rem = self._vec(14)
        cdef double* d = self._vec(13)
        cdef double s, g, fs, fnu, ud, cu, scale = (<double>self.n_in) / m, sig, lin
        for l in range(q + 1):
            d[l] = sl.da[l]
        d[q + 1] = sl.dn
        for l in range(P):
            rem[l] = 0.0
        for i in range(m):
            t = batch[i]
            if i + _AHEAD < m:
                ARCH_PREFETCH(self.ctx.tab + (j * self.n_obs + batch[i + _AHEAD]) * 8)
                ARCH_PREFETCH(r2 + batch[i + _AHEAD] - q)
            sc = self.ctx.tab + (j * self.n_obs + t) * 8
            s = _variance(r2, sl.alpha, t, q)
            ud = s - sc[6]
            g = sl.a * s + r2[t]
            fs = (sl.k - 0.5) / s - sl.k * sl.a / g
            fnu = sl.dc0 - 0.5 * log(g / (sl.a * s)) + sl.k * r2[t] / (sl.a * g)
            cu = fs - sc[0] - sc[1] * ud - sc[2] * sl.dn
            rem[0] += cu
            for l in range(1, q + 1):
                rem[l] += cu * r2[t - l]
            rem[q + 1] += fnu - sc[3] - sc[2] * ud - sc[4] * sl.dn
        for l in range(P):
            lin = G0[l]
            for i in range(P):
                lin += J[l * P + i] * d[i]
            sig = _sigmoid(x[l])
            out[l] = g_out[l] + sig * lin + scale * (sig * rem[l]) + (1.0 - 2.0 * sig)

    cdef double _log_prior(self, const double* x, Py_ssize_t P) noexcept nogil:
        cdef double tot = 0.0
        cdef Py_ssize_t i
        for i in range(P):
            tot += -_softplus(x[i]) - _softplus(-x[i])
        return tot

    cdef double _pseudo_logpdf(self, Py_ssize_t j, const double* x) noexcept nogil:
        cdef Py_ssize_t P = self.qs[j] + 2, i, l
        cdef const double* L = self.ps_chol + self.moff[j]
        cdef const double* mu = self.ps_mean + self.poff[j]
        cdef double* z = self._vec(12)
        cdef double v, zz = 0.0
        for i in range(P):
            v = x[i] - mu[i]
            for l in range(i):
                v -= L[i * P + l] * z[l]
            z[i] = v / L[i * P + i]
            zz += z[i] * z[i]
        return -0.5 * zz + self.ps_const[j]

    # ------------------------------------------------------------ the steps
    cdef bint _langevin(self, Py_ssize_t j, const double* xi, double u, bitgen_t* rng,
                        bint check) noexcept nogil:
        cdef Py_ssize_t P = self.qs[j] + 2, i, l, m = 0
        cdef const double* L = self.wh_chol + self.moff[j]
        cdef const double* mu = self.wh_mean + self.poff[j]
        cdef double* x = self.xs + self.poff[j]
        cdef double* w = self._vec(0)
        cdef double* w_new = self._vec(1)
        cdef double* x_new = self._vec(2)
        cdef double* gx = self._vec(3)
        cdef double* gw = self._vec(4)
        cdef double* g_new = self._vec(5)
        cdef double* gw_new = self._vec(6)
        cdef double* gx_new = self._vec(7)
        cdef Slot* s_old = &self.ctx.slots[self.D]
        cdef Slot* s_new = &self.ctx.slots[self.D + 1]
        cdef double eps = exp(self.log_step[j]), v, ll, ll_new, lq_fwd, lq_bwd, log_ratio, xx
        cdef double mu0
        cdef double offset[2]
        cdef long long leader, n_ev
        cdef bint acc, exact_acc
        cdef long long* batch = self.ibuf + self.D + self.n_in
        # whitened coordinates w = L^{-1} (x - mean)
        for i in range(P):
            v = x[i] - mu[i]
            for l in range(i):
                v -= L[i * P + l] * w[l]
            w[i] = v / L[i * P + i]
        self._prepare(s_old, j, x)
        if not self.exact:
            m = self.grad_batch
            race_perm_draw(rng, self.perm, self.n_in, 0, m, batch)
            for i in range(m):
                batch[i] = self.inliers[batch[i]]
        if self.istate[2] != j:
            if self.exact:
                self.fstate[0] = self._sum_grad(s_old, x, self.all_idx, self.n_all, self.cache_g)
                self.stats[0] += self.n_all
            else:
                self.fstate[0] = self._sum_grad(s_old, x, self.outliers, self.n_out, self.cache_g)
                self.stats[0] += self.n_out
            self.istate[2] = j
        ll = self.fstate[0]
        if self.exact:
            for i in range(P):
                gx[i] = self.cache_g[i] + (1.0 - 2.0 * _sigmoid(x[i]))
        else:
            self._grad_est(s_old, x, self.cache_g, batch, m, gx)
            self.stats[0] += m
        # proposal in whitened coordinates
        xx = 0.0
        for i in range(P):
            v = 0.0
            for l in range(i, P):
                v += L[l * P + i] * gx[l]
            gw[i] = v
            w_new[i] = w[i] + 0.5 * eps * gw[i] + sqrt(eps) * xi[i]
            xx += xi[i] * xi[i]
        lq_fwd = -0.5 * xx - 0.5 * P * log(2.0 * M_PI * eps)
        for i in range(P):
            v = mu[i]
            for l in range(i + 1):
                v += L[i * P + l] * w_new[l]
            x_new[i] = v
        self._prepare(s_new, j, x_new)
        if self.exact:
            ll_new = self._sum_grad(s_new, x_new, self.all_idx, self.n_all, g_new)
            self.stats[0] += self.n_all
            for i in range(P):
                gx_new[i] = g_new[i] + (1.0 - 2.0 * _sigmoid(x_new[i]))
        else:
            ll_new = self._sum_grad(s_new, x_new, self.outliers, self.n_out, g_new)
            self.stats[0] += self.n_out
            self._grad_est(s_new, x_new, g_new, batch, m, gx_new)
            self.stats[0] += m
        xx = 0.0
        for i in range(P):
            v = 0.0
            for l in range(i, P):
                v += L[l * P + i] * gx_new[l]
            gw_new[i] = v
            v = w[i] - w_new[i] - 0.5 * eps * gw_new[i]
            xx += v * v
        lq_bwd = -0.5 * xx / eps - 0.5 * P * log(2.0 * M_PI * eps)
        log_ratio = (ll_new - ll + self._log_prior(x_new, P) - self._log_prior(x, P)
                     + lq_bwd - lq_fwd)
        if self.exact:
            acc = isfinite(log_ratio) and log(u) < log_ratio
        else:
            log_ratio = log_ratio - log(u)   # log_rest of the racing MH test
            if not isfinite(log_ratio):
                return False
            mu0 = -log_ratio / self.n_in
            offset[0] = mu0
            offset[1] = 0.0
            n_ev = 0
            leader = race_run(_mh_rewards, &self.ctx, offset, 2, self.n_in, self.first_batch,
                              self.b_mh, rng, self.perm, &self.rw, &n_ev)
            self.stats[0] += n_ev
            acc = leader == 1
            if check:
                exact_acc = (self._sum_terms(s_new, self.inliers, self.n_in)
                             - self._sum_terms(s_old, self.inliers, self.n_in)) + log_ratio > 0
                self.stats[1] += 2 * self.n_in
                self.stats[4] += 1
                self.stats[5] += exact_acc != acc
        if acc:
            for i in range(P):
                x[i] = x_new[i]
                self.cache_g[i] = g_new[i]
            self.fstate[0] = ll_new
        return acc

    cdef Py_ssize_t _gibbs(self, const double* gumbel, bitgen_t* rng, bint check) noexcept nogil:
        cdef Py_ssize_t D = self.D, k, best
        cdef double* f0 = self._vec(8)
        cdef double* off = self._vec(9)
        cdef double* tot = self._vec(10)
        cdef double* x
        cdef Slot* sl
        cdef long long n_ev = 0, j_new
        for k in range(D):
            x = self.xs + self.poff[k]
            f0[k] = (self.log_pi[k] + self._log_prior(x, self.qs[k] + 2)
                     - self._pseudo_logpdf(k, x))
            self._prepare(&self.ctx.slots[k], k, x)
        if self.exact:
            for k in range(D):
                if k == self.istate[2]:  # the current model: its full sum is cached
                    tot[k] = self.fstate[0] + f0[k] + gumbel[k]
                else:
                    tot[k] = self._sum_terms(&self.ctx.slots[k], self.all_idx, self.n_all) + f0[k] + gumbel[k]
                    self.stats[0] += self.n_all
            best = 0
            for k in range(1, D):
                if tot[k] > tot[best]:
                    best = k
            return best
        for k in range(D):
            if k == self.istate[2]:  # the current model: its outlier sum is cached
                f0[k] += self.fstate[0]
            else:
                f0[k] += self._sum_terms(&self.ctx.slots[k], self.outliers, self.n_out)
                self.stats[0] += self.n_out
            off[k] = (f0[k] + gumbel[k]) / self.n_in
        j_new = race_run(_gibbs_rewards, &self.ctx, off, D, self.n_in, self.first_batch,
                         self.b_gibbs, rng, self.perm, &self.rw, &n_ev)
        self.stats[0] += n_ev
        if check:
            for k in range(D):
                tot[k] = self._sum_terms(&self.ctx.slots[k], self.inliers, self.n_in) + f0[k] + gumbel[k]
            self.stats[1] += D * self.n_in
            best = 0
            for k in range(1, D):
                if tot[k] > tot[best]:
                    best = k
            self.stats[2] += 1
            self.stats[3] += best != j_new
        return j_new

    def sweep(self, const double[::1] z,        # IN (sum_p + n_mh * P_max,) standard normals
              const double[::1] gumbel,         # IN (D,) Gumbel(0, 1)
              const double[::1] u,              # IN (n_mh,) Uniform(0, 1)
              object gen,                       # the Generator whose bit generator draws indices
              bint adapt_step, bint adapt_pi, bint check):
        """One sweep (see the module docstring); returns ``(q_index, n_accepted)``."""
        cdef object capsule = gen.bit_generator.capsule
        cdef bitgen_t* rng = bitgen_of(capsule)
        with gen.bit_generator.lock:
            with nogil:
                self._sweep(&z[0], &gumbel[0], &u[0], rng, adapt_step, adapt_pi, check)
        return self.istate[0], self._n_acc

    cdef void _sweep(self, const double* z, const double* gumbel, const double* u, bitgen_t* rng,
                     bint adapt_step, bint adapt_pi, bint check) noexcept nogil:
        cdef Py_ssize_t D = self.D, j = self.istate[0], k, i, l, P, s, j_new
        cdef const double* L
        cdef const double* mu
        cdef double* x
        cdef double gamma = 1.0 / (1.0 + self.istate[1] / 100.0), v, mx, tot
        cdef long long e0, e1
        cdef int n_acc = 0
        cdef bint acc
        if True:
            for k in range(D):
                if k == j:
                    continue
                P = self.qs[k] + 2
                L = self.ps_chol + self.moff[k]
                mu = self.ps_mean + self.poff[k]
                x = self.xs + self.poff[k]
                for i in range(P):
                    v = mu[i]
                    for l in range(i + 1):
                        v += L[i * P + l] * z[self.poff[k] + l]
                    x[i] = v
            e0 = self.stats[0]
            for s in range(self.n_mh):
                acc = self._langevin(j, z + self.sum_p + s * self.P_max, u[s], rng, check)
                n_acc += acc
                if adapt_step:
                    self.log_step[j] += gamma * ((1.0 if acc else 0.0) - self.target_accept)
            e1 = self.stats[0]
            j_new = self._gibbs(gumbel, rng, check)
            self.stats[8] += e1 - e0
            self.stats[9] += self.stats[0] - e1
            self.stats[6] += n_acc
            self.stats[7] += self.n_mh
            if j_new != j:
                self.istate[2] = -1
            self.istate[0] = j_new
            if adapt_pi:
                self.log_pi[j_new] -= gamma
                mx = self.log_pi[0]
                for k in range(1, D):
                    if self.log_pi[k] > mx:
                        mx = self.log_pi[k]
                tot = 0.0
                for k in range(D):
                    tot += exp(self.log_pi[k] - mx)
                tot = mx + log(tot)
                for k in range(D):
                    self.log_pi[k] -= tot
            self.istate[1] += 1
            self._n_acc = n_acc

    def mh_step(self, const double[::1] xi,   # IN (>= q + 2,) standard normals
                double u,                       # IN Uniform(0, 1)
                object gen, double gamma):
        """One Langevin-MH step on the current model (the pilot chains); adapts by ``gamma`` if > 0."""
        cdef object capsule = gen.bit_generator.capsule
        cdef bitgen_t* rng = bitgen_of(capsule)
        cdef Py_ssize_t j = self.istate[0]
        cdef bint acc
        with gen.bit_generator.lock:
            with nogil:
                acc = self._langevin(j, &xi[0], u, rng, False)
                if gamma > 0:
                    self.log_step[j] += gamma * ((1.0 if acc else 0.0) - self.target_accept)
        return acc
