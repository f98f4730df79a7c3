"""Annealed Gibbs over cluster labels: compiled kernel vs twin, counts, racing vs exact."""
import numpy as np
import pandas as pd
import pytest

from coref.gibbs import _gibbs, _gibbs_py
from coref.factors.names import N_FEATURES
from coref.encoding.blocks import encode_mentions
from coref.gibbs import GibbsCoref, block_rng, bound_table


def _df(n=12, n_blocks=1, seed=0):
    rng = np.random.default_rng(seed)
    people = [("Jiawei Han", "KDD", "UIUC"), ("Philip Yu", "ICDE", "IBM"), ("Ann Lee", "ISMB", "MIT")]
    rows = []
    for b in range(n_blocks):
        for k in range(n):
            p = int(rng.integers(0, 3))
            co, ve, af = people[p]
            rows.append(dict(mention_id=f"B{b}/{k}", block=f"B{b}", name="Wei Wang",
                             coauthors=[co] + ([f"X{rng.integers(0, 4)}"] if rng.random() < 0.5 else []),
                             title=f"topic{p} words paper{k}", venue=ve,
                             year=int(2000 + rng.integers(0, 5)), affiliation=af if rng.random() < 0.5 else "",
                             gold=f"B{b}/{p}"))
    df = pd.DataFrame(rows)
    df["year"] = df["year"].astype("Int64")
    df["gold"] = df["gold"].astype("string")
    return df


class _Model:
    """A fitted-model stand-in with a fixed theta (no scikit-learn)."""

    def __init__(self, theta, bias):
        self.theta_ = np.asarray(theta, float)
        self.bias_ = float(bias)

    def encode(self, df):
        return encode_mentions(df)


def _theta():
    th = np.zeros(N_FEATURES)
    th[0], th[6], th[8], th[9] = 3.0, 2.0, 1.0, 1.0
    return th


def _anneal(mod, enc, labels, movable, inv_temps, racing, rng_state, *, stop_mask=None,
            patience=0, theta=None, bias=-1.0, first_batch=3, bound=0):
    n = enc.n
    size = np.bincount(labels, minlength=n).astype(np.int64)
    hist = np.zeros((len(inv_temps), n), np.int64)
    ev = np.zeros(len(inv_temps), np.int64)
    mask = np.zeros(len(inv_temps), np.int8) if stop_mask is None else stop_mask
    used = mod.anneal(enc, _theta() if theta is None else theta, bias, labels, size,
                      np.asarray(movable, np.int64), np.asarray(inv_temps, float), mask, patience,
                      racing, first_batch, bound, np.full(n, -np.inf), bound_table(0.05, n + 1),
                      rng_state, hist, ev)
    assert (np.bincount(labels, minlength=n) == size).all()
    return used, hist, ev


@pytest.mark.parametrize("racing,bound", [(0, 0), (1, 0), (1, 1)],
                         ids=["exact", "racing", "racing-bound"])
def test_anneal_matches_twin(racing, bound):
    df = _df(n=30)
    enc = encode_mentions(df)
    n = enc.n
    out = []
    for mod in (_gibbs, _gibbs_py):
        labels = np.arange(n, dtype=np.int64)  # singletons: every sampler has merges to make
        state = np.array([1, 2**63 + 5, 12345678901234567, 2**64 - 1], np.uint64)
        used, hist, ev = _anneal(mod, enc, labels, np.arange(n), [0.5, 1.0, 2.0, 2.0, 8.0, 8.0],
                                 racing, state, bound=bound)
        assert used == 6
        out.append((hist, ev, state.copy()))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])
    np.testing.assert_array_equal(out[0][2], out[1][2])
    assert len(set(out[0][0][-1])) > 1 and (out[0][0][0] != out[0][0][-1]).any()
    if racing:  # racing subsampled: fewer than n - 1 factors per step
        assert out[0][1][1:].sum() < 5 * n * (n - 1)
    else:
        assert (out[0][1] == n * (n - 1)).all()


def test_xoshiro_reference_values():
    """xoshiro256** from state (1, 2, 3, 4): the reference output 11520, 0, 1509978240, ..."""
    rng = _gibbs_py.Xoshiro([1, 2, 3, 4])
    assert [rng.next() for _ in range(4)] == [11520, 0, 1509978240, 1215971899390074240]


def test_early_stop_kernel_matches_twin():
    df = _df(n=14, seed=2)
    enc = encode_mentions(df)
    n = enc.n
    inv = 1.0 / np.geomspace(1.0, 0.05, 25)
    mask = (np.geomspace(1.0, 0.05, 25) <= 0.3).astype(np.int8)
    res = []
    for mod in (_gibbs, _gibbs_py):
        state = np.array([7, 8, 9, 10], np.uint64)
        used, hist, ev = _anneal(mod, enc, np.arange(n, dtype=np.int64), np.arange(n), inv, 1,
                                 state, stop_mask=mask, patience=2)
        res.append((used, hist[:used], ev[:used], state))
    assert res[0][0] == res[1][0] < 25
    for a, b in zip(res[0][1:], res[1][1:]):
        np.testing.assert_array_equal(a, b)
    h = res[0][1]
    assert (h[-1] == h[-2]).all() and (h[-2] == h[-3]).all()


def test_exact_eval_counts():
    df = _df(n=9, n_blocks=2)
    g = GibbsCoref(_Model(_theta(), -1.0), sampler="exact", n_sweeps=4, rng=3).fit(df)
    # every step evaluates the n - 1 factors of its block
    assert g.n_factor_evals_ == 4 * 2 * 9 * 8
    assert list(g.history_["n_factor_evals"]) == [0, 144, 288, 432, 576]
    assert g.labels_history_.shape == (5, 18)


def test_racing_counts_small_clusters_exact():
    # with first_batch >= block size every arm is summed exactly: same counts as exact
    df = _df(n=6)
    m = _Model(_theta(), -1.0)
    ge = GibbsCoref(m, sampler="exact", n_sweeps=3, rng=1).fit(df)
    gr = GibbsCoref(m, sampler="racing", n_sweeps=3, rng=1, first_batch=6,
                    small_arm_bound=False).fit(df)
    assert gr.n_factor_evals_ == ge.n_factor_evals_ == 3 * 6 * 5
    pd.testing.assert_series_equal(ge.clusters_, gr.clusters_)


def test_small_arm_bound_is_exact_without_big_arms():
    """With every arm small, the bound only drops arms that cannot win: racing == exact."""
    df = _df(n=25, n_blocks=2, seed=5)
    m = _Model(_theta(), -1.0)
    ge = GibbsCoref(m, sampler="exact", n_sweeps=12, rng=4, patience=0).fit(df)
    gb = GibbsCoref(m, sampler="racing", n_sweeps=12, rng=4, first_batch=30, patience=0,
                    small_arm_bound=True).fit(df)
    np.testing.assert_array_equal(ge.labels_history_, gb.labels_history_)
    # n (n - 1) / 2 factors for the bounds, then fewer than the exact sampler's
    pre = 2 * 25 * 24 // 2
    assert gb.n_factor_evals_ - pre < ge.n_factor_evals_
    assert gb.history_["n_factor_evals"].iloc[1] >= pre


def test_block_order_invariance_and_ids():
    df = _df(n=10, n_blocks=3)
    m = _Model(_theta(), -0.5)
    a = GibbsCoref(m, sampler="racing", n_sweeps=5, rng=11).fit(df)
    b = GibbsCoref(m, sampler="racing", n_sweeps=5, rng=11).fit(df.iloc[::-1])
    pd.testing.assert_series_equal(a.clusters_.sort_index(), b.clusters_.sort_index())
    assert a.clusters_.str.startswith(tuple(f"B{k}/" for k in range(3))).all()
    assert a.n_factor_evals_ == b.n_factor_evals_
    r1 = block_rng(4, "B0").random(3)
    r2 = block_rng(4, "B0").random(3)
    np.testing.assert_array_equal(r1, r2)


@pytest.mark.parametrize("bound", [0, 1], ids=["plain", "small-arm-bound"])
def test_racing_conditional_matches_exact(bound):
    """Distribution of one racing Gibbs step vs the exact conditional (chi-square)."""
    df = _df(n=40, seed=3)
    enc = encode_mentions(df)
    n = enc.n
    theta = _theta() * 0.3
    bias = -0.2
    gold = pd.factorize(df["gold"])[0].astype(np.int64)
    i = 0
    # exact conditional probabilities of mention i
    from coref.factors._factors import factor_matrix
    F = np.empty((n, n))
    factor_matrix(enc, theta, bias, F)
    labels0 = gold.copy()
    others = np.arange(n) != i
    cl = sorted(set(labels0[others]))
    scores = [F[i, others & (labels0 == c)].sum() for c in cl] + [0.0]
    tau = (max(scores) - min(scores)) / 2.0
    inv_temp = 1.0 / tau
    assert min(len(F[i, others & (labels0 == c)]) for c in cl) > 3
    p = np.exp((np.array(scores) - max(scores)) * inv_temp)
    p /= p.sum()
    gen = np.random.default_rng(2024)
    n_draws = 3000
    counts = np.zeros(len(p))
    new_label = [l for l in range(n) if l not in cl][0]
    keys = cl + [new_label]
    evals = 0
    for _ in range(n_draws):
        labels = labels0.copy()
        state = gen.integers(0, 2**64, size=4, dtype=np.uint64)
        _, _, ev = _anneal(_gibbs, enc, labels, [i], [inv_temp], 1, state, theta=theta,
                           bias=bias, bound=bound)
        counts[keys.index(labels[i])] += 1
        evals += ev[0]
    expected = p * n_draws
    ok = expected >= 5
    chi2 = np.sum((counts[ok] - expected[ok]) ** 2 / expected[ok])
    from scipy.stats import chi2 as chi2_dist
    assert ok.sum() >= 3
    assert chi2 < chi2_dist.ppf(0.999, ok.sum() - 1), (counts, expected)
    assert evals - n_draws * bound * n * (n - 1) // 2 < n_draws * (n - 1)  # racing subsampled


def test_errors():
    m = _Model(_theta(), 0.0)
    df = _df(n=4)
    with pytest.raises(ValueError, match="sampler must be one of"):
        GibbsCoref(m, sampler="fast").fit(df)
    with pytest.raises(ValueError, match="delta parameter of GibbsCoref must be in"):
        GibbsCoref(m, delta=1.5).fit(df)
    with pytest.raises(ValueError, match="first_batch must be >= 2"):
        GibbsCoref(m, first_batch=1).fit(df)
    with pytest.raises(TypeError, match="n_sweeps must be an int"):
        GibbsCoref(m, n_sweeps=2.5).fit(df)
    with pytest.raises(TypeError, match="rng must be"):
        GibbsCoref(m, rng="x").fit(df)
    with pytest.raises(ValueError, match="unique"):
        GibbsCoref(m).fit(pd.concat([df, df]))
    with pytest.raises(RuntimeError, match="not fitted"):
        GibbsCoref(object()).fit(df)


def test_bound_table_is_the_normal_quantile_of_eq27():
    """B[D, t] = Phi^-1(1 - delta / ((D - 1)(t - 1))), inf where no test is needed (D < 2 or t < 2)."""
    from scipy.special import ndtri

    B = bound_table(0.05, 40, 32)
    D = np.arange(41.0)[:, None]
    t = np.arange(32.0)[None, :]
    assert B.shape == (41, 32)
    assert np.all(np.isinf(B[:2, :])) and np.all(np.isinf(B[:, :2]))
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = ndtri(1.0 - 0.05 / ((D - 1.0) * (t - 1.0)))
    np.testing.assert_allclose(B[2:, 2:], ref[2:, 2:], rtol=0, atol=1e-12)
    assert B[2, 2] == pytest.approx(1.6448536269514722, abs=1e-12)  # Phi^-1(0.95)


def test_bound_table_of_a_big_block_takes_the_vectorised_quantile(monkeypatch):
    """From ``NDTRI_MIN`` entries the table comes from scipy's ndtri: the same infinities, and the
    values of the standard library's quantile to 1e-14."""
    import coref.gibbs.schedule as S

    monkeypatch.setattr(S, "NDTRI_MIN", 10**12)
    stdlib = bound_table(0.05, 300, 64)
    monkeypatch.setattr(S, "NDTRI_MIN", 1)
    vec = bound_table(0.05, 300, 64)
    assert np.array_equal(np.isinf(vec), np.isinf(stdlib)) and np.isinf(vec[:2]).all()
    fin = np.isfinite(stdlib)
    assert fin.sum() == 299 * 62
    np.testing.assert_allclose(vec[fin], stdlib[fin], rtol=1e-14, atol=0)


@pytest.mark.parametrize("n", [1, 2, 63, 64, 65, 300])
def test_cached_bound_table_is_a_contiguous_slice_of_the_same_values(n):
    from coref.gibbs.schedule import bound_table_ro

    B = bound_table_ro(0.05, n)
    assert B.shape == (n + 1, 64) and B.flags.c_contiguous and not B.flags.writeable
    assert np.array_equal(B, bound_table(0.05, n))


def test_pandas_views_are_built_from_the_arrays_and_follow_a_refit():
    m = _Model(_theta(), -1.0)
    g = GibbsCoref(m, sampler="racing", n_sweeps=3, rng=2)
    with pytest.raises(AttributeError, match=r"clusters_ exists after fit"):
        g.clusters_
    with pytest.raises(AttributeError, match=r"history_ exists after fit"):
        g.history_
    assert not hasattr(g, "clusters_")
    df = _df(n=8, n_blocks=2, seed=4).sample(frac=1.0, random_state=0)      # rows out of order
    g.fit(df)
    np.testing.assert_array_equal(g.mention_ids_, df["mention_id"].astype(str).to_numpy(dtype=object))
    assert g.clusters_.dtype == "string" and g.clusters_.index.name == "mention_id"
    np.testing.assert_array_equal(g.clusters_.to_numpy(dtype=object), g.cluster_ids_)
    # same partition as labels_, ids "<block>/<k>"
    codes = pd.factorize(g.cluster_ids_)[0]
    assert len(set(zip(codes, g.labels_))) == len(set(codes)) == len(set(g.labels_))
    assert all(c.startswith(b + "/") for c, b in zip(g.cluster_ids_, df["block"]))
    h = g.history_
    assert list(h["n_factor_evals"]) == list(np.cumsum(g.n_factor_evals_per_sweep_))
    assert h["n_factor_evals"].iloc[-1] == g.n_factor_evals_ and len(h) == 4
    assert g.history_ is h                                   # built once
    # a refit replaces the views
    g.fit(_df(n=5, n_blocks=1, seed=9))
    assert len(g.clusters_) == 5 and g.history_ is not h


def test_inference_reads_the_arrays_in_any_row_order():
    from coref.inference import _clusters_of

    m = _Model(_theta(), -1.0)
    df = _df(n=8, n_blocks=2, seed=5)
    g = GibbsCoref(m, sampler="exact", n_sweeps=2, rng=0).fit(df)
    mids = df["mention_id"].to_numpy(dtype=object)[::-1]
    np.testing.assert_array_equal(_clusters_of(g, mids), g.clusters_.reindex(mids).astype(str).to_numpy(dtype=object))

    class Plain:                                   # a sampler with only the Series
        clusters_ = g.clusters_

    np.testing.assert_array_equal(_clusters_of(Plain(), mids), _clusters_of(g, mids))


@pytest.mark.parametrize("sampler", ["racing", "exact"])
def test_blocks_fitted_together_give_each_block_its_own_result(sampler):
    """coref run's grouped path: one fit for several blocks = one fit per block, field by field."""
    from coref.inference import _infer_block, execute
    from coref.settings import make_settings

    m = _Model(_theta(), -1.0)
    df = _df(n=9, n_blocks=4, seed=6).drop(columns=["gold"]).sample(frac=1.0, random_state=1)
    settings = make_settings("run", sampler=sampler, folds=2, seed=3)
    groups = {b: g.reset_index(drop=True) for b, g in df.groupby("block")}
    items = [(sampler, 0, b, groups[b], None) for b in sorted(groups)]
    seen = []
    together = execute(items, {0: m}, None, settings, record_history=True, progress=False,
                       on_result=seen.append, desc="t")
    assert [r.block for r in seen] == sorted(groups)
    for r in together:
        one = _infer_block(groups[r.block], m, sampler=sampler, fold=0, block=r.block, settings=settings,
                           record_history=True)
        np.testing.assert_array_equal(r.mention_id, one.mention_id)
        np.testing.assert_array_equal(r.cluster_id, one.cluster_id)
        np.testing.assert_array_equal(r.evals_history, one.evals_history)
        np.testing.assert_array_equal(r.labels_history, one.labels_history)
        assert r.n_factor_evals == one.n_factor_evals > 0 and r.wall_s > 0


def test_small_arm_bound_with_fixed_mentions_computes_only_the_movable_rows():
    """coref add's case: fmax only for the movable mentions (exact maxima), +inf for fixed ones; kernel == twin."""
    from coref.factors import _factors_py

    df = _df(n=30, seed=2)
    enc = encode_mentions(df)
    n = enc.n
    movable = np.array([1, 4, 5, 11, 17, 18, 29], np.int64)
    start = np.arange(n, dtype=np.int64) // 3            # old mentions in clusters of 3
    out = []
    for mod in (_gibbs, _gibbs_py):
        labels = start.copy()
        size = np.bincount(labels, minlength=n).astype(np.int64)
        fmax = np.full(n, -np.inf)
        hist = np.zeros((4, n), np.int64)
        ev = np.zeros(4, np.int64)
        state = np.array([3, 1, 4, 1], np.uint64)
        mod.anneal(enc, _theta(), -1.0, labels, size, movable, np.array([1.0, 2.0, 4.0, 8.0]),
                   np.zeros(4, np.int8), 0, 1, 3, 1, fmax, bound_table(0.05, n + 1), state, hist, ev)
        out.append((hist, ev, fmax, state))
    for a, b in zip(out[0], out[1]):
        np.testing.assert_array_equal(a, b)
    hist, ev, fmax, _ = out[0]
    F = np.empty((n, n))
    _factors_py.factor_matrix(enc, _theta(), -1.0, F)
    np.fill_diagonal(F, -np.inf)
    np.testing.assert_array_equal(fmax[movable], F[movable].max(axis=1))
    fixed = np.setdiff1d(np.arange(n), movable)
    assert np.isinf(fmax[fixed]).all() and (fmax[fixed] > 0).all()
    k = len(movable)
    assert ev[0] >= k * (n - 1) - k * (k - 1) // 2                # the bound's factors count in sweep 1
    np.testing.assert_array_equal(hist[:, fixed], np.broadcast_to(start[fixed], (4, len(fixed))))
