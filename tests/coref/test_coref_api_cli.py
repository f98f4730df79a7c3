"""One face: the Python API accepts what the command line accepts, and the jobs return results."""
import subprocess
import sys

import pandas as pd
import pytest

import coref
from coref.blocking import name_key
from coref.cli import main
from coref.estimator import AuthorCoref
from coref.io import write_mentions
from coref.jobs.fit import FitResult
from coref.jobs.predict import predict
from coref.jobs.result import ClusteringResult


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    from tests.conftest import make_mentions

    est = AuthorCoref(rng=0).fit(make_mentions(n_blocks=4, per=10, n_authors=2, seed=3))
    path = tmp_path_factory.mktemp("m") / "model"
    est.save(path)
    return est, path


def test_every_public_name_of_coref_resolves():
    for name in coref.__all__:
        assert getattr(coref, name) is not None, name
    assert {"io", "datasets", "jobs"} <= set(dir(coref))


def test_coref_io_works_right_after_import_coref(tmp_path):
    code = "import coref; print(coref.io.MENTION_COLUMNS[0], coref.datasets.DEFAULT_MODEL.name)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path).stdout
    assert out.split() == ["mention_id", "default"]


def test_api_derives_blocks_as_the_command_line_does(fitted, tmp_path):
    """No block column: AuthorCoref.predict / explain / confidence derive the name key, as ``coref predict`` does."""
    from tests.conftest import make_mentions

    est, model_dir = fitted
    df = make_mentions(n_blocks=3, per=8, n_authors=2, seed=5).drop(columns=["block", "gold"])
    api = est.predict(df)
    assert api["block"].tolist() == [name_key(n) for n in df["name"]]
    # the command line on the same mentions as a CSV without a block column
    write_mentions(df.assign(block="", gold=pd.NA), tmp_path / "m.csv")
    assert main(["predict", "--data", str(tmp_path / "m.csv"), "--model", str(model_dir), "--out",
                 str(tmp_path / "o"), "--quiet"]) == 0
    cli = pd.read_csv(tmp_path / "o" / "clusters.csv", dtype=str)
    assert cli["block"].tolist() == api["block"].tolist()
    assert cli["cluster_id"].tolist() == api["cluster_id"].tolist()
    # an empty block is derived too, and the other methods take the same table
    blank = df.assign(block=["", *df["name"].map(name_key)[1:]])
    assert est.predict(blank)["cluster_id"].tolist() == api["cluster_id"].tolist()
    e = est.explain(df, df["mention_id"].iloc[0], df["mention_id"].iloc[1])
    assert e.block == name_key(df["name"].iloc[0])
    conf, _ = est.confidence(df, api)
    assert sorted(conf["mention_id"]) == sorted(df["mention_id"])
    # the same error as the command line without names
    with pytest.raises(ValueError, match="name"):
        est.predict(df.drop(columns="name"))


def test_jobs_return_frozen_results(fitted, tmp_path):
    from dataclasses import FrozenInstanceError

    from tests.conftest import make_mentions

    _, model_dir = fitted
    r = predict(make_mentions(n_blocks=2, per=6, seed=1), model=model_dir, out=tmp_path / "p", progress=False)
    assert isinstance(r, ClusteringResult) and r.out == (tmp_path / "p").resolve()
    assert r["n_mentions"] == 12 and "n_clusters" in r
    assert r.paths["clusters.csv"].is_file() and r.paths["manifest"].is_file()
    with pytest.raises(FrozenInstanceError):
        r.summary = {}
    from coref.jobs.fit import fit

    f = fit(make_mentions(n_blocks=3, per=6, seed=2), model=tmp_path / "m", calibration="none")
    assert isinstance(f, FitResult) and f["n_blocks"] == f.n_blocks == 3 and f.calibration is None


def test_python_dash_m_coref_routes_like_the_console_script(tmp_path):
    # cwd outside the checkout: `python -m` puts the cwd first on sys.path (an unbuilt checkout would shadow)
    out = subprocess.run([sys.executable, "-m", "coref", "--version"], capture_output=True, text=True, check=True,
                         cwd=tmp_path)
    assert out.stdout.strip() == f"coref (racing-inference) {coref.__version__}"
    helps = subprocess.run([sys.executable, "-m", "coref", "--help"], capture_output=True, text=True, check=True,
                           cwd=tmp_path)
    for name in ("fit", "predict", "add", "explain", "run", "evaluate", "synth"):
        assert name in helps.stdout
