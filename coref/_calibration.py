"""Calibration of coreference probabilities, and the confidence report.

* :func:`calibration_scores`: expected calibration error (ECE, equal-width bins) and
  Brier score of pairwise probabilities against gold, with the same figures for the
  raw pairwise logistic probability sigmoid(f) when the factors are given.
* :func:`fit_calibration` / :class:`CalibrationMap`: one temperature T
  (p -> sigmoid(logit(p) / T), fitted by log loss) or an isotonic map
  (``sklearn.isotonic.IsotonicRegression``), fitted on training folds only and
  applied to held-out probabilities.
* :func:`write_confidence_report`: reliability diagram and confidence histogram (PNG,
  written atomically) and a markdown section with a review queue.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from coref.calibration import CalibrationMap, ConfidenceCalibration, fit_calibration

__all__ = ["calibration_scores", "fit_calibration", "CalibrationMap", "ConfidenceCalibration",
           "write_confidence_report", "ece_score", "brier_score", "reliability_table", "mention_correct"]



def reliability_table(p, y, n_bins=10):
    """Per equal-width bin of p in [0, 1]: count, mean p, observed frequency.

    Returns
    -------
    pandas.DataFrame
        Columns ``bin_lo``, ``bin_hi``, ``n``, ``mean_p``, ``freq`` (empty bins kept,
        with NaN means). p = 1 falls in the last bin.
    """
    p = np.asarray(p, float)
    y = np.asarray(y, float)
    idx = np.minimum((p * n_bins).astype(np.int64), n_bins - 1)
    n = np.bincount(idx, minlength=n_bins)
    sp = np.bincount(idx, weights=p, minlength=n_bins)
    sy = np.bincount(idx, weights=y, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        return pd.DataFrame({"bin_lo": np.arange(n_bins) / n_bins, "bin_hi": np.arange(1, n_bins + 1) / n_bins,
                             "n": n, "mean_p": sp / n, "freq": sy / n})


def ece_score(p, y, n_bins=10):
    """Expected calibration error over equal-width bins.

    ECE = sum_b (n_b / n) |mean_{k in b} p_k - mean_{k in b} y_k| over the bins
    [0, 1/B), [1/B, 2/B), ..., [(B-1)/B, 1] (p = 1 falls in the last bin; empty bins
    are skipped).

    Parameters
    ----------
    p : array_like of shape (n,)
        Probabilities in [0, 1].
    y : array_like of shape (n,)
        0/1 outcomes.
    n_bins : int, default 10

    Returns
    -------
    float
        NaN for n = 0.
    """
    t = reliability_table(p, y, n_bins)
    t = t[t["n"] > 0]
    if t.empty:
        return float("nan")
    return float((t["n"] * (t["mean_p"] - t["freq"]).abs()).sum() / t["n"].sum())


def brier_score(p, y):
    """Brier score (1 / n) sum_k (p_k - y_k)^2 of probabilities ``p`` against 0/1 ``y``.

    Raises
    ------
    ValueError
        If the shapes differ or there is no value.
    """
    p = np.asarray(p, float).ravel()
    y = np.asarray(y, float).ravel()
    if p.shape != y.shape or p.size == 0:
        raise ValueError(f"p and y must be non-empty and of equal length; got {p.shape} and {y.shape}")
    return float(np.mean((p - y) ** 2))


def mention_correct(clusters, gold):
    """Whether each mention's gold author is the majority gold author of its predicted cluster.

    Parameters
    ----------
    clusters : pandas.DataFrame
        ``mention_id`` and ``cluster_id``.
    gold : pandas.Series
        Gold author per mention_id; unlabeled mentions (missing or NA) are left out,
        also from the majority vote.

    Returns
    -------
    pandas.Series of float
        1.0 / 0.0 indexed by the labeled mention ids (ties in the vote go to the
        author that sorts first, so the result does not depend on row order).
    """
    g = gold.copy()
    g.index = g.index.astype(str)
    c = pd.DataFrame({"mention_id": clusters["mention_id"].astype(str).to_numpy(),
                      "cluster_id": clusters["cluster_id"].astype(str).to_numpy()})
    c["gold"] = g.reindex(c["mention_id"]).to_numpy(dtype=object)
    c = c[~pd.isna(c["gold"])]
    if c.empty:
        return pd.Series(dtype=float)
    c["gold"] = c["gold"].astype(str)
    counts = c.groupby(["cluster_id", "gold"]).size().reset_index(name="k")
    counts = counts.sort_values(["cluster_id", "k", "gold"], ascending=[True, False, True])
    maj = counts.drop_duplicates("cluster_id").set_index("cluster_id")["gold"]
    ok = (c["gold"].to_numpy() == maj.reindex(c["cluster_id"]).to_numpy()).astype(float)
    return pd.Series(ok, index=c["mention_id"].to_numpy(), name="correct")


def _pair_labels(pairs, gold):
    if isinstance(gold, pd.DataFrame):
        if not {"mention_id", "gold"} <= set(gold.columns):
            raise ValueError("gold as a DataFrame needs the columns mention_id and gold")
        gold = gold.set_index(gold["mention_id"].astype(str))["gold"]
    if not isinstance(gold, pd.Series):
        raise TypeError(f"with a pairs DataFrame, gold must be a Series (mention_id -> gold author) or a "
                        f"DataFrame; got {type(gold).__name__}")
    gold = gold.copy()
    gold.index = gold.index.astype(str)
    ga = gold.reindex(pairs["mention_a"].astype(str)).to_numpy(dtype=object)
    gb = gold.reindex(pairs["mention_b"].astype(str)).to_numpy(dtype=object)
    ok = ~(pd.isna(ga) | pd.isna(gb))
    return ok, np.array([a == b for a, b in zip(ga[ok], gb[ok])], dtype=float)


def calibration_scores(pairs_df_or_probs, gold, *, f=None, n_bins=10):
    """ECE and Brier score of co-reference probabilities, and of the raw sigmoid(f) baseline.

    Parameters
    ----------
    pairs_df_or_probs : pandas.DataFrame or array_like of shape (n_pairs,)
        A ``pairs_df`` (``mention_a``, ``mention_b``, ``p``, and optionally ``f``, the
        pairwise factor in natural-log odds), or the probabilities themselves.
    gold : pandas.Series, pandas.DataFrame or array_like of shape (n_pairs,)
        With a DataFrame of pairs: the gold author per mention (Series indexed by
        mention_id, or a frame with ``mention_id`` and ``gold``); pairs with an
        unlabeled mention are left out (counted in ``n_unlabeled``). With
        probabilities: the 0/1 outcome of each pair.
    f : array_like of shape (n_pairs,), optional
        Pairwise factors for the baseline, when ``pairs_df_or_probs`` is an array.
    n_bins : int, default 10
        Equal-width bins of [0, 1] for the ECE.

    Returns
    -------
    dict
        ``n_pairs``, ``n_unlabeled``, ``positive_rate``, ``ece``, ``brier``, and
        ``ece_raw``, ``brier_raw`` for sigmoid(f) (NaN without factors).

    Raises
    ------
    ValueError
        If lengths differ, a probability is outside [0, 1], or no pair is labeled.
    TypeError
        For a wrong kind of ``gold``.
    """
    n_unl = 0
    if isinstance(pairs_df_or_probs, pd.DataFrame):
        pairs = pairs_df_or_probs
        miss = [c for c in ("mention_a", "mention_b", "p") if c not in pairs.columns]
        if miss:
            raise ValueError(f"pairs_df is missing the column(s) {miss}")
        ok, y = _pair_labels(pairs, gold)
        n_unl = int((~ok).sum())
        p = pairs["p"].to_numpy(float)[ok]
        fv = pairs["f"].to_numpy(float)[ok] if "f" in pairs.columns else None
    else:
        p = np.asarray(pairs_df_or_probs, float).ravel()
        y = np.asarray(gold, float).ravel()
        fv = None if f is None else np.asarray(f, float).ravel()
        if y.shape != p.shape or (fv is not None and fv.shape != p.shape):
            raise ValueError(f"probabilities, outcomes and factors must have one value per pair; got "
                             f"{p.shape}, {y.shape}, {None if fv is None else fv.shape}")
        if not np.isin(y, (0.0, 1.0)).all():
            raise ValueError("gold outcomes must be 0 or 1")
    if p.size == 0:
        raise ValueError("no labeled pair to score")
    if not (np.all(np.isfinite(p)) and p.min() >= 0.0 and p.max() <= 1.0):
        raise ValueError("probabilities must be in [0, 1]")
    out = {"n_pairs": int(p.size), "n_unlabeled": n_unl, "positive_rate": float(y.mean()),
           "ece": ece_score(p, y, n_bins), "brier": float(np.mean((p - y) ** 2)),
           "ece_raw": float("nan"), "brier_raw": float("nan")}
    if fv is not None:
        q = 1.0 / (1.0 + np.exp(-fv))
        out["ece_raw"] = ece_score(q, y, n_bins)
        out["brier_raw"] = float(np.mean((q - y) ** 2))
    return out


# ----------------------------------------------------------------------- report

def _plots(out_dir, confidence_df, pairs_df, gold):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sampling.utils.atomic import atomic_path

    files = []
    fig, ax = plt.subplots(figsize=(5, 3.5))
    bins = np.linspace(0, 1, 21)
    for m in sorted(confidence_df["method"].unique()):
        ax.hist(confidence_df.loc[confidence_df["method"] == m, "p"], bins=bins, alpha=0.6, label=m)
    ax.set_xlabel("confidence P(mention belongs with its predicted cluster)")
    ax.set_ylabel("mentions")
    ax.legend()
    fig.tight_layout()
    path = Path(out_dir) / "confidence_hist.png"
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)
    files.append(path.name)
    if gold is not None and pairs_df is not None and len(pairs_df):
        ok, y = _pair_labels(pairs_df, gold)
        if ok.any():
            t = reliability_table(pairs_df["p"].to_numpy(float)[ok], y)
            fig, ax = plt.subplots(figsize=(4, 4))
            ax.plot([0, 1], [0, 1], color="grey", lw=1)
            sel = t["n"] > 0
            ax.plot(t.loc[sel, "mean_p"], t.loc[sel, "freq"], "o-")
            ax.set_xlabel("predicted P(same author)")
            ax.set_ylabel("observed frequency")
            ax.set_title("reliability (pairs, 10 bins)")
            fig.tight_layout()
            path = Path(out_dir) / "reliability.png"
            with atomic_path(path) as tmp:
                fig.savefig(tmp, dpi=100)
            plt.close(fig)
            files.append(path.name)
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
    from coref.confidence import CONFIDENCE_COLUMNS

    miss = [c for c in CONFIDENCE_COLUMNS if c not in confidence_df.columns]
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
                     "probability sigmoid(f) to the other members of the predicted cluster; `p_calibrated` the "
                     "image of min(p, p_direct) under the calibration map saved with the model (fitted on the "
                     "training data by `coref fit`): the estimated probability that the assignment is correct. "
                     "Act on `p_calibrated`; the review queue is ordered by it.")
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
