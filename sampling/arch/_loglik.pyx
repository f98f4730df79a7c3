# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Per-datum log-likelihood kernels of ARCH(q) with standardised Student-t innovations.

Notation (Chen & Ghahramani 2016, Sec. 5.2): for a data index ``t``,
``s_t = alpha[0] + sum_{i=1..q} alpha[i] * r2[t - i]`` (the conditional variance
sigma_t^2), ``a = nu - 2``, ``k = (nu + 1) / 2``, ``g_t = a * s_t + r[t]^2`` and

    l_t = c0 + (k - 1/2) log s_t - k log g_t + k log a

with ``c0 = lgamma(k) - lgamma(nu / 2) - log(pi * a) / 2``; this equals the log
density of ``r_t = sigma_t z_t`` with ``z_t`` a unit-variance Student-t_nu.
Constants that need special functions (``c0`` and ``dc0``, the nu-derivative of
``c0``) are computed by the caller.  Callers validate; kernels do not check.
"""
from libc.math cimport log


cdef inline double _variance(const double[::1] r2, const double[::1] alpha,
                             Py_ssize_t t, Py_ssize_t q) noexcept nogil:
    cdef double s = alpha[0]
    cdef Py_ssize_t i
    for i in range(1, q + 1):
        s += alpha[i] * r2[t - i]
    return s


def loglik_terms(const double[::1] r,          # IN  (n_obs,) returns
                 const double[::1] r2,         # IN  (n_obs,) squared returns
                 const double[::1] alpha,      # IN  (q + 1,) alpha_0..alpha_q > 0
                 double nu,                    # IN  degrees of freedom > 2
                 double c0,                    # IN  lgamma(k) - lgamma(nu/2) - log(pi a)/2
                 const long long[::1] idx,     # IN  (m,) time indices t >= q
                 double[::1] out):             # OUT (m,) l_t
    """Write ``l_t`` for every ``t`` in ``idx`` into ``out``."""
    cdef Py_ssize_t q = alpha.shape[0] - 1
    cdef Py_ssize_t n, t, m = idx.shape[0]
    cdef double a = nu - 2.0, k = 0.5 * (nu + 1.0)
    cdef double base = c0 + k * log(a), s, g
    with nogil:
        for n in range(m):
            t = idx[n]
            s = _variance(r2, alpha, t, q)
            g = a * s + r2[t]
            out[n] = base + (k - 0.5) * log(s) - k * log(g)


def loglik_grad(const double[::1] r,
                const double[::1] r2,
                const double[::1] alpha,
                double nu,
                double c0,
                double dc0,                   # IN  d c0 / d nu = (psi(k) - psi(nu/2))/2 - 1/(2a)
                const long long[::1] idx,
                double[::1] out,              # OUT (m,) l_t
                double[::1] grad):            # OUT (q + 2,) sum_t d l_t / d(alpha_0..alpha_q, nu)
    """Terms ``l_t`` and their summed gradient over ``idx`` (``grad`` is overwritten)."""
    cdef Py_ssize_t q = alpha.shape[0] - 1
    cdef Py_ssize_t n, t, i, m = idx.shape[0]
    cdef double a = nu - 2.0, k = 0.5 * (nu + 1.0)
    cdef double base = c0 + k * log(a), s, g, fs, gnu = 0.0
    for i in range(q + 2):
        grad[i] = 0.0
    with nogil:
        for n in range(m):
            t = idx[n]
            s = _variance(r2, alpha, t, q)
            g = a * s + r2[t]
            out[n] = base + (k - 0.5) * log(s) - k * log(g)
            fs = (k - 0.5) / s - k * a / g
            grad[0] += fs
            for i in range(1, q + 1):
                grad[i] += fs * r2[t - i]
            gnu += dc0 - 0.5 * log(g / (a * s)) + k * r2[t] / (a * g)
        grad[q + 1] = gnu


def loglik_cv_terms(const double[::1] r,
                    const double[::1] r2,
                    const double[::1] alpha,
                    double nu,
                    double c0,
                    const long long[::1] idx,
                    const long long[::1] bin_of,   # IN  (n_obs,) bin of each t (-1: none)
                    const double[::1] ref_r,       # IN  (n_bins,) reference r of each bin
                    const double[::1] ref_s,       # IN  (n_bins,) reference s at this alpha
                    const double[:, ::1] coef,     # IN  (n_bins, 6) f, f_r, f_s, f_rr, f_rs, f_ss
                    double[::1] out,               # OUT (m,) l_t
                    double[::1] out_h):            # OUT (m,) Taylor proxy h_t (Eq. 11)
    """Terms ``l_t`` and the second-order Taylor proxy ``h_t`` around each bin's reference point."""
    cdef Py_ssize_t q = alpha.shape[0] - 1
    cdef Py_ssize_t n, t, b, m = idx.shape[0]
    cdef double a = nu - 2.0, k = 0.5 * (nu + 1.0)
    cdef double base = c0 + k * log(a), s, g, dr, ds
    with nogil:
        for n in range(m):
            t = idx[n]
            s = _variance(r2, alpha, t, q)
            g = a * s + r2[t]
            out[n] = base + (k - 0.5) * log(s) - k * log(g)
            b = bin_of[t]
            dr = r[t] - ref_r[b]
            ds = s - ref_s[b]
            out_h[n] = (coef[b, 0] + coef[b, 1] * dr + coef[b, 2] * ds
                        + 0.5 * coef[b, 3] * dr * dr + coef[b, 4] * dr * ds
                        + 0.5 * coef[b, 5] * ds * ds)


def variances(const double[::1] r2, const double[::1] alpha,
              const long long[::1] idx, double[::1] out):
    """Write the conditional variances ``s_t`` for ``t`` in ``idx`` into ``out``."""
    cdef Py_ssize_t q = alpha.shape[0] - 1
    cdef Py_ssize_t n, m = idx.shape[0]
    with nogil:
        for n in range(m):
            out[n] = _variance(r2, alpha, idx[n], q)
