"""Racing's partner memo (``coref.gibbs._gibbs.anneal``, ``memo_j`` / ``memo_f`` / ``memo_rest``).

The memo of mention i must hold exactly its K best partners (largest f(i, j), ties to the
smaller j) and in ``memo_rest`` the largest factor of every other j, so that a small or
subsampled arm's memo bound (memo partners exactly, the others by ``memo_rest``) is at
least its exact sum, for weights of both signs; the compiled kernel must equal its twin
(labels, factor counts, generator state and the memo itself) with the memo, pending
small arms and arms dropped before their first draw.
"""
import numpy as np
import pytest

from coref.factors import _factors
from coref.factors.names import N_FEATURES
from coref.gibbs import _gibbs, _gibbs_py, bound_table
from coref.synth_block import synthesize_block


@pytest.fixture(scope="module")
def block(shipped_model_and_data):
    _, model = shipped_model_and_data
    df = synthesize_block(110, rng=4)
    return model.encode(df)


def _theta(seed, scale=0.6):
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, scale, N_FEATURES), float(rng.normal(0.0, 1.0))


def _row(enc, theta, bias, i):
    n = enc.n
    J = np.array([j for j in range(n) if j != i], np.int64)
    f = np.empty(len(J))
    _factors.pair_factors(enc, theta, bias, np.full(len(J), i, np.int64), J, f)
    return J, f


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_memo_holds_each_rows_best_partners_and_bounds_every_arm(block, seed, racing_run):
    enc = block
    n, K = enc.n, 7
    theta, bias = _theta(seed)
    labels0 = np.arange(n)
    _, _, _, mj, mf, mr = racing_run(_gibbs, enc, theta, bias, labels0, [1.0, 4.0], K, 1)
    built = np.flatnonzero(~np.isnan(mr))
    assert len(built) >= n // 4                      # singletons: most steps build a memo
    rng = np.random.default_rng(seed)
    for i in built:
        J, f = _row(enc, theta, bias, int(i))
        order = np.lexsort((J, -f))                  # largest f first, ties to the smaller j
        kept = np.sort(J[order[:K]])
        np.testing.assert_array_equal(mj[i], kept)
        np.testing.assert_array_equal(mf[i], f[np.searchsorted(J, kept)])
        assert mr[i] == f[order[K]]
        others = ~np.isin(J, kept)
        assert (f[others] <= mr[i]).all()            # rest bounds every partner not kept
        # the memo bound of random arms (partners exactly, the others by rest) >= their sum
        val = dict(zip(J.tolist(), f.tolist()))
        memo = dict(zip(mj[i].tolist(), mf[i].tolist()))
        for _ in range(20):
            arm = rng.choice(J, size=int(rng.integers(1, 12)), replace=False)
            ub = sum(memo[j] if j in memo else mr[i] for j in arm.tolist())
            assert ub >= sum(val[j] for j in arm.tolist()) - 1e-9 * (1 + np.abs(f).sum())


@pytest.mark.parametrize("seed,start", [(3, "random"), (4, "singletons"), (5, "random")])
def test_racing_with_memo_matches_twin(block, seed, start, racing_run):
    enc = block
    n = enc.n
    theta, _ = _theta(seed, 0.4)
    theta[17] += 2.0                                 # same_comp1: clusters of several mentions
    bias = -1.0                                      # ... but not one cluster
    rng = np.random.default_rng(seed)
    labels0 = rng.integers(0, n // 6, n) if start == "random" else np.arange(n)
    out = [racing_run(mod, enc, theta, bias, labels0, [1.0, 3.0, 20.0], 5, 6) for mod in (_gibbs, _gibbs_py)]
    for a, b in zip(out[0], out[1]):
        np.testing.assert_array_equal(a, b)
    hist, ev = out[0][0], out[0][1]
    assert len(np.unique(hist[-1])) > 2
    assert (~np.isnan(out[0][5])).any()
    # the memo changes the work, not the validity: without it, other factor counts
    off = racing_run(_gibbs, enc, theta, bias, labels0, [1.0, 3.0, 20.0], 5, 6, memo=False)
    assert not np.array_equal(off[1], ev)


def test_memo_shapes_are_checked(block):
    enc = block
    n = enc.n
    theta, bias = _theta(0)
    for mod in (_gibbs, _gibbs_py):
        with pytest.raises(ValueError, match="memo_j, memo_f must have shape"):
            mod.anneal(enc, theta, bias, np.arange(n, dtype=np.int64), np.ones(n, np.int64),
                       np.arange(n, dtype=np.int64), np.ones(1), np.zeros(1, np.int8), 0, 1, 3, 2,
                       np.zeros(n), bound_table(0.05, n + 1), np.array([1, 2, 3, 4], np.uint64),
                       np.zeros((1, n), np.int64), np.zeros(1, np.int64), None, 0,
                       np.zeros((n, 4), np.int64), np.zeros((n, 3)), np.full(n, np.nan), 1)


def test_gibbs_with_memo_same_seed_same_result_fewer_factors(shipped_model_and_data, monkeypatch,
                                                             racing_switch_check):
    """GibbsCoref racing on one synthetic one-name block: the same seed gives the same
    clusters and factor counts, and the memo is used (without it, other factor counts)."""
    _, model = shipped_model_and_data
    racing_switch_check(model, synthesize_block(160, rng=7), monkeypatch, "MEMO_PARTNERS", 0,
                        n_sweeps=6, rng=11)
