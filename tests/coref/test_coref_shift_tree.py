"""The block prior's learned correction (coref.model.shift_tree, coref.prior_fit): tree, statistics, fit, persistence."""
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.tree import DecisionTreeRegressor

from coref.estimator import AuthorCoref
from coref.evaluate import b3
from coref.exceptions import ModelFormatError
from coref.gibbs import GibbsCoref
from coref.model import PairwiseModel, block_theta, load_model, save_model
from coref.model.shift_tree import (SHIFT_GRID, SHIFT_TREE_MAX_N, STATISTICS, ShiftTree, block_statistics,
                                    fit_shift_tree, soft_best_shift)
from coref.prior_fit import shift_tree_table
from coref.synth import synthesize_mentions

sys.path.insert(0, str(Path(__file__).parent))
from test_coref_model import _copy, _rewrite  # noqa: E402


def _table(seed=0, n=120):
    """Blocks whose best correction is +2 where top1 < 5 and -1 elsewhere (F1 peaked there, 0.3 below it)."""
    rng = np.random.default_rng(seed)
    stats = np.column_stack([np.log(rng.integers(3, 300, n)), rng.uniform(1, 6, n), rng.uniform(0, 10, n)])
    best = np.where(stats[:, 2] < 5, 2.0, -1.0)
    f1 = 0.9 - 0.3 * (np.abs(np.asarray(SHIFT_GRID)[None, :] - best[:, None]) > 0)
    return stats, f1, rng.integers(3, 300, n).astype(float), best


@pytest.fixture(scope="module")
def fitted():
    return PairwiseModel(rng=0, bias_shift=0.0).fit(synthesize_mentions(1500, rng=3))


@pytest.fixture(scope="module")
def tree():
    stats, f1, n, _ = _table()
    return fit_shift_tree(stats, f1, n)


def test_the_fitted_tree_recovers_a_planted_rule_and_predicts_as_sklearn(tree):
    stats, f1, n, best = _table()
    got = np.array([tree.predict(x) for x in stats])
    np.testing.assert_allclose(soft_best_shift(f1), best, atol=1e-5)     # pure leaves: their mean target
    np.testing.assert_allclose(got, soft_best_shift(f1), rtol=1e-12)
    # the twin: sklearn's own tree on the same targets
    sk = DecisionTreeRegressor(max_depth=2, min_samples_leaf=20, random_state=0).fit(stats, soft_best_shift(f1),
                                                                                     sample_weight=n)
    probe = np.random.default_rng(1).uniform([1, 0, -2], [6, 8, 12], size=(500, 3))
    np.testing.assert_allclose([tree.predict(x) for x in probe], sk.predict(probe), rtol=0, atol=1e-12)
    assert tree.n_blocks == len(stats) and tree.statistics == STATISTICS


def test_too_few_blocks_fit_no_tree_and_bad_shapes_are_refused():
    stats, f1, n, _ = _table(n=39)
    assert fit_shift_tree(stats, f1, n) is None
    with pytest.raises(ValueError, match=r"statistics \(n, 3\), f1 \(n, 13\)"):
        fit_shift_tree(stats[:, :2], f1, n)
    f1[0, 0] = np.nan
    with pytest.raises(ValueError, match="must be finite"):
        fit_shift_tree(stats, f1, n)


def test_round_trip_and_each_bad_field_is_named(tree):
    d = tree.to_dict()
    assert ShiftTree.from_dict(json.loads(json.dumps(d))) == tree
    cases = [
        (lambda x: x.pop("value"), "fields must be"),
        (lambda x: x.__setitem__("statistics", ["log_n", "f_std"]), "'statistics' must be"),
        (lambda x: x["threshold"].__setitem__(0, float("inf")), "'threshold' must be a list of finite numbers"),
        (lambda x: x["left"].__setitem__(0, -1), "node 0 has one child"),
        (lambda x: x["right"].__setitem__(0, 0), "child 0 is not a new node after it"),
        (lambda x: x["feature"].__setitem__(0, 3), "splits on statistic 3"),
        (lambda x: x.__setitem__("value", x["value"][:-1]), "one entry per node"),
        (lambda x: x.__setitem__("n_blocks", -1), "'n_blocks' must be an integer >= 0"),
        (lambda x: x["left"].__setitem__(x["left"].index(next(v for v in x["left"] if v > 0)), -1) or
         x["right"].__setitem__(x["left"].index(-1), -1), "not reached from node 0"),
    ]
    for change, match in cases:
        bad = json.loads(json.dumps(d))
        change(bad)
        with pytest.raises(ValueError, match=match):
            ShiftTree.from_dict(bad, where="t")


def test_block_statistics_against_the_factor_matrix(fitted):
    df = synthesize_mentions(400, rng=8)
    b = df["block"].value_counts().index[0]
    enc = fitted.encode(df[df["block"] == b].reset_index(drop=True))
    theta, bias = block_theta(fitted, enc), fitted.base_bias(enc)
    f = fitted.factor_matrix(enc) - fitted.block_bias(enc) + bias     # at the intercept before the shift
    n = enc.n
    iu = np.triu_indices(n, 1)
    best = np.array([np.max(np.delete(f[i], i)) for i in range(n)])
    np.testing.assert_allclose(block_statistics(enc, theta, bias), [np.log(n), f[iu].std(), np.median(best)],
                               rtol=1e-12)
    tiny = fitted.encode(df[df["block"] == b].iloc[:2].reset_index(drop=True))
    with pytest.raises(ValueError, match=f"blocks of 3 to {SHIFT_TREE_MAX_N} mentions; got 2"):
        block_statistics(tiny, theta, bias)


def test_block_shift_adds_the_tree_where_it_applies(fitted, tree):
    df = synthesize_mentions(400, rng=8)
    sizes = df["block"].value_counts()
    big, two = sizes.index[0], sizes[sizes == 2].index[0]
    m = PairwiseModel(rng=0, bias_shift=0.0).fit(synthesize_mentions(1500, rng=3))
    for b in (big, two):
        enc = m.encode(df[df["block"] == b].reset_index(drop=True))
        m.shift_tree_ = None
        d0, ev0 = m.block_shift(enc), m.block_shift_evals(enc.n)
        m.shift_tree_ = tree
        fresh = m.encode(df[df["block"] == b].reset_index(drop=True))   # no rate cached: read from the matrix
        if enc.n >= 3:
            dd = tree.predict(block_statistics(enc, block_theta(m, enc), m.base_bias(enc)))
            # the rate's pairs come from the statistics' matrix: its n(n-1)/2 factors are all the block evaluates
            assert m.block_shift(fresh) == d0 + dd and m.block_shift_evals(enc.n) == enc.n * (enc.n - 1) // 2
        else:
            assert m.block_shift(fresh) == d0 and m.block_shift_evals(enc.n) == ev0


def test_save_load_keeps_the_tree_and_refuses_a_bad_one(fitted, tree, tmp_path):
    fitted.shift_tree_ = tree
    try:
        save_model(fitted, tmp_path / "m")
    finally:
        fitted.shift_tree_ = None
    assert load_model(tmp_path / "m")[0].shift_tree_ == tree
    save_model(fitted, tmp_path / "p")
    assert "shift_tree" not in json.loads((tmp_path / "p" / "model.json").read_text())
    assert load_model(tmp_path / "p")[0].shift_tree_ is None
    d = _copy(tmp_path / "m", tmp_path / "bad")
    _rewrite(d, lambda doc: doc["shift_tree"]["left"].__setitem__(0, -1))
    with pytest.raises(ModelFormatError, match="field 'shift_tree': node 0 has one child"):
        load_model(d)


def test_shift_tree_table_scores_each_block_at_each_shift(fitted):
    df = synthesize_mentions(300, rng=11)
    sizes = df["block"].value_counts()
    df = df[df["block"].isin(sizes[sizes >= 3].index[:4])].reset_index(drop=True)
    stats, f1, n = shift_tree_table(fitted, df, rng=0, grid=(-1.0, 1.5))
    blocks = sorted(df["block"].unique())
    assert stats.shape == (4, 3) and f1.shape == (4, 2) and n.tolist() == [float(sizes[b]) for b in blocks]
    for k, dd in enumerate((-1.0, 1.5)):
        for i, b in enumerate(blocks):
            part = df[df["block"] == b].reset_index(drop=True)
            d0 = fitted.block_shift(fitted.encode(part.sort_values("mention_id").reset_index(drop=True)))
            g = GibbsCoref(fitted, sampler="exact", rng=0, record_history=False, factor_cache_mb=256).fit(
                part.drop(columns=["gold"]), prior_shift={b: d0 + dd})
            pred = pd.DataFrame({"mention_id": part["mention_id"], "cluster": g.clusters_.loc[part["mention_id"]]
                                 .astype(str).to_numpy()})
            want = b3(pd.Series(pred["cluster"].to_numpy(), index=part["mention_id"]),
                      pd.Series(part["gold"].astype(str).to_numpy(), index=part["mention_id"])).f1
            assert f1[i, k] == pytest.approx(want, abs=1e-12)


def test_author_coref_fits_the_tree_on_its_folds_and_validates_the_switch():
    df = synthesize_mentions(2500, rng=4)
    est = AuthorCoref(rng=0, big_blocks=None, calibration="none", calibration_folds=3).fit(df)
    no = AuthorCoref(rng=0, big_blocks=None, calibration="none", calibration_folds=3, shift_tree=False).fit(df)
    assert no.model_.shift_tree_ is None
    np.testing.assert_array_equal(est.model_.theta_, no.model_.theta_)     # theta is fitted first, unchanged
    n_blocks = int(sum(3 <= c <= SHIFT_TREE_MAX_N for c in df.groupby("block").size()))
    assert n_blocks >= 40          # (enough for a tree)
    assert isinstance(est.model_.shift_tree_, ShiftTree) and est.model_.shift_tree_.n_blocks == n_blocks
    assert set(est.fit_times_) == {"fit_s", "shift_tree_s", "calibration_s"}
    with pytest.raises(ValueError, match="shift_tree parameter of AuthorCoref must be True or False"):
        AuthorCoref(shift_tree="yes").fit(df)


def test_the_statistics_matrix_is_given_once_to_the_same_block_and_weights(fitted):
    from coref.model.shift_tree import take_factor_matrix

    df = synthesize_mentions(400, rng=8)
    blocks = df["block"].value_counts().index[:2]
    a, b = (fitted.encode(df[df["block"] == x].reset_index(drop=True)) for x in blocks)
    theta, bias = block_theta(fitted, a), fitted.base_bias(a)
    block_statistics(a, theta, bias + 1e-9)             # (other weights: computed, not cached for these)
    block_statistics(a, theta, bias)
    assert take_factor_matrix(b, theta, bias) is None   # another block: kept for a
    m = take_factor_matrix(a, theta, bias)
    want = fitted.factor_matrix(a) - fitted.block_bias(a) + bias
    np.fill_diagonal(want, 0.0)
    np.testing.assert_allclose(m, want, rtol=1e-12, atol=1e-12)
    assert take_factor_matrix(a, theta, bias) is None   # given once
    block_statistics(b, theta, bias)
    assert take_factor_matrix(b, theta, bias + 1.0) is None and take_factor_matrix(b, theta, bias) is None


@pytest.mark.parametrize("max_pairs", [20000, 40])
def test_the_rate_reads_the_statistics_matrix_bit_for_bit(fitted, max_pairs):
    """All pairs (a small block) or a sample of them: the values the kernel gives pair by pair."""
    from coref.model.shift_tree import peek_factor_matrix, take_factor_matrix

    df = synthesize_mentions(400, rng=8)
    rows = df[df["block"] == df["block"].value_counts().index[0]].reset_index(drop=True)
    import copy

    m = copy.deepcopy(fitted)
    m.block_prior_pairs = max_pairs
    plain = m.encode(rows)
    want = m.rate_factors(plain)                      # pair by pair (no matrix for this encoding)
    assert peek_factor_matrix(plain, block_theta(m, plain), m.base_bias(plain)) is None
    enc = m.encode(rows)
    theta, bias = block_theta(m, enc), m.base_bias(enc)
    block_statistics(enc, theta, bias)
    f = peek_factor_matrix(enc, theta, bias)
    assert f is not None and peek_factor_matrix(enc, theta, bias + 1.0) is None
    got = m.rate_factors(enc)
    assert len(got) == min(max_pairs, enc.n * (enc.n - 1) // 2) and np.array_equal(got, want)
    assert take_factor_matrix(enc, theta, bias) is f      # peeking leaves it for the sampler
    assert peek_factor_matrix(enc, theta, bias) is None
