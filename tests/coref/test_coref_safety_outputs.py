"""Issue 28: results never lost, files read back carry checksums, messages that say what happened.

Each test names the numbered item of the issue it covers; each fails on the code before
the change (checked against /work/main) and passes now.
"""
import json
import os
import signal
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from coref.cli import main
from coref.exceptions import SkippedRecordsWarning
from coref.io import write_mentions
from coref.jobs import run as pipeline
from coref.jobs.add import add
from coref.jobs.predict import predict
from coref.model import PairwiseModel, save_model
from coref.outputs import LOCK, MANIFEST, OutputError, read_manifest


@pytest.fixture(scope="module")
def data(mentions_factory):
    return mentions_factory(n_blocks=4, per=10, n_authors=3, seed=5)


@pytest.fixture(scope="module")
def model_dir(saved_model_factory):
    return saved_model_factory(n_blocks=5, per=10, seed=8)


@pytest.fixture(scope="module")
def files(data, tmp_path_factory):
    """The data as two Parquet files (old, new) in folders of their own, and a finished predict of the old."""
    root = tmp_path_factory.mktemp("in")
    (root / "old").mkdir()
    (root / "new").mkdir()
    old = write_mentions(data.iloc[:30], root / "old" / "m.parquet")
    new = write_mentions(data.iloc[30:], root / "new" / "m.parquet")
    return root, old, new


def _snapshot(d):
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _finished_predict(files, model_dir, out):
    _, old, _ = files
    assert main(["predict", "--data", str(old), "--model", str(model_dir), "--out", str(out), "--quiet"]) == 0
    return _snapshot(out)


# ---------------------------------------------------------------- item 1
def test_item1_failed_predict_keeps_the_finished_run_and_says_so(files, model_dir, tmp_path, capsys):
    out = tmp_path / "o"
    before = _finished_predict(files, model_dir, out)
    capsys.readouterr()
    assert main(["predict", "--data", str(tmp_path / "typo"), "--model", str(model_dir), "--out", str(out),
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert _snapshot(out) == before                    # main: the six files, manifest included, were gone
    assert "no such file or directory" in err and f"--out {out}: not touched" in err
    read_manifest(out)


def test_item1_failure_after_the_work_started_keeps_the_finished_run(files, model_dir, tmp_path, monkeypatch):
    import coref.jobs.predict as job

    out = tmp_path / "o"
    before = _finished_predict(files, model_dir, out)

    def boom(*a, **k):
        raise RuntimeError("disk full (simulated)")

    monkeypatch.setattr(job, "write_outputs", boom)
    with pytest.raises(RuntimeError, match="disk full") as info:
        predict(files[2], model=model_dir, out=out, progress=False)
    assert info.value.__notes__ == [f"--out {out}: the previous results there are kept, unchanged"]
    assert _snapshot(out) == before
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []


def test_item1_a_finished_run_is_replaced_by_a_finished_run_only(files, data, model_dir, tmp_path):
    out = tmp_path / "o"
    _finished_predict(files, model_dir, out)
    (out / "confidence.csv").write_text("not ours")            # a file the manifest does not list: kept
    m_old = read_manifest(out)
    m_new = predict(files[2], model=model_dir, out=out, progress=False)["manifest"]
    assert read_manifest(out) == m_new and m_new["input"]["path"] == str(files[2])
    assert m_new["files"]["clusters.csv"] != m_old["files"]["clusters.csv"]
    assert len(pd.read_csv(out / "clusters.csv")) == len(data) - 30
    assert (out / "confidence.csv").read_text() == "not ours"
    assert not [p for p in out.iterdir() if p.name.startswith(".")]   # no lock, no partial folder left


# ---------------------------------------------------------------- item 2
def test_item2_add_with_unfinished_clusters_keeps_the_finished_out(files, model_dir, tmp_path, capsys):
    out = tmp_path / "o"
    before = _finished_predict(files, model_dir, out)
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "clusters.csv").write_text("mention_id,block,cluster_id\n")
    capsys.readouterr()
    assert main(["add", "--clusters", str(bare), "--data", str(files[2]), "--model", str(model_dir),
                 "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert _snapshot(out) == before                    # main: the files of --out were deleted first
    assert "no manifest" in err and f"--out {out}: not touched" in err


# ---------------------------------------------------------------- item 3
def test_item3_bad_input_leaves_no_out_folder(files, model_dir, tmp_path, capsys):
    for argv in (["predict", "--data", str(tmp_path / "typo")],
                 ["add", "--clusters", str(tmp_path / "nothing"), "--data", str(files[2])],
                 ["run", "--data", str(tmp_path / "typo")],
                 ["predict", "--data", str(files[1]), "--model", str(tmp_path / "no_model")]):
        out = tmp_path / "fresh" / "o"
        if "--model" not in argv:
            argv = argv + ["--model", str(model_dir)] if argv[0] != "run" else argv
        assert main(argv + ["--out", str(out), "--quiet"]) == 2, argv
        assert not (tmp_path / "fresh").exists(), argv
    capsys.readouterr()


def test_item3_out_equal_to_or_inside_an_input_is_refused(files, model_dir, tmp_path, capsys):
    root, old, new = files
    ok = tmp_path / "P"
    _finished_predict(files, model_dir, ok)
    cases = [
        (["predict", "--data", str(old.parent), "--model", str(model_dir), "--out", str(old.parent)],
         "is the input --data"),
        (["predict", "--data", str(old.parent), "--model", str(model_dir), "--out", str(old.parent / "res")],
         "is inside the input --data"),
        (["predict", "--data", str(old), "--model", str(model_dir), "--out", str(model_dir / "o")],
         "is inside the input --model"),
        (["add", "--clusters", str(ok), "--data", str(new), "--model", str(model_dir), "--out", str(ok / "sub")],
         "is inside the input --clusters"),
        (["run", "--data", str(old.parent), "--out", str(old.parent)], "is the input --data"),
        (["fit", "--data", str(old.parent), "--model", str(old.parent / "model")], "is inside the input --data"),
    ]
    before = _snapshot(root)
    for argv, msg in cases:
        assert main(argv + (["--quiet"] if argv[0] != "fit" else [])) == 2, argv
        assert msg in capsys.readouterr().err, argv
    assert _snapshot(root) == before and not (model_dir / "o").exists() and not (ok / "sub").exists()


# ---------------------------------------------------------------- item 8
def _run(data, out, **kw):
    return pipeline.run(data, folds=2, sampler="racing", n_sweeps=3, out=out, progress=False, plots=False,
                        confidence=False, **kw)


def test_item8_edited_block_checkpoint_is_refused_by_name_and_recomputed(data, tmp_path):
    out = tmp_path / "r"
    first = _run(data, out)
    path = sorted(p for p in (out / ".checkpoint").rglob("*.npz") if p.name != "theta.npz")[0]
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["cluster_id"] = np.full_like(arrays["cluster_id"], arrays["cluster_id"][0])   # one cluster: valid
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    again = _run(data, out, resume=True)
    assert again.n_computed == 1 and again.n_reused == first.n_computed - 1
    assert len(again.refused) == 1 and again.refused[0].startswith(f"{path}: edited after it was written")
    pd.testing.assert_frame_equal(first.clusters, again.clusters)
    assert again.metrics["racing"]["b3_f1"] == first.metrics["racing"]["b3_f1"]


def test_item8_edited_block_checkpoint_is_named_on_the_console(data, tmp_path, capsys):
    d = tmp_path / "in"
    d.mkdir()
    write_mentions(data, d / "m.parquet")
    out = tmp_path / "r"
    argv = ["run", "--data", str(d / "m.parquet"), "--folds", "2", "--sampler", "racing", "--sweeps", "2",
            "--no-confidence", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    path = sorted(p for p in (out / ".checkpoint").rglob("*.npz") if p.name != "theta.npz")[0]
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["evals_history"] = arrays["evals_history"] + 1
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    capsys.readouterr()
    assert main(argv + ["--resume"]) == 0
    text = capsys.readouterr().out
    assert "refused 1 checkpoint(s) and recomputed them:" in text and f"  {path}: edited after it was written" in text


def test_item8_edited_manifest_and_encodings_are_refused_by_name(files, model_dir, tmp_path):
    from coref.outputs import ENCODINGS_FILE, read_encodings, write_encodings

    out = tmp_path / "o"
    _finished_predict(files, model_dir, out)
    m = json.loads((out / MANIFEST).read_text())
    enc_path = out / ENCODINGS_FILE
    sha = m["model"]["model_json_sha256"]
    ids = pd.read_csv(out / "clusters.csv", dtype=str)["mention_id"].to_numpy()
    enc = read_encodings(enc_path, model_sha256=sha, mention_ids=ids)
    # an encodings file whose arrays were changed but whose header was kept
    with np.load(enc_path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["array__year"] = arrays["array__year"] + 1          # structurally valid: only the checksum tells
    bad = tmp_path / "bad.npz"
    with open(bad, "wb") as fh:
        np.savez(fh, **arrays)
    from coref.outputs import EncodingsError

    with pytest.raises(EncodingsError, match=r"bad.npz: its content_sha256 does not match"):
        read_encodings(bad, model_sha256=sha, mention_ids=ids)
    write_encodings(tmp_path / "ok.npz", enc, model_sha256=sha)
    read_encodings(tmp_path / "ok.npz", model_sha256=sha, mention_ids=ids)
    # a manifest edited by hand (the seed changed)
    m["seed"] = 7
    (out / MANIFEST).write_text(json.dumps(m, indent=2))
    with pytest.raises(OutputError, match=r"manifest.json: its checksum \(manifest_sha256\) does not match"):
        read_manifest(out)


# ---------------------------------------------------------------- item 9
def _killed_command(out, command):
    """A process that takes the lock of ``out`` as ``command`` and is killed with SIGKILL."""
    code = (f"import os, signal; from coref.outputs import OutputDir; od = OutputDir({str(out)!r}, {command!r}); "
            "od.__enter__(); os.kill(os.getpid(), signal.SIGKILL)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    # cwd outside the checkout: `python -c` puts the cwd first on sys.path, and an unbuilt
    # checkout must not shadow the installed package
    p = subprocess.run([sys.executable, "-c", code], env=env, cwd=out.parent)
    assert p.returncode == -signal.SIGKILL
    return json.loads((out / LOCK).read_text())["pid"]


def test_item9_interrupted_and_running_are_told_apart(files, model_dir, tmp_path):
    killed = tmp_path / "K"
    pid = _killed_command(killed, "predict")
    with pytest.raises(OutputError, match=rf"the run that wrote it \(pid {pid}\) was interrupted: rerun coref "
                                          rf"predict, or remove {killed} to start over"):
        add(killed, files[2], model=model_dir, out=tmp_path / "Q", progress=False)
    assert not (tmp_path / "Q").exists()
    run_dir = tmp_path / "R"
    pid = _killed_command(run_dir, "run")
    with pytest.raises(OutputError, match=rf"\(pid {pid}\) was interrupted: rerun with --resume, or remove"):
        read_manifest(run_dir)
    # a live one: this process holds the lock
    from coref.outputs import OutputDir

    with OutputDir(tmp_path / "L", "predict"):
        with pytest.raises(OutputError, match=rf"a coref command \(pid {os.getpid()}\) is still writing it"):
            read_manifest(tmp_path / "L")
    # the killed predict's folder is taken over by the next predict (its partial folder removed)
    predict(files[1], model=model_dir, out=killed, progress=False)
    assert read_manifest(killed)["command"] == "predict"
    assert not [p.name for p in killed.iterdir() if p.name.startswith(".")]
    # a predict killed while re-running over that finished run left it whole: still readable
    before = _snapshot(killed)
    _killed_command(killed, "predict")
    assert read_manifest(killed)["command"] == "predict" and _snapshot(killed).items() >= before.items()


# ---------------------------------------------------------------- item 10
def test_item10_add_with_another_model_is_an_error_unless_allowed(files, data, model_dir, mentions_factory,
                                                                  tmp_path, capsys):
    other = tmp_path / "other_model"
    save_model(PairwiseModel(bias_shift=0.0).fit(mentions_factory(n_blocks=5, per=10, n_authors=3, seed=3)), other)
    base = tmp_path / "P"
    _finished_predict(files, model_dir, base)
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # no RuntimeWarning as the only hint
        with pytest.raises(ValueError, match=rf"made with the model '{model_dir}'.*not with '{other}'"):
            add(base, files[2], model=other, out=tmp_path / "Q", progress=False)
    assert not (tmp_path / "Q").exists()
    argv = ["add", "--clusters", str(base), "--data", str(files[2]), "--model", str(other), "--out",
            str(tmp_path / "Q"), "--quiet"]
    assert main(argv) == 2 and "--allow-model-change" in capsys.readouterr().err
    assert main(argv + ["--allow-model-change"]) == 0
    m = read_manifest(tmp_path / "Q")
    assert m["model_change"]["from"]["path"] == str(model_dir) and m["model_change"]["to"]["path"] == str(other)
    assert m["model"]["path"] == str(other)
    assert len(pd.read_csv(tmp_path / "Q" / "clusters.csv")) == len(data)
    # the same model: no change recorded
    add(base, files[2], model=model_dir, out=tmp_path / "S", progress=False)
    assert "model_change" not in read_manifest(tmp_path / "S")


# ---------------------------------------------------------------- item 7 (warning format)
def test_item7_cli_warnings_are_one_line_without_source(capsys):
    from coref.cli.common import console_warnings

    with console_warnings("predict"):
        warnings.warn("data/x.csv:12: bad year\nsecond line", UserWarning)
        warnings.warn("read 3 mentions from 2 file(s); skipped 1 record(s); records skipped: a.xml:4: broken",
                      SkippedRecordsWarning)
    err = capsys.readouterr().err.splitlines()
    assert err == ["coref predict: warning: data/x.csv:12: bad year; second line",
                   "coref predict: warning: read 3 mentions from 2 file(s); skipped 1 record(s) "
                   "(files and details below and in loader.log)"]


def test_item7_run_reports_the_loader_repairs(aminer_dir, tmp_path, capsys):
    d = tmp_path / "in"
    d.mkdir()
    for name in ("Fei_Su.xml", "Bin_Yu.xml"):
        text = (aminer_dir / name).read_text(encoding="utf-8").replace("<title>", "<title>\f", 1)
        (d / name).write_text(text, encoding="utf-8")
    out = tmp_path / "r"
    assert main(["run", "--data", str(d), "--folds", "2", "--sampler", "racing", "--sweeps", "1",
                 "--no-confidence", "--out", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    metrics = json.loads((out / "metrics.json").read_text())
    n = metrics["data"]["n_repairs"]
    assert n >= 2
    assert f"{n} repair(s) of the input in {d / 'Bin_Yu.xml'}, {d / 'Fei_Su.xml'} (details: loader.log)" in text
    md = (out / "report.md").read_text()
    assert f"0 records skipped by the loader, {n} repairs, 0 files skipped (details: `loader.log`)." in md
    assert "illegal XML control character" in (out / "loader.log").read_text()
    assert "loader.log" in read_manifest(out)["files"]
