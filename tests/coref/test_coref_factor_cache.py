"""The exact sampler over a cached factor matrix (``fmat_mode`` / ``factor_cache_mb``):
kernel against twin, the same labels, random stream and sums as without the cache,
factor counts, and the error paths."""
import numpy as np
import pandas as pd
import pytest

from coref.factors import _factors_py
from coref.gibbs import _gibbs, _gibbs_py
from coref.factors.names import N_FEATURES
from coref.encoding.blocks import encode_mentions
from coref.gibbs import GibbsCoref, bound_table


def _df(n=14, seed=0):
    """One block of mentions of three people, full and initial-only spellings of the name."""
    rng = np.random.default_rng(seed)
    people = [("Jiawei Han", "KDD", "UIUC"), ("Philip Yu", "ICDE", "IBM"), ("Ann Lee", "ISMB", "MIT")]
    rows = []
    for k in range(n):
        p = int(rng.integers(0, 3))
        co, ve, af = people[p]
        rows.append(dict(mention_id=f"m{k:02d}", block="w wang",
                         name=["Wei Wang", "W. Wang", "Wen Wang"][int(rng.integers(0, 3))],
                         coauthors=[co] + ([f"X{rng.integers(0, 4)}"] if rng.random() < 0.5 else []),
                         title=f"topic{p} words paper{k}", venue=ve,
                         year=int(2000 + rng.integers(0, 5)),
                         affiliation=af if rng.random() < 0.5 else "", gold=f"p{p}"))
    df = pd.DataFrame(rows)
    df["year"] = df["year"].astype("Int64")
    df["gold"] = df["gold"].astype("string")
    return df


def _theta():
    th = np.zeros(N_FEATURES)
    th[0], th[6], th[8], th[9], th[15], th[41] = 3.0, 2.0, 1.0, 1.0, 0.7, -0.9
    return th


class _Model:
    """A fitted-model stand-in with a fixed theta (no scikit-learn)."""

    theta_ = _theta()
    bias_ = -1.0

    def encode(self, df):
        return encode_mentions(df)


def _anneal(mod, enc, labels, movable, inv_temps, state, fmat=None, fmat_mode=0):
    n = enc.n
    size = np.bincount(labels, minlength=n).astype(np.int64)
    hist = np.zeros((len(inv_temps), n), np.int64)
    ev = np.zeros(len(inv_temps), np.int64)
    used = mod.anneal(enc, _theta(), -1.0, labels, size, np.asarray(movable, np.int64),
                      np.asarray(inv_temps, float), np.zeros(len(inv_temps), np.int8), 0, 0, 3, 0,
                      np.full(n, -np.inf), bound_table(0.05, n + 1), state, hist, ev, fmat,
                      fmat_mode)
    assert (np.bincount(labels, minlength=n) == size).all()
    return used, hist, ev


@pytest.mark.parametrize("fixed", [False, True], ids=["all-movable", "some-fixed"])
def test_cached_exact_equals_uncached_and_twin(fixed):
    enc = encode_mentions(_df())
    n = enc.n
    rng = np.random.default_rng(4)
    labels0 = rng.choice(np.arange(0, n, 2), size=n).astype(np.int64)
    movable = (np.sort(rng.choice(n, size=2 * n // 3, replace=False)) if fixed
               else np.arange(n)).astype(np.int64)
    temps = [0.5, 1.0, 3.0, 10.0]
    runs = {}
    for name, mod, mode in [("plain", _gibbs, 0), ("kernel", _gibbs, 1), ("twin", _gibbs_py, 1)]:
        labels = labels0.copy()
        state = np.array([7, 2**63 + 5, 31, 2**41 + 3], np.uint64)
        fmat = np.full((n, n), np.nan) if mode else None
        used, hist, ev = _anneal(mod, enc, labels, movable, temps, state, fmat, mode)
        runs[name] = (hist, ev, state, fmat)
    plain, kern, twin = runs["plain"], runs["kernel"], runs["twin"]
    np.testing.assert_array_equal(kern[0], plain[0])          # same labels, sweep by sweep
    np.testing.assert_array_equal(kern[2], plain[2])          # same random stream
    np.testing.assert_array_equal(kern[0], twin[0])
    np.testing.assert_array_equal(kern[2], twin[2])
    # the matrix against the twin's (NaN rows included): floats to rtol = atol = 1e-12
    np.testing.assert_allclose(kern[3], twin[3], rtol=1e-12, atol=1e-12, equal_nan=True)
    n_mov = len(movable)
    assert kern[1].tolist() == [n_mov * (n - 1), 0, 0, 0]     # the matrix, then no factor
    assert plain[1].tolist() == [n_mov * (n - 1)] * 4
    # the movable rows hold f(i, j) as the step of i evaluates it (both orders are
    # computed: symmetry is not assumed); the fixed rows are never read, so never written
    fm = kern[3]
    for i in movable:
        for j in range(n):
            want = 0.0 if i == j else _factors_py.block_factor(enc, _theta(), -1.0, int(i), j)
            np.testing.assert_allclose(fm[i, j], want, rtol=1e-12, atol=1e-12)
    assert np.isnan(fm[np.setdiff1d(np.arange(n), movable)]).all()
    assert (plain[0][-1] != labels0).any()


def test_matrix_reused_across_calls():
    """Mode 1 on the first call, mode 2 on later ones: the same as one call."""
    enc = encode_mentions(_df(seed=2))
    n = enc.n
    temps = [0.7, 2.0, 8.0]
    labels_a = np.arange(n, dtype=np.int64)
    state_a = np.array([1, 2, 3, 4], np.uint64)
    _, hist_a, _ = _anneal(_gibbs, enc, labels_a, np.arange(n), temps, state_a,
                           np.zeros((n, n)), 1)
    labels_b = np.arange(n, dtype=np.int64)
    state_b = np.array([1, 2, 3, 4], np.uint64)
    fmat = np.zeros((n, n))
    rows = []
    for s, t in enumerate(temps):
        _, h, ev = _anneal(_gibbs, enc, labels_b, np.arange(n), [t], state_b, fmat,
                           1 if s == 0 else 2)
        rows.append(h[0])
        assert ev[0] == (n * (n - 1) if s == 0 else 0)
    np.testing.assert_array_equal(np.array(rows), hist_a)
    np.testing.assert_array_equal(state_b, state_a)


def test_factor_matrix_errors():
    enc = encode_mentions(_df(n=6))
    n = enc.n
    lab = np.arange(n, dtype=np.int64)
    size = np.ones(n, np.int64)
    args = (enc, _theta(), -1.0, lab, size, np.arange(n, dtype=np.int64), np.ones(1),
            np.zeros(1, np.int8), 0)
    tail = (3, 0, np.full(n, -np.inf), bound_table(0.05, n + 1), np.array([1, 2, 3, 4], np.uint64),
            np.zeros((0, n), np.int64), np.zeros(1, np.int64))
    for mod in (_gibbs, _gibbs_py):
        with pytest.raises(ValueError, match="for the exact sampler"):
            mod.anneal(*args, 1, *tail, np.zeros((n, n)), 1)
        with pytest.raises(ValueError, match=r"fmat must have shape \(6, 6\)"):
            mod.anneal(*args, 0, *tail, np.zeros((n, n - 1)), 1)
        with pytest.raises(ValueError, match="fmat_mode must be 0, 1 or 2"):
            mod.anneal(*args, 0, *tail, np.zeros((n, n)), 3)
    with pytest.raises(ValueError, match=r"fmat must have shape \(6, 6\)"):
        _gibbs.anneal(*args, 0, *tail, None, 2)


@pytest.mark.parametrize("n_samples", [0, 3])
def test_gibbscoref_factor_cache_same_clusters(n_samples):
    df = pd.concat([_df(seed=5), _df(n=9, seed=6).assign(block="x li",
                                                       mention_id=lambda d: "x" + d["mention_id"])],
                   ignore_index=True)
    kw = dict(sampler="exact", rng=3, n_sweeps=8, n_samples=n_samples)
    plain = GibbsCoref(_Model(), **kw).fit(df)
    cached = GibbsCoref(_Model(), factor_cache_mb=1.0, **kw).fit(df)
    np.testing.assert_array_equal(cached.labels_, plain.labels_)
    np.testing.assert_array_equal(cached.labels_history_, plain.labels_history_)
    if n_samples:
        pd.testing.assert_frame_equal(cached.pair_probs_, plain.pair_probs_)
        pd.testing.assert_series_equal(cached.mention_confidence_, plain.mention_confidence_)
    # counts: n (n - 1) / 2 per block once (every mention movable: the symmetric matrix),
    # against n (n - 1) per sweep (and per sample sweep)
    sizes = df.groupby("block").size()
    assert cached.n_factor_evals_ == int((sizes * (sizes - 1) // 2).sum())
    assert plain.n_factor_evals_ > cached.n_factor_evals_
    # a budget below one block's matrix (8 n^2 bytes) leaves that block uncached
    small = GibbsCoref(_Model(), factor_cache_mb=8 * 9 * 9 / 2**20, **kw).fit(df)
    np.testing.assert_array_equal(small.labels_, plain.labels_)
    assert small.n_factor_evals_per_block_["x li"] == 9 * 8 // 2
    assert small.n_factor_evals_per_block_["w wang"] == plain.n_factor_evals_per_block_["w wang"]


def test_gibbscoref_factor_cache_fixed_mentions_and_racing():
    df = _df(n=12, seed=8)
    keys = pd.Series(["a"] * 4 + ["b"] * 3 + [None] * 5)
    fixed = keys.notna().to_numpy()
    kw = dict(rng=1, n_sweeps=6)
    plain = GibbsCoref(_Model(), sampler="exact", **kw).fit(df, initial=keys, fixed=fixed)
    cached = GibbsCoref(_Model(), sampler="exact", factor_cache_mb=1.0, **kw).fit(
        df, initial=keys, fixed=fixed)
    np.testing.assert_array_equal(cached.labels_, plain.labels_)
    assert cached.n_factor_evals_ == 5 * 11                    # only the movable rows (5 of 12)
    # more than half of the rows movable: the symmetric matrix, n (n - 1) / 2 factors
    few = keys.copy()
    few[2:4] = None
    cached = GibbsCoref(_Model(), sampler="exact", factor_cache_mb=1.0, **kw).fit(
        df, initial=few, fixed=few.notna().to_numpy())
    plain = GibbsCoref(_Model(), sampler="exact", **kw).fit(df, initial=few, fixed=few.notna().to_numpy())
    np.testing.assert_array_equal(cached.labels_, plain.labels_)
    assert cached.n_factor_evals_ == 12 * 11 // 2
    # racing does not read the budget: the same run with or without it
    r0 = GibbsCoref(_Model(), sampler="racing", **kw).fit(df)
    r1 = GibbsCoref(_Model(), sampler="racing", factor_cache_mb=1.0, **kw).fit(df)
    np.testing.assert_array_equal(r0.labels_, r1.labels_)
    assert r0.n_factor_evals_ == r1.n_factor_evals_


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), True, "1"])
def test_factor_cache_mb_validated(bad):
    with pytest.raises(ValueError, match="factor_cache_mb must be a finite number >= 0"):
        GibbsCoref(_Model(), factor_cache_mb=bad).fit(_df(n=4))


def test_cached_exact_on_a_shipped_block(shipped_model_and_data):
    """The shipped model's factors (every feature) on a real block: same labels as without
    the cache, and the same as the twin."""
    df, model = shipped_model_and_data
    sizes = df.groupby("block").size().sort_values()
    name = [b for b, s in sizes.items() if 20 <= s <= 30][0]
    sub = df[df["block"] == name].sort_values("mention_id").reset_index(drop=True)
    enc = model.encode(sub)
    n = enc.n
    theta = np.ascontiguousarray(model.theta_)
    out = []
    for mod, mode in [(_gibbs, 0), (_gibbs, 1), (_gibbs_py, 1)]:
        labels = np.arange(n, dtype=np.int64)
        size = np.ones(n, np.int64)
        hist = np.zeros((4, n), np.int64)
        state = np.array([3, 1, 4, 1], np.uint64)
        mod.anneal(enc, theta, float(model.bias_), labels, size, np.arange(n, dtype=np.int64),
                   np.array([1.0, 2.0, 6.0, 20.0]), np.zeros(4, np.int8), 0, 0, 3, 0,
                   np.full(n, -np.inf), bound_table(0.05, n + 1), state, hist, np.zeros(4, np.int64),
                   np.zeros((n, n)) if mode else None, mode)
        out.append((hist, state))
    for other in out[1:]:
        np.testing.assert_array_equal(other[0], out[0][0])
        np.testing.assert_array_equal(other[1], out[0][1])
    assert len(np.unique(out[0][0][-1])) < n                   # clusters formed


def test_predict_and_add_with_factor_cache(tmp_path):
    """``coref predict --sampler exact --factor-cache-mb`` writes the clusters of the
    uncached exact sampler with fewer factor evaluations; ``coref add`` takes it too;
    a bad budget fails before any output is written."""
    from coref.jobs.add import add
    from coref.jobs.predict import predict
    from coref.cli.predict import main as predict_main
    import argparse

    from coref.cli.predict import add_arguments

    df = _df(n=16, seed=11).drop(columns="gold")
    old, new = df.iloc[:11], df.iloc[11:]
    s0 = predict(old, out=tmp_path / "p0", sampler="exact", progress=False)
    s1 = predict(old, out=tmp_path / "p1", sampler="exact", progress=False, factor_cache_mb=64)
    assert (tmp_path / "p0" / "clusters.csv").read_bytes() == (tmp_path / "p1" / "clusters.csv").read_bytes()
    # the shipped model's block prior: the statistics of its correction (coref.model.shift_tree) evaluate the
    # n (n - 1) / 2 pairs once; the rate's estimate reads the same pairs from that matrix, the sampler caches it
    assert s1["n_factor_evals"] == 11 * 10 // 2 < s0["n_factor_evals"]
    a0 = add(tmp_path / "p0", new, out=tmp_path / "a0", sampler="exact", progress=False)
    a1 = add(tmp_path / "p1", new, out=tmp_path / "a1", sampler="exact", progress=False, factor_cache_mb=64)
    assert (tmp_path / "a0" / "clusters.csv").read_bytes() == (tmp_path / "a1" / "clusters.csv").read_bytes()
    assert a1["n_factor_evals"] < a0["n_factor_evals"]
    with pytest.raises(ValueError, match="--factor-cache-mb must be a finite number >= 0"):
        predict(old, out=tmp_path / "bad", sampler="exact", progress=False, factor_cache_mb=-1)
    assert not (tmp_path / "bad").exists()
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--out", str(tmp_path / "bad2"), "--factor-cache-mb", "nan", "--quiet"])
    assert predict_main(args) == 2 and not (tmp_path / "bad2").exists()


def test_auto_sampler_exact_where_the_matrix_fits_racing_elsewhere():
    """``sampler="auto"``: a block whose matrix fits the budget gets the exact sampler's
    clusters from cached factors, a larger one racing's clusters (blocks are sampled
    independently: block_rng(seed, block))."""
    big = _df(n=30, seed=12)
    small = _df(n=9, seed=13).assign(block="x li", mention_id=lambda d: "x" + d["mention_id"])
    df = pd.concat([big, small], ignore_index=True)
    budget = 8 * 20 * 20 / 2**20                     # fits 9 mentions, not 30
    kw = dict(rng=5, n_sweeps=10)
    auto = GibbsCoref(_Model(), sampler="auto", factor_cache_mb=budget, **kw).fit(df)
    exact = GibbsCoref(_Model(), sampler="exact", **kw).fit(df)
    racing = GibbsCoref(_Model(), sampler="racing", **kw).fit(df)
    assert auto.cached_blocks_ == ["x li"] and exact.cached_blocks_ == [] == racing.cached_blocks_
    c = auto.clusters_
    for ref, block in [(exact, "x li"), (racing, "w wang")]:
        ids = df.loc[df["block"] == block, "mention_id"]
        pd.testing.assert_series_equal(c.loc[ids], ref.clusters_.loc[ids])
        assert auto.n_factor_evals_per_block_[block] == (
            9 * 8 // 2 if block == "x li" else racing.n_factor_evals_per_block_[block])
    # with the default budget (FACTOR_CACHE_MB) both blocks fit
    auto2 = GibbsCoref(_Model(), sampler="auto", **kw).fit(df)
    assert sorted(auto2.cached_blocks_) == ["w wang", "x li"]
    np.testing.assert_array_equal(auto2.labels_, exact.labels_)


def test_auto_sampler_accepted_by_the_commands(tmp_path):
    from coref.jobs.predict import predict
    from coref.settings import make_settings

    assert make_settings("predict", sampler="auto").samplers == ("auto",)
    assert make_settings("run", sampler="both", folds=2).samplers == ("racing", "exact")
    with pytest.raises(ValueError, match="must be 'racing', 'exact', 'auto' or 'both'"):
        make_settings("predict", sampler="fast")
    df = _df(n=12, seed=14).drop(columns="gold")
    predict(df, out=tmp_path / "e", sampler="exact", progress=False)
    s = predict(df, out=tmp_path / "a", sampler="auto", progress=False)
    assert (tmp_path / "a" / "clusters.csv").read_bytes() == (tmp_path / "e" / "clusters.csv").read_bytes()
    assert s["n_factor_evals"] == 12 * 11 // 2     # the block prior's correction: its matrix is the rate's and the cache


@pytest.mark.parametrize("seed", [0, 1])
def test_factor_matrix_row_mode_and_symmetry(seed):
    """``factor_matrix`` in row mode (and mirrored tile by tile) gives the merges' values bit
    for bit, equal to ``pair_factors`` in both orders (the kernel's f(i, j) = f(j, i), which
    lets the exact sampler cache n (n - 1) / 2 factors instead of n (n - 1)), and to the twin."""
    from coref.factors import _factors
    from coref.model import load_model
    from coref.datasets import default_model_path
    from coref.synth_block import synthesize_block

    try:
        model, _ = load_model(default_model_path())
    except (FileNotFoundError, OSError) as exc:  # pragma: no cover - an installed copy without the model
        pytest.skip(f"shipped model absent: {exc}")
    rng = np.random.default_rng(seed)
    enc = model.encode(synthesize_block(150, rng=seed))          # n > 2 tiles of 64
    n = enc.n
    for theta in (np.ascontiguousarray(model.theta_), rng.normal(0.0, 0.6, N_FEATURES)):
        mats = {}
        for rows in (False, True, None):
            F = np.full((n, n), np.nan)
            _factors.factor_matrix(enc, theta, -0.7, F, rows=rows)
            mats[rows] = F
        np.testing.assert_array_equal(mats[True], mats[False])
        np.testing.assert_array_equal(mats[None], mats[False])
        I, J = np.nonzero(~np.eye(n, dtype=bool))
        f = np.empty(len(I))
        _factors.pair_factors(enc, theta, -0.7, I.astype(np.int64), J.astype(np.int64), f)
        np.testing.assert_array_equal(mats[True][I, J], f)       # both orders: symmetric bit for bit
        assert (np.diag(mats[True]) == 0.0).all()
        twin = np.empty((n, n))
        _factors_py.factor_matrix(enc, theta, -0.7, twin, rows=True)
        np.testing.assert_allclose(twin, mats[True], rtol=1e-12, atol=1e-12)


def test_factor_matrix_symmetric_on_a_block_with_abstracts():
    """The same on the largest ``aminer_dblp_dev`` name (abstracts and keywords: every field's terms),
    shipped model: f(i, j) = f(j, i) bit for bit over all ordered pairs."""
    from coref import datasets
    from coref.factors import _factors
    from coref.model import load_model

    try:
        df = datasets.load_labeled()
        model, _ = load_model(datasets.default_model_path())
    except (FileNotFoundError, OSError) as exc:  # pragma: no cover - data absent
        pytest.skip(f"shipped labeled data or default model absent: {exc}")
    dev = df[df["block"].str.startswith("aminer_dblp_dev:")]
    name = dev["block"].value_counts().index[0]
    enc = model.encode(dev[dev["block"] == name].reset_index(drop=True))
    n = enc.n
    assert n > 2 * 64 and np.asarray(enc.ab_ptr)[n] > 0            # several tiles, abstracts present
    F = np.full((n, n), np.nan)
    _factors.factor_matrix(enc, np.ascontiguousarray(model.theta_), float(model.bias_), F)
    I, J = np.nonzero(~np.eye(n, dtype=bool))
    f = np.empty(len(I))
    _factors.pair_factors(enc, np.ascontiguousarray(model.theta_), float(model.bias_), I.astype(np.int64),
                          J.astype(np.int64), f)
    np.testing.assert_array_equal(F[I, J], f)
