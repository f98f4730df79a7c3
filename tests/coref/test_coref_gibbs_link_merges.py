"""coref.gibbs.link_merges: greedy merges of linked clusters after annealing."""
from types import SimpleNamespace

import numpy as np
import pytest

import coref.gibbs.block as block_mod
from coref.encoding.blocks import encode_mentions
from coref.factors._factors import factor_matrix
from coref.gibbs import GibbsCoref
from coref.gibbs.link_merges import candidate_links, link_merges
from tests.coref.test_coref_gibbs import _Model, _df, _theta


def _matrix_run(F):
    F = np.asarray(F, float)
    return SimpleNamespace(fmat=F, fmat_mode=2, memo_j=None, memo_f=None, memo_rest=None, enc=None)


def _log_p(F, labels):
    same = labels[:, None] == labels[None, :]
    return float(np.triu(F * same, 1).sum())


def _sizes(labels):
    return np.bincount(labels, minlength=len(labels)).astype(np.int64)


def test_two_tight_pairs_merge_where_single_moves_cannot():
    # {0, 1} and {2, 3} hold each other at 10; across, 1 per pair: merging gains 4, while
    # mention 0 alone moving to {2, 3} loses 10 - 2
    F = np.full((4, 4), 1.0)
    F[0, 1] = F[1, 0] = F[2, 3] = F[3, 2] = 10.0
    np.fill_diagonal(F, 0.0)
    labels = np.array([0, 0, 2, 2], np.int64)
    size = _sizes(labels)
    merges, evals = link_merges(labels, size, _matrix_run(F), max_evals=0)
    assert (merges, evals) == (1, 0)              # from the matrix: no factor evaluated
    np.testing.assert_array_equal(labels, [0, 0, 0, 0])   # tie in size: the lower label stays
    np.testing.assert_array_equal(size, [4, 0, 0, 0])


def test_min_mean_is_a_margin_per_pair():
    F = np.full((4, 4), 1.0)
    F[0, 1] = F[1, 0] = F[2, 3] = F[3, 2] = 10.0
    np.fill_diagonal(F, 0.0)                       # Delta = 4 over 2 x 2 pairs: mean 1.0
    for min_mean, want in ((1.0, [0, 0, 2, 2]), (0.99, [0, 0, 0, 0])):
        labels = np.array([0, 0, 2, 2], np.int64)
        link_merges(labels, _sizes(labels), _matrix_run(F), max_evals=0, min_mean=min_mean)
        np.testing.assert_array_equal(labels, want)


def test_negative_sum_does_not_merge():
    F = np.full((4, 4), -3.0)
    F[0, 1] = F[1, 0] = F[2, 3] = F[3, 2] = 10.0
    F[0, 2] = F[2, 0] = 5.0                       # one strong link, but the sum is 5 - 9 < 0
    np.fill_diagonal(F, 0.0)
    labels = np.array([1, 1, 3, 3], np.int64)
    size = _sizes(labels)
    assert link_merges(labels, size, _matrix_run(F), max_evals=0) == (0, 0)
    np.testing.assert_array_equal(labels, [1, 1, 3, 3])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_raises_log_p_and_leaves_no_positive_linked_pair(seed):
    gen = np.random.default_rng(seed)
    n = 30
    author = gen.integers(0, 5, n)
    F = np.where(author[:, None] == author[None, :], 1.0, -2.0) + gen.normal(0, 1.5, (n, n))
    F = np.triu(F, 1) + np.triu(F, 1).T
    labels = gen.integers(0, 12, n).astype(np.int64)
    before = _log_p(F, labels)
    part = {}
    for i, c in enumerate(labels.tolist()):
        part.setdefault(c, set()).add(i)
    size = _sizes(labels)
    run = _matrix_run(F)
    merges, _ = link_merges(labels, size, run, max_evals=0)
    assert _log_p(F, labels) >= before
    np.testing.assert_array_equal(size, _sizes(labels))
    # every final cluster is a union of starting clusters, and merged ones number `merges`
    for c in np.unique(labels):
        ids = {int(x) for x in np.flatnonzero(labels == c)}
        assert ids == set().union(*(part[k] for k in part if part[k] <= ids))
    assert len(np.unique(labels)) == len(part) - merges
    # the greedy stops where no linked pair of clusters has a positive sum
    I, J, _ = candidate_links(run, labels)
    for a, b in set(zip(labels[I].tolist(), labels[J].tolist())):
        assert F[np.ix_(labels == a, labels == b)].sum() <= 0.0


def test_kernel_sums_from_the_memo_equal_the_matrix_path():
    # the same links (every partner) through racing's memo layout and through a matrix:
    # the kernel's exact sums make the same merges
    df = _df(n=14, seed=3).sort_values("mention_id")
    enc = encode_mentions(df)
    theta, bias = _theta() * 0.5, -1.5
    n = enc.n
    F = np.zeros((n, n))
    factor_matrix(enc, theta, bias, F)
    np.fill_diagonal(F, 0.0)
    mj = np.array([[j for j in range(n) if j != i] for i in range(n)], np.int64)
    mf = F[np.arange(n)[:, None], mj]
    memo = SimpleNamespace(fmat=None, fmat_mode=0, memo_j=mj, memo_f=mf, memo_rest=np.zeros(n), enc=enc,
                           theta=theta, bias=bias)
    start = np.arange(n, dtype=np.int64) // 2
    lab_m, lab_f = start.copy(), start.copy()
    mm, ev = link_merges(lab_m, _sizes(lab_m), memo, max_evals=10**6)
    mf_, ev_f = link_merges(lab_f, _sizes(lab_f), _matrix_run(F), max_evals=0)
    assert mm == mf_ > 0
    assert ev > 0 and ev_f == 0
    np.testing.assert_array_equal(lab_m, lab_f)
    # padding (j = n) and rows never built (rest NaN) give no links
    memo.memo_j = np.full((n, 2), n, np.int64)
    memo.memo_f = np.ones((n, 2))
    I, J, f = candidate_links(memo, start)
    assert len(I) == len(J) == len(f) == 0
    memo.memo_j, memo.memo_f, memo.memo_rest = mj, mf, np.full(n, np.nan)
    assert len(candidate_links(memo, start)[0]) == 0


def test_budget_skips_kernel_sums():
    df = _df(n=10, seed=4).sort_values("mention_id")
    enc = encode_mentions(df)
    n = enc.n
    F = np.zeros((n, n))
    factor_matrix(enc, _theta(), 0.0, F)
    mj = np.array([[j for j in range(n) if j != i] for i in range(n)], np.int64)
    run = SimpleNamespace(fmat=None, fmat_mode=0, memo_j=mj, memo_f=F[np.arange(n)[:, None], mj],
                          memo_rest=np.zeros(n), enc=enc, theta=_theta(), bias=0.0)
    labels = np.arange(n, dtype=np.int64)
    assert link_merges(labels, _sizes(labels), run, max_evals=0) == (0, 0)
    np.testing.assert_array_equal(labels, np.arange(n))


def test_fit_block_runs_the_pass_on_cached_matrices_only(monkeypatch):
    calls = []

    def spy(labels, size, run, max_evals, min_mean):
        calls.append((run.fmat is not None, len(labels), max_evals, min_mean))
        return 0, 0

    monkeypatch.setattr(block_mod, "link_merges", spy)
    df = _df(n=12, seed=5)
    X = df.drop(columns=["gold"])
    GibbsCoref(_Model(_theta(), -1.0), rng=0, sampler="auto", n_sweeps=4).fit(X)
    assert calls == [(True, 12, block_mod.LINK_MERGE_EVALS_PER_MENTION * 12, block_mod.LINK_MERGE_MIN_MEAN)]
    calls.clear()
    GibbsCoref(_Model(_theta(), -1.0), rng=0, sampler="racing", n_sweeps=4).fit(X)
    assert calls == []
    # fixed mentions (coref add): never
    GibbsCoref(_Model(_theta(), -1.0), rng=0, sampler="auto", n_sweeps=4).fit(
        X, initial=np.zeros(12, np.int64), fixed=np.arange(12) < 6)
    assert calls == []


def test_matrix_links_are_each_rows_largest_factors():
    gen = np.random.default_rng(7)
    n, k = 600, 5                                   # more rows than one slice of candidate_links
    F = gen.normal(0, 1, (n, n))
    F = np.triu(F, 1) + np.triu(F, 1).T
    labels = np.arange(n, dtype=np.int64)
    I, J, f = candidate_links(_matrix_run(F), labels, k_matrix=k)
    want = {(i, j) for i in range(n) for j in np.argsort(-F[i])[:k] if j != i and F[i, j] > 0}
    assert set(zip(I.tolist(), J.tolist())) == want
    np.testing.assert_array_equal(f, F[I, J])
