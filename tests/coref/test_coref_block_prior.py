"""Per-block prior odds (PairwiseModel(block_prior="pcc")): the shift d_b, its reference rate,
its use by every factor of the block, save / load, and errors."""
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit

from coref.factors import _factors
from coref.gibbs import _gibbs
from coref.exceptions import ModelFormatError
from coref.gibbs import GibbsCoref, block_rng, bound_table
from coref.model import PairwiseModel, block_bias_evals, block_prior, load_model, rate_pairs, save_model

sys.path.insert(0, str(Path(__file__).parent))
from test_coref_gibbs import _df  # noqa: E402


@pytest.fixture(scope="module")
def fitted():
    df = _df(n=20, n_blocks=4, seed=3)
    return df, PairwiseModel(bias_shift=0.0).fit(df)


def _f0(model, enc):
    """The factor matrix at the pooled intercept bias_ (no block shift), upper triangle."""
    F = np.zeros((enc.n, enc.n))
    _factors.factor_matrix(enc, model.theta_, model.bias_, F)
    return F[np.triu_indices(enc.n, 1)]


def test_block_shift_evals_counts_the_rate_pairs(fitted):
    _, m = fitted
    assert [m.block_shift_evals(n) for n in (0, 1, 2, 5)] == [0, 0, 1, 10]
    assert m.block_shift_evals(10**4) == m.block_prior_pairs == len(rate_pairs(10**4, m.block_prior_pairs)[0])
    m.block_prior = "none"
    try:
        assert m.block_shift_evals(5) == 0
    finally:
        m.block_prior = "pcc"


def test_rate_pairs_all_then_seeded_sample():
    I, J, w = rate_pairs(5, 10)
    assert sorted(zip(I.tolist(), J.tolist())) == [(a, b) for a in range(5) for b in range(a + 1, 5)]
    assert w == 1.0
    I, J, w = rate_pairs(200, 500)
    assert len(I) == 500 and np.all(I < J) and J.max() < 200
    assert w == pytest.approx(200 * 199 / 2 / 500)
    I2, J2, _ = rate_pairs(200, 500)                     # the same block size gives the same pairs
    np.testing.assert_array_equal(I, I2)
    np.testing.assert_array_equal(J, J2)
    for n in (0, 1):
        I, J, w = rate_pairs(n, 10)
        assert len(I) == 0 and w == 0.0


def test_pair_rate_is_the_pooled_training_mean(fitted):
    df, m = fitted
    p = []
    for _, sub in df.groupby("block", sort=True):
        p.append(expit(_f0(m, m.encode(sub.drop(columns=["gold"])))))
    assert m.pair_rate_ == pytest.approx(np.concatenate(p).mean(), rel=1e-12)


def _em_shift(f, r_train, cap, steps=100):
    """The downward-only prior-shift EM, written out: classify-and-count, then EM while it lowers."""
    d = logit(expit(f).mean()) - logit(r_train)
    if d < 0:
        for _ in range(steps):
            if d <= -cap:
                break
            new = logit(expit(f + d).mean()) - logit(r_train)
            if abs(new - d) < 1e-6:
                d = new
                break
            d = new
    return float(np.clip(d, -cap, cap))


def test_em_block_rate_exact_on_a_tiny_input():
    # r_train = 1/2: step 1 gives d_1 < 0, the EM steps down to its fixed point
    f = np.array([2.0, -5.0, -5.0, -5.0])
    r = block_prior.em_block_rate(f, 0.5, 10.0)
    d = logit(r)
    assert d == pytest.approx(_em_shift(f, 0.5, 10.0), abs=1e-5)
    assert d < logit(expit(f).mean()) - 0.5 < 0                # well below the one step
    # fixed point: d = logit(mean sigmoid(f + d)) within the tolerance
    assert d == pytest.approx(logit(expit(f + d).mean()), abs=1e-5)
    # no EM steps: classify-and-count
    assert block_prior.em_block_rate(f, 0.5, 10.0, max_steps=0) == pytest.approx(expit(f).mean(), rel=1e-15)
    # a first step that raises the prior is kept as it is (no runaway upwards)
    up = np.array([5.0, 5.0, -1.0])
    assert block_prior.em_block_rate(up, 0.5, 3.0) == pytest.approx(expit(up).mean(), rel=1e-15)
    # stops at -cap: every pair far below the training rate
    low = np.full(4, -9.0)
    assert logit(block_prior.em_block_rate(low, 0.5, 1.0)) <= -1.0
    assert block_prior.prior_shift(block_prior.em_block_rate(low, 0.5, 1.0), 0.5, 1.0) == -1.0
    assert block_prior.em_block_rate(np.zeros(0), 0.5, 3.0) == 0.5


def test_block_shift_is_the_prior_log_odds_change(fitted):
    df, m = fitted
    for b, sub in df.groupby("block"):
        enc = m.encode(sub.drop(columns=["gold"]))
        want = _em_shift(_f0(m, enc), m.pair_rate_, 3.0)
        assert m.block_shift(enc) == pytest.approx(want, abs=1e-5)
        assert m.block_bias(enc) == m.bias_ + m.block_shift(enc)
    # a block of very similar mentions (one author) gets a positive shift: more merging
    one = df[df["gold"] == df["gold"].iloc[0]]
    d = m.block_shift(m.encode(one.drop(columns=["gold"])))
    assert d > 0


def test_block_rate_is_computed_once_per_block_and_model_state(fitted, monkeypatch):
    df, m = fitted
    sub = df[df["block"] == "B1"].drop(columns=["gold"])
    enc = m.encode(sub)
    calls = []
    real = PairwiseModel.rate_factors
    monkeypatch.setattr(PairwiseModel, "rate_factors", lambda self, e: calls.append(e) or real(self, e))
    d = m.block_shift(enc)
    assert m.block_bias(enc) == m.bias_ + d and block_bias_evals(m, enc)[0] == m.bias_ + d
    assert len(calls) == 1                                # Gibbs, margins, explain: one estimate
    assert m.block_shift(m.encode(sub)) == d and len(calls) == 2    # a new encoding: its own
    old = m.bias_
    try:
        m.bias_ = old + 1.0                               # another model state: recomputed
        want = _em_shift(_f0(m, enc), m.pair_rate_, 3.0)
        assert m.block_shift(enc) == pytest.approx(want, abs=1e-5)
        assert len(calls) == 3 and m.block_shift(enc) != d
    finally:
        m.bias_ = old
    assert m.block_shift(enc) == d and len(calls) == 4
    assert block_prior._BLOCK_RATES[enc][1] == pytest.approx(
        block_prior.em_block_rate(_f0(m, enc), m.pair_rate_, 3.0), rel=1e-12)
    assert not any(k.startswith("_rate") for k in vars(enc))      # nothing rides along on the encoding


def test_cap_none_and_tiny_blocks(fitted):
    df, m = fitted
    enc = m.encode(df[df["block"] == "B0"].drop(columns=["gold"]))
    d = m.block_shift(enc)
    assert d != 0.0
    m.block_prior_cap = abs(d) / 2
    try:
        assert m.block_shift(enc) == pytest.approx(np.sign(d) * abs(d) / 2)
    finally:
        m.block_prior_cap = 3.0
    m.block_prior = "none"
    try:
        assert m.block_shift(enc) == 0.0 and m.block_bias(enc) == m.bias_
    finally:
        m.block_prior = "pcc"
    one = m.encode(df.iloc[:1].drop(columns=["gold"]))
    assert m.block_shift(one) == 0.0


def test_every_factor_of_the_block_uses_the_block_intercept(fitted):
    df, m = fitted
    sub = df[df["block"] == "B1"].drop(columns=["gold"]).reset_index(drop=True)
    enc = m.encode(sub)
    d = m.block_shift(enc)
    assert abs(d) > 1e-3
    F = m.factor_matrix(enc)
    iu = np.triu_indices(enc.n, 1)
    np.testing.assert_allclose(F[iu], _f0(m, enc) + d, rtol=0, atol=1e-12)
    assert m.pairwise_factor(enc, 1, 4) == F[1, 4]
    assert block_bias_evals(m, enc) == (m.block_bias(enc), enc.n * (enc.n - 1) // 2)

    class StandIn:                                        # no block_bias: the pooled intercept
        bias_ = 1.25
    assert block_bias_evals(StandIn(), enc) == (1.25, 0)
    # GibbsCoref anneals with bias_ + d_b: the kernel called with it gives the same clusters
    # a reference rate far below the block's: d_b = +cap = 30 nats, which merges everything
    import copy
    m = copy.deepcopy(m)
    m.block_prior_cap, m.pair_rate_ = 30.0, 1e-200
    assert m.block_bias(enc) == m.bias_ + 30.0
    g = GibbsCoref(m, sampler="exact", n_sweeps=6, rng=4, record_history=False).fit(sub)
    got = pd.Series(g.clusters_.reindex(sub["mention_id"].astype(str)).to_numpy()).factorize()[0]

    def kernel(bias):
        n = enc.n
        labels = np.arange(n, dtype=np.int64)            # init="singletons"
        size = np.ones(n, np.int64)
        state = block_rng(4, "B1").integers(0, 2**64, size=4, dtype=np.uint64, endpoint=False)
        temps = np.asarray(g.temperatures_, float)
        _gibbs.anneal(enc, m.theta_, bias, labels, size, np.arange(n, dtype=np.int64), 1.0 / temps,
                      (temps <= g.early_stop_temp).astype(np.int8), int(g.patience or 0), 0,
                      int(g.first_batch), int(bool(g.small_arm_bound)), np.full(n, -np.inf),
                      bound_table(float(g.delta), n + 1), state, np.zeros((0, n), np.int64),
                      np.zeros(len(temps), np.int64))
        return pd.Series(labels).factorize()[0]

    assert got.tolist() == kernel(m.block_bias(enc)).tolist()
    # the prior's factors count before the first sweep
    assert g.n_factor_evals_per_sweep_[0] == enc.n * (enc.n - 1) // 2 == m.block_shift_evals(enc.n)
    # with the pooled intercept the block stays split: the check above can fail
    assert got.tolist() != kernel(m.bias_).tolist()


def test_fit_with_a_given_prior_shift_samples_at_that_intercept_and_skips_the_estimate(fitted):
    df, m = fitted
    df = df.drop(columns=["gold"])
    est = GibbsCoref(m, sampler="exact", n_sweeps=6, rng=4, record_history=False).fit(df)
    encs = {b: m.encode(g.reset_index(drop=True).sort_values("mention_id", key=lambda s: s.astype(str)))
            for b, g in df.groupby("block")}
    assert est.prior_shifts_ == {b: m.block_shift(e) for b, e in encs.items()}
    assert all(v != 0.0 for v in est.prior_shifts_.values())
    # the estimate itself, given: the same clusters, without the estimate's factors
    same = GibbsCoref(m, sampler="exact", n_sweeps=6, rng=4, record_history=False).fit(
        df, prior_shift=est.prior_shifts_)
    assert same.clusters_.equals(est.clusters_) and same.prior_shifts_ == est.prior_shifts_
    assert est.n_factor_evals_ - same.n_factor_evals_ == sum(m.block_shift_evals(e.n) for e in encs.values())
    # a shift of +30 nats for B1 only merges B1 into one cluster; the other blocks are estimated as before
    big = GibbsCoref(m, sampler="exact", n_sweeps=6, rng=4, record_history=False).fit(df, prior_shift={"B1": 30.0})
    assert big.prior_shifts_ == {**est.prior_shifts_, "B1": 30.0}
    in_b1 = (df["block"] == "B1").to_numpy()
    ids = df["mention_id"].astype(str)
    assert big.clusters_.reindex(ids[in_b1]).nunique() == 1 < est.clusters_.reindex(ids[in_b1]).nunique()
    assert big.clusters_.reindex(ids[~in_b1]).equals(est.clusters_.reindex(ids[~in_b1]))
    g = GibbsCoref(m, sampler="exact", n_sweeps=2, rng=4)
    with pytest.raises(TypeError, match="prior_shift must be a mapping"):
        g.fit(df, prior_shift=[0.5])
    with pytest.raises(TypeError, match=r"prior_shift\['B1'\] must be a real number"):
        g.fit(df, prior_shift={"B1": "0.5"})
    with pytest.raises(ValueError, match=r"prior_shift\['B1'\] must be finite"):
        g.fit(df, prior_shift={"B1": float("nan")})


def test_save_load_and_old_models(fitted, tmp_path):
    df, m = fitted
    enc = m.encode(df[df["block"] == "B2"].drop(columns=["gold"]))
    save_model(m, tmp_path / "m")
    m2, _ = load_model(tmp_path / "m")
    assert m2.block_shift(enc) == m.block_shift(enc)
    doc = json.loads((tmp_path / "m" / "model.json").read_text())
    assert doc["params"]["block_prior"] == "pcc" and 0 < doc["pair_rate"] < 1

    def rewrite(mutate):
        import hashlib
        d = json.loads(json.dumps(doc))
        mutate(d)
        (tmp_path / "m" / "model.json").write_text(json.dumps(d))
        man = json.loads((tmp_path / "m" / "manifest.json").read_text())
        man["files"]["model.json"] = hashlib.sha256((tmp_path / "m" / "model.json").read_bytes()).hexdigest()
        (tmp_path / "m" / "manifest.json").write_text(json.dumps(man))

    # a model saved before block priors (no such params, no pair_rate) loads with none
    def old(d):
        for k in ("block_prior", "block_prior_cap", "block_prior_pairs"):
            del d["params"][k]
        del d["pair_rate"]
    rewrite(old)
    m3, _ = load_model(tmp_path / "m")
    assert m3.block_prior == "none" and m3.block_shift(enc) == 0.0
    rewrite(lambda d: d.__setitem__("pair_rate", 1.0))
    with pytest.raises(ModelFormatError, match="'pair_rate' must be in"):
        load_model(tmp_path / "m")
    rewrite(lambda d: d["params"].__setitem__("block_prior", "em"))
    with pytest.raises(ModelFormatError, match="params.block_prior must be"):
        load_model(tmp_path / "m")
    rewrite(lambda d: d["params"].__setitem__("block_prior_cap", -1))
    with pytest.raises(ModelFormatError, match="params.block_prior_cap must be"):
        load_model(tmp_path / "m")


@pytest.mark.parametrize("kw, match", [({"block_prior": "EM"}, "block_prior must be 'pcc' or 'none'"),
                                       ({"block_prior_cap": 0.0}, "block_prior_cap must be a finite number > 0"),
                                       ({"block_prior_pairs": 0}, "block_prior_pairs must be an integer >= 1")])
def test_bad_params(kw, match):
    with pytest.raises(ValueError, match=match):
        PairwiseModel(bias_shift=0.0, **kw).fit(_df(n=8, n_blocks=2, seed=0))


def test_coref_fit_block_prior_flag(tmp_path):
    """``coref fit --block-prior none`` saves a model without block shifts; the default saves pcc."""
    from coref.cli import fit as train

    df = _df(n=10, n_blocks=4, seed=6)
    for flag, want in ((["--block-prior", "none"], "none"), ([], "pcc")):
        import argparse

        ap = argparse.ArgumentParser()
        train.add_arguments(ap)
        args = ap.parse_args(["--model", str(tmp_path / want), "--calibration", "none"] + flag)
        args.data = df
        assert train.main(args) == 0
        m, _ = load_model(tmp_path / want)
        assert m.block_prior == want


def test_fit_shares_the_memo_tables_with_the_prior_and_drops_them(fitted, monkeypatch):
    """GibbsCoref.fit: the block prior's pairs run with the block's shared memo tables
    (coref.factors._factors.share_memo), and none is left on the encoding afterwards (it would
    ride along wherever the encoding goes, e.g. to a Dask worker)."""
    from coref.encoding import EncodingCache

    df, m = fitted
    sub = df[df["block"] == "B2"].drop(columns=["gold"]).sort_values("mention_id").reset_index(drop=True)
    enc = m.encode(sub)
    seen = []
    real = PairwiseModel.rate_factors
    monkeypatch.setattr(PairwiseModel, "rate_factors",
                        lambda self, e: seen.append(_factors.shared_memo(e) is not None) or real(self, e))
    cache = EncodingCache(m)
    cache.put("B2", sub["mention_id"], enc)
    g = GibbsCoref(m, sampler="racing", n_sweeps=4, rng=1).fit(sub, encodings=cache)
    assert seen == [True]
    assert _factors.shared_memo(enc) is None and not hasattr(enc, "_feature_memo")
    h = GibbsCoref(m, sampler="racing", n_sweeps=4, rng=1).fit(sub)      # its own encoding
    pd.testing.assert_series_equal(g.clusters_, h.clusters_)


def test_upper_pairs_are_triu_indices_read_only_and_kept_for_small_blocks():
    from coref.model.block_prior import UPPER_PAIRS_CACHE_MAX_N, upper_pairs

    for n in (0, 1, 2, 7, UPPER_PAIRS_CACHE_MAX_N, UPPER_PAIRS_CACHE_MAX_N + 1):
        I, J = upper_pairs(n)
        i, j = np.triu_indices(n, 1)
        assert I.dtype == J.dtype == np.int64 and np.array_equal(I, i) and np.array_equal(J, j)
        with pytest.raises(ValueError, match="read-only"):
            I[:1] = 0
    assert upper_pairs(7)[0] is upper_pairs(7)[0]                      # kept
    n = UPPER_PAIRS_CACHE_MAX_N + 1
    assert upper_pairs(n)[0] is not upper_pairs(n)[0]                  # built each time (memory)
    a, b, _ = rate_pairs(7, 10**6)
    a[:] = 0                                                           # rate_pairs gives its own copy
    assert upper_pairs(7)[0][-1] == 5
