"""Maximum pseudo-likelihood fit of theta (coref.model._pseudolik): gradient, optimum, determinism, errors."""
import sys
from pathlib import Path

import numpy as np
import pytest

from coref.model._pseudolik import PLData, block_candidates, fit_pseudolik, pl_data, pl_objective
from coref.model import PairwiseModel, load_model, save_model

sys.path.insert(0, str(Path(__file__).parent))
from test_coref_gibbs import _df  # noqa: E402


def _random_data(seed, n_anchors=6, d=3):
    rng = np.random.default_rng(seed)
    S, n, seg, gold = [], [], [], []
    for a in range(n_anchors):
        k = int(rng.integers(1, 4))
        cnt = rng.integers(1, 5, size=k).astype(float)
        S.append(rng.normal(size=(k, d)) * cnt[:, None])
        n.append(cnt)
        seg.append(np.full(k, a))
        g = np.zeros(k, bool)
        if rng.random() < 0.7:
            g[rng.integers(0, k)] = True
        gold.append(g)
    return PLData(np.vstack(S), np.concatenate(n), np.concatenate(seg), np.concatenate(gold), n_anchors)


def _pl_by_enumeration(F, gold):
    """log pseudo-likelihood of the gold clustering from the factor matrix F, written from the definition."""
    total = 0.0
    labels = sorted(set(gold))
    for i in range(len(gold)):
        scores, chosen = [0.0], 0  # the new cluster, exp(0)
        for lab in labels:
            members = [j for j in range(len(gold)) if gold[j] == lab and j != i]
            if not members:
                continue
            scores.append(sum(F[i, j] for j in members))
            if lab == gold[i]:
                chosen = len(scores) - 1
        scores = np.array(scores)
        total += scores[chosen] - np.log(np.exp(scores).sum())
    return total


def test_gradient_matches_central_differences():
    data = _random_data(0)
    Z, n = data.S, data.n
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.normal(size=Z.shape[1] + 1)
        val, grad = pl_objective(x, Z, n, data.seg, data.gold, data.n_anchors, 0.7)
        h = 1e-6
        num = np.array([(pl_objective(x + h * e, Z, n, data.seg, data.gold, data.n_anchors, 0.7)[0]
                         - pl_objective(x - h * e, Z, n, data.seg, data.gold, data.n_anchors, 0.7)[0]) / (2 * h)
                        for e in np.eye(len(x))])
        np.testing.assert_allclose(grad, num, rtol=1e-6, atol=1e-7)


def test_objective_equals_pseudo_likelihood_by_enumeration():
    # a hand-made block: 6 mentions, 3 gold authors (one a singleton), 2 features
    rng = np.random.default_rng(3)
    gold = ["a", "a", "b", "a", "c", "b"]
    n = len(gold)
    phi = rng.normal(size=(n, n, 2))
    phi = (phi + phi.transpose(1, 0, 2)) / 2
    data = block_candidates(lambda I, J: phi[I, J], gold, max_anchors=100, rng=np.random.default_rng(0))
    assert data.n_anchors == 6
    theta, b = np.array([0.8, -0.3]), -0.4
    F = phi @ theta + b
    val, _ = pl_objective(np.concatenate([theta, [b]]), data.S, data.n, data.seg, data.gold, data.n_anchors, 1.0)
    assert val - 0.5 * theta @ theta == pytest.approx(-_pl_by_enumeration(F, gold), rel=1e-12)
    # the singleton "c" has no gold row (its gold choice is the new cluster)
    assert data.gold.sum() == 5


def test_bias_only_optimum_in_closed_form():
    # K gold pairs, every phi = 0: an anchor chooses its mate (n=1) against K-1 other pairs (n=2) and
    # "new": d/db [log(1 + e^b + (K-1) e^{2b}) - b] = 0  <=>  (K-1) e^{2b} = 1  <=>  b = -log(K-1) / 2
    K = 5
    gold = [str(k // 2) for k in range(2 * K)]
    data = block_candidates(lambda I, J: np.zeros((len(I), 1)), gold, max_anchors=100, rng=np.random.default_rng(0))
    theta, b, info = fit_pseudolik(data, theta0=np.zeros(1), b0=0.0, C=1.0, tol=1e-10)
    assert b == pytest.approx(-0.5 * np.log(K - 1), abs=1e-6)
    assert theta[0] == 0.0
    assert info["nll"] <= info["nll0"] and info["converged"]


def test_optimum_agrees_with_a_derivative_free_search_on_the_definition():
    from scipy.optimize import minimize

    rng = np.random.default_rng(7)
    gold = ["a"] * 4 + ["b"] * 3 + ["c"] * 2 + ["d"]
    n = len(gold)
    same = np.array([[g == h for h in gold] for g in gold], float)
    phi = np.empty((n, n, 2))
    phi[..., 0] = same + rng.normal(scale=0.8, size=(n, n))
    phi[..., 1] = rng.normal(size=(n, n))
    phi = (phi + phi.transpose(1, 0, 2)) / 2
    data = block_candidates(lambda I, J: phi[I, J], gold, max_anchors=100, rng=np.random.default_rng(0))
    C = 2.0
    mu, sd = np.zeros(2), np.ones(2)  # unstandardised: the penalty is 0.5 ||theta||^2
    theta, b, _ = fit_pseudolik(data, theta0=np.zeros(2), b0=0.0, C=C, mu=mu, sd=sd, tol=1e-10)

    def j(x):
        return 0.5 * x[:2] @ x[:2] - C * _pl_by_enumeration(phi @ x[:2] + x[2], gold)

    ref = minimize(j, np.zeros(3), method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-12, "maxiter": 20000})
    np.testing.assert_allclose(np.concatenate([theta, [b]]), ref.x, atol=1e-4)
    assert j(np.concatenate([theta, [b]])) <= ref.fun + 1e-9


def test_standardisation_does_not_change_the_unpenalised_optimum_direction():
    # with a negligible penalty the optimum is the same whatever mu / sd are used
    data = _random_data(5, n_anchors=40, d=2)
    a = fit_pseudolik(data, theta0=np.zeros(2), b0=0.0, C=1e6, mu=np.zeros(2), sd=np.ones(2), tol=1e-12)
    b = fit_pseudolik(data, theta0=np.zeros(2), b0=0.0, C=1e6, mu=np.array([0.3, -1.0]),
                      sd=np.array([2.0, 0.5]), tol=1e-12)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-3, atol=1e-4)
    assert a[1] == pytest.approx(b[1], abs=1e-3)


def test_anchor_subsample_is_seeded_and_sums_stay_exact():
    rng = np.random.default_rng(0)
    gold = [str(k % 4) for k in range(30)] + [None, None]
    phi = rng.normal(size=(32, 32, 2))
    pf = lambda I, J: phi[I, J]  # noqa: E731
    a = block_candidates(pf, gold, max_anchors=10, rng=np.random.default_rng(42))
    b = block_candidates(pf, gold, max_anchors=10, rng=np.random.default_rng(42))
    c = block_candidates(pf, gold, max_anchors=10, rng=np.random.default_rng(43))
    assert a.n_anchors == 10
    np.testing.assert_array_equal(a.S, b.S)
    assert not np.array_equal(a.S, c.S)
    # each anchor's candidate sums are over EVERY labeled member (unlabeled rows 30, 31 excluded)
    full = block_candidates(pf, gold, max_anchors=100, rng=np.random.default_rng(0))
    assert full.n_anchors == 30
    for s in range(a.n_anchors):
        rows = a.S[a.seg == s]
        match = [t for t in range(full.n_anchors)
                 if full.S[full.seg == t].shape == rows.shape and np.allclose(full.S[full.seg == t], rows)]
        assert len(match) == 1
    # clusters of 8, 8, 7, 7 labeled members; the anchor's own one counts one fewer
    assert set(a.n.tolist()) <= {6.0, 7.0, 8.0} and a.gold.sum() == 10


def test_pairwise_model_pseudolik_fit_is_deterministic_and_raises_pl(tmp_path):
    df = _df(n=20, n_blocks=3, seed=4)
    kw = dict(objective="pseudolik", bias_shift=0.0, pl_max_anchors=12, rng=3, pl_merge_C=0.5, pl_pair_C=0.1)
    m1 = PairwiseModel(**kw).fit(df)
    m2 = PairwiseModel(**kw).fit(df)
    np.testing.assert_array_equal(m1.theta_, m2.theta_)
    assert m1.bias_ == m2.bias_
    assert m1.pl_info_["objective"] < m1.pl_info_["objective0"]
    assert m1.pl_info_["n_anchors"] == 36
    logit = PairwiseModel(objective="logistic", bias_shift=0.0, rng=3).fit(df)
    assert not np.array_equal(logit.theta_, m1.theta_) and logit.pl_info_ == {}
    save_model(m1, tmp_path / "m")
    m3, _ = load_model(tmp_path / "m")
    assert (m3.objective, m3.pl_C, m3.pl_max_anchors, m3.pl_merge_C, m3.pl_pair_C) == ("pseudolik", m1.pl_C, 12,
                                                                                        0.5, 0.1)
    np.testing.assert_array_equal(m3.theta_, m1.theta_)


def test_pl_data_skips_blocks_without_two_labeled_mentions():
    phi = np.ones((3, 3, 1))
    blocks = [(None, np.array(["a", None, None], dtype=object)), (None, np.array(["a", "a", "b"], dtype=object))]
    data = pl_data(blocks, lambda enc, I, J: phi[I, J], 1, max_anchors=5, rng=np.random.default_rng(0))
    assert data.n_anchors == 3 and data.S.shape == (5, 1)  # a: {a},{b}; a: {a},{b}; b: {a,a}
    np.testing.assert_array_equal(data.n, [1, 1, 1, 1, 2])


def test_errors():
    data = _random_data(0)
    with pytest.raises(ValueError, match="max_anchors must be >= 1"):
        block_candidates(lambda I, J: None, ["a", "a"], max_anchors=0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="C must be > 0"):
        fit_pseudolik(data, theta0=np.zeros(3), b0=0.0, C=0.0)
    with pytest.raises(ValueError, match=r"theta0 must have shape \(3,\)"):
        fit_pseudolik(data, theta0=np.zeros(2), b0=0.0, C=1.0)
    with pytest.raises(ValueError, match=r"mu and sd must have shape \(3,\)"):
        fit_pseudolik(data, theta0=np.zeros(3), b0=0.0, C=1.0, mu=np.zeros(2), sd=np.ones(3))
    empty = PLData(np.zeros((0, 3)), np.zeros(0), np.zeros(0, np.int64), np.zeros(0, bool), 0)
    with pytest.raises(ValueError, match="cannot fit theta by pseudo-likelihood"):
        fit_pseudolik(empty, theta0=np.zeros(3), b0=0.0, C=1.0)
    with pytest.raises(ValueError, match="more than one gold candidate"):
        PLData(np.zeros((2, 1)), np.ones(2), np.zeros(2, np.int64), np.ones(2, bool), 1)
    with pytest.raises(ValueError, match="non-decreasing anchor indices"):
        PLData(np.zeros((2, 1)), np.ones(2), np.array([1, 0]), np.zeros(2, bool), 2)
    df = _df(n=8, n_blocks=2, seed=0)
    with pytest.raises(ValueError, match="objective must be 'logistic' or 'pseudolik'; got 'pl'"):
        PairwiseModel(objective="pl").fit(df)
    with pytest.raises(ValueError, match="pl_C must be a number > 0"):
        PairwiseModel(objective="pseudolik", pl_C=-1).fit(df)
    with pytest.raises(ValueError, match="pl_max_anchors must be an integer >= 1"):
        PairwiseModel(objective="pseudolik", pl_max_anchors=0).fit(df)
    with pytest.raises(ValueError, match="pl_merge_C must be a number >= 0"):
        PairwiseModel(objective="pseudolik", pl_merge_C=-0.5).fit(df)
    with pytest.raises(ValueError, match="C_pairs and C_merge must be >= 0"):
        fit_pseudolik(data, theta0=np.zeros(3), b0=0.0, C=1.0, C_merge=-1.0)
    with pytest.raises(ValueError, match=r"pairs must be \(X of shape \(p, 3\)"):
        fit_pseudolik(data, theta0=np.zeros(3), b0=0.0, C=1.0, pairs=(np.zeros((2, 3)), np.zeros(3)), C_pairs=1.0)


def test_saved_objective_is_validated_and_old_models_load_as_logistic(tmp_path):
    import hashlib
    import json

    from coref.exceptions import ModelFormatError

    df = _df(n=12, n_blocks=2, seed=1)
    d = save_model(PairwiseModel(bias_shift=0.0).fit(df), tmp_path / "m")

    def rewrite(edit):
        doc = json.loads((d / "model.json").read_text())
        edit(doc["params"])
        (d / "model.json").write_text(json.dumps(doc))
        man = json.loads((d / "manifest.json").read_text())
        man["files"]["model.json"] = hashlib.sha256((d / "model.json").read_bytes()).hexdigest()
        (d / "manifest.json").write_text(json.dumps(man))

    rewrite(lambda p: [p.pop(k) for k in ("objective", "pl_C", "pl_max_anchors", "pl_alone", "pl_pair_C",
                                          "pl_merge_C")])
    m, _ = load_model(d)
    assert m.objective == "logistic"
    rewrite(lambda p: p.__setitem__("objective", "magic"))
    with pytest.raises(ModelFormatError, match="model.json: params.objective must be"):
        load_model(d)
    rewrite(lambda p: p.update(objective="pseudolik", pl_C=0))
    with pytest.raises(ModelFormatError, match="params.pl_C must be a finite number > 0"):
        load_model(d)
    rewrite(lambda p: p.update(pl_C=1.0, pl_merge_C=-2))
    with pytest.raises(ModelFormatError, match="params.pl_merge_C must be a finite number >= 0"):
        load_model(d)


def test_combined_objective_gradient_matches_central_differences():
    data = _random_data(2)
    rng = np.random.default_rng(4)
    Xp = rng.normal(size=(9, 3))
    yp = (rng.random(9) < 0.5).astype(float)
    wp = rng.uniform(0.1, 2.0, size=9)
    cp = rng.integers(1, 6, size=9).astype(float)
    args = (data.S, data.n, data.seg, data.gold, data.n_anchors, 0.3, Xp, yp, wp, cp)
    x = rng.normal(size=4)
    val, grad = pl_objective(x, *args)
    base, _ = pl_objective(x, *args[:6])
    v = Xp @ x[:3] + x[3] * cp
    assert val - base == pytest.approx(float(np.sum(wp * (np.log1p(np.exp(v)) - yp * v))), rel=1e-12)
    h = 1e-6
    num = np.array([(pl_objective(x + h * e, *args)[0] - pl_objective(x - h * e, *args)[0]) / (2 * h)
                    for e in np.eye(4)])
    np.testing.assert_allclose(grad, num, rtol=1e-6, atol=1e-7)


def test_cluster_merge_rows_are_the_cross_sums():
    import itertools

    rng = np.random.default_rng(9)
    gold = ["a", "b", "a", "c", "b", "a", "a", None, "b"]
    n = len(gold)
    phi = rng.normal(size=(n, n, 2))
    phi = (phi + phi.transpose(1, 0, 2)) / 2
    data = block_candidates(lambda I, J: phi[I, J], gold, max_anchors=100, rng=np.random.default_rng(1),
                            merges=True)
    members = {k: [i for i, g in enumerate(gold) if g == k] for k in "abc"}
    neg = data.M[data.My == 0]
    assert neg.shape[0] == 3  # three pairs of gold clusters
    for A, B in itertools.combinations("abc", 2):
        cross = sum(phi[i, j] for i in members[A] for j in members[B])
        assert sum(np.allclose(row, cross) for row in neg) == 1
    pos, pos_n = data.M[data.My == 1], data.Mn[data.My == 1]
    assert pos.shape[0] == 2  # one split of "a" (4 members) and of "b" (3); "c" is a singleton
    for k, row, cnt in zip("ab", pos, pos_n):
        m = members[k]
        found = [(h0, cnt) for r in range(1, len(m)) for h0 in itertools.combinations(m, r)
                 if np.allclose(row, sum(phi[i, j] for i in h0 for j in m if j not in h0))]
        assert found and all(len(h0) * (len(m) - len(h0)) == cnt for h0, _ in found)


def test_bias_only_merge_optimum_in_closed_form():
    # two gold clusters of 2, phi = 0, only the merge conditionals (C tiny for PL): the split row of each
    # cluster (|A||B| = 1, label 1) against the cross row (4, label 0): 2 sigmoid(b) = 4 sigmoid(4b) stationarity
    from scipy.optimize import brentq

    gold = ["a", "a", "b", "b"]
    data = block_candidates(lambda I, J: np.zeros((len(I), 1)), gold, max_anchors=100,
                            rng=np.random.default_rng(0), merges=True)
    np.testing.assert_array_equal(np.sort(data.Mn), [1, 1, 4])
    _, b, _ = fit_pseudolik(data, theta0=np.zeros(1), b0=0.0, C=1e-12, C_merge=1.0, tol=1e-12)

    def sig(x):
        return 1 / (1 + np.exp(-x))

    # d/db [2 (log(1+e^b) - b) + log(1+e^{4b})] = 2 (sig(b) - 1) + 4 sig(4b) = 0
    ref = brentq(lambda x: 2 * (sig(x) - 1) + 4 * sig(4 * x), -5, 5)
    assert b == pytest.approx(ref, abs=1e-5)
