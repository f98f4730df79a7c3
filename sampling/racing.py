"""Racing with a finite reward population (Chen & Ghahramani 2016, Alg. 1).

To draw ``X ~ p(x) ∝ f0(x) prod_n f_n(x)`` over ``D`` states, add Gumbel noise
``eps_i`` and find the arm with the largest mean of the rewards

    l_{i,n} = log f_n(i) + (log f0(i) + eps_i) / N,        n = 1..N       (Eq. 3)

Racing draws a shared mini-batch of data indices without replacement on the
doubling schedule ``T(t) = 2 T(t-1)`` (``T(1) = first_batch``, the last round
reaches ``T = N`` and is exact) and eliminates arm ``i`` when the gap
``mu_hat_x - mu_hat_i`` to the leader exceeds an uncertainty bound ``G``:

* ``bound="normal"`` (Racing-Normal, Eq. 9):
  ``G = sigma_hat / sqrt(T) * (1 - (T-1)/(N-1))**0.5 * B_Normal(delta / D', T(1)/N)``;
* ``bound="ebs"`` (Racing-EBS, Eq. 6-7): the empirical Bernstein-Serfling bound at
  level ``delta / D' / (t* - 1)``, which needs the reward range ``C``;

with ``D' = D - 1`` and the pairwise standard deviation ``sigma_hat_{x,i}`` of the
reward differences (``variance="pairwise"``, default) or ``D' = D`` and
``G(sigma_x) + G(sigma_i)`` (``variance="marginal"``, O(D T) instead of O(D^2 T)).

The engine, validators, index samplers and compiled kernels live in the private
core :mod:`sampling._race_core`, shared by design with :func:`sampling.mh_accept`
(two arms, Eq. 12), :func:`sampling.lil_ucb`, :func:`sampling.sample_discrete` and
the ARCH chain. Hot loops live in the Cython module :mod:`sampling._racing`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sampling._race_core import (
    KAPPA_EBS, check_common, check_gumbels, check_problem, check_reward_range, ebs_coefficients,
    normal_coefficient, run_race,
)
from sampling.utils.rng import as_generator
from sampling.control_variates import check_control_variate

__all__ = ["race", "RaceResult", "KAPPA_EBS", "ebs_coefficients", "normal_coefficient"]


@dataclass(frozen=True)
class RaceResult:
    """Outcome of one race (one approximate Gumbel-max draw).

    Attributes
    ----------
    state : int
        The selected arm (the sample of ``X``), in ``[0, n_states)``.
    n_evals : int
        Number of rewards ``l_{i,n}`` computed (sum over rounds of survivors times
        mini-batch size); the exact sampler computes ``n_states * n_data``.
    n_rounds : int
        Rounds (mini-batches) used.
    survivors_per_round : tuple of int
        Arms evaluated in each round (before that round's elimination).
    exact : bool
        True if the race reached ``T = N`` (the answer is then the exact argmax),
        or only one state had non-zero probability.
    n_seen : int
        Data indices touched, ``T`` at the stop, in ``[first_batch, n_data]``.
    n_states, n_data : int
        Problem size ``D`` and ``N``.
    mean_estimates : ndarray of shape (n_states,)
        Last running mean ``mu_hat_i`` of every arm (``-inf`` for zero-probability
        states, ``nan`` for arms never evaluated).
    gumbels : ndarray of shape (n_states,)
        The Gumbel noise ``eps_i`` used.
    pulls_per_arm : ndarray of shape (n_states,) or None
        Rewards drawn per arm (:func:`sampling.lil_ucb` only; Racing shares one
        mini-batch so it is ``None`` there).
    """

    state: int
    n_evals: int
    n_rounds: int
    survivors_per_round: tuple
    exact: bool
    n_seen: int
    n_states: int
    n_data: int
    mean_estimates: np.ndarray = field(repr=False)
    gumbels: np.ndarray = field(repr=False)
    pulls_per_arm: np.ndarray | None = field(default=None, repr=False)

    @property
    def fraction_evaluated(self) -> float:
        """``n_evals / (n_states * n_data)``: proportion of the rewards used."""
        return self.n_evals / float(self.n_states * self.n_data)


def race(
    log_f,
    log_f0,
    n_data,
    *,
    delta=0.05,
    bound="normal",
    variance="pairwise",
    first_batch=50,
    reward_range=None,
    gumbels=None,
    rng=None,
    control_variate=None,
):
    """Draw one state of ``p(x) ∝ f0(x) prod_n f_n(x)`` by Racing (Alg. 1).

    Parameters
    ----------
    log_f : callable
        ``log_f(states, idx) -> ndarray of shape (len(states), len(idx))`` with
        ``log f_n(i)`` (natural log) for state indices ``states`` (int64 array) and
        data indices ``idx`` (int64 array, in ``[0, n_data)``). ``-inf`` marks a
        zero factor; NaN and +inf are errors.
    log_f0 : array_like of shape (n_states,)
        ``log f0(i)``, e.g. the log prior; ``-inf`` states are never drawn.
    n_data : int
        ``N``, the number of factors ``f_n``.
    delta : float in (0, 1), default 0.05
        Allowed probability of returning another state than the exact Gumbel-max
        answer for the same Gumbels; the sample's total variation from ``p`` is at
        most ``delta`` (Prop. 1).
    bound : {"normal", "ebs"}, default "normal"
        Racing-Normal (Eq. 9) or Racing-EBS (Eq. 6-7).
    variance : {"pairwise", "marginal"}, default "pairwise"
        Standard deviation of reward differences against the leader (``D' = D-1``)
        or per-arm standard deviations (``D' = D``).
    first_batch : int, default 50
        ``T(1) = m(1)``, in ``[2, n_data]``.
    reward_range : float or array_like of shape (n_states,), optional
        ``C_i = max_n l_{i,n} - min_n l_{i,n}``; required for ``bound="ebs"``.
    gumbels : array_like of shape (n_states,), optional
        The Gumbel noise ``eps_i``; drawn from ``rng`` if omitted. Passing it lets
        a caller compare with the exact answer on the same noise.
    rng : None, int or numpy.random.Generator
        Source of the Gumbels and of the mini-batches.
    control_variate : ControlVariate or (proxy, mean), optional
        Proxy ``h(states, idx)`` with known population means ``mean`` of shape
        ``(n_states,)``; rewards become ``l - h + mean`` (Eq. 11).

    Returns
    -------
    RaceResult
        ``.state``, ``.n_evals``, ``.n_rounds``, ``.survivors_per_round``,
        ``.exact`` and diagnostics.

    Raises
    ------
    TypeError
        If ``log_f`` is not callable or a numeric argument has the wrong type.
    ValueError
        If ``delta`` is not in (0, 1), ``first_batch`` is not in ``[2, n_data]``,
        ``bound`` / ``variance`` are unknown, shapes mismatch, ``reward_range`` is
        missing for EBS, or ``log_f`` returns NaN / +inf or the wrong shape.

    Notes
    -----
    Rewards ``l_{i,n} = log f_n(i) + (log f0(i) + eps_i) / N`` (Eq. 3). The
    schedule is ``T(t) = min(2 T(t-1), N)``, ``t* = ceil(log2(N / m1)) + 1``;
    ``G = 0`` at ``T = N`` so the race always ends with the right answer by then.
    With ``bound="normal"`` the result relies on the normal approximation of
    Assumption 6.

    References
    ----------
    .. [1] Chen & Ghahramani (2016), "Scalable Discrete Sampling as a Multi-Armed
       Bandit Problem", ICML: Eq. 3, Alg. 1, Eq. 6-9, Eq. 11.

    Examples
    --------
    >>> import numpy as np
    >>> from sampling import race
    >>> data = np.random.default_rng(1).normal(size=10_000)
    >>> means = np.array([-0.5, 0.0, 0.5])
    >>> log_f = lambda s, idx: -0.5 * (data[idx][None, :] - means[s][:, None]) ** 2
    >>> res = race(log_f, np.zeros(3), data.size, rng=0)
    >>> res.state, res.exact
    (1, False)
    """
    func = "race"
    f0 = check_problem(log_f, log_f0, func)
    n_states = f0.shape[0]
    n_data, delta, first_batch = check_common(n_data, delta, first_batch, bound, variance, func)
    c_range = check_reward_range(reward_range, n_states, bound, func)
    cv = check_control_variate(control_variate, n_states, func)
    gen = as_generator(rng)
    eps = check_gumbels(gumbels, n_states, gen, func)
    offset = (f0 + eps) / n_data  # (log f0(i) + eps_i) / N, constant over n (Eq. 3)
    active = np.isfinite(offset)
    if cv is not None:
        offset = offset + np.where(active, cv.mean, 0.0)

    def reward_fn(arms, idx):
        vals = np.asarray(log_f(arms, idx), dtype=np.float64)
        if vals.shape != (arms.shape[0], idx.shape[0]):
            raise ValueError(
                f"the log_f callable of {func} must return shape (len(states), len(idx)) = "
                f"({arms.shape[0]}, {idx.shape[0]}); got {vals.shape} instead"
            )
        if cv is not None:
            h = np.asarray(cv.proxy(arms, idx), dtype=np.float64)
            if h.shape != vals.shape:
                raise ValueError(
                    f"the control_variate proxy of {func} must return shape {vals.shape}; got {h.shape} instead"
                )
            vals = vals - h  # the residual reward l - h + E[h] (Eq. 11); E[h] is in ``offset``
        return vals

    leader, n_evals, survivors, exact, n_seen, mean = run_race(
        reward_fn, offset, n_data, delta=delta, bound=bound, variance=variance,
        first_batch=first_batch, c_range=c_range, gen=gen, func=func,
    )
    if active.sum() == 1:
        exact = True
    return RaceResult(
        state=leader, n_evals=n_evals, n_rounds=len(survivors), survivors_per_round=survivors,
        exact=exact, n_seen=n_seen, n_states=n_states, n_data=n_data,
        mean_estimates=mean, gumbels=eps,
    )
