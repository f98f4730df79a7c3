"""Carlin & Chib product-space sampler over ARCH orders, exact or subsampled.

Implements Chen & Ghahramani (2016), Sec. 5.2 and Appx. C.2 (Eq. 25):

* the chain state is ``(q, x^(j) for every j in orders)``; the model not chosen
  keeps a Laplace pseudo-prior ``N(x_map^(j), H_j^{-1})`` (Carlin & Chib 1995);
* ``q | x`` is drawn by Gumbel-max (Eq. 2-3) over the ``D = len(orders)`` arms
  with ``log f_0(j) = log pi~_j + log p(x^(j) | j) - log pseudo_j(x^(j))`` and
  ``f_n(j) = p(r_t | x^(j), j)``: exactly (``method="exact"``) or by
  Racing-Normal (Alg. 1, Eq. 9) over the inliers, the outliers summed exactly;
* ``x^(q) | q`` by a Langevin proposal (whitened by the Laplace Cholesky factor)
  with an MH correction: full-data MALA for ``"exact"`` (exact gradient, exact MH
  ratio); for ``"subsampled"`` an SGLD proposal whose gradient is exact on the
  outliers and, on the inliers, the first-order expansion of the per-datum
  gradients around the MAP (:class:`GradientCV`, summed exactly) plus a
  mini-batch estimate of its remainder, corrected by the Racing-Normal MH test
  (Eq. 12, the two-arm race of :func:`sampling.mh_accept`; outlier terms exact,
  inliers raced with the control variates). Both use the same proposal family and
  step-size adaptation (Robbins-Monro to ``target_accept``);
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

Engine: every sweep of both methods is one call of the compiled kernel
:mod:`sampling.arch._chain` (racing engine ``sampling._racing.race_run``, the
library's Alg. 1 in C), so the exact and subsampled chains are timed on the same
machinery. Its Python reference :mod:`sampling.arch._chain_py` (tests only) makes
the same decisions on the same random stream. This module is the front
door: validation, set-up, phases, checkpoints (:mod:`sampling.arch.checkpoint`)
and the result (:class:`~sampling.arch.result.ARCHSelection`).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import time
import warnings

import numpy as np
from scipy.special import logsumexp

from threadpoolctl import threadpool_limits

from sampling.utils.rng import as_generator
from sampling.exceptions import LowESSWarning

from ._cv import BinnedProxy, GradientCV
from .chain import STATS, ChainContext, ChainState, new_stats, pilot_pseudo_priors, run_chain
from .checkpoint import load_checkpoint, save_checkpoint
from .model import ARCHModel
from .returns import check_returns, standardise
from .result import ARCHSelection, q_diagnostics

__all__ = ["ARCHSelection", "BinnedProxy", "ChainContext", "ChainState", "GradientCV", "run_chain",
           "select_order"]

_METHODS = ("subsampled", "exact")


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
    for param, v, lo in (("n_iterations", n_iterations, 1), ("n_warmup", n_warmup, 0),
                         ("n_chains", n_chains, 1), ("grad_batch", grad_batch, 1),
                         ("first_batch", first_batch, 2), ("check_every", check_every, 0)):
        # (not ``name``: that is the data's name, which check_returns puts in its messages)
        if not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"the {param} parameter of select_order must be an int >= {lo}; "
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
                 checkpoint_every=500, kernel=None, name="returns", _engine=None, _steps=False):
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
        Checkpoint file (``.npz``, no pickle; :mod:`sampling.arch.checkpoint`) for
        the chain states, written atomically every ``checkpoint_every`` sweeps; with
        ``resume=True`` a run continues from it after checking that it was written
        by a run with the same settings on the same data (else
        :class:`~sampling.exceptions.CheckpointError`).
    kernel : module, optional
        Likelihood kernels used by the set-up (default the Cython ``_loglik``;
        tests pass the twin).
    name : str
        How error messages refer to the data (e.g. its file name).

    Returns
    -------
    ARCHSelection
        ``posterior`` (``p(q | r)`` by order, also ``posterior_by_order``), traces,
        likelihood terms, ESS / R-hat of q, sweep wall and CPU times;
        ``to_inference_data()`` gives the chains as ArviZ ``InferenceData`` with q
        labelled by order.

    Raises
    ------
    ReturnsDataError
        NaN/inf, too few points (``<= max(orders) + 50``) or a constant series.
    ValueError, TypeError
        Bad parameter values.
    CheckpointError
        ``resume=True`` with a checkpoint that is not this run's (other settings or
        data), was modified, or is not a checkpoint at all (e.g. a pickle).

    Warns
    -----
    LowESSWarning
        When the ESS of q is below 100.

    References
    ----------
    .. [1] Chen & Ghahramani (2016), Sec. 5.2, Appx. C.2 (Eq. 25), Alg. 1, Eq. 9, 11, 12.
    .. [2] Carlin & Chib (1995), "Bayesian model choice via Markov chain Monte Carlo".
    """
    steps = _select_order(returns, orders, method, n_iterations, n_warmup, n_chains, delta,
                          rng, grad_batch, first_batch, outlier_fraction, target_accept,
                          log_adjusted_prior, prior_init, pseudo_prior, n_pilot,
                          pseudo_priors, n_mh, check_every, control_variate,
                          standardize, progress,
                          checkpoint, resume, checkpoint_every, kernel, name, _engine)
    if _steps:
        return steps
    # small dense algebra only: BLAS threads just contend on a shared machine
    with threadpool_limits(1):
        return drain(steps)


def drain(steps):
    """Run a ``select_order(..., _steps=True)`` generator to the end; return its result."""
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return stop.value


def select_orders_interleaved(calls):
    """Run several ``select_order`` calls block by block in turn; return their results.

    ``calls`` is a list of keyword dicts for :func:`select_order`. The calls
    advance one ``checkpoint_every``-sweep block of one chain at a time, round
    robin (a call's set-up runs at its first turn), so that on a shared machine
    each meets the same load over the run and their sweep wall times compare side
    by side (``benchmarks/bench_arch.py``). Same results as separate calls.
    """
    with threadpool_limits(1):
        gens = [select_order(**kw, _steps=True) for kw in calls]
        results = [None] * len(gens)
        live = set(range(len(gens)))
        while live:
            for i in sorted(live):
                try:
                    next(gens[i])
                except StopIteration as stop:
                    results[i] = stop.value
                    live.discard(i)
    return results


def _select_order(returns, orders, method, n_iterations, n_warmup, n_chains, delta, rng,  # noqa: C901
                  grad_batch, first_batch, outlier_fraction, target_accept, log_adjusted_prior,
                  prior_init, pseudo_prior, n_pilot, pseudo_priors, n_mh, check_every,
                  control_variate, standardize, progress, checkpoint, resume,
                  checkpoint_every, kernel, name, _engine=None):
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
    config = dict(orders=list(orders), n_iterations=n_iterations, n_warmup=n_warmup,
                  n_chains=n_chains, n_obs=int(z.shape[0]), standardize=bool(standardize),
                  outlier_fraction=outlier_fraction, fixed_pi=None if fixed_pi is None
                  else fixed_pi.tolist(), prior_init=prior_init, pseudo_prior=pseudo_prior,
                  n_pilot=n_pilot, shared_pseudo=pseudo_priors is not None,
                  control_variate=control_variate, **kw)
    if pseudo_priors is not None:  # a resumed run must be given the same pseudo-priors
        config["pseudo_priors_sha256"] = hashlib.sha256(b"".join(
            np.ascontiguousarray(a, dtype=np.float64).tobytes()
            for p in pseudo_priors for a in (p.mean, p.cov))).hexdigest()
    config = json.loads(json.dumps(config, default=lambda v: v.item() if hasattr(v, "item") else str(v)))
    prog = None
    new_state = lambda g: ChainState(ctx, g, pi0, np.ones(D))  # noqa: E731
    if resume and checkpoint is not None and os.path.exists(checkpoint):
        saved = load_checkpoint(checkpoint, config=config, z=z, ctx=ctx, new_state=new_state,
                                stat_keys=STATS)
        ctx.pseudo = saved["pseudo"]
    else:
        gen = as_generator(rng)
        children = gen.spawn(n_chains + 1)
        stats_p = new_stats()
        if pseudo_priors is not None:
            ctx.pseudo = list(pseudo_priors)
        elif pseudo_prior == "pilot":
            ctx.pseudo = pilot_pseudo_priors(
                ctx, children[-1], n_pilot, grad_batch=grad_batch, delta=delta,
                first_batch=first_batch, stats=stats_p, target_accept=target_accept,
                engine=_engine)
        eps0 = [1.5 * m.n_params ** (-1.0 / 3.0) for m in models]
        saved = {"pseudo": ctx.pseudo, "stats_p": stats_p, "phase": "warmup", "done": [0] * n_chains,
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

    def _save():
        if checkpoint is not None:
            save_checkpoint(checkpoint, saved, config=config, z=z)

    def _run_phase(phase, n_target, adapt_step, adapt_pi):
        for c in range(n_chains):
            st = saved["states"][c]
            while saved["done"][c] < n_target:
                n = min(checkpoint_every, n_target - saved["done"][c])
                stats = saved["stats_w" if phase == "warmup" else "stats_s"][c]
                qs, ev, lp = run_chain(ctx, st, n, adapt_step=adapt_step, adapt_pi=adapt_pi,
                                       stats=stats, progress=prog, engine=_engine, **kw)
                saved["ev"][c].append(ev)
                if phase == "warmup":
                    saved["wq"][c].append(qs)
                    saved["wpi"][c].append(lp)
                else:
                    saved["sq"][c].append(qs)
                saved["done"][c] += n
                _save()
                yield phase

    try:
        if saved["phase"] == "warmup":
            yield from _run_phase("warmup", n_warmup, True, fixed_pi is None)
            if fixed_pi is None:
                finals = np.array([st.log_pi for st in saved["states"]])
                pi_fix = finals.mean(axis=0)
                pi_fix -= logsumexp(pi_fix)
            else:
                pi_fix = fixed_pi
            saved["fixed_pi"] = pi_fix
            for st in saved["states"]:
                st.log_pi[:] = pi_fix
                st.t = 0
            saved["phase"] = "sample"
            saved["done"] = [0] * n_chains
            _save()
        yield from _run_phase("sample", n_iterations, False, False)
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
    ess, rhat, ess_ind = q_diagnostics(q_vals, orders)
    if np.isfinite(ess) and ess < 100:
        warnings.warn(f"ESS of q is {ess:.0f} (< 100): run more iterations", LowESSWarning,
                      stacklevel=4)  # user -> select_order -> drain -> here
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
        chain_wall_time_s=float(sum(s["wall_s"] for s in allst)),
        sampling_wall_time_s=float(sum(s["wall_s"] for s in ss)),
        sampling_cpu_time_s=float(sum(s["cpu_s"] for s in ss)),
    )
