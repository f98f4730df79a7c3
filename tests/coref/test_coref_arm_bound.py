"""The O(n) small-arm bound from the factor's structure (coref.gibbs.arm_bound).

Must be a true upper bound: on random small blocks (shipped AMiner, synthetic one-name,
random weights of both signs) fmax_i >= f(i, j) and f(j, i) for every j, feature by
feature inside its interval; racing with it: compiled kernel equals its twin; big
blocks use it instead of the n (n - 1) / 2 pass.
"""
import numpy as np
import pandas as pd
import pytest

from coref.factors import _factors
from coref.factors.names import N_BASE, N_FEATURES
from coref.gibbs import _gibbs, _gibbs_py, arm_bound, bound_table
from coref.gibbs import block as gibbs_block
from coref.synth_block import synthesize_block


def _encs(shipped_model_and_data):
    df, model = shipped_model_and_data
    sizes = df.groupby("block").size().sort_values()
    names = [b for b, s in sizes.items() if 25 <= s <= 120][::20][:4]
    out = [(b, model.encode(df[df["block"] == b])) for b in names]
    sd = synthesize_block(240, rng=5, n_blocks=2)
    out += [(b, model.encode(sd[sd["block"] == b])) for b in sd["block"].unique()]
    return out, model


@pytest.fixture(scope="module")
def encs(shipped_model_and_data):
    return _encs(shipped_model_and_data)


def _pairs(n):
    I, J = np.where(~np.eye(n, dtype=bool))
    return I.astype(np.int64), J.astype(np.int64)


def _exact_max(enc, theta, bias):
    """max_j of f(i, j) and f(j, i) (both orders), from the compiled kernel."""
    n = enc.n
    I, J = _pairs(n)
    f = np.empty(len(I))
    _factors.pair_factors(enc, theta, bias, I, J, f)
    M = np.full((n, n), -np.inf)
    M[I, J] = f
    return np.maximum(M.max(axis=1), M.max(axis=0))


def test_features_lie_in_their_intervals(encs):
    blocks, _ = encs
    for name, enc in blocks:
        I, J = _pairs(enc.n)
        phi = np.empty((len(I), N_FEATURES))
        _factors.pair_features(enc, I, J, phi)
        lo0, hi0, lo1, hi1 = arm_bound.feature_intervals(enc)
        comp1 = np.asarray(enc.comp1)
        same = comp1[I] == comp1[J]
        assert same.any() and (~same).any(), name
        for lo, hi, m in ((lo0, hi0, ~same), (lo1, hi1, same)):
            for who in (I, J):          # the interval of either mention holds the pair
                k_lo = np.flatnonzero((phi[m, :N_BASE] < lo[:, who[m]].T - 1e-12).any(axis=0))
                k_hi = np.flatnonzero((phi[m, :N_BASE] > hi[:, who[m]].T + 1e-12).any(axis=0))
                assert len(k_lo) == 0 and len(k_hi) == 0, (name, k_lo, k_hi)


@pytest.mark.parametrize("weights", ["model", "random"])
def test_bound_is_at_least_the_exact_row_maximum(encs, weights):
    blocks, model = encs
    rng = np.random.default_rng(11)
    for name, enc in blocks:
        if weights == "model":
            theta, bias = np.ascontiguousarray(model.theta_, dtype=np.float64), float(model.bias_)
        else:
            theta, bias = rng.normal(0.0, 2.0, N_FEATURES), float(rng.normal(0.0, 3.0))
        exact = _exact_max(enc, theta, bias)
        fb = arm_bound.feature_bound(enc, theta, bias)
        assert fb.shape == (enc.n,) and np.isfinite(fb).all()
        bad = np.flatnonzero(fb < exact)
        assert len(bad) == 0, (name, bad[:5], fb[bad[:5]], exact[bad[:5]])


def test_bound_of_tiny_blocks_and_bad_theta(encs):
    blocks, model = encs
    enc = blocks[0][1]
    with pytest.raises(ValueError, match="theta must have shape"):
        arm_bound.feature_bound(enc, np.zeros(3), 0.0)
    one = model.encode(synthesize_block(1, rng=0))
    assert arm_bound.feature_bound(one, model.theta_, 0.0).tolist() == [-np.inf]


def test_unknown_feature_layout_gives_none(encs, monkeypatch):
    blocks, model = encs
    monkeypatch.setattr(arm_bound, "KNOWN_FEATURES", arm_bound.KNOWN_FEATURES[:-1] + ("renamed",))
    assert arm_bound.feature_bound(blocks[0][1], model.theta_, 0.0) is None


@pytest.mark.parametrize("share", [0.3, 0.7])
def test_component_bound_evaluates_the_smallest_components_first(encs, share):
    """Against a component-by-component reference: the components in increasing size
    while their ordered pairs fit the budget get their exact maxima (both orders) -- the
    values an unlimited budget gives them, at least the exact within-component maximum --
    and the others keep the budget-0 bound; the same factor count."""
    blocks, model = encs
    theta, bias = np.ascontiguousarray(model.theta_, dtype=np.float64), float(model.bias_)
    for name, enc in blocks:
        comp1 = np.asarray(enc.comp1, dtype=np.int64)
        count = np.bincount(comp1, minlength=enc.n)
        budget = int(share * (count * (count - 1)).sum())
        base, _ = arm_bound.component_bound(enc, theta, bias, 0)
        full, _ = arm_bound.component_bound(enc, theta, bias, 10**12)
        got, got_evals = arm_bound.component_bound(enc, theta, bias, budget)
        evals, done = 0, np.zeros(enc.n, bool)
        for c in np.argsort(count, kind="stable"):
            s = int(count[c])
            if s < 2:
                continue
            if evals + s * (s - 1) > budget:
                break
            mem = np.flatnonzero(comp1 == c)
            I, J = np.repeat(mem, s), np.tile(mem, s)
            I, J = I[I != J], J[I != J]
            f = np.empty(len(I))
            _factors.pair_factors(enc, theta, bias, I, J, f)
            for k in mem:
                assert got[k] >= max(f[I == k].max(), f[J == k].max()), name
            done[mem] = True
            evals += len(I)
        assert got_evals == evals, name
        assert done.any() and (~done & (count[comp1] > 1)).any(), name
        np.testing.assert_array_equal(got[done], full[done], err_msg=name)
        np.testing.assert_array_equal(got[~done], base[~done], err_msg=name)


@pytest.mark.parametrize("max_pairs", [0, 200, 10**6])
def test_component_bound_is_at_least_the_exact_row_maximum(encs, max_pairs):
    blocks, model = encs
    theta, bias = np.ascontiguousarray(model.theta_, dtype=np.float64), float(model.bias_)
    for name, enc in blocks:
        exact = _exact_max(enc, theta, bias)
        fb, evals = arm_bound.component_bound(enc, theta, bias, max_pairs)
        assert (fb >= exact).all(), name
        sizes = np.bincount(np.asarray(enc.comp1))
        assert evals <= max_pairs and evals % 2 == 0
        if max_pairs == 0:
            np.testing.assert_array_equal(fb, arm_bound.feature_bound(enc, theta, bias))
        if max_pairs >= (sizes * (sizes - 1)).sum():
            # every component evaluated: the exact maxima wherever the best partner is
            # in one's own component, and the bound tighter than the intervals alone
            assert evals == (sizes * (sizes - 1)).sum()
            assert (fb <= arm_bound.feature_bound(enc, theta, bias)).all()


def test_racing_with_the_feature_bound_matches_twin(encs):
    blocks, model = encs
    enc = blocks[-1][1]
    theta, bias = np.ascontiguousarray(model.theta_, dtype=np.float64), float(model.bias_)
    n = enc.n
    sub = np.arange(0, n, 2)[:40]              # a sub-block of 40 mentions keeps the twin quick
    fb = arm_bound.feature_bound(enc, theta, bias)
    out = []
    for mod in (_gibbs, _gibbs_py):
        labels = np.arange(n, dtype=np.int64)
        size = np.ones(n, np.int64)
        state = np.array([3, 1, 4, 1], np.uint64)
        hist = np.zeros((3, n), np.int64)
        ev = np.zeros(3, np.int64)
        fmax = fb.copy()
        mod.anneal(enc, theta, bias, labels, size, sub, np.array([1.0, 2.0, 10.0]), np.zeros(3, np.int8),
                   0, 1, 3, 2, fmax, bound_table(0.05, n + 1), state, hist, ev)
        out.append((hist, ev, state))
    for a, b in zip(out[0], out[1]):
        np.testing.assert_array_equal(a, b)
    assert out[0][1][0] < len(sub) * (n - 1)      # no n^2 pass counted, some arms skipped


def test_big_blocks_use_the_feature_bound(monkeypatch):
    from coref.datasets import default_model_path
    from coref.gibbs import GibbsCoref
    from coref.model import load_model
    try:
        model, _ = load_model(default_model_path())
    except (FileNotFoundError, OSError) as exc:  # pragma: no cover
        pytest.skip(f"shipped model absent: {exc}")
    df = synthesize_block(60, rng=2)
    calls = []
    real = gibbs_block.component_bound

    def spy(enc, theta, bias, max_pairs):
        calls.append(enc.n)
        return real(enc, theta, bias, max_pairs)

    monkeypatch.setattr(gibbs_block, "component_bound", spy)
    monkeypatch.setattr(gibbs_block, "BOUND_PAIRS_PER_MENTION", 0)
    res = {}
    for limit in (10**6, 10):
        monkeypatch.setattr(gibbs_block, "EXACT_BOUND_MAX_N", limit)
        g = GibbsCoref(model, sampler="racing", n_sweeps=4, rng=1, record_history=False).fit(df)
        res[limit] = g.n_factor_evals_per_sweep_
    assert calls == [60]                          # only the block above the limit
    # the exact pass counts n (n - 1) / 2 factors in sweep 1; the feature bound none
    assert res[10**6][1] >= 60 * 59 // 2 and res[10][1] < res[10**6][1]


def test_one_mention_blocks_skip_the_bound_and_keep_their_run(monkeypatch):
    """``auto`` races a one-mention block (no matrix to cache): it has no pair to bound, so the bound is not
    built for it, and its run (label, counts, sweeps used) is the one the bound gave."""
    from coref.datasets import default_model_path
    from coref.gibbs import GibbsCoref
    from coref.model import load_model
    try:
        model, _ = load_model(default_model_path())
    except (FileNotFoundError, OSError) as exc:  # pragma: no cover
        pytest.skip(f"shipped model absent: {exc}")
    df = synthesize_block(12, rng=3).iloc[:5].copy()
    df["block"] = [f"b{i}" for i in range(5)]       # five one-mention blocks
    calls = []
    real = gibbs_block.component_bound

    def spy(enc, theta, bias, max_pairs):
        calls.append(enc.n)
        return real(enc, theta, bias, max_pairs)

    monkeypatch.setattr(gibbs_block, "component_bound", spy)
    g = GibbsCoref(model, sampler="auto", n_sweeps=6, rng=1).fit(df)
    assert calls == []
    # the bound as before (n > EXACT_BOUND_MAX_N = 0), for comparison: the module's max() shadowed
    monkeypatch.setattr(gibbs_block, "max", lambda a, b: a, raising=False)
    h = GibbsCoref(model, sampler="auto", n_sweeps=6, rng=1).fit(df)
    assert calls == [1] * 5
    pd.testing.assert_series_equal(g.clusters_, h.clusters_)
    assert np.array_equal(g.n_factor_evals_per_sweep_, h.n_factor_evals_per_sweep_)
    assert g.n_factor_evals_per_block_ == h.n_factor_evals_per_block_
