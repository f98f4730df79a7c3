"""ARCH(q) with standardised Student-t innovations: simulation, likelihood, priors, MAP, Laplace.

The returns series it is fitted to is read and checked by :mod:`sampling.arch.returns`.

Model (Chen & Ghahramani 2016, Sec. 5.2, Appx. C.2)::

    r_t = sigma_t z_t,   z_t ~ Student-t_nu scaled to unit variance (nu > 2),
    sigma_t^2 = alpha_0 + sum_{i=1..q} alpha_i r_{t-i}^2,
    alpha_0, ..., alpha_q ~ Gamma(1, 1) iid,   nu - 2 ~ Gamma(1, 1).

The paper puts Gamma(1, 1) on nu itself; a unit-variance Student-t needs nu > 2,
so here the Gamma(1, 1) prior is on the excess ``nu - 2`` (prior mean nu = 3).
Every parameter is sampled in an unconstrained coordinate ``x`` with the softplus
map ``alpha_i = softplus(x_i)``, ``nu = 2 + softplus(x_nu)`` (Appx. C.2); densities
over ``x`` include the log-Jacobian ``log sigmoid(x)``.

All candidate orders condition on the first ``q_max`` observations, so every
model explains the same ``n_data = n_obs - q_max`` terms ``t = q_max, ..., n_obs-1``
(0-based) and their marginal likelihoods are comparable.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, special

from sampling.exceptions import ConvergenceWarning

from sampling.utils.kernels import load_kernel

_loglik = load_kernel("sampling.arch._loglik")

__all__ = ["ARCHModel", "LaplaceApprox", "softplus", "softplus_inv", "simulate_arch"]


# --------------------------------------------------------------------------- softplus
def softplus(x):
    """``log(1 + exp(x))``, overflow-safe."""
    return np.logaddexp(0.0, x)


def softplus_inv(y):
    """Inverse of :func:`softplus` for ``y > 0``: ``y + log(-expm1(-y))``."""
    y = np.asarray(y, dtype=float)
    return y + np.log(-np.expm1(-y))


def _sigmoid(x):
    return special.expit(x)


# --------------------------------------------------------------------------- simulation
def simulate_arch(n, alpha, nu, *, rng=None):
    """Simulate an ARCH(q) series with unit-variance Student-t innovations.

    r_t = sigma_t z_t with sigma_t^2 = alpha_0 + sum_{i=1..q} alpha_i r_{t-i}^2 and
    z_t ~ t_nu scaled to unit variance; the q pre-sample values are 0.

    Parameters
    ----------
    n : int
        Number of returns.
    alpha : sequence of float of length q + 1
        ``(alpha_0, ..., alpha_q)``, all >= 0 and alpha_0 > 0.
    nu : float > 2
        Degrees of freedom.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    ndarray of shape (n,)

    Raises
    ------
    ValueError
        If ``nu <= 2`` or ``alpha_0 <= 0`` or an ``alpha_i < 0``.
    """
    from sampling.utils.rng import as_generator

    alpha = np.asarray(alpha, dtype=float)
    if not nu > 2:
        raise ValueError(f"the nu parameter of simulate_arch must be > 2 (unit variance); got {nu}")
    if alpha.ndim != 1 or alpha.size < 1 or not alpha[0] > 0 or np.any(alpha[1:] < 0):
        raise ValueError(f"the alpha parameter of simulate_arch must be (alpha_0 > 0, alpha_i >= 0); got {alpha}")
    gen = as_generator(rng)
    q = alpha.size - 1
    z = gen.standard_t(nu, size=n) * math.sqrt((nu - 2.0) / nu)
    r = np.zeros(n + q)
    for t in range(q, n + q):
        r[t] = math.sqrt(alpha[0] + np.dot(alpha[1:], r[t - q:t][::-1] ** 2)) * z[t - q]
    return r[q:]


# --------------------------------------------------------------------------- model
@dataclass(frozen=True)
class LaplaceApprox:
    """Gaussian approximation ``N(mean, cov)`` of one model's posterior over ``x``.

    Attributes
    ----------
    mean : ndarray of shape (q + 2,)
        MAP in the unconstrained (softplus) coordinates.
    cov : ndarray of shape (q + 2, q + 2)
        Inverse of the negative Hessian of the log posterior at the MAP.
    chol : ndarray of shape (q + 2, q + 2)
        Lower Cholesky factor of ``cov``.
    log_post_map : float
        Unnormalised log posterior at the MAP (nats).
    log_evidence : float
        Laplace estimate of ``log p(r | q)`` (nats).
    """

    mean: np.ndarray
    cov: np.ndarray
    chol: np.ndarray
    log_post_map: float
    log_evidence: float

    def logpdf(self, x):
        """Log density at ``x`` (shape (q+2,)), natural log."""
        z = np.linalg.solve(self.chol, np.asarray(x) - self.mean)
        d = self.mean.shape[0]
        return float(-0.5 * z @ z - np.sum(np.log(np.diag(self.chol))) - 0.5 * d * math.log(2 * math.pi))

    def sample(self, rng):
        """One draw (shape (q+2,)) using the Generator ``rng``."""
        return self.mean + self.chol @ rng.standard_normal(self.mean.shape[0])


class ARCHModel:
    """ARCH(q) likelihood over a fixed, standardised series, in softplus coordinates.

    Parameters
    ----------
    returns : ndarray of shape (n_obs,)
        Validated, standardised returns (see :func:`sampling.arch.returns.check_returns`
        and :func:`~sampling.arch.returns.standardise`).
    q : int
        ARCH order, ``1 <= q <= q_max``.
    q_max : int
        Number of leading observations conditioned on (the largest candidate order).

    Attributes
    ----------
    n_data : int
        Number of likelihood terms ``n_obs - q_max``.
    n_params : int
        ``q + 2``: ``x_0..x_q`` for ``alpha_0..alpha_q`` and ``x_nu``.

    Notes
    -----
    Data index ``n`` in ``0..n_data-1`` is time ``t = q_max + n``.
    """

    def __init__(self, returns, q, q_max, *, kernel=None):
        self.r = np.ascontiguousarray(returns, dtype=float)
        self.r2 = self.r * self.r
        self.q = int(q)
        self.q_max = int(q_max)
        self.n_data = self.r.shape[0] - self.q_max
        self.n_params = self.q + 2
        self._k = _loglik if kernel is None else kernel
        self.all_idx = np.arange(self.q_max, self.r.shape[0], dtype=np.int64)

    # ---------------------------------------------------------------- transforms
    def constrained(self, x):
        """``(alpha, nu)`` from unconstrained ``x``: alpha of shape (q+1,), nu > 2."""
        x = np.asarray(x, dtype=float)
        alpha = np.ascontiguousarray(softplus(x[:-1]))
        nu = 2.0 + float(softplus(x[-1]))
        return alpha, nu

    def unconstrained(self, alpha, nu):
        """Inverse of :meth:`constrained`."""
        return np.append(softplus_inv(np.asarray(alpha, dtype=float)), softplus_inv(nu - 2.0))

    @staticmethod
    def _consts(nu):
        a, k = nu - 2.0, 0.5 * (nu + 1.0)
        c0 = special.gammaln(k) - special.gammaln(0.5 * nu) - 0.5 * math.log(math.pi * a)
        dc0 = 0.5 * (special.digamma(k) - special.digamma(0.5 * nu)) - 0.5 / a
        return float(c0), float(dc0)

    # ---------------------------------------------------------------- prior
    def log_prior(self, x):
        """Log prior density of ``x`` (Gamma(1,1) on each alpha_i and on nu-2, plus Jacobian)."""
        x = np.asarray(x, dtype=float)
        return float(np.sum(-softplus(x) - softplus(-x)))

    def grad_log_prior(self, x):
        """Gradient of :meth:`log_prior`, shape (q+2,)."""
        return 1.0 - 2.0 * _sigmoid(np.asarray(x, dtype=float))

    # ---------------------------------------------------------------- likelihood
    def loglik_terms(self, x, idx=None):
        """Per-datum log-likelihood terms ``l_t`` (nats) at time indices ``idx`` (default: all).

        ``idx`` holds times ``t >= q_max`` (int64), not data positions.
        """
        idx = self.all_idx if idx is None else idx
        alpha, nu = self.constrained(x)
        c0, _ = self._consts(nu)
        out = np.empty(idx.shape[0])
        self._k.loglik_terms(self.r, self.r2, alpha, nu, c0, idx, out)
        return out

    def loglik_grad(self, x, idx=None):
        """Terms ``l_t`` over ``idx`` and the gradient of their sum w.r.t. ``x``, shape (q+2,)."""
        idx = self.all_idx if idx is None else idx
        alpha, nu = self.constrained(x)
        c0, dc0 = self._consts(nu)
        out = np.empty(idx.shape[0])
        grad = np.empty(self.q + 2)
        self._k.loglik_grad(self.r, self.r2, alpha, nu, c0, dc0, idx, out, grad)
        return out, grad * _sigmoid(np.asarray(x, dtype=float))

    def per_datum_grad(self, x, idx=None):
        """Per-datum gradients ``d l_t / d x``, shape (len(idx), q+2) (NumPy; for set-up only)."""
        idx = self.all_idx if idx is None else idx
        alpha, nu = self.constrained(x)
        _, dc0 = self._consts(nu)
        a, k = nu - 2.0, 0.5 * (nu + 1.0)
        s = self.variances(alpha, idx)
        g = a * s + self.r2[idx]
        fs = (k - 0.5) / s - k * a / g
        lags = np.empty((idx.shape[0], self.q + 1))
        lags[:, 0] = 1.0
        for i in range(1, self.q + 1):
            lags[:, i] = self.r2[idx - i]
        gnu = dc0 - 0.5 * np.log(g / (a * s)) + k * self.r2[idx] / (a * g)
        grad = np.column_stack([fs[:, None] * lags, gnu])
        return grad * _sigmoid(np.asarray(x, dtype=float))

    def variances(self, alpha, idx=None):
        """Conditional variances ``s_t = sigma_t^2`` at ``idx`` for constrained ``alpha``."""
        idx = self.all_idx if idx is None else idx
        out = np.empty(idx.shape[0])
        self._k.variances(self.r2, np.ascontiguousarray(alpha, dtype=float), idx, out)
        return out

    def log_posterior(self, x):
        """Unnormalised log posterior over ``x`` (full data), nats."""
        return float(self.loglik_terms(x).sum() + self.log_prior(x))

    def grad_log_posterior(self, x):
        """Gradient of :meth:`log_posterior`, shape (q+2,)."""
        _, g = self.loglik_grad(x)
        return g + self.grad_log_prior(x)

    # ---------------------------------------------------------------- MAP / Laplace
    def initial_x(self):
        """A starting point: ``alpha_0 = 0.3 var``, ``sum alpha_i = 0.6 var``, ``nu = 5``."""
        var = float(np.mean(self.r2))
        alpha = np.full(self.q + 1, 0.6 * var / self.q)
        alpha[0] = 0.3 * var
        return self.unconstrained(alpha, 5.0)

    def fit_map(self, x0=None, *, maxiter=500):
        """MAP of the posterior over ``x`` (L-BFGS-B, analytic gradient); returns ``x``."""
        x0 = self.initial_x() if x0 is None else np.asarray(x0, dtype=float)

        def f_and_g(x):
            terms, g = self.loglik_grad(x)
            val = terms.sum() + self.log_prior(x)
            grad = g + self.grad_log_prior(x)
            if not np.isfinite(val):
                return 1e300, np.zeros_like(x)
            return -val, -grad

        res = optimize.minimize(f_and_g, x0, jac=True, method="L-BFGS-B",
                                bounds=[(-30.0, 30.0)] * x0.shape[0],
                                options={"maxiter": maxiter, "gtol": 1e-6})
        if not res.success and res.status != 0:
            import warnings

            warnings.warn(f"ARCH({self.q}) MAP: optimiser stopped: {res.message}",
                          ConvergenceWarning, stacklevel=2)
        return res.x

    def hessian(self, x, *, eps=1e-5):
        """Hessian of the log posterior at ``x`` by central differences of the analytic gradient."""
        d = x.shape[0]
        H = np.empty((d, d))
        for i in range(d):
            e = np.zeros(d)
            e[i] = eps
            H[:, i] = (self.grad_log_posterior(x + e) - self.grad_log_posterior(x - e)) / (2 * eps)
        return 0.5 * (H + H.T)

    def laplace(self, x_map=None):
        """Laplace approximation at the MAP (the Carlin-Chib pseudo-prior, Appx. C.2)."""
        x_map = self.fit_map() if x_map is None else x_map
        H = -self.hessian(x_map)
        w, V = np.linalg.eigh(H)
        w = np.maximum(w, 1e-6 * max(1.0, float(w.max())))
        cov = (V / w) @ V.T
        cov = 0.5 * (cov + cov.T)
        chol = np.linalg.cholesky(cov)
        lp = self.log_posterior(x_map)
        d = x_map.shape[0]
        log_ev = lp + 0.5 * d * math.log(2 * math.pi) + float(np.sum(np.log(np.diag(chol))))
        return LaplaceApprox(mean=x_map, cov=cov, chol=chol, log_post_map=lp, log_evidence=log_ev)
