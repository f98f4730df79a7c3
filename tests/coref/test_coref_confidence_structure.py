"""Cluster-structure features of the mention calibration model and the version-3 calibration format."""
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from coref.calibration import (CALIBRATION_VERSIONS, VERSION2_FEATURES, CalibrationMap, ConfidenceCalibration,
                               LogisticMap)
from coref.confidence import (CONFIDENCE_COLUMNS, MENTION_FEATURES, SIZE_INTERACTIONS, STRUCTURE_FEATURES,
                              assignment_confidence, cluster_structure, mention_features, with_calibration)
from tests.coref.test_coref_confidence_api import _clusters, _df, _model


def _csr(rows, dim):
    """CSR arrays (ptr, ids, w) of dense rows, with the trailing padding entry of EncodedBlock."""
    ptr, ids, w = [0], [], []
    for r in rows:
        nz = [(j, float(v)) for j, v in enumerate(r) if v]
        ids += [j for j, _ in nz]
        w += [v for _, v in nz]
        ptr.append(len(ids))
    return np.array(ptr, np.int64), np.array(ids + [0], np.int32), np.array(w + [0.0])


def _enc(title, venue, co, topic, comp1, year):
    n = len(title)
    d = {"n": n, "n_topics": np.asarray(topic).shape[1], "topic": np.append(np.asarray(topic, float).ravel(), 0.0),
         "comp1": np.asarray(comp1, np.int32), "year": np.asarray(year, np.int32)}
    for prefix, rows in (("ti", title), ("ve", venue), ("co", co)):
        d[f"{prefix}_ptr"], d[f"{prefix}_ids"], d[f"{prefix}_w"] = _csr(rows, len(rows[0]))
    return SimpleNamespace(**d)


def _brute(enc, F, P, labels):
    """cluster_structure by loops over mentions and members (the definitions of its docstring)."""
    n = len(labels)

    def unit(rows):
        R = np.asarray(rows, float)
        nr = np.linalg.norm(R, axis=1)
        return R / np.where(nr > 0, nr, 1.0)[:, None], nr > 0

    views = {"title": unit(enc.title), "venue": unit(enc.venue), "coauthor": unit(enc.co),
             "topic": unit(enc.topic_rows)}
    out = {c: np.zeros(n) for c in STRUCTURE_FEATURES}
    out["group_share"] = np.ones(n)
    members = [[j for j in range(n) if labels[j] == labels[i]] for i in range(n)]
    for name, (U, has) in views.items():
        cos, ok = np.zeros(n), np.zeros(n, bool)
        for i in range(n):
            prof = sum((U[j] for j in members[i] if j != i), np.zeros(U.shape[1]))
            if has[i] and np.linalg.norm(prof) > 1e-6:
                cos[i], ok[i] = U[i] @ prof / np.linalg.norm(prof), True
        out[f"fit_{name}"] = cos
        for i in range(n):
            mem = [j for j in members[i] if ok[j]]
            if ok[i] and len(members[i]) > 1:
                out[f"rel_{name}"][i] = cos[i] - np.mean(cos[mem])
    fm = np.array([np.mean([F[i, j] for j in members[i] if j != i]) if len(members[i]) > 1 else 0.0
                   for i in range(n)])
    for i in range(n):
        mem, k = members[i], len(members[i])
        if k == 1:
            continue
        others = [j for j in mem if j != i]
        out["rel_f"][i] = fm[i] - np.mean(fm[mem])
        out["neg_share"][i] = np.mean([F[i, j] < 0 for j in others])
        pairs = [(a, b) for a in mem for b in mem if a != b]
        out["cluster_neg_share"][i] = np.mean([F[a, b] < 0 for a, b in pairs])
        out["cluster_p_low"][i] = np.mean([P[a, b] < 0.5 for a, b in pairs])
        out["single_link"][i] = float(k >= 3 and sum(F[i, j] > 0 for j in others) == 1)
        out["log_groups"][i] = np.log(len({enc.comp1[j] for j in mem}))
        out["group_share"][i] = np.mean([enc.comp1[j] == enc.comp1[i] for j in mem])
        group = [j for j in mem if enc.comp1[j] == enc.comp1[i]]
        rest = [j for j in mem if enc.comp1[j] != enc.comp1[i]]
        if rest:
            out["split_f"][i] = np.mean([F[a, b] for a in group for b in rest])
            out["split"][i] = 1.0
        out["minor_group"][i] = float(len(group) < k / 2)
        ys = [enc.year[j] for j in mem if enc.year[j] >= 0]
        if enc.year[i] >= 0:
            out["year_dev"][i] = min(abs(enc.year[i] - np.median(ys)) / 10.0, 3.0)
    return out


def _tiny():
    title = [[1, 0], [1, 0], [0, 1], [1, 0]]
    enc = _enc(title, venue=[[1, 0]] * 4, co=[[1, 0], [0, 0], [1, 1], [0, 1]],
               topic=[[1, 0], [1, 0], [0, 1], [0, 1]], comp1=[0, 0, 1, 2], year=[2000, 2002, 2030, -1])
    F = np.array([[0, 2.0, -1.0, 0], [2.0, 0, -0.5, 0], [-1.0, -0.5, 0, 3], [0, 0, 3, 0]])
    P = np.array([[1, 0.9, 0.4, 0], [0.9, 1, 0.6, 0], [0.4, 0.6, 1, 0.2], [0, 0, 0.2, 1]])
    return enc, F, P, np.array([0, 0, 0, 1])


def test_structure_exact_on_a_tiny_block():
    enc, F, P, labels = _tiny()
    s = cluster_structure(enc, F, P, labels)
    r = 1 / np.sqrt(2)
    np.testing.assert_allclose(s["fit_title"], [r, r, 0, 0], atol=1e-12)
    np.testing.assert_allclose(s["rel_title"], [r - 2 * r / 3, r - 2 * r / 3, -2 * r / 3, 0], atol=1e-12)
    np.testing.assert_allclose(s["fit_venue"], [1, 1, 1, 0], atol=1e-12)
    np.testing.assert_allclose(s["rel_venue"], 0, atol=1e-12)
    np.testing.assert_allclose(s["fit_coauthor"][[1, 3]], 0, atol=1e-12)     # no coauthors / singleton
    np.testing.assert_allclose(s["neg_share"], [0.5, 0.5, 1, 0])
    np.testing.assert_allclose(s["cluster_neg_share"], [4 / 6, 4 / 6, 4 / 6, 0])
    np.testing.assert_allclose(s["cluster_p_low"], [2 / 6, 2 / 6, 2 / 6, 0])
    np.testing.assert_allclose(s["single_link"], [1, 1, 0, 0])
    np.testing.assert_allclose(s["log_groups"], [np.log(2), np.log(2), np.log(2), 0])
    np.testing.assert_allclose(s["group_share"], [2 / 3, 2 / 3, 1 / 3, 1])
    np.testing.assert_allclose(s["year_dev"], [0.2, 0, 2.8, 0])
    # coauthor groups {0, 1} and {2} of cluster {0, 1, 2}: the pairs between them are f(0, 2), f(1, 2)
    np.testing.assert_allclose(s["split_f"], [-0.75, -0.75, -0.75, 0], atol=1e-12)
    np.testing.assert_allclose(s["split"], [1, 1, 1, 0])
    np.testing.assert_allclose(s["minor_group"], [0, 0, 1, 0])
    fm = np.array([0.5, 0.75, -0.75])
    np.testing.assert_allclose(s["rel_f"], np.append(fm - fm.mean(), 0), atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_structure_matches_loops(seed):
    rng = np.random.default_rng(seed)
    n = 9
    dense = [(rng.random((n, 5)) < 0.4) * rng.random((n, 5)) for _ in range(3)]
    topic = rng.random((n, 3)) * (rng.random((n, 1)) < 0.8)
    enc = _enc(*[d.tolist() for d in dense], topic=topic, comp1=rng.integers(0, 3, n),
               year=np.where(rng.random(n) < 0.8, rng.integers(1990, 2030, n), -1))
    enc.title, enc.venue, enc.co, enc.topic_rows = dense[0], dense[1], dense[2], topic
    F = rng.normal(size=(n, n))
    F = F + F.T
    P = rng.random((n, n))
    P = (P + P.T) / 2
    labels = rng.integers(0, 4, n) * 7                         # labels need not be 0..K-1
    s, b = cluster_structure(enc, F, P, labels), _brute(enc, F, P, labels)
    for c in STRUCTURE_FEATURES:
        np.testing.assert_allclose(s[c], b[c], rtol=1e-12, atol=1e-12, err_msg=c)


def test_structure_of_one_mention_and_singletons():
    one = cluster_structure(None, np.zeros((1, 1)), np.ones((1, 1)), np.array([0]))
    assert all(one[c].tolist() == ([1.0] if c == "group_share" else [0.0]) for c in STRUCTURE_FEATURES)
    enc, F, P, _ = _tiny()
    s = cluster_structure(enc, F, P, np.arange(4))
    assert all(np.all(s[c] == (1.0 if c == "group_share" else 0.0)) for c in STRUCTURE_FEATURES)


def test_keep_features_and_mention_features():
    df = _df(n=14, n_blocks=2, seed=3).drop(columns="gold")
    labels = np.arange(len(df)) % 3
    conf, _ = assignment_confidence(_model(), df, _clusters(df, labels), max_exact=8, n_samples=5, n_burn=2,
                                    calibration=None)
    assert list(conf.columns) == list(CONFIDENCE_COLUMNS)
    assert list(mention_features(conf).columns) == list(MENTION_FEATURES)
    full, _ = assignment_confidence(_model(), df, _clusters(df, labels), max_exact=8, n_samples=5, n_burn=2,
                                    calibration=None, keep_features=True)
    assert list(full.columns) == list(CONFIDENCE_COLUMNS) + list(STRUCTURE_FEATURES)
    pd.testing.assert_frame_equal(full[list(CONFIDENCE_COLUMNS)], conf)
    X = mention_features(full)
    assert list(X.columns) == list(MENTION_FEATURES) + list(STRUCTURE_FEATURES) + list(SIZE_INTERACTIONS)
    for name, col in SIZE_INTERACTIONS.items():
        np.testing.assert_allclose(X[name], full[col] * np.log(full.groupby(["block", "cluster_id"])[
            "mention_id"].transform("size")), rtol=1e-12)
    assert X["fit_title"].max() > 0 and X["fit_coauthor"].max() > 0 and X["group_share"].min() > 0


def _lm(features):
    k = len(features)
    return LogisticMap(tuple(features), (0.0,) * k, (1.0,) * k, tuple(np.linspace(-1, 1, k)), 0.5)


def test_calibration_version_3_round_trip_and_version_2_still_loads():
    ident = CalibrationMap("identity")
    v2 = ConfidenceCalibration(ident, ident, {}, _lm(VERSION2_FEATURES)).to_dict()
    assert v2["version"] == 2 and ConfidenceCalibration.from_dict(v2).mention_model == _lm(VERSION2_FEATURES)
    feats = VERSION2_FEATURES + STRUCTURE_FEATURES + tuple(SIZE_INTERACTIONS)
    v3 = ConfidenceCalibration(ident, ident, {}, _lm(feats)).to_dict()
    assert v3["version"] == 3 and CALIBRATION_VERSIONS == (1, 2, 3)
    assert ConfidenceCalibration.from_dict(v3).mention_model == _lm(feats)
    with pytest.raises(ValueError, match="version 2 mention model reads only"):
        ConfidenceCalibration.from_dict({**v3, "version": 2})
    with pytest.raises(ValueError, match="version 3 needs a 'mention_model'"):
        ConfidenceCalibration.from_dict({k: v for k, v in v3.items() if k != "mention_model"})
    with pytest.raises(ValueError, match=r"'version' must be one of \(1, 2, 3\); got 4"):
        ConfidenceCalibration.from_dict({**v3, "version": 4})


def test_with_calibration_names_missing_structure_features():
    df = _df(n=10, seed=4).drop(columns="gold")
    conf, pairs = assignment_confidence(_model(), df, _clusters(df, np.arange(len(df)) % 2), calibration=None)
    ident = CalibrationMap("identity")
    cal = ConfidenceCalibration(ident, ident, {}, _lm(VERSION2_FEATURES + STRUCTURE_FEATURES))
    with pytest.raises(ValueError, match=r"lacks .*keep_features=True"):
        with_calibration(conf.copy(), pairs.copy(), cal)
    full, pairs = assignment_confidence(_model(), df, _clusters(df, np.arange(len(df)) % 2), calibration=cal,
                                        keep_features=True)
    X = mention_features(full)
    np.testing.assert_allclose(full["confidence"], cal.mention_model.apply(X), rtol=1e-12)


def test_empty_frame_keeps_the_feature_columns():
    df = _df(n=3).drop(columns="gold").iloc[:0]
    conf, _ = assignment_confidence(_model(), df, _clusters(df, []), keep_features=True)
    assert conf.empty and list(conf.columns) == list(CONFIDENCE_COLUMNS) + list(STRUCTURE_FEATURES)
    conf, _ = assignment_confidence(_model(), df, _clusters(df, []))
    assert list(conf.columns) == list(CONFIDENCE_COLUMNS)
