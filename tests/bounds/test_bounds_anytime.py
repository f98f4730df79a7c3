"""Anytime from the first bound (issue 15 item 1): the WMB ladder of ``run`` is planned from
work, not from the wall clock; the budget covers the whole call; an exact answer ends the run."""
import time

import numpy as np
import pytest

from sampling.bounds.dis import run
from sampling.bounds.exact import log_partition
from sampling.bounds.model import Factor, GraphicalModel
from sampling.bounds.schedule import plan_wmb
from sampling.bounds.wmb import BuildInterrupted, WeightedMiniBucket

pytestmark = pytest.mark.filterwarnings("ignore::sampling.exceptions.ConvergenceWarning")


def grid(n=6, card=2, seed=0, scale=0.8):
    """An n x n grid (induced width n): small i-bounds are loose, i-bound n is exact."""
    rng = np.random.default_rng(seed)
    v = lambda r, c: r * n + c  # noqa: E731
    facs = [Factor((v(r, c),), scale * rng.normal(size=card)) for r in range(n) for c in range(n)]
    for r in range(n):
        for c in range(n):
            if c + 1 < n:
                facs.append(Factor((v(r, c), v(r, c + 1)), scale * rng.normal(size=(card, card))))
            if r + 1 < n:
                facs.append(Factor((v(r, c), v(r + 1, c)), scale * rng.normal(size=(card, card))))
    return GraphicalModel([card] * (n * n), facs)


class FakeClock:
    """A perf_counter that advances ``step`` per call and jumps by ``jump`` at call ``at``."""

    def __init__(self, step=1e-6, jump=0.0, at=None):
        self.t, self.calls, self.step, self.jump, self.at = 1000.0, 0, step, jump, at

    def __call__(self):
        self.calls += 1
        self.t += self.step
        if self.at is not None and self.calls == self.at:
            self.t += self.jump
        return self.t


def _values(tr):
    df = tr.to_frame().drop(columns=["time_s"])
    return df.to_numpy(dtype=float)


def test_a_paused_process_builds_the_same_wmb(monkeypatch):
    # before: the WMB passes stopped after half of the budget in wall time, so a pause
    # during the build changed the bound (pedigree20: -66.358 vs -65.874)
    m = grid(6, seed=1)
    kw = dict(time_limit=100.0, i_bound=3, max_samples=300, rng=3, record_every=5)
    monkeypatch.setattr(time, "perf_counter", FakeClock())
    a = run(m, "dis", **kw)
    monkeypatch.setattr(time, "perf_counter", FakeClock(jump=60.0, at=4))  # a 60 s pause early on
    b = run(m, "dis", **kw)
    assert a.meta["log_Z_wmb"] == b.meta["log_Z_wmb"]
    assert [r["n_iters"] for r in a.meta["wmb_ladder"]] == [r["n_iters"] for r in b.meta["wmb_ladder"]]
    np.testing.assert_array_equal(_values(a), _values(b))


def test_ladder_gives_an_early_bound_then_a_tighter_one(monkeypatch):
    m = grid(7, seed=2)
    lz = log_partition(m)
    probe = WeightedMiniBucket(m).prepare()
    rungs = plan_wmb(probe, memory_mb=1024, time_limit=0.02, i_bound=None)
    assert len(rungs) >= 2 and rungs[0].i_bound < rungs[-1].i_bound and rungs[-1].exact
    monkeypatch.setattr(time, "perf_counter", FakeClock(step=1e-9))  # the budget never ends
    tr = run(m, "dis", time_limit=0.02, max_samples=2000, rng=0, record_every=1)
    ladder = tr.meta["wmb_ladder"]
    assert [r["i_bound"] for r in ladder] == [r.i_bound for r in rungs]
    assert all(r["finished"] for r in ladder)
    # the trace starts at the first pass of the first (cheap) WMB, looser than the last one
    assert tr.log_Z_upper_det[0] >= ladder[0]["log_Z_upper"] > ladder[-1]["log_Z_upper"] - 1e-9
    assert np.all(np.diff(tr.log_Z_upper_det) <= 0)
    # the last rung is exact: the run ends with ln Z on both sides, after WMB-IS draws
    # from the cheap rung (their bounds bracket ln Z too)
    assert tr.meta["exact"] and tr.final_log_Z_lower == tr.final_log_Z_upper == pytest.approx(lz, abs=1e-9)
    assert tr.n_samples.max() > 0
    assert np.all(tr.log_Z_upper >= lz - 1e-9) and np.all(tr.log_Z_lower <= lz + 1e-9)


def test_the_deadline_cuts_a_rung_and_the_run_returns(monkeypatch):
    """A rung still building at the deadline is dropped; the run returns the cheap rung's
    bounds at once (no search tree, no further sampling)."""
    m = grid(7, seed=2)
    clock = FakeClock(step=1e-9)
    monkeypatch.setattr(time, "perf_counter", clock)
    probe = WeightedMiniBucket(m).prepare()
    assert len(plan_wmb(probe, memory_mb=1024, time_limit=0.02)) >= 2
    calls = {"n": 0}
    real_fit = WeightedMiniBucket.fit

    def fit(self, stop=None, on_pass=None):
        calls["n"] += 1
        if calls["n"] == 2:  # the second rung: time runs out while it builds
            clock.t += 1.0
        return real_fit(self, stop=stop, on_pass=on_pass)
    monkeypatch.setattr(WeightedMiniBucket, "fit", fit)
    tr = run(m, "dis", time_limit=0.02, max_samples=10**9, rng=0)
    ladder = tr.meta["wmb_ladder"]
    assert ladder[0]["finished"] and not ladder[1]["finished"]
    assert tr.meta["log_Z_wmb"] == ladder[0]["log_Z_upper"]
    assert tr.final["n_expansions"] == 0 and np.isfinite(tr.final_log_Z_upper)


def test_wmb_fit_stop_raises_and_on_pass_sees_each_pass():
    m = grid(5, seed=4)
    seen = []
    w = WeightedMiniBucket(m, i_bound=2, n_iters=4, tol=0.0).fit(on_pass=lambda w: seen.append(w.bound_history_[-1]))
    assert seen == w.bound_history_ and len(seen) == w.n_iters_ + 1 >= 2
    n = {"k": 0}

    def stop():
        n["k"] += 1
        return n["k"] > 7
    with pytest.raises(BuildInterrupted):
        WeightedMiniBucket(m, i_bound=2, n_iters=4).fit(stop=stop)


def test_plan_is_fixed_by_the_work_and_the_budget():
    m = grid(7, seed=2)
    probe = WeightedMiniBucket(m).prepare()
    a = plan_wmb(probe, memory_mb=1024, time_limit=0.02)
    b = plan_wmb(WeightedMiniBucket(m).prepare(), memory_mb=1024, time_limit=0.02)
    assert a == b
    # no time limit (a fixed-work run): one WMB, the largest that fits, all passes
    one = plan_wmb(probe, memory_mb=1024, time_limit=float("inf"))
    assert len(one) == 1 and one[0].exact
    assert plan_wmb(probe, memory_mb=1024, time_limit=float("inf"), i_bound=3)[-1].n_iters == 10
    with pytest.raises(MemoryError, match="i_bound=6 needs"):
        plan_wmb(probe, memory_mb=1e-6, time_limit=10.0, i_bound=6)


def test_ladder_runs_bracket_ln_z_over_seeds(monkeypatch):
    """Statistical check of the mixed-proposal estimator: WMB-IS draws from the cheap rung
    (U_i = its bound) then DIS with the last rung, in one Eq. 13 accumulator. With
    delta = 0.1, at least 1 - 2 delta of the runs must bracket ln Z at every trace point
    (16 runs: expected failures <= 3.2; allow 5), and the deterministic bound never below."""
    m = grid(6, seed=7, scale=1.0)
    lz = log_partition(m)
    probe = WeightedMiniBucket(m).prepare()
    rungs = plan_wmb(probe, memory_mb=1024, time_limit=0.02, i_bound=3)
    assert len(rungs) == 2 and not rungs[-1].exact
    monkeypatch.setattr(time, "perf_counter", FakeClock(step=1e-9))
    from sampling.bounds import _ladder

    # many draws from the cheap rung, so that they are a large share of the estimator
    monkeypatch.setattr(_ladder, "SAMPLES_PER_MIB", 150.0 / rungs[-1].memory_mb)
    bad = 0
    for seed in range(16):
        tr = run(m, "dis", time_limit=0.02, i_bound=3, delta=0.1, max_samples=400, n_expansions=2,
                 rng=seed, record_every=1)
        assert tr.meta["wmb_ladder"][0]["i_bound"] < 3
        n_ladder = tr.n_samples[tr.n_expansions == 0].max()
        assert 100 <= n_ladder <= 300
        assert np.all(tr.log_Z_upper_det >= lz - 1e-9)
        bad += not (np.all(tr.log_Z_upper >= lz - 1e-9) and np.all(tr.log_Z_lower <= lz + 1e-9))
    assert bad <= 5


def test_long_budget_still_starts_with_a_cheap_rung(monkeypatch):
    """At a long budget the first-bound share is capped (FIRST_BOUND_MAX_S nominal seconds)
    and compared with the top WMB's whole build (first pass + passes), not one pass: at
    300 s pedigree37 used to start with its top WMB alone (i-bound 13, 10 passes) and got
    its first lower bound after 47.6 CPU-s."""
    import sampling.bounds.schedule as sch

    m = grid(7, seed=2)
    probe = WeightedMiniBucket(m).prepare()
    # make one pass of the top WMB take 1 nominal second (< 3% of 300 s = 9 s)
    monkeypatch.setattr(sch, "PASS_S_PER_VAR", 0.0)
    monkeypatch.setattr(sch, "WMB_MIB_PER_S", probe.memory_for(5))
    top = plan_wmb(probe, memory_mb=1024, time_limit=300.0, i_bound=5)[-1]
    assert sch.pass_seconds(top.memory_mb, m.n_vars) < 0.03 * 300.0
    assert top.work_s > sch.FIRST_BOUND_MAX_S
    rungs = plan_wmb(probe, memory_mb=1024, time_limit=300.0, i_bound=5)
    assert len(rungs) >= 2 and rungs[0].i_bound < 5
    assert sch.pass_seconds(rungs[0].memory_mb, m.n_vars) <= sch.FIRST_BOUND_MAX_S / 4 + 1e-12
    assert rungs[0].work_s <= sch.FIRST_BOUND_MAX_S + 1e-12
