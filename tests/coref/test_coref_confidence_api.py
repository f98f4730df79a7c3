"""assignment_confidence, calibration scores / maps and the confidence report."""
import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp

from coref.factors import _factors
from coref.confidence import (CONFIDENCE_COLUMNS, PAIR_COLUMNS, CalibrationMap, assignment_confidence,
                              calibration_scores, event_probability, exact_log_z, fit_calibration, subproblem,
                              write_confidence_report)
from coref.factors.names import N_FEATURES
from tests.coref.test_coref_confidence import set_partitions
from tests.coref.test_coref_gibbs import _Model as _GibbsModel


PEOPLE = (("Jiawei Han", "KDD", "UIUC"), ("Philip Yu", "ICDE", "IBM"), ("Ann Lee", "ISMB", "MIT"))


def _mention(rng, b, k):
    """Mention k of block b by one of three people: coauthor, venue (70%), affiliation (50%)."""
    p = int(rng.integers(0, 3))
    co, ve, af = PEOPLE[p]
    return dict(mention_id=f"B{b}/{k:02d}", block=f"B{b}", name="Wei Wang",
                coauthors=[co] + ([f"X{rng.integers(0, 4)}"] if rng.random() < 0.5 else []),
                title=f"topic{p} words paper{k}", venue=ve if rng.random() < 0.7 else "Misc",
                year=int(2000 + rng.integers(0, 5)), affiliation=af if rng.random() < 0.5 else "", gold=f"B{b}/{p}")


def _df(n=12, n_blocks=1, seed=0):
    rng = np.random.default_rng(seed)
    rows = [_mention(rng, b, k) for b in range(n_blocks) for k in range(n)]
    return pd.DataFrame(rows).astype({"year": "Int64", "gold": "string"})


class _Model(_GibbsModel):
    """The fitted-model stand-in of the Gibbs tests (fixed theta), with the factor matrix."""

    def factor_matrix(self, enc):
        out = np.zeros((enc.n, enc.n))
        _factors.factor_matrix(enc, self.theta_, self.bias_, out)
        return out


def _model():
    th = np.zeros(N_FEATURES)
    th[0], th[6], th[8], th[9] = 1.5, 1.0, 0.7, 0.5
    return _Model(th, -1.0)


def _clusters(df, labels):
    return pd.DataFrame({"mention_id": df["mention_id"], "block": df["block"],
                         "cluster_id": [f"{b}/{k}" for b, k in zip(df["block"], labels)]})


def _brute_marginals(F):
    """Exact P(y_i = y_j) and P(i alone) by enumerating the set partitions of a block."""
    n = F.shape[0]
    logw, parts = [], []
    for part in set_partitions(list(range(n))):
        lab = np.empty(n, int)
        for g, members in enumerate(part):
            lab[members] = g
        same = lab[:, None] == lab[None, :]
        logw.append(0.5 * (F * same).sum() - 0.5 * np.trace(F))
        parts.append(lab)
    w = np.exp(np.array(logw) - logsumexp(logw))
    P = np.zeros((n, n))
    alone = np.zeros(n)
    for wk, lab in zip(w, parts):
        P += wk * (lab[:, None] == lab[None, :])
        alone += wk * (np.bincount(lab)[lab] == 1)
    return P, alone


def test_whole_small_block_is_exact():
    df = _df(n=7, seed=1)
    labels = np.array([0, 0, 1, 1, 1, 2, 3])
    conf, pairs = assignment_confidence(_model(), df, _clusters(df, labels), pair_min_p=0.0)
    assert list(conf.columns) == list(CONFIDENCE_COLUMNS)
    assert list(pairs.columns) == list(PAIR_COLUMNS)
    assert (conf["method"] == "exact").all() and (conf["n_submodel"] == 7).all()
    m = _model()
    P, alone = _brute_marginals(m.factor_matrix(m.encode(df)))
    expect = [P[0, 1], P[1, 0], (P[2, 3] + P[2, 4]) / 2, (P[3, 2] + P[3, 4]) / 2, (P[4, 2] + P[4, 3]) / 2,
              alone[5], alone[6]]
    np.testing.assert_allclose(conf["p"], expect, atol=1e-10)
    np.testing.assert_array_equal(conf["p"], conf["p_lower"])
    assert len(pairs) == 21
    row = pairs[(pairs["mention_a"] == "B0/02") & (pairs["mention_b"] == "B0/05")]
    assert abs(float(row["p"].iloc[0]) - P[2, 5]) < 1e-10


def test_sampled_marginals_match_exact():
    """Gibbs at temperature 1 (2000 sweeps) against the exact marginals of a 9-mention block.

    Sweeps are correlated; with an effective sample size of a few hundred the standard
    error of a probability is <= 0.5 / sqrt(200) = 0.035, so 0.1 is about 3 SE.
    """
    df = _df(n=9, seed=4)
    labels = np.zeros(9, int)
    exact, _ = assignment_confidence(_model(), df, _clusters(df, labels))
    samp, _ = assignment_confidence(_model(), df, _clusters(df, labels), max_exact=5, n_samples=2000,
                                    n_burn=50, review_threshold=1e-9, rng=3)
    assert (samp["method"] == "gibbs").all() and samp["p_lower"].isna().all()
    np.testing.assert_allclose(samp["p"], exact["p"], atol=0.1)


def test_conditional_submodel_rows_and_max_submodel_cut():
    df = _df(n=14, seed=2)
    labels = np.array([0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 3, 4, 5])
    conf, _ = assignment_confidence(_model(), df, _clusters(df, labels), max_exact=4, max_submodel=6,
                                    n_samples=40, n_burn=10, review_threshold=1.0, time_limit=0.3, rng=0,
                                    delta=1e-3)
    sub_rows = conf[conf["method"] != "gibbs"]
    # more than 6 mentions are below the threshold 1.0: the sub-model is cut to 6, DIS
    assert len(sub_rows) == 6 and (sub_rows["method"] == "dis").all() and (sub_rows["n_submodel"] == 6).all()
    assert ((sub_rows["p_lower"] <= sub_rows["p"]) & (sub_rows["p"] <= sub_rows["p_upper"])).all()
    # the same sub-model summed exactly lies inside each interval (each row fails with
    # probability <= 2 delta = 2e-3, whatever the machine load does to the wall-clock budget)
    m = _model()
    F = m.factor_matrix(m.encode(df))
    rows = np.flatnonzero(conf["method"].to_numpy() != "gibbs")
    sub = subproblem(F, rows, labels)
    lz = exact_log_z(sub)
    for i in rows:
        mates = np.flatnonzero((labels == labels[i]) & (np.arange(14) != i))
        terms = []
        for j in mates:
            con = ("same", int(i), int(j)) if j in rows else ("cluster", int(i), int(labels[i]))
            terms.append(event_probability(sub, con, method="exact", log_Z=(lz, lz, lz)).p)
        p_exact = np.mean(terms) if len(terms) else event_probability(sub, ("alone", int(i)), method="exact").p
        r = conf.iloc[i]
        assert r["p_lower"] - 1e-9 <= p_exact <= r["p_upper"] + 1e-9


def test_edge_cases_empty_single_and_missing():
    m = _model()
    empty = _df(n=3).iloc[:0]
    conf, pairs = assignment_confidence(m, empty, _clusters(empty, []))
    assert conf.empty and pairs.empty and list(conf.columns) == list(CONFIDENCE_COLUMNS)
    one = _df(n=1)
    conf, pairs = assignment_confidence(m, one, _clusters(one, [0]))
    assert conf["p"].tolist() == [1.0] and conf["method"].tolist() == ["exact"] and pairs.empty
    df = _df(n=4)
    with pytest.raises(ValueError, match="no row for mention 'B0/03'"):
        assignment_confidence(m, df, _clusters(df, [0, 0, 1, 1]).iloc[:3])
    with pytest.raises(ValueError, match="delta"):
        assignment_confidence(m, df, _clusters(df, [0, 0, 1, 1]), delta=1.5)
    with pytest.raises(ValueError, match="max_exact"):
        assignment_confidence(m, df, _clusters(df, [0, 0, 1, 1]), max_exact=40)
    with pytest.raises(TypeError, match="clusters must be"):
        assignment_confidence(m, df, [1, 2])


def test_calibration_scores_by_hand():
    p = np.array([0.05, 0.15, 0.95, 0.95, 0.55])
    y = np.array([0, 1, 1, 0, 1])
    s = calibration_scores(p, y, f=np.zeros(5))
    # bins: [0,.1): .05 vs 0; [.1,.2): .15 vs 1; [.5,.6): .55 vs 1; [.9,1]: .95 vs .5
    ece = (0.05 + 0.85 + 0.45 + 2 * 0.45) / 5
    assert abs(s["ece"] - ece) < 1e-12
    assert abs(s["brier"] - np.mean((p - y) ** 2)) < 1e-12
    assert abs(s["brier_raw"] - 0.25) < 1e-12 and abs(s["ece_raw"] - abs(0.5 - 0.6)) < 1e-12
    pairs = pd.DataFrame({"mention_a": ["a", "a", "b"], "mention_b": ["b", "c", "c"], "p": [0.9, 0.2, 0.1]})
    gold = pd.Series({"a": "x", "b": "x", "c": None})
    s = calibration_scores(pairs, gold)
    assert s["n_pairs"] == 1 and s["n_unlabeled"] == 2 and abs(s["brier"] - 0.01) < 1e-12
    with pytest.raises(ValueError, match="one value per pair"):
        calibration_scores(p, y[:3])
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        calibration_scores(p + 1, y)


def test_temperature_map_recovers_temperature():
    rng = np.random.default_rng(0)
    z = rng.normal(0, 3, 20000)
    y = (rng.random(z.size) < 1 / (1 + np.exp(-z / 2.0))).astype(float)
    cal = fit_calibration(1 / (1 + np.exp(-z)), y, method="temperature")
    assert abs(cal.temperature - 2.0) < 0.15
    iso = fit_calibration(1 / (1 + np.exp(-z)), y, method="isotonic")
    grid = np.linspace(0, 1, 50)
    assert np.all(np.diff(iso.apply(grid)) >= -1e-12)
    back = CalibrationMap.from_json(iso.to_json())
    np.testing.assert_array_equal(back.apply(grid), iso.apply(grid))
    with pytest.raises(ValueError, match="method"):
        CalibrationMap.from_json(json.dumps({"method": "exec"}))
    with pytest.raises(ValueError, match="method"):
        fit_calibration([0.5], [1], method="platt")


def test_report_writes_plots_and_queue(tmp_path):
    df = _df(n=8, seed=3)
    labels = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    conf, pairs = assignment_confidence(_model(), df, _clusters(df, labels))
    gold = df.set_index("mention_id")["gold"]
    md = write_confidence_report(tmp_path, conf, pairs, gold=gold, explain_fn=lambda a, b: f"why {a}-{b}",
                                 n_review=3)
    assert (tmp_path / "confidence_hist.png").stat().st_size > 0
    assert (tmp_path / "reliability.png").stat().st_size > 0
    worst = conf.sort_values(["p", "mention_id"]).iloc[0]["mention_id"]
    assert "Review queue" in md and f"| {worst} |" in md and "why " in md
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())  # no temporary left
    with pytest.raises(ValueError, match="missing the column"):
        write_confidence_report(tmp_path, conf.drop(columns="method"), pairs)
    assert math.isfinite(float(conf["p"].min()))


def test_apply_calibration_and_cluster_clash():
    from coref.confidence import apply_calibration

    df = _df(n=5, seed=6)
    labels = np.array([0, 0, 1, 1, 2])
    conf, pairs = assignment_confidence(_model(), df, _clusters(df, labels))
    cal = CalibrationMap("isotonic", 1.0, (0.0, 1.0), (0.2, 0.8))
    c2, p2 = apply_calibration(conf, pairs, mention_map=cal, pair_map=cal)
    np.testing.assert_allclose(c2["p"], 0.2 + 0.6 * conf["p"])
    np.testing.assert_allclose(p2["p"], 0.2 + 0.6 * pairs["p"])
    np.testing.assert_array_equal(conf["p"], assignment_confidence(_model(), df, _clusters(df, labels))[0]["p"])
    cl = _clusters(df, labels)
    clash = pd.concat([cl, cl.iloc[[0]].assign(cluster_id="other")], ignore_index=True)
    with pytest.raises(ValueError, match="two cluster_id values"):
        assignment_confidence(_model(), df, clash)


def test_submodel_public_function(tmp_path):
    from coref.confidence import submodel
    from sampling.bounds import log_partition, read_uai, write_uai

    df = _df(n=9, seed=8)
    m = _model()
    labels = np.array([0, 0, 1, 1, 1, 2, 2, 3, 3])
    S = [1, 4, 6, 8]
    gm = submodel(m, df, S, assignment=labels)
    gm_same = submodel(m, m.encode(df), S, assignment=labels, constraint=("same", 4, 8))
    F = m.factor_matrix(m.encode(df))
    # brute force over the configurations of S: partitions of S plus anchors of the fixed clusters
    rest = [r for r in range(9) if r not in S]
    anchors = [("anchor", c) for c in sorted({int(labels[r]) for r in rest})]
    vals, vals_same = [], []
    for part in set_partitions(S + anchors):
        if any(sum(isinstance(a, tuple) for a in g) > 1 for g in part):
            continue
        y = {r: int(labels[r]) for r in rest}
        for gi, g in enumerate(part):
            an = [a[1] for a in g if isinstance(a, tuple)]
            for s in g:
                if not isinstance(s, tuple):
                    y[s] = an[0] if an else ("new", gi)
        w = sum(F[a, b] for a in range(9) for b in range(a + 1, 9) if (a in S or b in S) and y[a] == y[b])
        vals.append(w)
        if y[4] == y[8]:
            vals_same.append(w)
    assert abs(log_partition(gm) - logsumexp(vals)) < 1e-9
    assert abs(log_partition(gm_same) - logsumexp(vals_same)) < 1e-9
    write_uai(gm, tmp_path / "s.uai")
    assert abs(log_partition(read_uai(tmp_path / "s.uai")) - logsumexp(vals)) < 1e-6
    with pytest.raises(ValueError, match="assignment is needed"):
        submodel(m, df, S)
    with pytest.raises(TypeError, match="enc_or_df_block"):
        submodel(m, [1, 2, 3], S, assignment=labels)


def _certify_case(max_exact):
    """A 14-mention block of 6 clusters and the assignment_confidence settings of the certify tests."""
    df = _df(n=14, seed=2)
    labels = np.array([0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 3, 4, 5])
    kw = dict(max_exact=max_exact, max_submodel=3, n_samples=40, n_burn=10, review_threshold=1.0, time_limit=0.3,
              rng=0, delta=1e-3)
    return df, labels, kw


def test_certify_seconds_bounds_the_next_least_confident_rows_by_dis():
    df, labels, kw = _certify_case(max_exact=4)
    off, _ = assignment_confidence(_model(), df, _clusters(df, labels), **kw)
    assert off.attrs["certify"]["n_certified"] == 0 and off.attrs["certify"]["used_seconds"] == 0.0
    assert (off["method"] == "dis").sum() == 0 and (off["method"] == "exact").sum() == 3
    conf, _ = assignment_confidence(_model(), df, _clusters(df, labels), certify_seconds=30.0, **kw)
    info = conf.attrs["certify"]
    # the 3 least confident rows are summed exactly as before; the next (all 11 others, below the
    # threshold 1.0) form one sub-model of 11 > max_exact mentions, bounded by DIS
    assert (conf["method"] == "exact").sum() == 3
    dis = conf[conf["method"] == "dis"]
    assert len(dis) == 11 and (dis["n_submodel"] == 11).all()
    assert info["n_submodels"] == 1 and info["n_certified"] == 11 and 0 < info["used_seconds"]
    assert ((dis["p_lower"] <= dis["p"]) & (dis["p"] <= dis["p_upper"])).all()
    w = (dis["p_upper"] - dis["p_lower"]).to_numpy()
    assert info["width_median"] == pytest.approx(np.median(w)) and info["width_max"] == pytest.approx(w.max())
    # rows outside both sub-models keep their sampled values
    keep = off["method"] == "exact"
    np.testing.assert_allclose(conf.loc[keep, "p"], off.loc[keep, "p"])
    with pytest.raises(ValueError, match="certify_seconds parameter must be a finite number >= 0"):
        assignment_confidence(_model(), df, _clusters(df, labels), certify_seconds=-1.0)


def test_certify_takes_the_least_confident_rows_of_a_block_with_one_below_the_threshold():
    # the sub-model is the least confident gibbs rows of the block (up to CERTIFY_MAX_SUBMODEL), also those
    # at or above review_threshold, once its least confident row is below it; none below: not a candidate
    df, labels, kw = _certify_case(max_exact=4)
    off, _ = assignment_confidence(_model(), df, _clusters(df, labels), **kw)
    g = np.sort(off.loc[off["method"] == "gibbs", "p"].to_numpy())
    assert len(g) == 11 and g[0] < g[1]
    kw["review_threshold"] = float((g[0] + g[1]) / 2)            # one row below it
    conf, _ = assignment_confidence(_model(), df, _clusters(df, labels), certify_seconds=30.0, **kw)
    assert conf.attrs["certify"]["n_certified"] == 11 and (conf["method"] == "dis").sum() == 11
    kw["review_threshold"] = float(g[0] / 2)                      # none below it
    conf, _ = assignment_confidence(_model(), df, _clusters(df, labels), certify_seconds=30.0, **kw)
    assert conf.attrs["certify"]["n_submodels"] == 0 and (conf["method"] == "dis").sum() == 0


def test_certify_pass_skips_sub_models_small_enough_to_sum_exactly():
    """The budget is for DIS: a next sub-model of <= max_exact mentions is left to Gibbs, unspent."""
    df, labels, kw = _certify_case(max_exact=12)
    off, _ = assignment_confidence(_model(), df, _clusters(df, labels), **kw)
    conf, _ = assignment_confidence(_model(), df, _clusters(df, labels), certify_seconds=30.0, **kw)
    info = conf.attrs["certify"]
    # the next 11 rows would form a sub-model of 11 <= 12 mentions: skipped, nothing certified
    assert info["n_submodels"] == 0 and info["n_certified"] == 0
    assert (conf["method"] == "gibbs").sum() == 11 and (conf["method"] == "exact").sum() == 3
    np.testing.assert_allclose(conf["p"], off["p"])


def test_blocks_above_max_block_get_no_confidence_and_are_counted():
    df = pd.concat([_df(n=6, n_blocks=1, seed=0), _df(n=3, n_blocks=1, seed=1).assign(
        block="small", mention_id=lambda d: "s" + d["mention_id"].astype(str))], ignore_index=True)
    cl = _clusters(df, [k % 2 for k in range(len(df))])
    conf, pairs = assignment_confidence(_model(), df.drop(columns="gold"), cl, max_block=5, calibration=None)
    big = conf["block"] != "small"
    assert conf.attrs["unscored"] == {"max_block": 5, "n_blocks": 1, "n_mentions": 6}
    assert (conf.loc[big, "method"] == "none").all() and conf.loc[big, ["p", "p_direct", "confidence"]].isna().all().all()
    # the block's clusters are kept as given, and it has no pair rows
    assert conf.loc[big].set_index("mention_id")["cluster_id"].to_dict() == \
        cl[cl["block"] != "small"].set_index("mention_id")["cluster_id"].to_dict()
    assert set(pairs["block"]) == {"small"}
    # the small block is scored as without the limit
    ref, _ = assignment_confidence(_model(), df[df["block"] == "small"].drop(columns="gold"),
                                   cl[cl["block"] == "small"], calibration=None)
    np.testing.assert_allclose(conf.loc[~big, "p"].to_numpy(), ref["p"].to_numpy(), rtol=1e-12)
    only_big, no_pairs = assignment_confidence(_model(), df[big].drop(columns="gold"), cl[big], max_block=5,
                                               calibration=None)
    assert len(no_pairs) == 0 and list(no_pairs.columns) == list(pairs.columns) and len(only_big) == 6
    with pytest.raises(ValueError, match="max_block parameter must be an int >= 1"):
        assignment_confidence(_model(), df.drop(columns="gold"), cl, max_block=0)
