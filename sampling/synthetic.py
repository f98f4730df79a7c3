"""Synthetic best-arm problems of Chen & Ghahramani (2016), Sec. 5.1 (helpers + placeholder CLI)."""
from __future__ import annotations

import numpy as np

from sampling._rng import as_generator

__all__ = ["DEFAULT_LOG_P", "make_rewards", "MatrixLogF", "exact_state"]

_DISTS = ("normal", "uniform", "lognormal")


def DEFAULT_LOG_P(n_states):
    """A fixed, non-uniform target ``log p(X)`` over ``n_states`` (a discretised bump)."""
    x = np.linspace(-2.0, 2.0, n_states)
    w = np.exp(-0.5 * (x - 0.3) ** 2) + 0.2
    return np.log(w / w.sum())


def make_rewards(dist, n_states, n_data, sigma, *, log_p=None, rng=None):
    """Reward population ``log f_n(i)`` with fixed ``p(X)`` and reward std ``sigma``.

    Draws ``r_{i,n}`` from N(0, 1), Uniform[0, 1] or LogNormal(0, 2), standardises
    each row to mean 0 and std 1 and returns ``sigma * z_{i,n} + log p(i) / N`` so that
    ``sum_n log f_n(i) = log p(i)`` exactly (up to rounding) and the rewards of each
    arm have population standard deviation ``sigma`` (Sec. 5.1).

    Parameters
    ----------
    dist : {"normal", "uniform", "lognormal"}
    n_states, n_data : int
        ``D`` and ``N``.
    sigma : float > 0
        Reward standard deviation (difficulty: 0.1 very hard, 1e-5 very easy at N=1e5).
    log_p : array_like of shape (n_states,), optional
        Target log probabilities; :func:`DEFAULT_LOG_P` if omitted.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    ndarray of shape (n_states, n_data)

    Raises
    ------
    ValueError
        On an unknown ``dist``, non-positive ``sigma`` or a ``log_p`` of the wrong shape.
    """
    if dist not in _DISTS:
        raise ValueError(f"the dist parameter of make_rewards must be one of {_DISTS}; got {dist!r} instead")
    if not sigma > 0:
        raise ValueError(f"the sigma parameter of make_rewards must be > 0; got {sigma!r} instead")
    gen = as_generator(rng)
    log_p = DEFAULT_LOG_P(n_states) if log_p is None else np.asarray(log_p, dtype=np.float64)
    if log_p.shape != (n_states,):
        raise ValueError(f"log_p must have shape ({n_states},); got {log_p.shape}")
    if dist == "normal":
        raw = gen.standard_normal((n_states, n_data))
    elif dist == "uniform":
        raw = gen.random((n_states, n_data))
    else:
        raw = gen.lognormal(0.0, 2.0, size=(n_states, n_data))
    z = raw - raw.mean(axis=1, keepdims=True)
    z /= np.sqrt((z * z).mean(axis=1, keepdims=True))
    z -= z.mean(axis=1, keepdims=True)  # re-centre after scaling (rounding)
    return sigma * z + (log_p / n_data)[:, None]


class MatrixLogF:
    """``log_f(states, idx)`` backed by a precomputed (n_states, n_data) matrix."""

    def __init__(self, rewards):
        self.rewards = np.ascontiguousarray(rewards, dtype=np.float64)

    def __call__(self, states, idx):
        return self.rewards[np.asarray(states)[:, None], np.asarray(idx)[None, :]]


def exact_state(rewards, log_f0, gumbels):
    """The exact Gumbel-max answer ``argmax_i sum_n log f_n(i) + log f0(i) + eps_i`` (Eq. 3)."""
    n_data = rewards.shape[1]
    offset = (np.asarray(log_f0, dtype=np.float64) + np.asarray(gumbels)) / n_data
    return int(np.argmax((rewards + offset[:, None]).sum(axis=1)))


def add_arguments(parser):
    """Arguments of ``sampling synthetic`` (the full study is being added)."""
    parser.add_argument("--arms", type=int, default=10)


def main(args) -> int:
    print("sampling synthetic: not implemented yet")
    return 1
