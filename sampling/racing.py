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

The engine :func:`_race_core` is shared with :func:`sampling.mh_accept` (two arms,
Eq. 12). Hot loops live in the Cython module :mod:`sampling._racing`.
"""
from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass, field

import numpy as np

from sampling._rng import as_generator
from sampling.bounds_normal import b_normal, schedule_proportions
from sampling.control_variates import check_control_variate
from sampling.exceptions import PerformanceWarning

try:
    from sampling import _racing as _kernels
except ImportError:  # pragma: no cover - only when the extension is not built
    from sampling import _racing_py as _kernels

    warnings.warn(
        "sampling._racing is not compiled; using the slow pure-Python twin "
        "(build with `cythonize -i -3 sampling/_racing.pyx` or pip install)",
        PerformanceWarning,
        stacklevel=2,
    )

__all__ = ["race", "RaceResult", "KAPPA_EBS", "ebs_coefficients", "normal_coefficient"]

#: kappa of the empirical Bernstein-Serfling bound (Eq. 6)
KAPPA_EBS = 7.0 / 3.0 + 3.0 / math.sqrt(2.0)

_BOUNDS = ("normal", "ebs")
#: pairwise sums of squares below this fraction of G_aa + G_bb are recomputed directly
_GRAM_RTOL = 1e-6
_VARIANCES = ("pairwise", "marginal")


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


# ----------------------------------------------------------------- validation
def _check_int(value, name, func, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"the {name} parameter of {func} must be an int; got {type(value).__name__} instead")
    value = int(value)
    if value < minimum:
        raise ValueError(f"the {name} parameter of {func} must be >= {minimum}; got {value} instead")
    return value


def _check_delta(delta, func):
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise TypeError(f"the delta parameter of {func} must be a real number; got {type(delta).__name__} instead")
    delta = float(delta)
    if not (0.0 < delta < 1.0):
        raise ValueError(f"the delta parameter of {func} must be in (0, 1); got {delta!r} instead")
    return delta


def _check_choice(value, name, func, options):
    if value not in options:
        raise ValueError(f"the {name} parameter of {func} must be one of {options}; got {value!r} instead")
    return value


def _check_common(n_data, delta, first_batch, bound, variance, func):
    n_data = _check_int(n_data, "n_data", func, 1)
    delta = _check_delta(delta, func)
    first_batch = _check_int(first_batch, "first_batch", func, 2 if n_data >= 2 else 1)
    if first_batch > n_data:
        raise ValueError(
            f"the first_batch parameter of {func} must be <= n_data={n_data}; got {first_batch} instead"
        )
    _check_choice(bound, "bound", func, _BOUNDS)
    _check_choice(variance, "variance", func, _VARIANCES)
    return n_data, delta, first_batch


def _check_reward_range(reward_range, n_states, bound, func):
    if reward_range is None:
        if bound == "ebs":
            raise ValueError(
                f"the reward_range parameter of {func} is required with bound='ebs' "
                "(C_i = max_n l_{i,n} - min_n l_{i,n}, Eq. 6); got None"
            )
        return np.zeros(n_states)
    c = np.asarray(reward_range, dtype=np.float64)
    if c.ndim == 0:
        c = np.full(n_states, float(c))
    if c.shape != (n_states,):
        raise ValueError(
            f"the reward_range parameter of {func} must be a scalar or have shape ({n_states},); "
            f"got shape {c.shape} instead"
        )
    if not np.all(np.isfinite(c)) or np.any(c < 0):
        raise ValueError(f"the reward_range parameter of {func} must be finite and >= 0")
    return c


def _check_log_f0(log_f0, func):
    try:
        f0 = np.asarray(log_f0, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"the log_f0 parameter of {func} must be array-like of reals") from exc
    if f0.ndim != 1 or f0.shape[0] == 0:
        raise ValueError(f"the log_f0 parameter of {func} must be a non-empty 1-D array; got shape {f0.shape}")
    if np.isnan(f0).any() or np.isposinf(f0).any():
        raise ValueError(f"the log_f0 parameter of {func} must not contain NaN or +inf")
    if np.isneginf(f0).all():
        raise ValueError(f"the log_f0 parameter of {func} is all -inf (every state has zero probability)")
    return f0


def _check_gumbels(gumbels, n_states, gen, func):
    if gumbels is None:
        return gen.gumbel(size=n_states)
    g = np.asarray(gumbels, dtype=np.float64)
    if g.shape != (n_states,):
        raise ValueError(
            f"the gumbels parameter of {func} must have shape ({n_states},) like log_f0; got {g.shape} instead"
        )
    if not np.all(np.isfinite(g)):
        raise ValueError(f"the gumbels parameter of {func} must be finite")
    return g


# ----------------------------------------------------------------- bounds
def normal_coefficient(n_seen, n_data, b):
    """``G / sigma_hat`` of Eq. 9: ``(1 - (T-1)/(N-1))**0.5 / sqrt(T) * B``."""
    if n_seen >= n_data:
        return 0.0
    fpc = 1.0 - (n_seen - 1.0) / (n_data - 1.0)
    return math.sqrt(max(fpc, 0.0) / n_seen) * b


def ebs_coefficients(n_seen, n_data, delta_round):
    """``(coef_sd, coef_c)`` with ``B_EBS = coef_sd * sigma_hat + coef_c * C`` (Eq. 6).

    ``rho_n = 1 - pi_{n-1}`` if ``n <= N/2`` else ``(1 - pi_n)(1 + 1/n)``, and
    ``log(5/delta_round)``; ``delta_round = delta / D' / (t* - 1)`` (Eq. 7).
    """
    if n_seen >= n_data:
        return 0.0, 0.0
    n, big_n = float(n_seen), float(n_data)
    rho = 1.0 - (n - 1.0) / big_n if n <= big_n / 2.0 else (1.0 - n / big_n) * (1.0 + 1.0 / n)
    log_term = math.log(5.0 / delta_round)
    return math.sqrt(2.0 * rho * log_term / n), KAPPA_EBS * log_term / n


# ----------------------------------------------------------------- index sampling
class _IndexSampler:
    """Draw disjoint mini-batches of ``[0, N)`` without replacement, cost O(T) early on.

    While at most 80% of the indices are used, it draws i.i.d. uniform candidates and
    keeps the distinct unused ones (a rule that depends only on positions and equalities,
    so by exchangeability the kept set is a uniform random subset of the unused indices);
    past that it chooses among the unused ones, and a batch that takes the whole
    remainder (the last round of the doubling schedule) just takes it.
    """

    def __init__(self, n_data, gen):
        self.n = n_data
        self.gen = gen
        self.used = np.zeros(n_data, dtype=bool)
        self.n_used = 0
        self._stamp = None

    def draw(self, m):
        n, gen = self.n, self.gen
        left = n - self.n_used
        if m >= left:  # the last round takes the whole remainder (already sorted)
            out = np.flatnonzero(~self.used)
        elif self.n_used + m <= (4 * n) // 5:
            if self._stamp is None:
                self._stamp = np.empty(n, dtype=np.int64)
            parts, got = [], 0
            while got < m:
                need = m - got
                free = (n - self.n_used - got) / n  # acceptance rate of a uniform candidate
                cand = gen.integers(0, n, size=int(need / free * 1.25) + 8)
                cand = cand[~self.used[cand]]
                pos = np.arange(cand.shape[0])
                self._stamp[cand] = pos
                cand = cand[self._stamp[cand] == pos][:need]  # one copy of each value
                self.used[cand] = True
                parts.append(cand)
                got += cand.shape[0]
            out = np.sort(parts[0] if len(parts) == 1 else np.concatenate(parts))
        else:
            out = np.sort(gen.choice(np.flatnonzero(~self.used), size=m, replace=False))
        self.used[out] = True
        self.n_used += m
        return out  # sorted: the batch is a set, and sorted indices make gathers cache-friendly


# ----------------------------------------------------------------- the engine
def _race_core(reward_fn, offset, n_data, *, delta, bound, variance, first_batch, c_range, gen, func):
    """Alg. 1 on validated inputs.

    ``reward_fn(arms, idx)`` returns the (len(arms), len(idx)) float64 rewards of arm
    ids ``arms`` minus a per-arm constant ``offset`` (D,) (which changes neither
    variances nor pairwise variances, so it is only added to the means); arms with a
    ``-inf`` offset can never win. Returns
    ``(leader, n_evals, survivors_per_round, exact, n_seen, mean)`` with the means of
    the full rewards.
    """
    active = np.isfinite(offset)
    n_states = active.shape[0]
    arms = np.flatnonzero(active).astype(np.int64)
    mean = np.full(n_states, np.nan)
    mean[~active] = -np.inf
    if arms.shape[0] == 1:
        return int(arms[0]), 0, (), True, 0, mean
    offset = np.where(active, offset, 0.0)
    mean[arms] = 0.0
    m2 = np.zeros(n_states)
    pairwise = variance == "pairwise"
    pair_m2 = np.zeros((n_states, n_states)) if pairwise else np.zeros((1, 1))
    work = np.empty(n_states)
    d_prime = arms.shape[0] - 1 if pairwise else arms.shape[0]
    pi1 = first_batch / n_data
    n_bound_rounds = schedule_proportions(pi1).shape[0] if first_batch < n_data else 0
    if bound == "normal" and n_bound_rounds:
        b = b_normal(delta / d_prime, pi1)
    delta_round = delta / d_prime / max(n_bound_rounds, 1)
    sampler = _IndexSampler(n_data, gen)
    n_seen, n_evals, survivors = 0, 0, []
    leader = int(arms[0])
    while True:
        m = first_batch if n_seen == 0 else min(n_seen, n_data - n_seen)
        idx = sampler.draw(m)
        rewards = reward_fn(arms, idx)
        if rewards.shape != (arms.shape[0], m):
            raise ValueError(
                f"the log_f callable of {func} must return an array of shape (len(states), len(idx)) = "
                f"({arms.shape[0]}, {m}); got {rewards.shape} instead"
            )
        finite = np.isfinite(rewards).all()
        if not finite and (np.isnan(rewards).any() or np.isposinf(rewards).any()):
            raise ValueError(f"{func}: the rewards (log_f values) contain NaN or +inf")
        n_evals += arms.shape[0] * m
        survivors.append(int(arms.shape[0]))
        dead = np.zeros(arms.shape[0], dtype=bool) if finite else np.isneginf(rewards).any(axis=1)
        if dead.any():  # some f_n(i) = 0: the arm has probability zero
            mean[arms[dead]] = -np.inf
            arms, rewards = arms[~dead], rewards[~dead]
            if arms.shape[0] == 0:
                raise ValueError(f"{func}: every state has zero probability (log_f is -inf for all of them)")
        rewards = np.ascontiguousarray(rewards, dtype=np.float64)
        if pairwise:  # O(k^2 m) through BLAS; exact fallback for strongly correlated pairs
            block_mean = rewards.mean(axis=1)
            centred = rewards - block_mean[:, None]
            gram = np.ascontiguousarray(centred @ centred.T)
            _kernels.merge_pairs(rewards, arms, n_seen, mean, block_mean, gram, pair_m2, _GRAM_RTOL)
            # per-arm moments from the Gram diagonal (same Chan et al. update as merge_block)
            shift = block_mean - mean[arms]
            m2[arms] += np.diag(gram) + shift * shift * (n_seen * m / (n_seen + m))
            mean[arms] += shift * (m / (n_seen + m))
        else:
            _kernels.merge_block(rewards, arms, n_seen, mean, m2, pair_m2, False, work)
        n_seen += m
        if arms.shape[0] == 1:  # only one state left with non-zero probability
            return int(arms[0]), n_evals, tuple(survivors), True, n_seen, mean + offset
        full_mean = mean + offset
        if n_seen >= n_data:
            leader = int(arms[np.argmax(full_mean[arms])])
            return leader, n_evals, tuple(survivors), True, n_seen, full_mean
        if bound == "normal":
            coef_sd, coef_c = normal_coefficient(n_seen, n_data, b), 0.0
        else:
            coef_sd, coef_c = ebs_coefficients(n_seen, n_data, delta_round)
        alive = np.empty(arms.shape[0], dtype=np.uint8)
        leader = int(_kernels.eliminate(full_mean, m2, pair_m2, arms, n_seen, coef_sd, coef_c, c_range,
                                        pairwise, alive))
        arms = arms[alive.astype(bool)]
        if arms.shape[0] == 1:
            break
    return leader, n_evals, tuple(survivors), False, n_seen, full_mean


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
    if not callable(log_f):
        raise TypeError(f"the log_f parameter of {func} must be callable; got {type(log_f).__name__} instead")
    f0 = _check_log_f0(log_f0, func)
    n_states = f0.shape[0]
    n_data, delta, first_batch = _check_common(n_data, delta, first_batch, bound, variance, func)
    c_range = _check_reward_range(reward_range, n_states, bound, func)
    cv = check_control_variate(control_variate, n_states, func)
    gen = as_generator(rng)
    eps = _check_gumbels(gumbels, n_states, gen, func)
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

    leader, n_evals, survivors, exact, n_seen, mean = _race_core(
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
