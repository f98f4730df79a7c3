"""``coref predict`` in block groups (coref.io.stream, coref.jobs.streaming) and ``coref add`` onto its output."""
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from coref.io import load_mentions, write_mentions
from coref.io.stream import (group_file, new_collector, partition_groups, plan_block_groups, read_group,
                             table_batches)
from coref.jobs import streaming
from coref.jobs.add import add
from coref.jobs.clusters import sampler_choices, sampling_summary, sampling_tally
from coref.jobs.predict import predict
from coref.outputs import read_manifest


@pytest.fixture(scope="module")
def model_dir(saved_model_factory):
    return saved_model_factory(n_blocks=6, per=12, seed=9)


@pytest.fixture(scope="module")
def table(mentions_factory):
    """Blocks interleaved (not sorted), a blank block (derived from the name), gold with a comma."""
    df = mentions_factory(n_blocks=7, per=9, n_authors=3, seed=5)
    df = df.sample(frac=1.0, random_state=3).reset_index(drop=True)
    df.loc[4, "block"] = ""
    df["gold"] = pd.array([f"g,{g}" for g in df["gold"]], dtype="string")
    return df


def _bytes(d, name="clusters.csv"):
    return (d / name).read_bytes()


def test_plan_packs_blocks_in_first_appearance_order(tmp_path):
    df = pd.DataFrame({"mention_id": [f"m{i}" for i in range(9)], "name": ["Ann Lee"] * 9,
                       "block": ["b", "a", "b", "c", "", "a", "d", "d", "d"]})
    p = tmp_path / "t.parquet"
    df.to_parquet(p, index=False)
    plan = plan_block_groups(p, "parquet", group_mentions=3, batch_rows=4)
    assert plan.blocks.tolist() == ["b", "a", "c", "a lee", "d"] and plan.sizes.tolist() == [2, 2, 1, 1, 3]
    # b+a fill group 0 (4 >= 3), c + "a lee" + d: c starts group 1, which holds 2 after "a lee", then d joins it
    assert plan.group.tolist() == [0, 0, 1, 1, 1] and plan.group_sizes().tolist() == [4, 5]
    with pytest.raises(ValueError, match="group_mentions must be >= 1"):
        plan_block_groups(p, "parquet", group_mentions=0)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_partition_gives_each_group_the_rows_the_loader_gives(table, tmp_path, suffix):
    path = write_mentions(table, tmp_path / f"m{suffix}")
    fmt = suffix[1:]
    whole = load_mentions(path)
    plan = plan_block_groups(path, fmt, group_mentions=20, batch_rows=7)
    part = partition_groups(path, fmt, plan, tmp_path / "parts", new_collector(False), batch_rows=7)
    assert part.n_kept == len(whole) and len(part.duplicates) == 0
    got = pd.concat([read_group(tmp_path / "parts", g) for g in range(plan.n_groups)]).sort_values("row")
    assert got["row"].tolist() == list(range(len(whole)))
    got = got.drop(columns="row").reset_index(drop=True)
    for c in whole.columns:
        a, b = whole[c].tolist(), got[c].tolist()
        assert [x if x is not pd.NA else None for x in a] == [x if x is not pd.NA else None for x in b], c


def test_bad_records_and_duplicates_are_skipped_as_the_loader_does(table, tmp_path, model_dir):
    bad = table.copy()
    bad["year"] = bad["year"].astype(object)
    bad.loc[3, "year"] = "19x5"                            # a bad record
    bad.loc[10, "mention_id"] = bad.loc[2, "mention_id"]   # a duplicate id (first kept)
    path = tmp_path / "m.csv"
    bad.assign(coauthors=[json.dumps(list(v)) for v in bad["coauthors"]]).to_csv(path, index=False)
    whole, report = load_mentions(path, return_report=True)
    col = new_collector(False)
    plan = plan_block_groups(path, "csv", group_mentions=10, batch_rows=5)
    part = partition_groups(path, "csv", plan, tmp_path / "parts", col, batch_rows=5)
    assert sorted(col.skipped) == sorted(report.skipped) and len(report.skipped) == 2
    assert part.duplicates.tolist() == [10] and part.n_kept == len(whole)
    a = predict(path, model=model_dir, out=tmp_path / "mem", progress=False, stream=False)
    b = predict(path, model=model_dir, out=tmp_path / "str", progress=False, stream=True, group_mentions=10)
    assert _bytes(tmp_path / "mem") == _bytes(tmp_path / "str")
    assert _bytes(tmp_path / "mem", "loader.log") == _bytes(tmp_path / "str", "loader.log")
    assert b["data"]["n_skipped"] == a["data"]["n_skipped"] == 2 and b["streaming"]["n_duplicates"] == 1


@pytest.mark.parametrize("group_mentions", [1, 15, 1000])
def test_streamed_predict_equals_in_memory_predict(table, tmp_path, model_dir, group_mentions):
    path = write_mentions(table, tmp_path / "m.parquet")
    # (the in-memory run given the streamed run's factor-matrix budget: the same sampling text)
    a = predict(path, model=model_dir, out=tmp_path / "mem", progress=False, stream=False,
                factor_cache_mb=streaming.STREAM_FACTOR_CACHE_MB)
    b = predict(path, model=model_dir, out=tmp_path / "str", progress=False, stream=True,
                group_mentions=group_mentions)
    assert _bytes(tmp_path / "mem") == _bytes(tmp_path / "str")
    if group_mentions == 15:        # and the in-memory default (1 GiB budget): every block fits both
        from coref.jobs.predict import MEMORY_FACTOR_CACHE_MB

        c = predict(path, model=model_dir, out=tmp_path / "mem1g", progress=False, stream=False)
        assert _bytes(tmp_path / "mem1g") == _bytes(tmp_path / "str")
        assert b["settings"]["gibbs_params"] == {"factor_cache_mb": streaming.STREAM_FACTOR_CACHE_MB}
        assert c["settings"]["gibbs_params"] == {"factor_cache_mb": MEMORY_FACTOR_CACHE_MB}
        assert (b["sampling"]["max_cached_n"], c["sampling"]["max_cached_n"]) == (4096, 11585)
    for k in ("n_mentions", "n_blocks", "n_clusters", "n_singletons", "n_factor_evals", "largest_clusters",
              "weakest_merges"):
        assert a[k] == b[k], k
    assert a["sampling"]["text"] == b["sampling"]["text"] and "blocks" not in b["sampling"]
    blocks = pd.read_csv(tmp_path / "str" / "blocks.csv", keep_default_na=False)
    assert sorted(blocks["block"]) == sorted(x["block"] for x in a["sampling"]["blocks"])
    m = read_manifest(tmp_path / "str")
    n_groups = b["streaming"]["n_groups"]
    assert n_groups == {1: len(blocks), 1000: 1}.get(group_mentions, n_groups) and n_groups >= 1
    if group_mentions == 15:
        assert 2 <= n_groups < len(blocks)
    assert sum(f.startswith("encodings-g") for f in m["files"]) == n_groups
    assert not (tmp_path / "str" / ".checkpoint").exists()          # removed once the run is in place


def test_an_interrupted_stream_resumes_from_its_finished_groups(table, tmp_path, model_dir, monkeypatch):
    path = write_mentions(table, tmp_path / "m.parquet")
    real, calls = streaming.cluster_group, []

    def dies_on_the_third(root, g, *args):
        calls.append(g)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(root, g, *args)

    monkeypatch.setattr(streaming, "cluster_group", dies_on_the_third)
    with pytest.raises(KeyboardInterrupt):
        predict(path, model=model_dir, out=tmp_path / "o", progress=False, stream=True, group_mentions=9)
    assert not (tmp_path / "o" / "manifest.json").exists()
    monkeypatch.setattr(streaming, "cluster_group", real)
    b = predict(path, model=model_dir, out=tmp_path / "o", progress=False, stream=True, group_mentions=9)
    assert b["streaming"]["partition_resumed"] and b["streaming"]["groups_resumed"] == 2
    predict(path, model=model_dir, out=tmp_path / "mem", progress=False, stream=False)
    assert _bytes(tmp_path / "mem") == _bytes(tmp_path / "o")


def test_add_onto_a_streamed_output_equals_add_onto_the_in_memory_one(table, tmp_path, model_dir, mentions_factory):
    path = write_mentions(table, tmp_path / "m.parquet")
    predict(path, model=model_dir, out=tmp_path / "mem", progress=False, stream=False)
    predict(path, model=model_dir, out=tmp_path / "str", progress=False, stream=True, group_mentions=20)
    new = mentions_factory(n_blocks=9, per=3, n_authors=3, seed=11)      # 7 old blocks touched, 2 new
    new["mention_id"] = "n" + new["mention_id"]
    new = pd.concat([new, table.iloc[:2]], ignore_index=True)           # 2 already clustered: skipped
    npath = write_mentions(new, tmp_path / "new.parquet")
    a = add(tmp_path / "mem", npath, model=model_dir, out=tmp_path / "amem", progress=False)
    b = add(tmp_path / "str", npath, model=model_dir, out=tmp_path / "astr", progress=False)
    assert _bytes(tmp_path / "amem") == _bytes(tmp_path / "astr")
    for k in ("n_mentions", "n_blocks", "n_clusters", "n_singletons", "n_joined_existing", "n_new_clusters",
              "n_skipped_duplicates", "weakest_merges"):
        assert a[k] == b[k], k
    assert b["n_old_ids_changed"] == 0 and b["n_skipped_duplicates"] == 2
    old = pd.read_csv(tmp_path / "str" / "clusters.csv", dtype=str, keep_default_na=False)
    now = pd.read_csv(tmp_path / "astr" / "clusters.csv", dtype=str, keep_default_na=False)
    assert now.iloc[:len(old)].equals(old)                              # old rows and ids as they were
    m = read_manifest(tmp_path / "astr")
    new_file = b["read_selectively"]["encodings_file_new"]
    assert new_file in m["files"] and (tmp_path / "astr" / new_file).stat().st_size > 0
    blocks = pd.read_csv(tmp_path / "astr" / "blocks.csv", dtype=str, keep_default_na=False)
    g_new = new_file[len("encodings-g"):-len(".npz")].lstrip("0") or "0"
    assert blocks["group"].str.split().map(lambda gs: g_new in gs).sum() == new["block"].nunique()
    # adds chain: a second add onto the first reads the new file too
    more = mentions_factory(n_blocks=3, per=2, n_authors=2, seed=12)
    more["mention_id"] = "k" + more["mention_id"]
    c = add(tmp_path / "astr", write_mentions(more, tmp_path / "more.parquet"), model=model_dir,
            out=tmp_path / "a3", progress=False)
    d = add(tmp_path / "amem", tmp_path / "more.parquet", model=model_dir, out=tmp_path / "a3m", progress=False)
    assert _bytes(tmp_path / "a3") == _bytes(tmp_path / "a3m") and c["n_clusters"] == d["n_clusters"]


def test_add_keeps_a_recorded_block_prior_while_the_block_grows_little(tmp_path, model_dir, mentions_factory):
    from coref.jobs.incremental import KEEP_PRIOR_FRACTION
    from coref.model import load_model

    df = mentions_factory(n_blocks=2, per=30, n_authors=3, seed=7)
    predict(write_mentions(df, tmp_path / "m.parquet"), model=model_dir, out=tmp_path / "p", progress=False,
            stream=True, group_mentions=20)
    model = load_model(model_dir)[0]

    def estimate(rows):
        return model.block_shift(model.encode(rows.sort_values("mention_id", key=lambda s: s.astype(str))))

    def recorded(d):
        return pd.read_csv(d / "blocks.csv", dtype=str, keep_default_na=False).set_index("block")["prior_shift"]

    b1, b2 = sorted(df["block"].unique())
    old = recorded(tmp_path / "p")
    for b in (b1, b2):               # each block's estimate, written so that it reads back exactly
        assert float(old[b]) == estimate(df[df["block"] == b])
    # b1 grows by 2 of 30 (<= 10%): its recorded shift is kept; b2 by 10 of 30: estimated again
    assert 2 <= KEEP_PRIOR_FRACTION * 30 < 10
    new = pd.concat([df[df["block"] == b1].iloc[:2], df[df["block"] == b2].iloc[:10]], ignore_index=True)
    new["mention_id"] = "n" + new["mention_id"].astype(str)
    s = add(tmp_path / "p", write_mentions(new, tmp_path / "new.parquet"), model=model_dir, out=tmp_path / "a",
            progress=False)
    assert s["n_blocks_prior_kept"] == 1
    now = recorded(tmp_path / "a")
    grown = pd.concat([df, new], ignore_index=True)
    assert now[b1] == old[b1] and float(now[b1]) != estimate(grown[grown["block"] == b1])
    assert float(now[b2]) == estimate(grown[grown["block"] == b2]) != float(old[b2])
    # revisit: old mentions may move, every touched block is estimated again
    r = add(tmp_path / "p", tmp_path / "new.parquet", model=model_dir, out=tmp_path / "r", progress=False,
            revisit=True)
    assert r["n_blocks_prior_kept"] == 0
    assert float(recorded(tmp_path / "r")[b1]) == estimate(grown[grown["block"] == b1])


def test_add_refuses_an_edited_encodings_file_of_a_touched_block(table, tmp_path, model_dir):
    path = write_mentions(table, tmp_path / "m.parquet")
    predict(path, model=model_dir, out=tmp_path / "str", progress=False, stream=True, group_mentions=1000)
    # the file replaced and the manifest re-signed would still be refused by content; here the manifest check fires
    f = tmp_path / "str" / "encodings-g00000.npz"
    f.write_bytes(f.read_bytes()[:-10])
    with pytest.raises(Exception, match="encodings-g00000.npz"):
        add(tmp_path / "str", write_mentions(table.iloc[:3].assign(mention_id=["x1", "x2", "x3"]),
                                             tmp_path / "n.parquet"), model=model_dir, out=tmp_path / "a",
            progress=False)


def test_add_hashes_only_the_encodings_it_reads_and_passes_the_others_on_with_their_recorded_digest(
        table, tmp_path, model_dir):
    """An untouched block's encodings file is linked, not read: it is checked by size and time, and
    its recorded SHA-256 goes into the new manifest, where the next reader hashes it."""
    import os

    from coref.outputs import OutputError

    path = write_mentions(table, tmp_path / "m.parquet")
    predict(path, model=model_dir, out=tmp_path / "str", progress=False, stream=True, group_mentions=20)
    m = read_manifest(tmp_path / "str")
    blocks = pd.read_csv(tmp_path / "str" / "blocks.csv", dtype=str, keep_default_na=False)
    first = blocks["block"].iloc[0]
    g = sorted(f for f in m["files"] if f.startswith("encodings-g"))
    touched = {streaming.encodings_file(int(x)) for x in blocks["group"].iloc[0].split()}
    other = next(f for f in g if f not in touched)
    f = tmp_path / "str" / other
    st, data = f.stat(), bytearray(f.read_bytes())
    data[-1] ^= 1                                                   # same size, time kept: stat cannot tell
    f.write_bytes(bytes(data))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    new = table[table["block"] == first].iloc[:2].assign(mention_id=["x1", "x2"])
    add(tmp_path / "str", write_mentions(new, tmp_path / "n.parquet"), model=model_dir, out=tmp_path / "a",
        progress=False)
    m2 = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert m2["files"][other]["sha256"] == m["files"][other]["sha256"]      # the recorded claim, passed on
    with pytest.raises(OutputError, match=f"{other}: SHA-256 differs"):    # and checked by the next reader
        read_manifest(tmp_path / "a")
    os.utime(f)                                                     # now newer than the manifest: hashed, refused
    with pytest.raises(OutputError, match=f"{other}: SHA-256 differs"):
        add(tmp_path / "str", tmp_path / "n.parquet", model=model_dir, out=tmp_path / "b", progress=False)


def test_sampling_summary_of_a_tally_is_that_of_the_blocks(table, model_dir, tmp_path):
    path = write_mentions(table, tmp_path / "m.parquet")
    a = predict(path, model=model_dir, out=tmp_path / "mem", progress=False, stream=False)
    from coref.settings import make_settings

    settings = make_settings("predict", sampler="auto", gibbs_params=a["settings"]["gibbs_params"])
    blocks = a["sampling"]["blocks"]
    s = sampling_summary(settings, sampling_tally(blocks))
    assert s["text"] == a["sampling"]["text"] and s["n_blocks"] == a["sampling"]["n_blocks"]
    assert s["n_one_mention"] == sum(b["n_mentions"] <= 1 for b in blocks)
    assert sampler_choices([], settings)["text"] == "Sampler `auto`: no blocks."


def test_table_batches_name_a_broken_file(tmp_path):
    p = tmp_path / "x.parquet"
    p.write_bytes(b"not parquet")
    with pytest.raises(Exception, match="cannot read Parquet"):
        list(table_batches(p, "parquet"))
    assert group_file(3) == "g00003.parquet"


def test_importing_the_outputs_does_not_import_the_samplers(tmp_path):
    code = "import sys, coref.outputs; assert 'coref.inference' not in sys.modules and 'coref.gibbs' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path)


@pytest.mark.slow
def test_streamed_groups_on_two_dask_workers_give_the_same_clusters(table, tmp_path, model_dir):
    path = write_mentions(table, tmp_path / "m.parquet")
    predict(path, model=model_dir, out=tmp_path / "one", progress=False, stream=True, group_mentions=15)
    b = predict(path, model=model_dir, out=tmp_path / "two", progress=False, stream=True, group_mentions=15,
                workers=2)
    assert b["executor"].startswith("dask LocalCluster (2 workers")
    assert _bytes(tmp_path / "one") == _bytes(tmp_path / "two")
    assert _bytes(tmp_path / "one", "blocks.csv") == _bytes(tmp_path / "two", "blocks.csv")


def test_linked_files_keep_their_checked_digest_unless_changed(tmp_path):
    from coref.outputs import OutputDir, sha256_file
    from coref.settings import make_settings

    src, src2 = tmp_path / "src.bin", tmp_path / "src2.bin"
    src.write_bytes(b"abc")
    src2.write_bytes(b"abc")
    settings = make_settings("predict")
    with OutputDir(tmp_path / "o", "predict") as od:
        od.link(src, "a.bin", "0" * 64)                   # a (deliberately wrong) digest said to be checked
        od.link(src2, "b.bin", "1" * 64)
        with open(od.path("b.bin"), "ab") as fh:          # changed after the link: hashed again
            fh.write(b"d")
        m = od.finish(settings=settings)
    assert m["files"]["a.bin"]["sha256"] == "0" * 64
    assert m["files"]["b.bin"]["sha256"] == sha256_file(tmp_path / "o" / "b.bin") != "1" * 64


def test_add_clusters_takes_old_encodings_in_parts_and_returns_the_new_ones(table, model_dir):
    from coref.encoding.mentions import encode_parts
    from coref.jobs.incremental import add_clusters
    from coref.model import load_model
    from coref.settings import make_settings

    model, _ = load_model(model_dir)
    old, new = table.iloc[:40].reset_index(drop=True), table.iloc[40:].reset_index(drop=True)
    old = old[old["block"] != ""].reset_index(drop=True)
    new = new[new["block"] != ""].reset_index(drop=True)
    settings = make_settings("add", sampler="auto", n_sweeps=3)
    from coref.jobs.clusters import predict_clusters

    old_clusters, _ = predict_clusters(old, model, make_settings("predict"))
    enc = encode_parts(old.drop(columns="gold"), model.vocabulary_)
    one, i1 = add_clusters(model, old, old_clusters, new, settings, old_encodings=enc, return_encodings=True)
    two, i2 = add_clusters(model, old, old_clusters, new, settings,
                           old_encodings=[enc.take(np.arange(20, len(enc))), enc.take(np.arange(20))],
                           return_encodings="new")
    assert one.equals(two)
    assert i2["encodings"].mention_id.tolist() == new["mention_id"].tolist()
    assert i1["encodings"].mention_id.tolist()[len(old):] == new["mention_id"].tolist()


def test_a_bad_file_leaves_no_block_groups_and_an_interrupted_run_says_where_they_are(table, tmp_path, model_dir,
                                                                                      monkeypatch):
    from coref.exceptions import MentionFormatError

    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not really")
    with pytest.raises(MentionFormatError, match="cannot read Parquet") as e:
        predict(bad, model=model_dir, out=tmp_path / "o", progress=False, stream=True)
    assert not (tmp_path / "o").exists() and "not created" in " ".join(e.value.__notes__)
    path = write_mentions(table, tmp_path / "m.parquet")

    def boom(*args):
        raise RuntimeError("worker lost")

    monkeypatch.setattr(streaming, "cluster_group", boom)
    with pytest.raises(RuntimeError, match="worker lost") as e:
        predict(path, model=model_dir, out=tmp_path / "o", progress=False, stream=True, group_mentions=9)
    assert "run the same command again to resume" in " ".join(e.value.__notes__)
    assert len(list((tmp_path / "o" / ".checkpoint").glob("stream-*/plan.json"))) == 1


def test_stream_settings_give_auto_a_fixed_factor_matrix_budget():
    from coref.jobs.clusters import with_auto_budget
    from coref.settings import make_settings

    auto = make_settings("predict", sampler="auto")
    assert dict(with_auto_budget(auto, 1024.0).gibbs_params) == {"factor_cache_mb": 1024.0}
    assert with_auto_budget(auto, 1024.0).samplers == auto.samplers and auto.gibbs_params == ()

    auto = make_settings("predict", sampler="auto")
    got = streaming.stream_settings(auto)
    assert dict(got.gibbs_params) == {"factor_cache_mb": streaming.STREAM_FACTOR_CACHE_MB}
    assert got.key() != auto.key() and got.gibbs_kwargs("auto")["factor_cache_mb"] == 128.0
    given = make_settings("predict", sampler="auto", gibbs_params={"factor_cache_mb": 300.0})
    racing = make_settings("predict", sampler="racing")
    assert streaming.stream_settings(given) is given and streaming.stream_settings(racing) is racing


def test_blocks_over_the_stream_budget_are_sampled_by_racing(table, tmp_path, model_dir, monkeypatch):
    path = write_mentions(table, tmp_path / "m.parquet")
    sizes = table.groupby("block").size()
    n_cut = int(sizes[sizes > 1].min())     # blocks of more than n_cut mentions: over the budget
    monkeypatch.setattr(streaming, "STREAM_FACTOR_CACHE_MB", 8.0 * n_cut * n_cut / 2.0**20)
    b = predict(path, model=model_dir, out=tmp_path / "str", progress=False, stream=True, group_mentions=15)
    blocks = pd.read_csv(tmp_path / "str" / "blocks.csv", keep_default_na=False)
    assert (blocks["n_mentions"] > n_cut).any() and (blocks["n_mentions"] <= n_cut).any()
    want = np.where((blocks["n_mentions"] > n_cut) | (blocks["n_mentions"] == 1), "racing", "exact-cached")
    assert blocks["sampler"].tolist() == want.tolist()
    assert blocks.loc[blocks["n_mentions"] > n_cut, "why"].str.contains("over the budget").all()
    assert b["sampling"]["max_cached_n"] == n_cut
