"""Early stop with a move tolerance (``anneal(still_moves=...)``, ``coref.gibbs.block.still_moves``):
a counting sweep that moves at most ``still_moves`` mentions is still; compiled kernel and
pure-Python twin stop at the same sweep, the one the rule names on the full history."""
import numpy as np
import pytest

from coref.gibbs import _gibbs, _gibbs_py
from coref.gibbs import block as gibbs_block
from coref.gibbs import bound_table


@pytest.fixture(scope="module")
def shipped(shipped_model_and_data):
    df, model = shipped_model_and_data
    sizes = df.groupby("block").size().sort_values()
    name = [b for b, s in sizes.items() if 30 <= s <= 45][0]
    sub = df[df["block"] == name].sort_values("mention_id").reset_index(drop=True)
    return model.encode(sub), model


def _run(mod, enc, model, racing, patience, still, n_sweeps=12):
    n = enc.n
    labels = np.arange(n, dtype=np.int64)
    size = np.ones(n, np.int64)
    hist = np.zeros((n_sweeps, n), np.int64)
    ev = np.zeros(n_sweeps, np.int64)
    state = np.array([7, 2**61 + 5, 13, 2**35 + 3], np.uint64)
    used = mod.anneal(enc, np.ascontiguousarray(model.theta_), float(model.bias_), labels, size,
                      np.arange(n, dtype=np.int64), np.full(n_sweeps, 1.0),
                      np.ones(n_sweeps, np.int8), patience, racing, 3, racing,
                      np.full(n, -np.inf), bound_table(0.05, n + 1), state, hist, ev,
                      still_moves=still)
    return used, hist[:used], ev[:used], state


def _expected(hist, n, patience, still):
    """First sweep ending ``patience`` consecutive sweeps with at most ``still`` moves."""
    prev = np.arange(n)
    run = 0
    for s, lab in enumerate(hist, start=1):
        run = run + 1 if int((lab != prev).sum()) <= still else 0
        prev = lab
        if run >= patience:
            return s
    return len(hist)


@pytest.mark.parametrize("racing", [0, 1], ids=["exact", "racing"])
def test_still_moves_rule_and_twin(shipped, racing):
    enc, model = shipped
    n = enc.n
    full = _run(_gibbs, enc, model, racing, 0, 0)
    moves = [int((b != a).sum()) for a, b in zip(np.vstack([np.arange(n), full[1]]), full[1])]
    assert max(moves[1:]) >= 1                     # temperature 1 keeps some mentions moving
    stops = set()
    for still in (0, 1, 2, 5, n):
        want = _expected(full[1], n, 2, still)
        a = _run(_gibbs, enc, model, racing, 2, still)
        b = _run(_gibbs_py, enc, model, racing, 2, still)
        assert a[0] == want
        stops.add(want)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
        # the same stream as the full run up to the stop
        np.testing.assert_array_equal(a[1], full[1][:want])
    assert _expected(full[1], n, 2, n) == 2       # every sweep still: stop at `patience`
    assert len(stops) >= 2                         # the tolerance changes where it stops


@pytest.mark.parametrize("mod", [_gibbs, _gibbs_py], ids=["compiled", "twin"])
def test_still_moves_negative_raises(shipped, mod):
    enc, model = shipped
    with pytest.raises(ValueError, match="still_moves must be >= 0; got -1"):
        _run(mod, enc, model, 1, 2, -1)


def test_still_moves_of_block_size():
    m = gibbs_block.STILL_MIN_N
    assert gibbs_block.still_moves(m - 1) == 0
    assert gibbs_block.still_moves(0) == 0
    assert gibbs_block.still_moves(m) == int(gibbs_block.STILL_FRACTION * m)
    assert gibbs_block.still_moves(100 * m) == int(gibbs_block.STILL_FRACTION * 100 * m)


def _expected_used(hist, temps, patience, t_stop, still):
    """First sweep ending ``patience`` consecutive counting sweeps with at most ``still`` moves."""
    run = 0
    for s in range(1, len(temps) + 1):
        if temps[s - 1] <= t_stop:
            run = run + 1 if int((hist[s] != hist[s - 1]).sum()) <= still else 0
            if run >= patience:
                return s
    return len(temps)


@pytest.mark.parametrize("merge_moves", [0, 2], ids=["kernel", "with-merges"])
@pytest.mark.parametrize("sampler", ["exact", "racing"])
def test_fit_applies_still_fraction(monkeypatch, sampler, merge_moves):
    """GibbsCoref.fit: blocks of >= STILL_MIN_N movable mentions stop by the tolerant rule
    (kernel sweeps and the one-sweep-at-a-time path with merge proposals alike)."""
    from coref.gibbs import GibbsCoref
    from tests.coref.test_coref_gibbs import _Model, _df, _theta

    df = _df(n=24, n_blocks=3, seed=4)
    m = _Model(_theta(), -1.0)
    kw = dict(sampler=sampler, n_sweeps=20, rng=3, t_start=6.0, t_end=4.0, merge_moves=merge_moves,
              big_block_sweeps=None)
    full = GibbsCoref(m, patience=0, **kw).fit(df)
    monkeypatch.setattr(gibbs_block, "STILL_MIN_N", 10)
    monkeypatch.setattr(gibbs_block, "STILL_FRACTION", 0.1)
    es = GibbsCoref(m, patience=2, early_stop_temp=10.0, **kw).fit(df)
    blocks = df["block"].to_numpy()
    earlier = 0
    for b in np.unique(blocks):
        cols = blocks == b
        still = gibbs_block.still_moves(int(cols.sum()))
        assert still >= 1
        used = _expected_used(full.labels_history_[:, cols], full.temperatures_, 2, 10.0, still)
        assert es.n_sweeps_used_[b] == used
        earlier += used < _expected_used(full.labels_history_[:, cols], full.temperatures_, 2, 10.0, 0)
        np.testing.assert_array_equal(es.labels_history_[:used + 1, cols],
                                      full.labels_history_[:used + 1, cols])
    assert earlier >= 1                            # the tolerance stops some block sooner


@pytest.mark.parametrize("sampler", ["racing", "exact"])
def test_big_blocks_anneal_in_big_block_sweeps(monkeypatch, sampler):
    """A block of >= STILL_MIN_N movable mentions anneals in ``big_block_sweeps`` sweeps over the
    same temperature range: its labels are those of a fit with ``n_sweeps=big_block_sweeps``
    (same seed), the rows after them repeat the last; smaller blocks run ``n_sweeps``; None or a
    count >= n_sweeps changes nothing; ``fixed`` mentions do not count towards the size."""
    from coref.gibbs import GibbsCoref
    from coref.gibbs.schedule import temperature_schedule
    from tests.coref.test_coref_gibbs import _Model, _df, _theta

    df = _df(n=30, n_blocks=3, seed=5)
    m = _Model(_theta(), -1.0)
    sizes = df["block"].value_counts()
    monkeypatch.setattr(gibbs_block, "STILL_MIN_N", int(sizes.iloc[1]))   # the two larger blocks are big
    kw = dict(sampler=sampler, rng=7, patience=0, t_start=2.0, t_end=0.1)
    g = GibbsCoref(m, n_sweeps=12, big_block_sweeps=4, **kw).fit(df)
    short = GibbsCoref(m, n_sweeps=4, big_block_sweeps=None, **kw).fit(df)
    full = GibbsCoref(m, n_sweeps=12, big_block_sweeps=None, **kw).fit(df)
    blocks = df["block"].to_numpy()
    for b in np.unique(blocks):
        cols = blocks == b
        big = cols.sum() >= gibbs_block.STILL_MIN_N
        ref = short if big else full
        assert g.n_sweeps_used_[b] == (4 if big else 12)
        np.testing.assert_array_equal(g.labels_history_[:ref.labels_history_.shape[0], cols],
                                      ref.labels_history_[:, cols])
        if big:
            assert (g.labels_history_[5:, cols] == g.labels_history_[4, cols]).all()
            assert (g.n_factor_evals_per_block_sweep_[b][5:] == 0).all()
    assert gibbs_block.block_temperatures(g._settings()[0], full.temperatures_, 10 ** 6).tolist() == \
        temperature_schedule(4, 2.0, 0.1).tolist()
    same = GibbsCoref(m, n_sweeps=12, big_block_sweeps=12, **kw).fit(df)
    np.testing.assert_array_equal(same.labels_history_, full.labels_history_)
    fx = np.zeros(len(df), bool)
    fx[::2] = True                                   # half fixed: no block has enough movable mentions
    a = GibbsCoref(m, n_sweeps=12, big_block_sweeps=4, **kw).fit(df, fixed=fx)
    c = GibbsCoref(m, n_sweeps=12, big_block_sweeps=None, **kw).fit(df, fixed=fx)
    np.testing.assert_array_equal(a.labels_history_, c.labels_history_)


def test_big_block_sweeps_is_validated_and_given_sweeps_apply_to_every_block():
    from coref.gibbs import GibbsCoref
    from coref.settings import make_gibbs_settings, make_settings
    from tests.coref.test_coref_gibbs import _Model, _df, _theta

    with pytest.raises(ValueError, match="big_block_sweeps must be None or >= 1"):
        make_gibbs_settings(big_block_sweeps=0)
    with pytest.raises(TypeError, match="big_block_sweeps must be an int"):
        GibbsCoref(_Model(_theta(), -1.0), big_block_sweeps=2.5).fit(_df(n=6, n_blocks=1, seed=0))
    assert make_settings("predict").gibbs_kwargs("racing").get("big_block_sweeps", "default") == "default"
    assert make_settings("predict", n_sweeps=7).gibbs_kwargs("racing")["big_block_sweeps"] is None
