"""Weighted mini-bucket: bound, heuristic, proposal and sampler (contract used by AOBFS / DIS)."""
import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sampling.utils.data import data_path
from sampling.bounds import _wmb, _wmb_py
from sampling.bounds.exact import log_partition, log_partition_enumerate
from sampling.bounds._tables import logsumexp0
from sampling.bounds.model import Factor, GraphicalModel, random_model
from wmb_numpy_ref import logsumexp0_numpy
from sampling.bounds.uai import read_uai
from sampling.bounds.wmb import WeightedMiniBucket
from sampling.exceptions import ConvergenceWarning


def _lse(a, axis=None):
    a = np.asarray(a, dtype=float)
    m = np.max(a, axis=axis, keepdims=True)
    ms = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.exp(a - ms).sum(axis=axis, keepdims=True)) + ms
    return np.squeeze(out, axis=axis) if axis is not None else float(out.ravel()[0])


def _states(m):
    return np.array(list(itertools.product(*[range(int(c)) for c in m.cards])), dtype=np.int64).reshape(-1, m.n_vars)


def _fit(m, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return WeightedMiniBucket(m, **kw).fit()


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(seed=st.integers(0, 2**31 - 1), i_bound=st.integers(0, 3), n_iters=st.sampled_from([0, 4]),
       zero_prob=st.sampled_from([0.0, 0.3]))
def test_bound_and_proposal_on_random_models(seed, i_bound, n_iters, zero_prob):
    m = random_model(7, 10, max_scope=3, max_card=3, zero_prob=zero_prob, scale=1.5, rng=seed)
    exact = log_partition_enumerate(m)
    w = _fit(m, i_bound=i_bound, n_iters=n_iters)
    U = w.log_Z_upper
    assert U >= exact - 1e-9
    if i_bound >= w.pseudo_tree.induced_width:
        assert U == pytest.approx(exact, abs=1e-8) or U == exact == -np.inf
    X = _states(m)
    log_q = w.log_q(X)
    assert _lse(log_q) == pytest.approx(0.0, abs=1e-9)  # q is normalised
    lf = m.log_value(X)
    ok = np.isfinite(lf)
    if ok.any():
        assert np.all(lf[ok] <= log_q[ok] + U + 1e-9)  # f / q <= U  ([3] Eq. 8)
        assert np.isfinite(log_q[ok]).all()  # q covers the support of f


def _subproblem_check(m, w):
    """exp(arc + heuristic)(var = x) >= w(x) * value below (var = x), for every var and a few contexts."""
    pt, X = w.pseudo_tree, _states(m)
    for v in range(m.n_vars):
        sub = pt.subtree(v)
        for row in X[:: max(1, len(X) // 5)]:
            bound = w.log_arc_weight(v, row) + w.log_heuristic(v, row)
            R = np.tile(row, (len(X), 1))
            R[:, sub] = X[:, sub]
            R = np.unique(R, axis=0)
            tot = np.zeros(len(R))
            for u in sub:
                tot += np.take_along_axis(w.log_arc_weight(u, R), R[:, [u]], axis=1)[:, 0]
            for x in range(m.cards[v]):
                sel = R[:, v] == x
                assert _lse(tot[sel]) <= bound[x] + 1e-9
    roots = sum(_lse(w.log_arc_weight(r, X[0]) + w.log_heuristic(r, X[0])) for r in pt.roots)
    assert roots <= w.log_Z_upper + 1e-9
    return roots


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("i_bound, n_iters", [(0, 3), (1, 0), (2, 5), (10, 0)], ids=["i0-mm", "i1", "i2-mm", "exact"])
def test_heuristic_upper_bounds_subproblems(seed, i_bound, n_iters):
    m = random_model(7, 9, max_scope=3, max_card=3, zero_prob=0.2, rng=seed)
    w = _fit(m, i_bound=i_bound, n_iters=n_iters)
    roots = _subproblem_check(m, w)
    if i_bound >= w.pseudo_tree.induced_width:
        assert roots == pytest.approx(log_partition_enumerate(m), abs=1e-8)
    # arc weights sum to log f
    X = _states(m)
    tot = sum(np.take_along_axis(w.log_arc_weight(u, X), X[:, [u]], axis=1)[:, 0] for u in range(m.n_vars))
    np.testing.assert_allclose(tot, m.log_value(X))


def test_sample_frequencies_match_q():
    m = random_model(5, 6, max_scope=3, max_card=3, zero_prob=0.1, rng=11)
    w = _fit(m, i_bound=1, n_iters=3)
    n = 200_000
    X, log_q = w.sample(n, rng=np.random.default_rng(20261121))
    np.testing.assert_allclose(log_q, w.log_q(X), atol=1e-12)
    S = _states(m)
    q = np.exp(w.log_q(S))
    codes = np.ravel_multi_index(X.T, tuple(m.cards))
    freq = np.bincount(codes, minlength=len(S)) / n
    scodes = np.ravel_multi_index(S.T, tuple(m.cards))
    assert np.all(np.abs(freq[scodes] - q) <= 5 * np.sqrt(q * (1 - q) / n) + 1e-12)
    # inject a bias: a sampler off by 2% on the largest state would be caught
    big = np.argmax(q)
    assert abs(freq[scodes[big]] - q[big] * 1.02) > 5 * np.sqrt(q[big] * (1 - q[big]) / n)


def test_sample_with_start_vars_only_touches_the_subtree():
    m = random_model(8, 12, max_scope=3, max_card=3, rng=5)
    w = _fit(m, i_bound=2, n_iters=2)
    pt = w.pseudo_tree
    v = next(u for u in pt.search_order.tolist() if pt.children[u])
    base, _ = w.sample(1, rng=0)
    X, log_q = w.sample(500, rng=1, assignment=base[0], start_vars=[pt.children[v][0]])
    sub = pt.subtree(pt.children[v][0])
    rest = [u for u in range(m.n_vars) if u not in sub]
    assert np.all(X[:, rest] == base[0, rest])
    np.testing.assert_allclose(log_q, w.log_q(X, start_vars=[pt.children[v][0]]), atol=1e-12)
    with pytest.raises(ValueError, match="assignment"):
        w.sample(3, rng=0, start_vars=[v])


def test_importance_weights_bounded_on_pedigree():
    m = read_uai(data_path("uai", "pedigree", "pedigree1.uai"))
    w = _fit(m, i_bound=8, n_iters=3)
    X, log_q = w.sample(2000, rng=0)
    log_w = m.log_value(X) - log_q
    assert np.max(log_w) <= w.log_Z_upper + 1e-9
    # unbiased: the mean weight estimates Z; with U the bound, mean <= U
    assert np.isfinite(log_w).any()


def test_exact_at_induced_width_on_bn0():
    m = read_uai(data_path("uai", "bn", "BN_0.uai"), evidence=data_path("uai", "bn", "BN_0.uai.evid"))
    exact = log_partition(m)
    full = WeightedMiniBucket(m, i_bound=40).fit()
    assert full.log_Z_upper == pytest.approx(exact, abs=1e-8)
    assert full.n_mini_buckets == m.n_vars
    auto = WeightedMiniBucket(m, memory_mb=1024).fit()  # i_bound=None -> largest that fits
    assert auto.i_bound == auto.pseudo_tree.induced_width
    assert auto.log_Z_upper == pytest.approx(exact, abs=1e-8)
    for ib in (2, 5, 8):
        w = _fit(m, i_bound=ib, n_iters=5)
        assert w.log_Z_upper >= exact - 1e-9


def test_reparameterisation_tightens_pedigree1():
    m = read_uai(data_path("uai", "pedigree", "pedigree1.uai"))
    plain = WeightedMiniBucket(m, i_bound=8, n_iters=0).fit()
    tuned = _fit(m, i_bound=8, n_iters=8)
    exact = -14.107169 * np.log(10)
    assert exact <= tuned.log_Z_upper < plain.log_Z_upper - 0.5
    assert tuned.bound_history_[0] == pytest.approx(plain.log_Z_upper)


def test_memory_budget_picks_smaller_i_bound():
    m = read_uai(data_path("uai", "pedigree", "pedigree1.uai"))
    small = _fit(m, memory_mb=0.5, n_iters=0)
    big = _fit(m, memory_mb=64, n_iters=0)
    assert small.i_bound < big.i_bound
    assert small.memory_mb_ <= 0.5 and big.memory_mb_ <= 64
    with pytest.raises(MemoryError, match="memory_mb=0.5"):
        WeightedMiniBucket(m, i_bound=big.i_bound, memory_mb=0.5).fit()


def test_convergence_warning():
    m = read_uai(data_path("uai", "pedigree", "pedigree1.uai"))
    with pytest.warns(ConvergenceWarning, match="did not converge in n_iters=1"):
        WeightedMiniBucket(m, i_bound=6, n_iters=1, tol=0.0).fit()


def test_parameter_validation():
    m = random_model(3, 2, rng=0)
    with pytest.raises(ValueError, match="i_bound"):
        WeightedMiniBucket(m, i_bound=-1)
    with pytest.raises(ValueError, match="memory_mb"):
        WeightedMiniBucket(m, memory_mb=-5)
    with pytest.raises(TypeError, match="GraphicalModel"):
        WeightedMiniBucket("x.uai")
    w = WeightedMiniBucket(m)
    with pytest.raises(RuntimeError, match="fit"):
        w.log_heuristic(0, np.zeros(3, dtype=int))
    w.fit()
    with pytest.raises(ValueError, match="shape"):
        w.log_arc_weight(0, np.zeros(5, dtype=int))


def test_constant_factors_and_unit_variables():
    m = GraphicalModel([1, 2, 2], [Factor((), np.log(3.0)), Factor((0, 1), [[0.0, 1.0]]), Factor((1, 2), np.eye(2))])
    w = WeightedMiniBucket(m, i_bound=0, n_iters=0).fit()
    assert w.log_Z_upper >= log_partition_enumerate(m) - 1e-12
    _subproblem_check(m, w)


# ---------------------------------------------------------------- compiled kernel vs twin

@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(seed=st.integers(0, 2**31 - 1), card=st.integers(1, 5), n=st.integers(0, 9),
       weight=st.sampled_from([1.0, 0.5, 0.01, 3.0]), zero_prob=st.sampled_from([0.0, 0.5, 1.0]))
def test_lse_axis0_matches_twin(seed, card, n, weight, zero_prob):
    rng = np.random.default_rng(seed)
    a = rng.normal(scale=20, size=(card, n))
    a[rng.random(a.shape) < zero_prob] = -np.inf
    out_c, out_p = np.empty(n), np.empty(n)
    _wmb.lse_axis0(a, weight, out_c, np.empty(n))
    _wmb_py.lse_axis0(a, weight, out_p, np.empty(n))
    np.testing.assert_array_equal(np.isneginf(out_c), np.isneginf(out_p))
    fin = np.isfinite(out_p)
    np.testing.assert_allclose(out_c[fin], out_p[fin], rtol=1e-12, atol=1e-12)
    assert not np.isnan(out_c).any()
    np.testing.assert_allclose(logsumexp0(a, weight), logsumexp0_numpy(a, weight), rtol=1e-12, atol=1e-12)


def test_lse_axis0_edge_cases():
    out = np.empty(2)
    _wmb.lse_axis0(np.array([[0.0, -np.inf]]), 1.0, out, np.empty(2))  # a single state
    assert out[0] == 0.0 and out[1] == -np.inf
    _wmb.lse_axis0(np.log(np.array([[1.0, 2.0], [3.0, 2.0]])), 1.0, out, np.empty(2))
    np.testing.assert_allclose(out, np.log([4.0, 4.0]))
    # weight -> 0 approaches the max
    _wmb.lse_axis0(np.array([[1.0, 5.0], [2.0, 5.0]]), 1e-6, out, np.empty(2))
    np.testing.assert_allclose(out, [2.0, 5.0], atol=1e-5)
    assert logsumexp0(np.array([-np.inf, -np.inf])) == -np.inf
    with pytest.raises(ValueError):
        _wmb.lse_axis0(np.zeros((2, 3)), 1.0, np.empty(2), np.empty(3))


# ---------------------------------------------------------------- real instances
def test_pedigree1_exact_at_full_i_bound():
    m = read_uai(data_path("uai", "pedigree", "pedigree1.uai"))
    w = WeightedMiniBucket(m, memory_mb=1024).fit()  # i_bound=None: the induced width fits
    assert w.i_bound >= w.pseudo_tree.induced_width
    assert w.log_Z_upper == pytest.approx(log_partition(m, elim_order=w.elim_order), abs=1e-8)
    assert w.log_Z_upper == pytest.approx(-14.107169 * np.log(10), abs=1e-5)


_PEDIGREE_LOG10_Z = {
    1: -14.107169, 7: -64.8245, 9: -78.5222, 13: -31.1776, 18: -78.143606, 19: -59.0249, 20: -29.6304,
    23: -38.555591, 25: -115.7720, 30: -83.733131, 31: -69.7017, 33: -54.2777, 34: -64.2292, 37: -116.5800,
    38: -54.2500, 39: -102.199094, 40: -87.8848, 41: -76.0389, 42: -30.7614, 44: -63.4735, 50: -22.8800,
}


@pytest.mark.slow
@pytest.mark.parametrize("num", sorted(_PEDIGREE_LOG10_Z))
def test_wmb_bounds_every_shared_pedigree(num):
    from pathlib import Path

    # ../shared beside the repository root (never an absolute path)
    path = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "uai" / "pedigree" / f"pedigree{num}.uai"
    if not path.exists():
        pytest.skip("shared UAI data not present")
    m = read_uai(path)
    w = _fit(m, memory_mb=64, n_iters=3)
    ref = _PEDIGREE_LOG10_Z[num] * np.log(10)
    assert w.log_Z_upper >= ref - 5e-4  # references carry 4-6 decimals of log10 Z
    X, log_q = w.sample(200, rng=num)
    assert np.max(m.log_value(X) - log_q) <= w.log_Z_upper + 1e-9
