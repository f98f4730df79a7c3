"""The ladder of weighted mini-buckets (WMB) an anytime run starts with, cheapest first.

:func:`build_wmb_ladder` builds the rungs of :func:`sampling.bounds.schedule.plan_wmb`;
while a larger rung runs its passes, WMB-IS draws from the best finished rung tighten the
bounds (Lou, Dechter & Ihler 2017, NIPS: WMB-IS is DIS without search).
"""
from __future__ import annotations

import math
import warnings

from ..exceptions import BuildInterrupted, ConvergenceWarning
from ._recorder import NEG_INF, trace_row
from .aobfs import tree_structure
from .importance import FactorEvaluator, constant_bucket, make_fast_proposal, sample_wmb_is
from .ordering import randomized_min_fill_orders, total_log_size
from .schedule import SAMPLES_PER_MIB, plan_wmb
from .trace import BoundTrace
from .wmb import WeightedMiniBucket

__all__ = ["wmb_evaluator", "ladder_row", "final_trace", "build_wmb_ladder", "ORDER_RESTARTS"]

#: Randomized weighted min-fill orders tried after the first rung (when no order is given and
#: the ladder has more than one rung); the larger rungs use the best if it beats the default
#: order on total exact-table size (:func:`_better_order`). Measured (linkage_25, UAI 2014):
#: the default order's WMB at i-bound 12 (534 MiB) bounds ln Z by -190.01; the best of five
#: restarts gives -193.45 at i-bound 14 with 461 MiB, built in about half the time.
ORDER_RESTARTS = 6


def wmb_evaluator(wmb, model):
    """FactorEvaluator of the model the WMB used (card-1 variables squeezed out), so that
    factor buckets agree with the WMB arc weights."""
    parent, _, _ = tree_structure(wmb.pseudo_tree, int(len(model.cards)))
    wmodel = getattr(wmb, "model", None) or model
    return FactorEvaluator(wmodel, parent, const_bucket=constant_bucket(wmb, wmodel, parent))


def ladder_row(acc, loop):
    """Trace row while the WMB ladder runs: the best WMB bound and the WMB-IS bounds."""
    det = loop["u_min"]
    if acc.n == 0:
        return trace_row(det, NEG_INF, math.nan, 0, 0, 0, False, det)
    lo, up = acc.bounds(det)
    return trace_row(up, lo, acc.log_Z_hat, acc.n, 0, 0, acc.lower_is_markov, det)


def final_trace(method, rec, meta, acc, loop):
    """The trace when the budget ran out during the WMB ladder (no method phase)."""
    rec.tick(lambda: ladder_row(acc, loop), force=True)
    meta["n_bound_violations"] = acc.n_bound_violations
    return BoundTrace.from_rows(rec.rows, method=method, meta=meta)


def build_wmb_ladder(model, i_bound, memory_mb, elim_order, time_limit, rec, acc, loop, gen, meta,
                     sampling, max_samples, n_restarts=ORDER_RESTARTS):
    """Build the WMBs of :func:`sampling.bounds.schedule.plan_wmb`, cheapest first.

    Each finished rung whose bound is the best so far records a trace row; while a larger
    rung runs its passes, WMB-IS draws from the best finished rung go into ``acc`` (their
    U_i is that rung's bound), a fixed number per pass (work-based, so the run is
    deterministic given the seed and the work done). A rung cut by the time budget is
    dropped (the first one is never cut, it is the cheap one). A rung at the induced width
    is exact and ends the ladder.

    Returns
    -------
    (WeightedMiniBucket or None, FactorEvaluator or None, FastProposal or None)
        The best finished rung (None if none finished), its evaluator and proposal.
    """
    probe = WeightedMiniBucket(model, memory_mb=memory_mb, elim_order=elim_order).prepare()
    rungs = plan_wmb(probe, memory_mb=memory_mb, time_limit=time_limit, i_bound=i_bound)
    order = probe.elim_order
    best = {"wmb": None, "ev": None, "fast": None}
    history = []
    meta["wmb_ladder"] = history

    def stop():
        return rec.elapsed() >= time_limit

    def on_pass(rung_mb):
        def draw(w):
            if w is not None and math.isfinite(w.bound_history_[-1]) and w.bound_history_[-1] < loop["u_min"]:
                # every pass's bound is a valid upper bound: the trace gets it at once
                loop["u_min"] = float(w.bound_history_[-1])
                rec.tick(lambda: ladder_row(acc, loop), force=True)
            if not sampling or best["wmb"] is None or stop():
                return
            k = max(1, int(math.ceil(SAMPLES_PER_MIB * rung_mb)))
            if max_samples is not None:
                k = min(k, max_samples - acc.n)
            if k <= 0:
                return
            u = float(best["wmb"].log_Z_upper)
            # chunks of 64, 128, 256, ... draws (fixed, so deterministic), a trace row after
            # each: the first lower bound comes after a few milliseconds, not after the batch
            chunk = 64
            while k > 0:
                c = min(chunk, k)
                log_w = sample_wmb_is(best["wmb"], best["ev"], c, gen, fast=best["fast"])
                acc.add(log_w, u)
                loop["n_done"] += c
                loop["u_max"] = max(loop["u_max"], u)
                rec.tick(lambda: ladder_row(acc, loop))
                k -= c
                chunk *= 2
                if stop():
                    break
        return draw

    j = 0
    while j < len(rungs):
        rung = rungs[j]
        if j == 1:
            # samples from the first rung at once: the first lower bound does not wait for
            # the order restarts (about 1 s on a 1000-variable pedigree)
            on_pass(rung.memory_mb)(None)
        if j == 1 and elim_order is None:
            # after the first bound: a better order for the larger rungs, if restarts find one
            better = _better_order(probe, n_restarts)
            if better is not None:
                probe = WeightedMiniBucket(model, memory_mb=memory_mb, elim_order=better).prepare()
                order = probe.elim_order
                again = plan_wmb(probe, memory_mb=memory_mb, time_limit=time_limit, i_bound=i_bound)
                rungs = rungs[:1] + (again[1:] if len(again) > 1 else again)
                rung = rungs[1]
                meta["elim_order_restarts"] = n_restarts
        if j > 1:  # samples from the best finished rung before this rung's first pass
            on_pass(rung.memory_mb)(None)
        w = WeightedMiniBucket(model, i_bound=rung.i_bound, memory_mb=memory_mb, elim_order=order,
                               n_iters=rung.n_iters)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)  # passes are budgeted
                w.fit(stop=None if j == 0 else stop, on_pass=on_pass(rung.memory_mb))
        except BuildInterrupted:
            history.append({"i_bound": rung.i_bound, "n_iters": rung.n_iters, "log_Z_upper": None,
                            "time_s": rec.elapsed(), "finished": False})
            break
        history.append({"i_bound": rung.i_bound, "n_iters": int(w.n_iters_), "log_Z_upper": float(w.log_Z_upper),
                        "time_s": rec.elapsed(), "finished": True})
        if best["wmb"] is None or w.log_Z_upper <= best["wmb"].log_Z_upper:
            same = best["wmb"] is not None and list(best["wmb"].elim_order) == list(w.elim_order)
            ev = best["ev"] if same else wmb_evaluator(w, model)
            best.update(wmb=w, ev=ev, fast=make_fast_proposal(w, ev))
            loop["u_min"] = min(loop["u_min"], float(w.log_Z_upper))
            rec.tick(lambda: ladder_row(acc, loop), force=True)
        del w
        if best["wmb"].is_exact or not math.isfinite(best["wmb"].log_Z_upper) or stop():
            break
        j += 1
    return best["wmb"], best["ev"], best["fast"]


def _better_order(probe, n_restarts):
    """The order of least total exact-table size among ``n_restarts`` randomized weighted
    min-fill orders (:func:`sampling.bounds.ordering.randomized_min_fill_orders`, seed 0), if
    it is smaller than ``probe``'s; else None."""
    if n_restarts <= 0:
        return None
    sq = probe.model
    best, cost = None, total_log_size(sq, probe.elim_order)
    for o in randomized_min_fill_orders(sq, n_restarts, seed=0):
        c = total_log_size(sq, o)
        if c < cost - 1e-9:
            best, cost = o, c
    return best
