"""The big-block weights of PairwiseModel (coref.model.big_blocks): which blocks use them, the fit, save / load."""
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from coref.exceptions import ModelFormatError
from coref.factors.names import FEATURE_NAMES, N_FEATURES
from coref.model import PairwiseModel, block_theta, load_model, save_model
from coref.model.big_blocks import (BIG_BLOCK_MIN_N, SYNTHETIC_BLOCKS, block_level_features,
                                    synthetic_training_blocks)
from coref.synth import synthesize_mentions
from coref.synth_block import synthesize_block

sys.path.insert(0, str(Path(__file__).parent))
from test_coref_model import _copy, _rewrite  # noqa: E402

MIN_N = 100


@pytest.fixture(scope="module")
def fitted():
    """A model fitted on small synthetic blocks, with big-block weights from two one-name blocks of 300."""
    small = synthesize_mentions(1500, rng=3)
    big = synthesize_block(600, rng=4, n_blocks=2)
    return PairwiseModel(rng=0, bias_shift=0.0, big_blocks=big, big_block_min_n=MIN_N).fit(small)


@pytest.fixture(scope="module")
def blocks(fitted):
    """One block just below MIN_N mentions and one at MIN_N, encoded."""
    df = synthesize_block(2 * MIN_N - 1, rng=9, n_blocks=2)
    below, at = sorted((df[df["block"] == b].reset_index(drop=True) for b in df["block"].unique()), key=len)
    assert (len(below), len(at)) == (MIN_N - 1, MIN_N)
    return fitted.encode(below), fitted.encode(at)


def test_blocks_of_at_least_min_n_mentions_use_the_big_block_weights(fitted, blocks, monkeypatch):
    small, big = blocks
    assert (small.n, big.n) == (MIN_N - 1, MIN_N)
    assert fitted.big_.min_n == MIN_N
    assert fitted.block_theta(small) is fitted.theta_ and fitted.base_bias(small) == fitted.bias_
    assert fitted.block_theta(big) is fitted.big_.theta and fitted.base_bias(big) == fitted.big_.bias
    assert not np.allclose(fitted.big_.theta, fitted.theta_)
    np.testing.assert_array_equal(block_theta(fitted, big), fitted.big_.theta)
    # every factor of the big block: big theta, big intercept + the block's prior shift against big pair_rate
    I, J = np.triu_indices(big.n, 1)
    phi = fitted.pair_features(big, I, J)
    F = fitted.factor_matrix(big)
    np.testing.assert_allclose(F[I, J], phi @ fitted.big_.theta + fitted.block_bias(big), rtol=1e-12, atol=1e-9)
    assert fitted.block_bias(big) == pytest.approx(fitted.big_.bias + fitted.block_shift(big))
    f = fitted.rate_factors(big)
    from coref.model.block_prior import em_block_rate, prior_shift, rate_pairs
    a, b, _ = rate_pairs(big.n, fitted.block_prior_pairs)
    np.testing.assert_allclose(f, fitted.pair_features(big, a, b) @ fitted.big_.theta + fitted.big_.bias,
                               rtol=1e-12, atol=1e-9)
    # a big block's rate: the first step (mean sigmoid), not the EM's fixed point
    r1 = float(np.mean(1.0 / (1.0 + np.exp(-f))))
    assert fitted.block_shift(big) == pytest.approx(prior_shift(r1, fitted.big_.pair_rate, fitted.block_prior_cap),
                                                    rel=1e-12)
    # where the first step lowers the prior, a small block's EM runs on, a big block's does not
    low = np.linspace(-12.0, -2.0, 500)
    df = synthesize_block(2 * MIN_N - 1, rng=9, n_blocks=2)
    fresh = fitted.encode(max((df[df["block"] == b].reset_index(drop=True) for b in df["block"].unique()), key=len))
    monkeypatch.setattr(fitted, "rate_factors", lambda enc: low)
    r1 = float(np.mean(1.0 / (1.0 + np.exp(-low))))
    r = em_block_rate(low, fitted.big_.pair_rate, fitted.block_prior_cap)
    assert r < r1 * 0.99
    assert fitted.block_shift(fresh) == pytest.approx(prior_shift(r1, fitted.big_.pair_rate, fitted.block_prior_cap),
                                                      rel=1e-12)
    # the small block: the labeled blocks' weights
    I, J = np.triu_indices(small.n, 1)
    np.testing.assert_allclose(fitted.factor_matrix(small)[I, J],
                               fitted.pair_features(small, I, J) @ fitted.theta_ + fitted.block_bias(small),
                               rtol=1e-12, atol=1e-9)


def test_big_block_fit_leaves_out_block_level_features_and_has_no_shift(fitted):
    big = fitted.big_
    blk = block_level_features()
    names = [FEATURE_NAMES[k] for k in blk]
    assert "log_n" in names and "title_coherence" in names and "title_coherence*same_comp1" in names
    assert not big.feature_varied[blk].any()
    np.testing.assert_array_equal(big.theta[blk], 0.0)
    assert big.shift == 0.0 and big.bias == big.intercept and 0.0 < big.pair_rate < 1.0
    assert big.source == {"kind": "data", "n_mentions": 600, "n_blocks": 2, "prior_weights": big.source["prior_weights"]}
    # same-author pairs of a big block score higher than the others under its own weights
    df = synthesize_block(400, rng=11)
    enc = fitted.encode(df)
    I, J = np.triu_indices(enc.n, 1)
    g = df["gold"].to_numpy()
    f = fitted.pair_features(enc, I, J) @ big.theta
    assert f[g[I] == g[J]].mean() > f[g[I] != g[J]].mean() + 2.0


def test_gibbs_on_a_big_block_samples_with_the_big_block_weights(fitted, blocks):
    """GibbsCoref's kernel run of a big block gets big theta (compared with a model whose theta_ is it)."""
    import copy

    from coref.gibbs import GibbsCoref

    _, big = blocks
    twin = copy.copy(fitted)
    twin.theta_, twin.bias_, twin.pair_rate_, twin.big_ = (fitted.big_.theta, fitted.big_.bias,
                                                          fitted.big_.pair_rate, None)
    df = synthesize_block(2 * MIN_N - 1, rng=9, n_blocks=2)
    df = df[df["block"] == df["block"].value_counts().index[0]]
    assert len(df) == MIN_N
    a = GibbsCoref(fitted, sampler="exact", n_sweeps=3, rng=0, record_history=False).fit(df.drop(columns="gold"))
    b = GibbsCoref(twin, sampler="exact", n_sweeps=3, rng=0, record_history=False).fit(df.drop(columns="gold"))
    pd.testing.assert_series_equal(a.clusters_, b.clusters_)
    plain = copy.copy(fitted)
    plain.big_ = None
    c = GibbsCoref(plain, sampler="exact", n_sweeps=3, rng=0, record_history=False).fit(df.drop(columns="gold"))
    assert not a.clusters_.equals(c.clusters_)


def test_save_load_round_trip_and_a_model_without_them(fitted, blocks, tmp_path):
    _, big = blocks
    save_model(fitted, tmp_path / "m")
    doc = json.loads((tmp_path / "m" / "model.json").read_text())
    assert doc["big_blocks"]["min_n"] == MIN_N and doc["params"]["big_block_min_n"] == MIN_N
    assert doc["params"]["big_blocks"] is None           # a DataFrame is data, not a parameter
    m2, _ = load_model(tmp_path / "m")
    np.testing.assert_array_equal(m2.big_.theta, fitted.big_.theta)
    assert (m2.big_.bias, m2.big_.pair_rate, m2.big_.n_pairs) == (fitted.big_.bias, fitted.big_.pair_rate,
                                                                   fitted.big_.n_pairs)
    np.testing.assert_array_equal(m2.factor_matrix(big), fitted.factor_matrix(big))
    plain = PairwiseModel(rng=0, bias_shift=0.0).fit(synthesize_mentions(600, rng=5))
    save_model(plain, tmp_path / "p")
    assert "big_blocks" not in json.loads((tmp_path / "p" / "model.json").read_text())
    assert load_model(tmp_path / "p")[0].big_ is None


@pytest.mark.parametrize("change, match", [
    (lambda d: d["big_blocks"].__setitem__("pair_rate", 1.5), r"big_blocks'.pair_rate must be in \(0, 1\)"),
    (lambda d: d["big_blocks"].__setitem__("bias", 3.0), r"big_blocks': bias must equal intercept \+ shift"),
    (lambda d: d["big_blocks"].__setitem__("min_n", "1000"), r"big_blocks'.min_n must be a finite int"),
    (lambda d: d["big_blocks"].__setitem__("feature_varied", [True]), r"feature_varied must be a list of"),
    (lambda d: d.pop("big_blocks"), r"theta.npz: arrays not referenced by model.json: \['big_theta'\]"),
    (lambda d: d["params"].__setitem__("big_blocks", "real"), r"params.big_blocks must be None, 'synthetic'"),
])
def test_bad_big_block_fields_are_refused_naming_the_file(fitted, tmp_path, change, match):
    save_model(fitted, tmp_path / "m")
    d = _copy(tmp_path / "m", tmp_path / "bad")
    _rewrite(d, change)
    with pytest.raises(ModelFormatError, match=match):
        load_model(d)


def test_parameter_errors():
    df = synthesize_mentions(300, rng=1)
    with pytest.raises(ValueError, match="big_blocks must be None, 'synthetic' or a DataFrame"):
        PairwiseModel(big_blocks="yes").fit(df)
    with pytest.raises(ValueError, match="big_block_min_n must be an integer >= 2"):
        PairwiseModel(big_blocks="synthetic", big_block_min_n=1).fit(df)
    from coref.estimator import AuthorCoref

    with pytest.raises(ValueError, match="big_blocks parameter of AuthorCoref must be None or 'synthetic'"):
        AuthorCoref(big_blocks=df).fit(df)


def test_synthetic_training_blocks_are_deterministic_and_as_documented():
    a = synthetic_training_blocks()
    assert len(a) == 6 * sum(n for n, _ in SYNTHETIC_BLOCKS) == 81_000
    assert a["block"].nunique() == 30 and a["block"].value_counts().min() >= 1000
    assert a["mention_id"].is_unique and a["gold"].notna().all()
    pd.testing.assert_frame_equal(a.head(500), synthetic_training_blocks().head(500))


def test_shipped_default_model_has_big_block_weights_from_the_synthetic_set():
    from coref.inputs import DEFAULT_MODEL

    model, _ = load_model(DEFAULT_MODEL)
    assert model.big_ is not None and model.big_.min_n == BIG_BLOCK_MIN_N
    assert model.big_.source["kind"] == "synthetic"
    assert model.big_.source["blocks"] == [list(b) for b in SYNTHETIC_BLOCKS]
    assert model.big_.theta.shape == (N_FEATURES,)
    np.testing.assert_array_equal(model.big_.theta[block_level_features()], 0.0)


def test_explain_says_when_a_pair_is_scored_with_the_big_block_weights(fitted):
    from coref.explain import explain_pair

    df = synthesize_block(2 * MIN_N - 1, rng=9, n_blocks=2)
    sizes = df["block"].value_counts()
    for block, want in ((sizes.index[0], True), (sizes.index[1], False)):     # MIN_N and MIN_N - 1 mentions
        ids = df.loc[df["block"] == block, "mention_id"].tolist()
        e = explain_pair(fitted, df, ids[0], ids[1])
        assert e.big_block is want
        assert ("big-block weights" in e.text().splitlines()[0]) is want
        assert e.f == pytest.approx(float(e.by_feature["contribution"].sum()) + e.bias)


@pytest.mark.parametrize("stream", [False, True])
def test_report_and_summary_say_which_blocks_use_the_big_block_weights(fitted, tmp_path, stream):
    from coref.io import write_mentions
    from coref.jobs.predict import predict

    save_model(fitted, tmp_path / "m")
    plain = PairwiseModel(rng=0, bias_shift=0.0).fit(synthesize_mentions(600, rng=5))
    save_model(plain, tmp_path / "p")
    data = write_mentions(synthesize_mentions(300, rng=6), tmp_path / "d.parquet")
    for name, want in (("m", MIN_N), ("p", None)):
        r = predict(data, model=tmp_path / name, out=tmp_path / f"out_{name}", progress=False, stream=stream)
        assert r.summary["model"]["big_block_min_n"] == want
        md = (tmp_path / f"out_{name}" / "report.md").read_text()
        assert (f"Blocks of {MIN_N:,} mentions or more are scored with the model's big-block weights" in md) \
            is (want is not None)
