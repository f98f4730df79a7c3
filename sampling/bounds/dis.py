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

import math
import numbers
import os
import time
import warnings

from ..utils.rng import as_generator
from .aobfs import AOBFS, tree_structure
from .checkpoint import load_checkpoint, model_fingerprint, save_checkpoint
from .importance import (FactorEvaluator, ImportanceAccumulator, constant_bucket, dis_rounds,
                         greedy_log_lower, make_fast_proposal, sample_wmb_is)
from .trace import BoundTrace

__all__ = ["run", "METHODS", "check_writable"]

METHODS = ("dis", "two-stage", "wmb-is", "aobfs", "wmb", "exact")
_NEG_INF = -math.inf


def _check_positive_int(value, name, allow_none=True):
    if value is None and allow_none:
        return None
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise TypeError(f"the {name} parameter must be an int; got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"the {name} parameter must be >= 1; got {value}")
    return int(value)


def _run_iv(method, time_limit, memory_mb, delta, n_samples, n_expansions, max_samples,
            max_expansions, search_fraction, record_every):
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"the method parameter must be one of {METHODS}; got {method!r}")
    if time_limit is None:
        time_limit = math.inf
    time_limit = float(time_limit)
    if not time_limit > 0:
        raise ValueError(f"the time_limit parameter must be > 0 seconds; got {time_limit}")
    memory_mb = float(memory_mb)
    if not memory_mb > 0:
        raise ValueError(f"the memory_mb parameter must be > 0; got {memory_mb}")
    delta = float(delta)
    if not 0.0 < delta < 0.5:
        raise ValueError(f"the delta parameter must be in (0, 0.5); got {delta}")
    n_samples = _check_positive_int(n_samples, "n_samples", allow_none=False)
    if isinstance(n_expansions, numbers.Integral) and not isinstance(n_expansions, bool) and n_expansions == 0:
        n_expansions = 0
    else:
        n_expansions = _check_positive_int(n_expansions, "n_expansions", allow_none=False)
    max_samples = _check_positive_int(max_samples, "max_samples")
    if max_expansions is not None and max_expansions == 0:
        max_expansions = 0
    else:
        max_expansions = _check_positive_int(max_expansions, "max_expansions")
    search_fraction = float(search_fraction)
    if not 0.0 < search_fraction <= 1.0:
        raise ValueError(f"the search_fraction parameter must be in (0, 1]; got {search_fraction}")
    record_every = _check_positive_int(record_every, "record_every")
    if method in ("dis", "two-stage", "wmb-is") and math.isinf(time_limit) and max_samples is None:
        raise ValueError(f"method {method!r} needs a finite time_limit or max_samples")
    if method == "aobfs" and math.isinf(time_limit) and max_expansions is None:
        raise ValueError("method 'aobfs' needs a finite time_limit or max_expansions")
    return (time_limit, memory_mb, delta, n_samples, n_expansions, max_samples, max_expansions,
            search_fraction, record_every)


class _Recorder:
    """Collects trace rows: every ``record_every`` iterations, else on a geometric clock."""

    def __init__(self, t0, record_every, progress, growth=1.05, min_dt=0.02, clock=time.perf_counter):
        self.clock = clock
        self.t0 = t0
        self.rows = []
        self.record_every = record_every
        self.progress = progress
        self.growth = growth
        self.min_dt = min_dt
        self.next_t = 0.0
        self.iter = 0

    def elapsed(self):
        return self.clock() - self.t0

    def tick(self, make_row, force=False):
        """Record ``make_row()`` if due (or forced)."""
        self.iter += 1
        t = self.elapsed()
        if self.record_every is not None:
            due = self.iter % self.record_every == 0
        else:
            due = t >= self.next_t
        if due or force:
            row = make_row()
            row["time_s"] = t
            if self.rows and self.rows[-1]["time_s"] == t:
                self.rows[-1] = row
            else:
                self.rows.append(row)
            self.next_t = max(t * self.growth, t + self.min_dt)
            if self.progress is not None:
                self.progress(row)


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
        Elimination order for the WMB built here.
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
        written every ``checkpoint_every`` seconds once the method runs (not while the WMB
        is built: a Ctrl-C then leaves none), at the end and on KeyboardInterrupt. A
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
        deterministic lower bound ln f(x) of the greedy WMB configuration, the common
        initial lower bound of the area metric), ``i_bound``, ``delta`` and the settings.

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
    (time_limit, memory_mb, delta, n_samples, n_expansions, max_samples, max_expansions,
     search_fraction, record_every) = _run_iv(method, time_limit, memory_mb, delta, n_samples,
                                              n_expansions, max_samples, max_expansions,
                                              search_fraction, record_every)
    if clock not in ("wall", "cpu"):
        raise ValueError(f"the clock parameter must be 'wall' or 'cpu'; got {clock!r}")
    if past_memory not in ("search", "sample"):
        raise ValueError(f"the past_memory parameter must be 'search' or 'sample'; got {past_memory!r}")
    checkpoint_every = float(checkpoint_every)
    if not checkpoint_every > 0:
        raise ValueError(f"the checkpoint_every parameter must be > 0 seconds; got {checkpoint_every}")
    now = time.perf_counter if clock == "wall" else time.process_time
    gen = as_generator(rng)
    t0 = now()
    rec = _Recorder(t0, record_every, progress, clock=now)
    meta = {"delta": delta, "n_samples": n_samples, "n_expansions": n_expansions,
            "time_limit": time_limit, "memory_mb": memory_mb, "clock": clock}

    if method == "exact":
        from .exact import log_partition

        lz = float(log_partition(model, memory_mb=memory_mb))
        rec.tick(lambda: _row(lz, lz, lz, 0, 0, 0, False, lz), force=True)
        meta["log_Z_exact"] = lz
        return BoundTrace.from_rows(rec.rows, method=method, meta=meta)

    ckpt = None  # the checkpoint resumed from
    seed = int(rng) if isinstance(rng, numbers.Integral) and not isinstance(rng, bool) else None
    if checkpoint is not None and method != "wmb":
        expected = {"fingerprint": model_fingerprint(model), "method": method, "n_vars": model.n_vars,
                    "settings": {"delta": delta, "n_samples": n_samples, "n_expansions": n_expansions,
                                 "memory_mb": memory_mb, "max_nodes": max_nodes,
                                 "search_fraction": search_fraction, "clock": clock,
                                 "past_memory": past_memory}}
        if os.path.isdir(checkpoint):
            raise ValueError(f"cannot write the checkpoint to {checkpoint}: it is a directory")
        if os.path.exists(checkpoint):
            ckpt = load_checkpoint(checkpoint, expected)
            saved_seed = ckpt.get("seed")
            if saved_seed is not None and (isinstance(saved_seed, bool) or not isinstance(saved_seed, int)):
                raise ValueError(f"{checkpoint}: checkpoint field 'seed' must be an integer or null; "
                                 f"got {saved_seed!r}")
            if rng is not None and seed != saved_seed:
                raise ValueError(f"{checkpoint}: the checkpoint was started with seed={saved_seed!r}; this "
                                 f"run has rng={rng!r}. A resumed run goes on with the saved random "
                                 "stream: pass rng=None (CLI: no --seed) or the same seed")
            if not _same_float(ckpt["accumulator"]["delta"], delta):
                raise ValueError(f"{checkpoint}: checkpoint field 'accumulator.delta' "
                                 f"({ckpt['accumulator']['delta']!r}) differs from settings.delta ({delta!r})")
            if i_bound is not None and int(i_bound) != ckpt["i_bound"]:
                raise ValueError(f"{checkpoint}: the checkpoint has i_bound={ckpt['i_bound']}, "
                                 f"this run i_bound={i_bound}")
            if elim_order is not None and [int(v) for v in elim_order] != ckpt["elim_order"]:
                raise ValueError(f"{checkpoint}: the checkpoint was run with another elimination order")
        else:
            check_writable(checkpoint, "checkpoint")
    else:
        checkpoint = None

    acc = ImportanceAccumulator(delta)
    loop = {"n_done": 0, "rounds_done": 0, "stage": "search", "u_min": math.inf, "u_max": _NEG_INF}
    t_wmb_built = 0.0
    ev = fast = None
    if wmb is None and ckpt is not None:
        # the same WMB as the checkpointed run: same order, i-bound and number of passes
        from ..exceptions import ConvergenceWarning
        from .wmb import WeightedMiniBucket

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            wmb = WeightedMiniBucket(model, i_bound=ckpt["i_bound"], memory_mb=memory_mb,
                                     elim_order=ckpt["elim_order"], n_iters=ckpt["wmb_passes"]).fit()
        t_wmb_built = float(ckpt["meta"]["t_wmb_s"])
    elif wmb is None:
        sampling = method in ("dis", "two-stage", "wmb-is")
        wmb, ev, fast = _build_wmb_ladder(model, i_bound, memory_mb, elim_order, time_limit, rec, acc,
                                          loop, gen, meta, sampling, max_samples)
        t_wmb_built = rec.elapsed()
    if wmb is None:  # the budget ran out before the first WMB: nothing more to do
        meta["log_Z_wmb"] = math.inf
        rec.tick(lambda: _row(math.inf, _NEG_INF, math.nan, 0, 0, 0, False, math.inf), force=True)
        return BoundTrace.from_rows(rec.rows, method=method, meta=meta)
    log_Z_wmb = float(wmb.log_Z_upper)
    meta["log_Z_wmb"] = log_Z_wmb
    meta["i_bound"] = int(getattr(wmb, "i_bound", -1) if getattr(wmb, "i_bound", None) is not None else -1)
    if ckpt is not None:
        _check_rebuilt(checkpoint, "weighted mini-bucket bound", log_Z_wmb, ckpt["meta"]["log_Z_wmb"])

    if ev is None:
        ev = _evaluator(wmb, model)
    try:
        meta["log_Z_floor"] = greedy_log_lower(wmb, ev)
    except Exception:  # noqa: BLE001 - the floor is only a convenience for the area metric
        meta["log_Z_floor"] = _NEG_INF

    # compiled proposal sampler when the WMB exposes its tables (a duck-typed heuristic
    # such as BruteForceHeuristic is sampled through its own ``sample``)
    if fast is None:
        fast = make_fast_proposal(wmb, ev) if getattr(wmb, "tables", None) is not None else None
    search = None
    out_of_time = ckpt is None and rec.elapsed() >= time_limit
    if method in ("dis", "two-stage", "aobfs") and not (out_of_time or getattr(wmb, "is_exact", False)):  # compiled lookup tables + the root node
        # search keeps improving past the memory budget (memory-limited AOBFS, Sec. 5 of
        # [1]_); DIS only with past_memory="search" (the variant that keeps q_S valid)
        # memory_mb is split here, once: the WMB's tables, the search nodes the rest (at
        # least 5% of the budget)
        wmb_mb = float(getattr(wmb, "memory_mb_", 0.0) or 0.0)
        search_mb = max(memory_mb - wmb_mb, 0.05 * memory_mb)
        meta["memory_split_mb"] = {"wmb": wmb_mb, "search": search_mb}
        search = AOBFS(model, wmb=wmb, memory_mb=memory_mb, max_nodes=max_nodes, search_memory_mb=search_mb,
                       backend=backend, memory_limited=(method == "aobfs"),
                       reset_collapsed=(method == "dis" and past_memory == "search")).fit(max_expansions=0)
        if ckpt is not None and ckpt["n_expansions"]:
            # the tree depends only on the number of expansions (not on the samples)
            search.expand(int(ckpt["n_expansions"]))
            if search.n_expansions_ != ckpt["n_expansions"]:
                raise ValueError(f"{checkpoint}: replayed {search.n_expansions_} of the checkpoint's "
                                 f"{ckpt['n_expansions']} expansions")
            _check_rebuilt(checkpoint, "search bound U_S", search.log_Z_upper_, ckpt["log_Z_search"])
    # the clock covers the whole call: the WMB ladder, the preprocessing (factor index,
    # compiled proposal / lookup tables, greedy floor) and the method; on resume it goes
    # on from the saved elapsed time (the rebuild of the WMB and the search tree is not
    # charged)
    meta["t_wmb_s"] = t_wmb_built
    loop["u_min"] = min(loop["u_min"], log_Z_wmb)
    loop["u_max"] = max(loop["u_max"], log_Z_wmb)
    if search is not None:
        loop["u_min"] = min(search.log_Z_upper_, loop["u_min"])
    if ckpt is not None:
        meta.update(ckpt["meta"])
        meta["n_resumes"] = int(meta.get("n_resumes", 0)) + 1
        meta.update(time_limit=time_limit)
        try:
            if ckpt["rng"]["bit_generator"] != type(gen.bit_generator).__name__:
                raise ValueError(f"bit generator {ckpt['rng']['bit_generator']!r}")
            gen.bit_generator.state = ckpt["rng"]
        except (ValueError, TypeError, KeyError, OverflowError) as exc:
            raise ValueError(f"{checkpoint}: checkpoint field 'rng' is not a valid "
                             f"{type(gen.bit_generator).__name__} state ({exc})") from None
        acc = ImportanceAccumulator.from_state(ckpt["accumulator"])
        loop.update(ckpt["loop"])
        rec.rows = [dict(r) for r in ckpt["rows"]]
        rec.iter, rec.next_t = int(ckpt["rec_iter"]), float(ckpt["rec_next_t"])
        rec.t0 = now() - float(ckpt["elapsed_s"])
    rebuild = {"wmb_passes": int(getattr(wmb, "n_iters_", 0)),  # how to rebuild the same WMB
               "elim_order": [int(v) for v in getattr(wmb, "elim_order", [])]}

    last_save = [rec.elapsed()]

    def save(force=False):
        """Write the checkpoint if one was asked for and it is due (or forced)."""
        if checkpoint is None or not (force or rec.elapsed() - last_save[0] >= checkpoint_every):
            return
        save_checkpoint(checkpoint, {
            "fingerprint": expected["fingerprint"], "method": method, "settings": expected["settings"],
            "i_bound": meta["i_bound"], **rebuild, "meta": meta, "elapsed_s": rec.elapsed(),
            "seed": seed if ckpt is None else ckpt.get("seed"),
            "rng": gen.bit_generator.state, "accumulator": acc.state_dict(), "loop": loop,
            "n_expansions": 0 if search is None else search.n_expansions_,
            "log_Z_search": None if search is None else search.log_Z_upper_,
            "rows": rec.rows, "rec_iter": rec.iter, "rec_next_t": rec.next_t})
        last_save[0] = rec.elapsed()

    try:
        if out_of_time and not getattr(wmb, "is_exact", False):
            trace = _final_row(method, rec, meta, acc, loop)
        else:
            trace = _run_loop(method, rec, meta, acc, loop, gen, wmb, ev, fast, search, log_Z_wmb,
                              time_limit, n_samples, n_expansions, max_samples, max_expansions,
                              search_fraction, save)
    except KeyboardInterrupt:
        save(force=True)  # a consistent state: the samples of an unfinished batch are dropped
        raise
    save(force=True)
    return trace


def _evaluator(wmb, model):
    """FactorEvaluator of the model the WMB used (card-1 variables squeezed out), so that
    factor buckets agree with the WMB arc weights."""
    parent, _, _ = tree_structure(wmb.pseudo_tree, int(len(model.cards)))
    wmodel = getattr(wmb, "model", None) or model
    return FactorEvaluator(wmodel, parent, const_bucket=constant_bucket(wmb, wmodel, parent))


def _ladder_row(acc, loop):
    """Trace row while the WMB ladder runs: the best WMB bound and the WMB-IS bounds."""
    det = loop["u_min"]
    if acc.n == 0:
        return _row(det, _NEG_INF, math.nan, 0, 0, 0, False, det)
    lo, up = acc.bounds(det)
    return _row(up, lo, acc.log_Z_hat, acc.n, 0, 0, acc.lower_is_markov, det)


def _final_row(method, rec, meta, acc, loop):
    """The trace when the budget ran out during the WMB ladder (no method phase)."""
    rec.tick(lambda: _ladder_row(acc, loop), force=True)
    meta["n_bound_violations"] = acc.n_bound_violations
    return BoundTrace.from_rows(rec.rows, method=method, meta=meta)


def _build_wmb_ladder(model, i_bound, memory_mb, elim_order, time_limit, rec, acc, loop, gen, meta,
                      sampling, max_samples):
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
    from ..exceptions import ConvergenceWarning
    from .schedule import SAMPLES_PER_MIB, plan_wmb
    from .wmb import BuildInterrupted, WeightedMiniBucket

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
                rec.tick(lambda: _ladder_row(acc, loop), force=True)
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
                rec.tick(lambda: _ladder_row(acc, loop))
                k -= c
                chunk *= 2
                if stop():
                    break
        return draw

    for j, rung in enumerate(rungs):
        if j:  # samples from the best finished rung before this rung's first pass
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
            ev = best["ev"] if best["ev"] is not None else _evaluator(w, model)
            best.update(wmb=w, ev=ev, fast=make_fast_proposal(w, ev))
            loop["u_min"] = min(loop["u_min"], float(w.log_Z_upper))
            rec.tick(lambda: _ladder_row(acc, loop), force=True)
        del w
        if best["wmb"].is_exact or not math.isfinite(best["wmb"].log_Z_upper) or stop():
            break
    return best["wmb"], best["ev"], best["fast"]


def _same_float(a, b):
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return False


def check_writable(path, what):
    """Raise ValueError (naming ``what`` and ``path``) unless a file can be written at ``path``.

    The check creates and removes a temporary file in the target directory (the atomic
    writers of :mod:`sampling.utils.atomic` write there and rename), so that an unwritable output
    is found before a long run, not after it.

    Parameters
    ----------
    path : str or os.PathLike
        The output file (it may exist; it is not touched).
    what : str
        What the file is, for the message ("trace (--out)", "checkpoint", ...).

    Raises
    ------
    ValueError
        If ``path`` is a directory, its directory does not exist, or a file cannot be
        created there (permissions, read-only file system, a file where a directory is
        expected).
    """
    import tempfile

    path = os.fspath(path)
    if os.path.isdir(path):
        raise ValueError(f"cannot write the {what} to {path}: it is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ValueError(f"cannot write the {what} to {path}: directory {parent} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=".write-check-")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise ValueError(f"cannot write the {what} to {path}: {exc.strerror or exc}") from None


def _check_rebuilt(path, what, got, saved):
    if not (got == saved or abs(got - saved) <= 1e-9 * max(1.0, abs(saved))):
        raise ValueError(f"{path}: the rebuilt {what} is {got!r}, the checkpoint's {saved!r}; "
                         "the model, the code or the memory budget changed since it was written")


def _run_loop(method, rec, meta, acc, loop, gen, wmb, ev, fast, search, log_Z_wmb, time_limit,
              n_samples, n_expansions, max_samples, max_expansions, search_fraction, save):
    """The anytime loop of :func:`run` from the state in ``acc``, ``loop`` and ``rec``
    (fresh or restored from a checkpoint); calls ``save()`` after each trace tick."""
    if log_Z_wmb == _NEG_INF or getattr(wmb, "is_exact", False):
        # the WMB bound is ln Z itself (one mini-bucket per bucket, e.g. a model without
        # variables) or proves Z = 0: the answer is exact, nothing left to do
        meta["exact"] = True
        rec.tick(lambda: _row(log_Z_wmb, log_Z_wmb, log_Z_wmb, 0, 0, 0, False, log_Z_wmb), force=True)
        return BoundTrace.from_rows(rec.rows, method=method, meta=meta)

    if method == "wmb":
        rec.tick(lambda: _row(log_Z_wmb, _NEG_INF, math.nan, 0, 0, 0, False, log_Z_wmb), force=True)
        return BoundTrace.from_rows(rec.rows, method=method, meta=meta)

    if method == "wmb-is":
        while True:
            n_done = loop["n_done"]
            # vectorised batches growing with the sample count (N_l samples at first)
            batch = max(n_samples, min(1024, n_done // 8))
            k = batch if max_samples is None else min(batch, max_samples - n_done)
            if k <= 0 or (n_done and rec.elapsed() >= time_limit):
                break
            log_w = sample_wmb_is(wmb, ev, k, gen, fast=fast)
            acc.add(log_w, log_Z_wmb)
            loop["n_done"] = n_done + k

            def row():
                lo, up = acc.bounds(log_Z_wmb)
                return _row(up, lo, acc.log_Z_hat, acc.n, 0, 0, acc.lower_is_markov, log_Z_wmb)
            done = (max_samples is not None and loop["n_done"] >= max_samples) or rec.elapsed() >= time_limit
            rec.tick(row, force=done)
            save()
            if done:
                break
        if not rec.rows:
            rec.tick(lambda: _row(log_Z_wmb, _NEG_INF, math.nan, 0, 0, 0, False, log_Z_wmb), force=True)
        return BoundTrace.from_rows(rec.rows, method=method, meta=meta)

    meta["max_nodes"] = search.max_nodes_

    def search_row(sampling):
        loop["u_min"] = min(loop["u_min"], search.log_Z_upper_, search.log_Z_upper_min_)
        u_det, l_det = loop["u_min"], search.log_Z_lower_
        if search.solved_:
            lz = search.log_Z_upper_
            return _row(lz, lz, lz, acc.n, search.n_nodes_, search.n_expansions_, False, lz)
        if acc.n == 0:  # (two-stage search stage: the WMB-IS draws of the WMB ladder count)
            return _row(u_det, l_det, math.nan if acc.n == 0 else acc.log_Z_hat, acc.n,
                        search.n_nodes_, search.n_expansions_, False, u_det)
        lo, up = acc.bounds(u_det)
        markov = acc.lower_is_markov
        if l_det >= lo:
            lo, markov = l_det, False
        return _row(up, lo, acc.log_Z_hat, acc.n, search.n_nodes_, search.n_expansions_, markov, u_det)

    def expansions_left():
        return math.inf if max_expansions is None else max_expansions - search.n_expansions_

    if method in ("aobfs", "two-stage") and loop["stage"] == "search":
        if not rec.rows:
            rec.tick(lambda: search_row(False), force=True)
        stage_limit = time_limit if method == "aobfs" else time_limit * search_fraction
        while search.can_expand and expansions_left() > 0 and rec.elapsed() < stage_limit:
            k = int(min(max(n_expansions, 1), expansions_left()))
            search.expand(k)
            rec.tick(lambda: search_row(False))
            save()
        if method == "aobfs" or search.solved_:
            rec.tick(lambda: search_row(False), force=True)
            meta["n_expansions_total"] = search.n_expansions_
            meta["n_collapses"] = search.n_collapses_
            return BoundTrace.from_rows(rec.rows, method=method, meta=meta)
        rec.tick(lambda: search_row(False), force=True)
        loop["stage"] = "sample"
    if method == "two-stage":
        n_expansions = 0  # sampling stage only

    # DIS loop (Alg. 1); also the sampling stage of two-stage. Rounds run in batches that
    # grow with the number done (one compiled call per batch), so that the clock and the
    # trace are checked about every 1/8 of the work so far.
    while True:
        if (acc.n and rec.elapsed() >= time_limit) or (max_samples is not None and acc.n >= max_samples):
            break
        rounds, per_round = max(1, min(1024, loop["rounds_done"] // 8)), n_samples
        if max_samples is not None:
            rounds = min(rounds, (max_samples - acc.n) // n_samples)
            if rounds == 0:  # fewer than N_l samples left: one short round
                rounds, per_round = 1, max_samples - acc.n
        left = None if max_expansions is None else max(expansions_left(), 0)
        log_w, log_U = dis_rounds(search, ev, rounds, n_expansions, per_round, gen, fast=fast,
                                  max_expansions=left)
        if len(log_w):
            acc.add(log_w, log_U)
        loop["rounds_done"] += rounds
        if search.solved_:
            break
        done = (max_samples is not None and acc.n >= max_samples) or rec.elapsed() >= time_limit
        rec.tick(lambda: search_row(True), force=done)
        save()
    rec.tick(lambda: search_row(True), force=True)
    meta["n_expansions_total"] = search.n_expansions_
    meta["n_collapses"] = search.n_collapses_
    meta["n_bound_violations"] = acc.n_bound_violations
    return BoundTrace.from_rows(rec.rows, method=method, meta=meta)


def _row(up, lo, hat, n_samples, n_nodes, n_exp, markov, det):
    return {"log_Z_upper_det": float(det), "log_Z_upper": float(up), "log_Z_lower": float(lo), "log_Z_hat": float(hat),
            "n_samples": int(n_samples), "n_nodes": int(n_nodes), "n_expansions": int(n_exp),
            "lower_is_markov": bool(markov)}
