"""Outputs of ``coref run`` (clusters.csv, curves.csv, metrics.json, report.md, PNG plots) and
of ``coref predict`` / ``add`` (the largest clusters and the weakest merges in report.md).

Every file is written atomically: the content goes to a temporary file in the same
directory, which is then moved over the target with :func:`os.replace`, so a reader (or
an interrupted run) never sees a half-written output.

The two plots reproduce Fig. 3 of Chen & Ghahramani (2016), Sec. 5.3: B3 F1 on the
labeled mentions against (a) the cumulative number of pairwise factor evaluations and
(b) the Gibbs sweep, one line per sampler (Racing-Normal "racing" vs. "exact").

References
----------
.. [1] Chen, Y. & Ghahramani, Z. (2016). Scalable discrete sampling as a multi-armed
   bandit problem. ICML. Sec. 5.3, Fig. 3(a) and 3(b).
.. [2] Bagga, A. & Baldwin, B. (1998). Algorithms for scoring coreference chains.
"""
from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from sampling.utils.atomic import atomic_open, atomic_path, atomic_write_text

__all__ = [
    "largest_clusters",
    "cluster_margins",
    "weakest_merges",
    "render_predict_md",
    "write_json",
    "write_csv",
    "plot_curves",
    "format_summary",
    "render_report_md",
    "write_report",
]

CLUSTER_COLUMNS = ["sampler", "fold", "block", "mention_id", "cluster_id", "gold", "scored"]
CURVE_COLUMNS = ["sampler", "sweep", "n_factor_evals", "b3_precision", "b3_recall", "b3_f1"]
FIGURES = {
    "evals": "b3_f1_vs_factor_evals.png",
    "sweeps": "b3_f1_vs_sweeps.png",
    "reliability": "reliability.png",
}
_COLORS = {"racing": "tab:blue", "exact": "tab:orange"}
_LABELS = {"racing": "Racing-Normal Gibbs (sub)", "exact": "exact Gibbs"}


def _jsonable(obj):
    """Convert numpy / pandas scalars and non-finite floats for :func:`json.dumps`."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        return v if math.isfinite(v) else None
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, Path):
        return str(obj)
    if obj is pd.NA or obj is pd.NaT:
        return None
    return obj


def write_json(path, obj):
    """Write ``obj`` as indented JSON atomically (NaN and inf become ``null``)."""
    atomic_write_text(path, json.dumps(_jsonable(obj), indent=2, allow_nan=False) + "\n")


def write_csv(path, frame):
    """Write a DataFrame as CSV (no index) atomically."""
    with atomic_open(path, "w", newline="") as fh:
        frame.to_csv(fh, index=False)


def plot_curves(curves, path, *, x="n_factor_evals"):
    """Plot B3 F1 against ``x`` for each sampler and save a PNG atomically.

    Parameters
    ----------
    curves : pandas.DataFrame
        Columns as in ``CURVE_COLUMNS``: one row per (sampler, sweep).
    path : str or os.PathLike
        PNG file to write.
    x : {"n_factor_evals", "sweep"}
        Horizontal axis: cumulative pairwise factor evaluations (Fig. 3a, log scale)
        or Gibbs sweep (Fig. 3b).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 4.0), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for sampler, cur in curves.groupby("sampler", sort=True):
        xs = cur[x].to_numpy(dtype=float)
        ys = cur["b3_f1"].to_numpy(dtype=float)
        if x == "n_factor_evals":
            keep = xs > 0
            xs, ys = xs[keep], ys[keep]
        ax.plot(xs, ys, marker=".", color=_COLORS.get(sampler), label=_LABELS.get(sampler, sampler))
    if x == "n_factor_evals":
        ax.set_xscale("log")
        ax.set_xlabel("cumulative pairwise factor evaluations")
        ax.set_title("B3 F1 vs #factor evaluations (cf. Fig. 3a)")
    else:
        ax.set_xlabel("Gibbs sweep")
        ax.set_title("B3 F1 vs sweep (cf. Fig. 3b)")
    ax.set_ylabel("B3 F1 (labeled mentions)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    fig.subplots_adjust(left=0.14, right=0.97, bottom=0.13, top=0.91)  # tight_layout costs ~0.4 s a figure
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")


def _fmt_int(v):
    return "-" if v is None else f"{int(v):,}"


from coref.settings import ALL_SAMPLERS  # noqa: E402  (one definition of the sampler names)


def sampler_items(metrics):
    """``(sampler, metrics dict)`` pairs of a metrics.json dict, racing first."""
    return [(name, metrics[name]) for name in ALL_SAMPLERS if name in metrics]


def format_summary(metrics):
    """A short plain-text table of the per-sampler results in ``metrics``.

    Parameters
    ----------
    metrics : dict
        As written to metrics.json (one top-level key per sampler run, ``"racing"`` and/or
        ``"exact"``, holding that sampler's metrics dict).

    Returns
    -------
    str
    """
    rows = [("sampler", "B3 P", "B3 R", "B3 F1", "pair F1", "factor evals", "Gibbs s")]
    for name, m in sampler_items(metrics):
        rows.append((
            name,
            f"{m['b3_precision']:.4f}",
            f"{m['b3_recall']:.4f}",
            f"{m['b3_f1']:.4f}",
            f"{m['pairwise_f1']:.4f}",
            _fmt_int(m["n_factor_evals"]),
            f"{m['wall_s']:.1f}",
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for k, r in enumerate(rows):
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    ratio = metrics.get("factor_eval_ratio_exact_over_racing")
    if ratio is not None:
        lines.append(f"exact / racing factor evaluations: {ratio:.2f}x")
    d = metrics.get("data", {})
    lines.append(
        f"{d.get('n_mentions', '?')} mentions in {d.get('n_blocks', '?')} blocks; "
        f"scored {d.get('n_scored_mentions', '?')} labeled mentions in {d.get('n_scored_blocks', '?')} blocks"
        f"; elapsed {metrics.get('elapsed_s', float('nan')):.1f} s"
    )
    if d.get("n_unlabeled_blocks"):
        lines.append(f"{d['n_unlabeled_blocks']} blocks without gold labels were inferred but not scored")
    if d.get("n_skipped"):
        lines.append(f"the loader skipped {d['n_skipped']} unreadable records (see metrics.json)")
    return "\n".join(lines)


def render_report_md(metrics, curves):
    """The text of report.md (Markdown) for ``metrics`` and the sweep ``curves``."""
    s = metrics["settings"]
    d = metrics["data"]
    lines = [
        "# Author coreference: Racing-Normal Gibbs vs exact Gibbs",
        "",
        f"Data: `{d.get('path')}` (format `{d.get('format')}`): {d['n_mentions']} mentions in "
        f"{d['n_blocks']} blocks; {d.get('n_skipped', 0)} records skipped by the loader.",
        f"Grouped {s['folds']}-fold cross-validation by block: theta (logistic regression on labeled "
        "within-block pairs) is fitted on the other folds' blocks and never on the blocks it scores.",
        f"Scored: {d['n_scored_mentions']} labeled mentions in {d['n_scored_blocks']} blocks."
        + (f" {d['n_unlabeled_blocks']} blocks without any gold label were inferred but not scored."
           if d.get("n_unlabeled_blocks") else " Every block has gold labels.")
        + (f" {d['n_unlabeled_mentions_in_scored_blocks']} unlabeled mentions inside scored blocks were "
           "clustered but left out of the scores." if d.get("n_unlabeled_mentions_in_scored_blocks") else ""),
        f"Settings: seed {s['seed']}, delta {s['delta']}, sweeps {s['n_sweeps'] if s['n_sweeps'] is not None else 'default'}, "
        f"executor {s['executor']}.",
        "",
        "## Results (pooled over folds)",
        "",
        "| sampler | B3 precision | B3 recall | B3 F1 | pairwise F1 | factor evaluations | Gibbs wall s |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, m in sampler_items(metrics):
        lines.append(
            f"| {name} | {m['b3_precision']:.4f} | {m['b3_recall']:.4f} | {m['b3_f1']:.4f} | "
            f"{m['pairwise_f1']:.4f} | {_fmt_int(m['n_factor_evals'])} | {m['wall_s']:.1f} |"
        )
    ratio = metrics.get("factor_eval_ratio_exact_over_racing")
    if ratio is not None:
        lines += ["", f"Exact Gibbs evaluated {ratio:.2f} times as many pairwise factors as Racing-Normal Gibbs."]
    lines += [
        "",
        "`Gibbs wall s` is the sum over blocks of the time spent in Gibbs sampling "
        "(comparable across executors); the whole run took "
        f"{metrics.get('elapsed_s', float('nan')):.1f} s.",
        "",
        "## Per fold",
        "",
        "| sampler | fold | blocks | scored mentions | B3 F1 | pairwise F1 | factor evaluations |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, m in sampler_items(metrics):
        for f in m.get("folds", []):
            b3f = "-" if f.get("b3_f1") is None else f"{f['b3_f1']:.4f}"
            pf = "-" if f.get("pairwise_f1") is None else f"{f['pairwise_f1']:.4f}"
            lines.append(
                f"| {name} | {f['fold']} | {f['n_blocks']} | {f['n_scored_mentions']} | {b3f} | {pf} | "
                f"{_fmt_int(f['n_factor_evals'])} |"
            )
    lines += [
        "",
        "## Convergence (cf. Chen & Ghahramani 2016, Fig. 3)",
        "",
        "B3 F1 of the labeled mentions after each Gibbs sweep (sweep 0 = initial state), "
        "computed from the recorded label history of every block.",
        "",
        f"![B3 F1 vs factor evaluations]({FIGURES['evals']})",
        "",
        f"![B3 F1 vs sweeps]({FIGURES['sweeps']})",
        "",
    ]
    if curves is not None and len(curves):
        last = curves.sort_values("sweep").groupby("sampler").tail(1)
        lines.append("Final sweep: " + "; ".join(
            f"{r.sampler}: sweep {int(r.sweep)}, F1 {r.b3_f1:.4f} after {int(r.n_factor_evals):,} factor evaluations"
            for r in last.itertuples()
        ) + ".")
        lines.append("")
    lines += [
        "Files: `clusters.csv` (one row per sampler and mention), `curves.csv` (the plotted "
        "values), `metrics.json` (all numbers above and the settings).",
        "",
    ]
    return "\n".join(lines)


def write_report(out, *, clusters, metrics, curves, plots=True, files=None):
    """Write every output of a run into the directory ``out`` (atomically, file by file).

    Parameters
    ----------
    out : str or os.PathLike
        Existing directory.
    clusters : pandas.DataFrame
        Columns ``CLUSTER_COLUMNS``.
    metrics : dict
        JSON-able after :func:`_jsonable`.
    curves : pandas.DataFrame
        Columns ``CURVE_COLUMNS``.
    plots : bool
        Draw the two PNG plots.
    files : coref.outputs.OutputDir or None
        Records each file written, for the manifest.

    Returns
    -------
    dict
        Output name -> path.
    """
    out = Path(out)
    names = {"clusters": "clusters.csv", "curves": "curves.csv", "metrics": "metrics.json", "report": "report.md",
             "fig_evals": FIGURES["evals"], "fig_sweeps": FIGURES["sweeps"]}
    if not (plots and curves is not None and len(curves)):
        names.pop("fig_evals")
        names.pop("fig_sweeps")
    conf = metrics.get("confidence") if isinstance(metrics, dict) else None
    if plots and isinstance(conf, dict) and (conf.get("pooled") or {}).get("reliability"):
        names["fig_reliability"] = FIGURES["reliability"]
    paths = {k: (files.path(v) if files is not None else out / v) for k, v in names.items()}
    write_csv(paths["clusters"], clusters)
    write_csv(paths["curves"], curves)
    write_json(paths["metrics"], metrics)
    if plots and curves is not None and len(curves):
        plot_curves(curves, paths["fig_evals"], x="n_factor_evals")
        plot_curves(curves, paths["fig_sweeps"], x="sweep")
    if "fig_reliability" in paths:
        plot_reliability(conf["pooled"]["reliability"], paths["fig_reliability"])
    md = render_report_md(metrics, curves)
    if isinstance(conf, dict):
        md += render_confidence_md(conf, figure="fig_reliability" in paths)
    atomic_write_text(paths["report"], md)
    return paths


def plot_reliability(reliability, path):
    """Reliability diagram (observed frequency against mean predicted p per bin).

    Parameters
    ----------
    reliability : dict
        ``{"raw" | "calibrated" | "sigmoid_f": {"n": [...], "mean_p": [...], "freq": [...]}}``
        as in ``metrics["confidence"]["pooled"]["reliability"]``.
    path : str or os.PathLike
        PNG written atomically.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = {"raw": "posterior marginal (T = 1)", "calibrated": "calibrated: map of (p + sigmoid(f)) / 2, training folds",
              "sigmoid_f": "sigmoid(f) (pairwise logistic)"}
    fig, ax = plt.subplots(figsize=(4.8, 4.4))
    ax.plot([0, 1], [0, 1], color="grey", lw=1)
    for key in ("raw", "calibrated", "sigmoid_f"):
        t = reliability.get(key)
        if not t:
            continue
        pts = [(m, f) for n, m, f in zip(t["n"], t["mean_p"], t["freq"]) if n and m is not None and f is not None]
        if pts:
            ax.plot([a for a, _ in pts], [b for _, b in pts], "o-", ms=4, label=labels[key])
    ax.set_xlabel("predicted P(same author)")
    ax.set_ylabel("observed frequency")
    ax.set_title("held-out pairs, 10 equal-width bins")
    ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)


def render_confidence_md(conf, *, figure=True):
    """Markdown section of the held-out calibration figures (``metrics["confidence"]``)."""
    lines = ["", "## Confidence calibration on held-out folds", ""]
    if conf.get("skipped"):
        return "\n".join(lines + [f"Not computed: {conf['skipped']}", ""])
    lines.append(
        f"Sampler {conf.get('sampler')}'s held-out clusters; raw = posterior marginals P(y_a = y_b | x) for every "
        f"pair within a block (Rao-Blackwellised Gibbs at temperature 1) and per-mention confidence p; calibrated "
        f"= `{conf.get('calibration')}` maps fitted on each fold's TRAINING folds only (training mentions "
        f"clustered and scored by that fold's theta), applied to (p + sigmoid(f)) / 2 for pairs and to "
        f"min(p, p_direct) for mentions (p_direct = mean sigmoid(f) to the other members of the predicted "
        f"cluster). Correct = the mention's gold author is the majority gold author of its predicted cluster. "
        f"ECE over 10 equal-width bins.")
    lines.append("")
    lines.append("| fold | pairs | ECE raw | ECE cal. | ECE sigmoid(f) | Brier raw | Brier cal. | Brier sigmoid(f) "
                 "| mentions | cover >= 0.95 raw | correct | cover >= 0.95 cal. | correct |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")

    def f4(v):
        return "n/a" if v is None or (isinstance(v, float) and not np.isfinite(v)) else f"{v:.4f}"

    rows = [(str(r.get("fold")), r) for r in conf.get("folds", [])] + [("pooled", conf.get("pooled", {}))]
    for name, r in rows:
        lines.append(f"| {name} | {r.get('n_pairs', 0):,} | {f4(r.get('ece'))} | {f4(r.get('ece_calibrated'))} | "
                     f"{f4(r.get('ece_sigmoid_f'))} | {f4(r.get('brier'))} | {f4(r.get('brier_calibrated'))} | "
                     f"{f4(r.get('brier_sigmoid_f'))} | {r.get('n_mentions', 0)} | {f4(r.get('coverage'))} | "
                     f"{f4(r.get('correct'))} | {f4(r.get('coverage_calibrated'))} | {f4(r.get('correct_calibrated'))} |")
    lines.append("")
    if figure:
        lines.append(f"![reliability diagram]({FIGURES['reliability']})")
        lines.append("")
    if conf.get("seconds") is not None:
        lines.append(f"Confidence and calibration took {conf['seconds']:.1f} s.")
        lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------- predict / add

_MAX_MEMBERS = 300  # clusters larger than this: margins from a random subsample of members


def largest_clusters(df, clusters, *, n_largest=10):
    """The ``n_largest`` clusters: cluster_id, block, n_mentions, name (most common spelling), years.

    Parameters
    ----------
    df : pandas.DataFrame
        The mentions (``mention_id``, ``name``, ``year``).
    clusters : pandas.DataFrame
        mention_id, block, cluster_id.

    Returns
    -------
    pandas.DataFrame
    """
    mid = clusters["mention_id"].astype(str).to_numpy(dtype=object)
    cid = clusters["cluster_id"].astype(str).to_numpy(dtype=object)
    blk = clusters["block"].astype(str).to_numpy(dtype=object)
    codes, uniq = pd.factorize(cid)
    counts = np.bincount(codes, minlength=len(uniq))
    row_of = pd.Series(np.arange(len(df)), index=df["mention_id"].astype(str).to_numpy(dtype=object))
    rows_all = row_of.reindex(mid).to_numpy()
    names = df["name"].to_numpy(dtype=object)
    years_all = pd.to_numeric(df["year"], errors="coerce").to_numpy(dtype=float)
    out = []
    for c in np.argsort(-counts, kind="stable")[:n_largest]:
        members = rows_all[codes == c]
        ys = years_all[members]
        ys = ys[np.isfinite(ys)]
        nm = pd.Series(names[members]).mode()
        out.append({"cluster_id": uniq[c], "block": blk[codes == c][0], "n_mentions": int(counts[c]),
                    "name": str(nm.iloc[0]) if len(nm) else "",
                    "years": f"{int(ys.min())}-{int(ys.max())}" if len(ys) else ""})
    return pd.DataFrame(out, columns=["cluster_id", "block", "n_mentions", "name", "years"])


def cluster_margins(enc, theta, bias, labels, *, rng=0, max_members=None, rows=None):
    """Margin of every mention of one block: the sum of f_theta to the other members of its cluster.

    Parameters
    ----------
    enc : coref.features.EncodedBlock
        The encoded block (rows aligned with ``labels``).
    theta : ndarray of shape (n_features,)
    bias : float
    labels : array-like of shape (n,)
        Final cluster label of each row.
    rng : int
        Seed of the member subsample of clusters above ``max_members`` (default 300).
    rows : ndarray of bool, shape (n,), or None
        Only these mentions' margins are computed (``coref add``: the new ones); the
        others are NaN.

    Returns
    -------
    ndarray of float, shape (n,)
        Natural-log odds; NaN for singletons. It is the Gibbs score of staying in the
        cluster against opening a new one (score 0). For a cluster above ``max_members``
        the sum over a uniform subsample of that many members is scaled by
        (n_c - 1) / (members compared).
    """
    from coref.model import _factors

    cap = _MAX_MEMBERS if max_members is None else int(max_members)
    codes, _ = pd.factorize(np.asarray(labels))
    out = np.full(len(codes), np.nan)
    gen = None                                        # made on first need (most blocks have no big cluster)
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    order = np.argsort(codes, kind="stable")          # each cluster's rows, ascending, clusters by code
    sizes = np.bincount(codes) if len(codes) else np.zeros(0, np.int64)
    start = np.cumsum(sizes) - sizes                  # first position of each cluster in ``order``
    want = np.ones(len(codes), bool) if rows is None else np.asarray(rows, dtype=bool)
    n_of = sizes[codes]
    # clusters of 2..cap members: every wanted mention against all the other members, in one
    # compiled call (the pairs of a mention in ascending member order, as one cluster at a
    # time would sum them)
    w = np.flatnonzero(want & (n_of >= 2) & (n_of <= cap))
    if len(w):
        n_w = n_of[w]
        sums = np.empty(len(w))
        i64 = functools.partial(np.ascontiguousarray, dtype=np.int64)
        _factors.member_sums(enc, theta, float(bias), i64(order), i64(start), i64(sizes), i64(codes), i64(w), sums)
        n_ref = n_w - 1.0
        out[w] = sums * (n_w - 1) / np.maximum(n_ref, 1.0)
    # clusters above cap: a uniform subsample of members (one draw per cluster, by code)
    for c in np.flatnonzero(sizes > cap):
        idx = order[start[c]:start[c] + sizes[c]].astype(np.int64)
        if not want[idx].any():
            continue
        n = len(idx)
        if gen is None:
            gen = np.random.default_rng(rng)
        ref = np.sort(gen.choice(n, cap, replace=False))
        mine = np.flatnonzero(want[idx])
        a = np.repeat(mine, len(ref))
        b = np.tile(ref, len(mine))
        keep = a != b
        a, b = a[keep], b[keep]
        vals = np.empty(len(a))
        _factors.pair_factors(enc, theta, float(bias), np.ascontiguousarray(idx[a]), np.ascontiguousarray(idx[b]),
                              vals)
        sums = np.bincount(a, weights=vals, minlength=n)[mine]
        n_ref = len(ref) - np.isin(mine, ref).astype(float)
        out[idx[mine]] = sums * (n - 1) / np.maximum(n_ref, 1.0)
    return out


def weakest_merges(clusters, margins, *, n_weakest=10, focus=None):
    """The ``n_weakest`` mentions with the smallest margin (see :func:`cluster_margins`).

    Parameters
    ----------
    clusters : pandas.DataFrame
        mention_id, cluster_id.
    margins : pandas.Series
        Margin by mention_id (NaN = singleton).
    focus : set of str or None
        Only these mentions are candidates (``coref add``: the new ones).

    Returns
    -------
    pandas.DataFrame
        mention_id, cluster_id, n_mentions, margin, mean_factor.
    """
    mid = clusters["mention_id"].astype(str).to_numpy(dtype=object)
    cid = clusters["cluster_id"].astype(str).to_numpy(dtype=object)
    codes, uniq = pd.factorize(cid)
    n = np.bincount(codes)[codes]
    m = margins.reindex(mid).to_numpy(dtype=float)
    keep = np.isfinite(m) & (n >= 2)
    if focus is not None:
        keep &= np.fromiter((x in focus for x in mid), bool, len(mid))
    w = pd.DataFrame({"mention_id": mid[keep], "cluster_id": cid[keep], "n_mentions": n[keep], "margin": m[keep]})
    w["mean_factor"] = w["margin"] / (w["n_mentions"] - 1)
    return w.sort_values(["margin", "mention_id"], kind="stable").head(n_weakest).reset_index(drop=True)


def _md_table(frame, floats=()):
    if frame is None or not len(frame):
        return ["(none)"]
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in frame.itertuples(index=False):
        cells = [f"{v:.3f}" if c in floats else str(v) for c, v in zip(cols, r)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render_predict_md(summary, largest, weakest, *, title):
    """report.md of ``coref predict`` / ``coref add``."""
    d = summary.get("data", {})
    m = summary.get("model", {})
    lines = [f"# {title}", "",
             f"Data: `{d.get('path')}` (format `{d.get('format')}`): {summary['n_mentions']} mentions in "
             f"{summary['n_blocks']} blocks -> {summary['n_clusters']} clusters "
             f"({summary['n_singletons']} singletons).",
             f"Model: `{m.get('path')}`{' (shipped default)' if m.get('default') else ''}. "
             f"{summary.get('n_factor_evals', 0):,} pairwise factors evaluated; "
             f"Gibbs {summary.get('gibbs_wall_s', 0.0):.1f} s; whole command {summary.get('elapsed_s', 0.0):.1f} s.",
             ""]
    if "n_old_mentions" in summary:
        lines += [f"Added {summary['n_new_mentions']} new mentions to {summary['n_old_mentions']} clustered ones: "
                  f"{summary['n_joined_existing']} joined existing clusters, {summary['n_new_clusters']} new "
                  f"clusters; {summary['n_blocks_touched']} existing blocks received mentions, "
                  f"{summary['n_blocks_new']} new blocks were clustered from scratch; "
                  f"existing cluster ids changed: {summary['n_old_ids_changed']}.", ""]
    for key, label in (("n_skipped", "records skipped by the loader"), ("n_files_skipped", "files skipped"),
                       ("n_files_ignored", "files ignored"), ("n_repairs", "repairs")):
        if d.get(key):
            detail = d.get(key[2:], [])
            lines += [f"{d[key]} {label}: " + "; ".join(f"`{x}`" for x in detail[:10]), ""]
    lines += ["## Largest clusters", ""] + _md_table(largest) + [""]
    if weakest is not None:
        lines += ["## Weakest merges", "",
                  "Mentions whose cluster gains least over being alone: `margin` is the sum of the pairwise "
                  "factors f (natural-log odds) to the other members, the Gibbs score of staying against a new "
                  "cluster of its own (0). A negative margin is a merge the model itself doubts; "
                  "`coref explain` breaks a pair down by feature."
                  + (" Only the mentions added by this command are listed." if "n_old_mentions" in summary else ""),
                  ""]
        lines += _md_table(weakest, floats=("margin", "mean_factor")) + [""]
    lines += ["Files: `clusters.csv` (mention_id, block, cluster_id"
              + (", gold passed through" if summary.get("gold_passed_through") else "")
              + "), `mentions.parquet` (the mentions clustered, for `coref add`), `summary.json`, "
              "`manifest.json` (written last: settings, seed, input checksum, SHA-256 of every file).", ""]
    return "\n".join(lines)
