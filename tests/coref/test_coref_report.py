"""Outputs of ``coref run``: atomic writes, metrics.json, report.md and the Fig. 3 plots."""
import json
import math
import os

import pandas as pd
import pytest

from coref import report


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
    assert report.FIGURES["evals"] in md and report.FIGURES["sweeps"] in md
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
    report.plot_curves(_curves(), tmp_path / "f.png", x="n_factor_evals")
    assert (tmp_path / "f.png").stat().st_size > 1000
    assert not math.isnan(_curves()["b3_f1"].iloc[0])
