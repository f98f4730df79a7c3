"""Terms that compare two coauthor components as wholes are damped by min(1, K / sqrt(|A| |B|)).

phi[20..23] and phi[47] of a pair (i, j) in different comp1 components A, B depend on A
and B only, so a cluster holding both counts them |A| |B| times; beyond K^2 pairs
(K = ``COMPONENT_DAMPING``) the kernel scales them by K / sqrt(|A| |B|).  Checked here
against values computed independently from the encoding's profiles, and compiled
against the pure-Python twin, on a block with two big components and a small one.
"""
import numpy as np
import pandas as pd
import pytest

from coref.factors import _factors, _factors_py
from coref.factors.names import COMPONENT_DAMPING, FEATURE_NAMES, N_FEATURES

COMP_FEATURES = ("comp_title_cos", "comp_venue_cos", "comp_affil_cos", "comp_year_gap", "comp_topic_cos")


def test_compiled_constant_is_the_documented_one():
    assert _factors.comp_damping == COMPONENT_DAMPING


def _group(prefix, n, coauthors, words, venue, year0, affil):
    """n mentions that all list the same coauthors (one dense comp1 component)."""
    rows = []
    for k in range(n):
        rows.append({"mention_id": f"{prefix}{k:03d}", "block": "w wang", "name": "Wei Wang",
                     "coauthors": list(coauthors), "title": " ".join(words[k % 3:k % 3 + 4]),
                     "venue": venue, "year": year0 + k % 5, "affiliation": affil if k % 2 else ""})
    return rows


@pytest.fixture(scope="module")
def block(shipped_model_and_data):
    _, model = shipped_model_and_data
    field = ["graph", "mining", "query", "database", "index", "stream", "sensor"]
    rows = (_group("a", 30, ["Li Na", "Zhou Bo", "Sun Yi"], field, "VLDB", 2001, "Tsinghua University")
            + _group("b", 24, ["Ma Lin", "Xu Fei", "He Jun"], field[1:] + ["privacy"], "ICDE", 2012, "Fudan University")
            + _group("c", 5, ["Gao Yu", "Hu Lei"], field[2:] + ["web"], "VLDB", 2004, ""))
    df = pd.DataFrame(rows)
    df["year"] = df["year"].astype("Int64")
    return model, model.encode(df)


def _sizes(enc):
    comp = np.asarray(enc.comp1, dtype=np.int64)[: enc.n]
    return comp, np.bincount(comp, minlength=enc.n)


def _undamped(enc, ci, cj):
    """The five component terms of (ci, cj) from the profiles, without damping (numpy)."""
    def row(pre, c):
        ptr = np.asarray(getattr(enc, pre + "_ptr"))
        ids = np.asarray(getattr(enc, pre + "_ids"))[ptr[c]:ptr[c + 1]]
        w = np.asarray(getattr(enc, pre + "_w"))[ptr[c]:ptr[c + 1]]
        return dict(zip(ids.tolist(), w.tolist()))

    def dot(pre):
        a, b = row(pre, ci), row(pre, cj)
        return sum(v * b[k] for k, v in a.items() if k in b)
    y0a, y1a, y0b, y1b = (int(enc.comp_ymin[ci]), int(enc.comp_ymax[ci]), int(enc.comp_ymin[cj]),
                          int(enc.comp_ymax[cj]))
    gap = max(y0a - y1b, y0b - y1a, 0)
    k = int(enc.n_topics)
    topic = np.asarray(enc.comp_topic)
    return np.array([dot("pt"), dot("pv"), dot("pa"), min(gap, 30) / 10.0,
                     float(topic[ci * k:(ci + 1) * k] @ topic[cj * k:(cj + 1) * k]) if k else 0.0])


def test_block_has_two_big_components_and_a_small_one(block):
    _, enc = block
    comp, size = _sizes(enc)
    assert sorted(size[size > 0].tolist()) == [5, 24, 30]


@pytest.mark.parametrize("memo", [True, False])
def test_component_terms_are_damped_beyond_k_squared_pairs(block, memo):
    _, enc = block
    comp, size = _sizes(enc)
    cols = [FEATURE_NAMES.index(f) for f in COMP_FEATURES]
    first = {int(s): int(np.flatnonzero(size[comp] == s)[0]) for s in (30, 24, 5)}
    pairs = [(first[30], first[24]), (first[24], first[30]), (first[30], first[5]), (first[5], first[24])]
    I = np.array([p[0] for p in pairs], np.int64)
    J = np.array([p[1] for p in pairs], np.int64)
    phi = np.empty((len(I), N_FEATURES))
    _factors.pair_features(enc, I, J, phi, memo=memo)
    for r, (i, j) in enumerate(pairs):
        a, b = size[comp[i]], size[comp[j]]
        damp = min(1.0, COMPONENT_DAMPING / np.sqrt(a * b))
        want = _undamped(enc, comp[i], comp[j]) * damp
        np.testing.assert_allclose(phi[r, cols], want, rtol=1e-12, atol=1e-12, err_msg=f"{a} x {b}")
    # 30 x 24 = 720 pairs > 400: damped; 30 x 5 and 5 x 24 (<= 400): not
    assert COMPONENT_DAMPING / np.sqrt(30 * 24) < 1.0 <= COMPONENT_DAMPING / np.sqrt(30 * 5)
    assert phi[0, cols[0]] > 0.0 and phi[0, cols[3]] > 0.0   # the test compares non-zero terms


def test_compiled_equals_twin_on_every_pair(block):
    model, enc = block
    I, J = np.triu_indices(enc.n, 1)
    I, J = np.r_[I, J].astype(np.int64), np.r_[J, I].astype(np.int64)
    a, b = np.empty((len(I), N_FEATURES)), np.empty((len(I), N_FEATURES))
    _factors.pair_features(enc, I, J, a)
    _factors_py.pair_features(enc, I, J, b)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    theta = np.ascontiguousarray(model.theta_, dtype=np.float64)
    m1, m2 = np.empty((enc.n, enc.n)), np.empty((enc.n, enc.n))
    _factors.factor_matrix(enc, theta, float(model.bias_), m1, memo=True)
    _factors.factor_matrix(enc, theta, float(model.bias_), m2, memo=False)
    np.testing.assert_array_equal(m1, m2)                  # compiled paths: bit for bit


def test_damped_terms_stay_in_the_racing_bound_intervals(block):
    """The small-arm bound's per-feature intervals (coref.gibbs.arm_bound) hold the damped values."""
    from coref.gibbs import arm_bound
    from coref.factors.names import N_BASE

    _, enc = block
    I, J = np.where(~np.eye(enc.n, dtype=bool))
    I, J = I.astype(np.int64), J.astype(np.int64)
    phi = np.empty((len(I), N_FEATURES))
    _factors.pair_features(enc, I, J, phi)
    lo0, hi0, _, _ = arm_bound.feature_intervals(enc)
    comp, size = _sizes(enc)
    other = (comp[I] != comp[J]) & (size[comp[I]] * size[comp[J]] > COMPONENT_DAMPING ** 2)
    assert other.sum() == 2 * 30 * 24                     # the damped pairs, both orders
    for who in (I, J):
        assert (phi[other, :N_BASE] >= lo0[:, who[other]].T - 1e-12).all()
        assert (phi[other, :N_BASE] <= hi0[:, who[other]].T + 1e-12).all()
