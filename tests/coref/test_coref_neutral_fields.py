"""Fields and features a model never learned are neutral at prediction (issue 27, deliverable 5)."""
import hashlib
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from coref.encoding import Vocabulary, encode_parts
from coref.encoding.text import INPUT_FIELDS, blank_fields, field_present
from coref.exceptions import IgnoredFieldsWarning, ModelFormatError
from coref.factors.names import FEATURE_NAMES, N_FEATURES
from coref.model import PairwiseModel, load_model, save_model
from coref.model.name_priors import NAME_CONFLICT_PRIORS

sys.path.insert(0, str(Path(__file__).parent))
from test_coref_gibbs import _df  # noqa: E402

_TOPICS = ["graph mining pattern", "protein folding structure", "database query optimizer"]


def _with_text(df, seed=0):
    """``df`` plus abstracts and keywords that follow the gold author (a strong, unseen signal)."""
    rng = np.random.default_rng(seed)
    df = df.copy()
    p = df["gold"].str[-1].astype(int).to_numpy()
    df["abstract"] = pd.array([f"{_TOPICS[k]} results {rng.integers(0, 50)}" for k in p], dtype="string")
    df["keywords"] = [[_TOPICS[k].split()[0], f"kw{rng.integers(0, 5)}"] for k in p]
    return df


def _arrays_equal(a, b):
    assert a.arrays.keys() == b.arrays.keys() and a.tables.keys() == b.tables.keys()
    for k in a.arrays:
        np.testing.assert_array_equal(a.arrays[k], b.arrays[k], err_msg=k)
    for k in a.tables:
        np.testing.assert_array_equal(a.tables[k], b.tables[k], err_msg=k)


def test_field_present_and_blank():
    df = pd.DataFrame({"title": ["a b", "null", None], "year": pd.array([2001, None, 3], dtype="Int64"),
                       "keywords": [["x"], [], ["NA"]], "abstract": pd.array(["t", pd.NA, "  "], dtype="string")})
    assert field_present(df, "title").tolist() == [True, False, False]
    assert field_present(df, "year").tolist() == [True, False, True]
    assert field_present(df, "keywords").tolist() == [True, False, False]
    assert field_present(df, "abstract").tolist() == [True, False, False]
    assert field_present(df, "coauthors").tolist() == [False, False, False]  # absent column
    b = blank_fields(df, ["title", "year", "keywords", "abstract"])
    assert not any(field_present(b, f).any() for f in INPUT_FIELDS)
    assert field_present(df, "title").any()  # the input is not modified


def test_vocabulary_records_fields_and_names_the_ignored_ones():
    df = _df(n=20, n_blocks=2, seed=3)
    voc = Vocabulary.fit(df)
    assert voc.fields == ("title", "venue", "affiliation", "year", "coauthors")
    ign = voc.ignored_fields(_with_text(df))
    assert list(ign) == ["abstract", "keywords"]
    assert "held no abstract" in ign["abstract"] and "never learned" in ign["abstract"]
    assert voc.ignored_fields(df) == {}
    # one training mention with an abstract is not enough to learn from
    one = _with_text(df)
    one.loc[one.index[1:], "abstract"] = pd.NA
    assert "abstract" not in Vocabulary.fit(one).fields
    # saved and restored; a state without the record uses every field
    state = voc.to_state()
    assert Vocabulary.from_state(json.loads(json.dumps(state))).fields == voc.fields
    del state["input_fields"]
    old = Vocabulary.from_state(state)
    assert old.fields is None and old.ignored_fields(_with_text(df)) == {}
    for bad in (["title", "title"], ["pages"], "title", [1]):
        with pytest.raises(ValueError, match="input_fields"):
            Vocabulary.from_state({**state, "input_fields": bad})


def test_encoding_ignores_unseen_fields_everywhere_and_warns_once():
    train = _df(n=40, n_blocks=2, seed=4)
    voc = Vocabulary.fit(train)
    assert voc.n_topics > 0  # the topic vectors are built (and must not see the abstracts)
    new = _with_text(_df(n=15, n_blocks=2, seed=5))
    with pytest.warns(IgnoredFieldsWarning, match=r"ignoring the input field\(s\) abstract, keywords: the model"):
        with_text = encode_parts(new, voc)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once per field and model
        without = encode_parts(new.drop(columns=["abstract", "keywords"]), voc)
        again = encode_parts(new, voc)
    _arrays_equal(with_text, without)
    _arrays_equal(again, without)
    # a vocabulary that saw abstracts uses them: the topic vectors differ
    voc2 = Vocabulary.fit(_with_text(train))
    assert not np.array_equal(encode_parts(new, voc2).arrays["topic"],
                              encode_parts(new.drop(columns=["abstract", "keywords"]), voc2).arrays["topic"])


def test_model_trained_without_abstracts_gives_identical_factors_and_clusters():
    from coref.gibbs import GibbsCoref

    model = PairwiseModel(bias_shift=0.0).fit(_df(n=30, n_blocks=3, seed=6))
    new = _with_text(_df(n=20, n_blocks=2, seed=7))
    stripped = new.copy()
    stripped["abstract"] = pd.array([pd.NA] * len(new), dtype="string")
    stripped["keywords"] = [[] for _ in range(len(new))]
    assert list(model.ignored_fields(new)) == ["abstract", "keywords"]
    assert model.ignored_fields(stripped) == {}
    with pytest.warns(IgnoredFieldsWarning):
        F = model.factor_matrix(model.encode(new[new["block"] == "B0"]))
    np.testing.assert_array_equal(F, model.factor_matrix(model.encode(stripped[stripped["block"] == "B0"])))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IgnoredFieldsWarning)
        a = GibbsCoref(model, sampler="exact", n_sweeps=5, rng=0).fit(new).clusters_
    b = GibbsCoref(model, sampler="exact", n_sweeps=5, rng=0).fit(stripped).clusters_
    pd.testing.assert_series_equal(a, b)
    assert a.nunique() > 1


def test_constant_features_are_folded_exactly():
    rng = np.random.default_rng(0)
    m = 200
    X = rng.normal(size=(m, N_FEATURES))
    k_sc = FEATURE_NAMES.index("same_comp1")
    X[:, k_sc] = rng.integers(0, 2, m)
    k_am = FEATURE_NAMES.index("abstract_missing")
    X[:, k_am] = 1.0                                     # never varied: always missing
    k_int = FEATURE_NAMES.index("abstract_missing*same_comp1")
    X[:, k_int] = X[:, k_am] * X[:, k_sc]                # an exact copy of same_comp1
    k_ac = FEATURE_NAMES.index("abstract_cos")
    X[:, k_ac] = 0.0
    X[:, FEATURE_NAMES.index("abstract_cos*same_comp1")] = 0.0
    model = PairwiseModel()
    model.theta_ = rng.normal(size=N_FEATURES)
    model.intercept_ = -2.0
    f_before = X @ model.theta_ + model.intercept_
    th_sc = model.theta_[k_sc] + model.theta_[k_int]
    model.fold_constant_features(X)
    np.testing.assert_allclose(X @ model.theta_ + model.intercept_, f_before, rtol=1e-12, atol=1e-12)
    assert model.theta_[k_am] == model.theta_[k_int] == model.theta_[k_ac] == 0.0
    assert model.theta_[k_sc] == pytest.approx(th_sc)
    assert not model.feature_varied_[k_am] and not model.feature_varied_[k_ac]
    assert model.feature_varied_[k_sc] and model.feature_varied_[k_int]
    assert int((~model.feature_varied_).sum()) == 3


def test_fitted_model_has_zero_weight_on_features_that_never_varied(tmp_path):
    df = _df(n=30, n_blocks=3, seed=8)
    model = PairwiseModel(bias_shift=0.0).fit(df)
    names = np.array(FEATURE_NAMES)
    fixed = set(names[~model.feature_varied_])
    assert {"abstract_cos", "abstract_missing", "keyword_cos", "keyword_missing"} <= fixed
    # ... except the name-conflict features, which get their prior weight (coref.model.name_priors)
    assert model.prior_weights_ == NAME_CONFLICT_PRIORS and set(NAME_CONFLICT_PRIORS) <= fixed
    prior = np.array([NAME_CONFLICT_PRIORS.get(n, 0.0) for n in FEATURE_NAMES])
    np.testing.assert_array_equal(model.theta_[~model.feature_varied_], prior[~model.feature_varied_])
    # the copies of same_comp1 made by a constant factor carry no weight either
    for k in ("abstract_missing*same_comp1", "keyword_missing*same_comp1"):
        assert model.theta_[FEATURE_NAMES.index(k)] == 0.0
    path = save_model(model, tmp_path / "m")
    loaded, _ = load_model(path)
    np.testing.assert_array_equal(loaded.feature_varied_, model.feature_varied_)
    assert loaded.vocabulary_.fields == model.vocabulary_.fields
    assert loaded.prior_weights_ == model.prior_weights_ and loaded.name_priors
    # an older model without the records loads and uses every field
    doc = json.loads((path / "model.json").read_text())
    del doc["feature_varied"], doc["vocabulary"]["input_fields"], doc["prior_weights"]

    def write(d):
        (path / "model.json").write_text(json.dumps(d))
        man = json.loads((path / "manifest.json").read_text())
        man["files"]["model.json"] = hashlib.sha256((path / "model.json").read_bytes()).hexdigest()
        (path / "manifest.json").write_text(json.dumps(man))

    write(doc)
    old, _ = load_model(path)
    assert old.feature_varied_ is None and old.vocabulary_.fields is None
    assert old.ignored_fields(_with_text(df)) == {}
    write({**doc, "feature_varied": [True] * (N_FEATURES - 1)})
    with pytest.raises(ModelFormatError, match="'feature_varied' must be a list of"):
        load_model(path)
    varied = [True] * N_FEATURES
    varied[int(np.flatnonzero(model.theta_ != 0)[0])] = False
    write({**doc, "feature_varied": varied})
    with pytest.raises(ModelFormatError, match="theta must be 0 for every feature that did not vary"):
        load_model(path)
