"""Outputs you can trust: lock, manifest written last, old files removed, validated checkpoints."""
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from coref.jobs import run as pipeline
from coref.jobs import scoring
from coref.outputs import LOCK, MANIFEST, OutputDir, OutputError, read_manifest
from coref.outputs import encodings as encodings_file
from coref.settings import make_settings


class Planted:
    """Unpickling this writes a marker file: proof that code read back from disk ran."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.fixture(scope="module")
def data(mentions_factory):
    return mentions_factory(n_blocks=4, per=8, seed=2)


def _run(data, out, **kw):
    return pipeline.run(data, folds=2, sampler="racing", n_sweeps=3, out=out, progress=False, plots=False, **kw)


def test_run_writes_manifest_last_listing_every_file(data, tmp_path):
    res = _run(data, tmp_path / "o")
    m = read_manifest(tmp_path / "o")
    assert m["command"] == "run" and m["seed"] == 0 and m["settings"]["folds"] == 2
    assert set(m["files"]) == {"clusters.csv", "curves.csv", "metrics.json", "report.md"}
    assert len(m["input"]["mentions_sha256"]) == 64 and m["settings_key"] == make_settings(
        "run", sampler="racing", n_sweeps=3, folds=2).key()
    assert not (tmp_path / "o" / LOCK).exists()
    (tmp_path / "o" / "clusters.csv").write_text("changed")
    with pytest.raises(OutputError, match=r"clusters.csv: SHA-256 differs from .*manifest.json"):
        read_manifest(tmp_path / "o")
    assert res.paths["manifest"].name == MANIFEST


def test_second_command_on_a_locked_out_is_a_clear_error(data, tmp_path):
    with OutputDir(tmp_path / "o", "predict"):
        with pytest.raises(OutputError, match=r"a coref command \(pid \d+\) is still writing it \(coref predict"):
            _run(data, tmp_path / "o")
        with pytest.raises(OutputError, match="still writing"):
            read_manifest(tmp_path / "o")
    assert not (tmp_path / "o" / LOCK).exists()          # released, also after the error
    _run(data, tmp_path / "o")


def test_lock_of_a_dead_process_is_taken_over(data, tmp_path):
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    import socket

    (tmp_path / "o").mkdir()
    (tmp_path / "o" / LOCK).write_text(json.dumps({"pid": p.pid, "host": socket.gethostname(), "command": "run"}))
    _run(data, tmp_path / "o")
    assert read_manifest(tmp_path / "o")["command"] == "run"


def _snapshot(out):
    return {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}


def test_failed_run_keeps_the_previous_finished_run_untouched(data, tmp_path, monkeypatch):
    # issue 26: two runs on one --out left report.md of seed 0 beside metrics of seed 7;
    # issue 28: a failed run must not delete the finished one either -- it is kept, byte for byte
    out = tmp_path / "o"
    _run(data, out, seed=0)
    before = _snapshot(out)
    assert {"clusters.csv", MANIFEST} <= set(before)

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(scoring, "sweep_curves", boom)
    with pytest.raises(KeyboardInterrupt) as info:
        _run(data, out, seed=7)
    assert any("previous results there are kept, unchanged" in n for n in info.value.__notes__)
    assert _snapshot(out) == before
    assert not [p for p in out.iterdir() if p.name.startswith(".partial-") or p.name == LOCK]
    assert read_manifest(out)["seed"] == 0


def test_unusable_out_is_reported_before_any_work(data, tmp_path, monkeypatch):
    import coref.inputs

    calls = []
    monkeypatch.setattr(coref.inputs, "load_input", lambda *a, **k: calls.append(1))
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="cannot create the directory"):
        _run(data, tmp_path / "file" / "out")
    with pytest.raises(OutputError, match="exists and is not a directory"):
        _run(data, tmp_path / "file")
    assert calls == []


def _block_checkpoint(out):
    files = sorted(p for p in (out / ".checkpoint").rglob("*.npz") if p.name != "theta.npz")
    assert files
    return files[0]


def test_checkpoint_missing_mentions_is_refused_and_recomputed(data, tmp_path):
    # the issue: a checkpoint for a block with 3 mentions missing was reused and 3 mentions
    # vanished from clusters.csv while the summary still counted them
    out = tmp_path / "o"
    first = _run(data, out)
    path = _block_checkpoint(out)
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(str(arrays["header"][()]))
    keep = slice(3, None)
    arrays["mention_id"] = arrays["mention_id"][keep]
    arrays["cluster_id"] = arrays["cluster_id"][keep]
    arrays["labels_history"] = arrays["labels_history"][:, keep]
    header["n_mentions"] -= 3
    arrays["header"] = np.array(json.dumps(header))
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    again = _run(data, out, resume=True)
    assert again.n_computed == 1 and again.n_reused == first.n_computed - 1
    assert len(again.refused) == 1 and "3 missing from the checkpoint" in again.refused[0]
    assert again.metrics["n_checkpoints_refused"] == 1
    assert len(again.clusters) == len(data)
    pd.testing.assert_frame_equal(first.clusters, again.clusters)


def test_planted_pickle_is_never_executed(data, tmp_path):
    out = tmp_path / "o"
    _run(data, out)
    marker = tmp_path / "pwned"
    path = _block_checkpoint(out)
    path.write_bytes(pickle.dumps(Planted(str(marker))))
    (path.parent / "x.pkl").write_bytes(pickle.dumps(Planted(str(marker))))
    model_dir = next((out / ".checkpoint").rglob("model_fold0"))
    (model_dir / "theta.npz").write_bytes(pickle.dumps(Planted(str(marker))))
    again = _run(data, out, resume=True)
    assert not marker.exists()
    assert any("unreadable checkpoint" in r for r in again.refused)
    assert any("theta.npz" in r and "SHA-256" in r for r in again.refused)
    assert again.n_computed >= 1 and len(again.clusters) == len(data)


def test_checkpoint_of_other_settings_is_not_reused(data, tmp_path):
    out = tmp_path / "o"
    _run(data, out, seed=1)
    again = _run(data, out, seed=2, resume=True)
    assert again.n_reused == 0


def test_encodings_of_another_encoding_version_are_refused(data, tmp_path, monkeypatch):
    # like S2AND's FeaturizationInfo(featurizer_version=...): a changed encoder invalidates old files
    from coref.exceptions import EncodingsError
    from coref.encoding.vocabulary import Vocabulary
    from coref.encoding.mentions import encode_parts

    voc = Vocabulary.fit(data, n_topics=2)
    enc = encode_parts(data, voc)
    p = tmp_path / encodings_file.ENCODINGS_FILE
    ids = data["mention_id"].tolist()
    encodings_file.write_encodings(p, enc, model_sha256="ab" * 32)
    with np.load(p, allow_pickle=False) as z:
        header = json.loads(str(z["header"][()]))
    assert header["encoding_version"] == encodings_file.ENCODING_VERSION
    back = encodings_file.read_encodings(p, model_sha256="ab" * 32, mention_ids=ids, vocabulary=voc)
    assert back.mention_id.tolist() == ids
    monkeypatch.setattr(encodings_file, "ENCODING_VERSION", encodings_file.ENCODING_VERSION + 1)
    with pytest.raises(EncodingsError, match=r"encodings.npz: header field 'encoding_version' is 1, expected 2 "
                                             r"\(encoded by another version"):
        encodings_file.read_encodings(p, model_sha256="ab" * 32, mention_ids=ids)


def test_no_unpickling_in_coref(repo_root):
    # (sampling/arch's checkpoints are another work package's)
    import re

    pat = re.compile(r"pickle\.loads?\(|joblib\.load\(|cloudpickle\.loads?\(|dill\.loads?\(|allow_pickle=True")
    hits = [f"{p}:{i}" for pkg in ("coref",) for p in (repo_root / pkg).rglob("*.py*")
            if p.suffix in (".py", ".pyx")
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if pat.search(line) and not line.lstrip().startswith("#")]
    assert hits == []


def _signed_output(tmp_path):
    """A finished output with two files, the manifest written after them."""
    from coref.outputs import sha256_file

    with OutputDir(tmp_path / "o", "predict") as od:
        od.path("a.npz").write_bytes(b"a" * 100)
        od.path("b.csv").write_text("x\n1\n")
        od.finish(settings=make_settings("predict"))
    return tmp_path / "o", sha256_file


def _edit_keeping_time(f, data):
    st = f.stat()
    f.write_bytes(data)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_read_manifest_defers_hashing_only_of_files_unchanged_by_size_and_time(tmp_path):
    from coref.outputs import verify_listed

    out, _ = _signed_output(tmp_path)
    deferred = lambda name: name.endswith(".npz")  # noqa: E731
    _edit_keeping_time(out / "a.npz", b"b" * 100)                  # same size, same time: not seen by stat
    m = read_manifest(out, deferred=deferred)                      # deferred: not hashed here
    with pytest.raises(OutputError, match=r"a.npz: SHA-256 differs from .*manifest.json"):
        verify_listed(out, m, "a.npz")                             # ... but before it is read
    with pytest.raises(OutputError, match=r"a.npz: SHA-256 differs"):
        read_manifest(out)                                         # not deferred: hashed
    assert verify_listed(out, m, "b.csv") == out / "b.csv"
    with pytest.raises(OutputError, match="c.npz: not listed"):
        verify_listed(out, m, "c.npz")
    (out / "a.npz").write_bytes(b"b" * 100)                        # newer than the manifest: hashed now
    with pytest.raises(OutputError, match=r"a.npz: SHA-256 differs"):
        read_manifest(out, deferred=deferred)
    _edit_keeping_time(out / "a.npz", b"a" * 99)                   # another size: refused by stat
    with pytest.raises(OutputError, match=r"a.npz: 99 bytes, .*manifest.json lists 100"):
        read_manifest(out, deferred=deferred)
    _edit_keeping_time(out / "a.npz", b"a" * 100)                  # back as it was: whole again
    assert read_manifest(out, deferred=deferred)["files"]["a.npz"]["bytes"] == 100
    _edit_keeping_time(out / "b.csv", b"x\n2\n")                   # a file not deferred is always hashed
    with pytest.raises(OutputError, match=r"b.csv: SHA-256 differs"):
        read_manifest(out, deferred=deferred)
