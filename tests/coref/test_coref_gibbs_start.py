"""Cheap first clusterings of big blocks (coref.gibbs.start, coref.gibbs._start and its twin):
the greedy rule checked against an independent computation, compiled vs twin, the "auto"
threshold, and the precedence of fit(initial=...) / fit(fixed=...)."""
import numpy as np
import pandas as pd
import pytest

from coref.factors._factors_py import block_factor
from coref.gibbs import GibbsCoref, _gibbs_py, _start, _start_py
from coref.gibbs import block as gibbs_block
from coref.gibbs import start as gibbs_start
from coref.gibbs.start import coauthor_greedy, component_start
from coref.model.block_prior import block_bias_evals
from coref.synth_block import synthesize_block


@pytest.fixture(scope="module")
def small(shipped_model_and_data):
    """A 150-mention one-name block, encoded by the shipped model."""
    _, model = shipped_model_and_data
    df = synthesize_block(150, rng=3).sort_values("mention_id").reset_index(drop=True)
    enc = model.encode(df)
    bias, _ = block_bias_evals(model, enc)
    return df, model, enc, bias


def _reference(enc, theta, bias, labels, m):
    """Re-derive every greedy decision from the final labels (independent of the kernels):
    candidates = clusters of earlier mentions sharing a coauthor id, scores over the first m
    members, scaled by size / m."""
    n = enc.n
    ptr, ids = np.asarray(enc.co_ptr), np.asarray(enc.co_ids)
    co = [set(ids[ptr[i]:ptr[i + 1]].tolist()) for i in range(n)]
    expect = np.empty(n, np.int64)
    joined = 0
    for i in range(n):
        cands = sorted({int(labels[j]) for j in range(i) if co[i] & co[j]})
        best, bs = -1, 0.0
        for c in cands:
            members = [j for j in range(i) if labels[j] == c]
            head = members[:m]
            s = 0.0
            for j in head:
                s += block_factor(enc, theta, bias, i, j)
            score = s * (len(members) / len(head))
            if score > 0.0 and (best < 0 or score > bs):
                best, bs = c, score
        if best < 0:
            best = len(set(expect[:i].tolist()))
        else:
            joined += 1
        expect[i] = best
    return expect, joined


@pytest.mark.parametrize("m", [2, 1000])
def test_greedy_rule_compiled_and_twin(small, m):
    _, model, enc, bias = small
    a, ea = coauthor_greedy(enc, model.theta_, bias, max_members=m)
    b, eb = coauthor_greedy(enc, model.theta_, bias, max_members=m, kernel=_start_py)
    np.testing.assert_array_equal(a, b)
    assert ea == eb > 0
    want, joined = _reference(enc, np.asarray(model.theta_, float), bias, a, m)
    np.testing.assert_array_equal(a, want)
    assert 0 < joined < enc.n                       # some join, some open clusters
    # numbered in order of first mention
    _, first = np.unique(a, return_index=True)
    np.testing.assert_array_equal(a[np.sort(first)], np.arange(len(first)))


def test_greedy_counts_factors_exactly(small):
    """With m >= n every candidate cluster is summed whole: factors = sum of candidate sizes."""
    _, model, enc, bias = small
    lab, ev = coauthor_greedy(enc, model.theta_, bias, max_members=enc.n)
    ptr, ids = np.asarray(enc.co_ptr), np.asarray(enc.co_ids)
    co = [set(ids[ptr[i]:ptr[i + 1]].tolist()) for i in range(enc.n)]
    want = 0
    for i in range(enc.n):
        cands = {int(lab[j]) for j in range(i) if co[i] & co[j]}
        want += sum(int((lab[:i] == c).sum()) for c in cands)
    assert ev == want


@pytest.mark.parametrize("kernel", [_start, _start_py], ids=["compiled", "twin"])
def test_greedy_errors(small, kernel):
    _, model, enc, bias = small
    th = np.ascontiguousarray(model.theta_, dtype=np.float64)
    with pytest.raises(ValueError, match="max_members must be >= 1; got 0"):
        kernel.greedy_start(enc, th, bias, 0, np.zeros(enc.n, np.int64))
    with pytest.raises(ValueError, match=r"labels must have one entry per mention \(150\); got 3"):
        kernel.greedy_start(enc, th, bias, 4, np.zeros(3, np.int64))


def test_component_start(small):
    _, _, enc, _ = small
    lab = component_start(enc)
    comp = np.asarray(enc.comp1)[: enc.n]
    # the same partition as comp1, numbered by first mention
    assert len(np.unique(lab)) == len(np.unique(comp))
    assert all(len(np.unique(comp[lab == c])) == 1 for c in np.unique(lab))
    _, first = np.unique(lab, return_index=True)
    np.testing.assert_array_equal(lab[np.sort(first)], np.arange(len(first)))


@pytest.mark.parametrize("init", ["greedy", "components"])
def test_auto_threshold_and_precedence(small, monkeypatch, init):
    df, model, enc, bias = small
    start = (coauthor_greedy(enc, model.theta_, bias)[0] if init == "greedy"
             else component_start(enc))
    assert len(np.unique(start)) < len(df)
    monkeypatch.setattr(gibbs_block, "BIG_INIT", init)
    # below the threshold: singletons
    g = GibbsCoref(model, n_sweeps=2, rng=5, init="auto").fit(df)
    np.testing.assert_array_equal(g.labels_history_[0], np.arange(len(df)))
    monkeypatch.setattr(gibbs_block, "START_MIN_N", len(df))
    g = GibbsCoref(model, n_sweeps=2, rng=5, init="auto").fit(df)
    np.testing.assert_array_equal(g.labels_history_[0], start)
    same = GibbsCoref(model, n_sweeps=2, rng=5, init=init).fit(df)      # asked by name
    np.testing.assert_array_equal(same.labels_, g.labels_)
    assert same.n_factor_evals_ == g.n_factor_evals_
    # fit(initial=...) takes precedence; fit(fixed=...) alone: singletons
    keys = np.array([f"k{k % 7}" for k in range(len(df))], dtype=object)
    g2 = GibbsCoref(model, n_sweeps=2, rng=5, init="auto").fit(df, initial=keys)
    np.testing.assert_array_equal(g2.labels_history_[0], np.arange(len(df)) % 7)
    fixed = np.zeros(len(df), bool)
    fixed[::5] = True
    g3 = GibbsCoref(model, n_sweeps=2, rng=5, init="auto").fit(df, fixed=fixed)
    np.testing.assert_array_equal(g3.labels_history_[0], np.arange(len(df)))


def test_greedy_start_fit_compiled_equals_twin(small, monkeypatch):
    """init="auto" above a lowered threshold: the same clusters and factor counts through the
    compiled kernels and through both twins (start and sweeps); same seed, same result."""
    df, model, _, _ = small
    monkeypatch.setattr(gibbs_block, "START_MIN_N", 100)
    monkeypatch.setattr(gibbs_block, "BIG_INIT", "greedy")
    kw = dict(sampler="racing", n_sweeps=3, rng=11, init="auto", t_start=0.5, t_end=0.1)
    a = GibbsCoref(model, **kw).fit(df)
    a2 = GibbsCoref(model, **kw).fit(df)
    np.testing.assert_array_equal(a.labels_history_, a2.labels_history_)
    monkeypatch.setattr(gibbs_start, "_start", _start_py)
    monkeypatch.setattr(gibbs_block, "_gibbs", _gibbs_py)
    b = GibbsCoref(model, **kw).fit(df)
    np.testing.assert_array_equal(a.labels_history_, b.labels_history_)
    np.testing.assert_array_equal(a.n_factor_evals_per_sweep_, b.n_factor_evals_per_sweep_)
    assert a.n_factor_evals_per_sweep_[0] > 0        # the greedy's factors count in sweep 0
    assert len(np.unique(a.labels_history_[0])) < len(df)
    pd.testing.assert_series_equal(a.clusters_, b.clusters_)


def test_default_is_auto_with_a_cheap_big_start():
    from coref.settings import INITS, make_gibbs_settings

    assert make_gibbs_settings().init == "auto"
    assert gibbs_block.BIG_INIT in set(INITS) - {"auto"}
    assert gibbs_block.START_MIN_N == gibbs_block.STILL_MIN_N
