"""Checkpoint / resume of ``sampling.bounds.run``: a run stopped and resumed ends where an
uninterrupted run ends (deterministic budgets), and a checkpoint of another run is refused."""
import json

import numpy as np
import pytest

from sampling.bounds.checkpoint import FORMAT, model_fingerprint
from sampling.bounds.dis import run
from sampling.bounds.importance import ImportanceAccumulator
from sampling.bounds.model import Factor, GraphicalModel
from bounds_oracle import chain_model

pytestmark = pytest.mark.filterwarnings("ignore::sampling.exceptions.ConvergenceWarning")


KW = dict(time_limit=None, i_bound=2, rng=5, record_every=3, n_expansions=2)
BUDGETS = {  # method: (budget name, first run, whole run)
    "dis": ("max_samples", 150, 400),
    "wmb-is": ("max_samples", 150, 400),
    "two-stage": ("max_samples", 150, 400),
    "aobfs": ("max_expansions", 20, 60),
}


def _final(tr):
    f = tr.final
    return [f[k] for k in ("log_Z_upper", "log_Z_lower", "log_Z_hat", "log_Z_upper_det")], \
        (int(f["n_samples"]), int(f["n_expansions"]))


@pytest.mark.parametrize("method", sorted(BUDGETS))
def test_resumed_run_ends_where_the_uninterrupted_run_ends(tmp_path, method):
    m = chain_model()
    name, first, whole = BUDGETS[method]
    extra = {"max_expansions": 15} if method == "two-stage" else {}
    ck = tmp_path / "run.ckpt.json"
    a = run(m, method, **KW, **extra, **{name: first}, checkpoint=ck)
    assert ck.exists() and json.loads(ck.read_text())["format"] == FORMAT
    b = run(m, method, **KW, **extra, **{name: whole}, checkpoint=ck)
    c = run(m, method, **KW, **extra, **{name: whole})
    vb, nb = _final(b)
    vc, nc = _final(c)
    assert nb == nc
    np.testing.assert_allclose(vb, vc, rtol=1e-9, atol=1e-12)
    assert _final(a)[1] != nc  # the first run really stopped short
    assert b.meta["n_resumes"] == 1 and "n_resumes" not in c.meta
    # the resumed trace starts with the first run's rows, and its clock goes on from there
    da, db = a.to_frame(), b.to_frame()
    assert len(db) > len(da)
    np.testing.assert_array_equal(db["log_Z_upper"].to_numpy()[:len(da)], da["log_Z_upper"].to_numpy())
    assert np.all(np.diff(db["time_s"].to_numpy()) >= 0)


def test_interrupted_run_resumes_from_the_interrupt(tmp_path):
    m = chain_model()
    ck = tmp_path / "run.ckpt.json"
    calls = []

    def stop_at_fourth_row(row):
        if row["n_expansions"] == 0:  # still building the WMB: no checkpoint before the method runs
            return
        calls.append(row["n_samples"])
        if len(calls) == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(m, "dis", **KW, max_samples=400, checkpoint=ck, progress=stop_at_fourth_row)
    saved = json.loads(ck.read_text())
    assert saved["accumulator"]["n"] == calls[-1] > 0
    b = run(m, "dis", **KW, max_samples=400, checkpoint=ck)
    c = run(m, "dis", **KW, max_samples=400)
    assert _final(b)[1] == _final(c)[1]
    np.testing.assert_allclose(_final(b)[0], _final(c)[0], rtol=1e-9)


def test_accumulator_state_round_trip():
    acc = ImportanceAccumulator(0.05)
    rng = np.random.default_rng(0)
    acc.add(np.log(rng.random(50)) - 3.0, -2.0)
    acc.add([-np.inf, -np.inf], -2.5)
    back = ImportanceAccumulator.from_state(json.loads(json.dumps(acc.state_dict())))
    assert back.bounds(-1.0) == acc.bounds(-1.0) and back.log_Z_hat == acc.log_Z_hat
    assert back.n == acc.n == 52
    with pytest.raises(ValueError, match="lacks"):
        ImportanceAccumulator.from_state({"delta": 0.1})


@pytest.mark.parametrize("change,match", [
    (dict(method="wmb-is"), "of method 'dis', not 'wmb-is'"),
    (dict(delta=0.05), "delta=0.025, this run delta=0.05"),
    (dict(n_expansions=3), "n_expansions=2, this run n_expansions=3"),
    (dict(i_bound=1), "i_bound=2, this run i_bound=1"),
    (dict(model_seed=4), "another model"),
])
def test_checkpoint_of_another_run_is_refused(tmp_path, change, match):
    ck = tmp_path / "run.ckpt.json"
    run(chain_model(), "dis", **KW, max_samples=50, checkpoint=ck)
    kw = dict(KW, max_samples=80)
    method = change.pop("method", "dis")
    model = chain_model(seed=change.pop("model_seed", 3))
    kw.update(change)
    with pytest.raises(ValueError, match=match):
        run(model, method, **kw, checkpoint=ck)


def test_unreadable_or_foreign_checkpoint_names_the_file(tmp_path):
    m = chain_model()
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "sampling.bounds.checkpoint/1", ')
    with pytest.raises(ValueError, match=r"bad\.json: not a readable checkpoint \(line 1"):
        run(m, "dis", **KW, max_samples=20, checkpoint=bad)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": "something else"}))
    with pytest.raises(ValueError, match=r"other\.json: not a checkpoint of format"):
        run(m, "dis", **KW, max_samples=20, checkpoint=other)
    with pytest.raises(ValueError, match="checkpoint_every"):
        run(m, "dis", **KW, max_samples=20, checkpoint=other, checkpoint_every=0)


def test_tampered_checkpoint_bounds_are_caught(tmp_path):
    """The rebuilt WMB and search tree are checked against the saved bounds."""
    m = chain_model()
    ck = tmp_path / "run.ckpt.json"
    run(m, "dis", **KW, max_samples=60, checkpoint=ck)
    state = json.loads(ck.read_text())
    assert state["n_expansions"] > 0
    state["log_Z_search"] += 0.5
    ck.write_text(json.dumps(state))
    with pytest.raises(ValueError, match="rebuilt search bound U_S"):
        run(m, "dis", **KW, max_samples=90, checkpoint=ck)
    state["log_Z_search"] -= 0.5
    state["meta"]["log_Z_wmb"] += 0.5
    ck.write_text(json.dumps(state))
    with pytest.raises(ValueError, match="rebuilt weighted mini-bucket bound"):
        run(m, "dis", **KW, max_samples=90, checkpoint=ck)


def test_fingerprint_sees_a_changed_table():
    m = chain_model()
    t = m.factors[-1].log_values.copy()
    t[0, 0] += 1e-12
    m2 = GraphicalModel(m.cards, list(m.factors[:-1]) + [Factor(m.factors[-1].scope, t)])
    assert model_fingerprint(chain_model()) == model_fingerprint(m) != model_fingerprint(m2)


def test_table1_benchmark_resume_keeps_finished_runs(tmp_path):
    """``bench_bounds_table1.py --resume`` runs only the missing instance / setting pairs."""
    import importlib.util
    from pathlib import Path

    import pandas as pd

    from sampling.bounds.uai import write_uai

    spec = importlib.util.spec_from_file_location(
        "bench_bounds_table1", Path(__file__).resolve().parents[2] / "benchmarks" / "scripts" / "bench_bounds_table1.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    write_uai(chain_model(n=10), data / "tiny.uai")
    common = ["--instances", "tiny", "--data", str(data), "--time", "0.2", "--i-bound", "1",
              "--floor-samples", "50", "--out", str(out)]
    assert bench.main(common + ["--settings", "WMB-IS;DIS(1,1)"]) == 0
    first = pd.read_csv(out / "runs.csv").set_index("setting")
    assert bench.main(common + ["--settings", "WMB-IS;DIS(1,1);DIS(1,10)", "--resume"]) == 0
    second = pd.read_csv(out / "runs.csv").set_index("setting")
    assert list(second.index) == ["WMB-IS", "DIS(1,1)", "DIS(1,10)"]
    for s in ("WMB-IS", "DIS(1,1)"):  # kept, not re-run (a re-run would draw another count)
        assert second.loc[s, "n_samples"] == first.loc[s, "n_samples"]
        assert second.loc[s, "final_upper"] == first.loc[s, "final_upper"]
    assert second.loc["DIS(1,10)", "n_samples"] > 0


def test_resume_with_the_python_search_tree(tmp_path):
    m = chain_model()
    ck = tmp_path / "run.ckpt.json"
    kw = dict(KW, backend="python")
    run(m, "dis", **kw, max_samples=60, checkpoint=ck)
    b = run(m, "dis", **kw, max_samples=150, checkpoint=ck)
    c = run(m, "dis", **kw, max_samples=150)
    assert _final(b)[1] == _final(c)[1] and b.meta["n_resumes"] == 1
    np.testing.assert_allclose(_final(b)[0], _final(c)[0], rtol=1e-9)


def _assert_same_end(a, b, msg=""):
    """The same final bounds, estimate and counts, bit for bit (NaN equal to NaN)."""
    (va, na), (vb, nb) = _final(a), _final(b)
    assert na == nb, msg
    np.testing.assert_array_equal(va, vb, err_msg=msg)


def _every_written_checkpoint(monkeypatch, m, method, **kw):
    """Run to the end writing a checkpoint at every step; returns (trace, the text of each write).

    Each text is what the file holds from that write to the next: what a run killed (SIGKILL)
    at any moment of that span leaves behind."""
    import sampling.bounds.dis as dis_mod

    written = []
    save = dis_mod.save_checkpoint

    def keep(path, state):
        save(path, state)
        written.append(open(path, encoding="utf-8").read())

    monkeypatch.setattr(dis_mod, "save_checkpoint", keep)
    tr = run(m, method, **kw)
    monkeypatch.setattr(dis_mod, "save_checkpoint", save)
    return tr, written


@pytest.mark.parametrize("method,extra", [
    ("dis", dict(max_samples=300)),
    ("two-stage", dict(max_samples=300, max_expansions=15)),
    ("wmb-is", dict(max_samples=300)),
    ("aobfs", dict(max_expansions=40)),
    ("dis", dict(max_samples=300, past_memory="search", max_nodes=60)),
])
def test_a_run_killed_at_any_moment_resumes_to_the_same_end(tmp_path, monkeypatch, method, extra):
    """Every version of the file a run writes resumes, and (a work-limited run) ends bit for
    bit where the uninterrupted run ends."""
    m = chain_model()
    kw = dict(KW, record_every=4, checkpoint_every=1e-9, **extra)  # steps without a trace row
    ck = tmp_path / "run.ckpt.json"
    whole, written = _every_written_checkpoint(monkeypatch, m, method, **kw, checkpoint=ck)
    assert len(written) >= 8
    plain = run(m, method, **kw)
    _assert_same_end(whole, plain)
    for i in sorted(set(np.linspace(0, len(written) - 1, 8).round().astype(int))):  # 8 spread over the run
        ck.write_text(written[i])
        resumed = run(m, method, **dict(kw, rng=None), checkpoint=ck)
        _assert_same_end(resumed, plain, f"resumed from write {i} of {len(written)}")


def test_interrupt_in_the_middle_of_a_step_saves_the_state_before_it(tmp_path, monkeypatch):
    """A KeyboardInterrupt after a step has advanced the random stream and the search tree but
    before its samples reach the estimator: the checkpoint holds the state before the step
    (before the fix it mixed both, and the resumed run drew other samples)."""
    import sampling.bounds._loops as loops

    m = chain_model()
    kw = dict(KW, max_samples=400)
    rounds = loops.dis_rounds
    calls = [0]

    def interrupted(*args, **kwargs):
        out = rounds(*args, **kwargs)
        calls[0] += 1
        if calls[0] == 6:
            raise KeyboardInterrupt
        return out

    ck = tmp_path / "run.ckpt.json"
    monkeypatch.setattr(loops, "dis_rounds", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(m, "dis", **kw, checkpoint=ck)
    monkeypatch.setattr(loops, "dis_rounds", rounds)
    saved = json.loads(ck.read_text())
    assert 0 < saved["accumulator"]["n"] < 400
    resumed = run(m, "dis", **dict(kw, rng=None), checkpoint=ck)
    _assert_same_end(resumed, run(m, "dis", **kw))


def test_u_min_is_checked_exactly_against_the_search_bound(tmp_path):
    """``loop.u_min`` is a running min over a set holding ``log_Z_search``: equal passes, one
    ulp above is refused; the sum of 1/U_i gets the rounding slack of a sum of n terms."""
    import math

    m = chain_model()
    ck = tmp_path / "run.ckpt.json"
    run(m, "dis", **KW, max_samples=60, checkpoint=ck)
    state = json.loads(ck.read_text())
    assert state["loop"]["u_min"] <= state["log_Z_search"]
    state["loop"]["u_min"] = state["log_Z_search"]
    ck.write_text(json.dumps(state))
    run(m, "dis", **dict(KW, rng=None), max_samples=60, checkpoint=ck)  # accepted
    state["loop"]["u_min"] = math.nextafter(state["log_Z_search"], math.inf)
    ck.write_text(json.dumps(state))
    with pytest.raises(ValueError, match=r"'loop\.u_min' .* above the search bound"):
        run(m, "dis", **dict(KW, rng=None), max_samples=60, checkpoint=ck)
