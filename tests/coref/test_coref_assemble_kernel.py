"""The compiled block assembly (coref.encoding._assemble) equals its pure-numpy twin: integer arrays
exactly, float arrays to a relative 1e-12 (``assert_allclose``), on real, synthetic, edge-case and
random blocks."""
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coref.encoding import MentionEncoding, Vocabulary, assemble_block, assemble_blocks, block_components, encode_parts
from coref.encoding._assemble_py import assemble_block_py
from sampling.utils.kernels import load_kernel

from .test_coref_encoding_blocks import RTOL, _corpus, _edge_blocks, _frame, _mention, assert_same_block

asm = load_kernel("coref.encoding._assemble")


def _check(enc):
    got, ref = assemble_block(enc), assemble_block_py(enc)
    assert_same_block(got, ref, rtol=RTOL)
    return got


def _check_frame(df, voc):
    enc = encode_parts(df, voc)
    for _, idx in df.groupby("block", sort=False).indices.items():
        _check(enc.take(idx))


# --------------------------------------------------------------------------- real and synthetic data

def test_every_shipped_block_equals_the_twin(aminer_dir):
    from coref.inputs import resolve_model
    from coref.io import load_mentions

    df = load_mentions(aminer_dir, format="aminer")
    df = df[0] if isinstance(df, tuple) else df
    voc = resolve_model(None)[0].vocabulary_
    enc = encode_parts(df, voc)
    groups = df.groupby("block").indices
    assert len(groups) == 108
    sizes = []
    for _, idx in groups.items():
        sizes.append(_check(enc.take(idx)).n)
    assert sum(sizes) == len(df)


@pytest.mark.slow
def test_every_block_of_20k_synthetic_mentions_equals_the_twin():
    """All 1,890 blocks of ``coref synth --mentions 20000`` (seed 0), the shipped vocabulary."""
    from coref.inputs import resolve_model
    from coref.synth import synthesize_mentions

    voc = resolve_model(None)[0].vocabulary_
    df = synthesize_mentions(20_000, rng=0)
    enc = encode_parts(df, voc)
    groups = df.groupby("block").indices
    assert len(groups) == 1890
    for _, idx in groups.items():
        _check(enc.take(idx))


def test_synthetic_blocks_equal_the_twin():
    """~300 blocks of synthetic mentions, the vocabulary fitted on another sample (unseen words)."""
    from coref.synth import synthesize_mentions

    voc = Vocabulary.fit(synthesize_mentions(400, rng=7), n_topics=32)
    df = synthesize_mentions(2500, rng=3)
    enc = encode_parts(df, voc)
    groups = df.groupby("block").indices
    assert len(groups) >= 200
    unseen = 0
    for _, idx in groups.items():
        blk = _check(enc.take(idx))
        unseen += int(np.count_nonzero(blk.ti_ids[:-1] >= voc.n_words("title")))
    assert unseen > 0


# --------------------------------------------------------------------------- edge cases

def test_edge_blocks_equal_the_twin():
    voc = Vocabulary.fit(_corpus(), n_topics=4)
    df = _edge_blocks()
    _check_frame(df, voc)
    _check_frame(df.iloc[::-1].reset_index(drop=True), voc)
    _check_frame(_frame(_edge_blocks().to_dict("records"), optional=False), voc)


def test_single_mentions_missing_fields_unseen_words_and_duplicates():
    voc = Vocabulary.fit(_corpus(), n_topics=4)
    rows = [
        _mention("s1", "S1"),                                                   # one mention, nothing but a name
        _mention("n1", "N", co=[], title="graph kernels"),                     # no coauthors in the whole block
        _mention("n2", "N", co=None, title="graph streams", year=2001),
        _mention("m1", "M", name=None, co=None, title=None, venue=None, affil=None, abstract=None,
                 keywords=None),                                               # every field missing
        _mention("m2", "M", name="", co=[], title="", venue="", affil="null", abstract="", keywords=[]),
        _mention("u1", "U", title="zork zork blarg graph", venue="zork conf", affil="blarg lab",
                 abstract="zork", keywords=["blarg", "blarg"], co=["Q. Xu", "Q Xu", "Qi Xu", "Qi  Xu"]),
        _mention("u2", "U", title="blarg zork", venue="ZC", co=["Qi Xu", "Qi Xu", "Bo Li", "Bo Li"]),
        _mention("u3", "U", title="zork", venue="zork conf", co=["Bo Li", "Qi Xu"], year=1990),
    ]
    df = _frame(rows)
    _check_frame(df, voc)
    enc = encode_parts(df, voc)
    blk = _check(enc.take(np.flatnonzero(df["block"].to_numpy() == "U")))
    assert blk.ti_ids[:-1].max() >= voc.n_words("title")                      # unseen words present
    assert blk.comp2.tolist() == [0, 1, 1]                                     # u2, u3 share 2 coauthors
    _check(enc.take([]))                                                       # an empty block


def _random_encoding(seed, *, dup=False):
    """A random MentionEncoding of one block, straight as arrays (tables of the right sizes):
    few distinct tokens (shared ids, equal weights: ties in the profile sort), unseen words,
    optional repeated tokens in a row."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 14))
    k_topics = int(rng.choice([0, 3, 8, 32]))
    a = {}
    tables = {}

    def csr(universe, max_len, *, unique=True, sort=True):
        rows = []
        for _ in range(n):
            m = int(rng.integers(0, max_len + 1))
            if unique:
                row = rng.choice(universe, size=min(m, universe), replace=False) if universe else []
            else:
                row = rng.integers(0, max(universe, 1), size=m if universe else 0)
            row = np.asarray(row, dtype=np.int64)
            rows.append(np.sort(row) if sort else row)
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum([len(r) for r in rows], out=ptr[1:])
        ids = np.concatenate(rows).astype(np.int32) if rows else np.zeros(0, np.int32)
        return ptr, ids

    n_co = int(rng.integers(0, 7))
    a["co_ptr"], a["co_ids"] = csr(n_co, 4, unique=not dup)
    n_vocab = {}
    weights = np.array([0.125, 0.25, 0.5, 0.3, 1.0])
    for f, p, width in (("title", "ti", 40), ("venue", "ve", 60), ("affiliation", "af", 10),
                        ("abstract", "ab", 12), ("keywords", "kw", 6)):
        V = int(rng.integers(0, width // 2 + 1))
        n_un = int(rng.integers(0, 6))
        a[f"{p}_ptr"], a[f"{p}_ids"] = csr(V + n_un, 12)
        a[f"{p}_w"] = rng.choice(weights, size=len(a[f"{p}_ids"]))
        n_vocab[f] = V
        tables[f"u_{f}"] = np.array([f"w{i}" for i in range(n_un)], dtype=str)
    n_vtok = 8
    a["vw_ptr"], a["vw_ids"] = csr(n_vtok, 3)
    a["acr_g"] = rng.integers(-1, n_vtok, size=n).astype(np.int32)
    n_ck, n_fn = int(rng.integers(0, 6)), int(rng.integers(0, 5))
    a["ck_ptr"], a["ck_ids"] = csr(n_ck, 4, unique=not dup, sort=False)
    a["ck_fn"] = rng.integers(-1, n_fn, size=len(a["ck_ids"])).astype(np.int32) if n_fn else \
        np.full(len(a["ck_ids"]), -1, np.int32)
    a["fs_ptr"], a["fs_ids"] = csr(n_fn, 3, sort=False)
    a["year"] = np.where(rng.random(n) < 0.3, -1, rng.integers(1990, 2000, size=n)).astype(np.int32)
    a["first_g"] = rng.integers(-1, 4, size=n).astype(np.int32)
    a["first0"] = np.where(a["first_g"] >= 0, rng.integers(97, 99, size=n), -1).astype(np.int32)
    a["first_init"] = rng.integers(96, 100, size=n).astype(np.int32)
    a["first_init"][a["first_init"] == 96] = -1
    for name in ("given_g", "venue_g", "affil_g", "paper_g"):
        a[name] = rng.integers(-1, 4, size=n).astype(np.int32)
    a["middle"] = rng.integers(0, 2, size=n).astype(np.int32)
    a["init_len"] = rng.integers(0, 4, size=n).astype(np.int32)
    a["init_code"] = rng.integers(0, 1 << 15, size=n).astype(np.int32)
    a["mid_init"] = rng.integers(-1, 123, size=n).astype(np.int32)
    T = rng.standard_normal((n, k_topics)) * np.exp(rng.uniform(-3, 3, size=(n, k_topics)))
    T[rng.random(n) < 0.2] = 0.0
    a["topic"] = T
    for t, size in (("co", n_co), ("vtok", n_vtok), ("ck", n_ck), ("fn", n_fn), ("first", 4), ("given", 4),
                    ("venue", 4), ("affil", 4), ("paper", 4)):
        tables[t] = np.array([f"{t}{i:03d}" for i in range(size)], dtype=str)
    mids = np.array([f"m{i}" for i in range(n)], dtype=object)
    return MentionEncoding(mids, a, tables, n_vocab, k_topics)


@pytest.mark.parametrize("dup", [False, True])
def test_random_encodings_equal_the_twin(dup):
    for seed in range(300):
        enc = _random_encoding(seed, dup=dup)
        if not dup:
            enc.validate()
        _check(enc)


def test_profiles_cut_to_the_top_words_with_ties():
    """One component with 60 venue words of equal summed weight: the top 25 by weight are the
    25 smallest ids (ties broken by id), as in the twin."""
    voc = Vocabulary.fit(_corpus(), n_topics=4)
    words = [f"vx{i:02d}" for i in range(60)]
    rows = [_mention(f"t{i}", "T", co=["Bo Li"], venue=" ".join(words[i::3]), title=" ".join(words[::-1]))
            for i in range(3)]
    df = _frame(rows)
    blk = _check(encode_parts(df, voc).take([0, 1, 2]))
    assert np.diff(blk.pv_ptr).tolist() == [25, 0, 0]
    assert np.diff(blk.pt_ptr).tolist() == [60, 0, 0]


def _chain_encoding(n, k_topics=4):
    """n mentions, mention i with the coauthors i and i + 1 (one comp1 component of size n,
    no comp2 link), every other field empty."""
    a = {}
    empty_ptr = np.zeros(n + 1, dtype=np.int64)
    for p in ("ti", "ve", "af", "ab", "kw"):
        a[f"{p}_ptr"], a[f"{p}_ids"], a[f"{p}_w"] = empty_ptr, np.zeros(0, np.int32), np.zeros(0)
    a["co_ptr"] = np.arange(0, 2 * n + 1, 2, dtype=np.int64)
    a["co_ids"] = (np.arange(n, dtype=np.int32)[:, None] + np.array([0, 1], np.int32)).ravel()
    for p in ("vw", "ck", "fs"):
        a[f"{p}_ptr"], a[f"{p}_ids"] = empty_ptr, np.zeros(0, np.int32)
    a["ck_fn"] = np.zeros(0, np.int32)
    for name in ("year", "first_init", "init_len", "init_code", "mid_init", "first0", "middle", "first_g",
                 "given_g", "venue_g", "affil_g", "acr_g", "paper_g"):
        a[name] = np.full(n, -1, np.int32)
    a["topic"] = np.random.default_rng(n).standard_normal((n, k_topics))
    tables = {t: np.array([f"{t}{i:06d}" for i in range(n + 1 if t == "co" else 0)], dtype=str)
              for t in ("co", "vtok", "ck", "fn", "first", "given", "venue", "affil", "paper")}
    tables.update({f"u_{f}": np.zeros(0, dtype="<U1")
                   for f in ("title", "venue", "affiliation", "abstract", "keywords")})
    n_vocab = {f: 0 for f in ("title", "venue", "affiliation", "abstract", "keywords")}
    return MentionEncoding(np.array([f"m{i}" for i in range(n)], dtype=object), a, tables, n_vocab, k_topics)


def test_component_log_sizes_of_a_large_component():
    """log |comp1| of a component of 9170 mentions (more than the kernel's stack scratch), the
    components given explicitly; by default the chain, larger than MAX_GROUP with no comp2 link,
    is split into single mentions (coref.encoding.components.bounded_groups), as in the twin."""
    from coref.encoding.components import MAX_GROUP

    enc = _chain_encoding(9170)
    enc.validate()
    comps = {"comp1": np.zeros(9170, np.int32), "comp2": np.arange(9170, dtype=np.int32),
             "comp3": np.arange(9170, dtype=np.int32)}
    blk = assemble_block(enc, comps)
    assert blk.comp1.tolist() == [0] * 9170 and blk.comp2.tolist() == list(range(9170))
    np.testing.assert_allclose(blk.comp1_logsize, np.log(9170.0), rtol=RTOL, atol=0)
    assert 9170 > MAX_GROUP
    blk = _check(enc)
    assert blk.comp1.tolist() == list(range(9170)) and blk.comp2.tolist() == list(range(9170))
    np.testing.assert_array_equal(blk.comp1_logsize, np.zeros(9170))


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), dup=st.booleans())
def test_hypothesis_random_encodings_equal_the_twin(seed, dup):
    _check(_random_encoding(seed, dup=dup))


def test_many_blocks_at_once_equal_one_at_a_time():
    """assemble_blocks (components of all blocks in three scipy calls) == assemble_block per block."""
    voc = Vocabulary.fit(_corpus(), n_topics=4)
    df = pd.concat([_edge_blocks(), _corpus()], ignore_index=True)
    enc = encode_parts(df, voc)
    groups = [np.flatnonzero((df["block"] == b).to_numpy()) for b in sorted(df["block"].unique())]
    parts = [enc.take(g) for g in groups]
    many = assemble_blocks(parts)
    assert len(many) == len(parts) >= 4
    for got, p in zip(many, parts):
        assert_same_block(got, assemble_block(p))
        assert_same_block(got, assemble_block_py(p), rtol=RTOL)
    assert assemble_blocks([]) == [] and block_components([]) == []


def test_components_must_be_numbered_by_first_mention():
    voc = Vocabulary.fit(_corpus(), n_topics=4)
    enc = encode_parts(_edge_blocks(), voc).take([0, 1, 2, 3])
    good = block_components([enc])[0]
    nv = enc.n_vocab
    args = (enc.arrays, (nv["title"], nv["venue"], nv["affiliation"], nv["abstract"], nv["keywords"]), len(enc),
            enc.n_topics)
    asm.assemble(*args, good)
    for bad, msg in ((np.array([1, 0, 0, 0], np.int32), "'comp1' is not numbered by first mention at row 0"),
                     (np.array([0, 2, 1, 0], np.int32), "'comp1' is not numbered by first mention at row 1"),
                     (np.array([0, -1, 0, 0], np.int32), "'comp1' is not numbered by first mention at row 1")):
        with pytest.raises(ValueError, match=msg):
            asm.assemble(*args, {**good, "comp1": bad})
    with pytest.raises(ValueError, match="'comp3' has 3 entries, expected 4"):
        asm.assemble(*args, {**good, "comp3": good["comp3"][:3]})
    with pytest.raises(ValueError, match="'comp2' must be a 1-D int32 array; got 1-D int64"):
        asm.assemble(*args, {**good, "comp2": good["comp2"].astype(np.int64)})
    with pytest.raises(ValueError, match="encoding lacks the array 'comp2'"):
        asm.assemble(*args, {"comp1": good["comp1"], "comp3": good["comp3"]})


# --------------------------------------------------------------------------- errors

def test_bad_arrays_are_named():
    voc = Vocabulary.fit(_corpus(), n_topics=4)
    enc = encode_parts(_edge_blocks(), voc).take([0, 1, 2, 3])

    def with_array(name, value):
        return MentionEncoding(enc.mention_id, {**enc.arrays, name: value}, enc.tables, enc.n_vocab, enc.n_topics)

    with pytest.raises(ValueError, match="'co_ids' must be a 1-D int32 array; got 1-D int64"):
        assemble_block(with_array("co_ids", enc.arrays["co_ids"].astype(np.int64)))
    with pytest.raises(ValueError, match="'ti_ptr' has 4 entries, expected 5"):
        assemble_block(with_array("ti_ptr", enc.arrays["ti_ptr"][:-1]))
    with pytest.raises(ValueError, match="'ve_ptr' decreases at row"):
        assemble_block(with_array("ve_ptr", enc.arrays["ve_ptr"][[0, 3, 1, 2, 4]]))
    with pytest.raises(ValueError, match="'ck_fn' has"):
        assemble_block(with_array("ck_fn", enc.arrays["ck_fn"][:-1]))
    with pytest.raises(ValueError, match=r"'topic' must be a float64 array of shape \(4, 4\)"):
        assemble_block(with_array("topic", enc.arrays["topic"][:, :2]))
    with pytest.raises(ValueError, match="lacks the array 'middle'"):
        assemble_block(MentionEncoding(enc.mention_id, {k: v for k, v in enc.arrays.items() if k != "middle"},
                                       enc.tables, enc.n_vocab, enc.n_topics))
    # a non-contiguous array is read as its values
    strided = with_array("year", np.repeat(enc.arrays["year"], 2)[::2])
    assert_same_block(assemble_block(strided), assemble_block(with_array("year", enc.arrays["year"].copy())))


def test_unbuilt_kernel_raises_the_build_hint(monkeypatch):
    import coref.encoding.blocks as blocks

    monkeypatch.setattr(blocks, "_ASSEMBLE", None)
    monkeypatch.setitem(sys.modules, "coref.encoding._assemble", None)
    enc = encode_parts(_edge_blocks(), Vocabulary.fit(_corpus(), n_topics=4)).take([0])
    with pytest.raises(ImportError, match=r"coref\.encoding\._assemble.*not built in this source tree"):
        assemble_block(enc)
