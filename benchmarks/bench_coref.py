"""Author coreference on the shipped AMiner data (7,026 mentions, 108 blocks), shipped model.

Groups:

* ``coref predict``: the whole ``AuthorCoref.predict`` (encoding + Gibbs) with the racing,
  exact and auto samplers; ``extra_info`` holds B3 F1 against the gold labels and the
  pairwise factors evaluated. The time ratio exact / racing is the speed-up of racing. The
  shipped model was trained on these very mentions, so this B3 F1 is in-sample: a check that
  the samplers agree, not an accuracy figure (held-out accuracy: ``coref run``).
* ``coref add``: adding 20% of the mentions (``crc32(mention_id) % 5 == 0``) to a clustering
  of the other 80%, against predicting all of them at once.
* ``coref fit``: training the pairwise model and its calibration maps.
"""
import zlib

import pytest

import coref

ROUNDS = 3


@pytest.fixture(scope="module")
def mentions():
    return coref.datasets.load_aminer()


@pytest.fixture(scope="module")
def model_dir():
    return coref.datasets.default_model_path()


def _b3_f1(clusters, mentions):
    return float(coref.b3(clusters.set_index("mention_id")["cluster_id"], mentions.set_index("mention_id")["gold"]).f1)


@pytest.mark.parametrize("sampler", ["racing", "exact", "auto"])
def test_predict(benchmark, mentions, model_dir, sampler):
    est = coref.AuthorCoref.load(model_dir).set_params(sampler=sampler)
    unlabeled = mentions.drop(columns="gold")
    benchmark.group = "coref predict, shipped data"
    clusters = benchmark.pedantic(est.predict, args=(unlabeled,), rounds=ROUNDS, iterations=1)
    benchmark.extra_info["b3_f1"] = _b3_f1(clusters, mentions)
    benchmark.extra_info["n_factor_evals"] = int(est.n_factor_evals_)
    assert len(clusters) == len(mentions)


@pytest.fixture(scope="module")
def split(mentions):
    new = mentions["mention_id"].map(lambda m: zlib.crc32(m.encode()) % 5 == 0).to_numpy()
    return mentions[~new].reset_index(drop=True), mentions[new].reset_index(drop=True)


def test_predict_all(benchmark, mentions, model_dir):
    est = coref.AuthorCoref.load(model_dir)
    benchmark.group = "coref add 20% vs predict all"
    clusters = benchmark.pedantic(est.predict, args=(mentions,), rounds=ROUNDS, iterations=1)
    benchmark.extra_info["b3_f1"] = _b3_f1(clusters, mentions)


def test_add(benchmark, mentions, model_dir, split):
    old, new = split
    est = coref.AuthorCoref.load(model_dir)
    before = est.predict(old)
    benchmark.group = "coref add 20% vs predict all"
    clusters = benchmark.pedantic(est.add, args=(before, new), kwargs={"mentions": old}, rounds=ROUNDS, iterations=1)
    kept = clusters.set_index("mention_id").loc[before["mention_id"], "cluster_id"].to_numpy()
    benchmark.extra_info["b3_f1"] = _b3_f1(clusters, mentions)
    benchmark.extra_info["existing_ids_changed"] = int((kept != before["cluster_id"].to_numpy()).sum())
    assert benchmark.extra_info["existing_ids_changed"] == 0


def test_fit(benchmark, mentions):
    benchmark.group = "coref fit, shipped data"
    est = benchmark.pedantic(coref.AuthorCoref(rng=0).fit, args=(mentions,), rounds=1, iterations=1)
    assert est.model_ is not None
