"""``coref add --confidence``: confidence files for the blocks an add sampled, describing the clusters it wrote."""
import json

import numpy as np
import pandas as pd
import pytest

from coref.confidence import assignment_confidence
from coref.io import write_mentions
from coref.jobs.add import add
from coref.jobs.predict import predict
from coref.model import load_model


@pytest.fixture(scope="module")
def model_dir(saved_model_factory):
    return saved_model_factory(n_blocks=6, per=12, seed=9)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, mentions_factory, model_dir):
    """An in-memory and a streamed base, the new mentions (6 old blocks touched, 2 new ones), adds with and without."""
    d = tmp_path_factory.mktemp("addconf")
    old = mentions_factory(n_blocks=8, per=9, n_authors=3, seed=5)
    path = write_mentions(old, d / "old.parquet")
    predict(path, model=model_dir, out=d / "mem", progress=False, stream=False)
    predict(path, model=model_dir, out=d / "str", progress=False, stream=True, group_mentions=20)
    new = mentions_factory(n_blocks=10, per=3, n_authors=3, seed=11)
    new["mention_id"] = "n" + new["mention_id"]
    new = new[~new["block"].isin(sorted(old["block"].unique())[6:])]     # 2 old blocks untouched
    npath = write_mentions(new, d / "new.parquet")
    out = {"old": old, "new": new, "dir": d}
    for base in ("mem", "str"):
        out[base] = add(d / base, npath, model=model_dir, out=d / f"a{base}", progress=False, confidence=True,
                        certify_seconds=0)
    out["plain"] = add(d / "mem", npath, model=model_dir, out=d / "aplain", progress=False)
    return out


def _conf(d):
    return pd.read_csv(d / "confidence.csv", dtype={"mention_id": str, "block": str, "cluster_id": str})


def test_add_confidence_covers_the_blocks_it_sampled_and_changes_no_cluster(runs):
    d, old, new = runs["dir"], runs["old"], runs["new"]
    sampled = set(new["block"])
    conf = _conf(d / "amem")
    everyone = pd.concat([old, new], ignore_index=True)
    want = set(everyone.loc[everyone["block"].isin(sampled), "mention_id"].astype(str))
    assert set(conf["mention_id"]) == want and len(conf) == len(want)
    assert set(conf.loc[conf["new"], "mention_id"]) == set(new["mention_id"].astype(str))
    assert len(set(old["block"]) - sampled) == 2                        # some blocks were not sampled
    # the rows describe clusters.csv as written, which --confidence does not change
    assert (d / "amem" / "clusters.csv").read_bytes() == (d / "aplain" / "clusters.csv").read_bytes()
    clusters = pd.read_csv(d / "amem" / "clusters.csv", dtype=str).set_index("mention_id")["cluster_id"]
    assert (conf["cluster_id"].to_numpy() == clusters.loc[conf["mention_id"]].to_numpy()).all()
    review = pd.read_csv(d / "amem" / "review.csv", dtype={"mention_id": str})
    assert set(review["mention_id"]) == want and review.set_index("mention_id")["new"].loc[
        conf["mention_id"]].tolist() == conf["new"].tolist()
    s = json.loads((d / "amem" / "summary.json").read_text())
    assert s["confidence_scope"] == {"n_mentions": len(want), "n_blocks": len(sampled),
                                     "n_new_mentions": len(new)}
    assert s["n_old_ids_changed"] == 0
    assert "this add sampled" in (d / "amem" / "report.md").read_text()


def test_add_confidence_is_the_posterior_of_the_clusters_written(runs, model_dir):
    """The rows equal assignment_confidence of the sampled blocks under the add's clustering (same seed):
    the old mentions' encodings and rows are aligned with the new ones'."""
    d, old, new = runs["dir"], runs["old"], runs["new"]
    everyone = pd.concat([old, new], ignore_index=True)
    everyone = everyone[everyone["block"].isin(set(new["block"]))]
    clusters = pd.read_csv(d / "amem" / "clusters.csv", dtype=str)
    clusters = clusters[clusters["block"].isin(set(new["block"]))]
    model = load_model(model_dir)[0]
    want, _ = assignment_confidence(model, everyone.drop(columns=["gold"]),
                                    clusters[["mention_id", "block", "cluster_id"]], rng=0, point_estimate="map")
    got = _conf(d / "amem").set_index("mention_id")
    want = want.set_index(want["mention_id"].astype(str)).loc[got.index]
    assert (want["cluster_id"].astype(str).to_numpy() == got["cluster_id"].to_numpy()).all()
    for c in ("p", "p_direct", "confidence"):
        np.testing.assert_allclose(got[c].to_numpy(float), want[c].to_numpy(float), rtol=1e-9, atol=1e-12)


def test_add_confidence_onto_a_streamed_output_equals_onto_the_in_memory_one(runs):
    d = runs["dir"]
    assert (d / "amem" / "confidence.csv").read_bytes() == (d / "astr" / "confidence.csv").read_bytes()
    assert (d / "amem" / "review.csv").read_bytes() == (d / "astr" / "review.csv").read_bytes()
    assert runs["str"]["confidence_scope"] == runs["mem"]["confidence_scope"]


def test_add_confidence_refuses_a_negative_budget_before_any_work(runs, model_dir, tmp_path):
    d = runs["dir"]
    with pytest.raises(ValueError, match="--certify-seconds"):
        add(d / "mem", d / "new.parquet", model=model_dir, out=tmp_path / "x", progress=False, confidence=True,
            certify_seconds=-1)
    assert not (tmp_path / "x").exists()
