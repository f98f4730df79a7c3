"""Anytime bound traces: a pandas-friendly table, the area metric of Table 1, plots.

References
----------
.. [1] Lou, Dechter & Ihler (2017), "Dynamic Importance Sampling for Anytime Bounds of
   the Partition Function", NIPS. Fig. 3 (anytime plots) and Table 1 (area metric).
"""
from __future__ import annotations

import dataclasses
import json
import math

import numpy as np

from sampling.utils.atomic import atomic_open, atomic_path, atomic_write_text

__all__ = ["BoundTrace", "bound_area", "normalized_areas", "plot_traces", "sidecar_path"]

COLUMNS = ("time_s", "log_Z_upper", "log_Z_lower", "log_Z_hat", "n_samples", "n_nodes",
           "n_expansions", "lower_is_markov", "log_Z_upper_det")


@dataclasses.dataclass(frozen=True)
class BoundTrace:
    """Anytime bounds on ln Z recorded over time (one row per record).

    Attributes
    ----------
    time_s : ndarray of shape (n_records,)
        Seconds since the start of the run (WMB construction included when the run
        built the WMB itself).
    log_Z_upper, log_Z_lower : ndarray of shape (n_records,)
        Natural-log upper / lower bound (``-inf`` lower while none is available).
        Probabilistic bounds hold with probability >= 1 - delta each.
    log_Z_hat : ndarray of shape (n_records,)
        Eq. 13 estimate (NaN for methods without one).
    n_samples, n_nodes, n_expansions : ndarray of int of shape (n_records,)
        Samples drawn, search nodes stored, node expansions done.
    lower_is_markov : ndarray of bool of shape (n_records,)
        True where the lower bound is the Markov bound (Bernstein still vacuous).
    log_Z_upper_det : ndarray of shape (n_records,)
        The deterministic upper bound alone (smallest U_S so far, or the WMB bound);
        ``log_Z_upper`` is ``min(Zhat + Delta, log_Z_upper_det)``.
    method : str
    meta : dict
        Settings and context (delta, i_bound, log_Z_wmb, log_Z_floor, ...).
    """

    time_s: np.ndarray
    log_Z_upper: np.ndarray
    log_Z_lower: np.ndarray
    log_Z_hat: np.ndarray
    n_samples: np.ndarray
    n_nodes: np.ndarray
    n_expansions: np.ndarray
    lower_is_markov: np.ndarray
    log_Z_upper_det: np.ndarray
    method: str = "dis"
    meta: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def from_rows(cls, rows, *, method, meta=None):
        """Build from a list of dicts with the keys of :data:`COLUMNS`."""
        rows = [dict(r) for r in rows]
        for r in rows:  # rows without the deterministic bound: it is the upper bound itself
            r.setdefault("log_Z_upper_det", r["log_Z_upper"])
        cols = {c: np.array([r[c] for r in rows]) for c in COLUMNS}
        for c in ("time_s", "log_Z_upper", "log_Z_lower", "log_Z_hat", "log_Z_upper_det"):
            cols[c] = cols[c].astype(float).reshape(-1)
        for c in ("n_samples", "n_nodes", "n_expansions"):
            cols[c] = cols[c].astype(np.int64).reshape(-1)
        cols["lower_is_markov"] = cols["lower_is_markov"].astype(bool).reshape(-1)
        return cls(**cols, method=method, meta=dict(meta or {}))

    def __len__(self):
        return int(self.time_s.shape[0])

    def __iter__(self):
        """One dict per record with the keys of :data:`COLUMNS`, so that
        ``pandas.DataFrame(trace)`` gives the same table as :meth:`to_frame` (without
        ``attrs``)."""
        cols = [getattr(self, c) for c in COLUMNS]
        for i in range(len(self)):
            yield {c: col[i].item() for c, col in zip(COLUMNS, cols)}

    # ---------------------------------------------------------------- values
    @property
    def final_log_Z_upper(self):
        """Last upper bound (ln)."""
        return float(self.log_Z_upper[-1])

    @property
    def final_log_Z_lower(self):
        """Last lower bound (ln)."""
        return float(self.log_Z_lower[-1])

    @property
    def final_log_Z_hat(self):
        """Last estimate (ln; NaN if none)."""
        return float(self.log_Z_hat[-1])

    @property
    def final(self):
        """Dict of the last row plus ``method``."""
        row = {c: getattr(self, c)[-1].item() for c in COLUMNS}
        row["method"] = self.method
        return row

    def to_frame(self):
        """pandas.DataFrame with one row per record and the columns of :data:`COLUMNS`."""
        import pandas as pd

        df = pd.DataFrame({c: getattr(self, c) for c in COLUMNS})
        df.attrs["method"] = self.method
        df.attrs["meta"] = dict(self.meta)
        return df

    def area(self, *, t_end=None, log_Z_floor=None, t_start=None, log_time=False):
        """Area between ln upper and ln lower over time (Table 1 of [1]_); see :func:`bound_area`."""
        return bound_area(self, t_end=t_end, log_Z_floor=log_Z_floor, t_start=t_start, log_time=log_time)

    # ------------------------------------------------------------------- I/O
    def to_csv(self, path):
        """Write the trace as a plain CSV and its ``method`` and ``meta`` as a sidecar JSON.

        The CSV (header row, one row per record, the columns of :data:`COLUMNS`) reads with a
        plain ``pandas.read_csv(path)``; the sidecar is ``path + ".json"``
        (:func:`sidecar_path`). Both are written atomically, the sidecar first.

        Returns
        -------
        str
            The sidecar's path.
        """
        side = sidecar_path(path)
        atomic_write_text(side, json.dumps({"format": TRACE_FORMAT, "method": self.method,
                                            "meta": _jsonable(self.meta)}, indent=1) + "\n")
        with atomic_open(path, "w", newline="") as fh:
            self.to_frame().to_csv(fh, index=False, float_format="%.10g")
        return side

    @classmethod
    def from_csv(cls, path):
        """Read a trace written by :meth:`to_csv` (method and meta from the sidecar JSON
        when it exists; a CSV of older versions with a ``# {json}`` first line also reads).

        Raises
        ------
        ValueError
            If a column is missing, or the sidecar is not valid JSON of this format (the
            message names the file).
        """
        import os

        import pandas as pd

        method, meta = "unknown", {}
        side = sidecar_path(path)
        with open(path, encoding="utf-8") as fh:
            first = fh.readline()
        if os.path.exists(side):
            try:
                with open(side, encoding="utf-8") as fh:
                    info = json.load(fh)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{side}: not a readable trace sidecar (line {exc.lineno}: {exc.msg})") from None
            if not isinstance(info, dict) or info.get("format") != TRACE_FORMAT:
                raise ValueError(f"{side}: not a trace sidecar of format {TRACE_FORMAT!r}")
            method, meta = info.get("method", method), info.get("meta", {})
            if not isinstance(method, str) or not isinstance(meta, dict):
                raise ValueError(f"{side}: fields 'method' (a string) and 'meta' (an object) are malformed")
        elif first.startswith("# "):  # the layout before the sidecar
            info = json.loads(first[2:])
            method, meta = info.get("method", method), info.get("meta", {})
        df = pd.read_csv(path, comment="#" if first.startswith("# ") else None)
        missing = [c for c in COLUMNS if c not in df.columns and c != "log_Z_upper_det"]
        if missing:
            raise ValueError(f"{path}: trace CSV lacks column(s) {missing}")
        rows = df.to_dict("records")
        return cls.from_rows(rows, method=method, meta=meta)


TRACE_FORMAT = "sampling.bounds.trace/1"


def sidecar_path(path):
    """The metadata file of the trace CSV ``path``: ``path + ".json"``."""
    import os

    return os.fspath(path) + ".json"


def _jsonable(d):
    """JSON-safe copy: numpy scalars to Python, non-finite floats to strings ("inf", "nan"),
    nested dicts and lists included."""
    def conv(v):
        if isinstance(v, (np.floating, np.integer, np.bool_)):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            return str(v)
        if isinstance(v, dict):
            return {str(k): conv(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [conv(x) for x in v]
        return v
    return conv(dict(d))


def bound_area(trace, *, t_end=None, log_Z_floor=None, t_start=None, log_time=False):
    """Area between the ln upper and ln lower bound over time (Table 1 of [1]_).

    The bounds are step functions (each record holds until the next); the last record
    holds until ``t_end``.

    Parameters
    ----------
    trace : BoundTrace
    t_end : float, optional
        End of the integration window in seconds (default: the last record time).
    log_Z_floor : float, optional
        Initial lower bound given to every method (the paper gives each one the WMB
        lower bound): the lower bound used is ``max(log_Z_lower, log_Z_floor)``.
        Defaults to ``trace.meta.get("log_Z_floor")``.
    t_start : float, optional
        Start of the window (default: the first record time). Before the first record
        the gap is ``meta["log_Z_wmb"] - log_Z_floor`` when the WMB bound is known (every
        method starts from the WMB bound and the common floor), else the first record's.
    log_time : bool, default False
        Integrate over ln t instead of t (the x-axis of Fig. 3 of [1]_, which weighs the
        early, loose part of a run as much as the late part); needs ``t_start > 0``
        (records before ``t_start`` only set the gap held at ``t_start``).

    Returns
    -------
    float
        Area in nats x seconds (nats x ln-seconds with ``log_time``); ``inf`` if the
        lower bound is ``-inf`` somewhere in the window.

    Raises
    ------
    ValueError
        If the window is empty, the trace has no record, or ``log_time`` is set without
        a positive ``t_start``.
    """
    if len(trace) == 0:
        raise ValueError("cannot compute the area of an empty trace")
    t = trace.time_s
    t0 = float(t[0]) if t_start is None else float(t_start)
    t1 = float(t[-1]) if t_end is None else float(t_end)
    if not t1 >= t0:
        raise ValueError(f"t_end ({t1}) must be >= t_start ({t0})")
    if log_time and not t0 > 0:
        raise ValueError(f"log_time needs t_start > 0; got {t0}")
    clock = np.log if log_time else (lambda v: np.asarray(v, dtype=float))
    if log_Z_floor is None:
        log_Z_floor = trace.meta.get("log_Z_floor")
    floor = -math.inf if log_Z_floor is None else float(log_Z_floor)
    lo = np.maximum(trace.log_Z_lower, floor)
    gap = np.maximum(trace.log_Z_upper - lo, 0.0)
    ends = np.append(t[1:], max(t1, float(t[-1])))
    starts = np.clip(t, t0, t1)
    ends = np.clip(ends, t0, t1)
    # before the first record: hold the first record's gap
    width = clock(ends) - clock(starts)
    total = 0.0
    for w, g in zip(width, gap):
        if w > 0:
            total += w * g
    if t[0] > t0:
        # before the first record: the WMB bound and the floor if known, else the first gap
        g0 = gap[0]
        u0 = trace.meta.get("log_Z_wmb")
        if u0 is not None and not isinstance(u0, str):
            g0 = max(float(u0) - floor, 0.0)
        total += float(clock(min(float(t[0]), t1)) - clock(t0)) * g0
    return float(total)


def normalized_areas(traces, reference, **kw):
    """Areas of several traces divided by the area of ``reference`` (Table 1 of [1]_)."""
    ref = bound_area(reference, **kw)
    return {name: bound_area(tr, **kw) / ref for name, tr in traces.items()}


def plot_traces(traces, path=None, *, log_Z=None, title=None, ax=None):
    """Anytime bounds on ln Z in the style of Fig. 3 of [1]_.

    Parameters
    ----------
    traces : dict of {str: BoundTrace} or BoundTrace
    path : str, optional
        Write a PNG here (atomically).
    log_Z : float, optional
        Known ln Z, drawn as a horizontal line (dash-dot, labelled).
    title : str, optional
        The axes title; ``sampling bounds --plot`` gives the model's file name.
    ax : matplotlib Axes, optional

    Each trace draws its upper bound (solid, labelled "NAME: upper bound"), its lower
    bound (dashed, "NAME: lower bound") and, where the lower bound is still the Markov
    bound, a dotted "NAME: lower bound (Markov)".

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    if isinstance(traces, BoundTrace):
        traces = {traces.method: traces}
    if ax is None:
        fig, ax = plt.subplots(figsize=(6, 4))
    else:
        fig = ax.figure
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    finite_vals = []
    for k, (name, tr) in enumerate(traces.items()):
        c = colors[k % len(colors)]
        t = np.maximum(tr.time_s, 1e-3)
        up = tr.log_Z_upper
        ax.step(t, up, where="post", color=c, label=f"{name}: upper bound")
        lo = np.where(np.isfinite(tr.log_Z_lower), tr.log_Z_lower, np.nan)
        markov = tr.lower_is_markov
        ax.step(t, np.where(markov, np.nan, lo), where="post", color=c, linestyle="--",
                label=f"{name}: lower bound")
        if np.any(markov & np.isfinite(lo)):
            ax.step(t, np.where(markov, lo, np.nan), where="post", color=c, linestyle=":",
                    label=f"{name}: lower bound (Markov)")
        finite_vals.extend(up[np.isfinite(up)].tolist())
        finite_vals.extend(lo[np.isfinite(lo)].tolist())
    if log_Z is not None:
        ax.axhline(log_Z, color="k", linewidth=0.8, linestyle="-.", label=f"ln Z = {log_Z:.4f}")
    ax.set_xscale("log")
    ax.set_xlabel("time (sec)")
    ax.set_ylabel("ln Z (natural log)")
    if title:
        ax.set_title(title)
    if finite_vals:
        lo_v, hi_v = np.percentile(finite_vals, [2, 100])
        pad = 0.05 * max(hi_v - lo_v, 1.0)
        ax.set_ylim(lo_v - pad, hi_v + pad)
    ax.legend(fontsize="small")
    fig.tight_layout()
    if path is not None:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=100)
    return fig
