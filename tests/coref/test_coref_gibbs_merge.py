"""GibbsCoref(merge_moves=...): whole-cluster merge proposals between sweeps."""
import numpy as np
import pandas as pd
import pytest

from coref.factors._factors import factor_matrix
from coref.encoding.blocks import encode_mentions
from coref.gibbs import GibbsCoref
from coref.gibbs.block import KernelRun
from coref.gibbs.merges import merge_moves
from coref.settings import make_gibbs_settings
from tests.coref.test_coref_gibbs import _Model, _df, _theta


def _log_p(df, model, labels):
    """sum_{i < j, y_i = y_j} f(x_i, x_j) over the blocks of df (rows aligned with labels)."""
    total = 0.0
    for _, idx in df.groupby("block").indices.items():
        enc = encode_mentions(df.iloc[idx])
        F = np.empty((enc.n, enc.n))
        factor_matrix(enc, model.theta_, model.bias_, F)
        same = labels[idx][:, None] == labels[idx][None, :]
        total += np.triu(F * same, 1).sum()
    return total


@pytest.mark.parametrize("sampler,exact_max", [("exact", 64), ("racing", 64), ("racing", 0)])
def test_merges_respect_fixed_and_join_free_clusters(sampler, exact_max):
    # one author everywhere: every factor strongly positive, so every merge is accepted
    df = _df(n=16, seed=0)
    df["coauthors"] = [["Jiawei Han", "Philip Yu"]] * len(df)
    df["venue"] = "KDD"
    m = _Model(_theta() * 3.0, 2.0)
    keys = np.array(["a"] * 4 + ["b"] * 4 + ["c"] * 4 + ["d"] * 4, dtype=object)
    fixed = np.array([True] * 4 + [True] * 4 + [False] * 8)
    g = GibbsCoref(m, sampler=sampler, n_sweeps=4, rng=1, merge_moves=30, t_start=0.1,
                   merge_exact_max=exact_max, patience=0).fit(df, initial=keys, fixed=fixed)
    lab = g.labels_
    assert len(set(lab[:4])) == 1 and len(set(lab[4:8])) == 1 and lab[0] != lab[4]
    assert set(lab[8:]) <= {lab[0], lab[4]}   # the free mentions all joined a fixed cluster
    # the same with merges off, only single moves: the model objective is not higher
    g0 = GibbsCoref(m, sampler=sampler, n_sweeps=4, rng=1, t_start=0.1, patience=0).fit(
        df, initial=keys, fixed=fixed)
    assert _log_p(df, m, lab) >= _log_p(df, m, g0.labels_) - 1e-9


def test_merge_moves_deterministic_and_counted():
    df = _df(n=20, n_blocks=2, seed=3)
    m = _Model(_theta(), -1.0)
    a = GibbsCoref(m, sampler="racing", n_sweeps=10, rng=2, merge_moves=5, merge_max_temp=1.0,
                   merge_exact_max=4).fit(df)
    b = GibbsCoref(m, sampler="racing", n_sweeps=10, rng=2, merge_moves=5, merge_max_temp=1.0,
                   merge_exact_max=4).fit(df)
    np.testing.assert_array_equal(a.labels_history_, b.labels_history_)
    assert a.n_factor_evals_ == b.n_factor_evals_
    off = GibbsCoref(m, sampler="racing", n_sweeps=10, rng=2, patience=0).fit(df)
    assert a.history_["n_factor_evals"].iloc[-1] == a.n_factor_evals_
    assert a.n_factor_evals_ != off.n_factor_evals_
    with pytest.raises(ValueError, match="merge_moves and merge_exact_max must be >= 0"):
        GibbsCoref(m, merge_moves=-1).fit(df)
    with pytest.raises(ValueError, match="merge_max_temp must be a finite number > 0"):
        GibbsCoref(m, merge_max_temp=0).fit(df)
    pd.testing.assert_series_equal(a.clusters_, b.clusters_)


@pytest.mark.parametrize("sampler,exact_max", [("exact", 64), ("racing", 0)])
def test_merge_move_unit(sampler, exact_max):
    df = _df(n=12, seed=0)
    df["coauthors"] = [["Jiawei Han", "Philip Yu"]] * len(df)
    enc = encode_mentions(df.sort_values("mention_id"))
    g = GibbsCoref(_Model(_theta() * 3.0, 2.0), sampler=sampler, merge_moves=40,
                   merge_exact_max=exact_max)

    def run_moves(bias, fixed):
        labels = np.array([0] * 4 + [4] * 4 + [8] * 4, np.int64)
        size = np.bincount(labels, minlength=12).astype(np.int64)
        run = KernelRun(enc=enc, theta=g.model.theta_, bias=bias, racing=int(sampler == "racing"),
                        movable=np.flatnonzero(~fixed).astype(np.int64))
        settings = make_gibbs_settings(sampler=sampler, merge_moves=40, merge_exact_max=exact_max)
        ev = merge_moves(labels, size, 1.0 / 0.05, run, np.random.default_rng(0), fixed, settings)
        assert (np.bincount(labels, minlength=12) == size).all()
        return labels, ev

    # strongly positive factors: everything merges except the two fixed clusters
    fixed = np.array([True] * 4 + [True] * 4 + [False] * 4)
    labels, ev = run_moves(2.0, fixed)
    assert labels[0] != labels[4] and set(labels[8:]) <= {0, 4} and len(set(labels[8:])) == 1
    assert ev > 0
    # strongly negative factors: nothing merges
    labels, _ = run_moves(-80.0, np.zeros(12, bool))
    assert len(set(labels)) == 3
    # nothing fixed, positive: one cluster
    labels, _ = run_moves(2.0, np.zeros(12, bool))
    assert len(set(labels)) == 1
