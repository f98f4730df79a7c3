"""The jobs run their block groups with the cyclic garbage collector paused (coref.io.gc_paused)."""
import gc
import weakref

import pytest

from coref.io import gc_paused, write_mentions
from coref.jobs import clusters as jobs_clusters
from coref.jobs import incremental, streaming
from coref.jobs.add import add
from coref.jobs.predict import predict


@pytest.fixture
def gc_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_pause_restores_the_collector_on_exit_and_on_error(gc_on):
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():                      # nested: the inner exit leaves it paused
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError, match="boom"):
        with gc_paused():
            raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()                               # a collector the caller disabled stays disabled
    with gc_paused():
        pass
    assert not gc.isenabled()
    gc.enable()


def test_pause_as_a_decorator_keeps_the_function_and_its_cycles_are_collected_after(gc_on):
    class Node:
        pass

    refs = []

    @gc_paused()
    def make_cycle():
        """doc"""
        a = Node()
        a.self = a
        refs.append(weakref.ref(a))
        return gc.isenabled()

    assert make_cycle.__doc__ == "doc" and make_cycle() is False and gc.isenabled()
    assert refs[0]() is not None               # a cycle: reference counting alone does not free it
    gc.collect()
    assert refs[0]() is None


def _recording(target, seen):
    def wrapped(*args, **kwargs):
        seen.append(gc.isenabled())
        return target(*args, **kwargs)
    return wrapped


def test_predict_and_add_sample_with_the_collector_paused(gc_on, monkeypatch, mentions_factory,
                                                          saved_model_factory, tmp_path):
    """In-memory and streamed predict and both adds (onto either output) sample with it paused;
    it is on again after each command."""
    model_dir = saved_model_factory(n_blocks=4, per=10, seed=2)
    df = mentions_factory(n_blocks=5, per=8, n_authors=3, seed=4)
    path = write_mentions(df, tmp_path / "m.parquet")
    new = mentions_factory(n_blocks=3, per=3, n_authors=3, seed=11)
    new["mention_id"] = "n" + new["mention_id"]
    npath = write_mentions(new, tmp_path / "new.parquet")
    seen = {"infer": [], "read": [], "add": []}
    monkeypatch.setattr(jobs_clusters, "infer_blocks", _recording(jobs_clusters.infer_blocks, seen["infer"]))
    monkeypatch.setattr(streaming, "read_group", _recording(streaming.read_group, seen["read"]))
    monkeypatch.setattr(incremental, "infer_blocks", _recording(incremental.infer_blocks, seen["add"]))
    predict(path, model=model_dir, out=tmp_path / "mem", stream=False, progress=False)
    assert gc.isenabled()
    predict(path, model=model_dir, out=tmp_path / "str", stream=True, group_mentions=15, progress=False)
    assert gc.isenabled()
    add(tmp_path / "mem", npath, model=model_dir, out=tmp_path / "amem", progress=False)
    assert gc.isenabled()
    add(tmp_path / "str", npath, model=model_dir, out=tmp_path / "astr", progress=False)
    assert gc.isenabled()
    assert len(seen["infer"]) >= 3 and not any(seen["infer"])    # one in-memory call, one per group
    assert len(seen["read"]) >= 2 and not any(seen["read"])
    assert len(seen["add"]) >= 2 and not any(seen["add"])
    assert (tmp_path / "mem" / "clusters.csv").read_bytes() == (tmp_path / "str" / "clusters.csv").read_bytes()
