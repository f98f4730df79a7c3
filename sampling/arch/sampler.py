"""Carlin & Chib product-space sampler over ARCH orders, exact or subsampled.

Implements Chen & Ghahramani (2016), Sec. 5.2 and Appx. C.2 (Eq. 25):

* the chain state is ``(q, x^(j) for every j in orders)``; the model not chosen
  keeps a Laplace pseudo-prior ``N(x_map^(j), H_j^{-1})`` (Carlin & Chib 1995);
* ``q | x`` is drawn by Gumbel-max (Eq. 2-3) over the ``D = len(orders)`` arms
  with ``log f_0(j) = log pi~_j + log p(x^(j) | j) - log pseudo_j(x^(j))`` and
  ``f_n(j) = p(r_t | x^(j), j)``: exactly (``method="exact"``) or by
  Racing-Normal (Alg. 1, Eq. 9) via :func:`sampling.race`;
* ``x^(q) | q`` by a Langevin proposal (whitened by the Laplace Cholesky factor)
  with an MH correction: full-data MALA for ``"exact"`` (exact gradient, exact MH
  ratio); for ``"subsampled"`` an SGLD proposal whose gradient is exact on the
  outliers and, on the inliers, the first-order expansion of the per-datum
  gradients around the MAP (:class:`GradientCV`, summed exactly) plus a
  mini-batch estimate of its remainder, corrected by the Racing-Normal MH test
  (Eq. 12, :func:`sampling.mh_accept`; outlier terms exact, inliers raced with the
  binned control variates). Both use the same proposal family and step-size
  adaptation (Robbins-Monro to ``target_accept``);
* ``x^(j), j != q`` from their pseudo-priors;
* the adjusted model prior ``pi~`` is adapted by Wang-Landau with step
  ``1 / (1 + t / 100)`` on ``log pi~`` during warm-up, then fixed; the reported
  posterior is ``p(q | r) ∝ p~(q | r) pi_q / pi~_q`` (uniform ``pi``).

Control variates (Eq. 11) for the racing tests, ``control_variate=``:

* ``"taylor"`` (default): each term's second-order Taylor expansion in
  ``(alpha, nu)`` around the model's MAP, ``h_t = l_t0 + gamma_t0 . Delta +
  Delta^T J_t Delta / 2``; its population mean follows exactly from sums
  precomputed once (:class:`GradientCV`, which also supplies the SGLD gradient's
  control variate);
* ``"binned"`` (paper Appx. C.2): for each model the 2-D points ``z_t = (r_t, s_t)``
  (``s_t`` the conditional variance at the MAP) are cut into 10 x 10 bins at the
  marginal deciles; reference point of a bin = its mean; ``h_t`` expands
  ``l_t = f(r_t, s_t(x))`` to second order in ``(r_t, s_t)`` around the bin's
  reference, with population mean from the per-bin means and covariances of
  ``(r_t, r_{t-1}^2, ..., r_{t-q}^2)``.

The ``outlier_fraction`` (20 %) of points farthest from their bin reference
(largest over models, in units of each coordinate's standard deviation) are always
evaluated exactly (terms and gradients); racing subsamples the remaining points.
"""
from __future__ import annotations

import math
import os
import pickle
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit as _sigmoid
from scipy.special import logsumexp

from sampling._atomic import atomic_open
from sampling._rng import as_generator
from sampling.exceptions import LowESSWarning
from sampling.sgld import log_q, sgld_proposal

from .model import ARCHModel, check_returns, standardise

__all__ = ["ARCHSelection", "ChainContext", "ChainState", "run_chain", "select_order"]


# --------------------------------------------------------------------------- helpers
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


class ControlVariate:
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


def _bins_2d(r, s, n_per_dim):
    qr = np.quantile(r, np.linspace(0, 1, n_per_dim + 1)[1:-1])
    qs = np.quantile(s, np.linspace(0, 1, n_per_dim + 1)[1:-1])
    br = np.searchsorted(qr, r, side="right")
    bs = np.searchsorted(qs, s, side="right")
    return br * n_per_dim + bs


class ChainContext:
    """Everything fixed during a run: models, pseudo-priors, bins, outliers.

    Parameters
    ----------
    returns : ndarray of shape (n_obs,)
        Standardised returns.
    orders : tuple of int
    laplaces : list of LaplaceApprox, one per order
    outlier_fraction : float in [0, 1)
    n_bins_per_dim : int
    kernel : module, optional
        ``sampling.arch._loglik`` (default) or its Python twin.
    """

    def __init__(self, returns, orders, laplaces, *, outlier_fraction=0.2,
                 n_bins_per_dim=10, kernel=None, control_variate="binned"):
        if control_variate not in ("binned", "taylor"):
            raise ValueError("the control_variate parameter must be 'binned' or 'taylor'; "
                             f"got {control_variate!r}")
        self.control_variate = control_variate
        self.orders = tuple(int(q) for q in orders)
        q_max = max(self.orders)
        self.models = [ARCHModel(returns, q, q_max, kernel=kernel) for q in self.orders]
        self.laplaces = list(laplaces)
        #: Carlin-Chib pseudo-priors (Laplace by default; see :func:`pilot_pseudo_priors`)
        self.pseudo = list(laplaces)
        #: Gaussian whose (mean, chol) whitens the Langevin proposals (the Laplace fit;
        #: whitening with the pilot fit mixed worse in a test on the SPY data)
        self.whiten = list(laplaces)
        m0 = self.models[0]
        self.n_data = m0.n_data
        self.all_idx = m0.all_idx
        self.D = len(self.orders)
        # ---- control-variate bins at each model's MAP, common outlier set
        n_bins = n_bins_per_dim * n_bins_per_dim
        bins, dist = [], np.zeros(self.n_data)
        for mod, lap in zip(self.models, self.laplaces):
            alpha, _ = mod.constrained(lap.mean)
            s = mod.variances(alpha)
            r = mod.r[mod.all_idx]
            b = _bins_2d(r, s, n_bins_per_dim)
            cnt = np.maximum(np.bincount(b, minlength=n_bins), 1)
            mr = np.bincount(b, weights=r, minlength=n_bins) / cnt
            ms = np.bincount(b, weights=s, minlength=n_bins) / cnt
            d = np.hypot((r - mr[b]) / r.std(), (s - ms[b]) / s.std())
            dist = np.maximum(dist, d)
            bins.append(b)
        n_out = int(round(outlier_fraction * self.n_data))
        order = np.argsort(-dist, kind="stable")
        out_pos = np.sort(order[:n_out])
        in_pos = np.sort(order[n_out:])
        self.outliers = np.ascontiguousarray(self.all_idx[out_pos])
        self.inliers = np.ascontiguousarray(self.all_idx[in_pos])
        self.n_in = self.inliers.shape[0]
        self.cvs = []
        for mod, b in zip(self.models, bins):
            bin_of = np.full(mod.r.shape[0], 0, dtype=np.int64)
            bin_of[mod.all_idx] = b
            self.cvs.append(ControlVariate(mod, self.inliers, bin_of, n_bins))
        # ---- SGLD gradient control variates (first-order expansion at the MAP)
        self.gcvs = [GradientCV(mod, lap.mean, self.inliers)
                     for mod, lap in zip(self.models, self.laplaces)]

    # ---------------------------------------------------------------- terms
    def prepare(self, j, x):
        """Everything :meth:`cv_rewards` needs for model ``j`` at ``x`` (computed once)."""
        if self.control_variate == "taylor":
            return self.gcvs[j].taylor_prepare(x)
        mod = self.models[j]
        alpha, nu = mod.constrained(x)
        c0, _ = mod._consts(nu)
        return (alpha, nu, c0) + self.cvs[j].coefficients(x)

    def cv_rewards(self, j, x, times, prep=None):
        """Residual rewards ``l_t - h_t + E[h]`` and terms ``l_t`` of model ``j`` at ``times``."""
        mod, cv = self.models[j], self.cvs[j]
        prep = self.prepare(j, x) if prep is None else prep
        if self.control_variate == "taylor":
            out = mod.loglik_terms(x, times)
            return out - self.gcvs[j].taylor_proxy(times, prep) + prep[2], out
        alpha, nu, c0, ref_s, coef, mean_h = prep
        out = np.empty(times.shape[0])
        out_h = np.empty(times.shape[0])
        mod._k.loglik_cv_terms(mod.r, mod.r2, alpha, nu, c0, times, cv.bin_of,
                               cv.ref_r, ref_s, coef, out, out_h)
        return out - out_h + mean_h, out

    def log_joint_prior(self, j, x):
        """``log p(x | j) - log pseudo_j(x)``: the model-``j`` part of ``log f_0``."""
        return self.models[j].log_prior(x) - self.pseudo[j].logpdf(x)


class ChainState:
    """Mutable state of one chain (kept in checkpoints)."""

    def __init__(self, ctx, rng, log_adjusted_prior, step_sizes):
        self.q_idx = int(rng.integers(ctx.D))
        self.xs = [lap.mean.copy() for lap in ctx.laplaces]
        self.log_pi = np.array(log_adjusted_prior, dtype=float)
        self.log_step = np.log(np.asarray(step_sizes, dtype=float))
        self.rng = rng
        self.t = 0
        # caches of the current model's quantities (invalidated when q or x changes)
        self.cache = None


# --------------------------------------------------------------------------- racing glue
def _race_q(ctx, xs, log_f0, rng, *, delta, first_batch, stats, check):
    """Racing-Normal Gibbs draw of q (index into orders); counts terms in ``stats``."""
    import sampling

    coefs = [ctx.prepare(j, xs[j]) for j in range(ctx.D)]
    gumbels = rng.gumbel(size=ctx.D)
    inl = ctx.inliers

    def log_f(states, idx):
        times = inl[np.asarray(idx, dtype=np.int64)]
        out = np.empty((len(states), times.shape[0]))
        for a, j in enumerate(states):
            out[a], _ = ctx.cv_rewards(int(j), xs[int(j)], times, coefs[int(j)])
        stats["n_evals"] += out.size
        return out

    res = sampling.race(log_f, log_f0, ctx.n_in, delta=delta, bound="normal",
                        variance="pairwise", first_batch=first_batch, gumbels=gumbels, rng=rng)
    j = int(res.state)
    if check:
        tot = np.array([ctx.models[k].loglik_terms(xs[k], inl).sum() for k in range(ctx.D)])
        stats["check_evals"] += ctx.D * ctx.n_in
        j_exact = int(np.argmax(tot + log_f0 + gumbels))
        stats["gibbs_checks"] += 1
        stats["gibbs_errors"] += int(j_exact != j)
    return j


def _mh_test(ctx, j, x, x_new, log_rest, rng, *, delta, first_batch, stats, check):
    """Racing-Normal MH test (Eq. 12) over the inliers; ``log_rest`` holds all other terms.

    Accept iff ``sum_{t in inliers} (l_t(x_new) - l_t(x)) + log_rest > 0``.
    """
    import sampling

    c_new = ctx.prepare(j, x_new)
    c_old = ctx.prepare(j, x)
    inl = ctx.inliers

    def diff(idx):
        times = inl[np.asarray(idx, dtype=np.int64)]
        a, _ = ctx.cv_rewards(j, x_new, times, c_new)
        b, _ = ctx.cv_rewards(j, x, times, c_old)
        stats["n_evals"] += 2 * times.shape[0]
        return a - b

    mu0 = -log_rest / ctx.n_in
    res = sampling.mh_accept(diff, ctx.n_in, mu0, delta=delta, first_batch=first_batch, rng=rng)
    acc = bool(res.accept)
    if check:
        m = ctx.models[j]
        exact = (m.loglik_terms(x_new, inl).sum() - m.loglik_terms(x, inl).sum()) + log_rest > 0
        stats["check_evals"] += 2 * ctx.n_in
        stats["mh_checks"] += 1
        stats["mh_errors"] += int(bool(exact) != acc)
    return acc


# --------------------------------------------------------------------------- one iteration
def _langevin(ctx, st, j, *, method, grad_batch, delta, first_batch, stats, check):
    """One Langevin-proposal MH step on ``x^(j)`` in Laplace-whitened coordinates."""
    rng = st.rng
    mod, lap = ctx.models[j], ctx.whiten[j]
    L = lap.chol
    eps = float(np.exp(st.log_step[j]))
    x = st.xs[j]
    w = np.linalg.solve(L, x - lap.mean)
    if method == "exact":
        if st.cache is None or st.cache[0] != j:
            terms, g = mod.loglik_grad(x)
            stats["n_evals"] += mod.n_data
            st.cache = (j, terms.sum(), g)
        _, ll, g = st.cache
        gw = L.T @ (g + mod.grad_log_prior(x))
        w_new, lq_fwd = sgld_proposal(w, gw, step_size=eps, rng=rng)
        x_new = lap.mean + L @ w_new
        terms_new, g_new = mod.loglik_grad(x_new)
        stats["n_evals"] += mod.n_data
        gw_new = L.T @ (g_new + mod.grad_log_prior(x_new))
        ll_new = terms_new.sum()
        log_ratio = (ll_new - ll + mod.log_prior(x_new) - mod.log_prior(x)
                     + log_q(w, w_new, gw_new, eps) - lq_fwd)
        acc = bool(np.log(rng.uniform()) < log_ratio) if np.isfinite(log_ratio) else False
        if acc:
            st.xs[j] = x_new
            st.cache = (j, ll_new, g_new)
        return acc
    # ---- subsampled: SGLD proposal. Gradient = exact sum over the outliers + sum over
    # the inliers from the linearised control variate (:class:`GradientCV`) plus a
    # mini-batch estimate of its remainder; the same batch serves x and x_new.
    n_in = ctx.n_in
    batch = ctx.inliers[rng.choice(n_in, size=min(grad_batch, n_in), replace=False)]
    gcv = ctx.gcvs[j]
    bt = gcv.batch_terms(batch)
    scale = n_in / batch.shape[0]
    if st.cache is None or st.cache[0] != j:
        terms_out, g_out = mod.loglik_grad(x, ctx.outliers)
        stats["n_evals"] += ctx.outliers.shape[0]
        st.cache = (j, terms_out.sum(), g_out)
    _, ll_out, g_out = st.cache

    def grad_est(xx, g_out_xx):
        _, gb = mod.loglik_grad(xx, batch)
        stats["n_evals"] += batch.shape[0]
        lin_in, lin_b = gcv.linear_sums(xx, bt)
        return g_out_xx + lin_in + scale * (gb - lin_b) + mod.grad_log_prior(xx)

    gw = L.T @ grad_est(x, g_out)
    w_new, lq_fwd = sgld_proposal(w, gw, step_size=eps, rng=rng)
    x_new = lap.mean + L @ w_new
    terms_out_new, g_out_new = mod.loglik_grad(x_new, ctx.outliers)
    stats["n_evals"] += ctx.outliers.shape[0]
    ll_out_new = terms_out_new.sum()
    gw_new = L.T @ grad_est(x_new, g_out_new)
    log_rest = (ll_out_new - ll_out + mod.log_prior(x_new) - mod.log_prior(x)
                + log_q(w, w_new, gw_new, eps) - lq_fwd
                - math.log(rng.uniform()))
    if not np.isfinite(log_rest):
        return False
    acc = _mh_test(ctx, j, x, x_new, log_rest, rng, delta=delta, first_batch=first_batch,
                   stats=stats, check=check)
    if acc:
        st.xs[j] = x_new
        st.cache = (j, ll_out_new, g_out_new)
    return acc


def _gibbs_q(ctx, st, *, method, delta, first_batch, stats, check):
    xs = st.xs
    log_f0 = st.log_pi + np.array([ctx.log_joint_prior(k, xs[k]) for k in range(ctx.D)])
    if method == "exact":
        tot = np.array([ctx.models[k].loglik_terms(xs[k]).sum() for k in range(ctx.D)])
        stats["n_evals"] += ctx.D * ctx.n_data
        return int(np.argmax(tot + log_f0 + st.rng.gumbel(size=ctx.D)))
    out_tot = np.array([ctx.models[k].loglik_terms(xs[k], ctx.outliers).sum()
                        for k in range(ctx.D)])
    stats["n_evals"] += ctx.D * ctx.outliers.shape[0]
    return _race_q(ctx, xs, log_f0 + out_tot, st.rng, delta=delta, first_batch=first_batch,
                   stats=stats, check=check)


def step(ctx, st, *, method, grad_batch, delta, first_batch, stats, check_every=0,
         adapt_step=False, adapt_pi=False, target_accept=0.36, n_mh=1):
    """One sweep: pseudo-prior refresh, Langevin-MH on the current model, Gibbs on q.

    ``adapt_pi`` applies the Wang-Landau update of ``log pi~`` (step ``1/(1+t/100)``);
    ``adapt_step`` the Robbins-Monro update of the current model's log step size.
    ``n_mh`` Langevin-MH steps are made on the current model per sweep.
    Returns ``(q_index, n_accepted)``.
    """
    check = bool(check_every) and (st.t % check_every == 0)
    j = st.q_idx
    for k in range(ctx.D):
        if k != j:
            st.xs[k] = ctx.pseudo[k].sample(st.rng)
    gamma = 1.0 / (1.0 + st.t / 100.0)
    n_acc = 0
    e0 = stats["n_evals"]
    for _ in range(n_mh):
        acc = _langevin(ctx, st, j, method=method, grad_batch=grad_batch, delta=delta,
                        first_batch=first_batch, stats=stats, check=check)
        n_acc += int(acc)
        if adapt_step:
            st.log_step[j] += gamma * ((1.0 if acc else 0.0) - target_accept)
    e1 = stats["n_evals"]
    j_new = _gibbs_q(ctx, st, method=method, delta=delta, first_batch=first_batch,
                     stats=stats, check=check)
    stats["param_evals"] = stats.get("param_evals", 0) + (e1 - e0)
    stats["gibbs_evals"] = stats.get("gibbs_evals", 0) + (stats["n_evals"] - e1)
    if j_new != j:
        st.cache = None
    st.q_idx = j_new
    if adapt_pi:
        st.log_pi[j_new] -= gamma
        st.log_pi -= logsumexp(st.log_pi)
    st.t += 1
    return j_new, n_acc


def pilot_pseudo_priors(ctx, rng, n_pilot, *, method, grad_batch, delta, first_batch, stats,
                        target_accept=0.36, shrinkage=0.1):
    """Gaussian pseudo-priors fitted to short within-model pilot chains (Carlin & Chib 1995).

    For each model ``j`` a chain with ``q = j`` fixed runs ``n_pilot`` Langevin-MH
    steps from the MAP (``select_order`` uses full-data MALA for both methods, so
    they share the pseudo-priors; the step size adapts in the first half); the second half's mean and covariance, shrunk by ``shrinkage``
    towards the Laplace covariance, define ``N(mean, cov)``. The Laplace fit stays
    the whitening transform and the control-variate reference. Returns a list of
    :class:`~sampling.arch.model.LaplaceApprox` (``log_evidence`` of the Laplace fit).
    """
    from .model import LaplaceApprox

    out = []
    for j in range(ctx.D):
        lap = ctx.laplaces[j]
        st = ChainState(ctx, rng, np.zeros(ctx.D), [1.5 * lap.mean.shape[0] ** (-1 / 3)] * ctx.D)
        st.q_idx = j
        draws = []
        for t in range(n_pilot):
            acc = _langevin(ctx, st, j, method=method, grad_batch=grad_batch, delta=delta,
                            first_batch=first_batch, stats=stats, check=False)
            if t < n_pilot // 2:
                st.log_step[j] += (1.0 / (1.0 + t / 20.0)) * ((1.0 if acc else 0.0) - target_accept)
            else:
                draws.append(st.xs[j].copy())
        X = np.array(draws)
        cov = (1 - shrinkage) * np.cov(X.T) + shrinkage * lap.cov
        cov = 0.5 * (cov + cov.T)
        out.append(LaplaceApprox(mean=X.mean(axis=0), cov=cov, chol=np.linalg.cholesky(cov),
                                 log_post_map=lap.log_post_map, log_evidence=lap.log_evidence))
    return out


def new_stats():
    """Counters of one chain: likelihood terms evaluated and racing-error checks."""
    return {"n_evals": 0, "check_evals": 0, "gibbs_checks": 0, "gibbs_errors": 0,
            "mh_checks": 0, "mh_errors": 0, "n_accept": 0, "n_mh": 0, "wall_s": 0.0,
            "param_evals": 0, "gibbs_evals": 0}


def run_chain(ctx, st, n_iter, *, method, grad_batch, delta, first_batch,
              check_every, target_accept, stats, adapt_step=False, adapt_pi=False,
              n_mh=1, progress=None):
    """Run ``n_iter`` sweeps; return arrays ``q_idx`` (n_iter,), ``n_evals`` (n_iter,),
    ``log_pi`` (n_iter, D) (the adjusted prior after each sweep)."""
    qs = np.empty(n_iter, dtype=np.int64)
    ev = np.empty(n_iter, dtype=np.int64)
    lp = np.empty((n_iter, ctx.D))
    t0 = time.perf_counter()
    for i in range(n_iter):
        j, acc = step(ctx, st, method=method, grad_batch=grad_batch, delta=delta,
                      first_batch=first_batch, stats=stats, check_every=check_every,
                      adapt_step=adapt_step, adapt_pi=adapt_pi,
                      target_accept=target_accept, n_mh=n_mh)
        stats["n_mh"] += n_mh
        stats["n_accept"] += acc
        qs[i] = j
        ev[i] = stats["n_evals"]
        lp[i] = st.log_pi
        if progress is not None:
            progress.update(1)
    stats["wall_s"] += time.perf_counter() - t0
    return qs, ev, lp


# --------------------------------------------------------------------------- public API



_METHODS = ("subsampled", "exact")


@dataclass(frozen=True)
class ARCHSelection:
    """Result of :func:`select_order`.

    Attributes
    ----------
    orders : tuple of int
        Candidate orders ``Q``.
    method : {"subsampled", "exact"}
    posterior : ndarray of shape (D,)
        ``p(q | r)`` with a uniform model prior: the visit frequencies of the
        fixed-prior phase (all chains pooled) divided by the adjusted prior
        ``pi~`` and renormalised (Carlin & Chib 1995; paper Appx. C.2).
    posterior_per_chain : ndarray of shape (n_chains, D)
    adjusted_posterior : ndarray of shape (D,)
        Pooled visit frequencies ``p~(q | r)`` (close to uniform by design).
    log_adjusted_prior : ndarray of shape (D,)
        The fixed ``log pi~`` (normalised), natural log.
    q_trace : ndarray of int of shape (n_chains, n_iterations)
        Sampled order (values from ``orders``) in the fixed phase.
    warmup_q_trace : ndarray of int of shape (n_chains, n_warmup)
    log_adjusted_prior_trace : ndarray of shape (n_chains, n_warmup, D)
        ``log pi~`` after each warm-up sweep; ``-log pi~`` (renormalised) is the
        running estimate of ``log p(q | r)`` plotted in the paper's Fig. 2(b).
    n_evals_trace : ndarray of int of shape (n_chains, n_warmup + n_iterations)
        Cumulative per-datum likelihood terms evaluated by each chain.
    n_loglik_evals : int
        Per-datum log-likelihood terms evaluated, all chains and both phases
        (a term and its gradient at the same point count once; racing-error
        checks are not counted).
    n_loglik_evals_sampling : int
        Same, fixed phase only (the denominator-side of ``evals_per_ess``).
    acceptance_rate : ndarray of shape (n_chains,)
        MH acceptance rate of the parameter moves in the fixed phase.
    gibbs_error_rate, mh_error_rate : float or None
        Fraction of checked racing decisions that differ from the exact decision
        under the same Gumbel / uniform draws (``check_every > 0`` only).
    n_gibbs_checks, n_mh_checks : int
    ess : float
        ArviZ bulk ESS of the q trace (chains pooled).
    r_hat : float
        ArviZ rank-normalised R-hat of the q trace (NaN with one chain).
    ess_indicator : ndarray of shape (D,)
        ArviZ ESS (mean) of each indicator ``1[q = orders[k]]`` (NaN if never or
        always visited); less sensitive than ``ess`` to rare long excursions.
    step_sizes : ndarray of shape (n_chains, D)
        Adapted Langevin step sizes (whitened coordinates).
    laplace_log_evidence : ndarray of shape (D,)
    map_params : dict
        ``{q: (alpha (q+1,), nu)}`` at each model's MAP (standardised returns).
    n_data, n_outliers : int
        Likelihood terms per model and the always-evaluated outlier terms.
    n_setup_evals : int
        Terms evaluated by the pseudo-prior pilot chains (not in ``n_loglik_evals``;
        the MAP / Laplace fits are not counted either).
    pseudo_priors : list of LaplaceApprox
        The Carlin-Chib pseudo-priors used.
    returns_mean, returns_scale : float
        The standardisation applied (``z = (r - mean) / scale``).
    wall_time_s : float
    evals_by_component : dict
        Fixed-phase likelihood terms split into ``"param"`` (Langevin-MH moves on
        the current model) and ``"gibbs"`` (the q update), all chains.
    """

    orders: tuple
    method: str
    posterior: np.ndarray
    posterior_per_chain: np.ndarray
    adjusted_posterior: np.ndarray
    log_adjusted_prior: np.ndarray
    q_trace: np.ndarray
    warmup_q_trace: np.ndarray
    log_adjusted_prior_trace: np.ndarray
    n_evals_trace: np.ndarray
    n_loglik_evals: int
    n_loglik_evals_sampling: int
    acceptance_rate: np.ndarray
    gibbs_error_rate: float | None
    mh_error_rate: float | None
    n_gibbs_checks: int
    n_mh_checks: int
    ess: float
    r_hat: float
    ess_indicator: np.ndarray
    step_sizes: np.ndarray
    laplace_log_evidence: np.ndarray
    map_params: dict = field(repr=False)
    n_data: int = 0
    n_outliers: int = 0
    n_setup_evals: int = 0
    pseudo_priors: list = field(default=None, repr=False)
    returns_mean: float = 0.0
    returns_scale: float = 1.0
    wall_time_s: float = 0.0
    evals_by_component: dict = field(default_factory=dict)

    @property
    def evals_per_ess(self):
        """Likelihood terms (fixed phase) per effective sample of q."""
        return self.n_loglik_evals_sampling / self.ess if self.ess > 0 else float("inf")

    @property
    def map_order(self):
        """The order with the largest posterior probability."""
        return self.orders[int(np.argmax(self.posterior))]

    def summary(self):
        """A JSON-friendly dict of the scalar results."""
        return {
            "method": self.method, "orders": list(self.orders),
            "posterior": self.posterior.tolist(),
            "adjusted_posterior": self.adjusted_posterior.tolist(),
            "log_adjusted_prior": self.log_adjusted_prior.tolist(),
            "n_chains": int(self.q_trace.shape[0]), "n_iterations": int(self.q_trace.shape[1]),
            "n_warmup": int(self.warmup_q_trace.shape[1]),
            "n_loglik_evals": int(self.n_loglik_evals),
            "n_loglik_evals_sampling": int(self.n_loglik_evals_sampling),
            "evals_per_ess": float(self.evals_per_ess),
            "acceptance_rate": self.acceptance_rate.tolist(),
            "gibbs_error_rate": self.gibbs_error_rate, "mh_error_rate": self.mh_error_rate,
            "n_gibbs_checks": self.n_gibbs_checks, "n_mh_checks": self.n_mh_checks,
            "ess": float(self.ess), "r_hat": float(self.r_hat),
            "ess_indicator": self.ess_indicator.tolist(),
            "laplace_log_evidence": self.laplace_log_evidence.tolist(),
            "n_data": self.n_data, "n_outliers": self.n_outliers,
            "n_setup_evals": self.n_setup_evals,
            "evals_by_component": dict(self.evals_by_component),
            "returns_mean": self.returns_mean, "returns_scale": self.returns_scale,
            "wall_time_s": self.wall_time_s,
            "map_params": {str(q): {"alpha": a.tolist(), "nu": nu}
                           for q, (a, nu) in self.map_params.items()},
        }


def _q_diagnostics(q_trace, orders=()):
    """Bulk ESS and R-hat of q (ArviZ), and the ESS of each indicator ``1[q = order]``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import arviz as az

        x = np.asarray(q_trace, dtype=float)
        ind = np.full(len(orders), np.nan)
        if x.shape[1] < 4 or np.all(x == x.flat[0]):
            return float("nan"), float("nan"), ind
        ess = float(az.ess(x, method="bulk"))
        rhat = float(az.rhat(x)) if x.shape[0] > 1 else float("nan")
        for k, q in enumerate(orders):
            i = (x == q).astype(float)
            if 0 < i.mean() < 1:
                ind[k] = float(az.ess(i, method="mean"))
    return ess, rhat, ind


def _atomic_pickle(obj, path):
    with atomic_open(path, "wb") as fh:
        pickle.dump(obj, fh, protocol=pickle.HIGHEST_PROTOCOL)


def _select_iv(returns, orders, method, n_iterations, n_warmup, n_chains, delta,
               grad_batch, first_batch, outlier_fraction, target_accept, check_every, name):
    try:
        orders = tuple(sorted({int(q) for q in orders}))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"the orders parameter of select_order must be integers; got {orders!r}") from exc
    if len(orders) < 2 or orders[0] < 1:
        raise ValueError(f"the orders parameter of select_order must hold at least two "
                         f"positive orders; got {orders!r}")
    if method not in _METHODS:
        raise ValueError(f"the method parameter of select_order must be one of {_METHODS}; "
                         f"got {method!r}")
    for name, v, lo in (("n_iterations", n_iterations, 1), ("n_warmup", n_warmup, 0),
                        ("n_chains", n_chains, 1), ("grad_batch", grad_batch, 1),
                        ("first_batch", first_batch, 2), ("check_every", check_every, 0)):
        if not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"the {name} parameter of select_order must be an int >= {lo}; "
                             f"got {v!r}")
    if not 0 < delta < 1:
        raise ValueError(f"the delta parameter of select_order must be in (0, 1); got {delta!r}")
    if not 0 <= outlier_fraction < 1:
        raise ValueError("the outlier_fraction parameter of select_order must be in [0, 1); "
                         f"got {outlier_fraction!r}")
    if not 0 < target_accept < 1:
        raise ValueError("the target_accept parameter of select_order must be in (0, 1); "
                         f"got {target_accept!r}")
    r = check_returns(returns, q_max=max(orders), name=name)
    return r, orders


def select_order(returns, *, orders=(5, 10, 15, 20, 25, 30), method="subsampled",
                 n_iterations=2000, n_warmup=1000, n_chains=4, delta=0.05, rng=None,
                 grad_batch=1000, first_batch=50, outlier_fraction=0.2, target_accept=0.36,
                 log_adjusted_prior=None, prior_init="laplace", pseudo_prior="pilot",
                  n_pilot=2000, pseudo_priors=None, n_mh=1, check_every=0,
                  control_variate="taylor",
                 standardize=True, progress=False, checkpoint=None, resume=False,
                 checkpoint_every=500, kernel=None, name="returns"):
    """Posterior over the ARCH order q by Carlin-Chib MCMC, exact or subsampled.

    Parameters
    ----------
    returns : array_like of shape (n_obs,)
        Returns in time order (e.g. percent log returns, :func:`load_returns`).
    orders : sequence of int
        Candidate orders; every model conditions on the first ``max(orders)`` points.
    method : {"subsampled", "exact"}
        ``"subsampled"``: Racing-Normal Gibbs for q and SGLD + Racing-Normal MH for
        the parameters (paper Sec. 5.2): the outliers' terms and gradients are
        exact, the inliers' log-likelihood sums are raced with the control
        variates, the inliers' gradient sum is the linearised control variate plus
        a ``grad_batch`` mini-batch estimate of its remainder. ``"exact"``: the
        same chain with full-data conditionals: exact Gumbel-max Gibbs over all
        ``N`` terms of every model, and the same whitened Langevin proposal with
        the exact full-data gradient and the exact MH ratio (MALA); same
        step-size adaptation, Wang-Landau and pseudo-priors.
    n_iterations : int
        Sweeps per chain with the adjusted prior fixed (the sample).
    n_warmup : int
        Wang-Landau / step-size adaptation sweeps per chain.
    n_chains : int
        Independent chains, driven by ``rng.spawn(n_chains)``.
    delta : float in (0, 1)
        Racing error level of every Gibbs and MH test.
    rng : None, int or numpy.random.Generator
    grad_batch : int
        SGLD mini-batch size ``m`` (drawn from the inliers; the outliers' gradient is
        exact). The batch only estimates the remainder of the linearised gradient
        control variate (:class:`GradientCV`), so its noise is small: on the SPY data
        ``m = 1000`` (~0.07 N) gives step sizes and acceptance rates like the exact
        chain's MALA (the earlier zeroth-order control variate needed ``m = 4000``
        and still halved the ARCH(30) step).
    first_batch : int
        ``m^(1)`` of the racing schedule (paper: 50).
    control_variate : {"taylor", "binned"}
        Proxy ``h_t`` of the racing control variates (Eq. 11), used by the
        Racing-Normal Gibbs and MH tests. ``"taylor"``: each term's second-order
        Taylor expansion in ``(alpha, nu)`` around the model's MAP
        (:meth:`GradientCV.taylor_prepare`; exact population mean from precomputed
        sums). ``"binned"``: the paper's Appx. C.2 proxies, Taylor expansions in
        ``(r_t, s_t)`` around the means of 10 x 10 decile bins. On the SPY data the
        Taylor proxy cuts the Gibbs racing cost from ~0.9 N to ~0.3 N per sweep.
    outlier_fraction : float in [0, 1)
        Share of points always evaluated exactly (paper: 0.2).
    target_accept : float
        Step-size adaptation target (paper: about 0.36).
    log_adjusted_prior : array_like of shape (D,), optional
        A fixed ``log pi~``; skips the Wang-Landau adaptation (warm-up then only
        adapts step sizes). Use it to compare methods on the same target.
    pseudo_prior : {"laplace", "pilot"}
        Carlin-Chib pseudo-priors: the Laplace approximation at each model's MAP
        (paper Appx. C.2), or Gaussians fitted to ``n_pilot``-step within-model
        full-data MALA pilot chains (Carlin & Chib 1995). The Laplace fit is poor
        for high orders (many ``alpha_i`` near 0 give long left tails in softplus
        space), which makes those models sticky; "pilot" mixes about 10x faster
        on the SPY data. Set-up cost (MAP, pilot) is reported in ``n_setup_evals``.
    n_pilot : int
        Pilot steps per model (``pseudo_prior="pilot"``).
    n_mh : int
        Langevin-MH steps on the current model's parameters per sweep.
    pseudo_priors : list of LaplaceApprox, optional
        Reuse the pseudo-priors of an earlier run (``ARCHSelection.pseudo_priors``),
        e.g. to compare methods on exactly the same product-space target.
    prior_init : {"laplace", "uniform"}
        Starting ``log pi~`` for Wang-Landau: ``-`` the Laplace log evidence, or 0.
    check_every : int
        Every ``check_every``-th sweep, also compute the exact Gibbs / MH decision
        under the same random draws to estimate racing error rates (0: never).
    standardize : bool
        Demean and scale the returns to unit standard deviation first.
    progress : bool
        Show a tqdm progress bar.
    checkpoint : str or path, optional
        Pickle file for the chain states, written atomically every
        ``checkpoint_every`` sweeps; with ``resume=True`` a run continues from it.
    kernel : module, optional
        Likelihood kernels (default the Cython ``_loglik``; tests pass the twin).
    name : str
        How error messages refer to the data (e.g. its file name).

    Returns
    -------
    ARCHSelection

    Raises
    ------
    ReturnsDataError
        NaN/inf, too few points (``<= max(orders) + 50``) or a constant series.
    ValueError, TypeError
        Bad parameter values.

    Warns
    -----
    LowESSWarning
        When the ESS of q is below 100.

    References
    ----------
    .. [1] Chen & Ghahramani (2016), Sec. 5.2, Appx. C.2 (Eq. 25), Alg. 1, Eq. 9, 11, 12.
    .. [2] Carlin & Chib (1995), "Bayesian model choice via Markov chain Monte Carlo".
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn brings it
        import contextlib

        limits = contextlib.nullcontext()
    else:
        # small dense algebra only: BLAS threads just contend on a shared machine
        limits = threadpool_limits(1)
    with limits:
        return _select_order(returns, orders, method, n_iterations, n_warmup, n_chains, delta,
                             rng, grad_batch, first_batch, outlier_fraction, target_accept,
                             log_adjusted_prior, prior_init, pseudo_prior, n_pilot,
                             pseudo_priors, n_mh, check_every, control_variate,
                             standardize, progress,
                             checkpoint, resume, checkpoint_every, kernel, name)


def _select_order(returns, orders, method, n_iterations, n_warmup, n_chains, delta, rng,
                  grad_batch, first_batch, outlier_fraction, target_accept, log_adjusted_prior,
                  prior_init, pseudo_prior, n_pilot, pseudo_priors, n_mh, check_every,
                  control_variate, standardize, progress, checkpoint, resume,
                  checkpoint_every, kernel, name):
    r, orders = _select_iv(returns, orders, method, n_iterations, n_warmup, n_chains, delta,
                           grad_batch, first_batch, outlier_fraction, target_accept,
                           check_every, name)
    if pseudo_prior not in ("laplace", "pilot"):
        raise ValueError(f"the pseudo_prior parameter of select_order must be 'laplace' or "
                         f"'pilot'; got {pseudo_prior!r}")
    if not isinstance(n_mh, (int, np.integer)) or n_mh < 1:
        raise ValueError(f"the n_mh parameter of select_order must be an int >= 1; got {n_mh!r}")
    if not isinstance(n_pilot, (int, np.integer)) or n_pilot < 20:
        raise ValueError(f"the n_pilot parameter of select_order must be an int >= 20; "
                         f"got {n_pilot!r}")
    if prior_init not in ("laplace", "uniform"):
        raise ValueError(f"the prior_init parameter of select_order must be 'laplace' or "
                         f"'uniform'; got {prior_init!r}")
    D = len(orders)
    if log_adjusted_prior is not None:
        fixed_pi = np.asarray(log_adjusted_prior, dtype=float)
        if fixed_pi.shape != (D,) or not np.all(np.isfinite(fixed_pi)):
            raise ValueError(f"the log_adjusted_prior parameter of select_order must be {D} "
                             f"finite numbers; got {log_adjusted_prior!r}")
        fixed_pi = fixed_pi - logsumexp(fixed_pi)
    else:
        fixed_pi = None
    t_start = time.perf_counter()
    if standardize:
        z, mu, sc = standardise(r)
    else:
        z, mu, sc = r, 0.0, 1.0
    q_max = max(orders)
    models = [ARCHModel(z, q, q_max, kernel=kernel) for q in orders]
    laplaces = [m.laplace() for m in models]
    if control_variate not in ("taylor", "binned"):
        raise ValueError(f"the control_variate parameter of select_order must be 'taylor' or "
                         f"'binned'; got {control_variate!r}")
    ctx = ChainContext(z, orders, laplaces, outlier_fraction=outlier_fraction, kernel=kernel,
                       control_variate=control_variate)
    log_ev = np.array([lap.log_evidence for lap in laplaces])
    if fixed_pi is not None:
        pi0 = fixed_pi
    elif prior_init == "laplace":
        pi0 = -log_ev - logsumexp(-log_ev)
    else:
        pi0 = np.full(D, -math.log(D))
    kw = dict(method=method, grad_batch=grad_batch, delta=delta, first_batch=first_batch,
              check_every=check_every, target_accept=target_accept, n_mh=n_mh)
    config = dict(orders=orders, n_iterations=n_iterations, n_warmup=n_warmup,
                  n_chains=n_chains, n_obs=int(z.shape[0]), data_sum=float(np.sum(r)),
                  outlier_fraction=outlier_fraction, fixed_pi=None if fixed_pi is None
                  else fixed_pi.tolist(), prior_init=prior_init, pseudo_prior=pseudo_prior,
                  n_pilot=n_pilot, shared_pseudo=pseudo_priors is not None,
                  control_variate=control_variate, **kw)
    prog = None
    if resume and checkpoint is not None and os.path.exists(checkpoint):
        with open(checkpoint, "rb") as fh:
            saved = pickle.load(fh)
        if saved.get("config") != config:
            raise ValueError(f"checkpoint {checkpoint} was written by a run with other "
                             "settings; remove it or drop --resume")
        ctx.pseudo = saved["pseudo"]
    else:
        gen = as_generator(rng)
        children = gen.spawn(n_chains + 1)
        stats_p = new_stats()
        if pseudo_priors is not None:
            ctx.pseudo = list(pseudo_priors)
        elif pseudo_prior == "pilot":
            ctx.pseudo = pilot_pseudo_priors(
                ctx, children[-1], n_pilot, method="exact", grad_batch=grad_batch, delta=delta,
                first_batch=first_batch, stats=stats_p, target_accept=target_accept)
        eps0 = [1.5 * m.n_params ** (-1.0 / 3.0) for m in models]
        saved = {"pseudo": ctx.pseudo, "stats_p": stats_p,"config": config, "phase": "warmup", "done": [0] * n_chains,
                 "states": [ChainState(ctx, children[c], pi0, eps0) for c in range(n_chains)],
                 "stats_w": [new_stats() for _ in range(n_chains)],
                 "stats_s": [new_stats() for _ in range(n_chains)],
                 "wq": [[] for _ in range(n_chains)], "wpi": [[] for _ in range(n_chains)],
                 "sq": [[] for _ in range(n_chains)], "ev": [[] for _ in range(n_chains)],
                 "fixed_pi": fixed_pi}
    total = n_chains * (n_warmup + n_iterations)
    if progress:
        from tqdm.auto import tqdm

        done_now = sum(saved["done"]) + (n_chains * n_warmup if saved["phase"] == "sample" else 0)
        prog = tqdm(total=total, initial=done_now, desc=f"arch {method}", unit="sweep")

    def _run_phase(phase, n_target, adapt_step, adapt_pi):
        for c in range(n_chains):
            st = saved["states"][c]
            while saved["done"][c] < n_target:
                n = min(checkpoint_every, n_target - saved["done"][c])
                stats = saved["stats_w" if phase == "warmup" else "stats_s"][c]
                qs, ev, lp = run_chain(ctx, st, n, adapt_step=adapt_step, adapt_pi=adapt_pi,
                                       stats=stats, progress=prog, **kw)
                base = saved["stats_w"][c]["n_evals"] if phase == "sample" else 0
                saved["ev"][c].append(ev + base)
                if phase == "warmup":
                    saved["wq"][c].append(qs)
                    saved["wpi"][c].append(lp)
                else:
                    saved["sq"][c].append(qs)
                saved["done"][c] += n
                if checkpoint is not None:
                    _atomic_pickle(saved, checkpoint)

    try:
        if saved["phase"] == "warmup":
            _run_phase("warmup", n_warmup, True, fixed_pi is None)
            if fixed_pi is None:
                finals = np.array([st.log_pi for st in saved["states"]])
                pi_fix = finals.mean(axis=0)
                pi_fix -= logsumexp(pi_fix)
            else:
                pi_fix = fixed_pi
            saved["fixed_pi"] = pi_fix
            for st in saved["states"]:
                st.log_pi = pi_fix.copy()
                st.t = 0
            saved["phase"] = "sample"
            saved["done"] = [0] * n_chains
            if checkpoint is not None:
                _atomic_pickle(saved, checkpoint)
        _run_phase("sample", n_iterations, False, False)
    finally:
        if prog is not None:
            prog.close()
    pi_fix = np.asarray(saved["fixed_pi"])
    wq = np.array([np.concatenate(x) if x else np.empty(0, np.int64) for x in saved["wq"]])
    wpi = np.array([np.concatenate(x) if x else np.empty((0, D)) for x in saved["wpi"]])
    sq = np.array([np.concatenate(x) for x in saved["sq"]])
    ev = np.array([np.concatenate(x) for x in saved["ev"]])
    counts = np.array([np.bincount(s, minlength=D) for s in sq], dtype=float)
    adj = counts.sum(axis=0) / counts.sum()

    def _correct(freq):
        with np.errstate(divide="ignore"):
            lp = np.log(freq) - pi_fix
        lp = lp - logsumexp(lp)
        return np.exp(lp)

    post = _correct(adj)
    post_chain = np.array([_correct(cn / cn.sum()) for cn in counts])
    q_vals = np.asarray(orders)[sq]
    ess, rhat, ess_ind = _q_diagnostics(q_vals, orders)
    if np.isfinite(ess) and ess < 100:
        warnings.warn(f"ESS of q is {ess:.0f} (< 100): run more iterations", LowESSWarning,
                      stacklevel=3)
    sw, ss = saved["stats_w"], saved["stats_s"]
    allst = sw + ss
    g_checks = sum(s["gibbs_checks"] for s in allst)
    m_checks = sum(s["mh_checks"] for s in allst)
    return ARCHSelection(
        orders=orders, method=method, posterior=post, posterior_per_chain=post_chain,
        adjusted_posterior=adj, log_adjusted_prior=pi_fix, q_trace=q_vals,
        warmup_q_trace=np.asarray(orders)[wq] if wq.size else wq.astype(int),
        log_adjusted_prior_trace=wpi, n_evals_trace=ev,
        n_loglik_evals=int(sum(s["n_evals"] for s in allst)),
        n_loglik_evals_sampling=int(sum(s["n_evals"] for s in ss)),
        acceptance_rate=np.array([s["n_accept"] / max(s["n_mh"], 1) for s in ss]),
        gibbs_error_rate=(sum(s["gibbs_errors"] for s in allst) / g_checks) if g_checks else None,
        mh_error_rate=(sum(s["mh_errors"] for s in allst) / m_checks) if m_checks else None,
        n_gibbs_checks=g_checks, n_mh_checks=m_checks, ess=ess, r_hat=rhat,
        ess_indicator=ess_ind,
        step_sizes=np.exp(np.array([st.log_step for st in saved["states"]])),
        laplace_log_evidence=log_ev,
        map_params={q: m.constrained(lap.mean) for q, m, lap in zip(orders, models, laplaces)},
        n_data=ctx.n_data, n_outliers=int(ctx.outliers.shape[0]),
        n_setup_evals=int(saved["stats_p"]["n_evals"]), pseudo_priors=list(ctx.pseudo),
        evals_by_component={k: int(sum(s.get(f"{k}_evals", 0) for s in ss))
                             for k in ("param", "gibbs")},
        returns_mean=mu, returns_scale=sc, wall_time_s=time.perf_counter() - t_start,
    )
