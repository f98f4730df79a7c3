"""Certified marginals (sampling.bounds.marginals): exact twin, interval coverage, delta bookkeeping."""
import argparse
import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from bounds_oracle import chain_model, random_model
from sampling.bounds import cli as bounds_cli
from sampling.bounds.estimator import ImportanceAccumulator
from sampling.bounds.marginal_bounds import COLUMNS, marginals, ratio_intervals, tighten_by_sum
from sampling.bounds.model import Factor, GraphicalModel
from sampling.bounds.uai import write_uai


def brute_marginals(model):
    """P(X_v = x) for every variable by enumerating every assignment (the test twin)."""
    xs = np.array(list(itertools.product(*[range(int(c)) for c in model.cards])))
    lv = model.log_value(xs)
    w = np.exp(lv - lv.max())
    return [np.bincount(xs[:, v], weights=w, minlength=int(model.cards[v])) / w.sum()
            for v in range(model.n_vars)], float(lv.max() + np.log(w.sum()))


@pytest.mark.parametrize("seed", range(4))
def test_exact_path_equals_enumeration(seed):
    m = random_model(n=7, seed=seed)
    if seed % 2:
        m = m.condition({3: 1})  # evidence: an observed variable has one state
    want, lz = brute_marginals(m)
    r = marginals(m)
    assert r.method == "exact" and r.delta == 0.0 and r.n_bounds == 0
    np.testing.assert_allclose(r.p, np.concatenate(want), atol=1e-12)
    np.testing.assert_array_equal(r.p_lower, r.p)
    np.testing.assert_array_equal(r.p_upper, r.p)
    assert r.log_Z == pytest.approx(lz, abs=1e-10)


def test_exact_two_variable_values():
    m = GraphicalModel([2, 2], [Factor.from_values((0, 1), [[1.0, 2.0], [3.0, 4.0]])])
    r = marginals(m)
    np.testing.assert_allclose(r.p, [0.3, 0.7, 0.4, 0.6], atol=1e-14)
    assert r.log_Z == pytest.approx(math.log(10.0))


def test_exact_disconnected_components_and_variable_subset():
    # two components and a constant factor: each marginal is normalised within the whole Z
    m = GraphicalModel([2, 3, 2], [Factor.from_values((0,), [1.0, 3.0]), Factor.from_values((1, 2), np.arange(1.0, 7.0).reshape(3, 2)),
                                   Factor((), np.array(2.0))])
    r = marginals(m, variables=[2, 0])
    np.testing.assert_array_equal(r.variable, [2, 2, 0, 0])
    np.testing.assert_allclose(r.p, [9 / 21, 12 / 21, 0.25, 0.75], atol=1e-14)
    assert r.log_Z == pytest.approx(2.0 + math.log(4.0 * 21.0))


@pytest.mark.parametrize("seed", range(3))
def test_dis_intervals_hold_exact_marginals(seed):
    m = chain_model(n=12, seed=seed)
    want = np.concatenate(brute_marginals(m)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = marginals(m, method="dis", time_limit=None, max_samples=20000, rng=seed, i_bound=1)
    assert r.method == "dis" and r.n_samples == 20000
    assert ((r.p_lower <= want + 1e-12) & (want <= r.p_upper + 1e-12)).all()
    assert ((r.p_lower <= r.p) & (r.p <= r.p_upper)).all()
    # informative: the intervals are narrow next to [0, 1]
    assert np.median(r.width) < 0.1
    assert r.log_Z_lower <= brute_marginals(m)[1] <= r.log_Z_upper


def test_dis_width_shrinks_like_one_over_sqrt_n():
    m = chain_model(n=10, seed=5)
    kw = dict(method="dis", time_limit=None, i_bound=1, rng=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w1 = np.median(marginals(m, max_samples=4000, **kw).width)
        w2 = np.median(marginals(m, max_samples=64000, **kw).width)
    assert 3.5 < w1 / w2 < 16.0  # between the 1/sqrt(n) term (4x) and the 1/n term (16x)


def test_joint_delta_bookkeeping():
    m = chain_model(n=8, seed=1).condition({2: 0})
    kw = dict(method="dis", time_limit=None, max_samples=500, rng=0, i_bound=1, delta=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = marginals(m, **kw)
        sub = marginals(m, variables=[0, 2], **kw)
    k = [int(c) for c in m.cards]
    # Z plus every Z_{v,x} (a binary variable's two tests are one); the observed one is exact
    assert r.n_bounds == 1 + sum(1 if c == 2 else c for c in k if c > 1)
    assert 2 in k and 3 in k
    assert r.meta["delta_each"] == pytest.approx(0.05 / (2 * r.n_bounds))
    m0 = 1 if k[0] == 2 else k[0]
    assert sub.n_bounds == 1 + m0 and sub.meta["delta_each"] == pytest.approx(0.05 / (2 * (1 + m0)))
    assert list(sub.row_method) == ["dis"] * k[0] + ["exact"]
    assert len(r) == sum(k) and r.delta == 0.05


def test_pair_sums_match_the_accumulator():
    # the vectorised column sums give the same Theorem 1 bounds as ImportanceAccumulator fed
    # the masked weights w 1[x_v = x]
    from sampling.bounds.ratios import WeightedColumnSums

    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(3000, 2))
    log_w = rng.normal(-2.0, 1.0, size=3000)
    sums = WeightedColumnSums(6, 1.5)
    for a in range(0, 3000, 700):
        Xa = X[a:a + 700]
        sums.add(log_w[a:a + 700], np.repeat(np.arange(len(Xa)), 2), (Xa + [0, 3]).ravel())
    for j, (v, x) in enumerate([(v, x) for v in range(2) for x in range(3)]):
        acc = ImportanceAccumulator(0.01)
        acc.add(np.where(X[:, v] == x, log_w, -np.inf), 1.5)
        got = sums.accumulator(j, 0.01)
        assert got.log_Z_hat == pytest.approx(acc.log_Z_hat, rel=1e-10)
        np.testing.assert_allclose(got.bounds(1.5), acc.bounds(1.5), rtol=1e-9)


def test_ratio_intervals_and_sum_tightening():
    lo, hi = ratio_intervals(np.log([1.0, 3.0]), np.log([1.0, 3.0]))
    np.testing.assert_allclose(lo, [0.25, 0.75])
    np.testing.assert_allclose(hi, [0.25, 0.75])
    rng = np.random.default_rng(2)
    for _ in range(200):  # any bounds holding the truth give an interval holding P
        z = rng.exponential(size=3)
        L, U = z * rng.uniform(0.5, 1.0, 3), z * rng.uniform(1.0, 2.0, 3)
        lo, hi = ratio_intervals(np.log(L), np.log(U), math.log(z.sum() * 0.9), math.log(z.sum() * 1.2))
        p = z / z.sum()
        assert ((lo <= p + 1e-12) & (p <= hi + 1e-12)).all()
    lo, hi = tighten_by_sum([0.7, 0.0], [1.0, 0.4])
    np.testing.assert_allclose(lo, [0.7, 0.0])
    np.testing.assert_allclose(hi, [1.0, 0.3])


def test_to_frame_and_csv(tmp_path):
    r = marginals(random_model(n=5, seed=3))
    df = r.to_frame()
    assert tuple(df.columns) == COLUMNS and len(df) == len(r)
    r.to_csv(tmp_path / "m.csv")
    back = pd.read_csv(tmp_path / "m.csv")
    np.testing.assert_allclose(back["p"], r.p, rtol=1e-11)


@pytest.mark.parametrize("kw, err, match", [
    (dict(variables=[0, 9]), ValueError, "variable 9 is out of range"),
    (dict(variables=[1, 1]), ValueError, "variable 1 is listed twice"),
    (dict(variables=[0.5]), ValueError, "int variable ids"),
    (dict(delta=0.7), ValueError, "delta parameter must be a number in"),
    (dict(method="gibbs"), ValueError, "method parameter must be one of"),
    (dict(method="dis", time_limit=None), ValueError, "needs a budget"),
    (dict(method="dis", time_limit=-1.0), ValueError, "time_limit parameter"),
    (dict(method="dis", max_samples=1), ValueError, "max_samples parameter"),
    (dict(memory_mb=0), ValueError, "memory_mb parameter"),
    (dict(clock="gpu"), ValueError, "clock parameter must be 'wall' or 'cpu'"),
    (dict(method="exact", memory_mb=1e-9), MemoryError, "exact marginals need"),
])
def test_errors(kw, err, match):
    with pytest.raises(err, match=match):
        marginals(random_model(n=5, seed=0), **kw)


def test_errors_model_type_and_zero_evidence():
    with pytest.raises(TypeError, match="must be a GraphicalModel"):
        marginals("model.uai")
    m = GraphicalModel([2, 2], [Factor((0, 1), np.array([[0.0, -np.inf], [-np.inf, 0.0]]))])
    with pytest.raises(ValueError, match="Z = 0"):
        marginals(m.condition({0: 0, 1: 1}))


def _cli(argv):
    parser = argparse.ArgumentParser(prog="sampling bounds")
    bounds_cli.add_arguments(parser)
    return bounds_cli.main(parser.parse_args(argv))


def test_cli_marginals_csv(tmp_path, capsys):
    m = chain_model(n=8, seed=0)
    path = tmp_path / "c.uai"
    write_uai(m, path)
    out = tmp_path / "marg.csv"
    assert _cli([str(path), "--marginals", "--marginals-out", str(out), "--quiet"]) == 0
    df = pd.read_csv(out)
    assert tuple(df.columns) == COLUMNS and set(df["method"]) == {"exact"}
    np.testing.assert_allclose(df["p"], np.concatenate(brute_marginals(m)[0]), atol=1e-10)
    assert "median width 0" in capsys.readouterr().out
    assert _cli([str(path), "--marginals", "--marginals-method", "dis", "--max-samples", "300",
                 "--i-bound", "1", "--quiet"]) == 0
    df = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert set(df["method"]) == {"dis"} and (df["p_lower"] <= df["p_upper"]).all()


def test_cli_marginals_errors(tmp_path, capsys):
    m = chain_model(n=6, seed=0)
    path = tmp_path / "c.uai"
    write_uai(m, path)
    assert _cli([str(path), "--marginals-out", str(tmp_path / "x.csv")]) == 2
    assert "--marginals-out needs --marginals" in capsys.readouterr().err
    assert _cli([str(path), "--marginals", "--marginals-out", str(tmp_path / "no" / "x.csv")]) == 2
    assert "marginals (--marginals-out)" in capsys.readouterr().err
    assert _cli([str(path), "--marginals", "--marginals-method", "exact", "--memory-mb", "1e-9"]) == 3


def test_joint_coverage_over_seeds():
    # all intervals of a run hold together with probability >= 1 - delta: with delta = 0.3 and
    # 40 short runs, runs with a miss are Binomial(40, <= 0.3): more than 12 + 3 sd = 20 fails
    m = chain_model(n=7, seed=4)
    want = np.concatenate(brute_marginals(m)[0])
    missed = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(40):
            r = marginals(m, method="dis", time_limit=None, max_samples=3000, rng=seed, i_bound=1, delta=0.3)
            missed += not ((r.p_lower <= want + 1e-12) & (want <= r.p_upper + 1e-12)).all()
    assert missed <= 20
