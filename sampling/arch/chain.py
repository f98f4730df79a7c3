"""The chain of the ARCH order selection: fixed context, mutable state, and the sweep loop.

:class:`ChainContext` holds what a run keeps fixed (models, pseudo-priors, control
variates, outliers) and exports it as flat tables for the compiled sweep
(:mod:`sampling.arch._chain`); :class:`ChainState` holds one chain's state in
arrays the kernel updates in place; :func:`run_chain` draws each sweep's normals,
Gumbels and uniforms from the chain's Generator and makes one compiled call per
sweep. The same kernel runs the exact and the subsampled chains.
"""
from __future__ import annotations

import gc
import math
import time

import numpy as np

from sampling.utils.kernels import load_kernel
from sampling.bounds_normal import b_normal
from sampling.control_variates import ControlVariate

from ._cv import BinnedProxy, GradientCV, bins_2d
from .model import ARCHModel, LaplaceApprox

__all__ = ["ChainContext", "ChainState", "STATS", "new_stats", "pilot_pseudo_priors", "run_chain"]

_chain = load_kernel("sampling.arch._chain")
STATS = tuple(_chain.STATS)


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
                 n_bins_per_dim=10, kernel=None, control_variate="taylor"):
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
            b = bins_2d(r, s, n_bins_per_dim)
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
            self.cvs.append(BinnedProxy(mod, self.inliers, bin_of, n_bins))
        # ---- SGLD gradient control variates (first-order expansion at the MAP)
        self.gcvs = [GradientCV(mod, lap.mean, self.inliers)
                     for mod, lap in zip(self.models, self.laplaces)]
        # ---- layout of the flat parameter vector (model j at poff[j]:poff[j+1])
        sizes = np.array([m.n_params for m in self.models], dtype=np.int64)
        self.poff = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.moff = np.concatenate([[0], np.cumsum(sizes * sizes)]).astype(np.int64)
        self.sum_p = int(self.poff[-1])
        self.p_max = int(sizes.max())
        self._pack = None

    def n_normals(self, n_mh):
        """Standard normals one sweep consumes: every pseudo-prior, then ``n_mh`` proposals."""
        return self.sum_p + n_mh * self.p_max

    def kernel_arrays(self):
        """Flat, C-contiguous tables of everything the compiled sweep reads (cached).

        Keys: ``r2``; ``inliers``, ``outliers``, ``all_idx`` (times, int64); ``q``,
        ``poff``, ``moff`` (orders and offsets of each model's parameter vector and
        of its ``P x P`` matrices, row-major); ``pseudo_mean``, ``pseudo_chol``,
        ``pseudo_const`` (``-sum log diag L - P log(2 pi) / 2``); ``whiten_mean``,
        ``whiten_chol``; the Taylor tables of :class:`GradientCV`: ``ref``
        (``alpha0``, ``nu0``), ``tab`` (D, n_obs, 8: ``GradientCV.sc``, then ``l_t`` and ``s_t`` at the
        reference, 0), ``L0_in``,
        ``G0``, ``J_in``; the binned proxies of :class:`BinnedProxy`: ``r``,
        ``bin_of`` (D, n_obs), ``ref_r``, ``var_r``, ``count`` (D, n_bins), ``ref_x``,
        ``cov_rx`` (n_bins x q_j at ``xoff[j]``), ``cov_xx`` (n_bins x q_j x q_j at
        ``xxoff[j]``), ``n_bins``.
        """
        if self._pack is None or self._pack["_pseudo"] is not self.pseudo:
            f = lambda parts: np.ascontiguousarray(np.concatenate([np.ravel(p) for p in parts]))  # noqa: E731
            self._pack = {
                "_pseudo": self.pseudo,
                "r2": np.ascontiguousarray(self.models[0].r2),
                "inliers": np.ascontiguousarray(self.inliers, dtype=np.int64),
                "outliers": np.ascontiguousarray(self.outliers, dtype=np.int64),
                "all_idx": np.ascontiguousarray(self.all_idx, dtype=np.int64),
                "q": np.array(self.orders, dtype=np.int64),
                "poff": self.poff, "moff": self.moff,
                "pseudo_mean": f([p.mean for p in self.pseudo]),
                "pseudo_chol": f([p.chol for p in self.pseudo]),
                "pseudo_const": np.array([-float(np.sum(np.log(np.diag(p.chol))))
                                          - 0.5 * p.mean.shape[0] * math.log(2 * math.pi)
                                          for p in self.pseudo]),
                "whiten_mean": f([p.mean for p in self.whiten]),
                "whiten_chol": f([p.chol for p in self.whiten]),
                "ref": f([np.append(g.a0, g.nu0) for g in self.gcvs]),
                "tab": f([np.column_stack([g.sc, g.l0, g.s0, np.zeros_like(g.l0)])
                          for g in self.gcvs]),
                "L0_in": np.array([g.L0_in for g in self.gcvs]),
                "G0": f([g.G0 for g in self.gcvs]),
                "J_in": f([g.J_in for g in self.gcvs]),
                # the binned proxies (control_variate="binned")
                "r": np.ascontiguousarray(self.models[0].r),
                "bin_of": f([cv.bin_of for cv in self.cvs]).astype(np.int64),
                "ref_r": f([cv.ref_r for cv in self.cvs]),
                "var_r": f([cv.var_r for cv in self.cvs]),
                "count": f([cv.count for cv in self.cvs]),
                "ref_x": f([cv.ref_x for cv in self.cvs]),
                "cov_rx": f([cv.cov_rx for cv in self.cvs]),
                "cov_xx": f([cv.cov_xx for cv in self.cvs]),
                "xoff": np.concatenate([[0], np.cumsum([cv.ref_x.size for cv in self.cvs])]).astype(np.int64),
                "xxoff": np.concatenate([[0], np.cumsum([cv.cov_xx.size for cv in self.cvs])]).astype(np.int64),
                "n_bins": int(self.cvs[0].count.shape[0]),
            }
        return self._pack

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

    def control_variate_at(self, j, x):
        """Model ``j``'s racing proxy at ``x`` as a one-state :class:`sampling.ControlVariate`
        over the inliers (Taylor: :meth:`GradientCV.control_variate`)."""
        if self.control_variate != "taylor":
            prep = self.prepare(j, x)

            def proxy(states, idx):
                res, l = self.cv_rewards(j, x, self.inliers[np.asarray(idx, dtype=np.int64)], prep)
                return (l - res)[None, :] + prep[-1]

            return ControlVariate(proxy, np.array([prep[-1]]))
        return self.gcvs[j].control_variate(x, self.inliers)

    def log_joint_prior(self, j, x):
        """``log p(x | j) - log pseudo_j(x)``: the model-``j`` part of ``log f_0``."""
        return self.models[j].log_prior(x) - self.pseudo[j].logpdf(x)


class ChainState:
    """Mutable state of one chain, in arrays the compiled sweep updates in place.

    Attributes
    ----------
    xs_flat : ndarray of shape (sum_j (q_j + 2),)
        Every model's unconstrained parameters; ``xs[j]`` is a view of model j's part.
    log_pi : ndarray of shape (D,)
        Adjusted log model prior ``log pi~``.
    log_step : ndarray of shape (D,)
        Log Langevin step size per model.
    istate : ndarray of int64 of shape (3,)
        Current model index ``q_idx``, sweep counter ``t``, model of the cached
        log-likelihood / gradient (``-1``: none).
    fstate : ndarray of shape (1,)
        The cached log-likelihood sum (all terms for "exact", outliers for "subsampled").
    cache_g : ndarray of shape (max_j q_j + 2,)
        The cached gradient of that sum.
    perm : ndarray of int64 of shape (n_inliers,)
        The kept arrangement of the inliers the mini-batches are drawn from.
    stats : ndarray of int64 of shape (len(STATS),)
        Cumulative counters (:data:`STATS`).
    rng : numpy.random.Generator
    """

    def __init__(self, ctx, rng, log_adjusted_prior, step_sizes):
        self.rng = rng
        self.xs_flat = np.concatenate([lap.mean for lap in ctx.laplaces]).astype(float)
        self.xs = [self.xs_flat[ctx.poff[k]:ctx.poff[k + 1]] for k in range(ctx.D)]
        self.log_pi = np.array(log_adjusted_prior, dtype=float)
        self.log_step = np.log(np.asarray(step_sizes, dtype=float))
        self.istate = np.array([int(rng.integers(ctx.D)), 0, -1], dtype=np.int64)
        self.fstate = np.zeros(1)
        self.cache_g = np.zeros(ctx.p_max)
        self.perm = np.arange(ctx.n_in, dtype=np.int64)
        self.stats = np.zeros(len(STATS), dtype=np.int64)

    q_idx = property(lambda self: int(self.istate[0]),
                     lambda self, v: self.istate.__setitem__(0, int(v)))
    t = property(lambda self: int(self.istate[1]), lambda self, v: self.istate.__setitem__(1, int(v)))
    cache_j = property(lambda self: int(self.istate[2]),
                       lambda self, v: self.istate.__setitem__(2, int(v)))

    def set_cache(self, j, ll, g):
        self.istate[2] = j
        self.fstate[0] = ll
        self.cache_g[:] = 0.0
        self.cache_g[:g.shape[0]] = g


def new_stats():
    """Counters of one chain phase (JSON-friendly): :data:`STATS` plus ``wall_s`` and ``cpu_s``
    (wall and process CPU time of the sweeps, seconds)."""
    return {**{k: 0 for k in STATS}, "wall_s": 0.0, "cpu_s": 0.0}


def _settings(ctx, *, method, grad_batch, delta, first_batch, target_accept, n_mh):
    pi1 = first_batch / ctx.n_in
    return dict(method=method, grad_batch=int(grad_batch), delta=float(delta),
                first_batch=int(first_batch), target_accept=float(target_accept), n_mh=int(n_mh),
                b_gibbs=float(b_normal(delta / (ctx.D - 1), pi1)) if first_batch < ctx.n_in else 0.0,
                b_mh=float(b_normal(delta, pi1)) if first_batch < ctx.n_in else 0.0)


def make_kernel(ctx, st, settings, engine=None):
    """The sweep kernel of chain ``st``: the compiled one, or ``engine.ChainKernel`` (tests)."""
    return (_chain if engine is None else engine).ChainKernel(ctx, st, settings)


def run_chain(ctx, st, n_iter, *, method, grad_batch, delta, first_batch,
              check_every, target_accept, stats, adapt_step=False, adapt_pi=False,
              n_mh=1, progress=None, engine=None):
    """Run ``n_iter`` sweeps, one compiled call each.

    Per sweep, in this order, from ``st.rng``: ``ctx.n_normals(n_mh)`` standard
    normals, ``D`` Gumbels, ``n_mh`` uniforms; then the kernel draws the mini-batch
    indices from the same Generator. ``engine`` replaces the compiled module (tests
    pass the Python reference :mod:`sampling.arch._chain_py`).

    Returns arrays ``q_idx`` (n_iter,), cumulative ``n_evals`` of the chain
    (n_iter,) and ``log_pi`` (n_iter, D) (the adjusted prior after each sweep);
    adds the counters of these sweeps to ``stats``.
    """
    settings = _settings(ctx, method=method, grad_batch=grad_batch, delta=delta,
                         first_batch=first_batch, target_accept=target_accept, n_mh=n_mh)
    kern = make_kernel(ctx, st, settings, engine)
    qs = np.empty(n_iter, dtype=np.int64)
    ev = np.empty(n_iter, dtype=np.int64)
    lp = np.empty((n_iter, ctx.D))
    before = st.stats.copy()
    n_z, D, gen = ctx.n_normals(n_mh), ctx.D, st.rng
    gc_was_enabled = gc.isenabled()
    gc.disable()  # the loop allocates small acyclic arrays only; gen-0 collections showed in profiles
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        _sweeps(kern, st, n_iter, n_z, D, gen, n_mh, check_every, adapt_step, adapt_pi,
                qs, ev, lp, progress)
    finally:
        if gc_was_enabled:
            gc.enable()
    stats["wall_s"] += time.perf_counter() - t0
    stats["cpu_s"] += time.process_time() - c0
    for k, name in enumerate(STATS):
        stats[name] += int(st.stats[k] - before[k])
    return qs, ev, lp


def _sweeps(kern, st, n_iter, n_z, D, gen, n_mh, check_every, adapt_step, adapt_pi, qs, ev, lp,
            progress):
    for i in range(n_iter):
        check = bool(check_every) and (st.t % check_every == 0)
        z = gen.standard_normal(n_z)
        g = gen.gumbel(size=D)
        u = gen.random(n_mh)
        qs[i], _ = kern.sweep(z, g, u, gen, adapt_step, adapt_pi, check)
        ev[i] = st.stats[0]
        lp[i] = st.log_pi
        if progress is not None and (i % 50 == 49 or i == n_iter - 1):
            progress.update(50 if i % 50 == 49 else (i % 50) + 1)


def pilot_pseudo_priors(ctx, rng, n_pilot, *, grad_batch, delta, first_batch, stats,
                        target_accept=0.36, shrinkage=0.1, engine=None):
    """Gaussian pseudo-priors fitted to short within-model pilot chains (Carlin & Chib 1995).

    For each model ``j`` a chain with ``q = j`` fixed runs ``n_pilot`` full-data
    MALA steps from the MAP (the compiled kernel's exact Langevin step; the step
    size adapts in the first half with step ``1 / (1 + t / 20)``); the second
    half's mean and covariance, shrunk by ``shrinkage`` towards the Laplace
    covariance, define ``N(mean, cov)``. The Laplace fit stays the whitening
    transform and the control-variate reference. Returns a list of
    :class:`~sampling.arch.model.LaplaceApprox` (``log_evidence`` of the Laplace fit).
    """
    settings = _settings(ctx, method="exact", grad_batch=grad_batch, delta=delta,
                         first_batch=first_batch, target_accept=target_accept, n_mh=1)
    out = []
    for j in range(ctx.D):
        lap = ctx.laplaces[j]
        st = ChainState(ctx, rng, np.zeros(ctx.D), [1.5 * lap.mean.shape[0] ** (-1 / 3)] * ctx.D)
        st.q_idx = j
        kern = make_kernel(ctx, st, settings, engine)
        draws = []
        for t in range(n_pilot):
            xi = rng.standard_normal(ctx.p_max)
            u = rng.random()
            gamma = 1.0 / (1.0 + t / 20.0) if t < n_pilot // 2 else 0.0
            kern.mh_step(xi, u, rng, gamma)
            if t >= n_pilot // 2:
                draws.append(st.xs[j].copy())
        for k, name in enumerate(STATS):
            stats[name] += int(st.stats[k])
        X = np.array(draws)
        cov = (1 - shrinkage) * np.cov(X.T) + shrinkage * lap.cov
        cov = 0.5 * (cov + cov.T)
        out.append(LaplaceApprox(mean=X.mean(axis=0), cov=cov, chol=np.linalg.cholesky(cov),
                                 log_post_map=lap.log_post_map, log_evidence=lap.log_evidence))
    return out
