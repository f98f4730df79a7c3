"""Held-out figures and the report section of coreference confidences.

* :func:`confidence_figures`: calibration (ECE, Brier, reliability tables) of the pair
  probabilities, raw, calibrated and sigmoid(f), and coverage / correctness of the
  mention confidences at a threshold.
* :func:`write_confidence_report`: reliability diagram and confidence histogram (PNG,
  written atomically; matplotlib) and a markdown section with a review queue.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from coref.confidence.assignment import CONFIDENCE_COLUMNS

# columns added to the confidence frame by the mention model and the review queue: optional here
_ADDED_COLUMNS = ("block", "competing_cluster", "p_competing", "confidence")
from coref.confidence.scores import (brier_score, calibration_scores, ece_score, mention_correct, pair_labels,
                                     reliability_table)
from sampling.utils.atomic import atomic_path

__all__ = ["confidence_figures", "write_confidence_report"]


def confidence_figures(confidence_df, pairs_df, gold, clusters=None, *, threshold=0.95, n_bins=10):
    """Held-out calibration and usefulness figures of :func:`assignment_confidence` outputs.

    Parameters
    ----------
    confidence_df, pairs_df : pandas.DataFrame
        From :func:`coref.confidence.assignment.assignment_confidence` with ``pair_min_p=0`` (every pair within a
        block) and ``pair_factors=True`` (for the sigmoid(f) baseline).
    gold : pandas.Series
        Gold author per mention_id (NA = unlabeled, left out).
    clusters : pandas.DataFrame, optional
        ``mention_id``, ``cluster_id`` of the prediction (default: from
        ``confidence_df``).
    threshold : float, default 0.95
        Confidence level of the coverage / correctness figures.
    n_bins : int, default 10
        Equal-width bins of the ECE.

    Returns
    -------
    dict
        ``n_pairs``, ``positive_rate``; ``ece`` / ``brier`` (raw p), ``ece_calibrated``
        / ``brier_calibrated`` (``p_calibrated``; NaN without a map), ``ece_sigmoid_f``
        / ``brier_sigmoid_f`` (NaN without ``f``); ``n_mentions``, ``accuracy``,
        ``coverage`` / ``correct`` (share of labeled mentions with p >= threshold and
        the share of them that are correct), the same with ``_calibrated``; and
        ``reliability``: per bin ``n``, ``mean_p``, ``freq`` for raw, calibrated and
        sigmoid(f).
    """
    g = gold.copy()
    g.index = g.index.astype(str)
    ok, y = pair_labels(pairs_df, g)
    out = {"threshold": float(threshold), "n_pairs": int(ok.sum())}
    nan = float("nan")
    if ok.any():
        p = pairs_df["p"].to_numpy(float)[ok]
        out["positive_rate"] = float(y.mean())
        out["ece"], out["brier"] = ece_score(p, y, n_bins), brier_score(p, y)
        pc = pairs_df["p_calibrated"].to_numpy(float)[ok] if "p_calibrated" in pairs_df else np.full(p.shape, nan)
        has_cal = bool(np.isfinite(pc).all())
        out["ece_calibrated"] = ece_score(pc, y, n_bins) if has_cal else nan
        out["brier_calibrated"] = brier_score(pc, y) if has_cal else nan
        rel = {"raw": reliability_table(p, y, n_bins)}
        if has_cal:
            rel["calibrated"] = reliability_table(pc, y, n_bins)
        if "f" in pairs_df.columns:
            q = 1.0 / (1.0 + np.exp(-pairs_df["f"].to_numpy(float)[ok]))
            out["ece_sigmoid_f"], out["brier_sigmoid_f"] = ece_score(q, y, n_bins), brier_score(q, y)
            rel["sigmoid_f"] = reliability_table(q, y, n_bins)
        else:
            out["ece_sigmoid_f"] = out["brier_sigmoid_f"] = nan
        out["reliability"] = {k: {c: [None if not np.isfinite(v) else float(v) for v in t[c]]
                                  for c in ("n", "mean_p", "freq")} for k, t in rel.items()}
    cl = confidence_df[["mention_id", "cluster_id"]] if clusters is None else clusters
    correct = mention_correct(cl, g)
    c = confidence_df.set_index(confidence_df["mention_id"].astype(str))
    out["n_mentions"] = int(len(correct))
    if len(correct):
        out["accuracy"] = float(correct.mean())
        for col, suffix in (("p", ""), ("p_calibrated", "_calibrated")):
            v = c[col].reindex(correct.index).to_numpy(float) if col in c else np.full(len(correct), nan)
            if not np.isfinite(v).all():
                out["coverage" + suffix] = out["correct" + suffix] = nan
                continue
            hi = v >= float(threshold)
            out["coverage" + suffix] = float(hi.mean())
            out["correct" + suffix] = float(correct.to_numpy()[hi].mean()) if hi.any() else nan
            out["n_confident" + suffix] = int(hi.sum())
    return out


def _save(plt, fig, out_dir, name):
    """Write ``fig`` to ``out_dir / name`` atomically (PNG, 100 dpi), close it, return ``name``."""
    fig.tight_layout()
    path = Path(out_dir) / name
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)
    return name


def _plots(out_dir, confidence_df, pairs_df, gold):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    fig, ax = plt.subplots(figsize=(5, 3.5))
    bins = np.linspace(0, 1, 21)
    for m in sorted(set(confidence_df["method"].unique()) - {"none"}):     # none: no confidence
        ax.hist(confidence_df.loc[confidence_df["method"] == m, "p"], bins=bins, alpha=0.6, label=m)
    ax.set_xlabel("confidence P(mention belongs with its predicted cluster)")
    ax.set_ylabel("mentions")
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    files.append(_save(plt, fig, out_dir, "confidence_hist.png"))
    if gold is not None and pairs_df is not None and len(pairs_df):
        ok, y = pair_labels(pairs_df, gold)
        if ok.any():
            t = reliability_table(pairs_df["p"].to_numpy(float)[ok], y)
            fig, ax = plt.subplots(figsize=(4, 4))
            ax.plot([0, 1], [0, 1], color="grey", lw=1)
            sel = t["n"] > 0
            ax.plot(t.loc[sel, "mean_p"], t.loc[sel, "freq"], "o-")
            ax.set_xlabel("predicted P(same author)")
            ax.set_ylabel("observed frequency")
            ax.set_title("reliability (pairs, 10 bins)")
            files.append(_save(plt, fig, out_dir, "reliability.png"))
    return files


def write_confidence_report(out_dir, confidence_df, pairs_df, *, gold=None, explain_fn=None,
                            n_review=20, thresholds=(0.5, 0.9, 0.95, 0.99)):
    """Write the confidence plots and return a markdown section with a review queue.

    Parameters
    ----------
    out_dir : str or os.PathLike
        Folder for ``confidence_hist.png`` and (with ``gold``) ``reliability.png``,
        each written atomically.
    confidence_df, pairs_df : pandas.DataFrame
        Outputs of :func:`coref.confidence.assignment_confidence`.
    gold : pandas.Series, optional
        Gold author per mention_id: adds the reliability diagram and calibration
        figures.
    explain_fn : callable, optional
        ``explain_fn(mention_a, mention_b) -> str``: the factor breakdown of a link; the
        review queue shows it for each queued mention's strongest link.
    n_review : int, default 20
        Length of the review queue (lowest-confidence assignments first).
    thresholds : sequence of float
        Coverage is reported at these confidence levels.

    Returns
    -------
    str
        Markdown.

    Raises
    ------
    ValueError
        If a required column is missing.
    """
    miss = [c for c in CONFIDENCE_COLUMNS if c not in confidence_df.columns and c not in _ADDED_COLUMNS]
    if miss:
        raise ValueError(f"confidence_df is missing the column(s) {miss}")
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    files = _plots(out_dir, confidence_df, pairs_df, gold)
    n = len(confidence_df)
    lines = ["## Confidence", ""]
    counts = confidence_df["method"].value_counts()
    lines.append(f"{n} mentions: " + ", ".join(f"{int(counts.get(m, 0))} {m}" for m in ("exact", "dis", "gibbs"))
                 + ". Confidence = P(mention belongs with its predicted cluster); `dis` rows carry an "
                 "interval whose ends each hold with probability 1 - delta (both: 1 - 2 delta).")
    lines.append("")
    has_cal = "p_calibrated" in confidence_df.columns and bool(np.isfinite(confidence_df["p_calibrated"]).any())
    if has_cal:
        lines.append("`p` is the model's posterior probability (temperature 1); `p_direct` the mean pairwise "
                     "probability sigmoid(f) to the other members of the predicted cluster; `p_calibrated` (= "
                     "`confidence`) the calibration saved with the model (fitted by `coref fit` on cross-fitted "
                     "training blocks) applied to them (with a mention model: to p, p_direct, the competing "
                     "cluster's support, block and cluster sizes): the estimated probability that the assignment "
                     "is correct. Act on `confidence`; the review queue (and review.csv) is ordered by it.")
        lines.append("")
        lines.append("| confidence >= | mentions (p) | share | mentions (p_calibrated) | share |")
        lines.append("|---|---|---|---|---|")
    else:
        lines.append("| confidence >= | mentions | share |")
        lines.append("|---|---|---|")
    for t in thresholds:
        k = int((confidence_df["p"] >= t).sum())
        row = f"| {t:g} | {k} | {k / max(n, 1):.3f} |"
        if has_cal:
            kc = int((confidence_df["p_calibrated"] >= t).sum())
            row += f" {kc} | {kc / max(n, 1):.3f} |"
        lines.append(row)
    lines.append("")
    if gold is not None and pairs_df is not None and len(pairs_df):
        try:
            sc = calibration_scores(pairs_df, gold)
            lines.append(f"Pairs: ECE {sc['ece']:.4f}, Brier {sc['brier']:.4f} over {sc['n_pairs']} labeled pairs "
                         "(10 equal-width bins; only the pairs listed in pairs.csv).")
            lines.append("")
        except ValueError:
            pass
    for fname in files:
        lines.append(f"![{fname}]({fname})")
    lines.append("")
    lines.append(f"### Review queue (the {min(n_review, n)} lowest-confidence assignments)")
    lines.append("")
    if has_cal:
        lines.append("| mention | cluster | p_calibrated | p | interval | method | strongest link |")
        lines.append("|---|---|---|---|---|---|---|")
    else:
        lines.append("| mention | cluster | p | interval | method | strongest link |")
        lines.append("|---|---|---|---|---|---|")
    key = "p_calibrated" if has_cal else "p"
    queue = confidence_df.sort_values([key, "p", "mention_id"]).head(int(n_review))
    for _, r in queue.iterrows():
        iv = "" if pd.isna(r["p_lower"]) else f"[{r['p_lower']:.3f}, {r['p_upper']:.3f}]"
        link = ""
        if pairs_df is not None and len(pairs_df):
            m = str(r["mention_id"])
            cand = pairs_df[(pairs_df["mention_a"].astype(str) == m) | (pairs_df["mention_b"].astype(str) == m)]
            if len(cand):
                best = cand.loc[cand["p"].idxmax()]
                other = best["mention_b"] if str(best["mention_a"]) == m else best["mention_a"]
                link = f"{other} (p={best['p']:.3f})"
                if explain_fn is not None:
                    link += ": " + str(explain_fn(m, str(other))).replace("|", "/").replace("\n", " ")
        pc = f"{r['p_calibrated']:.3f} | " if has_cal else ""
        lines.append(f"| {r['mention_id']} | {r['cluster_id']} | {pc}{r['p']:.3f} | {iv} | {r['method']} | {link} |")
    lines.append("")
    return "\n".join(lines)
