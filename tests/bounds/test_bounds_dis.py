"""DIS (Lou et al. 2017, Alg. 1, Eq. 13-14, Theorem 1), two-stage, WMB-IS, q_S weights."""
import math
import warnings

import numpy as np
import pytest

from sampling.bounds.aobfs import AOBFS
from sampling.bounds.dis import run
from bounds_oracle import BruteForceHeuristic, brute_log_z, fit_wmb
from bounds_oracle import random_model as _random_model
from sampling.bounds.importance import (FactorEvaluator, ImportanceAccumulator, sample_search_tree)
from sampling.utils.data import data_path
from sampling.bounds.model import Factor, GraphicalModel


def random_model(n=7, seed=0, zeros=0.15, max_card=3):
    return _random_model(n, seed, zeros, max_card, scale=1.5)


PEDIGREE1_LN_Z = -32.4830  # SOURCES.md (our VE: log10 Z = -14.107169)


# ----------------------------------------------------------------- estimator (Eq. 13-14)
def test_accumulator_matches_eq13_eq14_by_hand():
    rng = np.random.default_rng(0)
    log_U = np.log(rng.uniform(5, 10, size=40))
    log_w = log_U + np.log(rng.uniform(0.05, 1.0, size=40))
    acc = ImportanceAccumulator(0.05)
    for i in range(0, 40, 7):  # uneven batches exercise the Chan merge
        acc.add(log_w[i:i + 7], log_U[i:i + 7])
    U, w = np.exp(log_U), np.exp(log_w)
    n = 40
    hm = n / np.sum(1 / U)
    z_hat = hm / n * np.sum(w / U)
    L = math.log(2 / 0.05)
    dev = hm * (math.sqrt(2 * np.var(w / U, ddof=1) * L / n) + 7 * L / (3 * (n - 1)))
    assert acc.log_Z_hat == pytest.approx(math.log(z_hat), rel=1e-12)
    lo, up = acc.bounds()
    assert up == pytest.approx(math.log(z_hat + dev), rel=1e-12)
    assert lo == pytest.approx(math.log(z_hat - dev), rel=1e-12)
    assert not acc.lower_is_markov
    assert acc.bounds(log_U_current=1.0)[1] == 1.0  # min with the deterministic bound


def test_accumulator_markov_fallback_and_tiny_weights():
    acc = ImportanceAccumulator(0.025)
    acc.add([-500.0, -520.0, -505.0], [-300.0, -300.0, -300.0])  # would underflow without scaling
    lo, up = acc.bounds(-300.0)
    assert acc.lower_is_markov
    assert lo == pytest.approx(acc.log_Z_hat + math.log(0.025))
    assert up == -300.0
    assert acc.log_Z_hat == pytest.approx(np.logaddexp.reduce([-500.0, -520.0, -505.0]) - math.log(3))


def test_accumulator_rejects_bad_delta():
    with pytest.raises(ValueError, match="delta"):
        ImportanceAccumulator(1.5)


# ----------------------------------------------------------------- q_S (Prop. 2)
@pytest.mark.parametrize("n_exp", [0, 3, 12])
def test_search_tree_weights_bounded_and_unbiased(n_exp):
    m = random_model(n=6, seed=1)
    lz = brute_log_z(m)
    oracle = BruteForceHeuristic(m, eps=0.4).fit()
    s = AOBFS(m, wmb=oracle).fit(max_expansions=n_exp)
    ev = FactorEvaluator(m, oracle.pseudo_tree.parent)
    log_w, log_U = sample_search_tree(s, ev, 1500, np.random.default_rng(11))
    assert log_U == pytest.approx(s.log_Z_upper_)
    assert np.all(log_w <= log_U + 1e-9)
    w = np.exp(log_w - lz)
    se = w.std(ddof=1) / math.sqrt(w.size)
    assert abs(w.mean() - 1.0) < 5 * se + 1e-9


def test_search_tree_weights_with_real_wmb_are_bounded():
    m = random_model(n=10, seed=2, max_card=3)
    lz = brute_log_z(m)
    w = fit_wmb(m, 1, n_iters=2)
    ev = FactorEvaluator(w.model, w.pseudo_tree.parent)
    from sampling.bounds.importance import FastProposal

    fast = FastProposal(w, ev)
    for backend in ("python", "compiled"):
        s = AOBFS(m, wmb=w, backend=backend).fit(max_expansions=4)
        assert not s.solved_ and s.compiled_ == (backend == "compiled")
        for f in (None, fast) if backend == "python" else (fast,):
            log_w, log_U = sample_search_tree(s, ev, 2000, np.random.default_rng(3), fast=f)
            assert np.all(log_w <= log_U + 1e-8)
            r = np.exp(log_w - lz)
            assert r.std() > 0
            assert abs(r.mean() - 1.0) < 5 * r.std(ddof=1) / math.sqrt(r.size)
    with pytest.raises(ValueError, match="compiled proposal"):
        sample_search_tree(s, ev, 1, np.random.default_rng(0))
    r = np.exp(log_w - lz)
    assert r.std() > 0
    assert abs(r.mean() - 1.0) < 5 * r.std(ddof=1) / math.sqrt(r.size)


@pytest.mark.parametrize("n_exp,n_samp", [(1, 1), (10, 1), (3, 4), (0, 2)])
def test_compiled_dis_rounds_equal_the_step_by_step_loop(n_exp, n_samp):
    """One compiled call of ``dis_rounds`` == Alg. 1 step by step (expand, then sample)."""
    from sampling.bounds.importance import FastProposal, dis_rounds

    m = random_model(n=12, seed=5, max_card=3)
    w = fit_wmb(m, 2, n_iters=2)
    ev = FactorEvaluator(w.model, w.pseudo_tree.parent)
    fast = FastProposal(w, ev)
    batch = AOBFS(m, wmb=w, max_nodes=400).fit(max_expansions=0)
    steps = AOBFS(m, wmb=w, max_nodes=400).fit(max_expansions=0)
    assert batch.compiled_ and steps.compiled_
    g1, g2 = np.random.default_rng(7), np.random.default_rng(7)
    log_w, log_U = dis_rounds(batch, ev, 30, n_exp, n_samp, g1, fast=fast, max_expansions=45)
    ref_w, ref_U, left = [], [], 45
    for _ in range(30):
        if n_exp and steps.can_expand and left > 0:
            left -= steps.expand(min(n_exp, left))
        if steps.solved_:
            break
        lw, lu = sample_search_tree(steps, ev, n_samp, g2, fast=fast)
        ref_w.extend(lw)
        ref_U.extend([lu] * n_samp)
    assert log_w.size == len(ref_w) > 0
    np.testing.assert_array_equal(log_w, ref_w)
    if n_exp == 0:  # zero weights (draws stopped at a zero factor) and non-zero ones
        assert np.isneginf(log_w).any() and np.isfinite(log_w).any()
    np.testing.assert_array_equal(log_U, ref_U)
    assert batch.n_expansions_ == steps.n_expansions_ <= min(45, 30 * n_exp)
    assert batch.log_Z_upper_min_ == steps.log_Z_upper_min_
    assert batch.n_nodes_ == steps.n_nodes_
    assert np.all(np.diff(log_U) <= 1e-12)  # U_S only tightens with a WMB heuristic


def test_wmb_is_batch_equals_per_draw_calls_and_python_twin():
    from sampling.bounds.importance import FastProposal, sample_wmb_is

    m = random_model(n=9, seed=10, zeros=0.3)  # about half the draws hit a zero factor
    w = fit_wmb(m, 2, n_iters=2)
    ev = FactorEvaluator(w.model, w.pseudo_tree.parent)
    fast = FastProposal(w, ev)
    got = sample_wmb_is(w, ev, 50, np.random.default_rng(1), fast=fast)
    g = np.random.default_rng(1)
    ref = [fast.log_constant + lg - lq
           for _, lq, lg in (fast.sample(g, np.zeros(fast.n_vars, dtype=np.int64), fast.roots)
                             for _ in range(50))]
    np.testing.assert_array_equal(got, ref)
    # the batch stops a draw at its first zero factor: both kinds of draw are exercised
    assert np.isneginf(got).any() and np.isfinite(got).any()
    twin = FastProposal(w, ev, pure_python=True)
    u = np.random.default_rng(2).random((20, fast.n_vars))
    a, b = np.empty(20), np.empty(20)
    fast.kernel.sample_batch(fast.roots, u, np.zeros(fast.n_vars, dtype=np.int64), 0.5, a)
    twin.kernel.sample_batch(fast.roots, u, np.zeros(fast.n_vars, dtype=np.int64), 0.5, b)
    np.testing.assert_allclose(a, b, rtol=1e-12)
    assert np.all(got <= w.log_Z_upper + 1e-8)  # f/q <= the WMB bound (Eq. 8)


# ----------------------------------------------------------------- run()
@pytest.mark.parametrize("method", ["dis", "two-stage", "wmb-is", "aobfs", "wmb", "exact"])
def test_run_brackets_brute_force_on_tiny_model(method):
    m = random_model(n=8, seed=4)
    lz = brute_log_z(m)
    tr = run(m, method, time_limit=None, max_samples=300, max_expansions=30, n_expansions=1,
             i_bound=1, rng=0, record_every=5)
    df = tr.to_frame()
    assert list(df.columns[:6]) == ["time_s", "log_Z_upper", "log_Z_lower", "log_Z_hat", "n_samples", "n_nodes"]
    assert np.all(df.log_Z_lower <= lz + 1e-8) and np.all(df.log_Z_upper >= lz - 1e-8)
    assert np.all(df.log_Z_upper_det >= lz - 1e-8) and np.all(df.log_Z_upper <= df.log_Z_upper_det)
    assert np.all(np.diff(df.log_Z_upper_det) <= 0)  # the deterministic bound is monotone
    assert np.all(np.diff(df.time_s) >= 0)
    if method == "exact":
        assert tr.final_log_Z_upper == pytest.approx(lz, abs=1e-9)
    if method in ("dis", "two-stage", "wmb-is"):
        assert tr.final["n_samples"] == 300
        assert abs(tr.final_log_Z_hat - lz) < 1.0


def test_run_is_reproducible_with_deterministic_budgets():
    m = random_model(n=10, seed=5)
    kw = dict(time_limit=None, max_samples=100, max_expansions=5, i_bound=1, record_every=10)
    a = run(m, "dis", rng=7, **kw).to_frame().drop(columns="time_s")
    b = run(m, "dis", rng=7, **kw).to_frame().drop(columns="time_s")
    c = run(m, "dis", rng=8, **kw).to_frame().drop(columns="time_s")
    assert a.equals(b)
    assert not a.equals(c)


def test_dis_solves_small_model_exactly():
    m = random_model(n=6, seed=6)
    lz = brute_log_z(m)
    tr = run(m, "dis", time_limit=None, max_samples=10_000, n_expansions=10, i_bound=1, rng=0)
    assert tr.final_log_Z_upper == pytest.approx(lz, abs=1e-8)
    assert tr.final_log_Z_lower == pytest.approx(lz, abs=1e-8)
    assert tr.final["n_samples"] < 10_000


def test_dis_bracketing_frequency_over_seeds():
    """Each probabilistic bound fails w.p. <= delta; with a loose proposal and few samples
    the whole trace should bracket ln Z in >= 1 - 2 delta of runs (here 40 runs)."""
    m = random_model(n=8, seed=10, zeros=0.05)
    lz = brute_log_z(m)
    oracle = BruteForceHeuristic(m, eps=0.6).fit()
    ok = 0
    n_runs = 40
    for seed in range(n_runs):
        tr = run(m, "dis", wmb=oracle, time_limit=None, max_samples=60, max_expansions=8,
                 n_expansions=1, delta=0.025, rng=seed, record_every=1)
        ok += bool(np.all(tr.log_Z_lower <= lz + 1e-9) and np.all(tr.log_Z_upper >= lz - 1e-9))
    # expected failures <= 2 * 0.025 * 40 = 2; allow a binomial tail margin
    assert ok >= n_runs - 5


def test_biased_weights_are_caught():
    """Inject a bias (weights x 3): the upper bound must then fall below ln Z for some run."""
    m = random_model(n=8, seed=10, zeros=0.05)
    lz = brute_log_z(m)
    rng = np.random.default_rng(0)
    oracle = BruteForceHeuristic(m, eps=0.2).fit()
    ev = FactorEvaluator(m, oracle.pseudo_tree.parent)
    s = AOBFS(m, wmb=oracle).fit(max_expansions=2)
    log_w, log_U = sample_search_tree(s, ev, 2000, rng)
    acc = ImportanceAccumulator(0.025)
    acc.add(log_w - math.log(3.0), log_U)  # biased low by a factor 3
    assert acc.bounds(log_U)[1] < lz


def test_run_on_pedigree1_brackets_known_value():
    from sampling.bounds.uai import read_uai

    m = read_uai(data_path("uai", "pedigree", "pedigree1.uai"))
    from sampling.bounds.wmb import WeightedMiniBucket

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w = WeightedMiniBucket(m, i_bound=8, n_iters=3).fit()
    assert w.log_Z_upper >= PEDIGREE1_LN_Z
    tr = run(m, "dis", wmb=w, time_limit=None, max_samples=60, n_expansions=10, rng=0)
    df = tr.to_frame()
    assert np.all(df.log_Z_upper_det >= PEDIGREE1_LN_Z - 1e-3) and np.all(np.diff(df.log_Z_upper_det) <= 0)
    assert np.all(df.log_Z_upper >= PEDIGREE1_LN_Z - 1e-3)
    assert np.all(df.log_Z_lower <= PEDIGREE1_LN_Z + 1e-3)
    assert tr.meta["n_bound_violations"] == 0


@pytest.mark.parametrize("kw, exc, match", [
    (dict(method="magic"), ValueError, "method"),
    (dict(delta=0.7), ValueError, "delta"),
    (dict(time_limit=-1), ValueError, "time_limit"),
    (dict(time_limit=None), ValueError, "max_samples"),
    (dict(n_samples=0), ValueError, "n_samples"),
    (dict(n_samples=1.5), TypeError, "n_samples"),
    (dict(memory_mb=0), ValueError, "memory_mb"),
    (dict(rng="seed"), TypeError, "rng"),
    (dict(clock="moon"), ValueError, "clock"),
])
def test_run_error_paths(kw, exc, match):
    m = random_model(n=4, seed=0)
    with pytest.raises(exc, match=match):
        run(m, **kw)


def test_cpu_clock_budget():
    m = random_model(n=4, seed=0)
    for method in ("wmb-is", "dis"):
        tr = run(m, method, time_limit=0.2, rng=0, clock="cpu")
        assert tr.meta["clock"] == "cpu"
        assert 0.0 <= tr.time_s[0] and tr.time_s[-1] < 0.2 + 0.1 and np.all(np.diff(tr.time_s) >= 0)


# ----------------------------------------------------------------- compiled kernels vs twins
def test_fast_proposal_kernel_matches_twin_and_wmb():
    from sampling.bounds.importance import FastProposal

    m = random_model(n=10, seed=12, max_card=3)
    w = fit_wmb(m, 2, n_iters=2)
    ev = FactorEvaluator(w.model, w.pseudo_tree.parent)
    fc, fp = FastProposal(w, ev), FastProposal(w, ev, pure_python=True)
    rng = np.random.default_rng(0)
    for trial in range(20):
        a = np.zeros(m.n_vars, dtype=np.int64)
        starts = np.asarray(w.pseudo_tree.roots, dtype=np.int64)
        u = rng.random(m.n_vars)
        x1, x2 = a.copy(), a.copy()
        q1, g1 = fc.kernel.sample(starts, x1, u)
        q2, g2 = fp.kernel.sample(starts, x2, u)
        assert np.array_equal(x1, x2)
        assert q1 == pytest.approx(q2, abs=1e-12) and (g1 == g2 or g1 == pytest.approx(g2, abs=1e-12))
        assert q1 == pytest.approx(float(w.log_q(x1[None])[0]), abs=1e-9)
        lf = float(ev.log_value(x1[None])[0])
        assert (lf == -math.inf and g1 == -math.inf) or lf == pytest.approx(g1 + ev.log_constant, abs=1e-9)
    # a sub-tree draw keeps the ancestors and changes nothing outside the sub-tree
    v = int(np.flatnonzero(w.pseudo_tree.parent >= 0)[0])
    a = rng.integers(0, 1, size=m.n_vars)
    x, q, g = fc.sample(rng, a, np.array([v]))
    outside = np.setdiff1d(np.arange(m.n_vars), w.pseudo_tree.subtree(v))
    assert np.array_equal(x[outside], a[outside])


def test_lookup_kernel_matches_twin_and_wmb_queries():
    from sampling.bounds import _aobfs, _aobfs_py
    from sampling.bounds._lookup import lookup_arrays

    m = random_model(n=10, seed=13, max_card=3)
    w = fit_wmb(m, 2, n_iters=2)
    cards = np.asarray(w.model.cards, dtype=np.int64)
    rng = np.random.default_rng(1)
    for per_var, ref in ((w.tables.arc, w.log_arc_weight), (w.tables.heuristic, w.log_heuristic)):
        kc = _aobfs.LookupSum(*lookup_arrays(cards, per_var))
        kp = _aobfs_py.LookupSum(*lookup_arrays(cards, per_var))
        for _ in range(30):
            a = np.array([rng.integers(0, c) for c in cards], dtype=np.int64)
            k = int(rng.integers(0, m.n_vars))
            o1, o2 = np.empty(cards[k]), np.empty(cards[k])
            kc.rows(k, a, o1)
            kp.rows(k, a, o2)
            np.testing.assert_array_equal(o1, o2)
            np.testing.assert_allclose(o1, ref(k, a), atol=1e-12)


def test_accumulator_scalar_path_equals_batch_path():
    rng = np.random.default_rng(5)
    log_U = np.log(rng.uniform(5, 10, size=50)) - 300
    log_w = log_U + np.log(rng.uniform(0.0, 1.0, size=50))
    a, b = ImportanceAccumulator(0.025), ImportanceAccumulator(0.025)
    for lw, lu in zip(log_w, log_U):
        a.add(lw, lu)
    b.add(log_w, log_U)
    assert a.n == b.n == 50
    assert a.log_Z_hat == pytest.approx(b.log_Z_hat, rel=1e-12)
    np.testing.assert_allclose(a.bounds(), b.bounds(), rtol=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["dis", "two-stage", "wmb-is"])
def test_pedigree1_bracketing_over_seeds(method):
    """Statistical bracketing on real data: >= 1 - 2 delta of runs bracket ln Z at every
    trace point (12 runs of 600 samples; expected failures <= 0.6, allow 2)."""
    from sampling.bounds.uai import read_uai
    from sampling.bounds.wmb import WeightedMiniBucket

    m = read_uai(data_path("uai", "pedigree", "pedigree1.uai"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w = WeightedMiniBucket(m, i_bound=8, n_iters=3).fit()
    ok = 0
    for seed in range(12):
        tr = run(m, method, wmb=w, time_limit=None, max_samples=600, max_expansions=3000,
                 n_expansions=10, rng=seed, record_every=5)
        assert np.all(tr.log_Z_upper >= PEDIGREE1_LN_Z - 1e-3)
        ok += bool(np.all(tr.log_Z_lower <= PEDIGREE1_LN_Z + 1e-3))
    assert ok >= 10


EDGE_MODELS = {
    "single-var": GraphicalModel([3], [Factor((0,), np.log([1.0, 2.0, 3.0]))]),
    "zero-Z": GraphicalModel([2, 2], [Factor((0, 1), np.full((2, 2), -np.inf))]),
    "constant+isolated": GraphicalModel([2, 2, 1, 3], [Factor((), np.array(1.5)),
                                                        Factor((0, 1), np.log([[1, 2], [3, 4.0]])),
                                                        Factor((2, 3), np.log([[1, 2, 3.0]]))]),
    "card-1": GraphicalModel([1, 2, 1], [Factor((0, 1), np.log([[1, 2.0]])), Factor((1, 2), np.log([[1], [3.0]]))]),
}


@pytest.mark.parametrize("name", list(EDGE_MODELS))
@pytest.mark.parametrize("method", ["dis", "two-stage", "wmb-is", "aobfs", "wmb", "exact"])
def test_edge_models(name, method):
    m = EDGE_MODELS[name]
    lz = brute_log_z(m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = run(m, method, time_limit=None, max_samples=50, max_expansions=20, rng=0)
    assert not np.isnan(tr.log_Z_upper).any() and not np.isnan(tr.log_Z_lower).any()
    assert np.all(tr.log_Z_lower <= lz + 1e-9) and np.all(tr.log_Z_upper >= lz - 1e-9)


@pytest.mark.parametrize("method", ["dis", "wmb-is", "two-stage", "aobfs"])
def test_run_keeps_the_budget_when_the_wmb_used_it_up(method):
    """The budget holds for the whole call: once the first (cheap) WMB has used it up the
    run returns that bound, without a search or sampling phase."""
    m = random_model(n=8, seed=9)
    lz = brute_log_z(m)
    tr = run(m, method, time_limit=1e-9, i_bound=1, rng=0)
    assert tr.n_samples[-1] == 0 and tr.n_expansions[-1] == 0
    assert tr.final_log_Z_upper == tr.meta["log_Z_wmb"] >= lz - 1e-9
    assert tr.final_log_Z_lower == -np.inf


def test_run_splits_the_memory_budget_once():
    """run gives the WMB its tables and the search tree the rest (issue 15: the split used
    to be redone inside AOBFS); the node cap follows from the search share."""
    from sampling.bounds.aobfs import NODE_BYTES_COMPILED

    m = random_model(n=10, seed=3)
    tr = run(m, "dis", time_limit=None, i_bound=2, max_samples=20, memory_mb=2.0, rng=0)
    split = tr.meta["memory_split_mb"]
    assert split["wmb"] > 0 and split["search"] == pytest.approx(2.0 - split["wmb"])
    assert tr.meta["max_nodes"] == max(int(split["search"] * 2**20 / NODE_BYTES_COMPILED), 16)


# ------------------------------------------------ past the memory limit (issue 15, item 2)
@pytest.mark.parametrize("seed", [5, 6])
def test_dis_keeps_improving_past_the_node_budget(seed):
    """A 60-node tree: with ``past_memory="search"`` DIS goes on searching (memory-limited,
    Alg. 2 of Lou et al. AAAI 2017) and sampling after the tree is full; its deterministic
    bound keeps falling below where the fixed tree ("sample") stops, every trace point
    brackets ln Z and the deterministic bound never goes below it."""
    m = random_model(n=12, seed=seed, max_card=3)
    lz = brute_log_z(m)
    kw = dict(method="dis", time_limit=None, max_samples=20000, max_nodes=60, i_bound=2, rng=3, record_every=1)
    fixed = run(m, past_memory="sample", **kw).to_frame()
    lim = run(m, past_memory="search", **kw)
    df = lim.to_frame()
    for d in (fixed, df):
        assert (d.log_Z_upper >= lz - 1e-9).all() and (d.log_Z_lower <= lz + 1e-9).all()
        assert (d.log_Z_upper_det >= lz - 1e-9).all()
        assert np.all(np.diff(d.log_Z_upper_det) <= 0)
    assert (df.n_nodes <= 60).all()  # the plain tree stops at the first expansion past 60
    # the fixed tree: full after a few expansions, then only sampling (bounds still tighten)
    full = fixed[fixed.n_expansions == fixed.n_expansions.iloc[-1]]
    assert fixed.n_expansions.iloc[-1] < 30 and full.log_Z_upper_det.nunique() == 1
    assert full.n_samples.iloc[-1] > 100 * max(full.n_samples.iloc[0], 1)
    assert full.log_Z_lower.iloc[-1] > full.log_Z_lower.iloc[0]
    assert full.log_Z_upper.iloc[-1] < full.log_Z_upper.iloc[0]
    # memory-limited: collapses, many more expansions, a deterministic bound below the
    # fixed tree's (here it reaches ln Z: the run ends solved)
    assert lim.meta["n_collapses"] > 0 and df.n_expansions.iloc[-1] > 10 * fixed.n_expansions.iloc[-1]
    assert df.log_Z_upper_det.iloc[-1] < fixed.log_Z_upper_det.iloc[-1] - 1e-3
    assert df.log_Z_upper_det.iloc[-1] == pytest.approx(lz, abs=1e-6)


def test_two_stage_samples_from_the_full_tree():
    """Two-stage searches to the node budget, then samples from that tree: the
    probabilistic bounds keep tightening while the tree (and U_S) stays fixed."""
    m = random_model(n=12, seed=6, max_card=3)
    lz = brute_log_z(m)
    df = run(m, "two-stage", time_limit=None, max_samples=20000, max_nodes=60, i_bound=2, rng=3,
             record_every=1).to_frame()
    assert (df.log_Z_upper >= lz - 1e-9).all() and (df.log_Z_lower <= lz + 1e-9).all()
    assert (df.log_Z_upper_det >= lz - 1e-9).all()
    samp = df[df.n_samples > 0]
    assert samp.n_expansions.nunique() == 1 and samp.log_Z_upper_det.nunique() == 1
    assert samp.n_samples.iloc[-1] == 20000
    assert samp.log_Z_upper.iloc[-1] - samp.log_Z_lower.iloc[-1] < 0.1 * (samp.log_Z_upper.iloc[0] - samp.log_Z_lower.iloc[0])


def test_run_rejects_bad_past_memory():
    m = random_model(n=4, seed=1)
    with pytest.raises(ValueError, match="past_memory"):
        run(m, "dis", time_limit=None, max_samples=5, past_memory="drop")
