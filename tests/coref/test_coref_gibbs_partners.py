"""Racing memo from candidate partners (``coref.gibbs.partners``, ``anneal(cand_*)``).

``PartnerIndex.rest[i]`` must bound f(i, j) for every j outside i's candidates, for
weights of both signs, any ``max_df`` (1: almost nothing indexed, every sharing bounded)
and the shipped model's big-block weights; a memo built from the candidates must hold
the K best candidates exactly and a rest that bounds every other partner; the kernel
must equal its twin with the index (labels, factor counts, generator state, memo).
"""
import numpy as np
import pytest

from coref.factors import _factors
from coref.factors.names import N_BASE, N_FEATURES
from coref.gibbs import _gibbs, _gibbs_py, bound_table
from coref.gibbs.partners import classes, partner_index
from coref.model import block_theta
from coref.model.block_prior import block_bias_evals
from coref.synth_block import synthesize_block


@pytest.fixture(scope="module")
def blocks(shipped_model_and_data):
    df, model = shipped_model_and_data
    big = df["block"].value_counts().index[0]
    real = df[df["block"] == big].reset_index(drop=True)
    return model, [model.encode(synthesize_block(140, rng=3)), model.encode(real)]


def _theta(seed, scale=0.6):
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, scale, N_FEATURES), float(rng.normal(0.0, 1.0))


def _matrix(enc, theta, bias):
    F = np.empty((enc.n, enc.n))
    _factors.factor_matrix(enc, theta, bias, F)
    return F


def _check_rest(enc, theta, bias, max_df):
    idx = partner_index(enc, theta, bias, max_df)
    F = _matrix(enc, theta, bias)
    n = enc.n
    worst = -np.inf
    for lev in range(idx.n_levels):
        for i in range(n):
            off = np.ones(n, bool)
            off[i] = False
            cand = idx.candidates(i, lev)
            if lev > 0:                                   # a level's candidates hold the previous level's
                assert set(idx.candidates(i, lev - 1).tolist()) <= set(cand.tolist())
            off[cand] = False
            if off.any():
                r = idx.rest[lev * n + i]
                assert F[i, off].max() <= r, (lev, i, F[i, off].max(), r)
                worst = max(worst, F[i, off].max() - r)
    return idx, worst


@pytest.mark.parametrize("max_df", [1, 3, 40, 10**6, (2, 10, 60)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rest_bounds_every_partner_outside_the_candidates(blocks, seed, max_df):
    _, encs = blocks
    for enc in encs:
        theta, bias = _theta(seed)
        _check_rest(enc, theta, bias, max_df)


@pytest.mark.parametrize("max_df", [1, 8, 10**6, (4, 30)])
def test_rest_bound_with_the_shipped_big_block_weights(blocks, max_df):
    model, encs = blocks
    for enc in encs:
        theta = model.big_.theta if getattr(model, "big_", None) is not None else block_theta(model, enc)
        bias, _ = block_bias_evals(model, enc)
        idx, worst = _check_rest(enc, np.ascontiguousarray(theta, dtype=np.float64), bias, max_df)
        assert worst < 0.0


def test_candidates_hold_the_coauthor_group_and_a_shared_coauthor(blocks):
    _, encs = blocks
    enc = encs[0]
    theta, bias = _theta(5)
    idx = partner_index(enc, theta, bias, 1)           # only the forced keys indexed
    comp1 = np.asarray(enc.comp1)
    ptr, ids = np.asarray(enc.co_ptr), np.asarray(enc.co_ids)
    for i in range(enc.n):
        c = set(idx.candidates(i).tolist())
        assert set(np.flatnonzero(comp1 == comp1[i]).tolist()) - {i} <= c
        mine = set(ids[ptr[i]:ptr[i + 1]].tolist())
        share = {j for j in range(enc.n) if j != i and mine & set(ids[ptr[j]:ptr[j + 1]].tolist())}
        assert share <= c


def test_classes_group_mentions_of_one_name_form(blocks):
    _, encs = blocks
    enc = encs[0]
    cls, attrs, rep = classes(enc)
    assert cls.shape == (enc.n,) and len(rep) == len(attrs) == cls.max() + 1
    np.testing.assert_array_equal(cls[rep], np.arange(len(rep)))
    for u in range(len(rep)):
        m = np.flatnonzero(cls == u)
        for k in ("first_code", "init_code", "given_code", "mid_init"):
            assert len(np.unique(np.asarray(getattr(enc, k))[m])) == 1


def test_partner_index_errors(blocks):
    _, encs = blocks
    theta, bias = _theta(0)
    with pytest.raises(ValueError, match="theta must have shape"):
        partner_index(encs[0], theta[:N_BASE], bias)
    with pytest.raises(ValueError, match="max_df must be >= 1"):
        partner_index(encs[0], theta, bias, 0)
    with pytest.raises(ValueError, match="max_df levels must increase"):
        partner_index(encs[0], theta, bias, (8, 8))


def test_levels_tighten_the_bound_and_skip_repeats(blocks):
    _, encs = blocks
    enc = encs[1]
    n = enc.n
    theta, bias = _theta(7)
    one = partner_index(enc, theta, bias, 2)
    two = partner_index(enc, theta, bias, (2, 10**6))
    assert one.n_levels == 1 and two.n_levels == 2
    np.testing.assert_array_equal(two.rest[:n], one.rest)
    assert (two.rest[n:] <= two.rest[:n] + 1e-9).all()
    assert partner_index(enc, theta, bias, (10**6, 10**7)).n_levels == 1     # nothing more indexed


def _memo_check(enc, theta, bias, idx, accept, mj, mf, mr):
    F = _matrix(enc, theta, bias)
    n, K = mj.shape
    built = np.flatnonzero(~np.isnan(mr))
    assert len(built) > 0
    for i in built:
        row = F[i].copy()
        row[i] = -np.inf
        kept = mj[i][mj[i] < n]
        np.testing.assert_array_equal(mf[i][: len(kept)], F[i, kept])
        others = np.ones(n, bool)
        others[kept] = False
        others[i] = False
        assert (row[others] <= mr[i]).all()                       # rest bounds every other
        # the kept partners: the K best candidates of a level above its bound (a
        # candidate memo), or the K best of the row (the whole row evaluated)
        options = []
        for lev in range(idx.n_levels):
            cand = idx.candidates(i, lev)
            best_c = cand[np.lexsort((cand, -F[i, cand]))][:K]
            options.append(np.sort(best_c[F[i, best_c] > idx.rest[lev * n + i]]))
        J = np.array([j for j in range(n) if j != i])
        options.append(np.sort(J[np.lexsort((J, -F[i, J]))][:K]))
        assert any(np.array_equal(kept, o) for o in options)


@pytest.mark.parametrize("seed,max_df,accept", [(3, 2, 0.0), (4, 6, 50.0), (5, 1, -1e9), (6, (1, 4, 30), 0.0)])
def test_racing_with_candidate_memo_matches_twin(blocks, seed, max_df, accept, racing_run):
    _, encs = blocks
    enc = encs[0]
    n = enc.n
    theta, _ = _theta(seed, 0.4)
    theta[17] += 2.0
    bias = -1.0
    idx = partner_index(enc, theta, bias, max_df)
    labels0 = np.random.default_rng(seed).integers(0, n // 6, n)
    temps = [1.0, 3.0, 20.0]
    out = [racing_run(mod, enc, theta, bias, labels0, temps, 5, 6, index=idx, accept=accept)
           for mod in (_gibbs, _gibbs_py)]
    for a, b in zip(out[0], out[1]):
        np.testing.assert_array_equal(a, b)
    _memo_check(enc, theta, bias, idx, accept, *out[0][3:])
    whole = racing_run(_gibbs, enc, theta, bias, labels0, temps, 5, 6)
    if accept > -1e9:
        assert not np.array_equal(out[0][1], whole[1])     # the candidate memos were used
    else:
        # nothing accepted: every build falls back to the whole row: the K best, rest the next
        F = _matrix(enc, theta, bias)
        mj, mf, mr = out[0][3:]
        for i in np.flatnonzero(~np.isnan(mr)):
            J = np.array([j for j in range(n) if j != i])
            order = np.lexsort((J, -F[i, J]))
            np.testing.assert_array_equal(mj[i], np.sort(J[order[:5]]))
            assert mr[i] == F[i, J[order[5]]]
        assert (~np.isnan(mr)).all()                         # every mention built at its first step


def test_candidate_index_shapes_are_checked(blocks):
    _, encs = blocks
    enc = encs[0]
    n = enc.n
    theta, bias = _theta(0)
    idx = partner_index(enc, theta, bias, 4)
    bad = {"short q_ptr": (idx.q_ptr[:-1], idx.q_key, idx.k_ptr, idx.k_men, idx.rest),
           "key range": (idx.q_ptr, idx.q_key + idx.n_keys, idx.k_ptr, idx.k_men, idx.rest),
           "mention range": (idx.q_ptr, idx.q_key, idx.k_ptr, idx.k_men + n, idx.rest),
           "nan rest": (idx.q_ptr, idx.q_key, idx.k_ptr, idx.k_men, np.full(n, np.nan))}
    msgs = {"short q_ptr": r"cand_q_ptr must have L \(n \+ 1\) entries", "key range": "cand_q_key holds a key",
            "mention range": "cand_k_men holds a mention", "nan rest": "cand_rest must not hold NaN"}
    for what, args in bad.items():
        for mod in (_gibbs, _gibbs_py):
            with pytest.raises(ValueError, match=msgs[what]):
                mod.anneal(enc, theta, bias, np.arange(n, dtype=np.int64), np.ones(n, np.int64),
                           np.arange(n, dtype=np.int64), np.ones(1), np.zeros(1, np.int8), 0, 1, 3, 2,
                           np.zeros(n), bound_table(0.05, n + 1), np.array([1, 2, 3, 4], np.uint64),
                           np.zeros((1, n), np.int64), np.zeros(1, np.int64), None, 0,
                           np.zeros((n, 4), np.int64), np.zeros((n, 4)), np.full(n, np.nan), 1, 0, None,
                           0.0, *[np.ascontiguousarray(a) for a in args])


def _tier_check(enc, theta, bias, mj, mf, mr, ovf, at, tier, rng):
    """Every listed partner lies above t_i and outside the memo; every other partner is at
    most t_i; the tier bound of random arms is at least their exact sum."""
    F = _matrix(enc, theta, bias)
    n = enc.n
    used = 0
    for i in np.flatnonzero(~np.isnan(mr)):
        if at[n + i] < 0:
            continue
        used += 1
        lst = ovf[at[i]:at[i] + at[n + i]]
        kept = mj[i][mj[i] < n]
        assert (np.diff(lst) > 0).all() and not np.isin(lst, kept).any() and i not in lst
        assert (F[i, lst] > tier[i]).all() and (F[i, lst] <= mr[i]).all()
        other = np.ones(n, bool)
        other[kept] = other[lst] = other[i] = False
        assert (F[i, other] <= tier[i]).all()
        val = F[i]
        for _ in range(10):
            arm = rng.choice(np.flatnonzero(np.arange(n) != i), size=int(rng.integers(1, 20)), replace=False)
            ub = sum(mf[i][np.searchsorted(kept, j)] if j in kept else (mr[i] if j in lst else tier[i])
                     for j in arm.tolist())
            assert ub >= val[arm].sum() - 1e-9 * (1 + np.abs(val[arm]).sum())
    return used


@pytest.mark.parametrize("seed,max_df,accept,cap", [(3, 2, 0.0, 10**6), (4, (1, 6), -0.5, 10**6),
                                                    (5, None, 0.0, 10**6), (6, 2, 0.0, 40)])
def test_racing_with_memo_tier_matches_twin(blocks, seed, max_df, accept, cap, racing_run):
    """The second tier (``memo_ovf``): the kernel equals its twin (labels, factors, state, memo,
    tier arrays), the tier is valid, and a small arena lists what fits and no more."""
    _, encs = blocks
    enc = encs[0]
    n = enc.n
    theta, _ = _theta(seed, 0.4)
    theta[17] += 3.0                                 # big clusters: more than K partners above t
    bias = -0.5
    idx = None if max_df is None else partner_index(enc, theta, bias, max_df)
    labels0 = np.random.default_rng(seed).integers(0, n // 10, n)
    temps = [1.0, 3.0, 20.0]
    out = [racing_run(mod, enc, theta, bias, labels0, temps, 4, 6, index=idx, accept=accept, tier_cap=cap)
           for mod in (_gibbs, _gibbs_py)]
    for a, b in zip(out[0], out[1]):
        np.testing.assert_array_equal(a, b)
    ovf, at, tier = out[0][6:]
    assert 0 <= at[2 * n] <= cap
    used = _tier_check(enc, theta, bias, *out[0][3:6], ovf, at, tier, np.random.default_rng(seed))
    assert used > 0
    off = racing_run(_gibbs, enc, theta, bias, labels0, temps, 4, 6, index=idx, accept=accept)
    assert not np.array_equal(off[1], out[0][1])      # the tier changed the work


def test_memo_tier_arrays_are_checked(blocks):
    _, encs = blocks
    enc = encs[0]
    n = enc.n
    theta, bias = _theta(0)
    args = (enc, theta, bias, np.arange(n, dtype=np.int64), np.ones(n, np.int64), np.arange(n, dtype=np.int64),
            np.ones(1), np.zeros(1, np.int8), 0, 1, 3, 2, np.zeros(n), bound_table(0.05, n + 1),
            np.array([1, 2, 3, 4], np.uint64), np.zeros((1, n), np.int64), np.zeros(1, np.int64), None, 0,
            np.zeros((n, 4), np.int64), np.zeros((n, 4)), np.full(n, np.nan), 1, 0, None, 0.0) + (None,) * 5
    for mod in (_gibbs, _gibbs_py):
        with pytest.raises(ValueError, match="memo_ovf needs memo_ovf_at"):
            mod.anneal(*args, 0.0, np.zeros(5, np.int64), np.zeros(n, np.int64), np.zeros(n))
        at = np.zeros(2 * n + 1, np.int64)
        at[2 * n] = 6
        with pytest.raises(ValueError, match="the arena's fill"):
            mod.anneal(*args, 0.0, np.zeros(5, np.int64), at, np.zeros(n))


def test_auto_races_big_blocks_whose_matrix_fits(shipped_model_and_data, monkeypatch):
    """``sampler="auto"``: exact from the cached matrix below ``AUTO_RACING_MIN_N``
    mentions, racing (with the candidate memo) from it on, though the matrix fits."""
    from coref.gibbs import GibbsCoref
    from coref.gibbs import block as gibbs_block

    _, model = shipped_model_and_data
    df = synthesize_block(240, rng=9)
    df = df.drop(columns=[c for c in ("gold",) if c in df])
    g = GibbsCoref(model, sampler="auto", n_sweeps=3, rng=1).fit(df)
    assert g.cached_blocks_ == [str(df["block"].iloc[0])]
    monkeypatch.setattr(gibbs_block, "AUTO_RACING_MIN_N", 200)
    monkeypatch.setattr(gibbs_block, "PARTNER_MIN_N", 200)
    calls = []
    real = gibbs_block.partner_index
    monkeypatch.setattr(gibbs_block, "partner_index", lambda *a: calls.append(a[0].n) or real(*a))
    g = GibbsCoref(model, sampler="auto", n_sweeps=3, rng=1).fit(df)
    assert g.cached_blocks_ == [] and calls == [240]


def test_small_arm_bound_counts_coauthors_shared_across_cut_groups():
    """comp1 groups are cut (``coauthor_groups``), so two mentions of different groups can
    share a coauthor: only mentions that share none outside their group get overlaps 0."""
    from types import SimpleNamespace

    from coref.gibbs.arm_bound import _shares_outside

    # coauthors: m0 {1, 2}, m1 {2}, m2 {3}, m3 {3, 4}, m4 {}; groups: {m0, m1} {m2} {m3} {m4}
    enc = SimpleNamespace(n=5, co_ptr=np.array([0, 2, 3, 4, 6, 6]), co_ids=np.array([1, 2, 2, 3, 3, 4]))
    out = _shares_outside(enc, np.array([0, 0, 1, 2, 3]))
    np.testing.assert_array_equal(out, [False, False, True, True, False])


@pytest.mark.parametrize("seed,max_df,accept,cap", [(3, 2, 0.0, 10**6), (4, (1, 6), -0.5, 10**6),
                                                    (6, 2, 0.0, 40)])
def test_memo_threads_change_nothing_but_the_wall(blocks, seed, max_df, accept, cap, racing_run):
    """``memo_threads`` > 1 builds the first sweep's candidate memos over threads before its
    steps: labels, factor counts, generator state, memos and the tier arrays (also with an
    arena too small for every list) equal the serial kernel's and the twin's."""
    _, encs = blocks
    for enc in encs:
        n = enc.n
        theta, _ = _theta(seed, 0.4)
        theta[17] += 3.0
        bias = -0.5
        idx = partner_index(enc, theta, bias, max_df)
        labels0 = np.random.default_rng(seed).integers(0, n // 10, n)
        temps = [1.0, 3.0, 20.0]
        runs = [racing_run(mod, enc, theta, bias, labels0, temps, 4, 6, index=idx, accept=accept,
                           tier_cap=cap, memo_threads=t) for mod, t in ((_gibbs, 1), (_gibbs, 3), (_gibbs_py, 3))]
        for other in runs[1:]:
            for a, b in zip(runs[0], other):
                np.testing.assert_array_equal(a, b)
        assert not np.isnan(runs[1][5]).any()            # every mention built (in the first sweep)


def test_gibbs_coref_with_memo_threads_gives_the_serial_run(shipped_model_and_data, monkeypatch):
    """A block big enough for the candidate memo (``PARTNER_MIN_N``) clustered by GibbsCoref
    with one and with three memo threads: the same labels and factor counts per sweep."""
    from coref.gibbs import GibbsCoref
    from coref.gibbs import block as gibbs_block

    _, model = shipped_model_and_data
    df = synthesize_block(gibbs_block.PARTNER_MIN_N + 500, rng=11)
    runs = []
    for threads in (1, 3):
        monkeypatch.setattr(gibbs_block, "MEMO_THREADS", threads)
        g = GibbsCoref(model, sampler="racing", record_history=False, rng=4, n_sweeps=3).fit(df)
        runs.append((np.asarray(g.labels_), np.asarray(g.n_factor_evals_per_sweep_)))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    assert runs[0][1][1] > 0


def test_memo_threads_follow_the_setting_and_omp_num_threads(monkeypatch):
    from coref.gibbs import block as gibbs_block

    monkeypatch.setattr(gibbs_block, "MEMO_THREADS", 3)
    assert gibbs_block.memo_threads() == 3
    monkeypatch.setattr(gibbs_block, "MEMO_THREADS", None)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert gibbs_block.memo_threads() == 1
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert gibbs_block.memo_threads() >= 1


@pytest.fixture(scope="module")
def initial_block(shipped_model_and_data):
    """The largest first-initial block of 20,000 ``coref synth`` mentions ("Lei", "Li", "L."), shipped model."""
    from coref.synth import synthesize_mentions

    _, model = shipped_model_and_data
    df = synthesize_mentions(20000, rng=0)
    big = df["block"].value_counts().index[0]
    enc = model.encode(df[df["block"] == big].reset_index(drop=True))
    assert len(np.unique(np.asarray(enc.first_code)[np.asarray(enc.first_code) >= 0])) >= 3
    return model, enc


@pytest.mark.parametrize("max_df", [2, 30, 10**6, (3, 40)])
def test_first_name_keys_tighten_a_valid_bound(initial_block, max_df, monkeypatch):
    """With the full first names indexed, the classes of i's own first name leave the class maximum:
    the bound still holds every partner outside the candidates, is never looser, and is tighter for
    some mention once first names are indexed."""
    import coref.gibbs.partners as P

    model, enc = initial_block
    eq, _ = _theta(3)
    eq[P._F["name_first_eq"]] = 3.0                  # the same first name: the best partner class
    for theta, bias in [(np.ascontiguousarray(model.big_.theta), -8.0), _theta(3), (eq, -1.0)]:
        monkeypatch.setattr(P, "TOPIC_EXACT_MIN_N", 0)          # (checked valid with it too)
        _check_rest(enc, theta, bias, max_df)
        # (the exact topic terms refine the mentions whose bound is above 0: another set on each side)
        monkeypatch.setattr(P, "TOPIC_EXACT_MIN_N", 10**12)
        idx = partner_index(enc, theta, bias, max_df)
        monkeypatch.setattr(P, "FIRST_NAME_KEYS", False)
        without = partner_index(enc, theta, bias, max_df)
        monkeypatch.setattr(P, "FIRST_NAME_KEYS", True)
        if idx.n_levels != without.n_levels:     # a level that indexes first names only
            continue
        assert (idx.rest <= without.rest + 1e-12).all()
        if max_df == 10**6 and theta is eq:
            assert (idx.rest < without.rest - 1.0).any()


def _outward(lo, hi, want_lo, want_hi, slack):
    """[lo, hi] holds [want_lo, want_hi] (to float64 rounding) and is at most ``slack`` (the widening
    by :func:`coref.gibbs.topic_bounds._f32_error`) plus half of it (the rounding it covers) wider at each end."""
    assert want_lo - 1.5 * slack <= lo <= want_lo + 1e-12 and want_hi - 1e-12 <= hi <= want_hi + 1.5 * slack, \
        (lo, hi, want_lo, want_hi, slack)


@pytest.mark.parametrize("rows_per_chunk", [3, None])
def test_topic_extremes_are_those_of_the_kernel_features(initial_block, rows_per_chunk, monkeypatch):
    """``topic_extremes`` against ``pair_features`` for every partner of a sample of mentions:
    the ends hold the exact extremes of ``topic_cos`` and ``topic_drift`` over j != i, with 0,
    and are within the float32 rounding bound of them (in one chunk, and three rows per chunk)."""
    import coref.gibbs.topic_bounds as TB
    from coref.gibbs.partners import _F, topic_extremes

    _, enc = initial_block
    n, kt = enc.n, int(enc.n_topics)
    if rows_per_chunk:
        monkeypatch.setattr(TB, "TOPIC_CHUNK_BYTES", 4 * n * rows_per_chunk)
    rows = np.arange(0, n, max(1, n // 40), dtype=np.int64)
    got = topic_extremes(enc, rows)
    norm = np.linalg.norm(np.asarray(enc.topic)[: n * kt].reshape(n, kt), axis=1)
    for k, i in enumerate(rows.tolist()):
        J = np.flatnonzero(np.arange(n) != i).astype(np.int64)
        phi = np.empty((len(J), 2 * N_BASE))
        _factors.pair_features(enc, np.full(len(J), i, np.int64), J, phi)
        for e, (f, gap) in enumerate((("topic_cos", 1.0), ("topic_drift", 3.0))):
            v = phi[:, _F[f]]
            _outward(got[2 * e][k], got[2 * e + 1][k], min(v.min(), 0.0), max(v.max(), 0.0),
                     gap * TB._f32_error(kt) * norm[i] * norm.max())
    assert (got[3] > 0).any() and (got[2] < 0).any()          # (the drift is not trivially 0 here)


def test_topic_extremes_with_missing_years_by_hand():
    """A missing year gives no drift (gap 0), the own pair counts as 0, the gap caps at 3 decades."""
    from types import SimpleNamespace

    import coref.gibbs.topic_bounds as TB
    from coref.gibbs.topic_bounds import topic_extremes

    T = np.array([[1.0, 0.0], [0.6, 0.8], [-1.0, 0.0], [0.0, -1.0]])
    enc = SimpleNamespace(n=4, n_topics=2, topic=np.r_[T.ravel(), 0.0], year=np.array([1970, 2010, -1, 1990]))
    cos_lo, cos_hi, d_lo, d_hi = topic_extremes(enc, np.arange(4))
    s = TB._f32_error(2)                     # every norm is 1
    # mention 0 against 1 (0.6, 40 years -> 3.0), 2 (-1, no year), 3 (0, 20 years); mention 2 (no year):
    # products -1, -0.6, 0, no drift at all; mention 3 against 0 (0, 2.0), 1 (-0.8, 2.0), 2 (0, none)
    for i, want in [(0, [-1.0, 0.6, 0.0, 1.8]), (2, [-1.0, 0.0, 0.0, 0.0]), (3, [-0.8, 0.0, -1.6, 0.0])]:
        _outward(cos_lo[i], cos_hi[i], want[0], want[1], s)
        _outward(d_lo[i], d_hi[i], want[2], want[3], 3 * s)
    # a mention without a year has no drift: exactly 0 (no widening)
    assert d_lo[2] == 0.0 and d_hi[2] == 0.0


def test_exact_topic_terms_tighten_only_the_bounds_above_zero(initial_block, monkeypatch):
    """With the exact topic terms (``TOPIC_EXACT_MIN_N`` reached) the bound still holds every
    non-candidate (``_check_rest``), changes only for the mentions whose first-level bound was above 0,
    is never looser, and is tighter for some; below the size, the index is that of no refinement."""
    import coref.gibbs.partners as P

    model, enc = initial_block
    theta = np.ascontiguousarray(model.big_.theta, dtype=np.float64)
    for bias, max_df in [(-6.0, (3, 40)), (-4.0, 30)]:
        monkeypatch.setattr(P, "TOPIC_EXACT_MIN_N", 0)
        on, _ = _check_rest(enc, theta, bias, max_df)
        monkeypatch.setattr(P, "TOPIC_EXACT_MIN_N", 10**12)
        off = partner_index(enc, theta, bias, max_df)
        n = enc.n
        a, b = on.rest.reshape(on.n_levels, n), off.rest.reshape(off.n_levels, n)
        assert (a <= b + 1e-12).all()
        above = b[0] > 0.0
        assert above.any() and (a[:, ~above] == b[:, ~above]).all()
        assert (a[:, above] < b[:, above] - 1e-3).any()
        monkeypatch.setattr(P, "TOPIC_EXACT_MIN_N", enc.n + 1)
        np.testing.assert_array_equal(partner_index(enc, theta, bias, max_df).rest, off.rest)


def test_rest_bound_of_some_rows_is_that_of_the_whole_block(initial_block, monkeypatch):
    """The refinement recomputes the bound of the refined rows only (``_rest_bound(rows=...)``):
    the index is the one that recomputes every row, bit for bit."""
    import coref.gibbs.partners as P

    model, enc = initial_block
    theta = np.ascontiguousarray(model.big_.theta, dtype=np.float64)
    monkeypatch.setattr(P, "TOPIC_EXACT_MIN_N", 0)
    some = partner_index(enc, theta, -6.0, (3, 40))
    whole_block = P._rest_bound

    def every_row(*args, rows=None, **kw):
        r = whole_block(*args, **kw)
        return r if rows is None else r[rows]

    monkeypatch.setattr(P, "_rest_bound", every_row)
    every = partner_index(enc, theta, -6.0, (3, 40))
    np.testing.assert_array_equal(some.rest, every.rest)
    assert some.n_levels == every.n_levels == 2
    # the class maximum of a few rows still ranges over the kinds of the whole block
    rng = np.random.default_rng(3)
    table = P._class_table(enc, theta[:N_BASE])
    n = enc.n
    t = rng.normal(size=(N_BASE, n))
    group = np.where(rng.random(n) < 0.5, rng.integers(0, 4, n), -1)
    first = np.where(rng.random(n) < 0.3, np.asarray(enc.first_code, dtype=np.int64), -1)
    rows = np.array([0, 5, n - 1])
    np.testing.assert_array_equal(P._class_max(table, t[:, rows], group, 0.7, first, rows),
                                  P._class_max(table, t, group, 0.7, first)[rows])


def test_comp_topic_interval_holds_every_pair_of_other_groups(initial_block):
    """``comp_topic_interval`` against the kernel's damped feature for every pair in different
    comp1 groups, and its ends are the exact extremes over the other groups (with 0), to the
    float32 rounding bound."""
    from coref.gibbs.partners import _F, comp_topic_interval
    from coref.gibbs.topic_bounds import _f32_error

    _, enc = initial_block
    n = enc.n
    lo, hi = comp_topic_interval(enc)
    comp1 = np.asarray(enc.comp1)
    I, J = np.nonzero(comp1[:, None] != comp1[None, :])
    phi = np.empty((len(I), 2 * N_BASE))
    _factors.pair_features(enc, I.astype(np.int64), J.astype(np.int64), phi)
    v = phi[:, _F["comp_topic_cos"]]
    assert (v >= lo[I] - 1e-12).all() and (v <= hi[I] + 1e-12).all()
    # exact extremes of the undamped products over the other groups, 0 included
    kt = int(enc.n_topics)
    P = np.asarray(enc.comp_topic)[: n * kt].reshape(n, kt)
    norm = np.linalg.norm(P, axis=1)          # (rows by comp1 group id)
    for i in range(0, n, max(1, n // 25)):
        other = np.unique(comp1[comp1 != comp1[i]])
        d = P[other] @ P[comp1[i]]
        _outward(lo[i], hi[i], min(d.min(), 0.0), max(d.max(), 0.0),
                 _f32_error(kt) * norm[comp1[i]] * norm[np.unique(comp1)].max())


@pytest.mark.parametrize("chunk", [8, 2**20])
def test_comp_topic_interval_keeps_zero_for_the_damping(chunk, monkeypatch):
    """Damped products lie between 0 and the product: with only positive products the lower end is 0,
    with only negative ones the upper end is 0; the own group never counts; no topics: None.  The
    same with one row per chunk."""
    from types import SimpleNamespace

    import coref.gibbs.topic_bounds as TB
    from coref.gibbs.partners import comp_topic_interval

    monkeypatch.setattr(TB, "TOPIC_CHUNK_BYTES", chunk)

    prof = np.array([[0.6, 0.8], [0.8, 0.6], [1.0, 0.0], [-1.0, 0.0]])
    comp1 = np.array([0, 0, 1, 2, 3])                 # mentions 0, 1 in group 0
    enc = SimpleNamespace(n=5, n_topics=2, comp1=comp1,
                          comp_topic=np.concatenate([np.vstack([prof, np.zeros((1, 2))]).ravel(), [0.0]]))
    lo, hi = comp_topic_interval(enc)
    s = TB._f32_error(2)                     # every norm is 1 (the empty fifth row is no group's)
    # group 0 against 1, 2, 3: 0.96, 0.6, -0.6; group 2 ([1, 0]) against 0, 1, 3: 0.6, 0.8, -1
    for i, want in enumerate([(-0.6, 0.96), (-0.6, 0.96), (-0.8, 0.96), (-1.0, 0.8), (-1.0, 0.0)]):
        _outward(lo[i], hi[i], *want, s)
    assert hi[4] == 0.0                      # only negative products: the damping's 0, exactly
    pos = SimpleNamespace(n=2, n_topics=2, comp1=np.array([0, 1]),
                          comp_topic=np.array([0.6, 0.8, 0.8, 0.6, 0.0]))
    lo, hi = comp_topic_interval(pos)
    np.testing.assert_array_equal(lo, [0.0, 0.0])
    for i in range(2):
        _outward(lo[i], hi[i], 0.0, 0.96, s)
    one = SimpleNamespace(n=2, n_topics=2, comp1=np.array([0, 0]), comp_topic=np.array([0.6, 0.8, 0.6, 0.8, 0.0]))
    np.testing.assert_array_equal(comp_topic_interval(one), [[0.0, 0.0], [0.0, 0.0]])   # no other group
    assert comp_topic_interval(SimpleNamespace(n=2, n_topics=0, comp1=np.array([0, 1]),
                                               comp_topic=np.zeros(1))) is None
