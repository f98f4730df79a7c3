"""The accelerated factor kernel (signatures, memo tables, branch-free merges) against
its pure-Python twin on every pair of shipped AMiner blocks.

As scikit-learn tests its kernels: floats against the twin with ``assert_allclose`` at
``rtol = 1e-12`` (plus ``atol = 1e-12`` for sums that cancel to ~0; features and factors
are O(1)-O(10)), so that another compiler or CPU does not fail them; counts and
clusterings exactly.  Two compiled paths that the kernel documents as giving the same
value (memo / no memo, row mode / merges) are still compared bit for bit: the Gibbs
sampler's clusterings rely on it.  (With ``-ffp-contract=off`` the twin agrees bit for
bit too today.)"""
import numpy as np
import pytest

from coref.factors import _factors, _factors_py
from coref.factors.names import N_FEATURES

RTOL = ATOL = 1e-12


def assert_close(got, want, msg=""):
    """Compiled against twin: equal to rtol = atol = 1e-12."""
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=str(msg))


@pytest.fixture(scope="module")
def shipped(shipped_model_and_data):
    df, model = shipped_model_and_data
    sizes = df.groupby("block").size().sort_values()
    # three blocks of 40-90 mentions (all their pairs stay quick in pure Python)
    names = [b for b, s in sizes.items() if 40 <= s <= 90][:3]
    assert len(names) == 3
    return [(b, model.encode(df[df["block"] == b])) for b in names], model


def _all_pairs(n):
    I, J = np.triu_indices(n, 1)
    return I.astype(np.int64), J.astype(np.int64)


@pytest.mark.parametrize("memo", [True, False])
def test_features_and_factors_all_pairs_match_twin(shipped, memo):
    blocks, model = shipped
    theta = np.ascontiguousarray(model.theta_, dtype=np.float64)
    for name, enc in blocks:
        I, J = _all_pairs(enc.n)
        # both orders (i, j) and (j, i): the memo tables are filled in one order first
        I, J = np.concatenate([I, J]), np.concatenate([J, I])
        a, b = np.empty((len(I), N_FEATURES)), np.empty((len(I), N_FEATURES))
        _factors.pair_features(enc, I, J, a, memo=memo)
        _factors_py.pair_features(enc, I, J, b)
        assert_close(a, b, name)
        fa, fb = np.empty(len(I)), np.empty(len(I))
        _factors.pair_factors(enc, theta, float(model.bias_), I, J, fa, memo=memo)
        _factors_py.pair_factors(enc, theta, float(model.bias_), I, J, fb)
        assert_close(fa, fb, name)
        m = np.empty((enc.n, enc.n))
        _factors.factor_matrix(enc, theta, float(model.bias_), m, memo=memo)
        np.testing.assert_array_equal(m[I, J], fa)           # compiled paths: bit for bit


def test_factor_rate_checksum_matches_twin(shipped):
    blocks, model = shipped
    name, enc = blocks[-1]
    n_evals = enc.n * (enc.n - 1)  # every pair twice: the second pass reads the memo
    s_c = _factors.factor_rate(enc, model.theta_, float(model.bias_), n_evals)
    s_n = _factors.factor_rate(enc, model.theta_, float(model.bias_), n_evals, memo=False)
    s_p = _factors_py.factor_rate(enc, model.theta_, float(model.bias_), n_evals)
    assert s_c == s_n                                        # memo changes no value
    assert_close(s_c, s_p)


def test_features_on_a_block_with_empty_fields(shipped):
    """Rows with empty lists (signature 0) and missing fields still match the twin."""
    blocks, model = shipped
    name, enc = blocks[0]
    assert np.any(np.diff(enc.af_ptr) == 0) and np.any(np.diff(enc.ve_ptr) == 0)
    I, J = _all_pairs(enc.n)
    a, b = np.empty((len(I), N_FEATURES)), np.empty((len(I), N_FEATURES))
    _factors.pair_features(enc, I, J, a)
    _factors_py.pair_features(enc, I, J, b)
    assert_close(a, b)


def _merged(enc, theta, bias):
    """The factor matrix by merges (no row mode, no memo), diagonal 0."""
    m = np.empty((enc.n, enc.n))
    _factors.factor_matrix(enc, theta, bias, m, memo=False)
    return m


def test_row_mode_factors_bit_identical(shipped):
    """Row mode (mention i's ids scattered into dense tables, lookups instead of merges,
    as every Gibbs step runs) gives the merges' factors bit for bit, and the twin's, for
    every i."""
    blocks, model = shipped
    theta = np.ascontiguousarray(model.theta_, dtype=np.float64)
    bias = float(model.bias_)
    for name, enc in blocks:
        J = np.arange(enc.n, dtype=np.int64)
        merged = _merged(enc, theta, bias)
        for i in range(enc.n):
            a, b = np.empty(enc.n), np.empty(enc.n)
            assert _factors.row_factors(enc, theta, bias, i, J, a) is True, name
            _factors_py.pair_factors(enc, theta, bias, np.full(enc.n, i, np.int64), J, b)
            off = J != i
            assert a[off].tobytes() == merged[i, off].tobytes(), (name, i)
            assert_close(a, b, (name, i))


def test_row_mode_refused_on_unsorted_ids_falls_back_to_merges(shipped):
    """A block whose id list is not strictly increasing gets no row tables (a lookup
    would count a repeated id twice, the merge once): row_factors then merges."""
    import dataclasses

    blocks, model = shipped
    name, enc = blocks[0]
    lens = np.diff(enc.ti_ptr)
    r = int(np.flatnonzero(lens >= 2)[0])
    ti_ids = enc.ti_ids.copy()
    a0 = enc.ti_ptr[r]
    ti_ids[a0 + 1] = ti_ids[a0]            # a repeated id in row r
    bad = dataclasses.replace(enc, ti_ids=ti_ids)
    theta = np.ascontiguousarray(model.theta_, dtype=np.float64)
    J = np.arange(bad.n, dtype=np.int64)
    a, b = np.empty(bad.n), np.empty(bad.n)
    assert _factors.row_factors(bad, theta, float(model.bias_), r, J, a) is False
    _factors_py.pair_factors(bad, theta, float(model.bias_), np.full(bad.n, r, np.int64), J, b)
    assert_close(a, b)
    with pytest.raises(IndexError, match="not in the block"):
        _factors.row_factors(bad, theta, float(model.bias_), bad.n, J, a)
    # an id so large that the tables would pass ROW_MAX_BYTES: refused too
    ti_ids = enc.ti_ids.copy()
    ti_ids[enc.ti_ptr[r + 1] - 1] = 2**26           # still the largest of its row
    big = dataclasses.replace(enc, ti_ids=ti_ids)
    assert _factors.row_factors(big, theta, float(model.bias_), r, J, a) is False
    _factors_py.pair_factors(big, theta, float(model.bias_), np.full(big.n, r, np.int64), J, b)
    assert_close(a, b)


def test_member_sums_match_twin_and_checked(shipped):
    """Within-cluster factor sums (report.cluster_margins) against the pure-Python twin."""
    blocks, model = shipped
    _, enc = blocks[0]
    theta = np.ascontiguousarray(model.theta_, dtype=np.float64)
    bias = float(model.bias_)
    gen = np.random.default_rng(2)
    code = gen.integers(0, 6, size=enc.n).astype(np.int64)
    order = np.argsort(code, kind="stable").astype(np.int64)
    size = np.bincount(code, minlength=6).astype(np.int64)
    start = (np.cumsum(size) - size).astype(np.int64)
    rows = gen.permutation(enc.n)[: enc.n // 2].astype(np.int64)
    a, b = np.empty(len(rows)), np.empty(len(rows))
    _factors.member_sums(enc, theta, bias, order, start, size, code, rows, a)
    _factors_py.member_sums(enc, theta, bias, order, start, size, code, rows, b)
    assert_close(a, b)
    # one row by hand: the sum over its cluster's other members, in member order
    i = int(rows[0])
    mates = [int(j) for j in order[start[code[i]]:start[code[i]] + size[code[i]]] if j != i]
    want = 0.0
    for j in mates:
        want += _factors_py.block_factor(enc, theta, bias, i, j)
    assert_close(a[0], want)
    with pytest.raises(ValueError, match="must agree in length"):
        _factors.member_sums(enc, theta, bias, order, start, size, code, rows, np.empty(len(rows) + 1))
    with pytest.raises(ValueError, match="cluster 0 runs outside order"):
        _factors.member_sums(enc, theta, bias, order, start - 1, size, code, rows, a)
    with pytest.raises(ValueError, match=r"rows\[0\] or its code is out of range"):
        _factors.member_sums(enc, theta, bias, order, start, size, code, np.array([enc.n], np.int64), np.empty(1))


def test_pair_factors_in_row_runs_bit_identical(shipped):
    """pair_factors in row mode (pairs grouped by I, as numpy.triu_indices gives them:
    the block prior's pairs; or shuffled, then grouped inside the call) against the twin,
    with and without memo tables."""
    blocks, model = shipped
    theta = np.ascontiguousarray(model.theta_, dtype=np.float64)
    bias = float(model.bias_)
    for name, enc in blocks:
        I, J = _all_pairs(enc.n)
        twin = np.empty(len(I))
        _factors_py.pair_factors(enc, theta, bias, I, J, twin)
        want = _merged(enc, theta, bias)[I, J]
        assert_close(want, twin, name)
        for memo in (True, False):
            got = np.empty(len(I))
            _factors.pair_factors(enc, theta, bias, I, J, got, memo=memo)
            assert got.tobytes() == want.tobytes(), (name, memo)
        # shuffled (grouped by I inside the call, each value to its own slot), e.g. the
        # prior's pairs drawn at random on a large block
        perm = np.random.default_rng(7).permutation(len(I))
        got = np.empty(len(I))
        _factors.pair_factors(enc, theta, bias, I[perm], J[perm], got)
        assert got.tobytes() == want[perm].tobytes(), name


def test_shared_memo_tables_fill_once_and_change_no_value(shipped):
    """share_memo: the calls on one encoding share its component memo tables (filled by
    the first call, read by later ones, also by a call asked for no memo), every value
    still the twin's; unshare_memo drops them."""
    blocks, model = shipped
    theta = np.ascontiguousarray(model.theta_, dtype=np.float64)
    bias = float(model.bias_)
    name, enc = blocks[1]
    I, J = _all_pairs(enc.n)
    twin = np.empty(len(I))
    _factors_py.pair_factors(enc, theta, bias, J, I, twin)
    want = _merged(enc, theta, bias)[J, I]
    assert_close(want, twin)
    _factors.share_memo(enc)
    try:
        n_comp, comp_idx, cc, mc = _factors.shared_memo(enc)
        assert n_comp == len(np.unique(enc.comp1)) and comp_idx.shape == (enc.n,)
        assert np.isnan(cc).all() and np.isnan(mc).all()
        _factors.pair_factors(enc, theta, bias, I, J, np.empty(len(I)))
        filled_cc, filled_mc = int((~np.isnan(cc)).sum()), int((~np.isnan(mc)).sum())
        assert filled_cc > 0 and filled_mc > 0
        got = np.empty(len(I))
        _factors.pair_factors(enc, theta, bias, J, I, got, memo=False)   # reads the shared tables
        assert got.tobytes() == want.tobytes()
        assert int((~np.isnan(mc)).sum()) >= filled_mc
    finally:
        _factors.unshare_memo(enc)
    assert _factors.shared_memo(enc) is None
    assert not hasattr(enc, "_feature_memo")       # nothing is written on the encoding
    _factors.unshare_memo(enc)          # a second call is a no-op


def test_anneal_with_prefilled_shared_memo_gives_the_same_sweeps(shipped):
    """Gibbs sweeps on an encoding whose memo tables another call has filled: the labels,
    the random stream and the factor counts of a run with fresh tables, both samplers."""
    from coref.gibbs import _gibbs
    from coref.gibbs import bound_table

    blocks, model = shipped
    theta = np.ascontiguousarray(model.theta_, dtype=np.float64)
    bias = float(model.bias_)
    name, enc = blocks[2]
    n = enc.n
    b_table = bound_table(0.05, n + 1)
    inv_temps = 1.0 / np.linspace(1.0, 0.05, 6)

    def run(racing):
        labels = np.arange(n, dtype=np.int64)
        size = np.ones(n, np.int64)
        rng_state = np.array([1, 2, 3, 4], np.uint64)
        evals = np.zeros(len(inv_temps), np.int64)
        _gibbs.anneal(enc, theta, bias, labels, size, np.arange(n, dtype=np.int64), inv_temps,
                      np.zeros(len(inv_temps), np.int8), 0, racing, 3, 1, np.full(n, -np.inf),
                      b_table, rng_state, np.zeros((0, n), np.int64), evals)
        return labels, rng_state, evals

    for racing in (0, 1):
        fresh = run(racing)
        _factors.share_memo(enc)
        try:
            I, J = _all_pairs(n)
            _factors.pair_factors(enc, theta, bias + 0.5, I, J, np.empty(len(I)))
            shared = run(racing)
        finally:
            _factors.unshare_memo(enc)
        for a, b in zip(fresh, shared):
            np.testing.assert_array_equal(a, b)


def test_row_mode_profile_lookups_cover_cross_component_pairs(shipped):
    """Row mode looks the coauthor-component profile terms up too (phi[20..22] and the
    title-vs-profile dot phi[24] of pairs in different components, no memo): the blocks
    have such pairs with non-zero terms, and row_factors still equals the twin."""
    blocks, model = shipped
    theta = np.ascontiguousarray(model.theta_, dtype=np.float64)
    bias = float(model.bias_)
    name, enc = blocks[0]
    I, J = _all_pairs(enc.n)
    cross = enc.comp1[I] != enc.comp1[J]
    assert cross.sum() > 100
    phi = np.empty((len(I), N_FEATURES))
    _factors_py.pair_features(enc, I, J, phi)
    for k in (20, 21, 24):
        assert np.count_nonzero(phi[cross, k]) > 10, k
    merged = _merged(enc, theta, bias)
    for i in np.unique(I[cross])[:40]:
        js = np.flatnonzero(enc.comp1 != enc.comp1[i]).astype(np.int64)
        a, b = np.empty(len(js)), np.empty(len(js))
        assert _factors.row_factors(enc, theta, bias, int(i), js, a, memo=False) is True
        _factors_py.pair_factors(enc, theta, bias, np.full(len(js), i, np.int64), js, b)
        assert a.tobytes() == merged[i, js].tobytes(), (name, int(i))
        assert_close(a, b, (name, int(i)))


def test_compiled_n_base_is_the_feature_layout():
    """The kernel's compile-time N_BASE (declared in coref/factors/_block.pxd) is the one
    feature layout of coref.factors.names."""
    from coref.factors import _factors as kernel
    from coref.factors import names

    assert kernel.n_base == names.N_BASE == len(names.BASE_FEATURES)
    assert kernel.n_features == names.N_FEATURES == 2 * names.N_BASE


def test_fit_shares_the_memo_tables_with_the_prior_and_drops_them(shipped_model_and_data, monkeypatch):
    """GibbsCoref.fit: the block prior's pairs run with the block's shared memo tables
    (coref.factors._factors.share_memo), and none is left for the encoding afterwards
    (nothing is written on the encoding, so nothing rides along to a Dask worker)."""
    from coref.gibbs import GibbsCoref
    from coref.model import PairwiseModel

    df, model = shipped_model_and_data
    name = df.groupby("block").size().sort_values().index[len(df["block"].unique()) // 2]
    sub = df[df["block"] == name].drop(columns=["gold"], errors="ignore")
    seen = []
    real = PairwiseModel.rate_factors

    def spy(self, e):
        seen.append((e, _factors.shared_memo(e) is not None))
        return real(self, e)

    monkeypatch.setattr(PairwiseModel, "rate_factors", spy)
    g = GibbsCoref(model, sampler="racing", n_sweeps=4, rng=1).fit(sub)
    if not seen:
        pytest.skip("the shipped model has no block prior")
    assert [s for _, s in seen] == [True]
    enc = seen[0][0]
    assert _factors.shared_memo(enc) is None and not hasattr(enc, "_feature_memo")
    monkeypatch.setattr(PairwiseModel, "rate_factors", real)
    h = GibbsCoref(model, sampler="racing", n_sweeps=4, rng=1).fit(sub)
    np.testing.assert_array_equal(g.labels_, h.labels_)
