"""``coref predict`` saves the per-mention encodings; ``coref add`` reuses them (validated) and
encodes only the new mentions, with the same clusters as encoding everything again."""
import json
import re

import numpy as np
import pandas as pd
import pytest

from coref.jobs.add import add
from coref.jobs.incremental import add_clusters
from coref.io import write_mentions
from coref.model import PairwiseModel, load_model
from coref.outputs import (ENCODINGS_FILE, EncodingsError, manifest_digest, read_encodings, read_manifest, sha256_file,
                           write_encodings)
from coref.jobs.predict import predict
from coref.settings import make_settings


@pytest.fixture(scope="module")
def model_dir(saved_model_factory):
    return saved_model_factory(n_blocks=6, per=12, seed=9)


@pytest.fixture(scope="module")
def split(mentions_factory):
    df = mentions_factory(n_blocks=5, per=12, n_authors=3, seed=4)
    is_new = (np.arange(len(df)) % 4 == 0) | (df["block"] == "Name_4").to_numpy()   # touched and new blocks
    return df[~is_new].reset_index(drop=True), df[is_new].reset_index(drop=True)


def _clusters(d):
    return pd.read_csv(d / "clusters.csv", dtype=str, keep_default_na=False)


def test_add_reuses_saved_encodings_with_the_same_clusters(split, model_dir, tmp_path, monkeypatch):
    import coref.encoding.mentions as features   # predict / add look encode_parts up there

    old, new = split
    predict(old, model=model_dir, out=tmp_path / "P", progress=False)
    m = read_manifest(tmp_path / "P")
    assert ENCODINGS_FILE in m["files"]
    # the saved file covers the clustered mentions, made with this model
    enc = read_encodings(tmp_path / "P" / ENCODINGS_FILE, model_sha256=m["model"]["model_json_sha256"],
                         mention_ids=_clusters(tmp_path / "P")["mention_id"])
    assert len(enc) == len(old)
    # count the mentions encoded from text during add: only the new ones
    seen = []
    real = features.encode_parts

    def counting(df, vocabulary=None):
        seen.append(len(df))
        return real(df, vocabulary)

    monkeypatch.setattr(features, "encode_parts", counting)
    s = add(tmp_path / "P", new, model=model_dir, out=tmp_path / "Q", progress=False)
    assert seen == [len(new)] and s["old_encodings"].startswith("reused ")
    monkeypatch.setattr(features, "encode_parts", real)
    # the same clusters as encoding every old mention again from its text
    model, _ = load_model(model_dir)
    cl, info = add_clusters(model, old, _clusters(tmp_path / "P"), new, make_settings("add"))
    q = _clusters(tmp_path / "Q")
    assert q["cluster_id"].tolist() == cl["cluster_id"].tolist() and info["n_old_ids_changed"] == 0
    # add writes the encodings of its whole output, so a later add can chain
    mq = read_manifest(tmp_path / "Q")
    enc_q = read_encodings(tmp_path / "Q" / ENCODINGS_FILE, model_sha256=mq["model"]["model_json_sha256"],
                           mention_ids=q["mention_id"], vocabulary=model.vocabulary_)
    assert sorted(enc_q.mention_id.tolist()) == sorted(q["mention_id"].tolist())
    more = new.assign(mention_id=new["mention_id"] + "b")
    s2 = add(tmp_path / "Q", more, model=model_dir, out=tmp_path / "Q2", progress=False)
    assert s2["old_encodings"].startswith("reused ") and s2["n_old_ids_changed"] == 0
    assert len(_clusters(tmp_path / "Q2")) == len(old) + 2 * len(new)


def _replace_encodings(d, enc, sha):
    """Put other (internally valid) encodings into output ``d`` and re-sign its manifest."""
    path = d / ENCODINGS_FILE
    write_encodings(path, enc, model_sha256=sha)
    m = json.loads((d / "manifest.json").read_text())
    m["files"][ENCODINGS_FILE] = {"sha256": sha256_file(path), "bytes": path.stat().st_size}
    m["manifest_sha256"] = manifest_digest(m)          # re-signed (issue 28: a manifest carries its checksum)
    (d / "manifest.json").write_text(json.dumps(m))


def test_stale_or_foreign_encodings_are_recomputed_with_a_warning_or_refused_under_strict(
        split, model_dir, tmp_path):
    from coref.encoding import encode_parts

    old, new = split
    predict(old, model=model_dir, out=tmp_path / "P", progress=False)
    base = add(tmp_path / "P", new, model=model_dir, out=tmp_path / "Q0", progress=False)
    model, _ = load_model(model_dir)
    sha = read_manifest(tmp_path / "P")["model"]["model_json_sha256"]
    cases = [
        (encode_parts(old, model.vocabulary_), "0" * 64, "made with another model"),
        (encode_parts(old.iloc[:-3], model.vocabulary_), sha,
         f"covers {len(old) - 3} mentions; the clustering has {len(old)} .3 of them not in the file."),
    ]
    for k, (enc, s, msg) in enumerate(cases):
        _replace_encodings(tmp_path / "P", enc, s)
        with pytest.warns(RuntimeWarning, match=f"P/{ENCODINGS_FILE}: .*{msg}.*encoded again"):
            got = add(tmp_path / "P", new, model=model_dir, out=tmp_path / f"Q{k + 1}", progress=False)
        assert re.search(msg, got["old_encodings"])
        assert _clusters(tmp_path / f"Q{k + 1}").equals(_clusters(tmp_path / "Q0"))
        with pytest.raises(EncodingsError, match=f"P/{ENCODINGS_FILE}: .*{msg}"):
            add(tmp_path / "P", new, model=model_dir, out=tmp_path / "S", strict=True, progress=False)
    # an output without the file (an older version) is recomputed, named
    (tmp_path / "P" / ENCODINGS_FILE).unlink()
    m = json.loads((tmp_path / "P" / "manifest.json").read_text())
    del m["files"][ENCODINGS_FILE]
    m["manifest_sha256"] = manifest_digest(m)
    (tmp_path / "P" / "manifest.json").write_text(json.dumps(m))
    with pytest.warns(RuntimeWarning, match="encodings.npz: not in .*manifest.json"):
        add(tmp_path / "P", new, model=model_dir, out=tmp_path / "Q9", progress=False)
    assert _clusters(tmp_path / "Q9").equals(_clusters(tmp_path / "Q0"))
    assert base["old_encodings"].startswith("reused ")


def test_infer_blocks_refuses_encodings_of_other_rows(split, model_dir):
    from coref.encoding import encode_parts
    from coref.inference import infer_blocks

    old, _ = split
    model, _ = load_model(model_dir)
    enc = encode_parts(old, model.vocabulary_)
    with pytest.raises(ValueError, match="encodings must cover the rows of df in order"):
        infer_blocks(old.iloc[::-1], model, make_settings("predict"), encodings=enc)


def test_blocks_sampled_together_from_encodings_equal_blocks_encoded_one_by_one(split, model_dir):
    from coref.encoding import encode_parts
    from coref.inference import infer_blocks

    old, new = split
    df = pd.concat([old, new], ignore_index=True).drop(columns=["gold"])
    model, _ = load_model(model_dir)
    settings = make_settings("predict", seed=5)
    fixed = np.r_[np.ones(len(old), bool), np.zeros(len(new), bool)]
    initial = np.r_[old["block"].to_numpy(dtype=object) + "/x", np.full(len(new), None, object)]
    for kw in ({}, {"initial": initial, "fixed": fixed}):
        one = infer_blocks(df, model, settings, record_history=False, margins=True, **kw)
        together = infer_blocks(df, model, settings, record_history=False, margins=True,
                                encodings=encode_parts(df, model.vocabulary_), **kw)
        assert [r.block for r in one] == [r.block for r in together]
        for a, b in zip(one, together):
            assert a.mention_id.tolist() == b.mention_id.tolist()
            assert a.cluster_id.tolist() == b.cluster_id.tolist()
            assert a.n_factor_evals == b.n_factor_evals > 0
            np.testing.assert_array_equal(a.margin, b.margin)


def test_gibbs_takes_ready_encodings_without_the_block_frames(model_dir, split, monkeypatch):
    """``GibbsCoref.fit`` with an EncodingCache holding every block's encoding never
    encodes from the DataFrame and gives the clusters of the plain model; a stored encoding
    that does not cover the block's mentions is not used."""
    from coref.encoding import assemble_block, encode_parts
    from coref.gibbs import GibbsCoref
    from coref.encoding import EncodingCache

    model, _ = load_model(model_dir)
    df, _ = split
    df = df.sort_values(["block", "mention_id"]).reset_index(drop=True)
    parts = encode_parts(df, model.vocabulary_)
    encs = {}
    for b, rows in df.groupby("block", sort=True).indices.items():
        mids = df["mention_id"].astype(str).to_numpy(dtype=object)[rows]
        encs[str(b)] = (assemble_block(parts.take(rows)), mids.tolist())

    def cache_of(entries):
        cache = EncodingCache(model)
        for b, (enc, mids) in entries.items():
            cache.put(b, mids, enc)
        return cache
    plain = GibbsCoref(model, rng=3, record_history=False).fit(df)
    seen = []
    real = PairwiseModel.encode
    monkeypatch.setattr(PairwiseModel, "encode",
                        lambda self, d: seen.append(str(d["block"].iloc[0])) or real(self, d))
    ready = GibbsCoref(model, rng=3, record_history=False).fit(df, encodings=cache_of(encs))
    assert seen == []
    assert np.array_equal(ready.cluster_ids_, plain.cluster_ids_)
    assert ready.n_factor_evals_ == plain.n_factor_evals_
    # a stored encoding for other mentions of the block is refused: that block is encoded again
    b0 = sorted(encs)[0]
    wrong = dict(encs)
    wrong[b0] = (encs[b0][0], encs[b0][1][::-1])
    again = GibbsCoref(model, rng=3, record_history=False).fit(df, encodings=cache_of(wrong))
    assert seen == [b0]
    assert np.array_equal(again.cluster_ids_, plain.cluster_ids_)


def test_split_equals_take_of_each_range(split):
    """MentionEncoding.split(bounds)[k] == take(range(bounds[k], bounds[k + 1])), array for array."""
    from coref.encoding import MentionEncoding, Vocabulary, encode_parts

    old, _ = split
    enc = encode_parts(old, Vocabulary.fit(old))
    bounds = [0, 0, 3, 4, 4, len(enc)]             # empty parts too
    parts = enc.split(bounds)
    assert len(parts) == len(bounds) - 1
    for k, p in enumerate(parts):
        want = enc.take(np.arange(bounds[k], bounds[k + 1]))
        assert isinstance(p, MentionEncoding) and len(p) == len(want)
        assert np.array_equal(p.mention_id, want.mention_id)
        assert p.arrays.keys() == want.arrays.keys()
        for name, v in want.arrays.items():
            assert p.arrays[name].dtype == v.dtype and np.array_equal(p.arrays[name], v), name
    for bad in ([1, len(enc)], [0, 5, 3, len(enc)], [0, len(enc) - 1], []):
        with pytest.raises(ValueError, match=f"bounds must run non-decreasing from 0 to {len(enc)}"):
            enc.split(bad)


def test_next_cluster_number_of_a_block():
    """Fresh ids continue after the block's largest number; other blocks and odd ids are ignored."""
    from coref.jobs.incremental import next_cluster_k as _next_k

    ids = ["A/0", "A/3", "A/x", "B/99", "A/12", "A/", "A/1/2", "AA/50"]
    assert _next_k(ids, "A") == 13
    assert _next_k(["a.b/4", "axb/9"], "a.b") == 5        # the block name is text, not a pattern
    assert _next_k(["B/1"], "A") == 0 and _next_k([], "A") == 0


def test_prefetch_assembles_what_lookup_assembles_and_drop_forgets(model_dir, split):
    """``EncodingCache.prefetch`` (one batched components call) stores, array for array, the
    blocks ``lookup`` assembles one by one; blocks with mentions outside the parts are skipped;
    ``drop`` forgets them."""
    from dataclasses import fields

    from coref.encoding import EncodingCache, EncodedBlock, encode_parts

    model, _ = load_model(model_dir)
    df, _ = split
    df = df.sort_values(["block", "mention_id"]).reset_index(drop=True)
    parts = encode_parts(df, model.vocabulary_)
    ids = df["mention_id"].to_numpy(dtype=object)
    frames = [g for _, g in df.groupby("block", sort=True)]
    one_by_one = EncodingCache(model, parts=parts, part_ids=ids)
    batched = EncodingCache(model, parts=parts, part_ids=ids)
    stranger = frames[0].assign(mention_id=frames[0]["mention_id"].astype(str) + "-not-in-parts")
    got = batched.prefetch(frames + [stranger])
    assert got == [str(g["block"].iloc[0]) for g in frames] and len(batched) == len(frames)
    for g in frames:
        b, mids = str(g["block"].iloc[0]), g["mention_id"].to_numpy(dtype=object)
        a, e = batched.lookup(b, mids), one_by_one.lookup(b, mids)   # held (len above) vs assembled
        for f in fields(EncodedBlock):
            x, y = getattr(a, f.name), getattr(e, f.name)
            assert np.array_equal(np.asarray(x), np.asarray(y)), f.name
    assert batched.prefetch(frames) == []          # held already
    batched.drop(got[:2] + ["no-such-block"])
    assert len(batched) == len(frames) - 2


def test_a_dropped_block_is_assembled_again_from_its_remembered_components(model_dir, split, monkeypatch):
    """After ``drop`` the cache keeps each block's coauthor-graph components: ``lookup`` assembles
    the block again without computing them (no ``block_components`` call), array for array equal
    to the first assembly; another set of ids computes them afresh."""
    from dataclasses import fields

    import coref.encoding.cache as cache_mod
    from coref.encoding import EncodingCache, EncodedBlock, encode_parts

    model, _ = load_model(model_dir)
    df, _ = split
    df = df.sort_values(["block", "mention_id"]).reset_index(drop=True)
    parts = encode_parts(df, model.vocabulary_)
    cache = EncodingCache(model, parts=parts, part_ids=df["mention_id"].to_numpy(dtype=object))
    frames = [g for _, g in df.groupby("block", sort=True) if len(g) > 2]
    got = cache.prefetch(frames)
    first = {b: cache.lookup(b, g["mention_id"].to_numpy(dtype=object)) for b, g in zip(got, frames)}
    cache.drop(got)
    assert len(cache) == 0
    calls = []
    real = cache_mod.block_components
    monkeypatch.setattr(cache_mod, "block_components", lambda encs: calls.append(len(encs)) or real(encs))
    for b, g in zip(got, frames):
        again = cache.lookup(b, g["mention_id"].to_numpy(dtype=object))
        for f in fields(EncodedBlock):
            assert np.array_equal(np.asarray(getattr(again, f.name)), np.asarray(getattr(first[b], f.name))), f.name
    assert calls == []
    sub = frames[0].iloc[:-1]                  # other ids: the components are computed for them
    assert cache.lookup(got[0], sub["mention_id"].to_numpy(dtype=object)).n == len(sub)
    assert calls == [1]


def _order_by_groupby(blocks, ids):
    """block_order by its definition: pandas groups in order of first appearance, rows by id inside."""
    out, names = [], []
    for b, idx in pd.Series(np.arange(len(blocks))).groupby(blocks, sort=False):
        idx = idx.to_numpy()
        out.append(idx if ids is None else idx[np.argsort(ids[idx], kind="stable")])
        names.append(b)
    return (np.concatenate(out) if out else np.zeros(0, np.int64)), names


@pytest.mark.parametrize("seed", range(4))
def test_block_order_groups_blocks_by_first_appearance_and_rows_by_id(seed):
    from coref.inference import block_order

    gen = np.random.default_rng(seed)
    for t in range(60):
        n = int(gen.integers(0, 30))
        blocks = np.array([f"b{x}" for x in gen.integers(0, 4, n)], dtype=object)
        ids = np.array([f"m{x:03d}" for x in gen.permutation(n)], dtype=object)
        if t % 3 == 0:                     # rows already in that order: the fast path
            first, _ = _order_by_groupby(blocks, ids)
            blocks, ids = blocks[first], ids[first]
        for by in (ids, None):
            order, names, bounds = block_order(blocks, by)
            want, want_names = _order_by_groupby(blocks, by)
            assert order.tolist() == want.tolist() and names.tolist() == want_names
            assert bounds.tolist() == np.cumsum([0] + [int((blocks == b).sum()) for b in want_names]).tolist()
