import os
import stat

import pytest

from sampling.utils.atomic import atomic_open, atomic_path, atomic_write_text


def test_atomic_write_replaces_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "sub" / "out.csv"
    atomic_write_text(target, "a\n")
    atomic_write_text(target, "b\n")
    assert target.read_text() == "b\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.csv"]
    mode = stat.S_IMODE(os.stat(target).st_mode)
    assert mode & stat.S_IRUSR and mode & stat.S_IWUSR and mode & stat.S_IRGRP  # not mkstemp's 0600


def test_atomic_path_keeps_suffix_for_format_sniffing_writers(tmp_path):
    with atomic_path(tmp_path / "plot.png") as tmp:
        assert tmp.suffix == ".png" and tmp.parent == tmp_path
        tmp.write_bytes(b"x")


def _write_half_path(target):
    with atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("boom")


def _write_half_file(target):
    with atomic_open(target) as fh:
        fh.write("half of the new conte")
        raise RuntimeError("boom")


@pytest.mark.parametrize("write_half", [_write_half_path, _write_half_file])
def test_atomic_write_failure_keeps_old_content_and_no_temporary(tmp_path, write_half):
    target = tmp_path / "m.json"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="boom"):
        write_half(target)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]


def test_atomic_write_rejects_bad_mode(tmp_path):
    with pytest.raises(ValueError, match="mode parameter"):
        with atomic_open(tmp_path / "x", "a"):
            pass
