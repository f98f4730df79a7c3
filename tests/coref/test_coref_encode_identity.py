"""The split encoder (per-mention pieces + block assembly) equals the reference encoder bit for bit."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from coref.encoding import EncodedBlock, MentionEncoding, Vocabulary, assemble_block, encode_mentions, encode_parts

from ._legacy_encode import legacy_encode_mentions

SHARED = Path(__file__).resolve().parents[2] / "data" / "aminer_na"


def assert_same_block(a, b):
    """Every field of two EncodedBlocks equal: same dtype, same shape, same bits."""
    import dataclasses

    for f in dataclasses.fields(EncodedBlock):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert isinstance(y, np.ndarray), f.name
            assert x.dtype == y.dtype, (f.name, x.dtype, y.dtype)
            assert x.shape == y.shape, (f.name, x.shape, y.shape)
            assert x.tobytes() == y.tobytes(), f.name
        else:
            assert type(x) is type(y) and x == y, (f.name, x, y)


def _mention(mid, block, name="Jian Xin Wang", co=(), title="", venue="", year=None, affil="", abstract=None,
             keywords=None):
    return dict(mention_id=mid, block=block, name=name, coauthors=None if co is None else list(co), title=title, venue=venue,
                year=year, affiliation=affil, abstract=abstract, keywords=keywords)


def _frame(rows, optional=True):
    df = pd.DataFrame(rows)
    df["year"] = df["year"].astype("Int64")
    if not optional:
        df = df.drop(columns=["abstract", "keywords"])
    return df


def _corpus():
    """A small fitted corpus (known words) for the vocabulary."""
    rows = [_mention(f"c{i}", "C", name=f"A{i} Lee", co=[f"X{i % 3} Y", "Bo Li"], title=f"graph mining {w}",
                     venue="international conference data engineering" if i % 2 else "ICDE",
                     year=2000 + i, affil="dept computer science univ", abstract=f"we study {w} graphs",
                     keywords=["graph", w]) for i, w in enumerate(
        ["kernels", "streams", "privacy", "learning", "queries", "index", "joins", "sketch"] * 6)]
    return _frame(rows)


def _edge_blocks():
    """Blocks that exercise the corners: empty fields, one mention, unseen words (repeated, met in
    different orders by different blocks), conflicting coauthor first names, acronyms."""
    b1 = [  # unseen words with counts 1 and 2: the row norm sums them in the block's first-meeting order
        _mention("a1", "B1", title="zeta zeta alpha graph", co=["J. Smith", "John Smith", "Jane Smith"],
                 venue="very large data bases", year=2001, abstract="omega omega omega beta", keywords=["zz", "aa"]),
        _mention("a2", "B1", name="J. Wang", title="alpha zeta quux quux quux", co=["J. Smith"], venue="VLDB",
                 year=1999, affil="Univ Foo", abstract="beta omega"),
        _mention("a3", "B1", name="Jianxin Wang", title="", co=[], venue="", year=None, affil="null"),
        _mention("a4", "B1", name="Jian-Xin K. Wang", title="quux zeta", co=["Bo Li", "J Smith", "Bo  Li"],
                 venue="vldb journal", year=2010, keywords=[]),
    ]
    b2 = [  # the same unseen words first met in another order
        _mention("b1", "B2", title="quux alpha alpha zeta", co=["Bo Li"], year=2005, abstract="beta beta omega"),
        _mention("b2", "B2", title="zeta quux", co=["Bo Li", "Ann Lee"], year=2006, abstract="omega"),
    ]
    b3 = [_mention("c1", "B3", name="Wang", title="graph", co=["X1 Y"], year=2003)]  # one mention, one-token name
    b4 = [_mention(f"d{i}", "B4", name=None if i == 0 else "Li Na", title=None, venue=None, affil=None,
                   co=None if i == 0 else ["Na Li"]) for i in range(3)]  # missing everything
    return _frame(b1 + b2 + b3 + b4)


def _check_all(df, voc):
    enc = encode_parts(df, voc)
    for b, idx in df.groupby("block", sort=False).indices.items():
        ref = legacy_encode_mentions(df.iloc[idx], voc)
        assert_same_block(assemble_block(enc.take(idx)), ref)   # batch of all blocks, then assembled
        assert_same_block(encode_mentions(df.iloc[idx], voc), ref)


def test_edge_blocks_equal_the_reference_bit_for_bit():
    voc = Vocabulary.fit(_corpus(), n_topics=4)
    df = _edge_blocks()
    _check_all(df, voc)
    _check_all(df.iloc[::-1].reset_index(drop=True), voc)                  # other row order, other first meetings
    _check_all(_frame(_edge_blocks().to_dict("records"), optional=False).assign(
        abstract=None).drop(columns=["abstract"]), voc)                      # optional columns absent
    # a vocabulary fitted on the block itself (encode_mentions(df) without one)
    for _, idx in df.groupby("block").indices.items():
        if len(idx) > 1:
            assert_same_block(encode_mentions(df.iloc[idx]), legacy_encode_mentions(df.iloc[idx]))


def test_unseen_words_are_weighted_per_mention_whatever_the_block():
    """The reference sorts a row's unseen words by word before its L2 norm (scipy sorts the
    indices when the counts are scaled), so a row's weights do not depend on the block; with
    counts 2, 1, 4, 1 (n_docs = 48) another summation order would show in the last bit."""
    import math

    from ._legacy_encode import _legacy_tfidf

    from coref.encoding.text import field_texts

    voc = Vocabulary.fit(_corpus(), n_topics=4)
    assert voc.n_docs == 48
    C = math.log(1.0 + 48) + 1.0

    def norm(counts):
        s = 0.0
        for c in counts:
            s += (c * C) * (c * C)
        return math.sqrt(s)

    assert norm([2, 1, 4, 1]) != norm([1, 4, 1, 2])
    df = _frame([_mention("p0", "B0", title="wthree wtwo wone wzero"),           # meets them in reverse
                 _mention("p1", "B1", title="wzero wzero wone wtwo wtwo wtwo wtwo wthree")])
    batch = _legacy_tfidf(voc, "title", field_texts(df, "title"))[1]
    alone = _legacy_tfidf(voc, "title", field_texts(df.iloc[[1]], "title"))
    assert batch.data.tobytes() == alone.data.tobytes()
    # sorted by word: wone 1, wthree 1, wtwo 4, wzero 2
    np.testing.assert_array_equal(alone.data, np.array([1, 1, 4, 2]) * C / norm([1, 1, 4, 2]))
    enc = encode_parts(df, voc)
    got = assemble_block(enc.take([1]))
    assert got.ti_w[:-1].tobytes() == alone.data.tobytes()
    assert_same_block(got, legacy_encode_mentions(df.iloc[[1]], voc))
    assert_same_block(assemble_block(enc.take([0])), legacy_encode_mentions(df.iloc[[0]], voc))


def test_shipped_blocks_equal_the_reference_bit_for_bit(aminer_dir):
    from coref.inputs import resolve_model
    from coref.io import load_mentions

    df = load_mentions(aminer_dir, format="aminer")
    df = df[0] if isinstance(df, tuple) else df
    voc = resolve_model(None)[0].vocabulary_
    groups = df.groupby("block").indices
    names = sorted(groups)[::9]                                             # 12 of the 108 blocks
    sub = df[df["block"].isin(names)].reset_index(drop=True)
    enc = encode_parts(sub, voc)
    for b, idx in sub.groupby("block").indices.items():
        assert_same_block(assemble_block(enc.take(idx)), legacy_encode_mentions(sub.iloc[idx], voc))


def test_vocabulary_tables_reproduce_sklearn_transforms():
    from ._legacy_encode import _legacy_tfidf, _legacy_topics

    corpus = _corpus()
    voc = Vocabulary.fit(corpus, n_topics=4)
    back = Vocabulary.from_state(voc.to_state())                            # no sklearn objects built
    assert "vectorizers" not in back._sk and "topic_svd" not in back._sk
    df = pd.concat([corpus, _edge_blocks()], ignore_index=True)
    for f in ("title", "venue", "affiliation", "abstract", "keywords"):
        texts = [str(t) if isinstance(t, str) else "" for t in df[f].tolist()] if f != "keywords" else \
            [" ; ".join(k) if isinstance(k, list) else "" for k in df[f].tolist()]
        for v in (voc, back):
            a, b = v.tfidf(f, texts), _legacy_tfidf(voc, f, texts)
            assert a.shape == b.shape
            np.testing.assert_array_equal(a.indptr, b.indptr)
            np.testing.assert_array_equal(a.indices, b.indices)
            assert a.data.tobytes() == b.data.tobytes()
    assert back.topics(df).tobytes() == _legacy_topics(voc, df).tobytes()
    assert back.topics(df).shape == (len(df), 4)


def test_take_concat_and_compact_keep_the_assembly():
    voc = Vocabulary.fit(_corpus(), n_topics=4)
    df = _edge_blocks()
    whole = encode_parts(df, voc)
    halves = MentionEncoding.concat([encode_parts(df.iloc[:5], voc), encode_parts(df.iloc[5:], voc)])
    assert halves.mention_id.tolist() == whole.mention_id.tolist()
    halves.validate(voc)
    for _, idx in df.groupby("block").indices.items():
        ref = assemble_block(whole.take(idx))
        assert_same_block(assemble_block(halves.take(idx)), ref)
        assert_same_block(assemble_block(whole.take(idx).compact()), ref)
    with pytest.raises(ValueError, match="different vocabularies"):
        MentionEncoding.concat([whole, encode_parts(df, Vocabulary.fit(df.iloc[:3], n_topics=4))])


def test_encodings_file_round_trip_and_refusals(tmp_path):
    from coref.outputs import EncodingsError, read_encodings, write_encodings

    voc = Vocabulary.fit(_corpus(), n_topics=4)
    df = _edge_blocks()
    enc = encode_parts(df, voc)
    p = tmp_path / "encodings.npz"
    write_encodings(p, enc, model_sha256="ab" * 32)
    order = df["mention_id"].tolist()[::-1]
    back = read_encodings(p, model_sha256="ab" * 32, mention_ids=order, vocabulary=voc)
    assert back.mention_id.tolist() == order
    for _, idx in df.groupby("block").indices.items():
        rows = [order.index(m) for m in df["mention_id"].iloc[idx]]
        assert_same_block(assemble_block(back.take(rows)), assemble_block(enc.take(idx)))
    with pytest.raises(EncodingsError, match=r"encodings.npz: header field 'model_json_sha256'.*another model"):
        read_encodings(p, model_sha256="cd" * 32, mention_ids=order)
    with pytest.raises(EncodingsError, match=r"encodings.npz: covers 10 mentions; the clustering has 9"):
        read_encodings(p, model_sha256="ab" * 32, mention_ids=order[:9])
    with pytest.raises(EncodingsError, match="another vocabulary"):
        read_encodings(p, model_sha256="ab" * 32, mention_ids=order, vocabulary=Vocabulary.fit(df, n_topics=2))

    def tampered(name, value):
        with np.load(p, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        arrays[name] = value(arrays[name])
        q = tmp_path / "bad.npz"
        np.savez(q, **arrays)
        return q

    cases = [("array__ti_ids", lambda a: a.astype(np.int64), "'ti_ids' must be a int32 array"),
             ("array__co_ptr", lambda a: a[:-1], "'co_ptr' has shape"),
             ("array__ck_fn", lambda a: a + 1000, "'ck_fn' indexes outside table 'fn'"),
             ("array__ve_ids", lambda a: a + 10 ** 6, "'ve_ids' has column ids outside"),
             ("array__ti_w", lambda a: -a, "'ti_w' must hold finite weights > 0"),
             ("table__co", lambda a: a[::-1], "table 'co' must be sorted"),
             ("array__topic", lambda a: a[:, :2], "'topic' has shape"),
             ("header", lambda a: np.array("{}"), "header field 'format'")]
    for name, change, msg in cases:
        with pytest.raises(EncodingsError, match="bad.npz: .*" + msg.replace("(", r"\(")):
            read_encodings(tampered(name, change), model_sha256="ab" * 32, mention_ids=order, vocabulary=voc)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(EncodingsError, match="junk.npz: unreadable"):
        read_encodings(tmp_path / "junk.npz", model_sha256="ab" * 32, mention_ids=order)


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 5])
def test_encoding_in_batches_assembles_the_same_blocks(chunk_size):
    """encode_parts(..., chunk_size=k) (batches joined by MentionEncoding.concat) gives the reference blocks."""
    voc = Vocabulary.fit(_corpus(), n_topics=4)
    df = _edge_blocks()
    enc = encode_parts(df, voc, chunk_size=chunk_size)
    assert len(enc) == len(df) and list(enc.mention_id) == df["mention_id"].astype(str).tolist()
    for _, idx in df.groupby("block", sort=False).indices.items():
        assert_same_block(assemble_block(enc.take(idx)), legacy_encode_mentions(df.iloc[idx], voc))


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_encoding_batch_size_is_checked(bad):
    with pytest.raises(ValueError, match="chunk_size must be an int >= 1"):
        encode_parts(_edge_blocks(), None, chunk_size=bad)
