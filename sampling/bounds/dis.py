"""Dynamic importance sampling (DIS), two-stage sampling, WMB-IS and AOBFS runs.

:func:`run` is the one entry point: it builds (or takes) a fitted weighted mini-bucket,
then runs one of the anytime methods of [1]_ and records a :class:`BoundTrace`.

* ``"dis"`` (Alg. 1): repeat { expand ``n_expansions`` nodes by the upper priority while
  the memory budget allows; draw ``n_samples`` samples from the current q_S }. The
  estimate is the harmonic-mean weighted average of Eq. 13 and the bounds those of
  Theorem 1 (Eq. 14), the lower bound being the Markov bound while ``Zhat - Delta <= 0``
  and the upper bound ``min(Zhat + Delta, U_S)``.
* ``"two-stage"``: search until the memory budget (or ``search_fraction`` of the time or
  ``max_expansions``), then only sample from the final q_S.
* ``"wmb-is"``: no search; samples from the WMB proposal, weights bounded by the WMB bound.
* ``"aobfs"``: search only; deterministic upper bound U_S and the lower bound of solved
  sub-problems.
* ``"wmb"``: the WMB bound alone; ``"exact"``: variable elimination.

References
----------
.. [1] Lou, Dechter & Ihler (2017), "Dynamic Importance Sampling for Anytime Bounds of
   the Partition Function", NIPS. Alg. 1, Eq. 13-14, Theorem 1, Sec. 5.
"""
from __future__ import annotations

import copy
import math
import numbers
import os
import time
import warnings

from ..exceptions import ConvergenceWarning
from ..utils.rng import as_generator
from ._ladder import build_wmb_ladder, final_trace, wmb_evaluator
from ._loops import RunState, note_bounds, run_method
from ._recorder import NEG_INF, Recorder, trace_row
from ._settings import METHODS, check_run_settings
from .aobfs import AOBFS
from .checkpoint import (check_rebuilt, check_writable, load_checkpoint, model_fingerprint, same_float,
                         save_checkpoint)
from .exact import log_partition
from .importance import ImportanceAccumulator, greedy_log_lower, make_fast_proposal
from .trace import BoundTrace
from .wmb import WeightedMiniBucket

__all__ = ["run", "METHODS", "check_writable", "FLOOR_DRAWS"]

#: WMB proposal draws besides the greedy configuration for ``meta["log_Z_floor"]`` (the
#: common initial lower bound of the area metric): on models with zeros the greedy path
#: can end at f(x) = 0 (Promedus_25 at i-bound 10), where some of 256 draws do not
#: (about 0.05 s on a 1000-variable pedigree).
FLOOR_DRAWS = 256


def run(model, method="dis", time_limit=60.0, memory_mb=1024, delta=0.025, n_samples=1,
        n_expansions=10, i_bound=None, rng=0, *, wmb=None, max_samples=None,
        max_expansions=None, max_nodes=None, search_fraction=0.5, record_every=None,
        elim_order=None, progress=None, backend="auto", clock="wall", checkpoint=None,
        checkpoint_every=60.0, past_memory="sample"):
    """Anytime bounds on ln Z of ``model`` with one of the methods of [1]_.

    Parameters
    ----------
    model : GraphicalModel
    method : {"dis", "two-stage", "wmb-is", "aobfs", "wmb", "exact"}, default "dis"
    time_limit : float or None, default 60.0
        Budget in seconds of ``clock`` for the whole call: the WMB (when built here), the
        preprocessing and the method. When the WMB is built here it climbs a ladder of
        i-bounds planned from work, not from the clock
        (:func:`sampling.bounds.schedule.plan_wmb`): a cheap WMB gives the first bound
        within a few percent of the budget, WMB-IS draws from the best finished WMB run
        between the passes of the next one, and the largest WMB (at most half of the budget
        in nominal work) is the one the method uses. A WMB still building at the deadline
        is dropped and the run returns. A run is thus deterministic given ``rng`` and the
        amount of work done; the clock only decides where it stops. None = no time limit
        (one WMB with all its passes; then give ``max_samples`` / ``max_expansions``).
        When a WMB is exact (i-bound >= induced width) the run returns ln Z at once.
    memory_mb : float, default 1024
        Memory budget (MiB) for the tables the method allocates: the WMB tables and the
        search nodes together (split once here: the WMB its estimated tables, the search
        the rest, at least 5%), or all live tables of exact elimination. The model's own
        tables and the Python interpreter are not counted.
    delta : float in (0, 0.5), default 0.025
        Each probabilistic bound fails with probability at most ``delta`` (Theorem 1).
    n_samples : int, default 1
        N_l of Alg. 1: samples per round.
    n_expansions : int, default 10
        N_d of Alg. 1: node expansions per round (0 makes "dis" equal to sampling from
        the root-level q_S).
    i_bound : int, optional
        WMB i-bound; None = the largest that fits ``memory_mb``.
    rng : None, int or numpy.random.Generator, default 0
    wmb : WeightedMiniBucket, optional
        A fitted WMB to reuse (its construction time is then not in the trace).
    max_samples, max_expansions : int, optional
        Deterministic budgets (stop after this many samples / expansions), so that a run
        does not depend on machine speed. With ``time_limit=None`` they are the only stop
        rule. For "two-stage", ``max_expansions`` ends the search stage.
    max_nodes : int, optional
        Hard cap on stored search nodes (instead of the memory estimate).
    search_fraction : float in (0, 1], default 0.5
        "two-stage" stops searching at this share of ``time_limit`` if the memory budget
        is not reached first.
    record_every : int, optional
        Record a trace row every this many rounds (default: on a geometric clock, about
        every 5% of the elapsed time).
    elim_order : array_like of int, optional
        Elimination order for the WMB built here. None: the best of min-fill, weighted
        min-fill and min-size for the first rung of the ladder, then, for the larger rungs,
        the best of ``_ladder.ORDER_RESTARTS`` randomized weighted min-fill orders when it
        has smaller exact tables (seeded, so the run stays deterministic; measured on
        linkage_25 at 60 CPU-s: i-bound 15 instead of 12 in the same memory, final gap 0.26
        instead of 5.44 nats).
    progress : callable, optional
        Called with each recorded row (a dict).
    backend : {"auto", "compiled", "python"}, default "auto"
        AND/OR tree implementation (see :class:`AOBFS`).
    clock : {"wall", "cpu"}, default "wall"
        Clock for ``time_limit`` and the trace times: wall-clock seconds (as in the
        paper, on a dedicated machine) or this process's CPU seconds
        (``time.process_time``), which compares methods fairly on a shared, loaded
        machine.
    checkpoint : str or os.PathLike, optional
        Checkpoint file (JSON, written atomically; see :mod:`sampling.bounds.checkpoint`).
        If it exists the run resumes from it: same sampler state and trace, the WMB
        rebuilt with the saved order, i-bound and passes, the search tree by replaying the
        saved number of expansions (not charged to the clock), and the saved random stream
        going on (``rng`` must then be None or the seed the checkpoint was started with).
        Every field is validated before use (:func:`sampling.bounds.checkpoint.validate_state`).
        A new checkpoint's directory is checked for writing before the run starts. It is
        written when the method starts (not while the WMB is built: a run stopped then
        leaves none), every ``checkpoint_every`` seconds, at the end and on
        KeyboardInterrupt, always from the state after a whole step (a batch of samples,
        expansions or DIS rounds), so a run killed at any moment (even with SIGKILL)
        resumes from its last write; with work budgets (``max_samples`` /
        ``max_expansions``) it then ends bit for bit where an uninterrupted run ends. A
        finished run resumed with a larger ``time_limit`` or ``max_samples`` goes on from
        where it stopped. Ignored for "wmb" and "exact".
    checkpoint_every : float, default 60.0
        Seconds (of ``clock``) between checkpoint writes.
    past_memory : {"sample", "search"}, default "sample"
        What "dis" does once the search tree holds ``max_nodes`` nodes. "sample" (Alg. 1
        of [1]_: expand "if memory allows"): the tree stays as it is and sampling from
        it goes on, so the probabilistic bounds keep tightening. "search": the
        search goes on as the memory-limited AOBFS of [2]_ (Alg. 2: collapse the
        lowest-priority internal node back into a frontier node, then expand), in the
        variant whose tree stays a valid proposal (``AOBFS(reset_collapsed=True)``: a
        collapsed node's bound goes back to its WMB heuristic), so sampling from q_S goes
        on too; the deterministic upper bound is the running minimum of U_S. Measured
        (pedigree23, i-bound 14, 100k-node cap, 15 CPU-s, twice each): "search" collapses
        at almost every expansion once full (SMA*-like cycling), gains 1e-4 on the
        deterministic bound and draws 3.5x fewer samples, so its final gap is 1.9x
        wider (0.028 vs 0.015); hence the default. Two-stage searches to the budget and
        then samples from the fixed tree (its definition in Sec. 3 of [1]_).

    Returns
    -------
    BoundTrace
        Rows over time, from the first bound on; ``meta`` holds ``log_Z_wmb`` (the bound
        of the WMB the method used), ``wmb_ladder`` (per WMB built: i-bound, passes, bound,
        time, finished), ``exact`` (True when the answer is ln Z), ``log_Z_floor`` (a
        deterministic lower bound: the largest ln f(x) of the zero-avoiding greedy WMB
        configuration and ``FLOOR_DRAWS`` proposal draws, the common initial lower bound
        of the area metric), ``i_bound``, ``delta`` and the settings.

    Raises
    ------
    ValueError
        For an unknown method or a bad budget / parameter value (``max_samples`` and
        ``n_samples`` must be >= 1), or a ``checkpoint`` of another model, method, setting
        or seed, with a malformed or inconsistent field, whose WMB / search tree does not
        rebuild to the saved bounds (the message names the file and the field), or that
        cannot be written.
    TypeError
        For a non-integer count or a bad ``rng``.
    MemoryError
        For ``method="exact"`` on a model too wide for variable elimination.

    Notes
    -----
    Symbols of [1]_: ``n_samples`` = N_l, ``n_expansions`` = N_d, U_S = the AOBFS bound,
    U_i = U_S at the time sample i was drawn, ``log_Z_hat`` = ln Zhat of Eq. 13.
    WMB-IS is DIS with (N_l = inf, N_d = 0) and two-stage DIS with (N_l = 1, N_d = inf).
    The "aobfs" method runs the memory-limited AOBFS (``AOBFS(memory_limited=True)``, as in
    Sec. 5 of [1]_): past the memory budget it collapses low-priority internal nodes and
    keeps improving U_S. DIS and two-stage sample from the tree as it is at the budget;
    ``past_memory="search"`` makes DIS go on searching there too, in a variant whose
    tree stays a valid proposal.
    The "aobfs" lower bound comes only from
    solved sub-problems (the paper gives AOBFS a free lower-bound heuristic).

    References
    ----------
    .. [1] Lou, Dechter & Ihler (2017), NIPS, Alg. 1, Eq. 13-14, Theorem 1.
    .. [2] Lou, Dechter & Ihler (2017), "Anytime Anyspace AND/OR Search for Bounding the
       Partition Function", AAAI, Alg. 2.

    Examples
    --------
    >>> import numpy as np
    >>> from sampling.bounds.model import Factor, GraphicalModel
    >>> m = GraphicalModel([2, 2], [Factor((0, 1), np.log([[1.0, 2.0], [3.0, 4.0]]))])
    >>> tr = run(m, "dis", time_limit=None, max_samples=20, rng=0)
    >>> bool(tr.final_log_Z_lower <= np.log(10.0) <= tr.final_log_Z_upper + 1e-9)
    True
    """
    s = check_run_settings(method, time_limit, memory_mb, delta, n_samples, n_expansions, max_samples,
                           max_expansions, search_fraction, record_every, clock, past_memory, checkpoint_every)
    now = time.perf_counter if s.clock == "wall" else time.process_time
    gen = as_generator(rng)
    rec = Recorder(now(), s.record_every, progress, clock=now)
    meta = {"delta": s.delta, "n_samples": s.n_samples, "n_expansions": s.n_expansions,
            "time_limit": s.time_limit, "memory_mb": s.memory_mb, "clock": s.clock}
    if s.method == "exact":
        lz = float(log_partition(model, memory_mb=s.memory_mb))
        rec.tick(lambda: trace_row(lz, lz, lz, 0, 0, 0, False, lz), force=True)
        meta["log_Z_exact"] = lz
        return BoundTrace.from_rows(rec.rows, method=s.method, meta=meta)

    seed = int(rng) if isinstance(rng, numbers.Integral) and not isinstance(rng, bool) else None
    checkpoint, expected, ckpt = _open_checkpoint(checkpoint, model, s, max_nodes, rng, seed, i_bound, elim_order)
    st = RunState(rec, meta, ImportanceAccumulator(s.delta),
                  {"n_done": 0, "rounds_done": 0, "stage": "search", "u_min": math.inf, "u_max": NEG_INF}, gen)
    t_wmb_built = _obtain_wmb(st, model, s, wmb, ckpt, i_bound, elim_order)
    if st.wmb is None:  # the budget ran out before the first WMB: nothing more to do
        meta["log_Z_wmb"] = math.inf
        rec.tick(lambda: trace_row(math.inf, NEG_INF, math.nan, 0, 0, 0, False, math.inf), force=True)
        return BoundTrace.from_rows(rec.rows, method=s.method, meta=meta)
    wmb = st.wmb
    st.log_Z_wmb = log_Z_wmb = float(wmb.log_Z_upper)
    meta["log_Z_wmb"] = log_Z_wmb
    meta["i_bound"] = int(getattr(wmb, "i_bound", -1) if getattr(wmb, "i_bound", None) is not None else -1)
    if ckpt is not None:
        check_rebuilt(checkpoint, "weighted mini-bucket bound", log_Z_wmb, ckpt["meta"]["log_Z_wmb"])
    out_of_time = _prepare_method(st, model, s, ckpt, max_nodes, backend, checkpoint)
    # the clock covers the whole call: the WMB ladder, the preprocessing (factor index,
    # compiled proposal / lookup tables, greedy floor) and the method; on resume it goes
    # on from the saved elapsed time (the rebuild of the WMB and the search tree is not
    # charged)
    meta["t_wmb_s"] = t_wmb_built
    st.loop["u_min"] = min(st.loop["u_min"], log_Z_wmb)
    st.loop["u_max"] = max(st.loop["u_max"], log_Z_wmb)
    if st.search is not None:
        st.loop["u_min"] = min(st.search.log_Z_upper_, st.loop["u_min"])
    if ckpt is not None:
        _restore(st, ckpt, checkpoint, s, now)
        note_bounds(st)  # the rebuilt U_S may differ from the saved one in its last bits
    st.commit, st.save, flush = _saver(st, s, checkpoint, expected, ckpt, seed)
    # written at once: a run stopped from here on resumes without rebuilding the WMB ladder
    st.save(force=ckpt is None)
    try:
        if out_of_time and not getattr(wmb, "is_exact", False):
            trace = final_trace(s.method, rec, meta, st.acc, st.loop)
        else:
            trace = run_method(s, st)
    except KeyboardInterrupt:
        flush()  # the last consistent state: the work of an unfinished step is dropped
        raise
    st.save(force=True)
    return trace


def _open_checkpoint(checkpoint, model, s, max_nodes, rng, seed, i_bound, elim_order):
    """Step 1 of :func:`run`: the checkpoint to resume from, checked against this run.

    Returns
    -------
    (path or None, dict or None, dict or None)
        The checkpoint path (None when none is used: none given, or method "wmb"), the
        fields it must match, and the loaded checkpoint (None for a new one, whose
        directory is then checked for writing).
    """
    if checkpoint is None or s.method == "wmb":
        return None, None, None
    expected = {"fingerprint": model_fingerprint(model), "method": s.method, "n_vars": model.n_vars,
                "settings": {"delta": s.delta, "n_samples": s.n_samples, "n_expansions": s.n_expansions,
                             "memory_mb": s.memory_mb, "max_nodes": max_nodes,
                             "search_fraction": s.search_fraction, "clock": s.clock,
                             "past_memory": s.past_memory}}
    if os.path.isdir(checkpoint):
        raise ValueError(f"cannot write the checkpoint to {checkpoint}: it is a directory")
    if not os.path.exists(checkpoint):
        check_writable(checkpoint, "checkpoint")
        return checkpoint, expected, None
    ckpt = load_checkpoint(checkpoint, expected)
    saved_seed = ckpt.get("seed")
    if saved_seed is not None and (isinstance(saved_seed, bool) or not isinstance(saved_seed, int)):
        raise ValueError(f"{checkpoint}: checkpoint field 'seed' must be an integer or null; "
                         f"got {saved_seed!r}")
    if rng is not None and seed != saved_seed:
        raise ValueError(f"{checkpoint}: the checkpoint was started with seed={saved_seed!r}; this "
                         f"run has rng={rng!r}. A resumed run goes on with the saved random "
                         "stream: pass rng=None (CLI: no --seed) or the same seed")
    if not same_float(ckpt["accumulator"]["delta"], s.delta):
        raise ValueError(f"{checkpoint}: checkpoint field 'accumulator.delta' "
                         f"({ckpt['accumulator']['delta']!r}) differs from settings.delta ({s.delta!r})")
    if i_bound is not None and int(i_bound) != ckpt["i_bound"]:
        raise ValueError(f"{checkpoint}: the checkpoint has i_bound={ckpt['i_bound']}, "
                         f"this run i_bound={i_bound}")
    if elim_order is not None and [int(v) for v in elim_order] != ckpt["elim_order"]:
        raise ValueError(f"{checkpoint}: the checkpoint was run with another elimination order")
    return checkpoint, expected, ckpt


def _obtain_wmb(st, model, s, wmb, ckpt, i_bound, elim_order):
    """Step 2 of :func:`run`: the WMB the method uses (given, rebuilt as the checkpointed run
    built it, or the best rung of the WMB ladder) into ``st``; returns its build time."""
    if wmb is not None:
        st.wmb = wmb
        return 0.0
    if ckpt is not None:
        # the same WMB as the checkpointed run: same order, i-bound and number of passes
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            st.wmb = WeightedMiniBucket(model, i_bound=ckpt["i_bound"], memory_mb=s.memory_mb,
                                        elim_order=ckpt["elim_order"], n_iters=ckpt["wmb_passes"]).fit()
        return float(ckpt["meta"]["t_wmb_s"])
    sampling = s.method in ("dis", "two-stage", "wmb-is")
    st.wmb, st.ev, st.fast = build_wmb_ladder(model, i_bound, s.memory_mb, elim_order, s.time_limit, st.rec,
                                              st.acc, st.loop, st.gen, st.meta, sampling, s.max_samples)
    return st.rec.elapsed()


def _prepare_method(st, model, s, ckpt, max_nodes, backend, checkpoint):
    """Step 3 of :func:`run`: factor evaluator, greedy floor, compiled proposal and, for the
    search methods, the AND/OR search tree (replayed to the checkpoint's expansions).

    Returns True when the budget ran out before the method could start (never on resume).
    """
    wmb, meta = st.wmb, st.meta
    if st.ev is None:
        st.ev = wmb_evaluator(wmb, model)
    try:  # the greedy configuration and FLOOR_DRAWS proposal draws (own seed: rng untouched)
        meta["log_Z_floor"] = greedy_log_lower(wmb, st.ev, n_draws=FLOOR_DRAWS)
    except Exception:  # noqa: BLE001 - the floor is only a convenience for the area metric
        meta["log_Z_floor"] = NEG_INF
    # compiled proposal sampler when the WMB exposes its tables (a duck-typed heuristic
    # such as BruteForceHeuristic is sampled through its own ``sample``)
    if st.fast is None:
        st.fast = make_fast_proposal(wmb, st.ev) if getattr(wmb, "tables", None) is not None else None
    out_of_time = ckpt is None and st.rec.elapsed() >= s.time_limit
    if s.method not in ("dis", "two-stage", "aobfs") or out_of_time or getattr(wmb, "is_exact", False):
        return out_of_time
    # search keeps improving past the memory budget (memory-limited AOBFS, Sec. 5 of
    # [1]_); DIS only with past_memory="search" (the variant that keeps q_S valid).
    # memory_mb is split here, once: the WMB's tables, the search nodes the rest (at
    # least 5% of the budget)
    wmb_mb = float(getattr(wmb, "memory_mb_", 0.0) or 0.0)
    search_mb = max(s.memory_mb - wmb_mb, 0.05 * s.memory_mb)
    meta["memory_split_mb"] = {"wmb": wmb_mb, "search": search_mb}
    search = AOBFS(model, wmb=wmb, memory_mb=s.memory_mb, max_nodes=max_nodes, search_memory_mb=search_mb,
                   backend=backend, memory_limited=(s.method == "aobfs"),
                   reset_collapsed=(s.method == "dis" and s.past_memory == "search")).fit(max_expansions=0)
    if ckpt is not None and ckpt["n_expansions"]:
        # the tree depends only on the number of expansions (not on the samples)
        search.expand(int(ckpt["n_expansions"]))
        if search.n_expansions_ != ckpt["n_expansions"]:
            raise ValueError(f"{checkpoint}: replayed {search.n_expansions_} of the checkpoint's "
                             f"{ckpt['n_expansions']} expansions")
        check_rebuilt(checkpoint, "search bound U_S", search.log_Z_upper_, ckpt["log_Z_search"])
    st.search = search
    return out_of_time


def _restore(st, ckpt, checkpoint, s, now):
    """Step 4 of :func:`run` on resume: metadata, random stream, estimator, loop counters
    and trace rows of the checkpoint."""
    meta, gen, rec = st.meta, st.gen, st.rec
    meta.update(ckpt["meta"])
    meta["n_resumes"] = int(meta.get("n_resumes", 0)) + 1
    meta.update(time_limit=s.time_limit)
    try:
        if ckpt["rng"]["bit_generator"] != type(gen.bit_generator).__name__:
            raise ValueError(f"bit generator {ckpt['rng']['bit_generator']!r}")
        gen.bit_generator.state = ckpt["rng"]
    except (ValueError, TypeError, KeyError, OverflowError) as exc:
        raise ValueError(f"{checkpoint}: checkpoint field 'rng' is not a valid "
                         f"{type(gen.bit_generator).__name__} state ({exc})") from None
    st.acc = ImportanceAccumulator.from_state(ckpt["accumulator"])
    st.loop.update(ckpt["loop"])
    rec.rows = [dict(r) for r in ckpt["rows"]]
    rec.iter, rec.next_t = int(ckpt["rec_iter"]), float(ckpt["rec_next_t"])
    rec.t0 = now() - float(ckpt["elapsed_s"])


def _saver(st, s, checkpoint, expected, ckpt, seed):
    """Step 5 of :func:`run`: the checkpoint writer of ``st``.

    Returns ``(commit, save, flush)``. ``commit()`` takes a snapshot of the state, which
    the loops call only when it is consistent (after a step and :func:`note_bounds`);
    ``save(force=False)`` commits, then writes the snapshot if ``checkpoint_every``
    seconds have passed (or at once when forced); ``flush()`` writes the last snapshot
    as it is (on KeyboardInterrupt, whose state may be from the middle of a step). A
    write is atomic, so the file on disk is always one whole committed snapshot.
    """
    rec, wmb = st.rec, st.wmb
    rebuild = {"wmb_passes": int(getattr(wmb, "n_iters_", 0)),  # how to rebuild the same WMB
               "elim_order": [int(v) for v in getattr(wmb, "elim_order", [])]}
    last_save = [rec.elapsed()]
    snap = [None]

    def commit():
        if checkpoint is None:
            return
        search = st.search
        rows = rec.rows
        # rows are only appended to, or the last one replaced: keep the count and a copy of
        # the last row instead of copying the list at each step
        snap[0] = {
            "meta": copy.deepcopy(st.meta), "elapsed_s": rec.elapsed(),
            "rng": st.gen.bit_generator.state, "accumulator": st.acc.state_dict(), "loop": dict(st.loop),
            "n_expansions": 0 if search is None else int(search.n_expansions_),
            "log_Z_search": None if search is None else float(search.log_Z_upper_),
            "rows": (len(rows), dict(rows[-1]) if rows else None), "rec_iter": rec.iter,
            "rec_next_t": rec.next_t}

    def flush():
        if checkpoint is None or snap[0] is None:
            return
        state = dict(snap[0])
        n_rows, last = state["rows"]
        state["rows"] = rec.rows[:n_rows - 1] + [last] if n_rows else []
        save_checkpoint(checkpoint, {
            "fingerprint": expected["fingerprint"], "method": s.method, "settings": expected["settings"],
            "i_bound": state["meta"]["i_bound"], **rebuild, **state,
            "seed": seed if ckpt is None else ckpt.get("seed")})
        last_save[0] = rec.elapsed()

    def save(force=False):
        if checkpoint is None:
            return
        commit()
        if force or rec.elapsed() - last_save[0] >= s.checkpoint_every:
            flush()
    return commit, save, flush
