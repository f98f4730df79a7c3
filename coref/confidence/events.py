"""Probabilities of events of a coreference sub-model: exact, or certified by sampling.bounds.

For a sub-model S of a block, the rest R fixed at the predicted assignment
(:mod:`coref.confidence.submodels`), P(A | y_R) = Z_A / Z_S for an event A.  They are
summed exactly (:func:`coref.confidence.exact.exact_log_z`) or certified by
:func:`sampling.bounds.event_probabilities` on the sub-model's graphical model: the one
implementation in the package of "a probability from two bounded partition functions".
It draws one stream of weighted mini-bucket importance samples (Lou, Dechter & Ihler
2017, Eq. 7-8) for Z_S and every event of the sub-model at once (each Z_A is the mean of
the same weights masked by the event's indicator) and inverts the empirical Bernstein
bound of their Theorem 1 for each ratio; with n events, each of the 2 (n + 1) one-sided
tests runs at delta / (2 (n + 1)), so by the union bound all the intervals of a sub-model
hold jointly with probability at least 1 - delta.

:func:`conditional_rows` turns the events of the confidence definition (module
docstring of :mod:`coref.confidence.assignment`) into each mention's probability and
interval; this module is a thin adapter from sub-models and events to
:mod:`sampling.bounds`.

References
----------
.. [1] Lou, Dechter & Ihler (2017), "Dynamic Importance Sampling for Anytime Bounds of
   the Partition Function", NIPS, Eq. 7-8, 13-14, Theorem 1.
"""
from __future__ import annotations

import math
import numbers
import time

import numpy as np

from coref.confidence.exact import DEFAULT_MAX_EXACT, exact_log_z
from coref.confidence.submodels import build_graphical_model, check_constraints, event_indicators
from sampling import bounds
from sampling.utils.rng import as_generator

__all__ = ["EventProbability", "event_probability", "conditional_rows", "certify_events", "CERTIFY_I_BOUND",
           "CERTIFY_WMB_SHARE", "CERTIFY_TARGET_WIDTH"]

#: WMB i-bound of :func:`certify_events`. A sub-model's graphical model is a complete graph
#: of pairwise factors (m variables of up to K + m states); i-bound 1 gives each factor its
#: own mini-bucket, and its passes are 4x cheaper than i-bound 2's, so the bound converges
#: far sooner. Measured (CPU seconds, target width 0.05, one loaded 2-core machine): a
#: 16-mention dev sub-model (K = 23, ln Z = 128.65) reaches the target in 1.3 s with
#: i-bound 1 (upper bound 129.22 after 17 passes in 0.3 s) and 2.5 s with i-bound 2 (129.79
#: after 7 passes in 0.6 s); a 16-mention sub-model of the shipped data (K = 52, ln Z = 3.77)
#: in 3.2 s with i-bound 1 (4.83 after 17 passes), never within 6 s with i-bound 2 (its
#: passes take 0.5 s each: 27.9 after 2). i-bound 3 needs 1.9 s for its first pass alone.
CERTIFY_I_BOUND = 1
#: Share of a sub-model's time for the WMB passes (until convergence); the rest samples.
#: The self-normalised intervals are vacuous until U / Z is a few nats (the 16-mention
#: sub-model: 6.5 nats after 3 passes, 0.5 after 10), and a converged WMB stops early.
CERTIFY_WMB_SHARE = 0.5
#: A sub-model's sampling stops at the first look (of a schedule fixed in advance, each
#: look spending its share of delta) where every event's interval is at most this wide,
#: so that the budget left goes to the next sub-model (or is not spent). Measured on the dev
#: names (default budget, load ~12 on 2 cores): 0.05 certified one 16-mention sub-model in
#: 3.8-4.2 s, row widths median 0.030, max 0.046; 0.1 took 2.3 s for it (median 0.049), then
#: started a harder one (K = 30) that ran out of budget (all 32 rows: median 0.15).
CERTIFY_TARGET_WIDTH = 0.05


class EventProbability:
    """P(A | y_R) of one event in one sub-model, with its interval.

    Attributes
    ----------
    p : float
        Estimate (exact, or the self-normalised ratio sum w 1[A] / sum w of the sample
        stream, clipped to the interval; the interval's midpoint if no sample had a
        positive weight).
    p_lower, p_upper : float
        Interval in [0, 1]; equal to ``p`` for exact evaluation.
    method : str
        ``"exact"`` or ``"dis"`` (certified by :func:`sampling.bounds.event_probabilities`:
        weighted mini-bucket importance samples, i.e. DIS of Lou, Dechter & Ihler 2017
        without its search tree, N_d = 0).
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


def _ratio(log_a, log_b):
    """min(1, exp(log_a - log_b)): 0 if Z_A's bound is 0, 1 if Z's lower bound is 0 (vacuous)."""
    if not np.isfinite(log_a):
        return 0.0
    if not np.isfinite(log_b):
        return 1.0
    return float(math.exp(min(0.0, log_a - log_b)))


def _log_or_ninf(x):
    return math.log(x) if x > 0 else -math.inf


def certify_events(sub, events, *, delta=0.05, time_limit=10.0, memory_mb=256, rng=0, encoding="leader",
                   target_width=CERTIFY_TARGET_WIDTH):
    """Certified P(A_j | y_R) of several events of one sub-model, jointly, from one sample stream.

    Parameters
    ----------
    sub : coref.confidence.submodels.SubProblem
    events : list of list of tuple
        Each event a list of checked constraints (:func:`check_constraints`), all of which
        must hold.
    delta : float in (0, 0.5), default 0.05
        All the intervals hold jointly with probability >= 1 - delta.
    time_limit : float, default 10
        Wall-clock seconds for the sub-model, building its graphical model included.
    memory_mb : float, default 256
        Weighted mini-bucket budget (MiB).
    rng : None, int or numpy.random.Generator
    encoding : {"leader", "growth"}
    target_width : float in (0, 1] or None, default :data:`CERTIFY_TARGET_WIDTH`
        Stop once every interval is at most this wide (the ``target_width`` of
        :func:`sampling.bounds.event_probabilities`; None: use all of ``time_limit``).

    Returns
    -------
    list of EventProbability
        Method ``"dis"``, one per event, in order.

    Raises
    ------
    ValueError
        For a bad ``delta`` or ``time_limit`` (from :func:`sampling.bounds.event_probabilities`).

    Notes
    -----
    :func:`sampling.bounds.event_probabilities` (Lou, Dechter & Ihler 2017, Theorem 1, with
    the union bound over Z and the events) on :func:`build_graphical_model`, whose
    partition function is Z_S, with the indicators of :func:`event_indicators`. The bounds
    on ln Z_A are ``p_lower Z_lower <= Z_A <= p_upper Z_upper`` (under the same joint event).
    """
    t0 = time.perf_counter()
    gm = build_graphical_model(sub, encoding=encoding)
    left = float(time_limit) - (time.perf_counter() - t0)
    res = bounds.event_probabilities(gm, event_indicators(sub, events), len(events), delta=delta,
                                     time_limit=max(left, 1e-3), memory_mb=memory_mb, rng=as_generator(rng),
                                     i_bound=CERTIFY_I_BOUND, wmb_share=CERTIFY_WMB_SHARE, timed_passes=True,
                                     target_width=target_width)
    lz = (res.log_Z_lower, res.log_Z, res.log_Z_upper)
    return [EventProbability(p, lo, hi, "dis", lz, (_log_or_ninf(lo) + lz[0], _log_or_ninf(p) + lz[1],
                                                    _log_or_ninf(hi) + lz[2]))
            for p, lo, hi in zip(res.p.tolist(), res.p_lower.tolist(), res.p_upper.tolist())]


def event_probability(sub, constraint, *, method="auto", delta=0.05, time_limit=10.0, memory_mb=256,
                      rng=0, log_Z=None, encoding="leader", max_exact=DEFAULT_MAX_EXACT):
    """P(A | y_R) = Z_A / Z_S for an event A of a sub-model, exact or certified.

    Parameters
    ----------
    sub : coref.confidence.submodels.SubProblem
    constraint : tuple or list of tuples
        The event (see :func:`coref.confidence.submodels.submodel`).
    method : {"auto", "exact", "dis"}, default "auto"
        "auto": exact if ``sub.m <= max_exact``, else "dis" (:func:`certify_events`).
    delta : float in (0, 0.5), default 0.05
        "dis": the interval (and the bounds on ln Z) hold with probability >= 1 - delta.
    time_limit : float, default 10
        "dis": wall-clock seconds.
    memory_mb : float, default 256
        "dis": weighted mini-bucket budget (MiB).
    rng : None, int or numpy.random.Generator
    log_Z : tuple of float, optional
        "exact": (lower, estimate, upper) of ln Z already computed (shared by several
        events); its estimate is used. Ignored by "dis", which bounds Z from the same
        samples as Z_A.
    encoding : {"leader", "growth"}

    Returns
    -------
    EventProbability

    Raises
    ------
    ValueError
        For a bad method or delta, or exact evaluation of more than
        ``coref.confidence.exact.MAX_EXACT_SUBSET`` mentions.

    References
    ----------
    .. [1] Lou, Dechter & Ihler (2017), NIPS, Theorem 1.
    """
    if method not in ("auto", "exact", "dis"):
        raise ValueError(f"the method parameter must be 'auto', 'exact' or 'dis'; got {method!r}")
    if not (isinstance(delta, numbers.Real) and 0.0 < float(delta) < 0.5):
        raise ValueError(f"the delta parameter must be in (0, 0.5); got {delta!r}")
    cons = check_constraints(sub, constraint)
    if method == "auto":
        method = "exact" if sub.m <= max_exact else "dis"
    if method == "exact":
        lz = exact_log_z(sub) if log_Z is None else log_Z[1]
        la = exact_log_z(sub, cons)
        p = _ratio(la, lz)
        return EventProbability(p, p, p, "exact", (lz, lz, lz), (la, la, la))
    return certify_events(sub, [cons], delta=float(delta), time_limit=time_limit, memory_mb=memory_mb, rng=rng,
                          encoding=encoding)[0]


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
    mates in S, weighted by mates) of P(A | y_R). With ``method="dis"`` the distinct
    events of all the mentions are certified together (:func:`certify_events`): all the
    events' intervals, hence all the rows' (a weighted mean of lower ends is a lower
    bound of the weighted mean), hold jointly with probability >= 1 - delta.

    Parameters
    ----------
    sub : SubProblem
    labels : ndarray of int64, shape (n,)
        The block's predicted cluster labels.
    method : {"exact", "dis"}
    delta, memory_mb, encoding
        As :func:`certify_events`.
    time_limit : float
        "dis": wall-clock seconds for the whole sub-model.
    gen : numpy.random.Generator

    Returns
    -------
    list of (float, float, float)
        (p, p_lower, p_upper) per position of ``sub.S``.
    """
    events = _mention_events(sub, labels)
    distinct = sorted({con for ev in events for con, _ in ev})
    if method == "exact":
        lz = exact_log_z(sub)
        res = {con: event_probability(sub, con, method="exact", log_Z=(lz, lz, lz)) for con in distinct}
    else:
        checked = [check_constraints(sub, con) for con in distinct]
        res = dict(zip(distinct, certify_events(sub, checked, delta=delta, time_limit=time_limit,
                                                memory_mb=memory_mb, rng=gen, encoding=encoding)))
    rows = []
    for ev in events:
        p = lo = hi = 0.0
        for con, w in ev:
            r = res[con]
            p += w * r.p
            lo += w * r.p_lower
            hi += w * r.p_upper
        rows.append((min(max(p, lo), hi), lo, hi))
    return rows
