"""B_Normal(delta, pi1): the Normal racing bound of Chen & Ghahramani (2016), Eq. 8-9.

Under Assumption 6 of the paper the standardised running means
``z_t = (mu_hat_t - mu) / sd(mu_hat_t)`` of a without-replacement subsample on the
doubling schedule ``T_t = T_1 2^(t-1)`` follow the Gaussian random walk of Eq. 8.
``B_Normal`` is the constant with

    E(B) = P(exists t < t*: z_t > B) = delta,

where ``t* - 1 = ceil(log2(1 / pi1))`` is the number of rounds with ``T_t < N`` and
``pi1 = T_1 / N``. We compute ``E(B)`` with a numerical recursion over rounds
(Gauss-Legendre quadrature of the truncated Markov chain, exact up to quadrature
error ~1e-6 in ``B``) and solve ``E(B) = delta`` with Brent's method; results are
memoised, and one fresh call takes well under a second.

Appendix B's printed table agrees with this (and with a direct simulation of Eq. 8)
to about 0.01 for ``delta <= 0.1`` but not for large ``delta`` (``delta = 0.49``,
``pi1 = 0.01``: the table says 0.618, the recursion and a 400k-path simulation give
1.03). We validate against simulation (tests/sampling/test_bounds_normal.py).

The command ``sampling bnormal --delta 0.05 --pi1 0.001`` prints one value and a
table in the layout of Appendix B (see :func:`main`).
"""
from __future__ import annotations

import argparse
import functools
import math
import numbers

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr, ndtri

__all__ = ["b_normal", "exceedance_probability", "schedule_proportions", "simulate_b_normal"]

#: number of Gauss-Legendre nodes of the recursion (n=160 agrees with n=500 to 1e-5)
_N_NODES = 160
#: the truncated density is negligible below B - _SPAN and below -_SPAN
_SPAN = 8.5

_TABLE_DELTAS = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 3e-2, 5e-2, 1e-1, 2e-1, 3e-1, 4e-1, 4.9e-1)
_TABLE_PIS = (5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2)


def _check_pi1(pi1, name="b_normal"):
    if isinstance(pi1, bool) or not isinstance(pi1, numbers.Real):
        raise TypeError(f"the pi1 parameter of {name} must be a real number; got {type(pi1).__name__} instead")
    pi1 = float(pi1)
    if not (0.0 < pi1 < 1.0) or math.isnan(pi1):
        raise ValueError(f"the pi1 parameter of {name} must be in (0, 1); got {pi1!r} instead")
    return pi1


def _check_delta(delta, name="b_normal"):
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise TypeError(
            f"the delta parameter of {name} must be a real number; got {type(delta).__name__} instead"
        )
    delta = float(delta)
    if not (0.0 < delta < 1.0) or math.isnan(delta):
        raise ValueError(f"the delta parameter of {name} must be in (0, 1); got {delta!r} instead")
    return delta


def schedule_proportions(pi1):
    """Proportions ``pi_t = T_t / N`` of the rounds ``t < t*`` of the doubling schedule.

    Parameters
    ----------
    pi1 : float in (0, 1)
        ``T_1 / N``, the proportion of the first mini-batch.

    Returns
    -------
    ndarray of shape (t* - 1,)
        ``pi1 * 2**(t-1)`` for every round whose subsample is still smaller than
        the population; ``t* - 1 = ceil(log2(1 / pi1))``.

    Raises
    ------
    ValueError
        If ``pi1`` is not in (0, 1).
    """
    pi1 = _check_pi1(pi1, "schedule_proportions")
    out = []
    p = pi1
    while p < 1.0 - 1e-12:
        out.append(p)
        p *= 2.0
    return np.asarray(out)


@functools.lru_cache(maxsize=1)
def _nodes():
    return np.polynomial.legendre.leggauss(_N_NODES)


def _exceedance(bound, pis):
    """E(B) for the random walk with round proportions ``pis`` (inputs already valid)."""
    x, w = _nodes()
    a, b = min(-_SPAN, bound - _SPAN), bound
    y = 0.5 * (b - a) * x + 0.5 * (b + a)
    w = w * 0.5 * (b - a)
    v = (1.0 - pis) / pis  # Var(mu_tilde_t) up to a constant (Remark 5)
    rho = np.sqrt(v[1:] / v[:-1])  # Corr(z_{t-1}, z_t) = sqrt(A_t) in Eq. 8 terms
    sd = np.sqrt(1.0 - rho * rho)
    f = np.exp(-0.5 * y * y) / math.sqrt(2.0 * math.pi)  # density of z_1 on z <= B
    total = float(ndtr(-bound))
    for r, s in zip(rho, sd):
        fw = f * w
        total += float(np.dot(fw, ndtr(-(bound - r * y) / s)))
        kern = np.exp(-0.5 * ((y[:, None] - r * y[None, :]) / s) ** 2) / (s * math.sqrt(2.0 * math.pi))
        f = kern @ fw
    return total


def exceedance_probability(bound, pi1):
    """``E(B) = P(exists t < t*: z_t > B)`` under the Gaussian random walk of Eq. 8.

    Parameters
    ----------
    bound : float
        The standardised threshold ``B``.
    pi1 : float in (0, 1)
        ``T_1 / N``.

    Returns
    -------
    float
        The exceedance probability in [0, 1].

    Raises
    ------
    ValueError
        If ``pi1`` is not in (0, 1) or ``bound`` is not finite.
    """
    pis = schedule_proportions(pi1)
    bound = float(bound)
    if not math.isfinite(bound):
        raise ValueError(f"the bound parameter of exceedance_probability must be finite; got {bound!r}")
    return _exceedance(bound, pis)


@functools.lru_cache(maxsize=4096)
def _b_normal_cached(delta, pi1):
    pis = schedule_proportions(pi1)
    n_rounds = pis.shape[0]
    # Phi^-1(1 - delta) <= B <= Phi^-1(1 - delta / n_rounds) (no correlation vs union bound)
    lo = float(-ndtri(delta)) - 1e-3
    hi = float(-ndtri(delta / n_rounds)) + 1e-3
    if n_rounds == 1:
        return float(-ndtri(delta))
    log_delta = math.log(delta)
    return float(brentq(lambda b: math.log(_exceedance(b, pis)) - log_delta, lo, hi, xtol=1e-7))


def b_normal(delta, pi1):
    """The Normal racing bound ``B_Normal(delta, pi1)`` (paper Eq. 9, Appx. B).

    Parameters
    ----------
    delta : float in (0, 1)
        Allowed probability that the running mean ever exceeds the bound before
        the last round. Racing passes ``delta / D`` (marginal variance) or
        ``delta / (D - 1)`` (pairwise variance), per Alg. 1.
    pi1 : float in (0, 1)
        ``T_1 / N``: first mini-batch size over the population size; it fixes the
        doubling schedule and so the ``t* - 1 = ceil(log2(1/pi1))`` rounds.

    Returns
    -------
    float
        ``B`` with ``E(B) = delta``; the uncertainty bound is
        ``G = sigma_hat / sqrt(T) * (1 - (T-1)/(N-1))**0.5 * B`` (Eq. 9).

    Raises
    ------
    TypeError
        If an argument is not a real number.
    ValueError
        If ``delta`` or ``pi1`` is not in (0, 1).

    Notes
    -----
    ``E(B)`` is computed by the recursion
    ``E = Phi(-B) + sum_{t>=2} int f_{t-1}(y) Phi(-(B - rho_t y)/s_t) dy`` with the
    sub-density ``f_t`` of ``z_t`` on paths that have not exceeded ``B``, where
    ``rho_t = sqrt(A_t)`` and ``s_t^2 = 1 - rho_t^2`` are Eq. 8's coefficients in
    standardised units. The correlations depend only on ``pi_t = T_t / N``, so the
    result is exact for every ``N`` with ``T_1 / N = pi1``. Values are memoised.

    References
    ----------
    .. [1] Chen & Ghahramani (2016), ICML, Eq. 8-9, Corollary 4, Appendix B.

    Examples
    --------
    >>> from sampling import b_normal
    >>> round(b_normal(0.05, 1e-3), 2)
    2.47
    """
    delta = _check_delta(delta)
    pi1 = _check_pi1(pi1)
    # round the key so float noise in delta / D does not defeat the cache
    return _b_normal_cached(float(f"{delta:.12g}"), float(f"{pi1:.12g}"))


def simulate_b_normal(delta, pi1, *, n_paths=100_000, rng=None):
    """Monte-Carlo estimate of ``B_Normal`` by simulating the random walk of Eq. 8.

    Simulates ``mu_tilde_t = A_t mu_tilde_{t-1} + sqrt(S_t) xi_t`` (mu = 0, unit
    population variance) over the rounds of :func:`schedule_proportions`, and
    returns the ``1 - delta`` quantile of ``max_t mu_tilde_t / sd(mu_tilde_t)``.
    Used to validate :func:`b_normal`; independent of its recursion.

    Parameters
    ----------
    delta : float in (0, 1)
    pi1 : float in (0, 1)
    n_paths : int
        Number of simulated paths.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    float
        The empirical quantile.
    """
    from sampling.utils.rng import as_generator

    delta = _check_delta(delta, "simulate_b_normal")
    pis = schedule_proportions(pi1)
    gen = as_generator(rng)
    var = (1.0 - pis) / pis  # Remark 5 with N scaled out
    mu = gen.standard_normal(n_paths) * math.sqrt(var[0])
    zmax = mu / math.sqrt(var[0])
    for t in range(1, pis.shape[0]):
        a_t = pis[t - 1] * (1 - pis[t]) / (pis[t] * (1 - pis[t - 1]))
        b_t = (pis[t] - pis[t - 1]) / (pis[t] * (1 - pis[t - 1]))
        mu = a_t * mu + math.sqrt(b_t * var[t]) * gen.standard_normal(n_paths)
        np.maximum(zmax, mu / math.sqrt(var[t]), out=zmax)
    return float(np.quantile(zmax, 1.0 - delta))


# --------------------------------------------------------------------------- CLI
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``sampling bnormal``."""
    parser.add_argument("--delta", type=float, default=0.05, help="error probability in (0, 1) [0.05]")
    parser.add_argument("--pi1", type=float, default=1e-3, help="first mini-batch proportion T(1)/N [0.001]")
    parser.add_argument("--no-table", action="store_true", help="print only the value")
    parser.add_argument(
        "--simulate", type=int, default=0, metavar="N_PATHS",
        help="also print a Monte-Carlo check of the value with N_PATHS paths of Eq. 8",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of --simulate [0]")


def main(args) -> int:
    """Print ``B_Normal(delta, pi1)`` and an Appendix-B style table."""
    try:
        value = b_normal(args.delta, args.pi1)
    except (TypeError, ValueError) as exc:
        print(f"sampling bnormal: error: {exc}")
        return 2
    n_rounds = schedule_proportions(args.pi1).shape[0]
    print(f"B_Normal(delta={args.delta:g}, pi1={args.pi1:g}) = {value:.5f}   "
          f"(t* - 1 = {n_rounds} rounds; marginal confidence Phi(B) = {float(ndtr(value)):.6f})")
    if args.simulate:
        sim = simulate_b_normal(args.delta, args.pi1, n_paths=args.simulate, rng=args.seed)
        print(f"simulation of Eq. 8 with {args.simulate} paths: {sim:.5f} (difference {sim - value:+.5f})")
    if not args.no_table:
        print()
        print("delta     " + " ".join(f"{p:>9.0e}" for p in _TABLE_PIS))
        for d in _TABLE_DELTAS:
            print(f"{d:<9.1e} " + " ".join(f"{b_normal(d, p):9.5f}" for p in _TABLE_PIS))
    return 0
