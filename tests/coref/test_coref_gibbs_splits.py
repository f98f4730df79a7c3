"""GibbsCoref(split_moves=...): split-merge (SAMS) proposals, coref.gibbs.splits."""
import itertools

import numpy as np
import pandas as pd
import pytest

from coref.encoding.blocks import encode_mentions
from coref.gibbs import GibbsCoref
from coref.gibbs.block import KernelRun
from coref.gibbs.splits import allocation_log_q, cluster_factors, split_merge_moves
from coref.settings import make_gibbs_settings
from tests.coref.test_coref_gibbs import _Model, _df, _theta


def _run(df, theta, bias, fixed=None):
    enc = encode_mentions(df.sort_values("mention_id"))
    fixed = np.zeros(enc.n, bool) if fixed is None else fixed
    run = KernelRun(enc=enc, theta=np.asarray(theta, float), bias=float(bias), racing=0,
                    movable=np.flatnonzero(~fixed).astype(np.int64))
    return run, fixed


def _partitions(n):
    """Every set partition of range(n) as canonical label tuples (restricted growth strings)."""
    out = []
    for lab in itertools.product(range(n), repeat=n):
        if all(lab[k] <= max(lab[:k], default=-1) + 1 for k in range(n)):
            out.append(lab)
    return out


def _canon(labels):
    return tuple(pd.factorize(labels)[0].tolist())


def test_cluster_factors_and_allocation_q_exact():
    df = _df(n=5, seed=1)
    run, _ = _run(df, _theta() * 0.4, -0.3)
    members = np.array([0, 2, 3, 4], np.int64)
    F, ev = cluster_factors(run, members)
    assert ev == 6
    np.testing.assert_allclose(F, F.T, rtol=0, atol=0)
    assert (np.diag(F) == 0).all()
    full = np.empty(1)
    from coref.factors._factors import pair_factors
    pair_factors(run.enc, run.theta, run.bias, np.array([2]), np.array([4]), full)
    assert F[1, 3] == full[0]
    # log q by hand for launch (0, 1), order (3, 2), allocation: 3 -> S_i, 2 -> S_j
    inv_t = 0.7
    side = np.array([True, False, False, True])
    p3 = 1.0 / (1.0 + np.exp((F[3, 1] - F[3, 0]) * inv_t))
    p2_j = 1.0 - 1.0 / (1.0 + np.exp((F[2, 1] - (F[2, 0] + F[2, 3])) * inv_t))
    lq, s = allocation_log_q(F, 0, 1, np.array([3, 2]), inv_t, side=side)
    np.testing.assert_allclose(lq, np.log(p3) + np.log(p2_j), rtol=1e-12)
    np.testing.assert_array_equal(s, side)
    # the allocations of a launch are a probability distribution
    total = 0.0
    for a, b in itertools.product([True, False], repeat=2):
        sd = np.array([True, False, a, b])
        total += np.exp(allocation_log_q(F, 0, 1, np.array([2, 3]), inv_t, side=sd)[0])
    np.testing.assert_allclose(total, 1.0, rtol=1e-12)
    # drawn allocations: launch members on their sides, q of the draw is what scoring gives
    gen = np.random.default_rng(0)
    lq_d, sd = allocation_log_q(F, 0, 1, np.array([2, 3]), inv_t, gen=gen)
    assert sd[0] and not sd[1]
    np.testing.assert_allclose(lq_d, allocation_log_q(F, 0, 1, np.array([2, 3]), inv_t, side=sd)[0],
                               rtol=1e-12)


@pytest.mark.parametrize("inv_temp", [1.0, 0.5])
def test_split_merge_leaves_the_enumerated_posterior_invariant(inv_temp):
    # SAMS moves alone form an irreducible chain over the 15 partitions of 4 mentions: its
    # visit frequencies must match pi_tau(y) ∝ exp(sum_{i<j, same} f_ij / tau), enumerated
    df = _df(n=4, seed=2)
    run, fixed = _run(df, _theta() * 0.25, -0.4)
    F, _ = cluster_factors(run, np.arange(4, dtype=np.int64))
    parts = _partitions(4)
    logp = np.array([inv_temp * sum(F[a, b] for a in range(4) for b in range(a + 1, 4)
                                    if p[a] == p[b]) for p in parts])
    pi = np.exp(logp - logp.max())
    pi /= pi.sum()
    assert pi.max() < 0.6 and (pi > 0.005).sum() >= 6          # a spread-out target
    settings = make_gibbs_settings(sampler="exact", merge_moves=1, split_moves=1)
    gen = np.random.default_rng(11)
    labels = np.arange(4, dtype=np.int64)
    size = np.ones(4, np.int64)
    index = {p: k for k, p in enumerate(parts)}
    n_steps, n_batches = 12000, 20
    visits = np.zeros((n_batches, len(parts)))
    for t in range(n_steps):
        split_merge_moves(labels, size, inv_temp, run, gen, fixed, settings)
        visits[t * n_batches // n_steps, index[_canon(labels)]] += 1
        assert (np.bincount(labels, minlength=4) == size).all()
    freq = visits / visits.sum(axis=1, keepdims=True)
    est = freq.mean(axis=0)
    se = freq.std(axis=0, ddof=1) / np.sqrt(n_batches)      # batch-means standard error
    assert np.all(np.abs(est - pi) <= 5.0 * se + 2e-3), (est, pi, se)


def _two_authors():
    """8 mentions: two authors (4 each) with disjoint coauthors, titles and venues."""
    df = _df(n=8, seed=0)
    df["coauthors"] = [["Jiawei Han", "Philip Yu"]] * 4 + [["Geoffrey Hinton", "Yann LeCun"]] * 4
    df["venue"] = ["KDD"] * 4 + ["NeurIPS"] * 4
    df["title"] = ["mining frequent patterns in graphs"] * 4 + ["deep convolutional networks"] * 4
    df["affiliation"] = ["UIUC"] * 4 + ["Toronto"] * 4
    df["block"] = "T"
    df["mention_id"] = [f"T/{k}" for k in range(8)]
    return df.sort_values("mention_id").reset_index(drop=True)


def test_split_takes_a_merged_cluster_apart_and_keeps_fixed():
    df = _two_authors()
    run, fixed = _run(df, _theta() * 3.0, -6.0)
    F, _ = cluster_factors(run, np.arange(8, dtype=np.int64))
    author = np.array([0] * 4 + [1] * 4)
    same = author[:, None] == author[None, :]
    assert F[same & ~np.eye(8, dtype=bool)].min() > 0 > F[~same].max()
    settings = make_gibbs_settings(sampler="exact", merge_moves=1, split_moves=60)
    labels = np.zeros(8, np.int64)
    size = np.bincount(labels, minlength=8).astype(np.int64)
    ev = split_merge_moves(labels, size, 1.0 / 0.05, run, np.random.default_rng(0), fixed, settings)
    assert ev > 0 and _canon(labels) == _canon(author)
    assert (np.bincount(labels, minlength=8) == size).all()
    # a fixed mention in the cluster: no proposal touches it
    fixed = np.zeros(8, bool)
    fixed[5] = True
    run_f, _ = _run(df, _theta() * 3.0, -6.0, fixed=fixed)
    labels = np.zeros(8, np.int64)
    size = np.bincount(labels, minlength=8).astype(np.int64)
    assert split_merge_moves(labels, size, 20.0, run_f, np.random.default_rng(0), fixed, settings) == 0
    assert (labels == 0).all()
    # a cluster above split_max_size is skipped too
    small = make_gibbs_settings(sampler="exact", merge_moves=1, split_moves=60, split_max_size=7)
    assert split_merge_moves(labels, size, 20.0, run, np.random.default_rng(0), np.zeros(8, bool), small) == 0


def test_gibbs_with_split_moves_deterministic_and_same_for_samplers():
    df = pd.concat([_two_authors(), _df(n=10, n_blocks=2, seed=4)], ignore_index=True)
    m = _Model(_theta() * 3.0, -6.0)
    kw = dict(n_sweeps=8, rng=3, merge_moves=2, split_moves=4, merge_max_temp=1.0, patience=0)
    a = GibbsCoref(m, sampler="exact", **kw).fit(df, initial=np.zeros(len(df), object))
    b = GibbsCoref(m, sampler="exact", **kw).fit(df, initial=np.zeros(len(df), object))
    np.testing.assert_array_equal(a.labels_history_, b.labels_history_)
    assert a.n_factor_evals_ == b.n_factor_evals_
    # racing with first_batch >= the block size sums every arm: the same clusters
    r = GibbsCoref(m, sampler="racing", first_batch=64, small_arm_bound=False, **kw).fit(
        df, initial=np.zeros(len(df), object))
    np.testing.assert_array_equal(a.labels_, r.labels_)
    # the cached factor matrix changes nothing but the cost
    c = GibbsCoref(m, sampler="exact", factor_cache_mb=1.0, **kw).fit(df, initial=np.zeros(len(df), object))
    np.testing.assert_array_equal(a.labels_, c.labels_)
    # the two authors of the first block, started as one cluster, are split
    first = (df["block"] == "T").to_numpy()
    author = np.array([0] * 4 + [1] * 4)
    pos = np.argsort(df.loc[first, "mention_id"].to_numpy())
    assert _canon(a.labels_[first][pos]) == _canon(author)
    off = GibbsCoref(m, sampler="exact", **{**kw, "split_moves": 0}).fit(df, initial=np.zeros(len(df), object))
    assert off.n_factor_evals_ != a.n_factor_evals_


def test_split_settings_errors():
    m = _Model(_theta(), -1.0)
    df = _df(n=6)
    with pytest.raises(ValueError, match="split_moves > 0 needs merge_moves >= 1"):
        GibbsCoref(m, split_moves=3).fit(df)
    with pytest.raises(ValueError, match="split_moves must be >= 0 and split_max_size >= 2"):
        GibbsCoref(m, merge_moves=1, split_moves=-1).fit(df)
    with pytest.raises(ValueError, match="split_max_size >= 2; got 0 and 1"):
        GibbsCoref(m, split_max_size=1).fit(df)
    with pytest.raises(TypeError, match="split_moves must be an int"):
        GibbsCoref(m, merge_moves=1, split_moves=2.0).fit(df)
