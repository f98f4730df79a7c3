"""Pure-Python reference of the compiled ARCH sweep (:mod:`sampling.arch._chain`); tests only.

This is the chain's original Python implementation (pseudo-prior refresh,
Langevin-MH, Gibbs on q, Wang-Landau) on the random stream the compiled kernel
uses: the caller draws the sweep's normals ``z``, Gumbels and uniforms; mini-batch
indices come from the Generator through :class:`sampling._race_core.PermutationSampler`
(one kept arrangement of the inliers per chain); both races run on the library's
racing engine :func:`sampling._race_core.run_race`. On the same stream it makes the
same decisions as the kernel, with either control variate (Taylor or binned).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from sampling._race_core import PermutationSampler, run_race


def _log_q(to, fr, grad, eps):
    r = to - fr - 0.5 * eps * grad
    return float(-0.5 * np.dot(r, r) / eps - 0.5 * to.shape[0] * math.log(2.0 * math.pi * eps))


class ChainKernel:
    """Same constructor and :meth:`sweep` as the compiled ``ChainKernel``."""

    def __init__(self, ctx, state, settings):
        self.ctx, self.st, self.s = ctx, state, dict(settings)
        self.exact = settings["method"] == "exact"
        self.sampler = PermutationSampler(ctx.n_in, state.rng, state.perm)

    # ------------------------------------------------------------------ pieces
    def _race(self, reward_fn, offset, n_states, b_delta):
        self.sampler.restart()
        ctx = self.ctx
        leader, n_evals, *_ = run_race(
            reward_fn, offset, ctx.n_in, delta=b_delta, bound="normal", variance="pairwise",
            first_batch=self.s["first_batch"], c_range=np.zeros(n_states), gen=self.st.rng,
            func="arch", sampler=self.sampler, pairs="direct")
        return leader, n_evals

    def _langevin(self, j, xi, u, check):
        ctx, st, stats = self.ctx, self.st, self.st.stats
        mod, lap = ctx.models[j], ctx.whiten[j]
        L = lap.chol
        eps = float(np.exp(st.log_step[j]))
        x = st.xs[j].copy()
        w = np.linalg.solve(L, x - lap.mean)
        if self.exact:
            if st.cache_j != j:
                terms, g = mod.loglik_grad(x)
                stats[0] += mod.n_data
                st.set_cache(j, terms.sum(), g)
            ll, g = st.fstate[0], st.cache_g[:mod.n_params].copy()
            gw = L.T @ (g + mod.grad_log_prior(x))
            w_new = w + 0.5 * eps * gw + math.sqrt(eps) * xi
            lq_fwd = float(-0.5 * np.dot(xi, xi) - 0.5 * w.shape[0] * math.log(2.0 * math.pi * eps))
            x_new = lap.mean + L @ w_new
            terms_new, g_new = mod.loglik_grad(x_new)
            stats[0] += mod.n_data
            gw_new = L.T @ (g_new + mod.grad_log_prior(x_new))
            ll_new = terms_new.sum()
            log_ratio = (ll_new - ll + mod.log_prior(x_new) - mod.log_prior(x)
                         + _log_q(w, w_new, gw_new, eps) - lq_fwd)
            acc = bool(np.log(u) < log_ratio) if np.isfinite(log_ratio) else False
            if acc:
                st.xs[j][:] = x_new
                st.set_cache(j, ll_new, g_new)
            return acc
        # ---- subsampled: SGLD proposal, racing MH test
        n_in = ctx.n_in
        m = min(self.s["grad_batch"], n_in)
        self.sampler.restart()
        batch = ctx.inliers[self.sampler.draw(m)]
        gcv = ctx.gcvs[j]
        bt = gcv.batch_terms(batch)
        scale = n_in / batch.shape[0]
        if st.cache_j != j:
            terms_out, g_out = mod.loglik_grad(x, ctx.outliers)
            stats[0] += ctx.outliers.shape[0]
            st.set_cache(j, terms_out.sum(), g_out)
        ll_out, g_out = st.fstate[0], st.cache_g[:mod.n_params].copy()

        def grad_est(xx, g_out_xx):
            _, gb = mod.loglik_grad(xx, batch)
            stats[0] += batch.shape[0]
            lin_in, lin_b = gcv.linear_sums(xx, bt)
            return g_out_xx + lin_in + scale * (gb - lin_b) + mod.grad_log_prior(xx)

        gw = L.T @ grad_est(x, g_out)
        w_new = w + 0.5 * eps * gw + math.sqrt(eps) * xi
        lq_fwd = float(-0.5 * np.dot(xi, xi) - 0.5 * w.shape[0] * math.log(2.0 * math.pi * eps))
        x_new = lap.mean + L @ w_new
        terms_out_new, g_out_new = mod.loglik_grad(x_new, ctx.outliers)
        stats[0] += ctx.outliers.shape[0]
        ll_out_new = terms_out_new.sum()
        gw_new = L.T @ grad_est(x_new, g_out_new)
        log_rest = (ll_out_new - ll_out + mod.log_prior(x_new) - mod.log_prior(x)
                    + _log_q(w, w_new, gw_new, eps) - lq_fwd - math.log(u) if u > 0 else math.inf)
        if not np.isfinite(log_rest):
            return False
        # Racing-Normal MH test (Eq. 12): arm 0 rejects (offset mu0), arm 1 accepts
        c_new, c_old = ctx.prepare(j, x_new), ctx.prepare(j, x)
        inl = ctx.inliers

        def reward_fn(arms, idx):
            times = inl[idx]
            a, _ = ctx.cv_rewards(j, x_new, times, c_new)
            b, _ = ctx.cv_rewards(j, x, times, c_old)
            out = np.empty((arms.shape[0], idx.shape[0]))
            for r, arm in enumerate(arms):
                out[r] = 0.0 if arm == 0 else a - b
            return out

        leader, n_ev = self._race(reward_fn, np.array([-log_rest / n_in, 0.0]), 2, self.s["delta"])
        stats[0] += n_ev
        acc = leader == 1
        if check:
            exact = (mod.loglik_terms(x_new, inl).sum() - mod.loglik_terms(x, inl).sum()) + log_rest > 0
            stats[1] += 2 * n_in
            stats[4] += 1
            stats[5] += int(bool(exact) != acc)
        if acc:
            st.xs[j][:] = x_new
            st.set_cache(j, ll_out_new, g_out_new)
        return acc

    def _gibbs(self, gumbel, check):
        ctx, st, stats = self.ctx, self.st, self.st.stats
        xs, D = st.xs, ctx.D
        log_f0 = st.log_pi + np.array([ctx.log_joint_prior(k, xs[k]) for k in range(D)])
        idx = None if self.exact else ctx.outliers
        tot = np.empty(D)
        for k in range(D):  # the current model's sum is cached by its Langevin step
            if k == st.cache_j:
                tot[k] = st.fstate[0]
            else:
                tot[k] = ctx.models[k].loglik_terms(xs[k], idx).sum()
                stats[0] += ctx.n_data if self.exact else ctx.outliers.shape[0]
        if self.exact:
            return int(np.argmax(tot + log_f0 + gumbel))
        out_tot = tot
        f0 = log_f0 + out_tot
        coefs = [ctx.prepare(k, xs[k]) for k in range(D)]
        inl = ctx.inliers

        def reward_fn(arms, idx):
            times = inl[idx]
            out = np.empty((arms.shape[0], times.shape[0]))
            for a, k in enumerate(arms):
                out[a], _ = ctx.cv_rewards(int(k), xs[int(k)], times, coefs[int(k)])
            return out

        j, n_ev = self._race(reward_fn, (f0 + gumbel) / ctx.n_in, D, self.s["delta"])
        stats[0] += n_ev
        if check:
            tot = np.array([ctx.models[k].loglik_terms(xs[k], inl).sum() for k in range(D)])
            stats[1] += D * ctx.n_in
            stats[2] += 1
            stats[3] += int(int(np.argmax(tot + f0 + gumbel)) != j)
        return int(j)

    # ------------------------------------------------------------------ API
    def mh_step(self, xi, u, gen, gamma):
        """One Langevin-MH step on the current model; adapts its step by ``gamma`` if > 0."""
        j = self.st.q_idx
        acc = self._langevin(j, np.asarray(xi)[: self.ctx.models[j].n_params], float(u), False)
        if gamma > 0:
            self.st.log_step[j] += gamma * ((1.0 if acc else 0.0) - self.s["target_accept"])
        return acc

    def sweep(self, z, gumbel, u, gen, adapt_step, adapt_pi, check):
        """One sweep; returns ``(q_index, n_accepted)`` (see the compiled kernel)."""
        ctx, st, stats = self.ctx, self.st, self.st.stats
        j = st.q_idx
        for k in range(ctx.D):
            if k != j:
                lo, hi = ctx.poff[k], ctx.poff[k + 1]
                st.xs[k][:] = ctx.pseudo[k].mean + ctx.pseudo[k].chol @ z[lo:hi]
        gamma = 1.0 / (1.0 + st.t / 100.0)
        n_acc = 0
        e0 = stats[0]
        P = ctx.models[j].n_params
        for s in range(self.s["n_mh"]):
            lo = ctx.sum_p + s * ctx.p_max
            acc = self._langevin(j, np.asarray(z[lo:lo + P]), float(u[s]), check)
            n_acc += int(acc)
            if adapt_step:
                st.log_step[j] += gamma * ((1.0 if acc else 0.0) - self.s["target_accept"])
        e1 = stats[0]
        j_new = self._gibbs(np.asarray(gumbel), check)
        stats[8] += e1 - e0
        stats[9] += stats[0] - e1
        stats[6] += n_acc
        stats[7] += self.s["n_mh"]
        if j_new != j:
            st.cache_j = -1
        st.q_idx = j_new
        if adapt_pi:
            st.log_pi[j_new] -= gamma
            st.log_pi[:] = st.log_pi - logsumexp(st.log_pi)
        st.t = st.t + 1
        return j_new, n_acc
