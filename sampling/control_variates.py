"""Control variates for subsampled rewards (Chen & Ghahramani 2016, Sec. 3.4, Eq. 11).

A proxy ``h_{i,n}`` whose population mean ``E_n[h_{i,n}]`` is known turns the reward
``l_{i,n}`` into the residual ``l_{i,n} - h_{i,n} + E_n[h_{i,n}]``: same mean, smaller
variance when ``h ≈ l``. Racing-Normal benefits most (its bound scales with the
standard deviation only).

One type, :class:`ControlVariate`, serves every racing sampler of the package:
:func:`sampling.race` and :func:`sampling.lil_ucb` (one proxy row per state),
:func:`sampling.mh_accept` (one state: the accept arm's log-likelihood ratio) and
the ARCH chain (:mod:`sampling.arch`, whose per-model Taylor proxies are
``ControlVariate`` objects; its compiled chain evaluates the same proxy from their
coefficients).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ControlVariate", "taylor_control_variate", "check_control_variate"]


@dataclass(frozen=True)
class ControlVariate:
    """A proxy ``h`` with a known population mean per state.

    Attributes
    ----------
    proxy : callable
        ``proxy(states, idx) -> ndarray of shape (len(states), len(idx))``: the
        values ``h_{i,n}`` for state indices ``states`` and data indices ``idx``.
    mean : ndarray of shape (n_states,)
        ``E_n[h_{i,n}] = (1/N) sum_n h_{i,n}`` for every state ``i``.
    """

    proxy: object
    mean: np.ndarray

    @classmethod
    def for_one_state(cls, h, h_mean):
        """A one-state control variate from ``h(idx) -> ndarray (len(idx),)`` and its mean.

        This is the form :func:`sampling.mh_accept` takes: ``proxy(states, idx)``
        returns ``h(idx)`` as a single row.
        """
        return cls(lambda states, idx: np.asarray(h(idx), dtype=np.float64).reshape(1, -1),
                   np.array([float(h_mean)]))


def check_control_variate(control_variate, n_states, name="race", *, per_index=False):
    """Normalise ``control_variate`` to a :class:`ControlVariate` (or ``None``).

    Accepts ``None``, a :class:`ControlVariate` or a tuple ``(proxy, mean)``. With
    ``per_index=True`` (one state, :func:`sampling.mh_accept`) a tuple's proxy is
    ``h(idx)`` and its mean a scalar (:meth:`ControlVariate.for_one_state`).

    Raises
    ------
    TypeError
        If it is none of these or ``proxy`` is not callable.
    ValueError
        If ``mean`` does not have shape ``(n_states,)`` or is not finite.
    """
    if control_variate is None:
        return None
    if isinstance(control_variate, ControlVariate):
        proxy, mean = control_variate.proxy, control_variate.mean
    elif isinstance(control_variate, tuple) and len(control_variate) == 2:
        proxy, mean = control_variate
        if per_index and callable(proxy):
            if np.ndim(mean) or isinstance(mean, bool):
                raise ValueError(f"the control_variate mean of {name} must be a finite real; got {mean!r}")
            h = proxy

            def proxy(states, idx):
                return np.asarray(h(idx), dtype=np.float64).reshape(1, -1)
    else:
        raise TypeError(
            f"the control_variate parameter of {name} must be None, a ControlVariate or a "
            f"(proxy, mean) tuple; got {type(control_variate).__name__} instead"
        )
    if not callable(proxy):
        raise TypeError(f"the control_variate proxy of {name} must be callable; got {type(proxy).__name__}")
    mean = np.asarray(mean, dtype=np.float64).reshape(-1) if np.ndim(mean) else np.full(n_states, float(mean))
    if mean.shape != (n_states,):
        raise ValueError(
            f"the control_variate mean of {name} must have shape ({n_states},); got {mean.shape} instead"
        )
    if not np.all(np.isfinite(mean)):
        raise ValueError(f"the control_variate mean of {name} must be finite")
    return ControlVariate(proxy, mean)


def taylor_control_variate(y, value, grad, hess=None):
    """Second-order Taylor proxy of ``l_i(y_n)`` around the data mean (Eq. 11).

    Parameters
    ----------
    y : ndarray of shape (n_data, n_features)
        The data ``y_n``.
    value : ndarray of shape (n_states,)
        ``l_i(y_hat)`` at the reference point ``y_hat = mean(y)``.
    grad : ndarray of shape (n_states, n_features)
        ``g_i``, gradient of ``l_i`` in ``y`` at ``y_hat``.
    hess : ndarray of shape (n_states, n_features, n_features), optional
        ``H_i``, Hessian at ``y_hat``; omitted means a first-order proxy.

    Returns
    -------
    ControlVariate
        ``proxy(states, idx)`` evaluates ``h_{i,n}`` and ``mean`` is its exact
        population mean ``value + 0.5 tr(H_i Cov(y))`` (the linear term has mean 0).

    Raises
    ------
    ValueError
        If shapes disagree.

    References
    ----------
    .. [1] Chen & Ghahramani (2016), ICML, Sec. 3.4, Eq. 11.
    """
    y = np.asarray(y, dtype=np.float64)
    if y.ndim == 1:
        y = y[:, None]
    value = np.asarray(value, dtype=np.float64).reshape(-1)
    grad = np.asarray(grad, dtype=np.float64).reshape(value.shape[0], -1)
    if grad.shape[1] != y.shape[1]:
        raise ValueError(f"grad has {grad.shape[1]} features but y has {y.shape[1]}")
    y_hat = y.mean(axis=0)
    dev = y - y_hat
    if hess is not None:
        hess = np.asarray(hess, dtype=np.float64).reshape(value.shape[0], y.shape[1], y.shape[1])
        cov = dev.T @ dev / y.shape[0]
        mean = value + 0.5 * np.einsum("ijk,jk->i", hess, cov)
    else:
        mean = value.copy()

    def proxy(states, idx):
        d = dev[np.asarray(idx)]
        s = np.asarray(states)
        out = value[s][:, None] + grad[s] @ d.T
        if hess is not None:
            out += 0.5 * np.einsum("nj,ijk,nk->in", d, hess[s], d)
        return out

    return ControlVariate(proxy, mean)
