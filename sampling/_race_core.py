"""The racing core shared by every racing sampler of the package (private).

One place for what :func:`sampling.race`, :func:`sampling.lil_ucb`,
:func:`sampling.mh_accept`, :func:`sampling.sample_discrete` and the ARCH chain
(:mod:`sampling.arch`) have in common (Chen & Ghahramani 2016, Alg. 1):

* the argument validators (each message names the parameter, the function, what
  was expected and what was received);
* the racing bounds' coefficients (Eq. 6-9);
* the mini-batch index samplers (:class:`IndexSampler`, :class:`PermutationSampler`);
* the engine :func:`run_race` (Alg. 1 on validated inputs);
* the compiled kernels :data:`kernels` (``sampling._racing``, imported through
  :func:`sampling.utils.kernels.load_kernel`: an unbuilt tree raises an ImportError that
  says how to build; the pure-Python twin ``sampling._racing_py`` is for tests only).

The public modules import from here by design; nothing else in the package reaches
into another module's private names.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from sampling.utils.kernels import load_kernel
from sampling.bounds_normal import b_normal, schedule_proportions

__all__ = [
    "KAPPA_EBS", "BOUNDS", "VARIANCES", "kernels", "check_int", "check_delta", "check_choice",
    "check_common", "check_reward_range", "check_log_f0", "check_gumbels", "normal_coefficient",
    "ebs_coefficients", "IndexSampler", "PermutationSampler", "run_race",
]

kernels = load_kernel("sampling._racing")

#: kappa of the empirical Bernstein-Serfling bound (Eq. 6)
KAPPA_EBS = 7.0 / 3.0 + 3.0 / math.sqrt(2.0)

BOUNDS = ("normal", "ebs")
#: pairwise sums of squares below this fraction of G_aa + G_bb are recomputed directly
GRAM_RTOL = 1e-6
VARIANCES = ("pairwise", "marginal")


# ----------------------------------------------------------------- validation
def check_int(value, name, func, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"the {name} parameter of {func} must be an int; got {type(value).__name__} instead")
    value = int(value)
    if value < minimum:
        raise ValueError(f"the {name} parameter of {func} must be >= {minimum}; got {value} instead")
    return value


def check_delta(delta, func):
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise TypeError(f"the delta parameter of {func} must be a real number; got {type(delta).__name__} instead")
    delta = float(delta)
    if not (0.0 < delta < 1.0):
        raise ValueError(f"the delta parameter of {func} must be in (0, 1); got {delta!r} instead")
    return delta


def check_choice(value, name, func, options):
    if value not in options:
        raise ValueError(f"the {name} parameter of {func} must be one of {options}; got {value!r} instead")
    return value


def check_common(n_data, delta, first_batch, bound, variance, func):
    n_data = check_int(n_data, "n_data", func, 1)
    delta = check_delta(delta, func)
    first_batch = check_int(first_batch, "first_batch", func, 2 if n_data >= 2 else 1)
    if first_batch > n_data:
        raise ValueError(
            f"the first_batch parameter of {func} must be <= n_data={n_data}; got {first_batch} instead"
        )
    check_choice(bound, "bound", func, BOUNDS)
    check_choice(variance, "variance", func, VARIANCES)
    return n_data, delta, first_batch


def check_reward_range(reward_range, n_states, bound, func):
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


def check_problem(log_f, log_f0, func):
    """Validate the target of a sampler: ``log_f`` callable, then ``log_f0`` (see
    :func:`check_log_f0`); returns ``log_f0`` as a float64 array."""
    if not callable(log_f):
        raise TypeError(f"the log_f parameter of {func} must be callable; got {type(log_f).__name__} instead")
    return check_log_f0(log_f0, func)


def check_log_f0(log_f0, func):
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


def check_gumbels(gumbels, n_states, gen, func):
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
class IndexSampler:
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


class PermutationSampler:
    """Disjoint mini-batches of ``[0, N)`` by a partial Fisher-Yates shuffle of a kept array.

    ``perm`` (int64, a permutation of ``[0, N)``) is kept between races: a race
    restarts at position 0 of the current arrangement, and for every position
    ``i`` it swaps ``perm[i]`` with ``perm[i + floor(u_i (N - i))]`` (``u_i`` one
    ``Generator.random()`` draw, i.e. one ``next_double`` of the bit generator), so
    each batch is a uniform random subset of the indices not yet used in this race,
    whatever the arrangement left by the previous race. A batch that takes the
    whole remainder draws nothing. The batch is returned in shuffle order (the
    data of a race fit in cache; sorting cost more than it saved). This is the index stream of the compiled ARCH chain
    (:mod:`sampling.arch._chain`); this class is its Python reference.

    Parameters
    ----------
    n_data : int
    gen : numpy.random.Generator
    perm : ndarray of int64 of shape (n_data,), optional
        The arrangement to continue from (modified in place); default ``arange(n_data)``.
    """

    def __init__(self, n_data, gen, perm=None):
        self.n = int(n_data)
        self.gen = gen
        self.perm = np.arange(self.n, dtype=np.int64) if perm is None else perm
        self.pos = 0

    def restart(self):
        """Start a new race (or a new without-replacement sample) at position 0."""
        self.pos = 0

    def draw(self, m):
        n, pos, perm = self.n, self.pos, self.perm
        if pos + m < n:
            u = self.gen.random(m)
            for k in range(m):
                i = pos + k
                j = i + int(u[k] * (n - i))
                if j > n - 1:
                    j = n - 1
                perm[i], perm[j] = perm[j], perm[i]
            end = pos + m
        else:
            end = n
        self.pos = end
        return perm[pos:end].copy()


# ----------------------------------------------------------------- the engine
def run_race(reward_fn, offset, n_data, *, delta, bound, variance, first_batch, c_range, gen, func,
             sampler=None, pairs="gram"):
    """Alg. 1 on validated inputs.

    ``reward_fn(arms, idx)`` returns the (len(arms), len(idx)) float64 rewards of arm
    ids ``arms`` minus a per-arm constant ``offset`` (D,) (which changes neither
    variances nor pairwise variances, so it is only added to the means); arms with a
    ``-inf`` offset can never win. Returns
    ``(leader, n_evals, survivors_per_round, exact, n_seen, mean)`` with the means of
    the full rewards.

    ``sampler`` (default a new :class:`IndexSampler` over ``gen``) draws the
    mini-batches; ``pairs="gram"`` merges pairwise moments through the BLAS Gram
    matrix, ``"direct"`` with the blocked direct loop of ``merge_block`` (the
    arithmetic of the compiled ARCH race).
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
    if sampler is None:
        sampler = IndexSampler(n_data, gen)
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
        if pairwise and pairs == "direct":
            kernels.merge_block(rewards, arms, n_seen, mean, m2, pair_m2, True, work)
        elif pairwise:  # O(k^2 m) through BLAS; exact fallback for strongly correlated pairs
            block_mean = rewards.mean(axis=1)
            centred = rewards - block_mean[:, None]
            gram = np.ascontiguousarray(centred @ centred.T)
            kernels.merge_pairs(rewards, arms, n_seen, mean, block_mean, gram, pair_m2, GRAM_RTOL)
            # per-arm moments from the Gram diagonal (same Chan et al. update as merge_block)
            shift = block_mean - mean[arms]
            m2[arms] += np.diag(gram) + shift * shift * (n_seen * m / (n_seen + m))
            mean[arms] += shift * (m / (n_seen + m))
        else:
            kernels.merge_block(rewards, arms, n_seen, mean, m2, pair_m2, False, work)
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
        leader = int(kernels.eliminate(full_mean, m2, pair_m2, arms, n_seen, coef_sd, coef_c, c_range,
                                        pairwise, alive))
        arms = arms[alive.astype(bool)]
        if arms.shape[0] == 1:
            break
    return leader, n_evals, tuple(survivors), False, n_seen, full_mean
