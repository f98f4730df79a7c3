"""The pyGMs side-by-side benchmark (``benchmarks/scripts/bounds_pygms.py``, issue 30).

pyGMs itself is not installed here (it is never a dependency): the worker's protocol is
checked against a stand-in ``pygms`` module, and the trace built from its events against the
estimator computed directly.
"""
from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from sampling.bounds.estimator import ImportanceAccumulator

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "scripts" / "bounds_pygms.py"


def _load():
    saved = list(sys.path)
    try:
        spec = importlib.util.spec_from_file_location("bounds_pygms", SCRIPT)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path[:] = saved


def _events(lw_batches, U=-1.0):
    ev = [{"event": "built", "memory_mb": 2.5, "t": 0.1},
          {"event": "pass", "k": 0, "bound": 0.5, "t": 0.2},
          {"event": "pass", "k": 1, "bound": U, "t": 0.3}]
    t = 0.3
    for b in lw_batches:
        t += 0.5
        ev.append({"event": "samples", "log_w": b, "U": U, "t": t})
    ev.append({"event": "done", "rss_mb": 77.0, "t": t + 0.1})
    return ev


def test_trace_matches_the_estimator_on_the_same_weights():
    mod = _load()
    rng = np.random.default_rng(3)
    batches = [list(-1.0 - rng.exponential(1.0, size=k)) for k in (8, 8, 16)]
    batches[1][2] = -math.inf  # a zero weight
    tr, info = mod.pygms_trace(_events(batches), floor=-9.0, delta=0.05)
    acc = ImportanceAccumulator(0.05)
    for b in batches:
        acc.add(np.asarray(b), -1.0)
    lo, up = acc.bounds(-1.0)
    f = tr.final
    assert f["log_Z_lower"] == pytest.approx(lo, rel=1e-12)
    assert f["log_Z_upper"] == pytest.approx(min(up, -1.0), rel=1e-12)
    assert f["n_samples"] == 32
    assert info["zero_frac"] == pytest.approx(1 / 32)
    assert info["best_bound"] == -1.0 and info["first_bound"] == 0.5 and info["n_passes"] == 1
    assert info["memory_mb"] == 2.5 and info["rss_mb"] == 77.0 and info["nan_pass"] is None
    assert info["violations"] == 0
    # rows: one per pass and per batch, times from the events
    assert list(tr.time_s) == pytest.approx([0.2, 0.3, 0.8, 1.3, 1.8])


def test_nan_pass_is_recorded_and_weights_above_u_counted():
    mod = _load()
    ev = _events([[-0.5, -2.0, -0.9]], U=-1.0)
    ev.insert(3, {"event": "pass", "k": 2, "bound": float("nan"), "t": 0.35})
    tr, info = mod.pygms_trace(ev, floor=-9.0, delta=0.05)
    assert info["nan_pass"] == 2
    assert info["best_bound"] == -1.0  # the NaN pass does not count
    assert info["violations"] == 2  # -0.5 and -0.9 are above U = -1
    assert tr.final["log_Z_upper"] <= -1.0


def test_no_finite_bound_gives_an_empty_trace_and_infinite_area():
    mod = _load()
    ev = [{"event": "pass", "k": 0, "bound": float("nan"), "t": 0.2}]
    tr, info = mod.pygms_trace(ev, floor=-9.0, delta=0.05)
    assert len(tr) == 0 and info["nan_pass"] == 0
    assert mod._area(tr, 1.0, 5.0, -9.0) == math.inf


def test_area_ratio_rules():
    mod = _load()
    assert mod._ratio(2.0, 8.0) == 0.25
    assert mod._ratio(2.0, math.inf) == 0.0
    assert math.isnan(mod._ratio(math.inf, math.inf))
    assert mod._ratio(math.inf, 3.0) == math.inf
    assert math.isnan(mod._ratio(1.0, 0.0))


FAKE_PYGMS = '''
import math
import numpy as np

class GraphModel:
    def __init__(self, factors):
        self.factors = factors
        self.eps = None
    def condition(self, ev):
        self.ev = ev
    def copy(self):
        return GraphModel(self.factors)
    def makePositive(self, eps):
        self.eps = eps
    def logValue(self, x):
        return -1.5

def readUai(path):
    return [path]

def readEvidence14(path):
    return {}
'''

FAKE_WMB = '''
import math
BOUNDS = {BOUNDS}

class WMB:
    def __init__(self, model, elimOrder=None, iBound=None, weights=1.0):
        self.model, self.iBound, self.k = model, iBound, 0
    def memory(self):
        return float(self.iBound)
    def msgForward(self, stepTheta, stepWeights):
        b = BOUNDS[min(self.k, len(BOUNDS) - 1)]
        self.k += 1
        return b
    def msgBackward(self):
        pass
    def sample(self):
        return {{}}, -0.25
'''


def _run_worker(tmp_path, bounds, tlimit="0.3"):
    pkg = tmp_path / "pygms"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(FAKE_PYGMS)
    (pkg / "wmb.py").write_text(FAKE_WMB.format(BOUNDS=bounds))
    order = tmp_path / "order.json"
    order.write_text(json.dumps([0, 1]))
    cmd = [sys.executable, str(SCRIPT), "--worker", "m.uai", "", str(order), "3", "4", tlimit, "0", "0.0"]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path,
                         env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_worker_protocol_passes_then_samples(tmp_path):
    ev = _run_worker(tmp_path, "[3.0, 2.0, 1.0, 0.5, 0.25]")
    kinds = [e["event"] for e in ev]
    assert kinds[0] == "built" and ev[0]["memory_mb"] == 4.0  # pyGMs iBound = our i-bound + 1
    passes = [e for e in ev if e["event"] == "pass"]
    assert [p["k"] for p in passes] == [0, 1, 2, 3, 4] and passes[-1]["bound"] == 0.25
    samples = [w for e in ev if e["event"] == "samples" for w in e["log_w"]]
    assert samples and all(w == pytest.approx(-1.25) for w in samples)  # logValue - log q
    assert all(e["U"] == 0.25 for e in ev if e["event"] == "samples")
    assert kinds[-1] == "done"
    assert all(a["t"] <= b["t"] for a, b in zip(ev, ev[1:]))


def test_worker_keeps_the_state_before_a_worse_pass(tmp_path):
    ev = _run_worker(tmp_path, "[3.0, 2.0, 2.5, 1.0]")
    passes = [e for e in ev if e["event"] == "pass"]
    assert [p["k"] for p in passes] == [0, 1, 2]
    assert {e["U"] for e in ev if e["event"] == "samples"} == {2.0}


def test_worker_stops_at_a_nan_pass_without_sampling(tmp_path):
    ev = _run_worker(tmp_path, "[3.0, float('nan'), 1.0]")
    passes = [e for e in ev if e["event"] == "pass"]
    assert [p["k"] for p in passes] == [0, 1] and math.isnan(passes[1]["bound"])
    assert not [e for e in ev if e["event"] == "samples"]
