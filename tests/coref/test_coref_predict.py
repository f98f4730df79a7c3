"""``coref predict`` and ``coref add`` end to end on small data with the real model and sampler."""
import json

import numpy as np
import pandas as pd
import pytest

from coref.jobs.add import add
from coref.jobs.incremental import add_clusters
from coref.cli import main
from coref.io import write_mentions
from coref.outputs import read_manifest
from coref.jobs.clusters import canonical_cluster_ids, predict_clusters
from coref.jobs.predict import predict
from coref.settings import make_settings


@pytest.fixture(scope="module")
def data(mentions_factory):
    df = mentions_factory(n_blocks=5, per=12, n_authors=3, seed=4)
    # gold values a loader would never produce: predict must pass them through byte for byte
    df["gold"] = pd.array([f"g,{g}\u00e9\"x" for g in df["gold"]], dtype="string")
    return df


@pytest.fixture(scope="module")
def model_dir(saved_model_factory):
    return saved_model_factory(n_blocks=6, per=12, seed=9)


def test_canonical_ids_depend_only_on_the_partition():
    blocks = ["a", "a", "a", "b", "b"]
    ids = ["m3", "m1", "m2", "n1", "n2"]
    one = canonical_cluster_ids(blocks, ids, ["x", "y", "x", "z", "z"])
    two = canonical_cluster_ids(blocks, ids, [7, 3, 7, 1, 1])
    assert list(one) == list(two) == ["a/1", "a/0", "a/1", "b/0", "b/0"]


def test_predict_outputs_gold_untouched_and_stable_ids(data, model_dir, tmp_path):
    path = write_mentions(data, tmp_path / "m.parquet")
    s = predict(path, model=model_dir, out=tmp_path / "o", progress=False)
    out = tmp_path / "o"
    cl = pd.read_csv(out / "clusters.csv", dtype=str, keep_default_na=False)
    assert list(cl.columns) == ["mention_id", "block", "cluster_id", "gold"]
    assert cl["gold"].tolist() == data["gold"].tolist()                     # passed through, untouched
    assert cl["mention_id"].tolist() == data["mention_id"].tolist()
    assert all(c.startswith(b + "/") for b, c in zip(cl["block"], cl["cluster_id"]))
    assert cl.groupby("cluster_id")["block"].nunique().max() == 1            # unique across blocks
    m = read_manifest(out)
    # loader.log: the loader's note that the optional columns (abstract, keywords, ...) are absent
    assert set(m["files"]) == {"clusters.csv", "mentions.parquet", "summary.json", "report.md", "encodings.npz",
                               "loader.log"}
    assert "optional column(s)" in (out / "loader.log").read_text()
    assert m["model"]["path"] == str(model_dir) and m["seed"] == 0
    report = (out / "report.md").read_text()
    assert "## Largest clusters" in report and "## Weakest merges" in report
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_mentions"] == len(data) and len(summary["largest_clusters"]) == min(10, s["n_clusters"])
    # same seed, same clusters; the result does not depend on gold
    again = predict(path, model=model_dir, out=tmp_path / "o2", progress=False)
    cl2 = pd.read_csv(tmp_path / "o2" / "clusters.csv", dtype=str, keep_default_na=False)
    pd.testing.assert_frame_equal(cl, cl2)
    nogold = write_mentions(data.assign(gold=pd.array([pd.NA] * len(data), dtype="string")), tmp_path / "n.parquet")
    predict(nogold, model=model_dir, out=tmp_path / "o3", progress=False)
    cl3 = pd.read_csv(tmp_path / "o3" / "clusters.csv", dtype=str, keep_default_na=False)
    assert cl3["cluster_id"].tolist() == cl["cluster_id"].tolist()
    assert again["n_factor_evals"] == s["n_factor_evals"] > 0


def test_predict_quality_on_separable_data(data, model_dir):
    from coref.evaluate import b3
    from coref.model import load_model

    model, _ = load_model(model_dir)
    cl, _ = predict_clusters(data, model, make_settings(seed=3))
    r = b3(pd.Series(cl["cluster_id"].to_numpy(), index=cl["mention_id"]),
           pd.Series(data["gold"].to_numpy(), index=data["mention_id"]))
    assert r.f1 > 0.9


def test_add_keeps_every_existing_id_and_clusters_new_blocks(data, model_dir, tmp_path):
    from coref.model import load_model

    model, _ = load_model(model_dir)
    is_new = (np.arange(len(data)) % 4 == 0) & (data["block"] != "Name_4").to_numpy()
    is_new |= (data["block"] == "Name_4").to_numpy()                          # a whole new block
    old, new = data[~is_new].reset_index(drop=True), data[is_new].reset_index(drop=True)
    settings = make_settings("add", seed=1)
    old_cl, _ = predict_clusters(old, model, settings)
    cl, info = add_clusters(model, old, old_cl, new, settings)
    merged = cl.set_index("mention_id")["cluster_id"]
    assert (merged.reindex(old_cl["mention_id"]).to_numpy() == old_cl["cluster_id"].to_numpy()).all()
    assert info["n_old_ids_changed"] == 0 and info["n_blocks_new"] == 1 and info["n_blocks_touched"] == 4
    assert len(cl) == len(data) and cl["mention_id"].is_unique and cl["cluster_id"].notna().all()
    # the new block is clustered from scratch exactly as predict would
    fresh, _ = predict_clusters(new[new["block"] == "Name_4"], model, settings)
    got = merged.reindex(fresh["mention_id"]).tolist()
    assert got == fresh["cluster_id"].tolist()
    # new clusters in old blocks get ids not used before
    new_ids = set(cl["cluster_id"].iloc[len(old):]) - set(old_cl["cluster_id"])
    assert info["n_new_clusters"] == len(new_ids)
    assert cl["gold"].tolist() == list(old["gold"]) + list(new["gold"])
    # a mention that is already clustered is skipped and counted; strict makes it an error
    cl2, info2 = add_clusters(model, old, old_cl, pd.concat([new, old.iloc[:2]]), settings)
    assert info2["n_skipped_duplicates"] == 2 and len(cl2) == len(data)
    with pytest.raises(ValueError, match="2 new mention id.s. are already clustered"):
        add_clusters(model, old, old_cl, pd.concat([new, old.iloc[:2]]), make_settings("add", strict=True))


def test_add_revisit_may_move_old_mentions_but_keeps_ids_unique(data, model_dir):
    from coref.model import load_model

    model, _ = load_model(model_dir)
    old, new = data.iloc[::2].reset_index(drop=True), data.iloc[1::2].reset_index(drop=True)
    # a deliberately bad old clustering: everything of a block in one cluster
    old_cl = pd.DataFrame({"mention_id": old["mention_id"], "block": old["block"], "cluster_id": old["block"] + "/0"})
    fixed, _ = add_clusters(model, old, old_cl, new, make_settings("add", seed=2))
    assert (fixed.iloc[:len(old)]["cluster_id"] == old_cl["cluster_id"]).all()
    moved, info = add_clusters(model, old, old_cl, new, make_settings("add", seed=2, revisit=True))
    assert info["n_old_ids_changed"] > 0
    per_block = moved.groupby("block")["cluster_id"].nunique()
    assert (per_block > 1).all()          # the lumped clusters were split up
    assert moved.groupby("cluster_id")["block"].nunique().max() == 1


def test_cli_predict_then_add_then_evaluate(data, model_dir, tmp_path, capsys):
    old, new = data.iloc[:40], data.iloc[40:]
    po, pn = write_mentions(old, tmp_path / "old.parquet"), write_mentions(new, tmp_path / "new.parquet")
    assert main(["predict", "--data", str(po), "--model", str(model_dir), "--out", str(tmp_path / "P"), "--quiet"]) == 0
    assert main(["add", "--clusters", str(tmp_path / "P"), "--data", str(pn), "--model", str(model_dir),
                 "--out", str(tmp_path / "Q"), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "existing ids changed: 0" in text
    # the console names what was written (the manifest lists the same files)
    listed = text.split(f"outputs: {tmp_path / 'Q'}/ (")[1].split(")")[0].split(", ")
    assert listed == sorted(list(read_manifest(tmp_path / "Q")["files"]) + ["manifest.json"])
    q = pd.read_csv(tmp_path / "Q" / "clusters.csv", dtype=str, keep_default_na=False)
    assert len(q) == len(data) and read_manifest(tmp_path / "Q")["command"] == "add"
    assert main(["evaluate", str(tmp_path / "Q" / "clusters.csv"), str(tmp_path / "Q" / "clusters.csv")]) == 0
    assert "against gold column 'gold'" in capsys.readouterr().out
    # --clusters must be a finished output: a modified clusters.csv is refused, naming the file
    (tmp_path / "P" / "clusters.csv").write_text("mention_id,block,cluster_id\n")
    assert main(["add", "--clusters", str(tmp_path / "P"), "--data", str(pn), "--model", str(model_dir),
                 "--out", str(tmp_path / "R"), "--quiet"]) == 2
    assert "clusters.csv: SHA-256 differs" in capsys.readouterr().err
    assert main(["add", "--clusters", str(tmp_path / "Q"), "--data", str(pn), "--out", str(tmp_path / "Q"),
                 "--model", str(model_dir), "--quiet"]) == 2
    assert "is the input --clusters" in capsys.readouterr().err


def test_cli_predict_errors(tmp_path, capsys, model_dir):
    assert main(["predict", "--data", str(tmp_path / "none.csv"), "--model", str(model_dir),
                 "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    bad = tmp_path / "bad_model"
    bad.mkdir()
    assert main(["predict", "--model", str(bad), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "manifest.json: no manifest.json" in capsys.readouterr().err


def test_confidence_option_needs_coref_confidence(data, model_dir, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "coref.confidence", None)   # import fails, as where it is absent
    with pytest.raises(RuntimeError, match="--confidence needs coref.confidence"):
        predict(data, model=model_dir, out=tmp_path / "o", confidence=True, progress=False)


@pytest.mark.slow
def test_shipped_default_model_predict_then_add_matches_predict_all(aminer_dir, tmp_path):
    # the coref-add must-show on the shipped data: 80% predicted, 20% added
    import zlib

    from coref.evaluate import b3
    from coref.io import load_mentions

    df = load_mentions(aminer_dir, format="aminer")
    new = df["mention_id"].map(lambda m: zlib.crc32(str(m).encode()) % 5 == 0).to_numpy()
    full = predict(df, out=tmp_path / "R", progress=False)
    predict(df[~new], out=tmp_path / "P", progress=False)
    added = add(tmp_path / "P", df[new], out=tmp_path / "Q", progress=False)
    assert added["n_old_ids_changed"] == 0 and full["n_mentions"] == added["n_mentions"]
    f1 = {}
    for x in "RQ":
        cl = pd.read_csv(tmp_path / x / "clusters.csv", dtype=str, keep_default_na=False)
        f1[x] = b3(pd.Series((cl["block"] + "|" + cl["cluster_id"]).to_numpy(), index=cl["mention_id"]),
                   pd.Series((cl["block"] + "|" + cl["gold"]).to_numpy(), index=cl["mention_id"])).f1
    assert abs(f1["R"] - f1["Q"]) <= 0.01


def test_confidence_files_are_written_inside_the_locked_output(data, model_dir, tmp_path, monkeypatch):
    # the contract of coref.confidence, with a stand-in so that the test takes no DIS time
    import sys
    import types

    seen = {}

    def assignment_confidence(model, df, clusters, *, delta, rng, encodings=None, certify_seconds=0.0,
                              point_estimate="map", keep_features=False):
        seen.update(delta=delta, rng=rng, cols=list(clusters.columns), gold="gold" in df.columns,
                    point_estimate=point_estimate, keep_features=keep_features)
        conf = clusters[["mention_id", "cluster_id"]].assign(p=1.0, p_lower=0.9, p_upper=1.0, method="exact",
                                                           n_submodel=1, fit_title=0.5)   # + a structure column
        pairs = pd.DataFrame({"block": ["Name_0"], "mention_a": ["a"], "mention_b": ["b"], "p": [0.5]})
        return conf, pairs

    def write_confidence_report(out_dir, confidence_df, pairs_df, explain_fn=None):
        (out_dir / "confidence_hist.png").write_bytes(b"png")
        return "## Confidence\n"

    def review_table(model, df, confidence_df, *, encodings=None):
        return confidence_df[["mention_id", "cluster_id"]].assign(rank=range(1, len(confidence_df) + 1))

    fake = types.ModuleType("coref.confidence")
    fake.assignment_confidence, fake.write_confidence_report = assignment_confidence, write_confidence_report
    fake.review_table = review_table
    fake.CONFIDENCE_COLUMNS = ("mention_id", "cluster_id", "p", "p_lower", "p_upper", "method", "n_submodel")
    monkeypatch.setitem(sys.modules, "coref.confidence", fake)
    predict(data, model=model_dir, out=tmp_path / "o", confidence=True, delta=0.1, seed=4, progress=False)
    m = read_manifest(tmp_path / "o")
    assert {"confidence.csv", "pairs.csv", "review.csv", "confidence_hist.png"} <= set(m["files"])
    assert seen == {"delta": 0.1, "rng": 4, "cols": ["mention_id", "block", "cluster_id"], "gold": False,
                    "point_estimate": "repair", "keep_features": True}
    assert len(pd.read_csv(tmp_path / "o" / "review.csv")) == len(data)
    assert "## Confidence" in (tmp_path / "o" / "report.md").read_text()
    conf = pd.read_csv(tmp_path / "o" / "confidence.csv")
    assert len(conf) == len(data) and tuple(conf.columns) == fake.CONFIDENCE_COLUMNS   # structure columns not written


def test_predict_names_skipped_repaired_and_ignored_files(aminer_dir, model_dir, tmp_path, capsys):
    # the issue: one malformed file stopped the run; now it is skipped and named, the rest clustered
    d = tmp_path / "in"
    d.mkdir()
    (d / "Fei_Su.xml").write_bytes((aminer_dir / "Fei_Su.xml").read_bytes())
    text = (aminer_dir / "Bin_Yu.xml").read_text(encoding="utf-8").replace("<title>", "<title>\f", 1)
    (d / "Bin_Yu.xml").write_text(text, encoding="utf-8")          # a form feed in a title: repaired
    (d / "Broken.xml").write_text("<person><publication><title>unterminated")
    assert main(["predict", "--data", str(d), "--model", str(model_dir), "--out", str(tmp_path / "o"),
                 "--quiet"]) == 0
    cap = capsys.readouterr()
    out = cap.out
    # issue 28 item 7: counts and the files on the console, the details in loader.log, the
    # warning one line without a Python source excerpt
    assert f"1 file(s) skipped in {d / 'Broken.xml'} (details: " in out
    assert f"3 repair(s) of the input in {d / 'Bin_Yu.xml'}, {d / 'Fei_Su.xml'} (details: {tmp_path / 'o' / 'loader.log'})" in out
    assert "removed 1 illegal XML" not in out
    warned = [line for line in cap.err.splitlines() if "warning" in line]
    assert len(warned) == 1 and warned[0].startswith("coref predict: warning: read 142 mentions from 2 file(s)")
    assert "warnings.warn" not in cap.err and ".py:" not in cap.err and "None" not in cap.err
    log = (tmp_path / "o" / "loader.log").read_text()
    assert f"{d / 'Bin_Yu.xml'}:8: removed 1 illegal XML" in log and "Broken.xml:1: malformed XML" in log
    assert "loader.log" in read_manifest(tmp_path / "o")["files"]
    md = (tmp_path / "o" / "report.md").read_text()
    assert "3 repair(s) of the input in" in md and "escaped" not in md
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["n_blocks"] == 2 and s["data"]["n_files_skipped"] == 1
    assert "Broken.xml" in (tmp_path / "o" / "report.md").read_text()
    assert main(["predict", "--data", str(d), "--model", str(model_dir), "--out", str(tmp_path / "s"),
                 "--quiet", "--strict"]) == 2
    assert "Broken.xml" in capsys.readouterr().err


def test_read_clustered_aligns_the_mentions_with_clusters_csv(data, model_dir, tmp_path, monkeypatch):
    from coref.jobs.add import read_clustered

    out = tmp_path / "P"
    predict(data.drop(columns=["gold"]), model=model_dir, out=out, progress=False)
    mentions, clusters, _ = read_clustered(out)
    assert mentions["mention_id"].astype(str).tolist() == clusters["mention_id"].astype(str).tolist()
    assert isinstance(mentions["coauthors"].iloc[0], list)                    # encoder cells
    raw, _, _ = read_clustered(out, as_text=False)
    assert not isinstance(raw["coauthors"].iloc[0], list)                     # Parquet's cells
    # rows of mentions.parquet in another order than clusters.csv: realigned; other ids: refused
    real = pd.read_parquet
    monkeypatch.setattr(pd, "read_parquet", lambda *a, **k: real(*a, **k).iloc[::-1].reset_index(drop=True))
    again, clusters2, _ = read_clustered(out)
    assert again["mention_id"].tolist() == clusters2["mention_id"].tolist()
    pd.testing.assert_frame_equal(again, mentions)
    monkeypatch.setattr(pd, "read_parquet", lambda *a, **k: real(*a, **k).iloc[1:].reset_index(drop=True))
    with pytest.raises(ValueError, match="cover different mentions"):
        read_clustered(out)


def test_add_with_reused_encodings_equals_encoding_the_old_mentions_again(data, model_dir):
    from coref.encoding.mentions import encode_parts
    from coref.model import load_model

    model, _ = load_model(model_dir)
    is_new = (np.arange(len(data)) % 3 == 0)
    old, new = data[~is_new].reset_index(drop=True), data[is_new].reset_index(drop=True)
    settings = make_settings("add", seed=2)
    old_cl, _ = predict_clusters(old, model, settings)
    enc = encode_parts(old.drop(columns=["gold"]).iloc[::-1], model.vocabulary_)   # any row order
    a, ia = add_clusters(model, old, old_cl, new, settings, old_encodings=enc, return_encodings=True)
    b, ib = add_clusters(model, old, old_cl, new, settings, return_encodings=True)
    pd.testing.assert_frame_equal(a, b)
    assert ia["n_factor_evals"] == ib["n_factor_evals"] and ia["n_old_ids_changed"] == 0
    ea, eb = ia["encodings"], ib["encodings"]
    np.testing.assert_array_equal(ea.mention_id, eb.mention_id)
    for k in eb.arrays:
        np.testing.assert_array_equal(ea.arrays[k], eb.arrays[k], err_msg=k)


def test_add_keeps_each_mention_once_when_new_data_repeats_old_ones(data, model_dir, tmp_path):
    """Already clustered mentions in the new data are skipped: the saved mention table holds
    every mention once, aligned with clusters.csv."""
    from coref.jobs.add import read_clustered

    old, new = data.iloc[::2].reset_index(drop=True), data.iloc[1::2].reset_index(drop=True)
    predict(old, model=model_dir, out=tmp_path / "P", progress=False)
    s = add(tmp_path / "P", pd.concat([new, old.iloc[:3]], ignore_index=True), model=model_dir,
            out=tmp_path / "Q", progress=False)
    assert s["n_mentions"] == len(data)
    mentions, clusters, _ = read_clustered(tmp_path / "Q")
    assert len(mentions) == len(clusters) == len(data)
    assert sorted(mentions["mention_id"].astype(str)) == sorted(data["mention_id"].astype(str))
    assert mentions["mention_id"].astype(str).tolist() == clusters["mention_id"].astype(str).tolist()


def test_confidence_assembles_blocks_from_the_run_encodings(data, model_dir):
    """``coref predict --confidence`` encodes nothing again: each block is assembled from
    the run's per-mention encoding, field for field equal to ``model.encode``; a block with
    a mention the run did not encode falls back to ``model.encode``."""
    from dataclasses import fields

    from coref.encoding.mentions import encode_parts
    from coref.model import load_model
    from coref.encoding import EncodingCache

    model, _ = load_model(model_dir)
    df = data.drop(columns="gold").reset_index(drop=True)
    wrapped = EncodingCache(model, parts=encode_parts(df, model.vocabulary_), part_ids=df["mention_id"].to_numpy())
    for _, sub in df.groupby("block"):
        sub = sub.iloc[::-1]                                  # any row order
        got, want = wrapped.encode(sub), model.encode(sub)
        for f in fields(want):
            a, b = getattr(got, f.name), getattr(want, f.name)
            if isinstance(b, np.ndarray):
                np.testing.assert_array_equal(a, b, err_msg=f.name)
            else:
                assert a == b, f.name
    stranger = df.iloc[:3].assign(mention_id=["new-1", "new-2", "new-3"])
    np.testing.assert_array_equal(wrapped.encode(stranger).co_ids, model.encode(stranger).co_ids)


def test_certify_budget_default_scales_with_the_clustering_and_is_validated():
    from coref.jobs.predict import certify_budget

    assert certify_budget(None, 0.1) == 0.5 and certify_budget(None, 3.0) == 1.5 and certify_budget(None, 200) == 60.0
    assert certify_budget(0, 5.0) == 0.0 and certify_budget(2.5, 5.0) == 2.5
    for bad in (-1.0, float("inf"), True, "5"):
        with pytest.raises(ValueError, match="--certify-seconds must be a finite number >= 0"):
            certify_budget(bad, 1.0)


def test_confidence_reports_the_dis_certification_pass(data, model_dir, tmp_path):
    path = write_mentions(data, tmp_path / "m.parquet")
    s = predict(path, model=model_dir, out=tmp_path / "o", progress=False, confidence=True, certify_seconds=0.5)
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["certify"]["seconds"] == 0.5 and summary["certify"]["n_certified"] >= 0
    assert "DIS certification" in (tmp_path / "o" / "report.md").read_text()
    with pytest.raises(ValueError, match="--certify-seconds"):
        predict(path, model=model_dir, out=tmp_path / "o2", progress=False, confidence=True, certify_seconds=-1)
    assert not (tmp_path / "o2").exists() and s["n_mentions"] == len(data)


def test_confidence_leaves_blocks_above_the_limit_unscored_and_says_so(data, model_dir, tmp_path, monkeypatch):
    import coref.confidence.assignment as assignment
    from coref.exceptions import UnscoredBlocksWarning

    first = data["block"] == data["block"].iloc[0]
    data = data.drop(index=data.index[first][:4])      # one block smaller than the others
    sizes = data.groupby("block").size()
    limit = int(sizes.max()) - 1                 # the largest block(s) go over it
    assert 0 < (sizes <= limit).sum() < len(sizes)
    over = sizes[sizes > limit]
    monkeypatch.setattr(assignment, "DEFAULT_MAX_BLOCK", limit)
    with pytest.warns(UnscoredBlocksWarning, match=f"of more than {limit:,} mentions get no confidence"):
        predict(data, model=model_dir, out=tmp_path / "o", progress=False, confidence=True, certify_seconds=0)
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["confidence_unscored"] == {"max_block": limit, "n_blocks": len(over), "n_mentions": int(over.sum())}
    conf = pd.read_csv(tmp_path / "o" / "confidence.csv", dtype={"mention_id": str})
    none = conf["block"].isin(over.index)
    assert (conf.loc[none, "method"] == "none").all() and conf.loc[none, "confidence"].isna().all()
    assert conf.loc[~none, "confidence"].notna().all() and (conf.loc[~none, "method"] != "none").all()
    pairs = pd.read_csv(tmp_path / "o" / "pairs.csv")
    assert not pairs["block"].isin(over.index).any()
    assert len(pd.read_csv(tmp_path / "o" / "review.csv")) == len(data)
    assert "No confidence for the" in (tmp_path / "o" / "report.md").read_text()
