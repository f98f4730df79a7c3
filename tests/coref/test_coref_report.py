"""Outputs of ``coref run``: atomic writes, metrics.json, report.md and the Fig. 3 plots; margins."""
import json
import math
import os

import numpy as np
import pandas as pd
import pytest

from coref.margins import cluster_margins, member_margins, weakest_merges
from coref.outputs import plots, report


def _metrics():
    fold = {"fold": 0, "n_blocks": 2, "n_scored_mentions": 5, "b3_f1": 0.8, "pairwise_f1": 0.7,
            "n_factor_evals": 100}
    samplers = {
        name: {"b3_precision": 0.9, "b3_recall": 0.8, "b3_f1": 0.847, "pairwise_f1": 0.75,
               "n_factor_evals": n, "wall_s": 1.5, "folds": [fold]}
        for name, n in (("racing", 1000), ("exact", 4000))
    }
    return {
        **samplers,
        "factor_eval_ratio_exact_over_racing": 4.0,
        "data": {"path": "x", "format": "csv", "n_mentions": 10, "n_blocks": 3, "n_scored_mentions": 8,
                 "n_scored_blocks": 2, "n_unlabeled_blocks": 1, "n_skipped": 0},
        "settings": {"folds": 2, "seed": 0, "delta": 0.05, "n_sweeps": 3, "executor": "local"},
        "elapsed_s": 2.0,
    }


def _curves():
    rows = []
    for s, per in (("racing", 100), ("exact", 400)):
        for t in range(4):
            rows.append((s, t, per * t, 1.0, 0.3 + 0.2 * t, 0.4 + 0.15 * t))
    return pd.DataFrame(rows, columns=report.CURVE_COLUMNS)


def _leftovers(d):
    return [p.name for p in d.iterdir() if ".tmp" in p.name]


def test_atomic_write_failure_in_replace_keeps_old_content(tmp_path, monkeypatch):
    target = tmp_path / "m.json"
    target.write_text('{"old": 1}')

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        report.write_json(target, {"new": 2})
    assert json.loads(target.read_text()) == {"old": 1}
    assert _leftovers(tmp_path) == []


def test_write_json_nan_to_null_and_numpy_scalars(tmp_path):
    import numpy as np

    p = tmp_path / "m.json"
    report.write_json(p, {"a": float("nan"), "b": np.int64(3), "c": np.float32(0.5), "d": [np.inf, 1], "e": pd.NA})
    assert json.loads(p.read_text()) == {"a": None, "b": 3, "c": 0.5, "d": [None, 1], "e": None}


def test_write_report_writes_every_file(tmp_path):
    clusters = pd.DataFrame({"sampler": ["racing"], "fold": [0], "block": ["b"], "mention_id": ["m"],
                             "cluster_id": ["c"], "gold": ["g"], "scored": [True]})
    paths = report.write_report(tmp_path, clusters=clusters, metrics=_metrics(), curves=_curves())
    for key in ("clusters", "curves", "metrics", "report", "fig_evals", "fig_sweeps"):
        assert paths[key].exists(), key
    for key in ("fig_evals", "fig_sweeps"):
        assert paths[key].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = paths["report"].read_text()
    assert plots.FIGURES["evals"] in md and plots.FIGURES["sweeps"] in md
    assert "| racing |" in md and "| exact |" in md
    assert "4.00 times" in md
    assert "inferred but not scored" in md
    back = pd.read_csv(paths["curves"])
    assert list(back.columns) == report.CURVE_COLUMNS and len(back) == 8
    assert json.loads(paths["metrics"].read_text())["exact"]["n_factor_evals"] == 4000
    assert _leftovers(tmp_path) == []


def test_format_summary_has_one_row_per_sampler():
    text = report.format_summary(_metrics())
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["sampler", "B3", "P", "B3"]
    assert any(line.startswith("racing") and "0.8470" in line and "1,000" in line for line in lines)
    assert any(line.startswith("exact") and "4,000" in line for line in lines)
    assert "4.00x" in text
    assert "1 blocks without gold labels were inferred but not scored" in text
    assert "skipped" not in text
    m = _metrics()
    m["data"]["n_skipped"] = 3
    assert "the loader skipped 3 unreadable records" in report.format_summary(m)


def test_plot_curves_skips_zero_evals_on_log_axis(tmp_path):
    # sweep 0 has 0 factor evaluations; it cannot be drawn on a log axis but must not break the plot
    plots.plot_curves(_curves(), tmp_path / "f.png", x="n_factor_evals")
    assert (tmp_path / "f.png").stat().st_size > 1000
    assert not math.isnan(_curves()["b3_f1"].iloc[0])


def test_cluster_margins_are_within_cluster_factor_sums(mentions_factory):
    from coref.model import PairwiseModel

    df = mentions_factory(n_blocks=3, per=12, seed=31)
    model = PairwiseModel(bias_shift=0.0).fit(df)
    blk = df[df["block"] == "Name_2"].reset_index(drop=True)
    enc = model.encode(blk)
    F = model.factor_matrix(enc)
    labels = np.array([0, 0, 0, 1, 1, 2, 3, 3, 3, 3, 4, 5])
    bias = model.block_bias(enc)                     # the block's intercept, as factor_matrix uses
    m = cluster_margins(enc, model.theta_, bias, labels)
    for i in range(len(labels)):
        same = (labels == labels[i]) & (np.arange(len(labels)) != i)
        if same.any():
            assert m[i] == pytest.approx(F[i, same].sum(), abs=1e-9)
        else:
            assert np.isnan(m[i])
    only = np.arange(12) % 2 == 0
    part = cluster_margins(enc, model.theta_, bias, labels, rows=only)
    np.testing.assert_array_equal(np.isnan(part[~only]), True)
    np.testing.assert_allclose(part[only], m[only])
    # a capped cluster: a subsample of 3 members, scaled by (n - 1) / (members compared)
    capped = cluster_margins(enc, model.theta_, bias, np.zeros(12, int), max_members=3, rng=1)
    assert np.isfinite(capped).all() and capped.shape == (12,)
    cl = pd.DataFrame({"mention_id": blk["mention_id"], "cluster_id": [f"c{k}" for k in labels]})
    w = weakest_merges(cl, pd.Series(m, index=blk["mention_id"]), n_weakest=3)
    finite = np.sort(m[np.isfinite(m)])[:3]
    np.testing.assert_allclose(w["margin"], finite)
    assert (w["mean_factor"] == w["margin"] / (w["n_mentions"] - 1)).all()


def test_write_report_confidence_section_and_reliability_diagram(tmp_path):
    rel = {"n": [5, 0, 3], "mean_p": [0.1, None, 0.9], "freq": [0.2, None, 0.6]}
    fold = {"fold": 0, "n_pairs": 8, "ece": 0.1234, "ece_calibrated": 0.0456, "ece_sigmoid_f": 0.0789,
            "brier": 0.2, "brier_calibrated": 0.15, "brier_sigmoid_f": 0.18, "n_mentions": 6,
            "coverage": 0.5, "correct": 1.0, "coverage_calibrated": float("nan"), "correct_calibrated": None}
    m = {**_metrics(), "confidence": {"sampler": "racing", "calibration": "isotonic", "folds": [fold],
                                      "pooled": {**fold, "reliability": {"raw": rel, "sigmoid_f": rel}},
                                      "seconds": 3.0}}
    clusters = pd.DataFrame({"sampler": ["racing"], "fold": [0], "block": ["b"], "mention_id": ["m"],
                             "cluster_id": ["c"], "gold": ["g"], "scored": [True]})
    paths = report.write_report(tmp_path, clusters=clusters, metrics=m, curves=_curves())
    assert paths["fig_reliability"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = paths["report"].read_text()
    assert "## Confidence calibration on held-out folds" in md and plots.FIGURES["reliability"] in md
    assert "| 0 | 8 | 0.1234 | 0.0456 | 0.0789 | 0.2000 | 0.1500 | 0.1800 | 6 | 0.5000 | 1.0000 | n/a | n/a |" in md
    assert "| pooled | 8 |" in md
    assert json.loads(paths["metrics"].read_text())["confidence"]["folds"][0]["coverage_calibrated"] is None
    # skipped (stand-in models): a note, no figure
    m["confidence"] = {"skipped": "no factor_matrix", "sampler": "racing", "calibration": "isotonic"}
    (tmp_path / "x").mkdir()
    paths = report.write_report(tmp_path / "x", clusters=clusters, metrics=m, curves=_curves())
    assert "fig_reliability" not in paths and "Not computed: no factor_matrix" in paths["report"].read_text()


def _margins_one_cluster_at_a_time(enc, theta, bias, labels, *, rng=0, cap=300, rows=None):
    """The per-cluster loop ``cluster_margins`` replaced (its slow twin): every pair by ``pair_factors``."""
    codes, _ = pd.factorize(np.asarray(labels))
    out = np.full(len(codes), np.nan)
    gen = np.random.default_rng(rng)
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    want = np.ones(len(codes), bool) if rows is None else np.asarray(rows, dtype=bool)
    for idx in np.split(order, bounds):
        n = len(idx)
        if n < 2 or not want[idx].any():
            continue
        idx = np.sort(idx).astype(np.int64)
        ref = np.arange(n) if n <= cap else np.sort(gen.choice(n, cap, replace=False))
        mine = np.flatnonzero(want[idx])
        out[idx[mine]] = member_margins(enc, np.ascontiguousarray(theta, dtype=np.float64), bias, idx, ref, mine)
    return out


@pytest.mark.parametrize("cap", [300, 4])
def test_cluster_margins_all_clusters_at_once_equal_one_at_a_time(mentions_factory, cap):
    """Bit for bit, with clusters above the cap (subsampled, in code order) among small ones."""
    from coref.model import PairwiseModel

    df = mentions_factory(n_blocks=2, per=40, seed=7)
    model = PairwiseModel(bias_shift=0.0).fit(df)
    blk = df[df["block"] == "Name_1"].reset_index(drop=True)
    enc = model.encode(blk)
    gen = np.random.default_rng(3)
    labels = gen.integers(0, 9, size=len(blk)) * 7 % 11          # unsorted labels, sizes 0..~10
    rows = gen.random(len(blk)) < 0.5
    for r in (None, rows):
        got = cluster_margins(enc, model.theta_, model.bias_, labels, rng=5, max_members=cap, rows=r)
        ref = _margins_one_cluster_at_a_time(enc, model.theta_, model.bias_, labels, rng=5, cap=cap, rows=r)
        np.testing.assert_array_equal(got, ref)
        assert np.isfinite(got).sum() > 10
