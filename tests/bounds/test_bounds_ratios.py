"""Certified event probabilities P(A) = Z_A / Z (sampling.bounds.ratios): coverage against
enumeration, one implementation with bounds.marginals, the sampler's draws, errors."""
import itertools
import warnings

import numpy as np
import pytest

from bounds_oracle import chain_model, fit_wmb, random_model
from sampling.bounds import EventBounds, event_probabilities
from sampling.bounds.marginal_bounds import marginals
from sampling.bounds.marginal_bounds import tighten_by_sum
from sampling.bounds.model import Factor, GraphicalModel


def _events(X):
    """Three events of chain_model configurations: x0 = x1, x2 = 0, and x3 >= 1 and x4 >= 1."""
    return np.stack([X[:, 0] == X[:, 1], X[:, 2] == 0, (X[:, 3] >= 1) & (X[:, 4] >= 1)], axis=1)


def brute_events(model, indicators):
    """P(A_j) by enumerating every assignment (the test twin)."""
    xs = np.array(list(itertools.product(*[range(int(c)) for c in model.cards])))
    lv = model.log_value(xs)
    w = np.exp(lv - lv.max())
    return (np.asarray(indicators(xs), dtype=float) * w[:, None]).sum(axis=0) / w.sum()


def _run(model, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return event_probabilities(model, _events, 3, **kw)


@pytest.mark.parametrize("seed", range(3))
def test_intervals_hold_exact_event_probabilities(seed):
    m = chain_model(n=12, seed=seed)
    want = brute_events(m, _events)
    r = _run(m, time_limit=None, max_samples=20000, rng=seed, i_bound=1, delta=1e-3)  # fails w.p. <= 1e-3
    assert isinstance(r, EventBounds) and len(r) == 3 and r.n_samples == 20000 and r.n_bounds == 4
    assert r.meta["delta_each"] == pytest.approx(1e-3 / 8)
    assert ((r.p_lower <= want + 1e-12) & (want <= r.p_upper + 1e-12)).all()
    assert ((r.p_lower <= r.p) & (r.p <= r.p_upper)).all()
    assert r.log_Z_lower <= r.log_Z <= r.log_Z_upper
    assert np.median(r.width) < 0.1  # informative


def test_width_shrinks_with_samples():
    m = chain_model(n=12, seed=1)
    w = [np.median(_run(m, time_limit=None, max_samples=n, rng=4, i_bound=1).width) for n in (2000, 32000)]
    # ~ 1/sqrt(n): 16x the samples, about a quarter of the width (loosely, a 1/n term too)
    assert w[1] < 0.45 * w[0]


@pytest.mark.parametrize("sampler", ["wmb-is", "dis"])
def test_marginals_are_the_events_x_v_equals_x(sampler):
    # one implementation: the sampled marginals are event_probabilities of the events
    # X_v = x (same stream, same joint delta), then tightened by sum_x P = 1
    m = random_model(n=6, seed=3)
    cards = [int(c) for c in m.cards]
    pairs = [(v, x) for v in range(m.n_vars) for x in range(cards[v])]

    def ind(X):
        return np.stack([X[:, v] == x for v, x in pairs], axis=1)

    kw = dict(time_limit=None, max_samples=3000, rng=7, i_bound=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mg = marginals(m, method="dis", sampler=sampler, delta=0.05, **kw)
        # a binary variable's two tests are one: marginals counts it once, so the same
        # tests (delta_each) are event_probabilities' at a larger joint delta
        assert mg.n_bounds == 1 + sum(1 if k == 2 else k for k in cards) < 1 + len(pairs)
        ev = event_probabilities(m, ind, len(pairs), timed_passes=False, sampler=sampler,
                                 delta=mg.meta["delta_each"] * 2 * (1 + len(pairs)), **kw)
    assert ev.meta["delta_each"] == pytest.approx(mg.meta["delta_each"], rel=1e-14)
    assert ev.n_samples == mg.n_samples
    assert ev.log_Z == mg.log_Z and (ev.log_Z_lower, ev.log_Z_upper) == (mg.log_Z_lower, mg.log_Z_upper)
    start = 0
    for v, k in enumerate(cards):
        lo, hi = tighten_by_sum(ev.p_lower[start:start + k], ev.p_upper[start:start + k])
        np.testing.assert_allclose(lo, mg.p_lower[start:start + k], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(hi, mg.p_upper[start:start + k], rtol=1e-12, atol=1e-15)
        start += k


def test_compiled_draws_carry_their_weights():
    # the batched compiled draws: each returned configuration's weight is ln f(x) - ln q(x)
    from sampling.bounds.ratios import _sampler

    m = chain_model(n=10, seed=2)
    wmb = fit_wmb(m, 2, n_iters=3)
    X, log_w = _sampler(wmb, m)(300, np.random.default_rng(0))
    ok = np.isfinite(log_w)
    assert ok.sum() > 100
    np.testing.assert_allclose(log_w[ok], m.log_value(X[ok]) - wmb.log_q(X[ok]), rtol=1e-10, atol=1e-9)
    assert (log_w <= wmb.log_Z_upper + 1e-9).all()


def test_sure_and_impossible_events():
    m = GraphicalModel([2, 2], [Factor.from_values((0, 1), [[1.0, 2.0], [3.0, 4.0]])])
    r = event_probabilities(m, lambda X: np.stack([X[:, 0] >= 0, X[:, 0] > 5], axis=1), 2, time_limit=None,
                            max_samples=4000, rng=0)
    assert r.p[0] == 1.0 and r.p_upper[0] == 1.0 and r.p_lower[0] > 0.99
    assert r.p[1] == 0.0 and r.p_lower[1] == 0.0 and r.p_upper[1] < 0.01


@pytest.mark.parametrize("kw, err, match", [
    (dict(indicators=3), TypeError, "indicators parameter must be callable"),
    (dict(n_events=0), ValueError, "n_events parameter must be an int >= 1"),
    (dict(delta=0.5), ValueError, "delta parameter"),
    (dict(wmb_share=1.0), ValueError, "wmb_share parameter"),
    (dict(clock="sun"), ValueError, "clock parameter"),
    (dict(time_limit=None, max_samples=None), ValueError, "needs a budget"),
    (dict(n_events=2), ValueError, r"indicators\(X\) must have shape"),
])
def test_errors(kw, err, match):
    m = random_model(n=4, seed=0)
    args = dict(indicators=lambda X: X[:, 0] == 0, n_events=1, time_limit=None, max_samples=10)
    args.update(kw)
    with pytest.raises(err, match=match):
        event_probabilities(m, args.pop("indicators"), args.pop("n_events"), **args)
    with pytest.raises(TypeError, match="model parameter must be a GraphicalModel"):
        event_probabilities("m.uai", lambda X: X[:, 0] == 0, 1, max_samples=10)


def test_target_width_stops_early_and_spends_delta_by_look():
    from sampling.bounds.ratios import FIRST_LOOK, look_delta

    m = chain_model(n=12, seed=0)
    want = brute_events(m, _events)
    full = _run(m, time_limit=None, max_samples=200000, rng=1, i_bound=1, delta=1e-3)
    early = _run(m, time_limit=None, max_samples=200000, rng=1, i_bound=1, delta=1e-3, target_width=0.1)
    assert full.meta["n_looks"] == 0 and full.meta["delta_each"] == pytest.approx(1e-3 / 8)
    j = early.meta["n_looks"] - 1  # stopped at its last look
    assert FIRST_LOOK * 2 ** j <= early.n_samples < 200000
    assert early.meta["delta_each"] == pytest.approx(look_delta(1e-3, j) / 8)
    assert early.width.max() <= 0.1 and full.width.max() < 0.1 and full.n_samples == 200000
    assert ((early.p_lower <= want + 1e-12) & (want <= early.p_upper + 1e-12)).all()
    # the shares of delta over all looks sum to delta
    assert sum(look_delta(0.05, i) for i in range(100000)) == pytest.approx(0.05, rel=1e-4)
    with pytest.raises(ValueError, match="target_width parameter"):
        _run(m, max_samples=10, target_width=0.0)
