"""The method phase of an anytime run (:func:`sampling.bounds.run`): WMB-IS sampling, the
AOBFS search stage and the DIS loop of Lou, Dechter & Ihler (2017), Alg. 1.

Each phase goes on from the state in a :class:`RunState` (fresh, or restored from a
checkpoint). A step (a batch of samples, of expansions or of DIS rounds) changes the
estimator, the search tree, the random stream and the loop counters together; only after
it, once :func:`note_bounds` has brought ``u_min`` / ``u_max`` up to date, is the state
consistent, and only then is it handed to the checkpoint (``state.commit()`` before the
trace tick, ``state.save()`` after it). A checkpoint therefore never holds a state from
the middle of a step, whatever moment a run is stopped at.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import numpy as np

from ._recorder import NEG_INF, Recorder, trace_row
from .importance import dis_rounds, sample_wmb_is
from .trace import BoundTrace

__all__ = ["RunState", "run_method", "note_bounds"]


@dataclasses.dataclass
class RunState:
    """The mutable state of one run: trace, metadata, estimator, loop counters and the
    objects the method uses.

    Attributes
    ----------
    rec : Recorder
    meta : dict
        The trace's ``meta``.
    acc : ImportanceAccumulator
    loop : dict
        ``n_done``, ``rounds_done``, ``stage`` ("search" or "sample"), ``u_min`` (smallest
        deterministic upper bound so far, at most every U_i a sample was weighed with) and
        ``u_max`` (at least every such U_i); see :func:`note_bounds`.
    gen : numpy.random.Generator
    wmb, ev, fast, search
        The fitted WMB, its factor evaluator, compiled proposal (or None) and AOBFS (or None).
    log_Z_wmb : float
        The bound of ``wmb``.
    commit : callable
        ``commit()`` records the current state, consistent after a step, as the one the
        next checkpoint write (or the write on KeyboardInterrupt) holds.
    save : callable
        ``save(force=False)``: ``commit()``, then write the checkpoint when due.
    """

    rec: Recorder
    meta: dict
    acc: Any
    loop: dict
    gen: Any
    wmb: Any = None
    ev: Any = None
    fast: Any = None
    search: Any = None
    log_Z_wmb: float = math.inf
    commit: Callable = lambda: None
    save: Callable = lambda force=False: None

    def trace(self, method):
        """The :class:`BoundTrace` of the rows recorded so far."""
        return BoundTrace.from_rows(self.rec.rows, method=method, meta=self.meta)


def run_method(s, st):
    """Run the method of settings ``s`` from state ``st``; returns the :class:`BoundTrace`."""
    lz = st.log_Z_wmb
    if lz == NEG_INF or getattr(st.wmb, "is_exact", False):
        # the WMB bound is ln Z itself (one mini-bucket per bucket, e.g. a model without
        # variables) or proves Z = 0: the answer is exact, nothing left to do
        st.meta["exact"] = True
        st.rec.tick(lambda: trace_row(lz, lz, lz, 0, 0, 0, False, lz), force=True)
        return st.trace(s.method)
    if s.method == "wmb":
        st.rec.tick(lambda: trace_row(lz, NEG_INF, math.nan, 0, 0, 0, False, lz), force=True)
        return st.trace(s.method)
    if s.method == "wmb-is":
        return _wmb_is(s, st)
    st.meta["max_nodes"] = st.search.max_nodes_
    if s.method in ("aobfs", "two-stage") and st.loop["stage"] == "search":
        if _search_stage(s, st):
            return st.trace(s.method)
    return _dis(s, st)


def note_bounds(st, log_U=None):
    """Bring ``u_min`` / ``u_max`` of ``st.loop`` up to date after a step.

    ``u_min`` takes the search bound U_S (and its running minimum) and ``u_max`` /
    ``u_min`` the bounds ``log_U`` the step's samples were weighed with, so that the saved
    ``u_min`` is never above the saved search bound and ``ln sum 1/U_i`` of the estimator
    lies in ``[ln n - u_max, ln n - u_min]`` exactly (up to the rounding of its sum); the
    checkpoint validation relies on both.
    """
    loop, search = st.loop, st.search
    if search is not None:
        loop["u_min"] = min(loop["u_min"], float(search.log_Z_upper_), float(search.log_Z_upper_min_))
    if log_U is not None and np.size(log_U):
        loop["u_min"] = min(loop["u_min"], float(np.min(log_U)))
        loop["u_max"] = max(loop["u_max"], float(np.max(log_U)))


def _wmb_is(s, st):
    """WMB-IS: batches of samples from the WMB proposal, weights bounded by the WMB bound."""
    rec, acc, loop, lz = st.rec, st.acc, st.loop, st.log_Z_wmb
    while True:
        n_done = loop["n_done"]
        # vectorised batches growing with the sample count (N_l samples at first)
        batch = max(s.n_samples, min(1024, n_done // 8))
        k = batch if s.max_samples is None else min(batch, s.max_samples - n_done)
        if k <= 0 or (n_done and rec.elapsed() >= s.time_limit):
            break
        log_w = sample_wmb_is(st.wmb, st.ev, k, st.gen, fast=st.fast)
        acc.add(log_w, lz)
        loop["n_done"] = n_done + k
        note_bounds(st, lz)
        st.commit()

        def row():
            lo, up = acc.bounds(lz)
            return trace_row(up, lo, acc.log_Z_hat, acc.n, 0, 0, acc.lower_is_markov, lz)
        done = (s.max_samples is not None and loop["n_done"] >= s.max_samples) or rec.elapsed() >= s.time_limit
        rec.tick(row, force=done)
        st.save()
        if done:
            break
    if not rec.rows:
        rec.tick(lambda: trace_row(lz, NEG_INF, math.nan, 0, 0, 0, False, lz), force=True)
    return st.trace(s.method)


def _search_row(st):
    """Trace row of the search (and DIS) phase: U_S, the solved-sub-problem lower bound and
    the sampling bounds (Theorem 1), whichever is tighter."""
    search, acc, loop = st.search, st.acc, st.loop
    note_bounds(st)
    u_det, l_det = loop["u_min"], search.log_Z_lower_
    if search.solved_:
        lz = search.log_Z_upper_
        return trace_row(lz, lz, lz, acc.n, search.n_nodes_, search.n_expansions_, False, lz)
    if acc.n == 0:  # (two-stage search stage: the WMB-IS draws of the WMB ladder count)
        return trace_row(u_det, l_det, math.nan if acc.n == 0 else acc.log_Z_hat, acc.n,
                         search.n_nodes_, search.n_expansions_, False, u_det)
    lo, up = acc.bounds(u_det)
    markov = acc.lower_is_markov
    if l_det >= lo:
        lo, markov = l_det, False
    return trace_row(up, lo, acc.log_Z_hat, acc.n, search.n_nodes_, search.n_expansions_, markov, u_det)


def _expansions_left(s, search):
    return math.inf if s.max_expansions is None else s.max_expansions - search.n_expansions_


def _search_stage(s, st):
    """AOBFS, or the search stage of two-stage; True when the run is over (method "aobfs"
    or the problem solved), else the stage is set to "sample"."""
    rec, search = st.rec, st.search
    if not rec.rows:
        rec.tick(lambda: _search_row(st), force=True)
    stage_limit = s.time_limit if s.method == "aobfs" else s.time_limit * s.search_fraction
    while search.can_expand and _expansions_left(s, search) > 0 and rec.elapsed() < stage_limit:
        k = int(min(max(s.n_expansions, 1), _expansions_left(s, search)))
        search.expand(k)
        note_bounds(st)
        st.commit()
        rec.tick(lambda: _search_row(st))
        st.save()
    if s.method == "aobfs" or search.solved_:
        rec.tick(lambda: _search_row(st), force=True)
        st.meta["n_expansions_total"] = search.n_expansions_
        st.meta["n_collapses"] = search.n_collapses_
        return True
    rec.tick(lambda: _search_row(st), force=True)
    st.loop["stage"] = "sample"
    st.commit()
    return False


def _dis(s, st):
    """The DIS loop (Alg. 1); also the sampling stage of two-stage (no expansions).

    Rounds run in batches that grow with the number done (one compiled call per batch),
    so that the clock and the trace are checked about every 1/8 of the work so far.
    """
    rec, acc, loop, search = st.rec, st.acc, st.loop, st.search
    n_expansions = 0 if s.method == "two-stage" else s.n_expansions  # two-stage: sampling stage only
    max_samples, n_samples = s.max_samples, s.n_samples
    while True:
        if (acc.n and rec.elapsed() >= s.time_limit) or (max_samples is not None and acc.n >= max_samples):
            break
        rounds, per_round = max(1, min(1024, loop["rounds_done"] // 8)), n_samples
        if max_samples is not None:
            rounds = min(rounds, (max_samples - acc.n) // n_samples)
            if rounds == 0:  # fewer than N_l samples left: one short round
                rounds, per_round = 1, max_samples - acc.n
        left = None if s.max_expansions is None else max(_expansions_left(s, search), 0)
        log_w, log_U = dis_rounds(search, st.ev, rounds, n_expansions, per_round, st.gen, fast=st.fast,
                                  max_expansions=left)
        if len(log_w):
            acc.add(log_w, log_U)
        loop["rounds_done"] += rounds
        note_bounds(st, log_U)
        st.commit()
        if search.solved_:
            break
        done = (max_samples is not None and acc.n >= max_samples) or rec.elapsed() >= s.time_limit
        rec.tick(lambda: _search_row(st), force=done)
        st.save()
    rec.tick(lambda: _search_row(st), force=True)
    st.meta["n_expansions_total"] = search.n_expansions_
    st.meta["n_collapses"] = search.n_collapses_
    st.meta["n_bound_violations"] = acc.n_bound_violations
    return st.trace(s.method)

