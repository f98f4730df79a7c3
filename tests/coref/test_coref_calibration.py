"""Calibration of coreference confidences: scores, maps fitted on training folds only,
maps saved with the model, Rao-Blackwellised Gibbs marginals (issue 13, items 4-5)."""
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from coref.calibration import CalibrationMap, ConfidenceCalibration, fit_calibration
from coref.confidence import (assignment_confidence, brier_score, confidence_figures, ece_score,
                              fit_confidence_calibration, gibbs_marginals, map_clusters, mention_correct)
from coref.exceptions import ModelFormatError
from coref.model import PairwiseModel, load_model, save_model
from coref.jobs.folds import assign_folds
from coref.jobs.heldout import heldout_confidence
from tests.coref.test_coref_confidence_api import PEOPLE

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_coref_gibbs import _df  # noqa: E402


# ----------------------------------------------------------------------------- scores

def test_ece_and_brier_hand_computed():
    p = [0.05, 0.15, 0.12, 0.95, 0.85]
    y = [0, 1, 0, 1, 1]
    # bins of width 0.1: {0.05 | y 0}, {0.15, 0.12 | 1, 0}, {0.85 | 1}, {0.95 | 1}
    # ECE = (1 * 0.05 + 2 * |0.135 - 0.5| + 1 * 0.15 + 1 * 0.05) / 5 = 0.98 / 5
    assert ece_score(p, y) == pytest.approx(0.196, abs=1e-12)
    # Brier = (0.05^2 + 0.85^2 + 0.12^2 + 0.05^2 + 0.15^2) / 5
    assert brier_score(p, y) == pytest.approx(0.7644 / 5, abs=1e-12)
    # p = 1 falls in the last bin; 2 bins: {0.2 | 0, 0.4 | 1} and {1.0 | 1, 0.6 | 0}
    assert ece_score([0.2, 0.4, 1.0, 0.6], [0, 1, 1, 0], n_bins=2) == pytest.approx((2 * 0.2 + 2 * 0.3) / 4)
    assert np.isnan(ece_score([], []))
    with pytest.raises(ValueError, match="equal length"):
        brier_score([0.5], [1, 0])


def test_mention_correct_majority_vote():
    cl = pd.DataFrame({"mention_id": ["a", "b", "c", "d", "e", "f"], "cluster_id": ["1", "1", "1", "2", "2", "3"]})
    gold = pd.Series(["x", "x", "y", "y", "z", pd.NA], index=list("abcdef"))
    ok = mention_correct(cl, gold)
    # cluster 1: x x y -> c wrong; cluster 2: tie y / z -> y (sorts first); f unlabeled, left out
    assert ok.to_dict() == {"a": 1.0, "b": 1.0, "c": 0.0, "d": 1.0, "e": 0.0}


# ----------------------------------------------------------------------------- maps

def test_calibration_map_json_round_trip_and_validation():
    gen = np.random.default_rng(0)
    p = gen.random(500)
    y = (gen.random(500) < p ** 2).astype(float)
    iso = fit_calibration(p, y, method="isotonic")
    again = CalibrationMap.from_json(iso.to_json())
    np.testing.assert_array_equal(again.apply(p), iso.apply(p))
    tmp = fit_calibration(p, y, method="temperature")
    assert CalibrationMap.from_json(tmp.to_json()) == tmp
    bad = iso.to_dict()
    bad["y"] = list(reversed(bad["y"]))
    with pytest.raises(ValueError, match="non-decreasing"):
        CalibrationMap.from_dict(bad)
    with pytest.raises(ValueError, match="temperature"):
        CalibrationMap.from_dict({"method": "temperature", "temperature": -1.0, "x": [], "y": []})
    with pytest.raises(ValueError, match="unknown field"):
        CalibrationMap.from_dict({**tmp.to_dict(), "code": "import os"})
    with pytest.raises(ValueError, match="not valid JSON"):
        CalibrationMap.from_json("{")


def _calibration():
    pair = CalibrationMap("isotonic", 1.0, (0.0, 0.5, 1.0), (0.1, 0.4, 0.9))
    mention = CalibrationMap("temperature", 2.0)
    return ConfidenceCalibration(pair, mention, {"method": "isotonic", "n_pairs": 3})


def _resign(path):
    man = json.loads((path / "manifest.json").read_text())
    for name in man["files"]:
        man["files"][name] = hashlib.sha256((path / name).read_bytes()).hexdigest()
    (path / "manifest.json").write_text(json.dumps(man))


def test_model_saves_and_loads_calibration_and_refuses_tampering(tmp_path):
    df = _df(n=20, n_blocks=2, seed=1)
    m = PairwiseModel(bias_shift=0.0).fit(df)
    save_model(m, tmp_path / "old")
    m_old, _ = load_model(tmp_path / "old")  # a model without the field still loads
    assert m_old.calibration_ is None
    m.calibration_ = _calibration()
    save_model(m, tmp_path / "m")
    m2, _ = load_model(tmp_path / "m")
    assert m2.calibration_ == m.calibration_
    # predict applies it: p_calibrated = map(p)
    one = df[df["block"] == "B0"].drop(columns="gold").reset_index(drop=True)
    cl = pd.DataFrame({"mention_id": one["mention_id"], "block": one["block"],
                       "cluster_id": one["mention_id"].str[-1:]})  # any clustering
    conf, pairs = assignment_confidence(m2, one, cl, n_samples=5, n_burn=2, pair_min_p=0.0)
    # mention map applied to min(p, p_direct), p_direct = mean sigmoid(f) to the cluster's other members
    F = m2.factor_matrix(m2.encode(one.sort_values("mention_id")))
    lab = cl.sort_values("mention_id")["cluster_id"].to_numpy()
    same = (lab[:, None] == lab[None, :]) & ~np.eye(len(lab), dtype=bool)
    direct = np.where(same.any(1), (same / (1 + np.exp(-F))).sum(1) / np.maximum(same.sum(1), 1), 1.0)
    np.testing.assert_allclose(conf["p_direct"], direct, rtol=1e-12)
    np.testing.assert_allclose(conf["p_calibrated"],
                               m.calibration_.mention.apply(np.minimum(conf["p"], direct)))
    np.testing.assert_allclose(pairs["p_direct"], 1 / (1 + np.exp(-F[np.triu_indices(len(lab), 1)])), rtol=1e-12)
    np.testing.assert_allclose(pairs["p_calibrated"],
                               m.calibration_.pair.apply(0.5 * (pairs["p"] + pairs["p_direct"])))
    conf0, _ = assignment_confidence(m2, one, cl, n_samples=5, n_burn=2, calibration=None)
    assert conf0["p_calibrated"].isna().all()
    # tampering without re-signing: checksum refusal
    doc = json.loads((tmp_path / "m" / "model.json").read_text())
    doc["calibration"]["pair"]["y"] = [0.9, 0.4, 0.1]
    (tmp_path / "m" / "model.json").write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError, match="SHA-256"):
        load_model(tmp_path / "m")
    # re-signed but invalid: field validation names the field and the file
    _resign(tmp_path / "m")
    with pytest.raises(ModelFormatError, match=r"model\.json.*calibration'\.pair.*non-decreasing"):
        load_model(tmp_path / "m")
    doc["calibration"]["pair"]["y"] = [0.1, 0.4, 0.9]
    doc["calibration"]["mention"]["method"] = "eval"
    (tmp_path / "m" / "model.json").write_text(json.dumps(doc))
    _resign(tmp_path / "m")
    with pytest.raises(ModelFormatError, match="mention.*'method'"):
        load_model(tmp_path / "m")


# ----------------------------------------------------------------------------- train folds only

def _noisy_mention(rng, b, k):
    """Mention k of block b: its author p, and coauthor, venue and affiliation each of
    another of the three people 35% of the time."""
    p = int(rng.integers(0, 3))
    q = [int(rng.integers(0, 3)) if rng.random() < 0.35 else p for _ in range(3)]
    return dict(mention_id=f"B{b}/{k:02d}", block=f"B{b}", name="Wei Wang",
                coauthors=[PEOPLE[q[0]][0], f"X{rng.integers(0, 6)}"], title=f"topic{q[1]} words paper{k}",
                venue=PEOPLE[q[1]][1], year=int(2000 + rng.integers(0, 5)), affiliation=PEOPLE[q[2]][2],
                gold=f"B{b}/{p}")


def _noisy_df(n_blocks=6, n=14, seed=0):
    """Blocks of one name shared by 3 people whose evidence (coauthor, venue,
    affiliation) is right only some of the time, so the model is uncertain."""
    rng = np.random.default_rng(seed)
    rows = [_noisy_mention(rng, b, k) for b in range(n_blocks) for k in range(n)]
    return pd.DataFrame(rows).astype({"year": "Int64", "gold": "string"})


@pytest.fixture(scope="module")
def synth():
    df = _noisy_df(n_blocks=6, n=10, seed=3)  # blocks <= max_exact: exact marginals, fast
    fold_of, labeled = assign_folds(df, 3)
    models = {}
    for k in range(3):
        train = df[(df["block"].map(fold_of) != k) & df["block"].isin(labeled)]
        models[k] = PairwiseModel(bias_shift=0.0).fit(train.reset_index(drop=True))
    return df, fold_of, labeled, models


def _clusters_from(models, df, fold_of):
    out = []
    for k, m in models.items():
        part = df[df["block"].map(fold_of) == k].reset_index(drop=True)
        cl = map_clusters(m, part, sampler="exact", rng=0)
        out.append(cl.assign(sampler="exact", fold=k))
    return pd.concat(out, ignore_index=True)


def _permute_gold(df, mask, seed):
    out = df.copy()
    g = out.loc[mask, "gold"].to_numpy(dtype=object)
    out.loc[mask, "gold"] = np.random.default_rng(seed).permutation(g)
    return out


def test_map_fitted_on_training_folds_only(synth):
    df, fold_of, labeled, models = synth
    clusters = _clusters_from(models, df, fold_of)
    kw = dict(sampler="exact", calibration="isotonic", seed=0)
    base = heldout_confidence(df, fold_of, labeled, models, clusters, **kw)
    in0 = (df["block"].map(fold_of) == 0).to_numpy()
    assert df.loc[in0, "gold"].nunique() > 3
    perm = heldout_confidence(_permute_gold(df, in0, 1), fold_of, labeled, models, clusters, **kw)
    f0 = [r for r in base["folds"] if r["fold"] == 0][0]
    g0 = [r for r in perm["folds"] if r["fold"] == 0][0]
    # fold 0's map saw none of fold 0's labels: identical map, identical calibrated outputs;
    # only its held-out scores move
    assert f0["calibration_sha256"] == g0["calibration_sha256"]
    assert f0["brier"] != g0["brier"]
    # the check can fail: the same permutation moves the maps of the folds that train on fold 0
    for k in (1, 2):
        a = [r for r in base["folds"] if r["fold"] == k][0]
        b = [r for r in perm["folds"] if r["fold"] == k][0]
        assert a["calibration_sha256"] != b["calibration_sha256"]
    pooled = base["pooled"]
    for key in ("ece", "ece_calibrated", "ece_sigmoid_f", "brier", "brier_calibrated", "brier_sigmoid_f"):
        assert 0.0 <= pooled[key] <= 1.0
    assert set(pooled["reliability"]) == {"raw", "calibrated", "sigmoid_f"}
    assert sum(pooled["reliability"]["raw"]["n"]) == pooled["n_pairs"]


def test_heldout_map_is_fitted_on_the_other_folds_heldout_scores(synth):
    """Fold k's map: the other folds' held-out scores, each from its own fold model (cross-fitting)."""
    from coref.confidence import calibration_from_scores

    df, fold_of, labeled, models = synth
    clusters = _clusters_from(models, df, fold_of)
    out = heldout_confidence(df, fold_of, labeled, models, clusters, sampler="exact", calibration="isotonic", seed=0)
    gold = df.set_index(df["mention_id"].astype(str))["gold"]
    scored = {}
    for k, m in models.items():
        part = df[df["block"].map(fold_of) == k].reset_index(drop=True)
        cl = clusters[clusters["fold"] == k][["mention_id", "block", "cluster_id"]].astype(
            {"mention_id": str, "cluster_id": str})
        conf, pairs = assignment_confidence(m, part.drop(columns="gold"), cl, calibration=None, pair_min_p=0.0,
                                            pair_factors=True, rng=0, keep_features=True)
        scored[k] = (conf, pairs, cl)
    for k in models:
        others = [scored[j] for j in models if j != k]
        cal = calibration_from_scores(*(pd.concat([o[i] for o in others], ignore_index=True) for i in range(3)),
                                      gold, method="isotonic")
        row = [r for r in out["folds"] if r["fold"] == k][0]
        assert row["calibration_info"]["folds"] == [j for j in sorted(models) if j != k]
        # the same maps (the stored info adds where they came from)
        assert hashlib.sha256(json.dumps({**cal.to_dict(), "info": row["calibration_info"]},
                                         sort_keys=True).encode()).hexdigest() == row["calibration_sha256"]


def test_cross_fitted_calibration_scores_each_group_with_a_model_that_never_saw_it(synth):
    from sklearn.model_selection import GroupKFold

    from coref.confidence import calibration_from_scores

    df, _, _, models = synth
    seen = []

    def refit(train):
        seen.append(sorted(train["block"].unique()))
        return PairwiseModel(bias_shift=0.0).fit(train)

    cal = fit_confidence_calibration(models[0], df, folds=3, refit=refit, subsample_sizes=())
    assert "cross-fitted" in cal.info["source"] and cal.info["n_subsampled_blocks"] == 0
    groups = [sorted(df["block"].iloc[te].unique())
              for _, te in GroupKFold(n_splits=3).split(np.zeros(len(df)), groups=df["block"].astype(str))]
    blocks = sorted(df["block"].unique())
    assert seen == [sorted(set(blocks) - set(g)) for g in groups]       # each fit leaves its group out
    # the same maps from the scores computed by hand, group by group
    parts = []
    for g in groups:
        m = PairwiseModel(bias_shift=0.0).fit(df[~df["block"].isin(g)].reset_index(drop=True))
        part = df[df["block"].isin(g)].reset_index(drop=True)
        cl = map_clusters(m, part, sampler="exact", rng=0)[["mention_id", "block", "cluster_id"]]
        conf, pairs = assignment_confidence(m, part.drop(columns="gold"), cl, calibration=None, pair_min_p=0.0,
                                            rng=0, keep_features=True)
        parts.append((conf, pairs, cl))
    ref = calibration_from_scores(*(pd.concat([p[i] for p in parts], ignore_index=True) for i in range(3)),
                                  df.set_index("mention_id")["gold"], method="isotonic")
    assert cal.to_dict()["pair"] == ref.to_dict()["pair"] and cal.to_dict()["mention"] == ref.to_dict()["mention"]
    assert cal.mention_model is not None and cal.to_dict()["mention_model"] == ref.to_dict()["mention_model"]
    from coref.confidence import STRUCTURE_FEATURES

    assert cal.to_dict()["version"] == 3 and set(STRUCTURE_FEATURES) <= set(cal.mention_model.features)
    # the default adds random sub-blocks of each held-out group, scored by the same fold model
    seen.clear()
    aug = fit_confidence_calibration(models[0], df, folds=3, refit=refit)
    assert aug.info["n_subsampled_blocks"] > 0 and aug.info["n_mentions"] > cal.info["n_mentions"]
    assert seen == [sorted(set(blocks) - set(g)) for g in groups]
    # in-sample scores give other maps: the check above can fail
    ins = fit_confidence_calibration(models[0], df)
    assert ins.info["source"] == "training mentions clustered and scored by the model"
    assert ins.to_dict()["pair"] != cal.to_dict()["pair"]


@pytest.mark.parametrize("kw, match", [({"folds": 1}, "folds must be 0 .* or an integer >= 2"),
                                       ({"folds": 2}, "cross-fitting .* needs refit"),
                                       ({"folds": 7, "refit": lambda d: None}, "needs at least 7 blocks")])
def test_cross_fitting_errors(synth, kw, match):
    df, _, _, models = synth
    with pytest.raises(ValueError, match=match):
        fit_confidence_calibration(models[0], df, **kw)


def test_confidence_figures_against_direct_computation(synth):
    df, fold_of, labeled, models = synth
    part = df[df["block"].map(fold_of) == 1].reset_index(drop=True)
    cal = fit_confidence_calibration(models[0], df[df["block"].map(fold_of) == 0].reset_index(drop=True))
    cl = map_clusters(models[1], part, sampler="exact", rng=0)
    conf, pairs = assignment_confidence(models[1], part.drop(columns="gold"), cl, calibration=cal, pair_min_p=0.0,
                                        pair_factors=True)
    gold = part.set_index("mention_id")["gold"]
    fig = confidence_figures(conf, pairs, gold, cl, threshold=0.9)
    y = (gold.loc[pairs["mention_a"]].to_numpy() == gold.loc[pairs["mention_b"]].to_numpy()).astype(float)
    assert fig["n_pairs"] == len(pairs)
    assert fig["brier"] == pytest.approx(np.mean((pairs["p"] - y) ** 2))
    assert fig["brier_calibrated"] == pytest.approx(np.mean((pairs["p_calibrated"] - y) ** 2))
    assert fig["brier_sigmoid_f"] == pytest.approx(np.mean((1 / (1 + np.exp(-pairs["f"])) - y) ** 2))
    ok = mention_correct(cl, gold)
    hi = conf.set_index("mention_id")["p"].reindex(ok.index) >= 0.9
    assert fig["coverage"] == pytest.approx(hi.mean())
    assert fig["correct"] == pytest.approx(ok[hi].mean())


# ----------------------------------------------------------------------------- RB marginals

def _partitions(n):
    def rec(i, labels, k):
        if i == n:
            yield list(labels)
            return
        for c in range(k + 1):
            labels.append(c)
            yield from rec(i + 1, labels, max(k, c + 1))
            labels.pop()
    yield from rec(0, [], 0)


def _exact(F, T=1.0):
    n = F.shape[0]
    iu = np.triu_indices(n, 1)
    P = np.zeros((n, n))
    alone = np.zeros(n)
    Z = 0.0
    for lab in _partitions(n):
        lab = np.asarray(lab)
        same = lab[:, None] == lab[None, :]
        w = np.exp(F[iu][same[iu]].sum() / T)
        Z += w
        P += w * same
        alone += w * (np.bincount(lab)[lab] == 1)
    return P / Z, alone / Z


@pytest.mark.parametrize("T", [1.0, 2.0])
def test_gibbs_marginals_match_enumeration(T):
    """RB estimates against the exact marginals of a 6-mention block (203 partitions).

    Each estimate is a mean of conditional probabilities over 4000 correlated sweeps;
    its standard error is below 0.5 / sqrt(4000 / 20) = 0.035 even with an
    autocorrelation time of 20 sweeps, so 0.05 is well beyond 1 SE of this chain
    (measured error ~0.01).
    """
    gen = np.random.default_rng(7)
    F = gen.normal(0.0, 1.5, size=(6, 6))
    F = np.triu(F, 1) + np.triu(F, 1).T
    P_ex, alone_ex = _exact(F, T)
    P, alone = gibbs_marginals(F, np.zeros(6, int), n_samples=4000, n_burn=50, rng=np.random.default_rng(1),
                               temperature=T)
    np.testing.assert_allclose(P, P.T)
    assert np.all(np.diag(P) == 1.0)
    np.testing.assert_allclose(P, P_ex, atol=0.05)
    np.testing.assert_allclose(alone, alone_ex, atol=0.05)


def test_gibbs_marginals_rb_beats_indicators_on_variance():
    """Across 40 short chains (10 kept sweeps), the RB estimate of a pair probability is
    unbiased (within 4 SE) and varies less than half as much as an average of 10
    INDEPENDENT 0/1 indicators would (sd sqrt(p (1 - p) / 10)); the indicator average
    of a correlated chain varies even more."""
    gen = np.random.default_rng(3)
    F = gen.normal(0.0, 1.0, size=(5, 5))
    F = np.triu(F, 1) + np.triu(F, 1).T
    P_ex, _ = _exact(F)
    rb = [gibbs_marginals(F, np.arange(5), n_samples=10, n_burn=5, rng=np.random.default_rng(s))[0][0, 1]
          for s in range(40)]
    assert np.mean(rb) == pytest.approx(P_ex[0, 1], abs=4 * np.std(rb) / np.sqrt(40) + 1e-3)
    assert np.std(rb) < 0.5 * np.sqrt(P_ex[0, 1] * (1 - P_ex[0, 1]) / 10)


def test_gibbs_marginals_bad_input():
    with pytest.raises(ValueError, match="square"):
        gibbs_marginals(np.zeros((2, 3)), [0, 0], n_samples=1, n_burn=0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="one entry per row"):
        gibbs_marginals(np.zeros((3, 3)), [0, 0], n_samples=1, n_burn=0, rng=np.random.default_rng(0))


def test_coref_fit_saves_calibration_and_none_skips_it(tmp_path):
    from coref.jobs.fit import fit

    df = _noisy_df(n_blocks=4, n=10, seed=8)
    from coref.confidence.fit import DEFAULT_SUBSAMPLE_SIZES

    r = fit(df, model=tmp_path / "m", calibration="isotonic")
    # every block of 10 mentions, plus one random sub-block of each size below 10 (cross-fitted scores)
    sub = [s for s in DEFAULT_SUBSAMPLE_SIZES if s < 10]
    assert r["calibration"]["method"] == "isotonic" and r["calibration"]["n_mentions"] == 4 * (10 + sum(sub))
    n_pairs = 4 * (45 + sum(s * (s - 1) // 2 for s in sub))
    assert r["calibration"]["n_pairs"] == n_pairs
    m, _ = load_model(tmp_path / "m")
    assert m.calibration_.pair.method == "isotonic" and m.calibration_.info["n_pairs"] == n_pairs
    assert m.calibration_.mention_model is not None
    r = fit(df, model=tmp_path / "n", calibration="none")
    assert r["calibration"] is None and load_model(tmp_path / "n")[0].calibration_ is None
    assert "calibration" not in json.loads((tmp_path / "n" / "model.json").read_text())
    with pytest.raises(ValueError, match="calibration parameter"):
        fit(df, model=tmp_path / "o", calibration="platt")


def test_coref_fit_cross_fits_the_calibration_scores(tmp_path):
    """Default: 5 groups capped at the blocks (4 here); 0: the final model's in-sample scores."""
    from coref.jobs.fit import fit

    df = _noisy_df(n_blocks=4, n=10, seed=8)
    cross = fit(df, model=tmp_path / "c")["calibration"]
    assert cross["source"].startswith("training mentions, cross-fitted: each of 4 block groups")
    ins = fit(df, model=tmp_path / "i", calibration_folds=0)["calibration"]
    assert ins["source"] == "training mentions clustered and scored by the model"
    mc, mi = load_model(tmp_path / "c")[0], load_model(tmp_path / "i")[0]
    np.testing.assert_array_equal(mc.theta_, mi.theta_)                 # the same model, other maps
    assert mc.calibration_.to_dict()["pair"] != mi.calibration_.to_dict()["pair"]
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match="calibration_folds must be an integer >= 0"):
            fit(df, model=tmp_path / "b", calibration_folds=bad)


def test_confidence_report_orders_review_queue_by_calibrated_p(tmp_path):
    from coref.confidence import write_confidence_report

    conf = pd.DataFrame({"mention_id": ["a", "b", "c"], "cluster_id": ["1", "1", "2"], "p": [0.2, 0.9, 0.5],
                         "p_lower": [np.nan] * 3, "p_upper": [np.nan] * 3, "method": ["gibbs"] * 3,
                         "n_submodel": [0] * 3, "p_direct": [0.9, 0.1, 1.0], "p_calibrated": [0.3, 0.05, 0.6]})
    pairs = pd.DataFrame({"block": ["B"] * 3, "mention_a": ["a", "a", "b"], "mention_b": ["b", "c", "c"],
                          "p": [0.4, 0.1, 0.2], "p_direct": [0.5, 0.2, 0.1], "p_calibrated": [0.4, 0.1, 0.2]})
    md = write_confidence_report(tmp_path, conf, pairs, n_review=3)
    queue = [ln for ln in md.splitlines() if ln.startswith("| ") and ln.split(" | ")[0][2:] in "abc"]
    assert [ln.split(" | ")[0][2:] for ln in queue] == ["b", "a", "c"]
    assert queue[0].startswith("| b | 1 | 0.050 | 0.900 |")
    assert "| 0.95 | 0 | 0.000 | 0 | 0.000 |" in md and "| 0.5 | 2 | 0.667 | 1 | 0.333 |" in md


def test_calibration_leaves_out_blocks_too_large_to_score(synth):
    from coref.confidence import calibration_from_scores

    df, _, _, models = synth
    m = models[0]
    cl = map_clusters(m, df, sampler="exact", rng=0)[["mention_id", "block", "cluster_id"]]
    big = df["block"] == df["block"].iloc[0]
    kw = dict(calibration=None, pair_min_p=0.0, rng=0, keep_features=True)
    conf, pairs = assignment_confidence(m, df[~big].drop(columns="gold"), cl[~cl["block"].isin(df.loc[big, "block"])],
                                        **kw)
    none, no_pairs = assignment_confidence(m, df[big].drop(columns="gold"), cl[cl["block"].isin(df.loc[big, "block"])],
                                           max_block=1, **kw)
    assert (none["method"] == "none").all() and len(no_pairs) == 0
    gold = df.set_index("mention_id")["gold"]
    ref = calibration_from_scores(conf, pairs, cl, gold, method="isotonic")
    got = calibration_from_scores(pd.concat([conf, none], ignore_index=True), pairs, cl, gold, method="isotonic")
    assert got.to_dict() == ref.to_dict()
    assert ref.info["n_mentions"] == int((~big).sum())
