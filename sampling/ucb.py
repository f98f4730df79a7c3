"""Adapted lil'UCB for a finite reward population (Chen & Ghahramani 2016, Sec. 3.2).

lil'UCB (Jamieson et al. 2014) pulls, one reward at a time, the arm with the largest
upper confidence bound

    mu_hat_i + (1 + beta)(1 + sqrt(eps)) sqrt(2 sigma_i^2 (1 + eps) log(log((1 + eps) T_i) / delta) / T_i)

and stops when some arm has been pulled ``T_i >= 1 + lam * sum_{j != i} T_j`` times
(the original rule). Sec. 3.2 adapts it to a finite population:

1. each arm's rewards are drawn without replacement (arms independent of each other);
2. when ``T_i = N`` the mean is exact and the UCB is set to it;
3. the algorithm also stops when the arm with the highest UCB has an exact mean.

So ``sum_i T_i <= N D`` always (Prop. 2).
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from sampling.utils.rng import as_generator
from sampling.control_variates import check_control_variate
from sampling._race_core import (
    IndexSampler, check_delta, check_gumbels, check_int, check_problem, kernels,
)
from sampling.racing import RaceResult

__all__ = ["lil_ucb"]


def _check_positive(value, name, allow_zero=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise TypeError(f"the {name} parameter of lil_ucb must be a finite real number; got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"the {name} parameter of lil_ucb must be {'>=' if allow_zero else '>'} 0; got {value!r}")
    return float(value)


def lil_ucb(
    log_f,
    log_f0,
    n_data,
    *,
    delta=0.05,
    reward_range=None,
    sigma=None,
    epsilon=0.0,
    beta=0.5,
    lam=None,
    gumbels=None,
    rng=None,
    control_variate=None,
    chunk_size=64,
):
    """Draw one state of ``p(x) ∝ f0(x) prod_n f_n(x)`` with adapted lil'UCB.

    Parameters
    ----------
    log_f : callable
        ``log_f(states, idx) -> ndarray of shape (len(states), len(idx))`` (see
        :func:`sampling.race`).
    log_f0 : array_like of shape (n_states,)
        ``log f0(i)``; ``-inf`` states are never drawn.
    n_data : int
        ``N``.
    delta : float in (0, 1), default 0.05
        Confidence parameter of the bound.
    reward_range : float or array_like of shape (n_states,), optional
        ``C_i``; the sub-Gaussian scale is ``sigma_i = C_i / 2`` as in Sec. 5.1.
    sigma : float or array_like of shape (n_states,), optional
        The scale ``sigma_i`` directly. One of ``reward_range`` / ``sigma`` is required.
    epsilon, beta : float, default 0 and 0.5
        lil'UCB parameters (the heuristic setting of Jamieson et al. 2014, Sec. 5,
        which also uses ``delta / 5`` inside the bound; we do the same). With
        ``epsilon = 0`` an arm pulled once has an infinite UCB (``log log 1``).
    lam : float, optional
        Stop-rule parameter ``lambda``; default ``1 + 10 / D`` (same heuristic).
    gumbels : array_like of shape (n_states,), optional
        Gumbel noise ``eps_i``; drawn from ``rng`` if omitted.
    rng : None, int or numpy.random.Generator
    control_variate : ControlVariate or (proxy, mean), optional
        As in :func:`sampling.race` (Eq. 11).
    chunk_size : int, default 64
        ``log_f`` is called for up to ``max(chunk_size, T_i / 8)`` not-yet-pulled
        indices of one arm at a time; ``n_evals`` counts pulled rewards only
        (the at most ``chunk_size + T_i / 8`` extra values per arm are not counted).

    Returns
    -------
    RaceResult
        ``n_evals = sum_i T_i``; ``n_rounds`` = number of pulls; ``exact`` is True
        when the stop came from an exact mean (adaptation 3);
        ``pulls_per_arm`` holds the ``T_i``.

    Raises
    ------
    TypeError, ValueError
        On bad arguments (as :func:`sampling.race`), or if neither ``reward_range``
        nor ``sigma`` is given.

    References
    ----------
    .. [1] Chen & Ghahramani (2016), ICML, Sec. 3.2 and Prop. 2.
    .. [2] Jamieson, Malloy, Nowak & Bubeck (2014), "lil'UCB: an optimal exploration
       algorithm for multi-armed bandits", COLT.
    """
    func = "lil_ucb"
    f0 = check_problem(log_f, log_f0, func)
    n_states = f0.shape[0]
    n_data = check_int(n_data, "n_data", func, 1)
    delta = check_delta(delta, func)
    chunk_size = check_int(chunk_size, "chunk_size", func, 1)
    eps_ = _check_positive(epsilon, "epsilon", allow_zero=True)
    beta = _check_positive(beta, "beta")
    lam = 1.0 + 10.0 / n_states if lam is None else _check_positive(lam, "lam")
    if sigma is None and reward_range is None:
        raise ValueError(
            f"the reward_range (or sigma) parameter of {func} is required: lil'UCB needs the "
            "sub-Gaussian scale sigma_i = C_i / 2 of the rewards"
        )
    scale = np.asarray(sigma if sigma is not None else reward_range, dtype=np.float64)
    if scale.ndim == 0:
        scale = np.full(n_states, float(scale))
    if scale.shape != (n_states,) or not np.all(np.isfinite(scale)) or np.any(scale < 0):
        raise ValueError(
            f"the {'sigma' if sigma is not None else 'reward_range'} parameter of {func} must be a finite, "
            f"non-negative scalar or shape ({n_states},) array; got shape {scale.shape}"
        )
    if sigma is None:
        scale = scale / 2.0
    cv = check_control_variate(control_variate, n_states, func)
    gen = as_generator(rng)
    eps = check_gumbels(gumbels, n_states, gen, func)
    offset = (f0 + eps) / n_data
    active = np.isfinite(offset).astype(np.uint8)
    arms = np.flatnonzero(active)
    if arms.shape[0] == 1:
        mean = np.where(active, np.nan, -np.inf)
        return RaceResult(state=int(arms[0]), n_evals=0, n_rounds=0, survivors_per_round=(), exact=True,
                          n_seen=0, n_states=n_states, n_data=n_data, mean_estimates=mean, gumbels=eps,
                          pulls_per_arm=np.zeros(n_states, dtype=np.int64))

    cap = max(chunk_size, n_data // 8 + 1)
    cap = min(cap, n_data)
    buf = np.zeros((n_states, cap))
    buf_len = np.zeros(n_states, dtype=np.int64)
    buf_pos = np.zeros(n_states, dtype=np.int64)
    pulls = np.zeros(n_states, dtype=np.int64)
    sums = np.zeros(n_states)
    samplers = {int(i): IndexSampler(n_data, gen) for i in arms}

    def refill(i):
        k = min(max(chunk_size, int(pulls[i]) // 8), n_data - samplers[i].n_used, cap)
        idx = samplers[i].draw(k)
        state = np.array([i], dtype=np.int64)
        vals = np.asarray(log_f(state, idx), dtype=np.float64)
        if vals.shape != (1, k):
            raise ValueError(
                f"the log_f callable of {func} must return shape (len(states), len(idx)) = (1, {k}); "
                f"got {vals.shape} instead"
            )
        vals = vals[0] + offset[i]
        if cv is not None:
            h = np.asarray(cv.proxy(state, idx), dtype=np.float64).reshape(-1)
            vals = vals - h + cv.mean[i]
        if np.isnan(vals).any() or np.isposinf(vals).any():
            raise ValueError(f"{func}: the rewards (log_f values) contain NaN or +inf")
        buf[i, :k] = vals
        buf_len[i], buf_pos[i] = k, 0
        if np.isneginf(vals).any():
            active[i] = 0  # a zero factor: probability zero

    for i in arms:  # pull every arm once
        refill(int(i))
        if active[i]:
            pulls[i], sums[i], buf_pos[i] = 1, buf[i, 0], 1
    if not active.any():
        raise ValueError(f"{func}: every state has zero probability (log_f is -inf for all of them)")
    while True:
        if active.sum() == 1:
            status, best = 1, int(np.flatnonzero(active)[0])
            break
        status, best = kernels.lil_ucb_run(buf, buf_len, buf_pos, pulls, sums, active, scale, n_data,
                                            eps_, beta, lam, delta / 5.0)
        if status != 2:
            break
        refill(int(best))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(pulls > 0, sums / np.maximum(pulls, 1), np.nan)
    mean[active == 0] = -np.inf
    n_evals = int(pulls.sum())
    return RaceResult(
        state=int(best), n_evals=n_evals, n_rounds=n_evals, survivors_per_round=(), exact=bool(status == 1),
        n_seen=int(pulls.max()), n_states=n_states, n_data=n_data, mean_estimates=mean, gumbels=eps,
        pulls_per_arm=pulls.copy(),
    )
