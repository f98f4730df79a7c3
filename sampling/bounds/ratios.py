"""Certified probabilities of events, P(A) = Z_A / Z, from one stream of importance samples.

An *event* A is a set of configurations given by its indicator 1[x in A]; its probability
under the model is the ratio of two partition functions, P(A) = Z_A / Z with
Z_A = sum_x f(x) 1[x in A]. :func:`event_probabilities` bounds any number of such ratios at
once, all holding jointly with probability at least 1 - delta, from one stream of samples
of the weighted mini-bucket (WMB) proposal of [1]_: every Z_A is the mean of the same
importance weights masked by its indicator, so one set of samples serves Z and every event.
This is the one implementation of "a probability from two bounded partition functions" in
the package: :func:`sampling.bounds.marginals` (events X_i = x) and the sub-model events of
:mod:`coref.confidence.events` both use it.

References
----------
.. [1] Lou, Dechter & Ihler (2017), "Dynamic Importance Sampling for Anytime Bounds of the
   Partition Function", NIPS. Eq. 7-8, 13-14, Theorem 1.
.. [2] Maurer & Pontil (2009), "Empirical Bernstein bounds and sample variance
   penalization", COLT, Theorem 4.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
import time
import warnings

import numpy as np

from ..exceptions import BuildInterrupted, ConvergenceWarning
from ..utils.rng import as_generator
from .column_sums import WeightedColumnSums
from .exact import check_memory
from .model import GraphicalModel
from .schedule import plan_wmb
from .wmb import WeightedMiniBucket

__all__ = ["EventBounds", "event_probabilities", "WeightedColumnSums", "sample_columns", "check_delta",
           "check_budget", "look_delta", "WMB_TIME_SHARE", "MAX_TIMED_PASSES", "FIRST_LOOK"]

#: Default share of ``time_limit`` the weighted mini-bucket may take before the sampling starts.
WMB_TIME_SHARE = 0.35
#: Most reparameterisation passes of a WMB whose passes are limited by time (``timed_passes``)
#: rather than by the nominal work plan of :func:`sampling.bounds.schedule.plan_wmb`: that plan
#: prices a pass by its table size, which on small dense models (a coreference sub-model of 16
#: mentions: 120 pairwise factors of up to 39 x 39 states, 0.1 s per pass in Python) is far
#: below the real cost, so it plans 1-7 passes where the bound still falls by nats per pass.
MAX_TIMED_PASSES = 100
#: Samples at the first look of an early-stopping run (``target_width``); look j comes at the
#: first batch end with at least ``FIRST_LOOK * 2**j`` samples.
FIRST_LOOK = 1024


def look_delta(delta, j):
    """The share of ``delta`` spent at look j = 0, 1, ...: delta 6 / (pi^2 (j + 1)^2), which
    sums to delta over all looks (the union bound that makes stopping at any look valid)."""
    return delta * 6.0 / (math.pi ** 2 * (j + 1) ** 2)


@dataclasses.dataclass(frozen=True)
class EventBounds:
    """Estimates and joint bounds of P(A_j) = Z_{A_j} / Z for events j = 0 .. n_events - 1.

    Attributes
    ----------
    p, p_lower, p_upper : ndarray of float64, shape (n_events,)
        Self-normalised estimate and bounds, ``p_lower <= p <= p_upper`` in [0, 1].
    delta : float
        All the intervals and the bounds on ln Z hold jointly with probability >= 1 - delta.
    log_Z, log_Z_lower, log_Z_upper : float
        Estimate of ln Z (Eq. 13 of [1]_) and its Theorem 1 bounds.
    n_samples : int
        Importance samples drawn.
    n_bounds : int
        Quantities bounded (Z and every event); each of their 2 * n_bounds one-sided tests
        ran at ``delta / (2 * n_bounds)``.
    meta : dict
        ``i_bound``, ``log_Z_wmb`` (the WMB upper bound U), ``time_s``, ``wmb_s`` and the settings.
    """

    p: np.ndarray
    p_lower: np.ndarray
    p_upper: np.ndarray
    delta: float
    log_Z: float
    log_Z_lower: float
    log_Z_upper: float
    n_samples: int
    n_bounds: int
    meta: dict = dataclasses.field(default_factory=dict)

    def __len__(self):
        return int(self.p.shape[0])

    @property
    def width(self):
        """``p_upper - p_lower`` per event."""
        return self.p_upper - self.p_lower


def check_delta(delta):
    """``delta`` as a float in (0, 0.5); ValueError otherwise."""
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not 0.0 < float(delta) < 0.5:
        raise ValueError(f"the delta parameter must be a number in (0, 0.5); got {delta!r} instead")
    return float(delta)


def check_budget(time_limit, max_samples):
    """Validate the sampling budget: ``time_limit`` None or > 0 s, ``max_samples`` None or an int
    >= 2, at least one given (ValueError otherwise)."""
    if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(time_limit, numbers.Real)
                                   or not time_limit > 0):
        raise ValueError(f"the time_limit parameter must be None or > 0 seconds; got {time_limit!r} instead")
    if max_samples is not None and (isinstance(max_samples, bool) or not isinstance(max_samples, numbers.Integral)
                                    or max_samples < 2):
        raise ValueError(f"the max_samples parameter must be None or an int >= 2; got {max_samples!r} instead")
    if time_limit is None and max_samples is None:
        raise ValueError("the sampling path needs a budget: give time_limit or max_samples")


def _build_wmb(model, time_limit, budget, i_bound, t0, now, share, timed_passes):
    """The WMB the sampler draws from: the top rung of :func:`plan_wmb` for the time, its
    passes stopped at ``share`` of it (``timed_passes``: up to :data:`MAX_TIMED_PASSES`
    passes until then or convergence, instead of the plan's nominal count); if even its
    first pass runs past twice that share, the cheapest rung without passes."""
    share = math.inf if time_limit is None else share * time_limit
    probe = WeightedMiniBucket(model, i_bound=i_bound, memory_mb=budget).prepare()
    rungs = plan_wmb(probe, memory_mb=budget, time_limit=math.inf if time_limit is None else time_limit,
                     i_bound=i_bound)
    top = rungs[-1]
    n_iters = max(top.n_iters, MAX_TIMED_PASSES) if timed_passes and not top.exact else top.n_iters

    def stop():
        return now() - t0 > 2 * share

    try:
        return WeightedMiniBucket(model, i_bound=top.i_bound, memory_mb=budget, elim_order=probe.elim_order,
                                  n_iters=n_iters, time_limit=max(share - (now() - t0), 0.0)
                                  if math.isfinite(share) else None, clock=now).fit(stop=stop)
    except BuildInterrupted:
        return WeightedMiniBucket(model, i_bound=rungs[0].i_bound, memory_mb=budget,
                                  elim_order=probe.elim_order, n_iters=0).fit()


def _sampler(wmb, model):
    """``draw(k, gen) -> (X, log_w)``: k samples of the WMB proposal and ln f/q (the compiled
    sampler when the WMB exposes its tables)."""
    from ._ladder import wmb_evaluator
    from .proposal import make_fast_proposal

    fast = make_fast_proposal(wmb, wmb_evaluator(wmb, model)) if getattr(wmb, "tables", None) is not None \
        else None
    if fast is None:
        def draw(k, gen):
            X, log_q = wmb.sample(k, gen)
            return X, model.log_value(X) - np.asarray(log_q, dtype=float)
        return draw
    kernel, roots, c = fast.kernel, fast.roots, float(fast.log_constant)
    n_u = int(fast.size[roots].sum())

    def draw_fast(k, gen):
        # row i of the uniforms is what the i-th ``fast.sample(gen, zeros, roots)`` call would
        # draw, so the draws are the same as one call per sample, without its per-call copies
        X = np.zeros((k, model.n_vars), dtype=np.int64)
        log_w = np.empty(k)
        u = gen.random((k, n_u))
        for i in range(k):
            log_q, log_g = kernel.sample(roots, X[i], u[i])
            log_w[i] = log_g + c - log_q
        return X, log_w
    return draw_fast


def sample_columns(model, hits, n_cols, *, time_limit, memory_mb, gen, i_bound=None, max_samples=None,
                   wmb_share=WMB_TIME_SHARE, timed_passes=False, on_look=None, t0=None, now=time.perf_counter,
                   sampler="wmb-is"):
    """Draw importance samples until the budget ends, summing the weights per indicator column.

    Parameters
    ----------
    model : GraphicalModel
    hits : callable
        ``hits(X) -> (rows, cols)``: the non-zero entries of the 0/1 indicator matrix of a
        batch ``X`` (ndarray of int64, shape (k, n_vars)).
    n_cols : int
    time_limit : float or None
        Seconds since ``t0`` (the WMB takes at most ``wmb_share`` of them).
    memory_mb : float
        WMB budget (MiB), already validated.
    gen : numpy.random.Generator
    i_bound, max_samples : int or None
    wmb_share : float in (0, 1)
    timed_passes : bool, default False
        WMB passes until ``wmb_share`` of the time is used or the bound converges (at most
        :data:`MAX_TIMED_PASSES`), rather than the work plan's count.
    on_look : callable, optional
        ``on_look(sums, j) -> bool``, called at the j-th look (j = 0, 1, ...), the first
        batch end with at least ``FIRST_LOOK * 2**j`` samples (a schedule fixed in
        advance); True stops the sampling.
    t0 : float, optional
        Start of the budget on the clock ``now`` (default: now).
    now : callable
        The clock (``time.perf_counter`` or ``time.process_time``).
    sampler : {"wmb-is", "dis"}, default "wmb-is"
        "wmb-is": samples of the WMB proposal, every weight bounded by the WMB bound U.
        "dis": the draws of DIS (Alg. 1 of [1]_, :class:`sampling.bounds.dis_stream.DisStream`),
        each weight bounded by the U_S of its tree: the AND/OR search tree first grows
        within ``memory_mb`` (until full, or ``dis_stream.SEARCH_SHARE`` of the time left;
        with ``max_samples`` alone, at most N_d expansions per sample), then the rounds of
        Alg. 1 go on from it; the weights vary far less than WMB-IS's once the tree has
        tightened U_S. Falls back to "wmb-is" when the WMB has no lookup tables or is
        exact (its proposal is then the model itself: every weight is Z = U).

    Returns
    -------
    (WeightedColumnSums, WeightedMiniBucket, float)
        The sums (``sums.meta``: the sampler's figures; ``sums.log_u_min``: the tightest
        deterministic bound on ln Z seen, U_S for DIS), the WMB (its ``log_Z_upper`` is U)
        and the seconds the WMB took.
    """
    t0 = now() if t0 is None else t0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        wmb = _build_wmb(model, time_limit, memory_mb, i_bound, t0, now, wmb_share, timed_passes)
    wmb_s = now() - t0
    sums = WeightedColumnSums(n_cols, float(wmb.log_Z_upper))
    stream = None
    if sampler == "dis" and getattr(wmb, "tables", None) is not None and not getattr(wmb, "is_exact", False):
        from .dis_stream import DisStream

        stream = DisStream(wmb, model, memory_mb)
        draw = stream.draw
    else:
        wmb_is = _sampler(wmb, model)
        draw = lambda k, g: (*wmb_is(k, g), None)  # noqa: E731
    # DIS batches stay small: the indicator sums of a batch of n_vars-wide rows then stay in
    # cache (pedigree20, 387 variables: 5.5-6.6 us per sample at 256 rows, 12 at 4096)
    n, batch, max_batch = 0, 256, 4096 if stream is None else 256
    deadline = math.inf if time_limit is None else t0 + time_limit
    if stream is not None:  # two-stage: the search first, up to SEARCH_SHARE of the time left
        from .dis_stream import SEARCH_SHARE

        stop_at = now() + SEARCH_SHARE * (deadline - now())
        stream.search_first(lambda: now() >= stop_at,
                            None if max_samples is None else max_samples * stream.n_expansions)
    next_look, n_looks = FIRST_LOOK, 0
    while (max_samples is None or n < max_samples) and (n < 2 or now() < deadline):
        k = batch if max_samples is None else min(batch, max_samples - n)
        X, log_w, log_U = draw(k, gen)
        rows, cols = hits(X)
        sums.add(log_w, rows, cols, log_U)
        n += len(log_w)
        batch = min(2 * batch, max_batch)
        if on_look is not None and n >= next_look:
            n_looks += 1
            next_look *= 2
            if on_look(sums, n_looks - 1):
                break
    sums.meta["sampler"] = "wmb-is" if stream is None else "dis"
    if stream is not None:
        sums.log_u_min = min(sums.log_u_min, stream.log_Z_upper)
        sums.meta.update(log_Z_search=stream.log_Z_upper, n_expansions=int(stream.search.n_expansions_),
                         n_nodes=int(stream.search.n_nodes_),
                         n_tries=stream.n_tries, n_subproblems=stream.n_subproblems, n_capped=stream.n_capped)
    return sums, wmb, wmb_s


def event_probabilities(model, indicators, n_events, *, time_limit=10.0, delta=0.05, memory_mb=256, rng=None,
                        i_bound=None, max_samples=None, clock="wall", wmb_share=WMB_TIME_SHARE,
                        timed_passes=True, target_width=None, sampler="wmb-is"):
    """Certified P(A_j) = Z_{A_j} / Z of ``n_events`` events at once, from one sample stream.

    Parameters
    ----------
    model : GraphicalModel
        f(x) = exp(sum of its log factors); Z = sum_x f(x) > 0.
    indicators : callable
        ``indicators(X)`` -> array_like of bool, shape (k, n_events): 1[x in A_j] for each
        row x of ``X`` (ndarray of int64, shape (k, model.n_vars)).
    n_events : int >= 1
    time_limit : float or None, default 10
        Seconds (on ``clock``) for the whole call: the weighted mini-bucket (WMB) takes at
        most ``wmb_share`` of it, the sampling the rest. None: give ``max_samples``.
    delta : float in (0, 0.5), default 0.05
        All the intervals and the bounds on ln Z hold jointly with probability >= 1 - delta.
    memory_mb : float, default 256
        WMB budget (MiB).
    rng : None, int or numpy.random.Generator
    i_bound : int, optional
        WMB i-bound (default: the largest that fits the memory and the time share).
    max_samples : int, optional
        Stop after this many samples.
    clock : {"wall", "cpu"}, default "wall"
    wmb_share : float in (0, 1), default :data:`WMB_TIME_SHARE`
        Share of ``time_limit`` for the WMB.
    timed_passes : bool, default True
        WMB reparameterisation passes until ``wmb_share`` of the time is used or the bound
        converges (at most :data:`MAX_TIMED_PASSES`); False: the nominal work plan of
        :func:`sampling.bounds.schedule.plan_wmb` (as :func:`sampling.bounds.marginals`).
    target_width : float in (0, 1], optional
        Stop sampling early, at a look of the fixed schedule of :func:`sample_columns`
        (:data:`FIRST_LOOK` samples, then each doubling), once every interval is at most
        this wide. Look j (and the final result, at the look after the last) spends
        :func:`look_delta` (delta, j), so that the result holds with probability >= 1 - delta
        whatever look the run stops at. None: no looks, the whole ``delta`` at the end.
    sampler : {"wmb-is", "dis"}, default "wmb-is"
        The samples: the WMB proposal alone, or DIS (Alg. 1 of [1]_; the AND/OR search
        tree grows within ``memory_mb`` while sampling), as in :func:`sample_columns`.

    Returns
    -------
    EventBounds

    Raises
    ------
    TypeError
        If ``model`` is not a GraphicalModel or ``indicators`` is not callable.
    ValueError
        For a bad ``n_events``, ``delta``, ``clock``, ``wmb_share``, ``sampler``, budget, or an
        indicator matrix of the wrong shape.
    MemoryError
        When not even the smallest WMB fits ``memory_mb``.

    Notes
    -----
    One WMB proposal q of [1]_ (Eq. 7-8) with bound U >= f/q; samples x ~ q with weights
    w = f(x) / q(x), r = w / U in [0, 1]. The mean of r estimates Z / U, and Theorem 1 (Eq.
    13-14) bounds Z. For event j and a trial p, D(p) = r (1[x in A_j] - p) lies in an
    interval of length 1 with mean (Z_{A_j} - p Z) / U, zero at p = P(A_j); the empirical
    Bernstein bound of Theorem 1 rejects p when |mean D(p)| exceeds its deviation term and
    the interval is the set of p not rejected (:meth:`WeightedColumnSums.self_normalised`).
    The fluctuations of w shared by numerator and denominator cancel, so this is much
    tighter than dividing separate bounds L_A / U_Z and U_A / L_Z. With n_bounds =
    1 + n_events quantities, each of the 2 n_bounds one-sided tests runs at
    delta / (2 n_bounds): by the union bound everything holds jointly with probability
    >= 1 - delta. The estimate is sum w 1[x in A_j] / sum w. The samples come from the
    WMB proposal without the search tree of DIS (N_d = 0, i.e. WMB-IS).

    Examples
    --------
    >>> from sampling.bounds import Factor, GraphicalModel
    >>> m = GraphicalModel([2, 2], [Factor.from_values((0, 1), [[1.0, 2.0], [3.0, 4.0]])])
    >>> r = event_probabilities(m, lambda X: X[:, 0] == X[:, 1], 1, time_limit=None, max_samples=20000, rng=0)
    >>> bool(r.p_lower[0] <= 0.5 <= r.p_upper[0])   # P(x0 = x1) = (1 + 4) / 10
    True
    """
    if not isinstance(model, GraphicalModel):
        raise TypeError(f"the model parameter must be a GraphicalModel; got {type(model).__name__} instead")
    if not callable(indicators):
        raise TypeError(f"the indicators parameter must be callable; got {type(indicators).__name__} instead")
    if isinstance(n_events, bool) or not isinstance(n_events, numbers.Integral) or n_events < 1:
        raise ValueError(f"the n_events parameter must be an int >= 1; got {n_events!r} instead")
    delta = check_delta(delta)
    budget = check_memory(memory_mb)
    check_budget(time_limit, max_samples)
    if clock not in ("wall", "cpu"):
        raise ValueError(f"the clock parameter must be 'wall' or 'cpu'; got {clock!r} instead")
    if isinstance(wmb_share, bool) or not isinstance(wmb_share, numbers.Real) or not 0.0 < wmb_share < 1.0:
        raise ValueError(f"the wmb_share parameter must be in (0, 1); got {wmb_share!r} instead")
    if target_width is not None and (isinstance(target_width, bool) or not isinstance(target_width, numbers.Real)
                                     or not 0.0 < target_width <= 1.0):
        raise ValueError(f"the target_width parameter must be None or in (0, 1]; got {target_width!r} instead")
    if sampler not in ("wmb-is", "dis"):
        raise ValueError(f"the sampler parameter must be 'wmb-is' or 'dis'; got {sampler!r} instead")
    n_events = int(n_events)
    now = time.perf_counter if clock == "wall" else time.process_time
    t0 = now()

    def hits(X):
        ind = np.asarray(indicators(X), dtype=bool)
        if ind.ndim == 1 and n_events == 1:
            ind = ind[:, None]
        if ind.shape != (X.shape[0], n_events):
            raise ValueError(f"indicators(X) must have shape ({X.shape[0]}, {n_events}); got {ind.shape}")
        rows, cols = np.nonzero(ind)
        return rows.astype(np.int64), cols.astype(np.int64)

    n_bounds = 1 + n_events
    looks, stopped_at = [], []

    def on_look(sums, j):
        looks.append(j)
        res = sums.self_normalised(np.arange(n_events), look_delta(delta, j) / (2 * n_bounds))
        if np.max(res[2] - res[1]) <= target_width:
            stopped_at.append(j)
            return True
        return False

    sums, wmb, wmb_s = sample_columns(model, hits, n_events, time_limit=time_limit, memory_mb=budget,
                                      gen=as_generator(rng), i_bound=i_bound, max_samples=max_samples,
                                      wmb_share=float(wmb_share), timed_passes=bool(timed_passes),
                                      on_look=None if target_width is None else on_look, t0=t0, now=now,
                                      sampler=sampler)
    if target_width is None:
        d_final = delta
    else:  # the look that stopped the run, else one more look at the end
        d_final = look_delta(delta, stopped_at[0] if stopped_at else len(looks))
    dk = d_final / (2 * n_bounds)
    acc_z = sums.accumulator(sums.z_col, dk)
    z_lo, z_hi = acc_z.bounds(min(sums.log_u, sums.log_u_min))
    est, lo, hi = sums.self_normalised(np.arange(n_events), dk)
    est = np.where(np.isnan(est), (lo + hi) / 2, est)
    meta = {"i_bound": int(wmb.i_bound), "log_Z_wmb": sums.log_u, "time_s": now() - t0, "wmb_s": wmb_s,
            "clock": clock, "time_limit": time_limit, "memory_mb": budget, "delta_each": dk,
            "wmb_share": float(wmb_share), "wmb_passes": int(getattr(wmb, "n_iters_", 0)),
            "target_width": target_width, "n_looks": len(looks), **sums.meta}
    return EventBounds(np.clip(est, lo, hi), lo, hi, delta, acc_z.log_Z_hat, z_lo, z_hi, sums.n, n_bounds, meta)
