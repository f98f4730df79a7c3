"""Every bad input of issue 15 item 3: a clear error naming the file and the field, or a
correct result. Each test here failed on the code before the fix (see the comments)."""
import argparse
import json
import math
import tracemalloc

import numpy as np
import pytest

from sampling.bounds import cli as bounds_cli
from sampling.bounds.dis import run
from sampling.bounds.exact import log_partition
from sampling.bounds.model import Factor, GraphicalModel
from bounds_oracle import chain_model
from sampling.bounds.uai import read_uai, write_uai
from sampling.exceptions import UAIFormatError


KW = dict(time_limit=None, i_bound=2, rng=5, record_every=3, n_expansions=2)

pytestmark = pytest.mark.filterwarnings("ignore::sampling.exceptions.ConvergenceWarning")


def cli(argv):
    parser = argparse.ArgumentParser(prog="sampling bounds")
    bounds_cli.add_arguments(parser)
    return bounds_cli.main(parser.parse_args(argv))


# ----------------------------------------------------------------------------- model files
def test_cardinalities_whose_product_overflows_int64(tmp_path):
    # before: the int64 product wrapped to 0, a 0-entry table was accepted and reshaping it
    # raised "cannot reshape array of size 0" (a traceback)
    p = tmp_path / "ovf.uai"
    p.write_text("MARKOV\n2\n4294967296 4294967296\n1\n2 0 1\n0\n")
    with pytest.raises(UAIFormatError, match=r"ovf\.uai:6: factor 0 over variables \(0, 1\) must have "
                                             r"18446744073709551616 entries"):
        read_uai(p)


def test_model_without_variables_is_exact_at_once():
    # before: sampled for the whole budget (10^7 draws of a constant)
    m = GraphicalModel([], [Factor((), 2.5), Factor((), -1.0)])
    for method in ("dis", "wmb-is", "two-stage", "aobfs", "wmb"):
        tr = run(m, method, time_limit=30.0, rng=0)
        f = tr.final
        assert f["log_Z_lower"] == f["log_Z_upper"] == pytest.approx(1.5, abs=1e-12), method
        assert f["n_samples"] == 0 and tr.meta["exact"] is True
        assert tr.time_s[-1] < 5.0


def test_exact_wmb_stops_sampling():
    # a chain: i-bound 1 is its induced width, so the WMB is ln Z itself
    rng = np.random.default_rng(1)
    m = GraphicalModel([3] * 6, [Factor((i, i + 1), rng.normal(size=(3, 3))) for i in range(5)])
    tr = run(m, "dis", time_limit=30.0, i_bound=1, rng=0)
    assert tr.final["n_samples"] == 0
    assert tr.final_log_Z_upper == tr.final_log_Z_lower == pytest.approx(log_partition(m), abs=1e-10)


@pytest.mark.parametrize("bad", [0, -5])
def test_max_samples_zero_and_negative_are_refused_alike(bad, tmp_path, capsys):
    # before: 0 was accepted (a run without a sample) while -5 was refused
    with pytest.raises(ValueError, match=f"max_samples parameter must be >= 1; got {bad}"):
        run(chain_model(), "dis", time_limit=1.0, max_samples=bad)
    p = tmp_path / "m.uai"
    write_uai(chain_model(n=6), p)
    with pytest.raises(SystemExit) as exc:
        cli([str(p), "--max-samples", str(bad)])
    assert exc.value.code == 2
    assert f"must be >= 1; got {bad}" in capsys.readouterr().err


# ----------------------------------------------------------------------------- checkpoints
@pytest.fixture()
def saved(tmp_path):
    """A valid checkpoint of a 60-sample DIS run and a writer of tampered copies."""
    ck = tmp_path / "run.ckpt.json"
    run(chain_model(), "dis", **KW, max_samples=60, checkpoint=ck)
    state = json.loads(ck.read_text())

    def write(change):
        s = json.loads(json.dumps(state))
        change(s)
        ck.write_text(json.dumps(s, allow_nan=True))
        return ck
    return state, write


def _set(*path):
    *keys, value = path

    def change(s):
        d = s
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = value
    return change


def _drop(*keys):
    def change(s):
        d = s
        for k in keys[:-1]:
            d = d[k]
        del d[keys[-1]]
    return change


@pytest.mark.parametrize("change,field", [
    # before: elapsed NaN made the time check always false (a time-limited run never ended)
    (_set("elapsed_s", math.nan), "elapsed_s"),
    (_set("elapsed_s", -1.0), "elapsed_s"),
    # before: a sample count of 1e9 printed a lower bound above the upper bound, rc 0
    (_set("accumulator", "n", 10**9), "accumulator"),
    (_set("accumulator", "n", "many"), "accumulator.n"),
    (_set("accumulator", "_mean", 2.0), "accumulator._mean"),
    (_set("accumulator", "_m2", -1.0), "accumulator._m2"),
    (_set("accumulator", "_log_sum_inv_u", math.nan), "accumulator._log_sum_inv_u"),
    (_set("accumulator", "delta", 0.5), "accumulator.delta"),
    # before: KeyError / TypeError / OverflowError tracebacks
    (_drop("loop"), "loop"),
    (_drop("loop", "rounds_done"), "loop.rounds_done"),
    (_set("loop", "stage", "dance"), "loop.stage"),
    (_set("loop", "u_min", 1e9), "loop.u_min"),
    (_set("n_expansions", -1), "n_expansions"),
    (_set("n_expansions", 1e300), "n_expansions"),
    (_set("i_bound", 1.5), "i_bound"),
    (_set("wmb_passes", True), "wmb_passes"),
    (_set("elim_order", [0, 0, 1]), "elim_order"),
    (_set("rec_iter", 2**70), "rec_iter"),
    (_set("rng", {}), "rng"),
    (_set("rng", "state", {"state": "x", "inc": 1}), "rng"),
    (_set("rows", "none"), "rows"),
    (_set("rows", 0, "time_s", "abc"), r"rows\[0\]\.time_s"),
    (_set("rows", 0, "n_samples", 10**6), r"rows\[0\]\.n_samples"),
    (_set("meta", "t_wmb_s", math.inf), "meta.t_wmb_s"),
    (_set("seed", "five"), "seed"),
])
def test_malformed_checkpoint_field_is_named(saved, change, field):
    _, write = saved
    ck = write(change)
    with pytest.raises(ValueError, match=rf"run\.ckpt\.json: .*{field}"):
        run(chain_model(), "dis", **dict(KW, rng=None), max_samples=90, checkpoint=ck)


def test_lower_above_upper_in_a_saved_row_is_refused(saved):
    state, write = saved
    row = state["rows"][-1]
    ck = write(_set("rows", len(state["rows"]) - 1, "log_Z_lower", row["log_Z_upper"] + 1.0))
    with pytest.raises(ValueError, match="lower bound .* above its upper bound"):
        run(chain_model(), "dis", **KW, max_samples=90, checkpoint=ck)


def test_resume_with_another_seed_is_refused(saved, tmp_path):
    # before: the new seed was silently ignored
    ck = tmp_path / "run.ckpt.json"
    with pytest.raises(ValueError, match=r"started with seed=5; this run has rng=6"):
        run(chain_model(), "dis", **dict(KW, rng=6), max_samples=90, checkpoint=ck)
    a = run(chain_model(), "dis", **dict(KW, rng=None), max_samples=90, checkpoint=ck)  # the saved stream
    b = run(chain_model(), "dis", **KW, max_samples=90)
    assert a.final["n_samples"] == b.final["n_samples"] == 90
    assert a.final_log_Z_upper == pytest.approx(b.final_log_Z_upper, rel=1e-12)


def test_cli_resume_without_seed_keeps_the_saved_stream(tmp_path, capsys):
    p = tmp_path / "m.uai"
    write_uai(chain_model(n=10), p)
    ck = tmp_path / "c.json"
    base = [str(p), "--method", "wmb-is", "--i-bound", "1", "--time", "30", "--checkpoint", str(ck), "--quiet"]
    assert cli(base + ["--max-samples", "50", "--seed", "7"]) == 0
    assert cli(base + ["--max-samples", "80"]) == 0  # no --seed: goes on
    assert cli(base + ["--max-samples", "90", "--seed", "8"]) == 2
    assert "started with seed=7; this run has rng=8" in capsys.readouterr().err


# ----------------------------------------------------------------------------- outputs
@pytest.mark.parametrize("flag,what", [("--out", "trace"), ("--plot", "plot"), ("--checkpoint", "checkpoint")])
def test_unwritable_output_is_refused_before_the_run(tmp_path, capsys, flag, what):
    # before: the run went to its end, then a traceback lost the result
    p = tmp_path / "m.uai"
    write_uai(chain_model(n=10), p)
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    code = cli([str(p), "--time", "30", "--max-samples", "1000000000",
                flag, str(blocker / "x.out")])
    cap = capsys.readouterr()
    assert code == 2
    assert f"cannot write the {what}" in cap.err and "a_file" in cap.err
    assert "ln Z in" not in cap.out and "building" not in cap.err  # nothing ran


def test_unwritable_checkpoint_refused_by_run(tmp_path):
    with pytest.raises(ValueError, match=r"cannot write the checkpoint to .*no_such_dir"):
        run(chain_model(), "dis", time_limit=30.0, max_samples=10**9, checkpoint=tmp_path / "no_such_dir" / "c.json")
    with pytest.raises(ValueError, match="it is a directory"):
        run(chain_model(), "dis", time_limit=30.0, max_samples=10**9, checkpoint=tmp_path)


def test_result_printed_before_output_files(tmp_path, capsys, monkeypatch):
    # an output that fails after the run (disk full, directory removed) no longer loses the bounds
    from sampling.bounds.trace import BoundTrace

    p = tmp_path / "m.uai"
    write_uai(chain_model(n=10), p)

    def fail(self, path):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(BoundTrace, "to_csv", fail)
    code = cli([str(p), "--i-bound", "1", "--max-samples", "200", "--out", str(tmp_path / "t.csv"), "--quiet"])
    cap = capsys.readouterr()
    assert code == 4
    assert "dis: ln Z in [" in cap.out and "No space left on device" in cap.err


# ----------------------------------------------------------------------------- memory budget
def _wide_separator_model(n_leaves=8, card=24):
    """Leaves v_j (binary) each tied to the same 3 separator variables: every leaf's
    message (card^3 entries) waits until the separator is eliminated."""
    s = [0, 1, 2]
    cards = [card] * 3 + [2] * n_leaves
    rng = np.random.default_rng(0)
    facs = [Factor((3 + j, 0, 1, 2), 0.1 * rng.normal(size=(2, card, card, card))) for j in range(n_leaves)]
    facs += [Factor((a, b), 0.1 * rng.normal(size=(card, card))) for a, b in ((0, 1), (1, 2), (0, 2))]
    order = list(range(3, 3 + n_leaves)) + s
    return GraphicalModel(cards, facs), order


def test_exact_memory_budget_covers_all_live_tables():
    # before: only each table was checked; 8 waiting messages of 0.105 MiB each and a
    # 0.21 MiB bucket table passed a 0.5 MiB budget and held about 1.1 MiB at once
    from sampling.bounds.exact import elimination_peak_entries

    m, order = _wide_separator_model()
    peak, at = elimination_peak_entries(m.squeeze(), np.asarray(order))
    assert peak * 8 / 2**20 > 0.5
    with pytest.raises(MemoryError, match="alive at once"):
        log_partition(m, elim_order=order, memory_mb=0.5)
    # within a budget that fits the computed peak, tracemalloc sees at most that much
    budget = peak * 8 / 2**20 * 1.01
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        lz = log_partition(m, elim_order=order, memory_mb=budget)
        used = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert used <= budget * 2**20 + 64 * 1024  # small Python objects aside
    assert math.isfinite(lz)
