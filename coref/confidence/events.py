"""Probabilities of events of a coreference sub-model: exact, or certified by DIS.

For a sub-model S of a block, the rest R fixed at the predicted assignment
(:mod:`coref.confidence.submodels`), P(A | y_R) = Z_A / Z_S for an event A.  Z_S and
Z_A are summed exactly (:func:`coref.confidence.exact.exact_log_z`) or bounded by
dynamic importance sampling (Lou, Dechter & Ihler 2017, Alg. 1, Theorem 1) run on the
sub-model's graphical model; each one-sided DIS bound fails with probability at most
its delta, so P(A | y_R) >= L_A / U and P(A | y_R) <= U_A / L.

:func:`conditional_rows` turns the events of the confidence definition (module
docstring of :mod:`coref.confidence.assignment`) into each mention's probability and
interval, sharing Z among the events of one sub-model.

References
----------
.. [1] Lou, Dechter & Ihler (2017), "Dynamic Importance Sampling for Anytime Bounds of
   the Partition Function", NIPS, Alg. 1, Eq. 13-14, Theorem 1.
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from coref.confidence.exact import DEFAULT_MAX_EXACT, exact_log_z
from coref.confidence.submodels import build_graphical_model, check_constraints
from sampling import bounds
from sampling.utils.rng import as_generator

__all__ = ["EventProbability", "event_probability", "conditional_rows"]


class EventProbability:
    """P(A | y_R) of one event in one sub-model, with its interval.

    Attributes
    ----------
    p : float
        Estimate (exact, or the ratio of the DIS estimates of Eq. 13, clipped to the
        interval; the interval's midpoint if DIS drew no sample with positive weight).
    p_lower, p_upper : float
        Interval in [0, 1]; equal to ``p`` for exact evaluation.
    method : str
        ``"exact"`` or ``"dis"``.
    log_Z : tuple of float
        (lower, estimate, upper) of ln Z.
    log_Z_A : tuple of float
        (lower, estimate, upper) of ln Z_A.
    """

    __slots__ = ("p", "p_lower", "p_upper", "method", "log_Z", "log_Z_A")

    def __init__(self, p, p_lower, p_upper, method, log_Z, log_Z_A):
        self.p, self.p_lower, self.p_upper = float(p), float(p_lower), float(p_upper)
        self.method, self.log_Z, self.log_Z_A = method, tuple(log_Z), tuple(log_Z_A)

    def __repr__(self):
        return (f"EventProbability(p={self.p:.4g}, interval=[{self.p_lower:.4g}, {self.p_upper:.4g}], "
                f"method={self.method!r})")


def _dis_log_z(gm, *, delta, time_limit, memory_mb, rng):
    """(lower, estimate, upper) of ln Z by DIS, each bound failing w.p. <= delta."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # WMB convergence notes: the bounds stay valid
        tr = bounds.run(gm, method="dis", time_limit=float(time_limit), memory_mb=float(memory_mb),
                        delta=float(delta), rng=rng)
    return (tr.final_log_Z_lower, tr.final_log_Z_hat, tr.final_log_Z_upper)


def _ratio(log_a, log_b):
    """min(1, exp(log_a - log_b)): 0 if Z_A's bound is 0, 1 if Z's lower bound is 0 (vacuous)."""
    if not np.isfinite(log_a):
        return 0.0
    if not np.isfinite(log_b):
        return 1.0
    return float(math.exp(min(0.0, log_a - log_b)))


def event_probability(sub, constraint, *, method="auto", delta=0.05, time_limit=10.0, memory_mb=256,
                      rng=0, log_Z=None, encoding="leader", max_exact=DEFAULT_MAX_EXACT):
    """P(A | y_R) = Z_A / Z_S for an event A of a sub-model, exact or certified by DIS.

    Parameters
    ----------
    sub : coref.confidence.submodels.SubProblem
    constraint : tuple or list of tuples
        The event (see :func:`submodel`).
    method : {"auto", "exact", "dis"}, default "auto"
        "auto": exact if ``sub.m <= max_exact``, else DIS.
    delta : float in (0, 1), default 0.05
        DIS runs on Z and Z_A with delta/2 each: each end of the interval holds with
        probability >= 1 - delta, the interval with >= 1 - 2 delta.
    time_limit : float, default 10
        DIS budget per partition function, seconds (wall clock).
    memory_mb : float, default 256
        DIS memory budget per run (WMB and search tree).
    rng : None, int or numpy.random.Generator
    log_Z : tuple of float, optional
        (lower, estimate, upper) of ln Z already computed (shared by several events);
        each of its bounds must fail with probability <= delta/2.
    encoding : {"leader", "growth"}

    Returns
    -------
    EventProbability

    Raises
    ------
    ValueError
        For a bad method or delta, or exact evaluation of more than
        ``coref.confidence.exact.MAX_EXACT_SUBSET`` mentions.

    Notes
    -----
    Theorem 1 of [1]_: Zhat + Delta and Zhat - Delta are upper and lower bounds of Z,
    each with probability >= 1 - delta; here P(A) >= L_A / U and P(A) <= U_A / L,
    clipped to [0, 1] (a probability), where the Markov bound stands in for the lower
    bound while Zhat - Delta <= 0.

    References
    ----------
    .. [1] Lou, Dechter & Ihler (2017), NIPS, Theorem 1.
    """
    if method not in ("auto", "exact", "dis"):
        raise ValueError(f"the method parameter must be 'auto', 'exact' or 'dis'; got {method!r}")
    if not (isinstance(delta, numbers.Real) and 0.0 < float(delta) < 1.0):
        raise ValueError(f"the delta parameter must be in (0, 1); got {delta!r}")
    cons = check_constraints(sub, constraint)
    if method == "auto":
        method = "exact" if sub.m <= max_exact else "dis"
    if method == "exact":
        lz = exact_log_z(sub) if log_Z is None else log_Z[1]
        la = exact_log_z(sub, cons)
        p = _ratio(la, lz)
        return EventProbability(p, p, p, "exact", (lz, lz, lz), (la, la, la))
    gen = as_generator(rng)
    d = float(delta) / 2.0
    if log_Z is None:
        log_Z = _dis_log_z(build_graphical_model(sub, encoding=encoding), delta=d, time_limit=time_limit,
                           memory_mb=memory_mb, rng=gen)
    lzA = _dis_log_z(build_graphical_model(sub, cons, encoding=encoding), delta=d, time_limit=time_limit,
                     memory_mb=memory_mb, rng=gen)
    lo = _ratio(lzA[0], log_Z[2])
    hi = _ratio(lzA[2], log_Z[0])
    est = _ratio(lzA[1], log_Z[1]) if np.isfinite(log_Z[1]) else 0.5 * (lo + hi)
    est = min(max(est, lo), hi)
    return EventProbability(est, lo, hi, "dis", log_Z, lzA)


def _mention_events(sub, labels):
    """Events and weights per S position for the confidence definition.

    Returns list (per k) of [(constraint, weight)], weights summing to 1.
    """
    S = sub.S
    in_S = np.zeros(labels.shape[0], bool)
    in_S[S] = True
    out = []
    for k, i in enumerate(S):
        mates = np.flatnonzero((labels == labels[i]) & (np.arange(labels.shape[0]) != i))
        if mates.size == 0:
            out.append([(("alone", int(i)), 1.0)])
            continue
        ev = []
        n_fixed = int((~in_S[mates]).sum())
        if n_fixed:
            ev.append((("cluster", int(i), int(labels[i])), n_fixed / mates.size))
        for j in mates[in_S[mates]]:
            ev.append((("same", int(min(i, j)), int(max(i, j))), 1.0 / mates.size))
        out.append(ev)
    return out


def conditional_rows(sub, labels, *, method, delta, time_limit, memory_mb, gen, encoding):
    """(p, lower, upper) per S position for the conditional sub-model ``sub``.

    The mean over each mention's events (``("alone", i)`` for a predicted singleton,
    else ``("cluster", i, c)`` for its fixed cluster mates and ``("same", i, j)`` for its
    mates in S, weighted by mates) of P(A | y_R), each end of the interval holding with
    probability >= 1 - delta (Z with delta/2, each Z_A with delta / (2 n_ev)).

    Parameters
    ----------
    sub : SubProblem
    labels : ndarray of int64, shape (n,)
        The block's predicted cluster labels.
    method : {"exact", "dis"}
    delta, time_limit, memory_mb, encoding
        As :func:`event_probability`.
    gen : numpy.random.Generator

    Returns
    -------
    list of (float, float, float)
        (p, p_lower, p_upper) per position of ``sub.S``.
    """
    events = _mention_events(sub, labels)
    n_ev = max(len(e) for e in events)
    if method == "exact":
        lz = exact_log_z(sub)
        log_Z = (lz, lz, lz)
    else:
        gm = build_graphical_model(sub, encoding=encoding)
        log_Z = _dis_log_z(gm, delta=delta / 2.0, time_limit=time_limit, memory_mb=memory_mb, rng=gen)
    cache = {}
    rows = []
    for ev in events:
        p = lo = hi = 0.0
        for con, w in ev:
            if con not in cache:
                # delta/2 for Z, delta/(2 n_ev) for each Z_A: each end of a mention's
                # interval holds with probability >= 1 - delta (union bound over its
                # <= n_ev events), the interval with >= 1 - 2 delta
                cache[con] = event_probability(sub, con, method=method, delta=delta / n_ev,
                                               time_limit=time_limit, memory_mb=memory_mb, rng=gen,
                                               log_Z=log_Z, encoding=encoding)
            r = cache[con]
            p += w * r.p
            lo += w * r.p_lower
            hi += w * r.p_upper
        rows.append((min(max(p, lo), hi), lo, hi))
    return rows
