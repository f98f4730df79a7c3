"""Encoding and the pairwise factor kernel vs its pure-Python twin."""
import numpy as np
import pandas as pd
import pytest

from coref.factors import _factors, _factors_py
from coref.blocking import normalize_name
from coref.encoding import Vocabulary, encode_mentions, words
from coref.factors.names import FEATURE_GROUPS, FEATURE_LABELS, FEATURE_NAMES, N_FEATURES


def _block():
    return pd.DataFrame({
        "mention_id": ["a", "b", "c", "d", "e"],
        "block": ["B"] * 5,
        "name": ["Wei Wang", "Wei Wang", "W. Wang", "Wen Wang", "Wang"],
        "coauthors": [["Jiawei Han", "Philip S. Yu"], ["Jiawei Han"], [], ["Philip S. Yu", "Jiawei Han", "X"],
                      ["Ann Lee"]],
        "title": ["Mining frequent patterns", "Frequent pattern mining in graphs", "Protein folding",
                  "Graph mining systems", ""],
        "venue": ["KDD", "KDD", "Bioinformatics", "ICDM", ""],
        "year": pd.array([2001, 2003, None, 1990, 2001], dtype="Int64"),
        "affiliation": ["UCLA", "UCLA", "", "Univ. of Illinois", "UCLA"],
        "gold": pd.array(["x", "x", "y", "x", None], dtype="string"),
    })


def test_normalize_and_words():
    assert normalize_name("Jason Tsong-Li Wang") == "jason tsong-li wang"
    assert normalize_name("O'Brien") == "obrien"
    assert normalize_name("José  Müller") == "jose muller"
    assert words("The Mining of Frequent Patterns") == ["mining", "frequent", "pattern"]


def test_encoding_shapes_and_sorted_ids():
    enc = encode_mentions(_block())
    assert enc.n == 5 and len(FEATURE_NAMES) == N_FEATURES == _factors.n_features
    for p, ids in ((enc.co_ptr, enc.co_ids), (enc.ti_ptr, enc.ti_ids), (enc.af_ptr, enc.af_ids)):
        assert p.shape == (6,) and p[0] == 0 and ids.shape[0] == p[-1] + 1
        for r in range(5):
            row = ids[p[r]:p[r + 1]]
            assert np.all(np.diff(row) > 0)
    assert list(enc.year) == [2001, 2003, -1, 1990, 2001]
    assert enc.affil_id[2] == -1 and enc.affil_id[0] == enc.affil_id[1] == enc.affil_id[4]


def test_hand_features():
    enc = encode_mentions(_block())
    I = np.array([0, 0, 1, 2], np.int64)
    J = np.array([3, 1, 2, 3], np.int64)
    phi = np.empty((4, N_FEATURES))
    _factors.pair_features(enc, I, J, phi)
    # (0, 3): 2 shared coauthors out of a union of 3
    assert phi[0, 0] == pytest.approx(np.log(3.0))
    assert phi[0, 1] == pytest.approx(2 / 3)
    assert phi[0, 3] == 1.0 and phi[0, 5] == 1.0 and phi[0, 4] == 0.0
    assert phi[0, 12] == pytest.approx(1.1) and phi[0, 13] == pytest.approx(1.21)
    assert phi[0, 15] == 0.5  # Wei vs Wen: same initial, different first name
    # (0, 1): same venue, same affiliation, one shared coauthor
    assert phi[1, 8] == 1.0 and phi[1, 11] == 1.0 and phi[1, 9] == pytest.approx(1.0)
    assert phi[1, 15] == 1.0
    # (1, 2): mention 2 has no coauthors, no year, no affiliation
    assert phi[2, 4] == 1.0 and phi[2, 14] == 1.0 and phi[2, 10] == 1.0 and phi[2, 0] == 0.0
    assert phi[2, 15] == 0.5
    # coauthor-graph components: a, b, d are linked through Jiawei Han; c is alone
    assert phi[0, 17] == 1.0 and phi[1, 17] == 1.0 and phi[2, 17] == 0.0
    assert phi[0, 19] == pytest.approx(np.log(3.0))
    assert phi[2, 20] == 0.0  # no title word in common between the two components
    # block constants: log n and the component fraction (3 components of 5 mentions)
    assert np.all(phi[:, 27] == pytest.approx(np.log(5.0)))
    assert np.all(phi[:, 28] == pytest.approx(3 / 5))
    # interaction copies: phi[nb + k] = phi[k] * same_comp1
    nb = N_FEATURES // 2
    np.testing.assert_array_equal(phi[:, nb:], phi[:, :nb] * phi[:, [17]])


def _pairs_both(enc, theta, shift, I, J):
    """pair_features and pair_factors of the pairs (I, J), from the kernel and its twin (equal);
    returns the kernel's (phi, f)."""
    a, b = np.empty((len(I), N_FEATURES)), np.empty((len(I), N_FEATURES))
    _factors.pair_features(enc, I, J, a)
    _factors_py.pair_features(enc, I, J, b)
    np.testing.assert_array_equal(a, b)
    fa, fb = np.empty(len(I)), np.empty(len(I))
    _factors.pair_factors(enc, theta, shift, I, J, fa)
    _factors_py.pair_factors(enc, theta, shift, I, J, fb)
    np.testing.assert_array_equal(fa, fb)
    return a, fa


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kernel_matches_twin(seed):
    rng = np.random.default_rng(seed)
    enc = encode_mentions(_block())
    theta = rng.normal(size=N_FEATURES)
    I = rng.integers(0, 5, size=40).astype(np.int64)
    J = rng.integers(0, 5, size=40).astype(np.int64)
    _pairs_both(enc, theta, 0.3, I, J)
    ma, mb = np.empty((5, 5)), np.empty((5, 5))
    _factors.factor_matrix(enc, theta, -1.0, ma)
    _factors_py.factor_matrix(enc, theta, -1.0, mb)
    np.testing.assert_array_equal(ma, mb)
    assert np.allclose(ma, ma.T) and np.all(np.diag(ma) == 0)
    assert _factors.factor_rate(enc, theta, 0.1, 17) == _factors_py.factor_rate(enc, theta, 0.1, 17)


def test_encode_errors():
    with pytest.raises(TypeError, match="DataFrame"):
        encode_mentions([1, 2])
    with pytest.raises(ValueError, match="missing the mention column"):
        encode_mentions(_block().drop(columns=["title"]))
    with pytest.raises(ValueError, match="theta must have"):
        _factors.pair_factors(encode_mentions(_block()), np.zeros(3), 0.0, np.zeros(1, np.int64),
                              np.zeros(1, np.int64), np.empty(1))


# ----------------------------------------------------------------------------- new evidence
F = {name: k for k, name in enumerate(FEATURE_NAMES)}


def _rich_block():
    """Mentions with abstracts / keywords (some missing) and name variants."""
    return pd.DataFrame({
        "mention_id": [f"m{k}" for k in range(8)],
        "block": ["j wang"] * 8,
        "name": ["Jie Wang", "J. Wang", "Jian Wang", "Jian-Hua Wang", "J. H. Wang", "J. K. Wang",
                 "Jianhua Wang", "Wang"],
        "coauthors": [["John Smith", "Ann Lee"], ["J. Smith"], ["Jane Smith"], [], ["A. Lee"], [],
                      ["Bob Stone"], []],
        "title": ["Graph mining at scale", "Scalable graph mining", "Protein folding dynamics",
                  "Mining frequent graph patterns", "Protein structure prediction", "Graph kernels",
                  "Frequent subgraph mining", "Untitled"],
        "venue": ["ICDE", "International Conference on Data Engineering", "Bioinformatics", "KDD",
                  "KDD Workshops", "", "KDD", "null"],
        "year": pd.array([2001, 2003, None, 1990, 2001, 2010, 1995, None], dtype="Int64"),
        "affiliation": ["UCLA", "", "MIT", "UCLA", "", "", "", ""],
        "abstract": ["We mine large graphs with sampling.", "Sampling large graphs for mining.", pd.NA,
                     "", "Protein structures predicted.", None, "Frequent subgraphs in large graphs.",
                     pd.NA],
        "keywords": [["graph mining", "sampling"], ["graph mining"], [], [], ["protein"], [],
                     ["subgraph mining", "graph mining"], []],
        "gold": pd.array(["a", "a", "b", "c", "b", "d", "c", None], dtype="string"),
    })


def _phi(enc, pairs):
    I = np.array([p[0] for p in pairs], np.int64)
    J = np.array([p[1] for p in pairs], np.int64)
    out = np.empty((len(pairs), N_FEATURES))
    _factors.pair_features(enc, I, J, out)
    return out


def test_labels_and_groups_cover_every_feature():
    groups = {"coauthors", "title", "venue", "affiliation", "year", "name", "abstract", "keywords", "block"}
    assert set(FEATURE_LABELS) == set(FEATURE_GROUPS) == set(FEATURE_NAMES)
    assert set(FEATURE_GROUPS.values()) == groups
    assert all(isinstance(v, str) and v for v in FEATURE_LABELS.values())
    assert len(set(FEATURE_LABELS.values())) == N_FEATURES  # no two features read the same


def test_name_variant_features():
    enc = encode_mentions(_rich_block())
    pairs = [(0, 1), (0, 2), (3, 4), (4, 5), (3, 6), (0, 7), (0, 0)]
    phi = _phi(enc, pairs)
    # Jie vs J.: agree only through the initial, no conflict
    assert phi[0, F["name_init_only"]] == 1.0 and phi[0, F["name_first_conflict"]] == 0.0
    assert phi[0, F["name_first_eq"]] == 0.0
    # Jie vs Jian: two different full first names
    assert phi[1, F["name_first_conflict"]] == 1.0 and phi[1, F["name_init_only"]] == 0.0
    # Jian-Hua vs J. H.: initials "jh" and "jh" compatible, no middle conflict
    assert phi[2, F["name_init_only"]] == 1.0 and phi[2, F["name_middle_conflict"]] == 0.0
    # J. H. vs J. K.: middle initials differ
    assert phi[3, F["name_middle_conflict"]] == 1.0 and phi[3, F["name_init_only"]] == 0.0
    # Jian-Hua vs Jianhua: hyphen dropped in the full forms, first name "jianhua" both
    assert phi[4, F["name_full_eq"]] == 1.0 and phi[4, F["name_first_eq"]] == 1.0
    # rarity: "jianhua" is 2 of 8 mentions
    assert phi[4, F["name_rarity"]] == pytest.approx(-np.log(2 / 8))
    # a name with no given name conflicts with nothing and matches nothing
    assert phi[5, F["name_first_conflict"]] == 0.0 and phi[5, F["name_init_only"]] == 0.0
    # initial ambiguity: "j" stands for jie, jian, jianhua in this block
    assert phi[0, F["name_init_ambiguity"]] == pytest.approx(np.log(4.0))


def test_split_given_names_and_unicode_hyphens_agree():
    df = _rich_block()
    df.loc[5, "name"] = "Jian Hua Wang"
    df.loc[7, "name"] = "Jian\u2010Hua Wang"  # Crossref's U+2010 hyphen
    enc = encode_mentions(df)
    phi = _phi(enc, [(5, 6), (6, 5), (7, 3), (5, 2)])
    # "Jian Hua" / "Jianhua": first names "jian" and "jianhua" differ, whole given names agree
    assert phi[0, F["name_first_eq"]] == 1.0 and phi[0, F["name_first_conflict"]] == 0.0
    assert phi[0, F["name_full_eq"]] == 1.0
    np.testing.assert_array_equal(phi[0], phi[1])  # symmetric, rarity included
    assert phi[2, F["name_first_eq"]] == 1.0  # U+2010 reads as "-"
    # "Jian Hua" / "Jian": same first name, different given names
    assert phi[3, F["name_first_eq"]] == 1.0 and phi[3, F["name_full_eq"]] == 0.0
    I, J = np.triu_indices(8, 1)
    a, b = np.empty(len(I)), np.empty(len(I))
    theta = np.random.default_rng(0).normal(size=N_FEATURES)
    _factors.pair_factors(enc, theta, 0.0, I.astype(np.int64), J.astype(np.int64), a)
    _factors.pair_factors(enc, theta, 0.0, J.astype(np.int64), I.astype(np.int64), b)
    np.testing.assert_array_equal(a, b)


def test_coauthor_name_compatibility():
    enc = encode_mentions(_rich_block())
    phi = _phi(enc, [(0, 1), (0, 2), (0, 4)])
    # John Smith vs J. Smith: compatible; not the same normalised string
    assert phi[0, F["co_compat_log_count"]] == pytest.approx(np.log(2.0))
    assert phi[0, F["co_conflict_log_count"]] == 0.0 and phi[0, F["co_log_count"]] == 0.0
    # John Smith vs Jane Smith: same initial + last name, clashing first names
    assert phi[1, F["co_conflict_log_count"]] == pytest.approx(np.log(2.0))
    assert phi[1, F["co_compat_log_count"]] == 0.0
    assert phi[1, F["co_init_log_count"]] == pytest.approx(np.log(2.0))
    # Ann Lee vs A. Lee
    assert phi[2, F["co_compat_log_count"]] == pytest.approx(np.log(2.0))


def test_venue_acronym_and_containment():
    enc = encode_mentions(_rich_block())
    phi = _phi(enc, [(0, 1), (3, 4), (3, 6), (0, 2), (5, 6)])
    assert phi[0, F["venue_acronym"]] == 1.0 and phi[0, F["venue_eq"]] == 0.0
    assert phi[1, F["venue_contain"]] == 1.0 and phi[1, F["venue_acronym"]] == 0.0
    assert phi[2, F["venue_contain"]] == 0.0 and phi[2, F["venue_eq"]] == 1.0  # equal is not "contains"
    assert phi[3, F["venue_acronym"]] == 0.0 and phi[3, F["venue_contain"]] == 0.0
    assert phi[4, F["venue_contain"]] == 0.0  # a missing venue contains nothing


def test_abstract_and_keywords_missing_is_never_a_match():
    enc = encode_mentions(_rich_block())
    # (2, 5): both abstracts missing (NA, None); (3, 7): "" and NA; (0, 1): both present
    phi = _phi(enc, [(2, 5), (3, 7), (0, 1), (0, 6), (2, 3)])
    for r in (0, 1, 4):
        assert phi[r, F["abstract_cos"]] == 0.0 and phi[r, F["abstract_missing"]] == 1.0
        assert phi[r, F["keyword_cos"]] == 0.0 and phi[r, F["keyword_missing"]] == 1.0
    assert 0.0 < phi[2, F["abstract_cos"]] <= 1.0 and phi[2, F["abstract_missing"]] == 0.0
    assert phi[2, F["keyword_cos"]] > 0.0 and phi[3, F["keyword_cos"]] > 0.0
    # cosine of L2-normalised TF-IDF rows: recompute for (0, 1) from the CSR arrays
    a = dict(zip(enc.ab_ids[enc.ab_ptr[0]:enc.ab_ptr[1]], enc.ab_w[enc.ab_ptr[0]:enc.ab_ptr[1]]))
    b = dict(zip(enc.ab_ids[enc.ab_ptr[1]:enc.ab_ptr[2]], enc.ab_w[enc.ab_ptr[1]:enc.ab_ptr[2]]))
    assert phi[2, F["abstract_cos"]] == pytest.approx(sum(a[k] * b[k] for k in a if k in b))
    assert sum(v * v for v in a.values()) == pytest.approx(1.0)


def test_optional_columns_absent_equals_all_missing():
    df = _rich_block()
    empty = df.assign(abstract=pd.NA, keywords=[[] for _ in range(len(df))])
    absent = df.drop(columns=["abstract", "keywords"])
    pairs = [(i, j) for i in range(8) for j in range(8)]
    np.testing.assert_array_equal(_phi(encode_mentions(empty), pairs), _phi(encode_mentions(absent), pairs))
    phi = _phi(encode_mentions(absent), pairs)
    assert np.all(phi[:, F["abstract_missing"]] == 1.0) and np.all(phi[:, F["keyword_missing"]] == 1.0)


def _corpus():
    df = _rich_block()
    return pd.concat([df.assign(mention_id=df["mention_id"] + f"_{k}", block=f"b{k}") for k in range(6)],
                     ignore_index=True)


def test_topics_unit_norm_and_kernel_matches_twin_with_every_field():
    corpus = _corpus()
    voc = Vocabulary.fit(corpus, n_topics=4)
    assert voc.n_topics == 4
    enc = encode_mentions(_rich_block(), voc)
    T = enc.topic[:-1].reshape(enc.n, enc.n_topics)
    norms = np.sqrt((T * T).sum(axis=1))
    assert np.allclose(norms[norms > 0], 1.0) and (norms > 0).sum() >= 7
    rng = np.random.default_rng(5)
    I = rng.integers(0, 8, size=60).astype(np.int64)
    J = rng.integers(0, 8, size=60).astype(np.int64)
    theta = rng.normal(size=N_FEATURES)
    a, _ = _pairs_both(enc, theta, 0.2, I, J)
    assert np.any(a[:, F["topic_cos"]] != 0.0)
    np.testing.assert_array_equal(a[:, F["topic_drift"]], a[:, F["topic_cos"]] * a[:, F["year_gap"]])


def test_unseen_words_still_match():
    voc = Vocabulary.fit(_rich_block().iloc[:2])
    df = _rich_block().iloc[[2, 4]].reset_index(drop=True)  # "protein" never seen in the fit
    phi = _phi(encode_mentions(df, voc), [(0, 1)])
    assert phi[0, F["title_cos"]] > 0.0


def test_vocabulary_state_round_trip_and_validation():
    import json

    voc = Vocabulary.fit(_corpus(), n_topics=4)
    state = json.loads(json.dumps(voc.to_state()))
    back = Vocabulary.from_state(state)
    e1, e2 = encode_mentions(_rich_block(), voc), encode_mentions(_rich_block(), back)
    pairs = [(i, j) for i in range(8) for j in range(8)]
    np.testing.assert_array_equal(_phi(e1, pairs), _phi(e2, pairs))
    bad = json.loads(json.dumps(state))
    bad["fields"]["title"]["idf"][0] = "x"
    with pytest.raises(ValueError, match="'title'.*idf"):
        Vocabulary.from_state(bad)
    bad = json.loads(json.dumps(state))
    bad["topic"]["components"][0] = bad["topic"]["components"][0][:-1]
    with pytest.raises(ValueError, match="components"):
        Vocabulary.from_state(bad)
    bad = json.loads(json.dumps(state))
    del bad["fields"]["abstract"]
    with pytest.raises(ValueError, match="abstract"):
        Vocabulary.from_state(bad)
    with pytest.raises(ValueError, match="n_docs"):
        Vocabulary.from_state({**state, "n_docs": -1})
    with pytest.raises(ValueError, match="version 2"):
        Vocabulary.from_state({"tables": {}})


@pytest.mark.parametrize("seed", [0, 1])
def test_components_match_brute_force(seed):
    from coref.encoding.components import token_list_components

    rng = np.random.default_rng(seed)
    lists = [sorted(set(rng.integers(0, 12, size=rng.integers(0, 4)).tolist())) for _ in range(25)]
    for min_shared in (1, 2):
        lab = token_list_components(lists, min_shared)
        # brute force: union-find over pairs with >= min_shared shared tokens
        parent = list(range(25))

        def find(a):
            while parent[a] != a:
                a = parent[a]
            return a

        for i in range(25):
            for j in range(i + 1, 25):
                if len(set(lists[i]) & set(lists[j])) >= min_shared:
                    parent[find(j)] = find(i)
        for i in range(25):
            for j in range(25):
                assert (lab[i] == lab[j]) == (find(i) == find(j))
        assert lab[0] == 0 and lab.max() < 25


def test_venue_acronym_matches_its_own_expansion_only():
    """vt ids are va's acronym codes: "ICDE" links to the ICDE expansion, not to the first acronym.

    Before 0.3 the vt ids were renumbered by first appearance in vt, so with VLDB's acronym coded
    first, "ICDE" (vt = [icde code 1] -> renumbered 0) matched the VLDB expansion instead.
    """
    df = pd.DataFrame({
        "mention_id": ["v", "i", "x"], "block": ["B"] * 3, "name": ["Wei Wang"] * 3,
        "coauthors": [[], [], []], "title": ["", "", ""],
        "venue": ["Very Large Data Bases", "International Conference Data Engineering", "ICDE"],
        "year": pd.array([None] * 3, dtype="Int64"), "affiliation": ["", "", ""],
    })
    enc = encode_mentions(df)
    k = FEATURE_NAMES.index("venue_acronym")
    I = np.array([2, 2, 0], np.int64)
    J = np.array([1, 0, 1], np.int64)
    phi = np.empty((3, N_FEATURES))
    _factors.pair_features(enc, I, J, phi)
    assert phi[:, k].tolist() == [1.0, 0.0, 0.0]
    twin = np.empty_like(phi)
    _factors_py.pair_features(enc, I, J, twin)
    assert np.array_equal(phi, twin)


def test_union_of_string_tables_equals_numpy_unique():
    """MentionEncoding.concat's table merge == np.unique of the concatenation (values and dtype),
    for sorted unique tables (merged) and for any others (sorted)."""
    from coref.encoding._arrays import union_sorted

    rng = np.random.default_rng(0)
    words = np.array(["", "a", "ab", "b", "ba", "zz", "\u00e9", "\u65e5\u672c", "a\u0301", "Z", "a much longer word"])
    for k in range(1500):
        x, y = (rng.choice(words, int(rng.integers(0, 7))) for _ in range(2))
        if k % 3:                      # sorted unique tables, as encodings hold them
            x, y = np.unique(x), np.unique(y)
        x = x.astype(f"<U{rng.integers(1, 20)}") if k % 5 == 0 else x.astype(str)   # narrower dtype: cut words
        want = np.unique(np.concatenate([x, y]))
        got = union_sorted(x, y)
        assert got.dtype == want.dtype and np.array_equal(got, want), (x, y)
