"""Encoding and the pairwise factor kernel vs its pure-Python twin."""
import numpy as np
import pandas as pd
import pytest

from coref import _factors, _factors_py
from coref.features import FEATURE_NAMES, N_FEATURES, encode_mentions, normalize_name, words


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


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kernel_matches_twin(seed):
    rng = np.random.default_rng(seed)
    enc = encode_mentions(_block())
    theta = rng.normal(size=N_FEATURES)
    I = rng.integers(0, 5, size=40).astype(np.int64)
    J = rng.integers(0, 5, size=40).astype(np.int64)
    a, b = np.empty((40, N_FEATURES)), np.empty((40, N_FEATURES))
    _factors.pair_features(enc, I, J, a)
    _factors_py.pair_features(enc, I, J, b)
    np.testing.assert_array_equal(a, b)
    fa, fb = np.empty(40), np.empty(40)
    _factors.pair_factors(enc, theta, 0.3, I, J, fa)
    _factors_py.pair_factors(enc, theta, 0.3, I, J, fb)
    np.testing.assert_array_equal(fa, fb)
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
