"""GibbsCoref.fit(initial=..., fixed=...): the `coref add` contract."""
import numpy as np
import pandas as pd
import pytest

from coref.gibbs import _gibbs, _gibbs_py
from coref.encoding.blocks import encode_mentions
from coref.gibbs import GibbsCoref
from tests.coref.test_coref_gibbs import _Model, _anneal, _df, _theta


def _partition(labels, idx):
    """Set of frozensets: the grouping of positions idx under labels."""
    groups = {}
    for k in idx:
        groups.setdefault(int(labels[k]), set()).add(int(k))
    return {frozenset(g) for g in groups.values()}


@pytest.mark.parametrize("sampler", ["exact", "racing"])
def test_fixed_old_mentions_keep_grouping(sampler):
    df = _df(n=30, n_blocks=2, seed=4)
    rng = np.random.default_rng(0)
    old = rng.random(len(df)) < 0.6
    # deliberately bad initial keys: 4 arbitrary groups per block, mixed key types
    keys = np.array([("g", int(k)) if k % 2 else int(k) for k in rng.integers(0, 4, len(df))],
                    dtype=object)
    initial = np.where(old, keys, None)
    g = GibbsCoref(_Model(_theta(), -1.0), sampler=sampler, n_sweeps=6, rng=5).fit(
        df, initial=initial, fixed=old)
    lab = g.labels_
    assert lab.dtype == np.int64 and lab.shape == (len(df),)
    # labels_ agrees with clusters_ (same partition)
    assert len(set(zip(lab, g.clusters_))) == len(set(lab)) == g.clusters_.nunique()
    blocks = df["block"].to_numpy()
    for b in np.unique(blocks):
        idx = np.flatnonzero(old & (blocks == b))
        want = _partition(pd.factorize(pd.Series(initial[idx], dtype=object))[0], range(len(idx)))
        got = _partition(lab[idx], range(len(idx)))
        assert got == want
    # each final cluster holds old mentions of at most one key (key, block)
    per_cluster = pd.DataFrame({"lab": lab[old], "key": [(b, k) for b, k in
                                                          zip(blocks[old], initial[old])]})
    assert per_cluster.groupby("lab")["key"].nunique().max() == 1
    # labels unique across blocks
    assert not set(lab[blocks == "B0"]) & set(lab[blocks == "B1"])
    # some new mention joined an old cluster (the test can fail if `fixed` froze everything)
    assert np.isin(lab[~old], lab[old]).any()


def test_initial_without_fixed_moves_and_seed_repeats():
    df = _df(n=20, seed=2)
    m = _Model(_theta(), -1.0)
    initial = ["k"] * len(df)               # everything in one cluster, free to move
    a = GibbsCoref(m, n_sweeps=5, rng=9).fit(df, initial=initial)
    b = GibbsCoref(m, n_sweeps=5, rng=9).fit(df, initial=pd.Series(initial, index=df.index[::-1]))
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert len(set(a.labels_)) > 1         # the single initial cluster was split
    np.testing.assert_array_equal(a.labels_history_[0], np.zeros(len(df)))
    # init="one" is the same start as one shared key: identical results
    c = GibbsCoref(m, n_sweeps=5, rng=9, init="one").fit(df)
    np.testing.assert_array_equal(a.labels_, c.labels_)


def test_all_fixed_nothing_moves_and_missing_keys_are_singletons():
    df = _df(n=10, seed=1)
    initial = [None, np.nan, pd.NA, "a", "a", 3, 3, 3, float("nan"), "b"]
    g = GibbsCoref(_Model(_theta(), -1.0), n_sweeps=3, rng=0).fit(
        df, initial=initial, fixed=np.ones(len(df), bool))
    assert g.n_factor_evals_ == 0
    want = _partition(np.array([0, 1, 2, 3, 3, 4, 4, 4, 5, 6]), range(10))
    assert _partition(g.labels_, range(10)) == want


def test_fixed_none_equals_all_movable():
    df = _df(n=15, seed=3)
    m = _Model(_theta(), -1.0)
    a = GibbsCoref(m, sampler="racing", n_sweeps=4, rng=2).fit(df)
    b = GibbsCoref(m, sampler="racing", n_sweeps=4, rng=2).fit(df, fixed=np.zeros(len(df), bool))
    pd.testing.assert_series_equal(a.clusters_, b.clusters_)
    assert a.n_factor_evals_ == b.n_factor_evals_


@pytest.mark.parametrize("racing", [0, 1], ids=["exact", "racing"])
def test_partial_order_kernel_matches_twin(racing):
    """Kernel vs twin from a given start, visiting only the movable mentions."""
    df = _df(n=25, seed=6)
    enc = encode_mentions(df)
    n = enc.n
    start = np.array([k % 4 for k in range(n)], np.int64)
    movable = np.flatnonzero(np.arange(n) % 3 != 0)
    out = []
    for mod in (_gibbs, _gibbs_py):
        labels = start.copy()
        state = np.array([3, 1, 4, 1], np.uint64)
        _, hist, ev = _anneal(mod, enc, labels, movable, [1.5, 1.5, 1.5], racing, state)
        out.append((hist, ev))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])
    np.testing.assert_array_equal(out[0][0][-1][::3], start[::3])
    assert (out[0][0][-1] != start).any()


def test_initial_fixed_errors():
    m = _Model(_theta(), 0.0)
    df = _df(n=4)
    g = GibbsCoref(m, n_sweeps=1, rng=0)
    with pytest.raises(ValueError, match=r"initial must have one key per row of df \(4\); got 3"):
        g.fit(df, initial=["a", "b", "c"])
    with pytest.raises(TypeError, match=r"initial\[1\] = \['x'\] is not hashable"):
        g.fit(df, initial=["a", ["x"], "b", "c"])
    with pytest.raises(TypeError, match="initial must be an array-like"):
        g.fit(df, initial="abcd")
    with pytest.raises(TypeError, match="fixed must be an array of bool.*int64"):
        g.fit(df, fixed=np.array([1, 0, 1, 0]))
    with pytest.raises(ValueError, match=r"fixed must have one flag per row of df \(4\); got 5"):
        g.fit(df, fixed=np.ones(5, bool))
    with pytest.raises(ValueError, match="fixed must be 1-D"):
        g.fit(df, fixed=np.ones((2, 2), bool))


def _labels_by_dict(keys):
    """initial_labels by its definition: first-appearance codes, then one label per missing key."""
    from coref.gibbs.initial import is_missing

    codes, out = {}, []
    for v in keys:
        out.append(None if is_missing(v) else codes.setdefault(v, len(codes)))
    extra = iter(range(len(codes), len(codes) + out.count(None)))
    return [next(extra) if c is None else c for c in out]


@pytest.mark.parametrize("seed", range(5))
def test_initial_labels_of_str_keys_equal_the_definition(seed):
    from coref.gibbs.initial import initial_labels

    gen = np.random.default_rng(seed)
    pool = np.array(["a/0", "a/1", "b/7", "", None, np.nan, pd.NA], dtype=object)
    keys = pool[gen.integers(0, len(pool), size=int(gen.integers(0, 40)))]
    assert initial_labels(keys).tolist() == _labels_by_dict(keys)
    mixed = np.array([3, "3", 3.0, None, (1, 2), "3"], dtype=object)      # not all str: the per-key path
    assert initial_labels(mixed).tolist() == _labels_by_dict(mixed) == [0, 1, 0, 3, 2, 1]
