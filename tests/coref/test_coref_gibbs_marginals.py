"""GibbsCoref(n_samples=...): pairwise and per-mention posterior marginals at T = 1."""
import itertools

import numpy as np
import pandas as pd
import pytest

from coref.factors._factors import factor_matrix
from coref.encoding.blocks import encode_mentions
from coref.gibbs import GibbsCoref
from coref.gibbs.marginals import merge_counts as _merge_counts, within_pairs as _within_pairs
from tests.coref.test_coref_gibbs import _Model, _df, _theta


def _partitions(n):
    """Every set partition of range(n) as a restricted-growth label tuple."""
    def rec(prefix, k):
        if len(prefix) == n:
            yield tuple(prefix)
            return
        for l in range(k + 1):
            yield from rec(prefix + [l], max(k, l + 1))
    yield from rec([], 0)


def _exact_marginals(F, pred):
    """P(y_a = y_b) and E[Jaccard confidence] by enumerating every partition."""
    n = len(F)
    parts = np.array(list(_partitions(n)))
    same = parts[:, :, None] == parts[:, None, :]
    logw = np.einsum("kij,ij->k", np.triu(same, 1), np.triu(F, 1))
    w = np.exp(logw - logw.max())
    w /= w.sum()
    pair = np.einsum("k,kij->ij", w, same)
    A = (pred[:, None] == pred[None, :]) & ~np.eye(n, dtype=bool)
    B = same & ~np.eye(n, dtype=bool)[None]
    inter = (A[None] & B).sum(2)
    union = (A[None] | B).sum(2)
    jac = np.where(union > 0, inter / np.maximum(union, 1), 1.0)
    return pair, w @ jac


@pytest.mark.parametrize("sampler", ["exact", "racing"])
def test_marginals_match_enumeration(sampler):
    df = _df(n=7, seed=8)
    model = _Model(_theta() * 0.35, -0.4)
    n_samples = 3000
    g = GibbsCoref(model, sampler=sampler, n_sweeps=10, n_samples=n_samples, rng=4).fit(df)
    sub = df.sort_values("mention_id")
    enc = encode_mentions(sub)
    F = np.empty((enc.n, enc.n))
    factor_matrix(enc, model.theta_, model.bias_, F)
    mids = sub["mention_id"].to_numpy()
    pred = pd.factorize(g.clusters_.reindex(mids).to_numpy())[0]
    pair, conf = _exact_marginals(F, pred)
    assert 0.1 < pair[np.triu_indices(7, 1)].max() and pair[np.triu_indices(7, 1)].min() < 0.9
    # Monte Carlo error: binomial SE inflated x2 for the autocorrelation of Gibbs sweeps
    tol = lambda p: 5.0 * 2.0 * np.sqrt(np.maximum(p * (1 - p), 0.01) / n_samples)  # noqa: E731
    est = np.zeros((7, 7))
    idx = {m: k for k, m in enumerate(mids)}
    for r in g.pair_probs_.itertuples():
        est[idx[r.mention_a], idx[r.mention_b]] = r.p
    iu = np.triu_indices(7, 1)
    small = (est[iu] == 0)
    assert np.all(pair[iu][small] < 0.03)          # omitted pairs are rare ones
    assert np.all(np.abs(est[iu] - pair[iu]) <= tol(pair[iu])), (est[iu], pair[iu])
    c = g.mention_confidence_.reindex(mids).to_numpy()
    assert np.all(np.abs(c - conf) <= tol(conf) + 0.01), (c, conf)


def test_marginals_do_not_change_map_and_sparse_contract():
    df = _df(n=25, n_blocks=2, seed=1)
    m = _Model(_theta() * 0.5, -0.5)
    a = GibbsCoref(m, sampler="racing", n_sweeps=8, rng=3).fit(df)
    b = GibbsCoref(m, sampler="racing", n_sweeps=8, rng=3, n_samples=20).fit(df)
    pd.testing.assert_series_equal(a.clusters_, b.clusters_)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert not hasattr(a, "pair_probs_") and not hasattr(a, "mention_confidence_")
    assert b.n_factor_evals_ == a.n_factor_evals_ + b.n_factor_evals_sample_ > a.n_factor_evals_
    pp = b.pair_probs_
    assert list(pp.columns) == ["block", "mention_a", "mention_b", "p"]
    assert pp["p"].between(0, 1).all()
    cl = b.clusters_
    within = cl.reindex(pp["mention_a"]).to_numpy() == cl.reindex(pp["mention_b"]).to_numpy()
    assert ((pp["p"] >= 0.01) | within).all()
    # every pair inside a predicted cluster is listed exactly once
    want = sum(k * (k - 1) // 2 for k in cl.value_counts())
    assert within.sum() == want
    assert not pp.duplicated(["mention_a", "mention_b"]).any()
    assert (pp["block"] == pp["mention_a"].str.split("/").str[0]).all()
    conf = b.mention_confidence_
    assert conf.index.equals(b.clusters_.index) and conf.between(0, 1).all()
    # p is a multiple of 1 / n_samples
    np.testing.assert_allclose(pp["p"] * 20, np.round(pp["p"] * 20), atol=1e-9)
    c = GibbsCoref(m, sampler="racing", n_sweeps=8, rng=3, n_samples=20).fit(df)
    pd.testing.assert_frame_equal(b.pair_probs_, c.pair_probs_)


def test_within_pairs_and_merge_against_brute_force():
    rng = np.random.default_rng(0)
    keys = np.zeros(0, np.int64)
    counts = np.zeros(0, np.int64)
    dense = np.zeros((30, 30), np.int64)
    pending = []
    for _ in range(7):
        lab = rng.integers(0, 6, 30)
        same = np.triu(lab[:, None] == lab[None, :], 1)
        dense += same
        got = _within_pairs(lab)
        a, b = np.nonzero(same)
        np.testing.assert_array_equal(got, np.sort(a * 30 + b))
        pending.append(got)
        if len(pending) == 3:
            keys, counts = _merge_counts(keys, counts, pending)
            pending = []
    keys, counts = _merge_counts(keys, counts, pending)
    a, b = np.nonzero(dense)
    np.testing.assert_array_equal(keys, a * 30 + b)
    np.testing.assert_array_equal(counts, dense[a, b])
    assert len(_within_pairs(np.arange(10))) == 0


def test_n_samples_errors():
    df = _df(n=4)
    m = _Model(_theta(), 0.0)
    with pytest.raises(ValueError, match="n_samples must be >= 0; got -1"):
        GibbsCoref(m, n_samples=-1).fit(df)
    with pytest.raises(TypeError, match="n_samples must be an int"):
        GibbsCoref(m, n_samples=2.0).fit(df)


@pytest.mark.parametrize("case", ["random", "one-cluster", "singletons", "huge-factors", "n=2"])
def test_marginal_sweep_kernel_equals_numpy_twin(case):
    """The compiled sweep of coref.confidence.gibbs_marginals against its numpy twin:
    the same slots, cluster sums and Rao-Blackwellised marginals bit for bit, including
    weights that underflow to 0 (huge factors) and the float edge of the inverse CDF."""
    from coref.gibbs import _gibbs
    from coref.confidence import marginal_sweep_py, gibbs_marginals

    rng = np.random.default_rng(7)
    n = 2 if case == "n=2" else 30
    A = rng.normal(size=(n, n)) * (400.0 if case == "huge-factors" else 2.0)
    F = (A + A.T) / 2
    labels = {"one-cluster": np.zeros(n, int), "singletons": np.arange(n)}.get(
        case, rng.integers(0, max(1, n // 4), size=n))
    out = []
    for sweep in (None, marginal_sweep_py):
        out.append(gibbs_marginals(F, labels, n_samples=6, n_burn=2, rng=np.random.default_rng(11),
                                   _sweep=sweep))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])
    # one sweep on its own: the same state afterwards
    lab = np.unique(labels, return_inverse=True)[1].astype(np.int64)
    size = np.bincount(lab, minlength=n).astype(np.int64)
    S = np.zeros((n, n))
    Fz = F.copy()
    np.fill_diagonal(Fz, 0.0)
    np.add.at(S.T, lab, Fz.T)
    perm = rng.permutation(n).astype(np.int64)
    u = rng.random(n)
    u[::3] = 0.0                     # x = 0: the first slot whose running sum exceeds it
    states = []
    for sweep in (_gibbs.marginal_sweep, marginal_sweep_py):
        st = (S.copy(), lab.copy(), size.copy())
        sweep(Fz, st[0], st[1], st[2], perm, u, np.exp)
        states.append(st)
    for a, b in zip(*states):
        np.testing.assert_array_equal(a, b)
    assert (np.bincount(states[0][1], minlength=n) == states[0][2]).all()


def test_marginal_sweep_kernel_checks_shapes():
    from coref.gibbs import _gibbs

    n = 4
    with pytest.raises(ValueError, match=r"F and S must be \(n, n\)"):
        _gibbs.marginal_sweep(np.zeros((n, n)), np.zeros((n, n)), np.zeros(n, np.int64),
                              np.ones(n, np.int64), np.arange(n - 1, dtype=np.int64), np.full(n, 0.5), np.exp)
