"""PairwiseModel: fitting theta on labeled pairs, factors, save / load (JSON + npz), errors."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from coref.factors.names import FEATURE_NAMES, N_FEATURES
from coref.exceptions import ModelFormatError
from coref.model import PairwiseModel, labeled_pairs, load_model, save_model

sys.path.insert(0, str(Path(__file__).parent))
from test_coref_gibbs import _df  # noqa: E402


def test_labeled_pairs_all_and_subsampled():
    gold = np.array(["a", "a", None, "b", "a"], dtype=object)
    I, J, y = labeled_pairs(None, gold, max_pairs=100, rng=np.random.default_rng(0))
    assert sorted(zip(I.tolist(), J.tolist())) == [(0, 1), (0, 3), (0, 4), (1, 3), (1, 4), (3, 4)]
    assert dict(zip(zip(I.tolist(), J.tolist()), y.tolist()))[(0, 4)] == 1
    assert y.sum() == 3
    gold = np.array([str(k % 3) for k in range(50)], dtype=object)
    I, J, y = labeled_pairs(None, gold, max_pairs=200, rng=np.random.default_rng(1))
    assert len(I) == 200 and np.all(I < J)
    assert len(set(zip(I.tolist(), J.tolist()))) == 200


def test_fit_factor_consistency_and_save_load(tmp_path):
    df = _df(n=25, n_blocks=3, seed=1)
    m = PairwiseModel(bias_shift=0.5).fit(df)
    assert m.theta_.shape == (N_FEATURES,)
    assert m.bias_ == pytest.approx(m.intercept_ + 0.5)
    enc = m.encode(df[df["block"] == "B0"])
    F = m.factor_matrix(enc)
    assert F[2, 7] == m.pairwise_factor(enc, 2, 7) == m.pairwise_factor(enc, 7, 2)
    phi = m.pair_features(enc, [2], [7])
    assert F[2, 7] == pytest.approx(phi[0] @ m.theta_ + m.block_bias(enc))
    # same-person pairs score higher on average
    gold = df[df["block"] == "B0"]["gold"].to_numpy()
    same = gold[:, None] == gold[None, :]
    off = ~np.eye(len(gold), dtype=bool)
    assert F[same & off].mean() > F[~same].mean() + 1.0
    save_model(m, tmp_path / "m", extra={"note": "x"})
    m2, extra = load_model(tmp_path / "m")
    assert extra == {"note": "x"}
    np.testing.assert_array_equal(m2.factor_matrix(m2.encode(df[df["block"] == "B0"])), F)
    assert (m2.bias_, m2.shift_, m2.C, m2.bias_shift) == (m.bias_, m.shift_, m.C, m.bias_shift)
    assert (m2.block_prior, m2.block_prior_cap, m2.block_prior_pairs, m2.pair_rate_) == \
        ("pcc", 3.0, 20000, m.pair_rate_)


def test_auto_shift_picks_from_grid():
    df = _df(n=15, n_blocks=4, seed=2)
    m = PairwiseModel(bias_shift="auto", shift_grid=(-1.0, 0.0, 1.0), tune_sweeps=3).fit(df)
    assert m.shift_ in (-1.0, 0.0, 1.0)
    assert set(m.shift_scores_) == {-1.0, 0.0, 1.0}
    assert m.bias_ == m.intercept_ + m.shift_


def test_errors():
    df = _df(n=5)
    with pytest.raises(TypeError, match="DataFrame"):
        PairwiseModel().fit("x")
    with pytest.raises(ValueError, match="missing the mention column"):
        PairwiseModel().fit(df.drop(columns=["gold"]))
    with pytest.raises(ValueError, match="bias_shift must be"):
        PairwiseModel(bias_shift="big").fit(df)
    nolab = df.assign(gold=pd.array([None] * len(df), dtype="string"))
    with pytest.raises(ValueError, match="two labeled mentions"):
        PairwiseModel(bias_shift=0.0).fit(nolab)
    with pytest.raises(RuntimeError, match="not fitted"):
        PairwiseModel().encode(df)
    m = PairwiseModel(bias_shift=0.0).fit(_df(n=10, seed=4))
    with pytest.raises(IndexError, match="must be in"):
        m.pairwise_factor(m.encode(df), 0, 99)


# ----------------------------------------------------------------------------- saved models

@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    d = tmp_path_factory.mktemp("model") / "m"
    save_model(PairwiseModel(bias_shift=0.0).fit(_df(n=12, n_blocks=2, seed=3)), d)
    return d


def _copy(src, dst):
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_saved_model_files_are_data(saved):
    assert sorted(p.name for p in saved.iterdir()) == ["manifest.json", "model.json", "theta.npz"]
    doc = json.loads((saved / "model.json").read_text())
    assert doc["format"] == "coref-pairwise-model" and doc["version"] == 2
    assert doc["feature_names"] == list(FEATURE_NAMES)
    with np.load(saved / "theta.npz", allow_pickle=False) as z:
        assert z["theta"].shape == (N_FEATURES,)


def test_version_1_model_is_refused_with_a_request_to_refit(saved, tmp_path):
    """A version-1 theta was fitted on undamped component terms: refused, naming the fix."""
    import hashlib

    d = _copy(saved, tmp_path / "v1")
    man = json.loads((d / "manifest.json").read_text())
    man["version"] = 1
    (d / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(ModelFormatError, match=r"manifest.json: model format version 1; this coref reads "
                                               r"version 2 \(a version-1 model .* refit it with `coref fit"):
        load_model(d)
    d = _copy(saved, tmp_path / "v1doc")
    doc = json.loads((d / "model.json").read_text())
    doc["version"] = 1
    (d / "model.json").write_text(json.dumps(doc))
    man = json.loads((d / "manifest.json").read_text())
    man["files"]["model.json"] = hashlib.sha256((d / "model.json").read_bytes()).hexdigest()
    (d / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(ModelFormatError, match=r"model.json: model version 1; this coref reads version 2 "
                                               r"\(a version-1 model was fitted before the component terms"):
        load_model(d)


@pytest.mark.parametrize("name", ["model.json", "theta.npz"])
def test_tampered_file_is_refused_naming_it(saved, tmp_path, name):
    d = _copy(saved, tmp_path / "t")
    raw = bytearray((d / name).read_bytes())
    raw[len(raw) // 2] ^= 1
    (d / name).write_bytes(bytes(raw))
    with pytest.raises(ModelFormatError, match=rf"{name}: SHA-256 does not match manifest.json"):
        load_model(d)


def test_foreign_or_incomplete_directory_is_refused(saved, tmp_path):
    with pytest.raises(FileNotFoundError, match="model directory not found"):
        load_model(tmp_path / "nowhere")
    d = _copy(saved, tmp_path / "nomanifest")
    (d / "manifest.json").unlink()
    with pytest.raises(ModelFormatError, match=r"manifest.json: no manifest.json: not a coref model"):
        load_model(d)
    d = _copy(saved, tmp_path / "foreign")
    (d / "manifest.json").write_text(json.dumps({"format": "something-else", "version": 1}))
    with pytest.raises(ModelFormatError, match="not a coref model manifest"):
        load_model(d)
    # a pickle dressed up as theta.npz, with a matching checksum: refused, never unpickled
    d = _copy(saved, tmp_path / "pickled")
    import hashlib
    import pickle

    (d / "theta.npz").write_bytes(pickle.dumps(np.zeros(N_FEATURES)))
    man = json.loads((d / "manifest.json").read_text())
    man["files"]["theta.npz"] = hashlib.sha256((d / "theta.npz").read_bytes()).hexdigest()
    (d / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(ModelFormatError, match="theta.npz: unreadable npz"):
        load_model(d)


def _rewrite(d, edit):
    import hashlib

    doc = json.loads((d / "model.json").read_text())
    edit(doc)
    (d / "model.json").write_text(json.dumps(doc))
    man = json.loads((d / "manifest.json").read_text())
    man["files"]["model.json"] = hashlib.sha256((d / "model.json").read_bytes()).hexdigest()
    (d / "manifest.json").write_text(json.dumps(man))


def test_feature_layout_and_version_mismatch_are_refused(saved, tmp_path):
    d = _copy(saved, tmp_path / "layout")
    _rewrite(d, lambda doc: doc.__setitem__("feature_names", doc["feature_names"][:-1] + ["other"]))
    with pytest.raises(ModelFormatError, match=r"model.json: the model was fitted on \d+ features.*"
                                               r"first difference.*'other'.*coref fit"):
        load_model(d)
    d = _copy(saved, tmp_path / "version")
    _rewrite(d, lambda doc: doc.__setitem__("version", 99))
    with pytest.raises(ModelFormatError, match="model version 99"):
        load_model(d)
    d = _copy(saved, tmp_path / "bias")
    _rewrite(d, lambda doc: doc.__setitem__("bias", "big"))
    with pytest.raises(ModelFormatError, match="field 'bias' must be a float"):
        load_model(d)


def test_shipped_default_model_loads_with_this_feature_layout(repo_root):
    # if this fails after a change of the features, regenerate the shipped model (pyproject.toml):
    #   python -c "from coref import datasets; from coref.jobs.fit import fit;
    #              fit(datasets.load_labeled(), model='coref/models/default')"
    import coref
    from coref.inputs import DEFAULT_MODEL

    # the model of the package under test (installed or built in place) ...
    assert DEFAULT_MODEL == Path(coref.__file__).resolve().parent / "models" / "default"
    # ... is the repository's, file for file (package data installed whole)
    source = repo_root / "coref" / "models" / "default"
    assert sorted(p.name for p in DEFAULT_MODEL.iterdir()) == sorted(p.name for p in source.iterdir())
    for f in source.iterdir():
        assert (DEFAULT_MODEL / f.name).read_bytes() == f.read_bytes(), f.name
    model, extra = load_model(DEFAULT_MODEL)
    assert model.theta_.shape == (N_FEATURES,) and list(model.feature_names_) == list(FEATURE_NAMES)
    # trained on every shipped labeled set (aminer_na + aminer_dblp_dev), with its field record
    assert extra["training"]["n_blocks"] == 108 + 331 and extra["training"]["n_labeled"] == 7026 + 3176
    assert extra["estimator"] == "AuthorCoref"
    assert model.vocabulary_.fields == ("title", "venue", "affiliation", "abstract", "keywords", "year", "coauthors")
    # weight 0 on every feature that never varied, but the name-conflict priors (coref.model.name_priors):
    # the shipped sets are blocked by full name, so no first name or middle initial ever conflicts there
    from coref.model.name_priors import NAME_CONFLICT_PRIORS

    assert model.feature_varied_ is not None and model.prior_weights_ == NAME_CONFLICT_PRIORS
    prior = np.array([NAME_CONFLICT_PRIORS.get(n, 0.0) for n in FEATURE_NAMES])
    np.testing.assert_array_equal(model.theta_[~model.feature_varied_], prior[~model.feature_varied_])


def test_load_labeled_joins_the_shipped_sets_without_collisions():
    from coref import datasets

    df = datasets.load_labeled()
    assert len(df) == 7026 + 3176 and df["mention_id"].is_unique
    dev = df["block"].str.startswith("aminer_dblp_dev:")
    assert dev.sum() == 3176 and df.loc[dev, "gold"].str.startswith("aminer_dblp_dev:").all()
    # a name in both sets stays two blocks of different people
    assert {"Bing_Liu", "aminer_dblp_dev:Bing_Liu"} <= set(df["block"])
    assert not set(df.loc[df["block"] == "Bing_Liu", "gold"]) & set(df.loc[dev, "gold"])


def test_tune_shift_with_one_mention_labeled_blocks():
    # the issue: ten one-mention labeled blocks made the inner split of _tune_shift fail with
    # "df has no block with two labeled mentions"
    good = _df(n=10, n_blocks=4, seed=5)
    lone = _df(n=1, n_blocks=10, seed=6)
    lone["block"] = "L" + lone["block"]
    lone["mention_id"] = "L" + lone["mention_id"]
    lone["gold"] = "L" + lone["gold"]
    df = pd.concat([good, lone], ignore_index=True)
    for seed in (10, 16, 51):  # seeds whose inner split put all four good blocks on one side (failed before)
        m = PairwiseModel(shift_grid=(0.0, 1.0), tune_sweeps=2, rng=seed).fit(df)
        assert m.shift_ in (0.0, 1.0) and set(m.shift_scores_) == {0.0, 1.0}


def test_fit_asks_the_shift_tuner_only_for_auto():
    """PairwiseModel.fit runs no Gibbs itself: with bias_shift="auto" it calls the tuner it is
    given (coref.training.tune_shift by default) once theta is fitted, with the generator
    the fit drew from, and sets the shift, bias and reference rate from its answer."""
    df = _df(n=12, n_blocks=3, seed=8)
    calls = []

    def tuner(model, data, rng):
        calls.append((model.theta_.copy(), data, rng))
        return 0.25, {0.25: 0.5}

    m = PairwiseModel(rng=4).fit(df, shift_tuner=tuner)
    assert len(calls) == 1 and calls[0][1] is df and isinstance(calls[0][2], np.random.Generator)
    assert (m.shift_, m.shift_scores_, m.bias_) == (0.25, {0.25: 0.5}, m.intercept_ + 0.25)
    fixed = PairwiseModel(rng=4, bias_shift=0.25).fit(df, shift_tuner=tuner)
    assert len(calls) == 1                                        # a number: no tuning
    np.testing.assert_array_equal(fixed.theta_, calls[0][0])
    assert (fixed.bias_, fixed.pair_rate_) == (m.bias_, m.pair_rate_)


def test_unbuilt_tree_raises_a_clear_import_error(repo_root, tmp_path):
    # a copy of the sources without the compiled kernels, as a fresh checkout is
    import shutil

    for pkg in ("coref", "sampling"):
        shutil.copytree(repo_root / pkg, tmp_path / pkg,
                        ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__", "models"))
    code = ("import coref\n"
            "try:\n    coref.PairwiseModel\nexcept ImportError as e:\n    print('ERR', e)\n"
            "try:\n    coref.AuthorCoref().fit\n    import coref.estimator, coref.model\nexcept ImportError as e:\n"
            "    print('ERR2', e)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "ERR cannot import the compiled kernel coref.factors._factors" in r.stdout, r.stdout + r.stderr
    assert "pip install -e ." in r.stdout
    assert "ERR2" in r.stdout
