"""`sampling bounds` command line."""
import argparse
import itertools

import numpy as np
import pytest

from sampling.bounds.model import Factor, GraphicalModel
from sampling.bounds.trace import BoundTrace
from sampling.bounds.uai import write_uai
from sampling.bounds import cli as bounds_cli


def main(argv):
    """Run `sampling bounds ARGS` without the router (other sub-commands may be in flux)."""
    assert argv[0] == "bounds"
    parser = argparse.ArgumentParser(prog="sampling bounds")
    bounds_cli.add_arguments(parser)
    return bounds_cli.main(parser.parse_args(argv[1:]))


@pytest.fixture()
def tiny_uai(tmp_path):
    rng = np.random.default_rng(0)
    facs = [Factor((i,), rng.normal(size=2)) for i in range(5)]
    facs += [Factor((i, i + 1), rng.normal(size=(2, 2))) for i in range(4)]
    facs += [Factor((0, 4), rng.normal(size=(2, 2))), Factor((1, 3), rng.normal(size=(2, 2)))]  # width 2:
    # i-bound 1 is not exact, so the sampling methods sample
    m = GraphicalModel([2] * 5, facs)
    p = tmp_path / "tiny.uai"
    write_uai(m, p)
    xs = np.array(list(itertools.product(range(2), repeat=5)))
    return p, float(np.logaddexp.reduce(m.log_value(xs)))


@pytest.mark.parametrize("method", ["dis", "wmb-is", "exact", "aobfs"])
def test_cli_writes_trace_and_final_line(tiny_uai, tmp_path, capsys, method):
    path, lz = tiny_uai
    out, png = tmp_path / "trace.csv", tmp_path / "trace.png"
    code = main(["bounds", str(path), "--method", method, "--time", "0.5", "--i-bound", "1",
                 "--out", str(out), "--plot", str(png), "--max-samples", "200"])
    assert code == 0
    cap = capsys.readouterr()
    last = cap.out.strip().splitlines()[-1]
    assert last.startswith(f"{method}: ln Z in [")
    assert "sampling bounds:" in cap.err
    tr = BoundTrace.from_csv(out)
    assert tr.method == method
    assert np.all(tr.log_Z_upper >= lz - 1e-8) and np.all(tr.log_Z_lower <= lz + 1e-8)
    assert png.exists()


def test_cli_bad_file(tmp_path, capsys):
    bad = tmp_path / "bad.uai"
    bad.write_text("MARKOV\n2\n2 x\n")
    assert main(["bounds", str(bad)]) == 2
    assert "cannot read the model" in capsys.readouterr().err
    assert main(["bounds", str(tmp_path / "missing.uai")]) == 2


def test_cli_bad_delta(tiny_uai, capsys):
    path, _ = tiny_uai
    assert main(["bounds", str(path), "--delta", "0.9", "--quiet"]) == 2
    assert "delta" in capsys.readouterr().err


def test_cli_with_evidence_brackets_exact(tmp_path, capsys):
    from pathlib import Path

    from sampling.bounds.exact import log_partition
    from sampling.bounds.uai import read_uai

    data = Path(__file__).resolve().parents[1] / "data"
    model_path, evid_path = data / "bounds_tiny.uai", data / "bounds_tiny.uai.evid"
    lz = log_partition(read_uai(model_path, evidence=evid_path))
    out = tmp_path / "t.csv"
    assert main(["bounds", str(model_path), "--evid", str(evid_path), "--method", "dis", "--time", "0.3",
                 "--max-samples", "50", "--quiet", "--out", str(out)]) == 0
    tr = BoundTrace.from_csv(out)
    assert np.all(tr.log_Z_upper >= lz - 1e-8) and np.all(tr.log_Z_lower <= lz + 1e-8)
    assert "--evid" not in capsys.readouterr().err


def test_cli_checkpoint_resumes_and_refuses_another_run(tiny_uai, tmp_path, capsys):
    path, lz = tiny_uai
    ck = tmp_path / "run.json"
    base = ["bounds", str(path), "--method", "wmb-is", "--i-bound", "1", "--time", "30",
            "--checkpoint", str(ck)]
    assert main(base + ["--max-samples", "100"]) == 0
    assert "samples 100," in capsys.readouterr().out
    assert main(base + ["--max-samples", "300"]) == 0
    cap = capsys.readouterr()
    assert f"resuming from {ck}" in cap.err and "samples 300," in cap.out
    assert main(base + ["--max-samples", "400", "--delta", "0.05"]) == 2
    assert "delta=0.025, this run delta=0.05" in capsys.readouterr().err


def test_cli_plot_title_is_the_file_name(tiny_uai, tmp_path, monkeypatch):
    from sampling.bounds import trace as trace_mod

    seen = {}

    def fake_plot(traces, path, *, log_Z=None, title=None, ax=None):
        seen["title"] = title
    monkeypatch.setattr(trace_mod, "plot_traces", fake_plot)
    path, _ = tiny_uai
    assert main(["bounds", str(path), "--i-bound", "1", "--max-samples", "50", "--quiet",
                 "--plot", str(tmp_path / "p.png")]) == 0
    assert seen["title"] == "tiny.uai"  # before: the whole path given on the command line


def test_cli_past_memory_option(tiny_uai, tmp_path, capsys):
    path, lz = tiny_uai
    out = tmp_path / "trace.csv"
    code = main(["bounds", str(path), "--time", "0.5", "--i-bound", "1", "--past-memory", "search",
                 "--out", str(out), "--max-samples", "200", "--seed", "1"])
    assert code == 0
    tr = BoundTrace.from_csv(out)
    assert np.all(tr.log_Z_upper >= lz - 1e-8) and np.all(tr.log_Z_lower <= lz + 1e-8)
    with pytest.raises(SystemExit):
        main(["bounds", str(path), "--past-memory", "drop"])
    assert "--past-memory" in capsys.readouterr().err


def test_cli_accepts_the_name_of_a_shipped_model(tmp_path, monkeypatch, capsys):
    """`sampling bounds pedigree1` reads the shipped file from any directory, with the same
    result as its path (exact elimination: the result cannot depend on the clock, as the WMB
    passes of a timed run do on a loaded machine)."""
    from sampling import datasets

    monkeypatch.chdir(tmp_path)  # not the checkout: the name must not depend on the cwd
    args = ["--method", "exact", "--time", "5", "--quiet"]
    assert main(["bounds", "pedigree1", *args]) == 0
    by_name = capsys.readouterr().out.strip().splitlines()[-1]
    assert main(["bounds", str(datasets.uai_path("pedigree1")), *args]) == 0
    by_path = capsys.readouterr().out.strip().splitlines()[-1]
    assert by_name.split(", samples")[0] == by_path.split(", samples")[0]
    assert "ln Z in [" in by_name


def test_cli_unknown_name_lists_the_shipped_models(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["bounds", "pedigree999", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "'pedigree999' is neither a file nor the name of a shipped UAI model" in err
    assert "pedigree1" in err and "BN_0" in err
