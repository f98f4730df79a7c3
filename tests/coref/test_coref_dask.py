"""Dask scale-out: a LocalCluster on loopback gives exactly the clusters of the local executor.

Uses the real ``coref.model`` and ``coref.gibbs`` (the workers import them), on small
synthetic blocks so that the whole file stays well under 30 s.
"""
import numpy as np
import pandas as pd
import pytest

pytest.importorskip("coref.model", reason="coref.model (H5) not available yet")
pytest.importorskip("coref.gibbs", reason="coref.gibbs (H5) not available yet")
distributed = pytest.importorskip("distributed")

from coref import executors  # noqa: E402
from coref.inference import infer_blocks  # noqa: E402
from coref.jobs.run import run  # noqa: E402
from coref.settings import make_settings  # noqa: E402


@pytest.fixture(scope="module")
def client():
    # the code path of ``coref run --workers 2``: LocalCluster, processes, 1 thread, loopback, no dashboard
    with executors.executor_context(None, 2, None) as (c, desc):
        assert desc.startswith("dask LocalCluster (2 workers")
        assert c.scheduler.address.startswith("tcp://127.0.0.1:")
        yield c


def test_dask_run_equals_local_run(client, tmp_path, mentions_factory):
    df = mentions_factory(n_blocks=6, per=10, n_authors=3, seed=7)
    kw = dict(folds=2, n_sweeps=6, seed=11, progress=False, plots=False)
    local = run(df, out=tmp_path / "local", **kw)
    # connect by address, as ``coref run --scheduler ADDRESS`` does
    dask = run(df, out=tmp_path / "dask", scheduler=client.scheduler.address, **kw)
    pd.testing.assert_frame_equal(local.clusters, dask.clusters)
    pd.testing.assert_frame_equal(local.curves, dask.curves)
    for s in ("racing", "exact"):
        a, b = local.metrics[s], dask.metrics[s]
        for k in ("b3_f1", "pairwise_f1", "n_factor_evals"):
            assert a[k] == b[k], (s, k)
    assert dask.metrics["settings"]["executor"] == f"dask scheduler {client.scheduler.address}"
    assert len(client.scheduler_info()["workers"]) == 2


def test_infer_blocks_dask_equals_local(client, mentions_factory):
    from coref.model import PairwiseModel

    df = mentions_factory(n_blocks=5, per=10, n_authors=3, seed=3)
    model = PairwiseModel().fit(df[df["block"] != "Name_0"].reset_index(drop=True))
    test = df[df["block"].isin(["Name_0", "Name_1", "Name_2"])].reset_index(drop=True)
    settings = make_settings(seed=5, n_sweeps=5)
    local = infer_blocks(test, model, settings, record_history=False)
    remote = infer_blocks(test, model, settings, client=client, record_history=False)
    assert [r.block for r in local] == [r.block for r in remote] == ["Name_0", "Name_1", "Name_2"]
    for a, b in zip(local, remote):
        np.testing.assert_array_equal(a.cluster_id, b.cluster_id)
        assert a.n_factor_evals == b.n_factor_evals


@pytest.mark.slow
def test_cli_workers_2_equals_local(tmp_path, mentions_factory):
    import json

    from coref.cli import main
    from coref.io import write_mentions

    data = write_mentions(mentions_factory(n_blocks=4, per=6, n_authors=3, seed=7), tmp_path / "m.csv")
    base = ["run", "--data", str(data), "--folds", "2", "--sweeps", "3", "--quiet"]
    assert main(base + ["--out", str(tmp_path / "w"), "--workers", "2"]) == 0
    assert main(base + ["--out", str(tmp_path / "l")]) == 0
    a = pd.read_csv(tmp_path / "w" / "clusters.csv")
    b = pd.read_csv(tmp_path / "l" / "clusters.csv")
    pd.testing.assert_frame_equal(a, b)
    assert json.loads((tmp_path / "w" / "metrics.json").read_text())["settings"]["executor"].startswith(
        "dask LocalCluster")


def test_unreachable_scheduler_is_a_clear_error(tmp_path, monkeypatch, mentions_factory):
    monkeypatch.setattr(executors, "CONNECT_TIMEOUT", "1s")
    with pytest.raises(ConnectionError, match=r"--scheduler 'tcp://127.0.0.1:9': could not connect"):
        run(mentions_factory(n_blocks=2, per=3, n_authors=3, seed=7), folds=2, scheduler="tcp://127.0.0.1:9",
                     out=tmp_path, progress=False, plots=False)


def test_predict_and_add_on_dask_equal_local(client, mentions_factory):
    # `coref predict --workers N` / `coref add --workers N`: same clusters as in this process
    from coref.jobs.incremental import add_clusters
    from coref.model import PairwiseModel
    from coref.jobs.clusters import predict_clusters

    df = mentions_factory(n_blocks=5, per=10, n_authors=3, seed=13)
    model = PairwiseModel(bias_shift=0.0).fit(mentions_factory(n_blocks=4, per=10, n_authors=3, seed=14))
    settings = make_settings(seed=2, n_sweeps=4)
    local, _ = predict_clusters(df, model, settings)
    remote, _ = predict_clusters(df, model, settings, client=client)
    pd.testing.assert_frame_equal(local, remote)
    old, new = df.iloc[::3].reset_index(drop=True), df.drop(index=df.index[::3]).reset_index(drop=True)
    old_cl, _ = predict_clusters(old, model, settings)
    a, _ = add_clusters(model, old, old_cl, new, make_settings("add", seed=2, n_sweeps=4))
    b, _ = add_clusters(model, old, old_cl, new, make_settings("add", seed=2, n_sweeps=4), client=client)
    pd.testing.assert_frame_equal(a, b)
    # a touched block that keeps a recorded prior shift: the workers use it too
    big = mentions_factory(n_blocks=2, per=30, n_authors=3, seed=15)
    b0 = big["block"].iloc[0]
    new2 = big[big["block"] == b0].iloc[:2]
    old2 = big.drop(index=new2.index).reset_index(drop=True)
    old2_cl, _ = predict_clusters(old2, model, settings)
    kw = dict(old_prior_shifts={b0: -1.0})
    a, ia = add_clusters(model, old2, old2_cl, new2.reset_index(drop=True), make_settings("add", seed=2), **kw)
    b, ib = add_clusters(model, old2, old2_cl, new2.reset_index(drop=True), make_settings("add", seed=2),
                         client=client, **kw)
    pd.testing.assert_frame_equal(a, b)
    assert ia["n_blocks_prior_kept"] == ib["n_blocks_prior_kept"] == 1
    assert ia["prior_shifts"] == ib["prior_shifts"] == {b0: -1.0}
