"""Trace rows of an anytime run and the clock that decides when one is recorded."""
from __future__ import annotations

import math
import time

__all__ = ["NEG_INF", "Recorder", "trace_row"]

NEG_INF = -math.inf


def trace_row(up, lo, hat, n_samples, n_nodes, n_exp, markov, det):
    """One trace row (a dict with the keys of :data:`sampling.bounds.trace.COLUMNS` but
    ``time_s``, which :meth:`Recorder.tick` adds)."""
    return {"log_Z_upper_det": float(det), "log_Z_upper": float(up), "log_Z_lower": float(lo), "log_Z_hat": float(hat),
            "n_samples": int(n_samples), "n_nodes": int(n_nodes), "n_expansions": int(n_exp),
            "lower_is_markov": bool(markov)}


class Recorder:
    """Collects trace rows: every ``record_every`` iterations, else on a geometric clock.

    Parameters
    ----------
    t0 : float
        Start time on ``clock``.
    record_every : int or None
        Record every this many ticks; None: when the elapsed time has grown by
        ``growth`` (and at least ``min_dt`` seconds) since the last row.
    progress : callable or None
        Called with each recorded row.
    """

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
        """Seconds of ``clock`` since ``t0``."""
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
