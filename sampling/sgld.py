"""Stochastic-gradient Langevin dynamics proposals (Welling & Teh 2011).

With step size ``eps`` the Langevin proposal is

    theta' = theta + (eps / 2) g(theta) + sqrt(eps) xi,     xi ~ N(0, I),

where ``g`` is an (unbiased, possibly subsampled) estimate of the gradient of the
log posterior. Plain SGLD accepts every proposal (:func:`sgld_step`); Chen &
Ghahramani (2016, Sec. 5.2) correct it with a subsampled MH test
(:func:`sampling.mh_accept`), which needs the proposal density :func:`log_q` in
both directions.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from sampling.utils.rng import as_generator

__all__ = ["sgld_proposal", "log_q", "sgld_step"]


def _check_step(step_size, func):
    if isinstance(step_size, bool) or not isinstance(step_size, numbers.Real):
        raise TypeError(f"the step_size parameter of {func} must be a real number; got {type(step_size).__name__}")
    step_size = float(step_size)
    if not (step_size > 0.0 and math.isfinite(step_size)):
        raise ValueError(f"the step_size parameter of {func} must be finite and > 0; got {step_size!r} instead")
    return step_size


def _as_vector(x, name, func):
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim > 1:
        raise ValueError(f"the {name} parameter of {func} must be a scalar or 1-D; got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"the {name} parameter of {func} must be finite")
    return np.atleast_1d(arr)


def log_q(theta_to, theta_from, grad_at_from, step_size):
    """Log density of the Langevin proposal ``N(theta_from + eps/2 g, eps I)`` at ``theta_to``.

    Parameters
    ----------
    theta_to, theta_from : array_like of shape (n_params,) or scalar
    grad_at_from : array_like of shape (n_params,) or scalar
        Gradient (estimate) of the log posterior at ``theta_from``.
    step_size : float > 0
        ``eps``.

    Returns
    -------
    float
        ``log q(theta_to | theta_from)`` in nats.

    Raises
    ------
    ValueError
        If shapes differ, values are not finite, or ``step_size <= 0``.
    """
    func = "log_q"
    eps = _check_step(step_size, func)
    to = _as_vector(theta_to, "theta_to", func)
    fr = _as_vector(theta_from, "theta_from", func)
    g = _as_vector(grad_at_from, "grad_at_from", func)
    if not (to.shape == fr.shape == g.shape):
        raise ValueError(f"{func}: theta_to, theta_from and grad_at_from must have the same shape; "
                         f"got {to.shape}, {fr.shape}, {g.shape}")
    r = to - fr - 0.5 * eps * g
    d = to.shape[0]
    return float(-0.5 * np.dot(r, r) / eps - 0.5 * d * math.log(2.0 * math.pi * eps))


def sgld_proposal(theta, grad_log_post, *, step_size, rng=None):
    """Draw a Langevin proposal and its forward log density.

    Parameters
    ----------
    theta : array_like of shape (n_params,) or scalar
        Current parameters.
    grad_log_post : array_like like ``theta``
        (Stochastic) gradient of the log posterior at ``theta``.
    step_size : float > 0
        ``eps``: drift ``eps/2 * grad``, noise variance ``eps``.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    theta_prop : ndarray of shape (n_params,)
    log_q_forward : float
        ``log q(theta_prop | theta)``; for an MH correction compute the reverse
        ``log_q(theta, theta_prop, grad_at_prop, step_size)`` too.

    Raises
    ------
    ValueError
        If shapes differ, values are not finite, or ``step_size <= 0``.

    References
    ----------
    .. [1] Welling & Teh (2011), "Bayesian learning via stochastic gradient
       Langevin dynamics", ICML.
    .. [2] Chen & Ghahramani (2016), ICML, Sec. 5.2 (SGLD corrected by Racing MH).
    """
    func = "sgld_proposal"
    eps = _check_step(step_size, func)
    th = _as_vector(theta, "theta", func)
    g = _as_vector(grad_log_post, "grad_log_post", func)
    if th.shape != g.shape:
        raise ValueError(f"{func}: theta and grad_log_post must have the same shape; got {th.shape}, {g.shape}")
    gen = as_generator(rng)
    xi = gen.standard_normal(th.shape[0])
    prop = th + 0.5 * eps * g + math.sqrt(eps) * xi
    log_fwd = float(-0.5 * np.dot(xi, xi) - 0.5 * th.shape[0] * math.log(2.0 * math.pi * eps))
    return prop, log_fwd


def sgld_step(theta, grad_fn, *, step_size, rng=None):
    """One plain SGLD step (no accept test): ``theta + eps/2 grad_fn(theta) + sqrt(eps) xi``.

    Parameters
    ----------
    theta : array_like of shape (n_params,) or scalar
    grad_fn : callable or array_like
        ``grad_fn(theta) -> gradient estimate``, or the gradient itself.
    step_size : float > 0
    rng : None, int or numpy.random.Generator

    Returns
    -------
    ndarray of shape (n_params,)
        The new parameters.
    """
    g = grad_fn(np.atleast_1d(np.asarray(theta, dtype=np.float64))) if callable(grad_fn) else grad_fn
    return sgld_proposal(theta, g, step_size=step_size, rng=rng)[0]
