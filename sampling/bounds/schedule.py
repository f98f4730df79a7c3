"""A work-based plan for building the weighted mini-bucket (WMB) inside an anytime run.

An anytime method is judged on its whole curve (the area of Table 1 of Lou, Dechter &
Ihler 2017), so :func:`sampling.bounds.run` does not wait for the largest WMB before its
first bound. It climbs a short ladder of i-bounds instead: a cheap WMB gives the first
upper bound (and a proposal for WMB-IS lower bounds) within a small fraction of the
budget; larger ones follow; the largest that fits the memory budget (or the i-bound the
user gave) is the one the method then searches and samples with.

Every decision of the plan is made from *work*, never from the wall clock, so a run is
deterministic given its seed and the amount of work done: the work of a WMB pass is the
size of its tables (MiB, :meth:`WeightedMiniBucket.memory_for`), turned into nominal
seconds with the fixed rate :data:`WMB_MIB_PER_S` (measured on the development machine).
The time budget only cuts the run short.
"""
from __future__ import annotations

import dataclasses
import math

__all__ = ["WMB_MIB_PER_S", "SAMPLES_PER_MIB", "Rung", "plan_wmb"]

#: Nominal MiB of WMB tables one forward + backward pass processes per second. Measured:
#: pedigree23 at i-bound 20 (803 MiB of tables) ran its first pass and 10 passes in
#: 20.1 s, 440 MiB/s, before the compiled table kernels, and about 1500 MiB/s with them.
#: 300 is kept: a nominal 800 (with 2 draws per MiB) planned bigger first rungs and more
#: passes, and the anytime area over [1, 60] s of 60 s DIS runs on pedigrees 23/37/38 grew
#: from 0.18/1.99/7.49 to 0.74/3.90/10.34 (benchmarks/measured/bounds_schedule_rate_2026-11-24.txt).
WMB_MIB_PER_S = 300.0
#: WMB-IS draws interleaved after each pass of a rung being built, per MiB of that rung's
#: tables (about 7% of the pass time at 40-80 us per draw on a pedigree). Measured: at 20
#: per MiB, pedigree30 (30 CPU-s DIS) spent 6.4 s of its i-bound 19 build drawing from the
#: i-bound 13 WMB, and DIS started at 15.4 s instead of about 9 s (final gap 0.0206).
SAMPLES_PER_MIB = 5.0
#: Python overhead of a pass per bucket (seconds): pedigree23 (402 variables) at i-bound 6
#: (0.6 MiB of tables) ran 11 passes in 0.34 s.
PASS_S_PER_VAR = 7e-5
#: Share of the time budget the first bound may take (nominal seconds).
FIRST_BOUND_SHARE = 0.03
#: ... and at most this many nominal seconds, however long the budget: at 300 s the share
#: alone (9 s) let pedigree37 start with its top WMB, i-bound 13 with 10 passes, whose first
#: WMB-IS lower bound came at 47.6 CPU-s (its first upper bound at 1.3 s).
FIRST_BOUND_MAX_S = 2.0
#: Share of the time budget all WMB work may take (nominal seconds); the method keeps the rest.
#: Measured (30 CPU-s DIS, pedigrees 23/30/33/37, final gap at 0.5 -> 0.35): 0.0045 -> 0.0048,
#: 0.0137 -> 0.0138, 0.0288 -> 0.0261, 0.0282 -> 0.0203 (DIS starts 4-9 s earlier).
WMB_SHARE = 0.35


@dataclasses.dataclass(frozen=True)
class Rung:
    """One WMB of the ladder: its i-bound, estimated table memory (MiB) and passes."""

    i_bound: int
    memory_mb: float
    n_iters: int
    exact: bool

    n_vars: int = 0

    @property
    def work_s(self):
        """Nominal seconds: the first pass plus ``n_iters`` reparameterisation passes."""
        return (1 + self.n_iters) * pass_seconds(self.memory_mb, self.n_vars)


def pass_seconds(memory_mb, n_vars):
    """Nominal seconds of one WMB pass: table work plus a per-bucket Python overhead."""
    return memory_mb / WMB_MIB_PER_S + PASS_S_PER_VAR * n_vars


def _largest(mem, lo, hi, ok):
    """Largest i in [lo, hi] with ok(mem(i)) (mem increasing in i), or None."""
    if hi < lo or not ok(mem(lo)):
        return None
    a, b = lo, hi
    if ok(mem(b)):
        return b
    while b - a > 1:  # ok(a), not ok(b)
        mid = (a + b) // 2
        if ok(mem(mid)):
            a = mid
        else:
            b = mid
    return a


def plan_wmb(probe, *, memory_mb, time_limit, i_bound=None, n_iters=10):
    """The ladder of WMBs to build, cheapest first.

    Parameters
    ----------
    probe : WeightedMiniBucket
        Prepared (:meth:`WeightedMiniBucket.prepare`): its order and pseudo tree are used.
    memory_mb : float
        Budget (MiB) of the largest WMB's tables.
    time_limit : float
        Seconds (``inf``: no ladder, one WMB with ``n_iters`` passes, as a fixed-work run
        with ``max_samples`` expects).
    i_bound : int, optional
        The i-bound of the last rung (default: the largest that fits ``memory_mb`` and whose
        first pass fits the WMB share of the budget).
    n_iters : int, default 10
        Most reparameterisation passes per rung.

    Returns
    -------
    list of Rung
        Increasing i-bounds; the last one is the WMB the method works with. A rung at the
        induced width is exact (one mini-bucket per bucket, no passes needed).

    Raises
    ------
    MemoryError
        If even the smallest useful i-bound, or the given ``i_bound``, needs more than
        ``memory_mb``.
    """
    w = int(probe.pseudo_tree.induced_width)
    lo = max((len(f.scope) - 1 for f in probe.model.factors), default=0)
    lo = max(0, min(lo, w))
    cache = {}

    def mem(i):
        i = min(int(i), w)
        if i not in cache:
            cache[i] = probe.memory_for(i)
        return cache[i]

    n = int(probe.model.n_vars)

    def sec(m):
        return pass_seconds(m, n)

    def passes(m, allowance):
        """Reparameterisation passes (after the first) that fit ``allowance`` nominal seconds."""
        return max(0, min(n_iters, int(allowance / sec(m)) - 1)) if sec(m) > 0 else n_iters

    finite = math.isfinite(time_limit)
    allot = WMB_SHARE * time_limit if finite else math.inf  # nominal seconds for all WMB work
    if i_bound is not None:
        top = int(i_bound)
        if mem(top) > memory_mb:
            raise MemoryError(f"weighted mini-bucket with i_bound={top} needs about {mem(top):.1f} MiB; "
                              f"the budget is memory_mb={memory_mb:g}")
    else:
        if mem(lo) > memory_mb:
            raise MemoryError(f"weighted mini-bucket needs {mem(lo):.1f} MiB even at the smallest i-bound "
                              f"{lo}; the budget is memory_mb={memory_mb:g}")
        # largest i-bound that fits the memory and whose first pass fits the WMB share
        top = _largest(mem, lo, w, lambda m: m <= memory_mb and sec(m) <= allot)
        if top is None:
            top = lo
    exact_top = min(top, w) >= w
    rungs = []
    if finite:
        first = min(FIRST_BOUND_SHARE * time_limit, FIRST_BOUND_MAX_S)
        # a cheap first rung when the top WMB (first pass and the passes it would get)
        # takes longer than the first-bound share: WMB-IS samples only from finished WMBs
        if sec(mem(top)) * (1 + (0 if exact_top else passes(mem(top), allot))) > first:
            # a cheap first rung: its first pass in a quarter of the first-bound share
            r0 = _largest(mem, lo, top - 1, lambda m: sec(m) <= first / 4)
            if r0 is None:
                r0 = lo if lo < top else None
            if r0 is not None:
                rungs.append(Rung(r0, mem(r0), 0 if r0 >= w else passes(mem(r0), first), r0 >= w, n))
                # one more in between when the last rung is much larger (geometric middle)
                if mem(top) > 64 * max(mem(r0), 1e-3):
                    mid_mem = math.sqrt(mem(top) * max(mem(r0), 1e-3))
                    r1 = _largest(mem, r0 + 1, top - 1, lambda m: m <= mid_mem)
                    if r1 is not None:
                        rungs.append(Rung(r1, mem(r1), passes(mem(r1), 0.1 * allot), False, n))
        spent = sum(r.work_s for r in rungs)
        k = passes(mem(top), allot - spent)
    else:
        k = n_iters
    rungs.append(Rung(top, mem(top), 0 if exact_top else k, exact_top, n))
    return rungs
