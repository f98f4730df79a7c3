"""Gumbel-max sampling of a discrete variable (Chen & Ghahramani 2016, Eq. 2).

Drawing ``x = argmax_i log p~(i) + eps_i`` with ``eps_i ~ Gumbel(0, 1)`` i.i.d.
gives an exact sample of ``p(X) ∝ p~(X)`` (Kuzmin & Warmuth 2005). This turns
sampling into the best-arm problem that :func:`sampling.race` solves on a subsample.
"""
from __future__ import annotations

import numbers

import numpy as np

from sampling.utils.rng import as_generator

__all__ = ["gumbel_max"]


def _check_log_weights(log_weights):
    """Validate ``log_weights``; return a float64 1-D array (private, used once)."""
    try:
        log_w = np.asarray(log_weights, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            "the log_weights parameter of gumbel_max must be array-like of real numbers; "
            f"got {type(log_weights).__name__} instead"
        ) from exc
    if log_w.ndim != 1 or log_w.shape[0] == 0:
        raise ValueError(
            "the log_weights parameter of gumbel_max must be a non-empty 1-D array; "
            f"got shape {log_w.shape} instead"
        )
    if np.isnan(log_w).any() or np.isposinf(log_w).any():
        raise ValueError("the log_weights parameter of gumbel_max must not contain NaN or +inf")
    if np.isneginf(log_w).all():
        raise ValueError(
            "the log_weights parameter of gumbel_max has all entries -inf "
            "(every state has zero probability)"
        )
    return log_w


def gumbel_max(log_weights, *, size=None, rng=None):
    """Draw states from ``p(i) ∝ exp(log_weights[i])`` with the Gumbel-max trick.

    Parameters
    ----------
    log_weights : array_like of shape (n_states,)
        Unnormalised natural-log probabilities ``log p~(i)``. ``-inf`` marks a
        state of probability zero; it is never drawn.
    size : None or int, optional
        ``None`` returns one draw (a Python ``int``); an int ``n >= 0`` returns an
        ndarray of shape ``(n,)`` of independent draws.
    rng : None, int or numpy.random.Generator, optional
        Source of the Gumbel noise (see :func:`sampling.as_generator`).

    Returns
    -------
    int or ndarray of int64 of shape (size,)
        The drawn state index (or indices) in ``[0, n_states)``.

    Raises
    ------
    TypeError
        If ``log_weights`` is not numeric or ``size`` is not an int.
    ValueError
        If ``log_weights`` is empty, not 1-D, contains NaN or +inf, or is all
        ``-inf``; if ``size`` is negative.

    Notes
    -----
    ``x = argmax_i (log p~(i) + eps_i)`` with ``eps_i ~ Gumbel(0, 1)`` is
    distributed as ``p(X)`` [1]_ (paper Eq. 2). Adding a constant to
    ``log_weights`` does not change the draw for a fixed noise.

    References
    ----------
    .. [1] Chen & Ghahramani (2016), "Scalable Discrete Sampling as a Multi-Armed
       Bandit Problem", ICML, Eq. 2.

    Examples
    --------
    >>> import numpy as np
    >>> from sampling import gumbel_max
    >>> draws = gumbel_max(np.log([0.5, 0.3, 0.2]), size=5, rng=0)
    >>> draws.shape
    (5,)
    """
    log_w = _check_log_weights(log_weights)
    if size is not None:
        if not isinstance(size, numbers.Integral) or isinstance(size, bool):
            raise TypeError(f"the size parameter of gumbel_max must be None or an int; got {size!r} instead")
        if size < 0:
            raise ValueError(f"the size parameter of gumbel_max must be >= 0; got {size} instead")
    gen = as_generator(rng)
    n = 1 if size is None else int(size)
    noise = gen.gumbel(size=(n, log_w.shape[0]))
    draws = np.argmax(log_w[None, :] + noise, axis=1).astype(np.int64)
    return int(draws[0]) if size is None else draws
