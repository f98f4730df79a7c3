"""Subsampled Metropolis-Hastings test as a two-armed race (Chen & Ghahramani 2016, Eq. 12).

The MH step from ``theta`` to ``theta'`` accepts iff

    (1/N) sum_n l_n > mu0,   l_n = log p(x_n | theta') - log p(x_n | theta),
    mu0 = (1/N) log(u * q(theta'|theta) p(theta) / (q(theta|theta') p(theta'))),

with ``u ~ Uniform(0, 1)``. Setting ``f0(1) = u p(x) q(x'|x)``, ``f0(2) = p(x') q(x|x')``
and ``f_n(x) = p(y_n | x)`` (Eq. 12) makes this the best-arm problem of Racing with
``D = 2`` (no Gumbel noise needed: ``u`` plays its role). Racing-Normal then is the
test of Korattikara et al. (2014) with a doubling schedule and the normal bound.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from sampling._race_core import check_common, check_reward_range, run_race
from sampling.utils.rng import as_generator
from sampling.control_variates import check_control_variate

__all__ = ["mh_accept", "MHTestResult"]

_ACCEPT_ARM = np.zeros(1, dtype=np.int64)


@dataclass(frozen=True)
class MHTestResult:
    """Outcome of one subsampled MH accept test.

    Attributes
    ----------
    accept : bool
        The decision ``mean_n l_n > mu0`` (approximate unless ``exact``).
    n_evals : int
        Number of per-datum terms ``l_n`` computed (``<= n_data``).
    n_rounds : int
        Mini-batches used.
    exact : bool
        True if all ``N`` terms were used (then the decision is the exact MH one).
    mu_hat : float
        Estimated mean of ``l_n`` (residuals plus ``h_mean`` with a control variate)
        at the stop; ``nan`` if no term was computed.
    """

    accept: bool
    n_evals: int
    n_rounds: int
    exact: bool
    mu_hat: float


def mh_accept(
    log_lik_diff,
    n_data,
    mu0,
    *,
    delta=0.05,
    first_batch=50,
    bound="normal",
    rng=None,
    control_variate=None,
    reward_range=None,
):
    """Approximate MH accept/reject decision on a subsample (Racing with two arms).

    Parameters
    ----------
    log_lik_diff : callable
        ``log_lik_diff(idx) -> ndarray of shape (len(idx),)`` with
        ``l_n = log p(x_n | theta') - log p(x_n | theta)`` for data indices ``idx``.
    n_data : int
        ``N``.
    mu0 : float
        ``(1/N) log(u q(theta|theta')^-1 ...)``, i.e.
        ``(1/N) [log u + log q(theta'|theta) - log q(theta|theta') + log p(theta) - log p(theta')]``.
        ``+inf`` rejects and ``-inf`` accepts without touching the data.
    delta : float in (0, 1), default 0.05
        Allowed probability of a decision differing from the exact MH test.
    first_batch : int, default 50
        First mini-batch size, in ``[2, n_data]``.
    bound : {"normal", "ebs"}
        Racing-Normal (Korattikara-style) or Racing-EBS (Bardenet-style) test.
    rng : None, int or numpy.random.Generator
        Draws the mini-batches.
    control_variate : ControlVariate or tuple (h, h_mean), optional
        A proxy of ``l_n`` with known mean ``h_mean = (1/N) sum_n h(n)``; the test
        uses ``l_n - h_n + h_mean`` (Eq. 11). Either the library's one
        :class:`~sampling.ControlVariate` type with one state (``proxy(states, idx)``
        of shape (1, len(idx)), ``mean`` of shape (1,); see
        :meth:`~sampling.ControlVariate.for_one_state`) or the tuple ``(h, h_mean)``
        with ``h(idx) -> ndarray (len(idx),)``.
    reward_range : float, optional
        Range ``C`` of ``l_n``; required for ``bound="ebs"``.

    Returns
    -------
    MHTestResult
        ``accept``, ``n_evals``, ``n_rounds``, ``exact``, ``mu_hat``.

    Raises
    ------
    TypeError
        If ``log_lik_diff`` is not callable or an argument has the wrong type.
    ValueError
        If ``delta`` is not in (0, 1), ``first_batch`` is not in ``[2, n_data]``,
        ``mu0`` is NaN, ``log_lik_diff`` returns the wrong shape or NaN / inf, or
        ``reward_range`` is missing with ``bound="ebs"``.

    References
    ----------
    .. [1] Chen & Ghahramani (2016), ICML, Sec. 4, Eq. 12.
    .. [2] Korattikara, Chen & Welling (2014), "Austerity in MCMC land", ICML.

    Examples
    --------
    >>> import numpy as np
    >>> from sampling import mh_accept
    >>> l = np.random.default_rng(0).normal(0.1, 1.0, size=100_000)
    >>> res = mh_accept(lambda idx: l[idx], l.size, 0.0, rng=1)
    >>> bool(res.accept), res.n_evals < l.size
    (True, True)
    """
    func = "mh_accept"
    if not callable(log_lik_diff):
        raise TypeError(f"the log_lik_diff parameter of {func} must be callable; got {type(log_lik_diff).__name__}")
    n_data, delta, first_batch = check_common(n_data, delta, first_batch, bound, "pairwise", func)
    if isinstance(mu0, bool) or not isinstance(mu0, numbers.Real) and not (np.ndim(mu0) == 0 and np.isreal(mu0)):
        raise TypeError(f"the mu0 parameter of {func} must be a real number; got {type(mu0).__name__} instead")
    mu0 = float(mu0)
    if math.isnan(mu0):
        raise ValueError(f"the mu0 parameter of {func} must not be NaN")
    if math.isinf(mu0):
        return MHTestResult(accept=mu0 < 0, n_evals=0, n_rounds=0, exact=True, mu_hat=float("nan"))
    if reward_range is not None:
        reward_range = np.array([0.0, float(reward_range)])
    c_range = check_reward_range(reward_range, 2, bound, func)
    cv = check_control_variate(control_variate, 1, func, per_index=True)
    gen = as_generator(rng)

    def reward_fn(arms, idx):
        l = np.asarray(log_lik_diff(idx), dtype=np.float64)
        if l.shape != (idx.shape[0],):
            raise ValueError(
                f"the log_lik_diff callable of {func} must return shape (len(idx),) = ({idx.shape[0]},); "
                f"got {l.shape} instead"
            )
        if cv is not None:
            h = np.asarray(cv.proxy(_ACCEPT_ARM, idx), dtype=np.float64).reshape(-1)
            if h.shape != l.shape:
                raise ValueError(f"the control_variate proxy of {func} must return {l.shape[0]} values; "
                                 f"got shape {h.shape}")
            l = l - h + cv.mean[0]
        if not np.all(np.isfinite(l)):
            raise ValueError(f"{func}: log_lik_diff returned NaN or infinite values")
        out = np.empty((arms.shape[0], idx.shape[0]))
        for r, a in enumerate(arms):
            out[r] = 0.0 if a == 0 else l  # arm 0: reject (constant mu0, in the offset), arm 1: accept
        return out

    leader, _, survivors, exact, n_seen, mean = run_race(
        reward_fn, np.array([mu0, 0.0]), n_data, delta=delta, bound=bound, variance="pairwise",
        first_batch=first_batch, c_range=c_range, gen=gen, func=func,
    )
    return MHTestResult(
        accept=bool(leader == 1), n_evals=int(n_seen), n_rounds=len(survivors), exact=bool(exact),
        mu_hat=float(mean[1]),
    )
