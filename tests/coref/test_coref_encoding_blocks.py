"""Block encoding: known values of a tiny block, and the ways to the same EncodedBlock
(``encode_mentions``, ``encode_parts`` + ``assemble_block``, batches, take / concat / compact,
the saved ``encodings.npz``) agree."""
import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from coref.encoding import EncodedBlock, MentionEncoding, Vocabulary, assemble_block, encode_mentions, encode_parts

#: relative tolerance of float arrays computed by different code (kernel vs twin): sums
#: of squares in another order differ by a few ulps (measured: <= 6e-16)
RTOL = 1e-12


def assert_same_block(a, b, *, rtol=0.0):
    """Every field of two EncodedBlocks equal: same dtype and shape; integer arrays and the
    other fields exactly; float arrays (and ``block_stats``) bit for bit when ``rtol`` is 0,
    else to ``rtol`` relative (``assert_allclose``, no absolute slack)."""
    for f in dataclasses.fields(EncodedBlock):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert isinstance(y, np.ndarray), f.name
            assert x.dtype == y.dtype, (f.name, x.dtype, y.dtype)
            assert x.shape == y.shape, (f.name, x.shape, y.shape)
            if x.dtype.kind == "f" and rtol:
                np.testing.assert_allclose(x, y, rtol=rtol, atol=0, err_msg=f.name)
            else:
                assert x.tobytes() == y.tobytes(), f.name
        elif f.name == "block_stats" and rtol:
            assert type(x) is type(y) and len(x) == len(y), f.name
            np.testing.assert_allclose(x, y, rtol=rtol, atol=0, err_msg=f.name)
        else:
            assert type(x) is type(y) and x == y, (f.name, x, y)


def _mention(mid, block, name="Jian Xin Wang", co=(), title="", venue="", year=None, affil="", abstract=None,
             keywords=None):
    return dict(mention_id=mid, block=block, name=name, coauthors=None if co is None else list(co), title=title,
                venue=venue, year=year, affiliation=affil, abstract=abstract, keywords=keywords)


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
    b1 = [  # unseen words with counts 1 and 2
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


def _blocks_of(df, enc):
    """{block: assemble_block of its rows of ``enc``} (``enc`` rows = ``df`` rows)."""
    return {b: assemble_block(enc.take(idx)) for b, idx in df.groupby("block", sort=False).indices.items()}


# --------------------------------------------------------------------------- known values

def test_a_tiny_block_encodes_to_known_values():
    """Three mentions, the vocabulary fitted on them (3 documents: no topic model)."""
    df = _frame([
        _mention("a", "W", name="Wei Wang", co=["Bo Li", "Ann Lee"], title="Graph mining graphs", year=2001),
        _mention("b", "W", name="W. Wang", co=["Bo Li"], title="graph", year=2003),
        _mention("c", "W", name="Wen Wang", co=[], title="", year=None),
    ])
    blk = encode_mentions(df)
    close = dict(rtol=RTOL, atol=0)
    assert blk.n == 3 and blk.mention_id == ("a", "b", "c") and blk.n_topics == 0
    # coauthors: codes by first appearance (ann lee, bo li: sorted per mention), IDF log(4 / (1 + df)) + 1
    assert blk.co_ptr.tolist() == [0, 2, 3, 3] and blk.co_ids.tolist() == [0, 1, 1, 0]
    idf1, idf2 = math.log(4 / 2) + 1, math.log(4 / 3) + 1
    np.testing.assert_allclose(blk.co_w, [idf1, idf2, idf2, 0.0], **close)
    # shared-coauthor components and their sizes, year ranges
    assert blk.comp1.tolist() == [0, 0, 1] and blk.comp2.tolist() == [0, 1, 2] and blk.comp3.tolist() == [0, 0, 1]
    np.testing.assert_allclose(blk.comp1_logsize, [math.log(2), math.log(2), 0.0], **close)
    assert blk.year.tolist() == [2001, 2003, -1]
    assert blk.comp_ymin.tolist() == [2001, -1, -1] and blk.comp_ymax.tolist() == [2003, -1, -1]
    # names: "W." has no full first name; two full first names with the initial w
    assert blk.first_code.tolist() == [0, -1, 1] and blk.first_init.tolist() == [ord("w")] * 3
    np.testing.assert_allclose(blk.name_rarity, [math.log(3), 0.0, math.log(3)], **close)
    np.testing.assert_allclose(blk.init_amb, [math.log(3)] * 3, **close)
    # title TF-IDF (words: graph (plural stemmed) twice in a, mining once; smooth IDF, rows L2-normalised)
    g, m = math.log(4 / 3) + 1, math.log(4 / 2) + 1
    assert blk.ti_ptr.tolist() == [0, 2, 3, 3] and blk.ti_ids.tolist() == [0, 1, 0, 0]
    na = math.hypot(2 * g, m)
    np.testing.assert_allclose(blk.ti_w, [2 * g / na, m / na, 1.0, 0.0], **close)
    # the title profile of component 0 (a + b) and the block statistics
    sg, sm = 2 * g / na + 1.0, m / na
    assert blk.pt_ptr.tolist() == [0, 2, 2, 2] and blk.pt_ids.tolist() == [0, 1, 0]
    np.testing.assert_allclose(blk.pt_w, [sg / math.hypot(sg, sm), sm / math.hypot(sg, sm), 0.0], **close)
    np.testing.assert_allclose(blk.block_stats, [2 / 3, (sg * sg + sm * sm) / 4, 0.0, 0.0, 0.0], **close)


def test_unseen_words_are_weighted_per_mention_whatever_the_block():
    """A row's unseen words are weighted and normalised by the row alone (IDF of document frequency
    0, log(1 + n_docs) + 1), so the weights do not depend on the block or the batch."""
    voc = Vocabulary.fit(_corpus(), n_topics=4)
    assert voc.n_docs == 48
    C = math.log(1.0 + 48) + 1.0
    df = _frame([_mention("p0", "B0", title="wthree wtwo wone wzero"),           # meets them in reverse
                 _mention("p1", "B1", title="wzero wzero wone wtwo wtwo wtwo wtwo wthree")])
    enc = encode_parts(df, voc)
    alone = assemble_block(encode_parts(df.iloc[[1]], voc))
    got = assemble_block(enc.take([1]))
    assert_same_block(got, alone)
    # sorted by word: wone 1, wthree 1, wtwo 4, wzero 2
    w = np.array([1, 1, 4, 2]) * C
    np.testing.assert_allclose(got.ti_w[:-1], w / np.sqrt(np.sum(w * w)), rtol=RTOL)
    assert got.ti_ids[:-1].tolist() == [voc.n_words("title") + k for k in range(4)]
    assert_same_block(assemble_block(enc.take([0])), assemble_block(encode_parts(df.iloc[[0]], voc)))


# --------------------------------------------------------------------------- the same block every way

def _check_all(df, voc):
    """encode_mentions of each block == assemble_block of its rows of one batch of all blocks."""
    for b, blk in _blocks_of(df, encode_parts(df, voc)).items():
        idx = np.flatnonzero((df["block"] == b).to_numpy())
        assert_same_block(blk, encode_mentions(df.iloc[idx], voc))


def test_edge_blocks_encode_the_same_alone_and_in_a_batch():
    voc = Vocabulary.fit(_corpus(), n_topics=4)
    df = _edge_blocks()
    _check_all(df, voc)
    _check_all(df.iloc[::-1].reset_index(drop=True), voc)                  # other row order, other first meetings
    _check_all(_frame(_edge_blocks().to_dict("records"), optional=False), voc)   # optional columns absent
    # a vocabulary fitted on the block itself (encode_mentions(df) without one)
    for _, idx in df.groupby("block").indices.items():
        if len(idx) > 1:
            sub = df.iloc[idx]
            assert_same_block(encode_mentions(sub), assemble_block(encode_parts(sub, Vocabulary.fit(sub))))


def test_missing_optional_columns_encode_as_missing_values():
    """Absent ``abstract`` / ``keywords`` columns give the same block as columns of missing values."""
    voc = Vocabulary.fit(_corpus(), n_topics=4)
    df = _edge_blocks()
    absent = _frame(df.to_dict("records"), optional=False)
    empty = df.assign(abstract=None, keywords=None)
    for b, blk in _blocks_of(absent, encode_parts(absent, voc)).items():
        assert_same_block(blk, _blocks_of(empty, encode_parts(empty, voc))[b])
        assert blk.ab_ptr[-1] == 0 and blk.kw_ptr[-1] == 0


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


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 5])
def test_encoding_in_batches_assembles_the_same_blocks(chunk_size):
    """encode_parts(..., chunk_size=k) (batches joined by MentionEncoding.concat) gives the same blocks."""
    voc = Vocabulary.fit(_corpus(), n_topics=4)
    df = _edge_blocks()
    enc = encode_parts(df, voc, chunk_size=chunk_size)
    assert len(enc) == len(df) and list(enc.mention_id) == df["mention_id"].astype(str).tolist()
    ref = _blocks_of(df, encode_parts(df, voc))
    for b, blk in _blocks_of(df, enc).items():
        assert_same_block(blk, ref[b])


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_encoding_batch_size_is_checked(bad):
    with pytest.raises(ValueError, match="chunk_size must be an int >= 1"):
        encode_parts(_edge_blocks(), None, chunk_size=bad)


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
    # a repeated mention id, with or without the ids asked for (a file read as it is: coref add)
    twice = tampered("mention_id", lambda a: np.r_[a[:1], a[:-1]])
    for ids in (order, None):
        with pytest.raises(EncodingsError, match="bad.npz: mention_id values repeat"):
            read_encodings(twice, model_sha256="ab" * 32, mention_ids=ids, vocabulary=voc, check_digest=False)
    assert read_encodings(p, model_sha256="ab" * 32, mention_ids=None).mention_id.tolist() == order[::-1]
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(EncodingsError, match="junk.npz: unreadable"):
        read_encodings(tmp_path / "junk.npz", model_sha256="ab" * 32, mention_ids=order)
