"""Control variates of the ARCH chain (Chen & Ghahramani 2016, Eq. 11, Appx. C.2).

* :class:`GradientCV`: per-datum first-order expansion of the gradients around the
  MAP (the SGLD gradient's control variate) and the second-order Taylor proxy of
  the log-likelihood terms (the racing control variate, ``control_variate="taylor"``);
* :class:`BinnedProxy`: the paper's binned proxies (``control_variate="binned"``).

:meth:`GradientCV.control_variate` returns the proxy at a parameter point as the
library's one :class:`sampling.ControlVariate` type (``proxy(states, idx)``, ``mean``),
the form :func:`sampling.race` / :func:`sampling.mh_accept` take; the compiled
chain evaluates the same proxy from the tables of :class:`GradientCV`.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import expit as _sigmoid

from sampling.control_variates import ControlVariate

__all__ = ["BinnedProxy", "GradientCV", "bins_2d"]


def _f_derivs(r, s, nu, c0):
    """``f(r, s) = l`` and its derivatives (f, f_r, f_s, f_rr, f_rs, f_ss) as (B, 6)."""
    a, k = nu - 2.0, 0.5 * (nu + 1.0)
    g = a * s + r * r
    f = c0 + k * math.log(a) + (k - 0.5) * np.log(s) - k * np.log(g)
    fr = -2.0 * k * r / g
    fs = (k - 0.5) / s - k * a / g
    frr = -2.0 * k / g + 4.0 * k * r * r / (g * g)
    frs = 2.0 * k * r * a / (g * g)
    fss = -(k - 0.5) / (s * s) + k * a * a / (g * g)
    return np.column_stack([f, fr, fs, frr, frs, fss])


class BinnedProxy:
    """Binned second-order Taylor proxies for one model (Eq. 11, Appx. C.2).

    Parameters
    ----------
    model : ARCHModel
    inliers : ndarray of int64
        Times in the subsampled population (outliers excluded).
    bin_of : ndarray of int64 of shape (n_obs,)
        Bin of every time (only entries of ``inliers`` are used).
    n_bins : int
    """

    def __init__(self, model, inliers, bin_of, n_bins):
        self.model = model
        q = model.q
        self.bin_of = np.ascontiguousarray(bin_of, dtype=np.int64)
        b = self.bin_of[inliers]
        self.n_in = inliers.shape[0]
        cnt = np.bincount(b, minlength=n_bins).astype(float)
        self.count = cnt
        r = model.r[inliers]
        X = np.empty((inliers.shape[0], q))
        for i in range(1, q + 1):
            X[:, i - 1] = model.r2[inliers - i]
        safe = np.maximum(cnt, 1.0)
        mean_r = np.bincount(b, weights=r, minlength=n_bins) / safe
        mean_x = np.zeros((n_bins, q))
        for i in range(q):
            mean_x[:, i] = np.bincount(b, weights=X[:, i], minlength=n_bins) / safe
        empty = cnt == 0
        mean_x[empty] = X.mean(axis=0)
        dr = r - mean_r[b]
        dX = X - mean_x[b]
        self.ref_r = np.ascontiguousarray(mean_r)
        self.ref_x = np.ascontiguousarray(mean_x)
        self.var_r = np.bincount(b, weights=dr * dr, minlength=n_bins) / safe
        self.cov_rx = np.zeros((n_bins, q))
        self.cov_xx = np.zeros((n_bins, q, q))
        for bb in np.flatnonzero(~empty):
            m = b == bb
            self.cov_rx[bb] = dr[m] @ dX[m] / cnt[bb]
            self.cov_xx[bb] = dX[m].T @ dX[m] / cnt[bb]

    def coefficients(self, x):
        """Per-bin ``ref_s`` (B,), Taylor coefficients (B, 6) and the population mean of h."""
        alpha, nu = self.model.constrained(x)
        c0, _ = self.model._consts(nu)
        a1 = alpha[1:]
        ref_s = alpha[0] + self.ref_x @ a1
        coef = np.ascontiguousarray(_f_derivs(self.ref_r, ref_s, nu, c0))
        var_s = (self.cov_xx @ a1) @ a1
        cov_rs = self.cov_rx @ a1
        per_bin = (coef[:, 0] + 0.5 * coef[:, 3] * self.var_r + coef[:, 4] * cov_rs
                   + 0.5 * coef[:, 5] * var_s)
        mean_h = float(self.count @ per_bin) / self.n_in
        return np.ascontiguousarray(ref_s), coef, mean_h


class GradientCV:
    """Control variate for the per-datum gradients of one model (SGLD proposals).

    ``l_t`` depends on the parameters only through ``s_t = a . u_t``
    (``a = softplus(x_0..x_q)``, ``u_t = (1, r_{t-1}^2, ..., r_{t-q}^2)``) and
    ``nu = 2 + softplus(x_nu)``, and ``d l_t / d x = gamma_t(a, nu) * sigmoid(x)`` with
    ``gamma_t = (f_s u_t, f_nu)``. Around the reference ``(a0, nu0)`` each
    ``gamma_t`` is replaced by its first-order expansion
    ``gamma_t0 + J_t (a - a0, nu - nu0)`` (``J_t`` from ``f_ss, f_snu, f_nunu`` at the
    reference). The expansion is linear in ``(a, nu)`` (not in ``x``: alphas near 0
    sit in the softplus tail), its inlier sum ``Gamma0 + J_in Delta`` is exact and
    costs ``O(q^2)``, and a mini-batch ``B`` of size ``m`` only estimates the small
    remainder::

        sum_in d l_t/dx ~ sigmoid(x) * [Gamma0 + J_in Delta
                                        + (N_in / m) sum_B (gamma_t - gamma_t0 - J_t Delta)].

    Parameters
    ----------
    model : ARCHModel
    x0 : ndarray of shape (q + 2,)
        Reference point (unconstrained coordinates).
    inliers : ndarray of int64
        Times whose gradient sum is estimated.
    """

    def __init__(self, model, x0, inliers):
        self.model = model
        self.x0 = np.asarray(x0, dtype=float).copy()
        a0, nu0 = model.constrained(self.x0)
        self.a0, self.nu0 = a0, nu0
        t_all = model.all_idx
        s = model.variances(a0, t_all)
        r2 = model.r2[t_all]

        def f_s_nu(v):
            a, k = v - 2.0, 0.5 * (v + 1.0)
            g = a * s + r2
            _, dc0 = model._consts(v)
            return (k - 0.5) / s - k * a / g, dc0 - 0.5 * np.log(g / (a * s)) + k * r2 / (a * g)

        a, k = nu0 - 2.0, 0.5 * (nu0 + 1.0)
        g = a * s + r2
        fs, fn = f_s_nu(nu0)
        fss = -(k - 0.5) / (s * s) + k * a * a / (g * g)
        h = 1e-5 * nu0
        fs_p, fn_p = f_s_nu(nu0 + h)
        fs_m, fn_m = f_s_nu(nu0 - h)
        #: by time: f_s, f_ss, f_snu, f_nu, f_nunu at the reference
        self.sc = np.zeros((model.r.shape[0], 5))
        self.sc[t_all] = np.column_stack([fs, fss, (fs_p - fs_m) / (2 * h), fn,
                                          (fn_p - fn_m) / (2 * h)])
        #: by time: l_t at the reference (second-order Taylor proxy, :meth:`taylor_prepare`)
        self.l0 = np.zeros(model.r.shape[0])
        self.l0[t_all] = model.loglik_terms(self.x0, t_all)
        #: by time: the conditional variance s_t at the reference
        self.s0 = np.zeros(model.r.shape[0])
        self.s0[t_all] = s
        self.L0_in = float(self.l0[inliers].sum())
        self.n_in = int(inliers.shape[0])
        P = model.n_params
        self.G0 = np.zeros(P)
        self.J_in = np.zeros((P, P))
        for lo in range(0, inliers.shape[0], 4096):
            tb = inliers[lo:lo + 4096]
            g0, U, c = self.batch_terms(tb)
            self.G0 += g0
            self.J_in[:-1, :-1] += (U * c[:, 1:2]).T @ U
            cross = c[:, 2] @ U
            self.J_in[:-1, -1] += cross
            self.J_in[-1, :-1] += cross
            self.J_in[-1, -1] += c[:, 4].sum()

    def batch_terms(self, times):
        """Quantities of a batch reused for every ``x``: ``(sum_B gamma_t0, U_B, scalars_B)``."""
        r2 = self.model.r2
        U = np.empty((times.shape[0], self.model.q + 1))
        U[:, 0] = 1.0
        for i in range(1, self.model.q + 1):
            U[:, i] = r2[times - i]
        c = self.sc[times]
        return np.append(c[:, 0] @ U, c[:, 3].sum()), U, c

    def taylor_prepare(self, x):
        """``(Delta_a, Delta_nu, mean_h)`` of the second-order proxy at ``x``.

        ``h_t(x) = l_t0 + gamma_t0 . Delta + Delta^T J_t Delta / 2`` (per-datum Taylor
        expansion in ``(a, nu)`` around the reference); ``mean_h`` is its exact
        inlier mean ``(L0 + Gamma0 . Delta + Delta^T J_in Delta / 2) / N_in``.
        """
        a, nu = self.model.constrained(x)
        delta = np.append(a - self.a0, nu - self.nu0)
        mean_h = (self.L0_in + self.G0 @ delta + 0.5 * delta @ self.J_in @ delta) / self.n_in
        return delta[:-1], float(delta[-1]), float(mean_h)

    def taylor_proxy(self, times, prep):
        """``h_t(x)`` at ``times`` (see :meth:`taylor_prepare`)."""
        da, dn, _ = prep
        _, U, c = self.batch_terms(times)
        ud = U @ da
        return (self.l0[times] + c[:, 0] * ud + c[:, 3] * dn
                + 0.5 * (c[:, 1] * ud * ud + 2.0 * c[:, 2] * ud * dn + c[:, 4] * dn * dn))

    def control_variate(self, x, inliers):
        """The Taylor proxy at ``x`` over the population ``inliers`` as a one-state
        :class:`sampling.ControlVariate` (``proxy(states, idx)`` with ``idx``
        positions in ``inliers``; ``mean`` the exact population mean)."""
        prep = self.taylor_prepare(x)

        def proxy(states, idx):
            return self.taylor_proxy(inliers[np.asarray(idx, dtype=np.int64)], prep)[None, :]

        return ControlVariate(proxy, np.array([prep[2]]))

    def linear_sums(self, x, bt):
        """``sigmoid(x) * (Gamma0 + J_in Delta)`` and ``sigmoid(x) * sum_B (gamma_t0 + J_t Delta)``."""
        a, nu = self.model.constrained(x)
        da, dn = a - self.a0, nu - self.nu0
        g0, U, c = bt
        ud = U @ da
        jb = np.append(U.T @ (c[:, 1] * ud + c[:, 2] * dn), c[:, 2] @ ud + c[:, 4].sum() * dn)
        sig = _sigmoid(np.asarray(x, dtype=float))
        delta = np.append(da, dn)
        return sig * (self.G0 + self.J_in @ delta), sig * (g0 + jb)


def bins_2d(r, s, n_per_dim):
    """Bin of each 2-D point ``(r, s)``: ``n_per_dim`` x ``n_per_dim`` cells at the marginal quantiles."""
    qr = np.quantile(r, np.linspace(0, 1, n_per_dim + 1)[1:-1])
    qs = np.quantile(s, np.linspace(0, 1, n_per_dim + 1)[1:-1])
    br = np.searchsorted(qr, r, side="right")
    bs = np.searchsorted(qs, s, side="right")
    return br * n_per_dim + bs
