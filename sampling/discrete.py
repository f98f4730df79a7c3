"""One front door for sampling a discrete variable ``p(x) ∝ f0(x) prod_n f_n(x)``.

``method`` picks the exact Gumbel-max sampler (all ``N D`` factors) or one of the
approximate best-arm algorithms of Chen & Ghahramani (2016): Racing-Normal,
Racing-EBS (Alg. 1) or adapted lil'UCB (Sec. 3.2).
"""
from __future__ import annotations

import numpy as np

from sampling.utils.rng import as_generator
from sampling.ucb import lil_ucb
from sampling._race_core import check_delta, check_gumbels, check_int, check_problem
from sampling.racing import RaceResult, race

__all__ = ["sample_discrete", "exact_race", "METHODS"]

METHODS = ("racing-normal", "racing-ebs", "lil-ucb", "exact")


def exact_race(log_f, log_f0, n_data, *, gumbels=None, rng=None, chunk_size=65536):
    """The exact Gumbel-max draw ``argmax_i sum_n log f_n(i) + log f0(i) + eps_i`` (Eq. 3).

    Evaluates every factor (``n_evals = D_active * N``), in chunks of ``chunk_size``
    data indices to bound memory. Returns a :class:`RaceResult` with ``exact=True``.

    Raises
    ------
    TypeError, ValueError
        On bad arguments or ``log_f`` output of the wrong shape / with NaN or +inf.
    """
    func = "sample_discrete"
    f0 = check_problem(log_f, log_f0, func)
    n_states = f0.shape[0]
    n_data = check_int(n_data, "n_data", func, 1)
    chunk_size = check_int(chunk_size, "chunk_size", func, 1)
    gen = as_generator(rng)
    eps = check_gumbels(gumbels, n_states, gen, func)
    arms = np.flatnonzero(np.isfinite(f0)).astype(np.int64)
    totals = np.full(n_states, -np.inf)
    totals[arms] = 0.0
    for start in range(0, n_data, chunk_size):
        idx = np.arange(start, min(start + chunk_size, n_data), dtype=np.int64)
        vals = np.asarray(log_f(arms, idx), dtype=np.float64)
        if vals.shape != (arms.shape[0], idx.shape[0]):
            raise ValueError(
                f"the log_f callable of {func} must return shape (len(states), len(idx)) = "
                f"({arms.shape[0]}, {idx.shape[0]}); got {vals.shape} instead"
            )
        if np.isnan(vals).any() or np.isposinf(vals).any():
            raise ValueError(f"{func}: the rewards (log_f values) contain NaN or +inf")
        totals[arms] += vals.sum(axis=1)
    score = totals + f0 + eps
    if np.isneginf(score).all():
        raise ValueError(f"{func}: every state has zero probability (log_f is -inf for all of them)")
    state = int(np.argmax(score))
    return RaceResult(
        state=state, n_evals=int(arms.shape[0] * n_data), n_rounds=1, survivors_per_round=(int(arms.shape[0]),),
        exact=True, n_seen=n_data, n_states=n_states, n_data=n_data, mean_estimates=score / n_data, gumbels=eps,
    )


def sample_discrete(log_f, log_f0, n_data, *, method="racing-normal", delta=0.05, rng=None,
                    control_variate=None, **kw):
    """Draw one state of ``p(x) ∝ f0(x) prod_{n=1}^N f_n(x)``.

    Parameters
    ----------
    log_f : callable
        ``log_f(states, idx) -> ndarray of shape (len(states), len(idx))`` of
        ``log f_n(i)`` (natural log).
    log_f0 : array_like of shape (n_states,)
        ``log f0(i)``.
    n_data : int
        ``N``.
    method : {"racing-normal", "racing-ebs", "lil-ucb", "exact"}
        Sampler; the approximate ones have total-variation error at most ``delta``.
    delta : float in (0, 1), default 0.05
        Ignored by ``"exact"``.
    rng : None, int or numpy.random.Generator
    control_variate : ControlVariate or (proxy, mean), optional
        Eq. 11 proxy; ignored by ``"exact"`` (it does not change the exact sum).
    **kw
        Passed on: ``variance``, ``first_batch``, ``reward_range``, ``gumbels`` for
        racing (:func:`sampling.race`); ``reward_range``/``sigma``, ``epsilon``,
        ``beta``, ``lam``, ``gumbels`` for :func:`sampling.lil_ucb`; ``gumbels``,
        ``chunk_size`` for ``"exact"``.

    Returns
    -------
    RaceResult
        ``.state`` is the sample; ``.n_evals`` counts factor evaluations.

    Raises
    ------
    ValueError
        On an unknown ``method`` or bad arguments (see :func:`sampling.race`).

    References
    ----------
    .. [1] Chen & Ghahramani (2016), ICML, Eq. 2-3, Sec. 3.2, Alg. 1.

    Examples
    --------
    >>> import numpy as np
    >>> from sampling import sample_discrete
    >>> data = np.random.default_rng(1).normal(size=5000)
    >>> means = np.array([-1.0, 0.0, 1.0])
    >>> log_f = lambda s, idx: -0.5 * (data[idx][None, :] - means[s][:, None]) ** 2
    >>> sample_discrete(log_f, np.zeros(3), data.size, method="exact", rng=0).state
    1
    """
    if method not in METHODS:
        raise ValueError(f"the method parameter of sample_discrete must be one of {METHODS}; got {method!r} instead")
    if method == "exact":
        return exact_race(log_f, log_f0, n_data, rng=rng, **kw)
    delta = check_delta(delta, "sample_discrete")
    if method == "lil-ucb":
        return lil_ucb(log_f, log_f0, n_data, delta=delta, rng=rng, control_variate=control_variate, **kw)
    bound = "normal" if method == "racing-normal" else "ebs"
    return race(log_f, log_f0, n_data, delta=delta, bound=bound, rng=rng, control_variate=control_variate, **kw)
