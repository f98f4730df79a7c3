"""DIS draws with their configurations (sampling.bounds.dis_stream, AndOrTree.dis_samples):
compiled kernel == Python twin, weights == dis_rounds, exact marginals of tiny models."""
import itertools
import math
import warnings

import numpy as np
import pytest

from bounds_oracle import fit_wmb, random_model
from sampling.bounds.aobfs import AOBFS
from sampling.bounds.dis_stream import DisStream
from sampling.bounds.importance import FactorEvaluator, FastProposal
from sampling.bounds.marginal_bounds import marginals
from sampling.bounds._dis_samples_py import SplitMix64


def loose_model():
    """11 variables, i-bound 1: the WMB bound is loose (mean w / U about 0.5), so the
    search tree matters and the rejection draws below solved nodes do reject."""
    m = random_model(11, 3, 0.15, 3, scale=1.5)
    return m, fit_wmb(m, 1, n_iters=1)


def brute(model):
    xs = np.array(list(itertools.product(*[range(int(c)) for c in model.cards])))
    lv = model.log_value(xs)
    return xs, np.exp(lv - lv.max())


def test_splitmix64_reference_values():
    # the first outputs of splitmix64 for seed 1234567 (Vigna's reference implementation)
    r = SplitMix64(1234567)
    want = [6457827717110365317, 3203168211198807973, 9817491932198370423]
    assert [r.next() for _ in range(3)] == [(w >> 11) / 2.0**53 for w in want]


@pytest.mark.parametrize("n_exp,n_samp", [(0, 3), (3, 2), (40, 1)])
def test_compiled_stream_equals_python_twin(n_exp, n_samp):
    m, w = loose_model()
    c = DisStream(w, m, 64, n_expansions=n_exp, n_samples=n_samp)
    p = DisStream(w, m, 64, n_expansions=n_exp, n_samples=n_samp, backend="python")
    assert c.search.compiled_ and not p.search.compiled_
    for k in (50, 70):  # two calls: the tree goes on growing between them
        Xc, wc, uc = c.draw(k, np.random.default_rng(k))
        Xp, wp, up = p.draw(k, np.random.default_rng(k))
        assert Xc.shape == Xp.shape == (-(-k // n_samp) * n_samp, m.n_vars)
        ok = np.isfinite(wc)
        np.testing.assert_array_equal(ok, np.isfinite(wp))
        np.testing.assert_array_equal(Xc[ok], Xp[ok])
        np.testing.assert_allclose(wc[ok], wp[ok], rtol=1e-12)
        np.testing.assert_array_equal(uc, up)
        assert np.all(wc <= uc + 1e-9)
    assert (c.n_tries, c.n_subproblems, c.n_capped) == (p.n_tries, p.n_subproblems, p.n_capped)
    assert c.search.n_expansions_ == p.search.n_expansions_
    if n_exp:
        assert c.n_tries > c.n_subproblems > 0  # rejections happened


def test_weights_equal_dis_rounds():
    """Drawing the configurations below solved nodes does not change the DIS weights."""
    m, w = loose_model()
    ev = FactorEvaluator(w.model, w.pseudo_tree.parent)
    fast = FastProposal(w, ev)
    a = AOBFS(m, wmb=w, max_nodes=500).fit(max_expansions=0)
    b = AOBFS(m, wmb=w, max_nodes=500).fit(max_expansions=0)
    n, nv = 60, m.n_vars
    u = np.random.default_rng(3).random((n, nv))
    seeds = np.arange(n, dtype=np.uint64)
    w1, u1, w2, u2 = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    k1 = a.compiled_tree.dis_rounds(fast.kernel, n, 2, 1, -1, u, np.zeros(nv, dtype=np.int64), w1, u1)
    X = np.empty((n, nv), dtype=np.int64)
    k2 = b.compiled_tree.dis_samples(fast.kernel, n, 2, 1, -1, u, seeds, 1000, X, w2, u2, np.zeros(3, dtype=np.int64))
    assert k2 == n and 0 < k1 < n and b.compiled_tree.solved  # dis_rounds stops at a solved root
    np.testing.assert_array_equal(w1[:k1], w2[:k1])
    np.testing.assert_array_equal(u1[:k1], u2[:k1])
    np.testing.assert_array_equal(w2[k1:], u2[k1:])  # then every draw has weight U_S = Z
    ok = np.isfinite(w2)
    np.testing.assert_array_equal(m.log_value(X[ok]) > -np.inf, True)  # whole, feasible configurations


@pytest.mark.parametrize("n_exp", [0, 5, 40, 10**5])
def test_draws_give_exact_marginals(n_exp):
    """Self-normalised marginals of the draws = enumeration, within 4.5 standard errors, from
    the root-level proposal up to a solved tree (every draw then exact by rejection)."""
    m, w = loose_model()
    s = DisStream(w, m, 64, n_expansions=0)
    s.search.expand(n_exp)
    X, log_w, log_U = s.draw(60000, np.random.default_rng(n_exp))
    r = np.exp(log_w - log_U)
    xs, pw = brute(m)
    worst = 0.0
    for v in range(m.n_vars):
        exact = np.bincount(xs[:, v], weights=pw, minlength=int(m.cards[v])) / pw.sum()
        for x in range(int(m.cards[v])):
            d = r * ((X[:, v] == x) - exact[x])  # delta method: the ratio's error is mean(d) / mean(r)
            se = d.std(ddof=1) / math.sqrt(r.size) / r.mean()
            est = float((r * (X[:, v] == x)).sum() / r.sum())
            if se > 0:
                worst = max(worst, abs(est - exact[x]) / se)
            else:
                assert est == pytest.approx(exact[x], abs=1e-12)
    assert worst < 4.5
    assert s.n_capped == 0
    if n_exp == 10**5:
        assert s.search.solved_ and np.allclose(r, 1.0) and s.n_tries > s.n_subproblems


@pytest.mark.parametrize("seed", range(3))
def test_dis_marginal_intervals_hold_and_beat_wmb_is(seed):
    m = random_model(11, seed + 3, 0.15, 3, scale=1.5)
    xs, pw = brute(m)
    exact = np.concatenate([np.bincount(xs[:, v], weights=pw, minlength=int(m.cards[v])) / pw.sum()
                            for v in range(m.n_vars)])
    kw = dict(method="dis", time_limit=None, max_samples=20000, delta=0.05, i_bound=1, rng=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = marginals(m, sampler="dis", **kw)
        i = marginals(m, sampler="wmb-is", **kw)
    assert d.meta["sampler"] == "dis" and i.meta["sampler"] == "wmb-is"
    assert d.n_samples == i.n_samples == 20000
    assert np.all((d.p_lower <= exact + 1e-12) & (exact <= d.p_upper + 1e-12))
    assert d.log_Z_lower <= math.log(pw.sum()) + float(m.log_value(xs).max()) <= d.log_Z_upper + 1e-9
    assert np.all((i.p_lower <= exact + 1e-12) & (exact <= i.p_upper + 1e-12))
    if seed == 0:  # the loose model (mean w / U about 0.5 under WMB-IS): the search tree tightens
        # U_S, so the weights vary less (the intervals keep the width of the 0/1 indicators)
        print(d.log_Z_upper - d.log_Z_lower, i.log_Z_upper - i.log_Z_lower, np.median(d.width), np.median(i.width))
        assert d.log_Z_upper - d.log_Z_lower < 0.5 * (i.log_Z_upper - i.log_Z_lower)
        assert np.median(d.width) < np.median(i.width)


def test_bad_sampler_and_backend():
    m, w = loose_model()
    with pytest.raises(ValueError, match="sampler parameter"):
        marginals(m, method="dis", max_samples=10, sampler="gibbs")
    with pytest.raises(ValueError, match="backend parameter"):
        DisStream(w, m, 64, backend="cuda")


def test_wmb_passes_follow_the_given_clock():
    """``WeightedMiniBucket(clock=...)``: marginals(clock="cpu") times the WMB passes on the
    CPU clock, not on the wall clock."""
    from sampling.bounds.wmb import WeightedMiniBucket
    from bounds_oracle import chain_model

    m = chain_model(n=14, seed=2)
    ticks = iter(range(0, 10**6, 10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = WeightedMiniBucket(m, i_bound=2, n_iters=5, tol=0.0, time_limit=5.0,
                                  clock=lambda: next(ticks)).fit()  # 10 s per reading: no pass
        frozen = WeightedMiniBucket(m, i_bound=2, n_iters=5, tol=0.0, time_limit=5.0, clock=lambda: 0.0).fit()
    assert fast.n_iters_ == 0 and frozen.n_iters_ >= 2
    assert frozen.log_Z_upper <= fast.log_Z_upper


def test_exact_wmb_samples_without_the_search():
    """With an exact WMB (i-bound >= induced width) the proposal is the model: the DIS stream
    falls back to its draws (every weight Z), and the intervals still hold."""
    m = random_model(6, 1, 0.0, 3)
    xs, pw = brute(m)
    exact = np.concatenate([np.bincount(xs[:, v], weights=pw, minlength=int(m.cards[v])) / pw.sum()
                            for v in range(m.n_vars)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = marginals(m, method="dis", time_limit=None, max_samples=4000, i_bound=6, rng=0)
    assert r.meta["sampler"] == "wmb-is" and "n_expansions" not in r.meta
    assert r.log_Z_upper == pytest.approx(r.meta["log_Z_wmb"])
    assert np.all((r.p_lower <= exact + 1e-12) & (exact <= r.p_upper + 1e-12))
