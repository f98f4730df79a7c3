"""Name-conflict priors (coref.model.name_priors): training data blocked by full name never shows two
different first names in a block, so the model cannot learn what such a conflict means; it gets a prior
weight instead of 0, a learned weight wins where the data vary, and the model file checks both."""
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from coref.exceptions import ModelFormatError
from coref.factors.names import FEATURE_NAMES, N_FEATURES
from coref.model import PairwiseModel, load_model, save_model
from coref.model.name_priors import NAME_CONFLICT_PRIORS, apply_name_priors, check_prior_weights

sys.path.insert(0, str(Path(__file__).parent))
from test_coref_gibbs import _df  # noqa: E402

K_FIRST = FEATURE_NAMES.index("name_first_conflict")
K_MID = FEATURE_NAMES.index("name_middle_conflict")


def test_apply_name_priors_sets_only_features_that_did_not_vary():
    theta = np.arange(N_FEATURES, dtype=float)
    varied = np.ones(N_FEATURES, bool)
    varied[K_FIRST] = False                               # the first-name conflict never varied
    out, applied = apply_name_priors(theta, varied)
    assert applied == {"name_first_conflict": NAME_CONFLICT_PRIORS["name_first_conflict"]}
    expect = theta.copy()
    expect[K_FIRST] = NAME_CONFLICT_PRIORS["name_first_conflict"]
    np.testing.assert_array_equal(out, expect)            # the middle-initial weight stays learned
    np.testing.assert_array_equal(theta, np.arange(N_FEATURES))   # a copy


def test_check_prior_weights_error_paths():
    varied = np.ones(N_FEATURES, bool)
    varied[[K_FIRST, K_MID]] = False
    theta = np.zeros(N_FEATURES)
    theta[K_FIRST] = -8.0

    def err(msg):
        return ValueError(msg)

    check_prior_weights({"name_first_conflict": -8.0}, theta, varied, err)
    with pytest.raises(ValueError, match="not a name-conflict feature"):
        check_prior_weights({"title_cos": -1.0}, theta, varied, err)
    with pytest.raises(ValueError, match="finite number <= 0"):
        check_prior_weights({"name_first_conflict": 2.0}, theta, varied, err)
    with pytest.raises(ValueError, match="theta must be 0 .* except the name-conflict prior"):
        check_prior_weights({}, theta, varied, err)                       # -8 without a record
    with pytest.raises(ValueError, match="which varied in training"):
        check_prior_weights({"name_first_conflict": -8.0}, theta, np.ones(N_FEATURES, bool), err)
    with pytest.raises(ValueError, match="must be an object"):
        check_prior_weights([("name_first_conflict", -8.0)], theta, varied, err)


def _first_initial_block(seed=0, n=8):
    """One "j lee" block of two authors whose papers look alike (one topic, one venue, no shared
    coauthor): Jing Lee and John Lee; their full first names are what tells them apart."""
    rng = np.random.default_rng(seed)
    rows = []
    for a, first in enumerate(("Jing", "John")):
        for i in range(n):
            rows.append(dict(mention_id=f"{first}{i}", block="j lee", name=f"{first} Lee",
                             coauthors=[f"Co {rng.integers(0, 10**6)}"],
                             title=f"graph mining w{rng.integers(0, 10**6)}", venue="KDD", year=2005 + i % 4,
                             affiliation="", gold=f"j lee/{a}"))
    return pd.DataFrame(rows)


def test_fit_gives_the_prior_to_conflict_features_the_training_never_varied():
    train = _df(n=30, n_blocks=4, seed=8)                  # one full name per block: no conflicts
    for priors in (True, False):
        model = PairwiseModel(bias_shift=0.0, name_priors=priors).fit(train)
        assert not model.feature_varied_[K_FIRST] and not model.feature_varied_[K_MID]
        assert model.theta_[K_FIRST] == (NAME_CONFLICT_PRIORS["name_first_conflict"] if priors else 0.0)
        assert model.theta_[K_MID] == (NAME_CONFLICT_PRIORS["name_middle_conflict"] if priors else 0.0)
        assert model.prior_weights_ == (NAME_CONFLICT_PRIORS if priors else {})


def test_conflicting_first_names_keep_two_authors_apart_only_with_the_prior():
    """The shipped model (trained on full-name blocks: the conflict features never varied) on a
    first-initial block of two look-alike authors, with and without the prior weight."""
    import copy

    from coref.gibbs import GibbsCoref
    from coref.inputs import resolve_model

    shipped = resolve_model(None)[0]
    blk = _first_initial_block()
    g = blk["gold"].to_numpy(dtype=object)
    cross = g[:, None] != g[None, :]
    same = ~cross & ~np.eye(len(g), dtype=bool)
    for prior, n_clusters in ((NAME_CONFLICT_PRIORS["name_first_conflict"], 2), (0.0, 1)):
        model = copy.deepcopy(shipped)
        theta = model.theta_.copy()
        theta[K_FIRST] = prior
        model.theta_ = theta
        F = model.factor_matrix(model.encode(blk.drop(columns=["gold"])))
        if prior:
            assert F[same].min() > F[cross].max()          # the prior is what separates them
        g_run = GibbsCoref(model, sampler="exact", n_sweeps=20, rng=0).fit(blk.drop(columns=["gold"]))
        labels = np.asarray(g_run.labels_)
        assert len(set(labels.tolist())) == n_clusters
        assert all(len(set(labels[g == a].tolist())) == 1 for a in set(g))   # never splits an author


def test_a_learned_conflict_weight_is_kept():
    train = _df(n=30, n_blocks=4, seed=8)
    extra = _first_initial_block(seed=1)                   # labeled conflicts: the feature varies
    model = PairwiseModel(bias_shift=0.0).fit(pd.concat([train, extra], ignore_index=True))
    assert model.feature_varied_[K_FIRST] and "name_first_conflict" not in model.prior_weights_
    assert model.theta_[K_FIRST] != NAME_CONFLICT_PRIORS["name_first_conflict"]


def test_model_file_records_and_checks_the_prior_weights(tmp_path):
    model = PairwiseModel(bias_shift=0.0).fit(_df(n=30, n_blocks=3, seed=8))
    path = save_model(model, tmp_path / "m")
    doc = json.loads((path / "model.json").read_text())
    assert doc["prior_weights"] == NAME_CONFLICT_PRIORS and doc["params"]["name_priors"] is True
    loaded, _ = load_model(path)
    np.testing.assert_array_equal(loaded.theta_, model.theta_)

    def write(d):
        (path / "model.json").write_text(json.dumps(d))
        man = json.loads((path / "manifest.json").read_text())
        man["files"]["model.json"] = hashlib.sha256((path / "model.json").read_bytes()).hexdigest()
        (path / "manifest.json").write_text(json.dumps(man))

    write({**doc, "prior_weights": {}})                    # theta says -8, the record says nothing
    with pytest.raises(ModelFormatError, match="model.json.*theta must be 0 for every feature"):
        load_model(path)
    write({**doc, "params": {**doc["params"], "name_priors": False}})
    with pytest.raises(ModelFormatError, match="'prior_weights' is set but params.name_priors is false"):
        load_model(path)
    write({**doc, "params": {**doc["params"], "name_priors": "yes"}})
    with pytest.raises(ModelFormatError, match="name_priors must be true or false"):
        load_model(path)
