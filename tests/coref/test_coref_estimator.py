"""AuthorCoref: the scikit-learn style front door (clone, params, fit / predict / add, save / load)."""
import json

import numpy as np
import pandas as pd
import pytest
import sklearn.base
from sklearn.exceptions import NotFittedError

import coref
from coref.estimator import AuthorCoref
from coref.exceptions import ModelFormatError


@pytest.fixture(scope="module")
def train(mentions_factory):
    return mentions_factory(n_blocks=6, per=12, n_authors=3, seed=11)


@pytest.fixture(scope="module")
def test_df(mentions_factory):
    return mentions_factory(n_blocks=3, per=12, n_authors=3, seed=12)


@pytest.fixture(scope="module")
def fitted(train):
    return AuthorCoref(bias_shift=0.0, n_sweeps=8, rng=3).fit(train)


def test_is_exported_first_and_clone_works():
    assert "AuthorCoref" in coref.__all__ and coref.AuthorCoref is AuthorCoref
    est = AuthorCoref(delta=0.1, rng=5, n_sweeps=7)
    c = sklearn.base.clone(est)
    assert c.get_params() == est.get_params() and c is not est
    c.set_params(delta=0.2, sampler="exact")
    assert (c.delta, c.sampler, est.delta) == (0.2, "exact", 0.1)
    assert set(est.get_params()) == {"sampler", "delta", "n_sweeps", "C", "bias_shift", "max_pairs_per_block", "rng",
                                     "block_prior", "big_blocks", "calibration", "calibration_folds", "shift_tree"}


def test_fit_by_default_fits_big_block_weights_as_coref_fit_does(fitted):
    """The API's defaults fit what ``coref fit`` does: weights for blocks larger than any labeled one."""
    from coref.model.big_blocks import BIG_BLOCK_MIN_N

    assert AuthorCoref().big_blocks == "synthetic"
    big = fitted.model_.big_
    assert big is not None and big.min_n == BIG_BLOCK_MIN_N and big.source["kind"] == "synthetic"
    assert fitted.model_.is_big_block(BIG_BLOCK_MIN_N) and not fitted.model_.is_big_block(BIG_BLOCK_MIN_N - 1)
    assert not np.array_equal(big.theta, fitted.model_.theta_)


def test_fit_calibrates_the_confidence_as_coref_fit_does(fitted, train, test_df, tmp_path):
    """Default: cross-fitted calibration maps and mention model, the same as ``coref fit``'s; "none": none."""
    from coref.jobs.fit import fit
    from coref.model import load_model

    cal = fitted.model_.calibration_
    assert cal is not None and cal.mention_model is not None
    assert cal.info["source"].startswith("training mentions, cross-fitted: each of 5 block groups")
    assert set(fitted.fit_times_) == {"fit_s", "shift_tree_s", "calibration_s"} and fitted.fit_times_["calibration_s"] > 0
    fit(train, model=tmp_path / "m", rng=3, bias_shift=0.0, n_sweeps=8)
    saved = load_model(tmp_path / "m")[0]
    assert saved.calibration_.to_dict() == cal.to_dict() and saved.shift_tree_ == fitted.model_.shift_tree_
    conf, _ = fitted.confidence(test_df.drop(columns="gold"), fitted.predict(test_df.drop(columns="gold")))
    assert conf["confidence"].between(0.0, 1.0).all()
    assert not np.allclose(conf["confidence"], conf["p"])        # the calibration is applied, not p
    bare = AuthorCoref(bias_shift=0.0, n_sweeps=8, rng=3, big_blocks=None, calibration="none").fit(train)
    assert bare.model_.calibration_ is None
    np.testing.assert_array_equal(bare.model_.theta_, fitted.model_.theta_)
    for kw, match in (({"calibration": "platt"}, "calibration parameter must be"),
                      ({"calibration_folds": -1}, "calibration_folds must be an integer >= 0"),
                      ({"calibration_folds": 2.5}, "calibration_folds must be an integer >= 0")):
        with pytest.raises(ValueError, match=match):
            AuthorCoref(**kw).fit(train)


def test_fit_predict_roundtrip_dataframe(fitted, test_df):
    from coref.evaluate import b3

    out = fitted.predict(test_df.drop(columns=["gold"]))
    assert list(out.columns) == ["mention_id", "block", "cluster_id"]
    assert out["mention_id"].tolist() == test_df["mention_id"].tolist()
    r = b3(pd.Series(out["cluster_id"].to_numpy(), index=out["mention_id"]),
           pd.Series(test_df["gold"].to_numpy(), index=test_df["mention_id"]))
    assert r.f1 > 0.9 and fitted.n_factor_evals_ > 0
    with_gold = fitted.predict(test_df)
    assert with_gold["gold"].tolist() == test_df["gold"].tolist()
    assert with_gold["cluster_id"].tolist() == out["cluster_id"].tolist()


def test_clone_then_fit_gives_the_same_model(fitted, train, test_df):
    twin = sklearn.base.clone(fitted).fit(train)
    np.testing.assert_array_equal(twin.model_.theta_, fitted.model_.theta_)
    pd.testing.assert_frame_equal(twin.predict(test_df), fitted.predict(test_df))


def test_save_load_predicts_the_same(fitted, test_df, tmp_path):
    fitted.save(tmp_path / "m")
    back = AuthorCoref.load(tmp_path / "m")
    assert back.get_params() == fitted.get_params()
    pd.testing.assert_frame_equal(back.predict(test_df), fitted.predict(test_df))
    # an estimator saved before block priors: no such parameter, a model without one
    import hashlib
    import json

    doc = json.loads((tmp_path / "m" / "model.json").read_text())
    for k in ("block_prior", "block_prior_cap", "block_prior_pairs"):
        doc["params"].pop(k)
    doc["extra"]["params"].pop("block_prior")
    doc.pop("pair_rate")
    (tmp_path / "m" / "model.json").write_text(json.dumps(doc))
    man = json.loads((tmp_path / "m" / "manifest.json").read_text())
    man["files"]["model.json"] = hashlib.sha256((tmp_path / "m" / "model.json").read_bytes()).hexdigest()
    (tmp_path / "m" / "manifest.json").write_text(json.dumps(man))
    old = AuthorCoref.load(tmp_path / "m")
    assert old.block_prior == old.model_.block_prior == "none"
    (tmp_path / "m" / "model.json").write_text("{}")
    with pytest.raises(ModelFormatError, match="model.json: SHA-256 does not match"):
        AuthorCoref.load(tmp_path / "m")


def test_add_runs_the_sweeps_of_coref_add(fitted, test_df, monkeypatch):
    import coref.estimator as estimator
    from coref.jobs.incremental import ADD_SWEEPS

    seen = []
    real = estimator.add_clusters

    def spy(model, old, clusters, new, settings, **kw):
        seen.append(settings.n_sweeps)
        return real(model, old, clusters, new, settings, **kw)

    monkeypatch.setattr(estimator, "add_clusters", spy)
    old, new = test_df.iloc[:24], test_df.iloc[24:]
    cl = fitted.predict(old)
    fitted.add(cl, new, mentions=old)                                # n_sweeps=8 given: 8
    monkeypatch.setattr(fitted, "n_sweeps", None)                    # default: coref add's
    fitted.add(cl, new, mentions=old)
    assert seen == [8, ADD_SWEEPS] and ADD_SWEEPS == 5


def test_predict_and_add_give_the_clusters_of_coref_predict_and_coref_add(fitted, test_df, tmp_path):
    """Same model, seed and (default) sweeps: the API's clusters are the command line's, add included
    (``AuthorCoref.add`` runs :data:`coref.jobs.incremental.ADD_SWEEPS` sweeps, as ``coref add`` does)."""
    from coref.jobs.add import add
    from coref.jobs.predict import predict

    path = fitted.save(tmp_path / "m")
    est = AuthorCoref.load(path).set_params(n_sweeps=None)
    df = test_df.drop(columns="gold")
    old, new = df.iloc[:24], df.iloc[24:]
    api = est.add(est.predict(old), new, mentions=old)
    predict(old, model=path, out=tmp_path / "p", seed=est.seed_, progress=False)
    add(tmp_path / "p", new, model=path, out=tmp_path / "q", seed=est.seed_, progress=False)
    cli = pd.read_csv(tmp_path / "q" / "clusters.csv", dtype=str)
    assert dict(zip(api["mention_id"], api["cluster_id"])) == dict(zip(cli["mention_id"], cli["cluster_id"]))
    assert est.add_info_["n_old_ids_changed"] == 0
    # the same sweeps: the same factor evaluations
    assert est.n_factor_evals_ == json.loads((tmp_path / "q" / "summary.json").read_text())["n_factor_evals"]


def test_add_keeps_ids(fitted, test_df):
    old, new = test_df.iloc[:24], test_df.iloc[24:]
    cl = fitted.predict(old)
    both = fitted.add(cl, new, mentions=old)
    assert both["cluster_id"].iloc[:24].tolist() == cl["cluster_id"].tolist()
    assert len(both) == len(test_df) and fitted.add_info_["n_old_ids_changed"] == 0
    merged = old.merge(cl[["mention_id", "cluster_id"]], on="mention_id")
    assert fitted.add(merged, new)["cluster_id"].tolist() == both["cluster_id"].tolist()
    with pytest.raises(ValueError, match="needs the old mentions' columns"):
        fitted.add(cl, new)


def test_errors(train):
    with pytest.raises(NotFittedError, match="not fitted yet"):
        AuthorCoref().predict(train)
    with pytest.raises(TypeError, match="must be a pandas DataFrame"):
        AuthorCoref().fit("x")
    with pytest.raises(ValueError, match="delta parameter of coref.AuthorCoref must be in"):
        AuthorCoref(delta=2).fit(train)
    with pytest.raises(ValueError, match="rng parameter of AuthorCoref"):
        AuthorCoref(rng=-1).fit(train)
    with pytest.raises(ValueError, match="needs a 'gold' column"):
        AuthorCoref().fit(train.drop(columns="gold"))


def test_explain_method(fitted, test_df):
    e = fitted.explain(test_df, test_df["mention_id"].iloc[0], test_df["mention_id"].iloc[1])
    assert e.f == pytest.approx(e.by_group["contribution"].sum())
