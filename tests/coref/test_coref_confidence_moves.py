"""Split-merge moves at T=1, the Binder repair, competing clusters, the mention model, review.csv."""
import numpy as np
import pandas as pd
import pytest

from coref.calibration import CalibrationMap, ConfidenceCalibration, LogisticMap, fit_logistic
from coref.confidence import (MENTION_FEATURES, REVIEW_COLUMNS, assignment_confidence, binder_loss,
                              binder_point_estimate, competing_clusters, gibbs_marginals, mention_features,
                              review_table, split_merge_moves, with_calibration)
from coref.confidence.consensus import consensus_ids
from coref.confidence.fit import subsampled_blocks
from coref.confidence.moves import sequential_allocation
from tests.coref.test_coref_confidence import set_partitions
from coref.factors import _factors
from coref.factors.names import N_FEATURES
from tests.coref.test_coref_confidence_api import _Model, _brute_marginals, _clusters, _df


class _FeatureModel(_Model):
    """The stand-in of the confidence tests, with the per-feature terms (for review.csv's evidence)."""

    def pair_features(self, enc, I, J):
        out = np.empty((len(I), N_FEATURES))
        _factors.pair_features(enc, np.ascontiguousarray(I, np.int64), np.ascontiguousarray(J, np.int64), out)
        return out


def _model():
    th = np.zeros(N_FEATURES)
    th[0], th[6], th[8], th[9] = 1.5, 1.0, 0.7, 0.5
    return _FeatureModel(th, -1.0)


def _F(n, seed, scale=1.5):
    rng = np.random.default_rng(seed)
    F = rng.normal(0.0, scale, (n, n))
    F = (F + F.T) / 2
    np.fill_diagonal(F, 0.0)
    return F


def _state(F, labels):
    n = len(labels)
    lab = np.asarray(labels, np.int64).copy()
    size = np.bincount(lab, minlength=n).astype(np.int64)
    S = np.zeros((n, n))
    np.add.at(S.T, lab, F.T)
    return S, lab, size


def test_sequential_allocation_log_q_of_the_drawn_allocation():
    F = _F(7, 1)
    rest = np.array([2, 3, 4, 5, 6])
    in_a, lq = sequential_allocation(F, 0, 1, rest, np.random.default_rng(3))
    # the same order (same stream), the allocation given: the same probability
    _, lq2 = sequential_allocation(F, 0, 1, rest, np.random.default_rng(3), target_a=in_a)
    assert lq2 == pytest.approx(lq, rel=1e-12)
    # the probabilities of every allocation (one fixed order) sum to one
    tot = 0.0
    for code in range(1 << len(rest)):
        target = ((code >> np.arange(len(rest))) & 1).astype(bool)
        tot += np.exp(sequential_allocation(F, 0, 1, rest, np.random.default_rng(3), target_a=target)[1])
    assert tot == pytest.approx(1.0, rel=1e-12)


def test_split_merge_moves_alone_leave_the_posterior_invariant():
    """Moves only (no single-site sweep): pair marginals of the chain = the exact ones (n = 4)."""
    F = _F(4, 7)
    P_exact, _ = _brute_marginals(F)
    S, lab, size = _state(F, [0, 0, 0, 0])
    gen = np.random.default_rng(11)
    n_steps = 30000
    acc = np.zeros((4, 4))
    n_split = n_merge = 0
    for _ in range(n_steps):
        s, m = split_merge_moves(F, S, lab, size, gen, 1)
        n_split += s
        n_merge += m
        acc += lab[:, None] == lab[None, :]
        # the bookkeeping stays that of the labels
        assert (np.bincount(lab, minlength=4) == size).all()
    S_ref, _, _ = _state(F, lab)
    np.testing.assert_allclose(S, S_ref, atol=1e-9)
    P = acc / n_steps
    assert n_split > 100 and n_merge > 100
    # autocorrelated chain: 4 standard errors of an independent sample, inflated x3
    a, b = np.triu_indices(4, 1)
    pe = P_exact[a, b]
    tol = 3 * 4 * np.sqrt(pe * (1 - pe) / n_steps)
    assert (np.abs(P[a, b] - pe) <= tol).all(), (P, P_exact)


def test_gibbs_marginals_with_moves_match_exact():
    F = _F(6, 3, scale=2.0)
    P_exact, alone_exact = _brute_marginals(F)
    P, alone = gibbs_marginals(F, np.arange(6), n_samples=3000, n_burn=20, n_moves=3,
                               rng=np.random.default_rng(0))
    np.testing.assert_allclose(P, P_exact, atol=0.03)
    np.testing.assert_allclose(alone, alone_exact, atol=0.03)
    with pytest.raises(ValueError, match="n_moves"):
        df = _df(14)
        assignment_confidence(_model(), df.drop(columns="gold"), _clusters(df, np.zeros(14, int)), n_moves=-1)


def test_binder_point_estimate_exact_on_small_blocks():
    rng = np.random.default_rng(5)
    for trial in range(5):
        n = 5
        P = rng.random((n, n))
        P = (P + P.T) / 2
        np.fill_diagonal(P, 1.0)
        start = rng.integers(0, 3, n)
        est = binder_point_estimate(P, start)
        assert binder_loss(P, est) <= binder_loss(P, start) + 1e-12
        # a local minimum: no single mention move lowers the loss
        for i in range(n):
            for c in list(np.unique(est)) + [est.max() + 1]:
                alt = est.copy()
                alt[i] = c
                assert binder_loss(P, alt) >= binder_loss(P, est) - 1e-12
    # two obvious groups: found from the all-in-one start
    P = np.full((4, 4), 0.05)
    P[:2, :2] = P[2:, 2:] = 0.95
    np.testing.assert_array_equal(binder_point_estimate(P, [0, 0, 0, 0]), [0, 0, 1, 1])
    np.testing.assert_array_equal(binder_point_estimate(P, [0, 1, 2, 3]), [0, 0, 1, 1])
    with pytest.raises(ValueError, match="shape"):
        binder_point_estimate(P, [0, 0, 0])
    with pytest.raises(ValueError, match="threshold"):
        binder_point_estimate(P, [0, 0, 0, 0], threshold=1.0)


def test_repair_moves_only_the_contradicted_mentions():
    # 0-1 belong together (P = 0.999, split in the start); 2-3 mildly disagree (P = 0.4, joined): kept
    P = np.full((4, 4), 0.02)
    P[0, 1] = P[1, 0] = 0.999
    P[2, 3] = P[3, 2] = 0.4
    np.fill_diagonal(P, 1.0)
    out = binder_point_estimate(P, [0, 1, 2, 2], conflicts=(0.01, 0.99))
    np.testing.assert_array_equal(out, [0, 0, 1, 1])
    # without conflicts the full descent also splits 2-3
    np.testing.assert_array_equal(binder_point_estimate(P, [0, 1, 2, 2]), [0, 0, 1, 2])
    # a start that agrees with its marginals is returned as it is
    np.testing.assert_array_equal(binder_point_estimate(P, [0, 0, 1, 1], conflicts=(0.01, 0.99)), [0, 0, 1, 1])


def test_consensus_ids_reuse_old_ids():
    old = np.array(["B/0", "B/0", "B/1", "B/1", "B/1"])
    np.testing.assert_array_equal(consensus_ids("B", old, [0, 0, 1, 1, 1]), old)
    out = consensus_ids("B", old, [0, 0, 1, 1, 2])
    assert list(out) == ["B/0", "B/0", "B/1", "B/1", "B/b0"]
    out = consensus_ids("B", old, [0, 0, 0, 0, 0])
    assert set(out) == {"B/1"}


def test_competing_clusters_by_hand():
    P = np.array([[1.0, 0.9, 0.3, 0.1],
                  [0.9, 1.0, 0.2, 0.6],
                  [0.3, 0.2, 1.0, 0.5],
                  [0.1, 0.6, 0.5, 1.0]])
    alone = np.array([0.05, 0.02, 0.4, 0.1])
    labels = np.array([0, 0, 1, 2])
    comp, pc = competing_clusters(P, alone, labels)
    # 0: cluster {2} 0.3 vs {3} 0.1 vs alone 0.05 -> {2}; 1: {3} 0.6; 2 (singleton): {0,1} 0.25 vs {3} 0.5 -> {3}
    # 3 (singleton): {0,1} 0.35, {2} 0.5 -> {2}
    np.testing.assert_array_equal(comp, [2, 3, 3, 2])
    np.testing.assert_allclose(pc, [0.3, 0.6, 0.5, 0.5])
    comp, pc = competing_clusters(P, np.array([0.5, 0.02, 0.4, 0.1]), labels)
    assert comp[0] == -1 and pc[0] == 0.5
    comp, pc = competing_clusters(np.ones((1, 1)), np.ones(1), np.zeros(1, int))
    assert comp.tolist() == [-1] and pc.tolist() == [0.0]


def _conf_frame():
    return pd.DataFrame({"mention_id": ["a", "b", "c", "d"], "block": ["X", "X", "X", "Y"],
                         "cluster_id": ["X/0", "X/0", "X/1", "Y/0"], "p": [0.9, 0.9, 0.5, 1.0],
                         "p_direct": [0.8, 0.8, 1.0, 1.0], "p_competing": [0.1, 0.05, 0.5, 0.0]})


def test_mention_features_by_hand():
    X = mention_features(_conf_frame())
    assert list(X.columns) == list(MENTION_FEATURES)
    np.testing.assert_allclose(X["log_block_size"], np.log([3, 3, 3, 1]))
    np.testing.assert_allclose(X["log_cluster_size"], np.log([2, 2, 1, 1]))
    np.testing.assert_allclose(X["cluster_share"], [2 / 3, 2 / 3, 1 / 3, 1.0])
    np.testing.assert_allclose(X["log_n_clusters"], np.log([2, 2, 2, 1]))
    np.testing.assert_allclose(X["singleton"], [0, 0, 1, 1])
    np.testing.assert_allclose(X["margin"], [0.8, 0.85, 0.0, 1.0])
    np.testing.assert_allclose(X["logit_p"][:2], np.log(9.0), rtol=1e-12)
    with pytest.raises(ValueError, match="p_competing"):
        mention_features(_conf_frame().drop(columns="p_competing"))


def test_logistic_map_fit_round_trip_and_validation():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"u": rng.normal(size=4000), "v": rng.normal(size=4000)})
    y = (rng.random(4000) < 1 / (1 + np.exp(-(2.0 * X["u"] - 1.0 * X["v"])))).astype(float)
    lm = fit_logistic(X, y)
    assert lm.coef[0] > 0 > lm.coef[1]
    back = LogisticMap.from_dict(lm.to_dict())
    np.testing.assert_allclose(back.apply(X), lm.apply(X), rtol=1e-12)
    assert np.all((lm.apply(X) > 0) & (lm.apply(X) < 1))
    d = lm.to_dict()
    with pytest.raises(ValueError, match="scale"):
        LogisticMap.from_dict({**d, "scale": [0.0, 1.0]})
    with pytest.raises(ValueError, match="'coef' must be a list of 2"):
        LogisticMap.from_dict({**d, "coef": [1.0]})
    with pytest.raises(ValueError, match="fields"):
        LogisticMap.from_dict({**d, "extra": 1})
    with pytest.raises(ValueError, match="needs the feature"):
        lm.apply(X[["u"]])
    with pytest.raises(ValueError, match="one class"):
        fit_logistic(X, np.ones(4000))
    ident = CalibrationMap("identity")
    cal = ConfidenceCalibration(ident, ident, {"k": 1}, lm)
    d2 = cal.to_dict()
    assert d2["version"] == 3            # features other than version 2's (u, v): version 3
    assert ConfidenceCalibration.from_dict(d2).mention_model == lm
    v1 = ConfidenceCalibration(ident, ident, {}).to_dict()
    assert v1["version"] == 1 and ConfidenceCalibration.from_dict(v1).mention_model is None
    with pytest.raises(ValueError, match="mention_model"):
        ConfidenceCalibration.from_dict({**v1, "version": 2})
    with pytest.raises(ValueError, match="unknown field"):
        ConfidenceCalibration.from_dict({**v1, "mention_model": d})


def test_with_calibration_applies_the_mention_model():
    conf = _conf_frame()
    conf["p_calibrated"] = np.nan
    X = mention_features(conf)
    lm = LogisticMap(("logit_p", "singleton"), (0.0, 0.0), (1.0, 1.0), (1.0, -2.0), 0.5)
    ident = CalibrationMap("identity")
    out, _ = with_calibration(conf, pd.DataFrame({"p": [0.5], "p_direct": [0.5]}),
                              ConfidenceCalibration(ident, ident, {}, lm))
    z = 0.5 + X["logit_p"] - 2.0 * X["singleton"]
    np.testing.assert_allclose(out["p_calibrated"], 1 / (1 + np.exp(-z)), rtol=1e-12)
    np.testing.assert_allclose(out["confidence"], out["p_calibrated"])
    out, _ = with_calibration(conf, pd.DataFrame({"p": [0.5], "p_direct": [0.5]}), None)
    np.testing.assert_allclose(out["confidence"], conf["p"])


def test_subsampled_blocks():
    df = _df(12, n_blocks=2)
    sub = subsampled_blocks(df, (2, 5, 12), rng=1)
    assert sorted(sub["block"].unique()) == ["B0#s2", "B0#s5", "B1#s2", "B1#s5"]
    assert sub.groupby("block").size().to_dict() == {"B0#s2": 2, "B0#s5": 5, "B1#s2": 2, "B1#s5": 5}
    assert sub["mention_id"].is_unique and sub["mention_id"].str.endswith(("#s2", "#s5")).all()
    orig = df.set_index("mention_id")["gold"]
    assert (sub["gold"].to_numpy() == orig.loc[sub["mention_id"].str.split("#").str[0]].to_numpy()).all()
    pd.testing.assert_frame_equal(sub, subsampled_blocks(df, (2, 5, 12), rng=1))
    with pytest.raises(ValueError, match="sizes"):
        subsampled_blocks(df, (0,))


def test_repair_and_review_on_a_block():
    df = _df(16, n_blocks=2, seed=3)
    feats = df.drop(columns="gold")
    cl = _clusters(df, np.arange(len(df)) % 5)            # a poor start: the repair must move mentions
    conf, pairs = assignment_confidence(_model(), feats, cl, point_estimate="repair", rng=0)
    c = conf.set_index("mention_id")["cluster_id"]
    same = c.reindex(pairs["mention_a"]).to_numpy() == c.reindex(pairs["mention_b"]).to_numpy()
    assert not ((pairs["p"] > 0.99) & ~same).any() and not ((pairs["p"] < 0.01) & same).any()
    assert (conf["confidence"] == conf["p"]).all()         # no calibration: confidence is p
    rv = review_table(_model(), feats, conf, max_evidence=5)
    assert list(rv.columns) == list(REVIEW_COLUMNS)
    assert rv["rank"].tolist() == list(range(1, len(df) + 1))
    assert (np.diff(rv["expected_errors"].to_numpy()) <= 1e-15).all()
    np.testing.assert_allclose(rv["expected_errors"], 1 - rv["confidence"])
    assert (rv["evidence"].iloc[5:] == "").all()
    top = rv.iloc[:5]
    assert ((top["evidence"] != "") | (top["cluster_size"] == 1)).all()
    with pytest.raises(ValueError, match="max_evidence"):
        review_table(_model(), feats, conf, max_evidence=-1)
    with pytest.raises(ValueError, match="point_estimate"):
        assignment_confidence(_model(), feats, cl, point_estimate="mode")


def test_set_partitions_helper_counts():
    assert sum(1 for _ in set_partitions(list(range(4)))) == 15


def test_review_cluster_fit_names_what_stands_out():
    """``cluster_fit`` (review.csv): exact texts on constructed rows, and filled from the structure
    columns of a keep_features confidence frame only (empty without them and below max_evidence)."""
    from types import SimpleNamespace

    from coref.confidence.review import FIT_MARGIN, cluster_fit_text

    row = dict(rel_title=-0.21, rel_venue=-0.05, rel_coauthor=-FIT_MARGIN, rel_topic=0.3, neg_share=0.5,
               single_link=1.0, year_dev=1.7, cluster_size=3)
    assert cluster_fit_text(SimpleNamespace(**row)) == (
        "fits worse than its typical member: title -0.21, coauthor -0.10; 50% of its links rejected (f < 0); "
        "held by a single strong link; 17 years from the cluster's median year")
    quiet = dict(row, rel_title=0.0, rel_coauthor=-0.09, neg_share=0.0, single_link=0.0, year_dev=0.9)
    assert cluster_fit_text(SimpleNamespace(**quiet)) == ""
    assert cluster_fit_text(SimpleNamespace(**dict(row, cluster_size=1))) == ""

    df = _df(16, n_blocks=2, seed=3)
    feats = df.drop(columns="gold")
    cl = _clusters(df, np.arange(len(df)) % 3)
    conf, _ = assignment_confidence(_model(), feats, cl, rng=0, keep_features=True)
    rv = review_table(_model(), feats, conf, max_evidence=6)
    want = [cluster_fit_text(r) for r in conf.set_index("mention_id").loc[rv["mention_id"].head(6)].assign(
        cluster_size=rv["cluster_size"].head(6).to_numpy()).itertuples()]
    assert rv["cluster_fit"].head(6).tolist() == want
    assert any(want) and (rv["cluster_fit"].iloc[6:] == "").all()
    plain, _ = assignment_confidence(_model(), feats, cl, rng=0)
    assert (review_table(_model(), feats, plain, max_evidence=6)["cluster_fit"] == "").all()
