import pytest

from sampling._atomic import atomic_path, atomic_write_text


def test_atomic_write_replaces_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "sub" / "out.csv"
    atomic_write_text(target, "a\n")
    atomic_write_text(target, "b\n")
    assert target.read_text() == "b\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.csv"]


def test_atomic_path_keeps_suffix_for_format_sniffing_writers(tmp_path):
    with atomic_path(tmp_path / "plot.png") as tmp:
        assert tmp.suffix == ".png" and tmp.parent == tmp_path
        tmp.write_bytes(b"x")


def test_atomic_path_failure_keeps_old_file(tmp_path):
    target = tmp_path / "m.json"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]
