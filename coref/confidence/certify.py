"""The certification pass of :func:`coref.confidence.assignment.assignment_confidence` (``certify_seconds``).

Within a wall-clock budget, block after block, in each block whose least confident ``gibbs``
row is below the review threshold, the least confident ``gibbs`` rows (at most
:data:`CERTIFY_MAX_SUBMODEL`) form a sub-model conditioned on the rest of the block; when it is
too large to sum exactly its rows get DIS intervals (method ``dis``; Lou, Dechter & Ihler 2017).
(Only the rows below the threshold, as before 2026-11-27, left no sub-model too large to sum
exactly on the dev names once clusters merged after annealing: 0 ``dis`` rows.)
A sub-model small enough to sum exactly is skipped: the budget is for what only DIS can bound.
"""
from __future__ import annotations

import time

import numpy as np

from coref.confidence.events import conditional_rows
from coref.confidence.submodels import subproblem

__all__ = ["Certify", "CERTIFY_MAX_SUBMODEL"]

#: Largest sub-model of the certification pass (``certify_seconds``); one sample stream
#: certifies all its events (:func:`coref.confidence.events.certify_events`).
CERTIFY_MAX_SUBMODEL = 16


class Certify:
    """Budget and results of the certification pass; :meth:`run` is called once per block."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.spent = 0.0
        self.dis_seconds = 0.0
        self.n_submodels = 0
        self.widths = []

    def left(self):
        return self.seconds - self.spent

    def run(self, F, labels, p, lo, hi, meth, nsub, *, review_threshold, max_exact, delta, time_limit,
            memory_mb, gen, encoding):
        """Certify the next least confident ``gibbs`` rows of one block, in place."""
        if self.seconds <= 0.0 or self.left() <= 0.0:
            return
        t0 = time.perf_counter()
        try:
            self._run(F, labels, p, lo, hi, meth, nsub, review_threshold, max_exact, delta, time_limit, memory_mb,
                      gen, encoding)
        finally:
            self.spent += time.perf_counter() - t0

    def _run(self, F, labels, p, lo, hi, meth, nsub, review_threshold, max_exact, delta, time_limit, memory_mb,
             gen, encoding):
        cand = np.flatnonzero(meth == "gibbs")
        cand = cand[np.argsort(p[cand], kind="stable")][:CERTIFY_MAX_SUBMODEL]
        if cand.size == 0 or not p[cand[0]] < review_threshold:
            return      # nothing in this block is below the review threshold
        sp = subproblem(F, np.sort(cand), labels)
        if sp.m <= max_exact:
            # small enough to sum exactly: not what this pass is for; its budget goes to the
            # sub-models only DIS can bound (summing these first spent it all on the dev names)
            return
        how = "dis"
        if self.left() < 1.5 * self.dis_seconds:  # too little left for informative intervals
            return
        # one sample stream bounds Z and every event of the sub-model: it may use all the budget left
        t0, per_run = time.perf_counter(), min(time_limit, max(self.left(), 1e-3))
        rows = conditional_rows(sp, labels, method=how, delta=delta, time_limit=per_run, memory_mb=memory_mb,
                                gen=gen, encoding=encoding)
        self.n_submodels += 1
        if how == "dis":  # what the last DIS sub-model needed (sampling stops at its target width)
            self.dis_seconds = time.perf_counter() - t0
        for k, i in enumerate(sp.S):
            p[i], lo[i], hi[i] = rows[k]
            meth[i] = how
            nsub[i] = sp.m
            if how == "dis":
                self.widths.append(float(rows[k][2] - rows[k][1]))

    def summary(self):
        w = np.asarray(self.widths)
        return {"seconds": self.seconds, "used_seconds": round(self.spent, 3), "n_submodels": self.n_submodels, "n_certified": int(w.size),
                "width_median": float(np.median(w)) if w.size else float("nan"),
                "width_max": float(w.max()) if w.size else float("nan")}
