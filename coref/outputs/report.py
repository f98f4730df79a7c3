"""Report files of the coref commands, each written atomically.

``coref run``: clusters.csv, curves.csv, metrics.json, report.md (and the figures of
:mod:`coref.outputs.plots`); ``coref predict`` / ``add``: report.md with the largest
clusters and the weakest merges (:mod:`coref.margins`). The content goes to a temporary
file in the same directory, which is then moved over the target with :func:`os.replace`,
so a reader (or an interrupted run) never sees a half-written output.

References
----------
.. [1] Chen, Y. & Ghahramani, Z. (2016). Scalable discrete sampling as a multi-armed
   bandit problem. ICML. Sec. 5.3, Fig. 3(a) and 3(b).
.. [2] Bagga, A. & Baldwin, B. (1998). Algorithms for scoring coreference chains.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from coref.outputs.plots import FIGURES, plot_curves, plot_reliability
from coref.settings import ALL_SAMPLERS
from sampling.utils.atomic import atomic_open, atomic_write_text

__all__ = [
    "CLUSTER_COLUMNS",
    "CURVE_COLUMNS",
    "largest_clusters",
    "render_predict_md",
    "write_json",
    "write_csv",
    "format_summary",
    "render_report_md",
    "render_confidence_md",
    "sampler_items",
    "write_report",
    "loader_lines",
    "write_loader_log",
    "LOADER_LOG",
]

#: The file of an output directory that holds every item the loader skipped, repaired or noted.
LOADER_LOG = "loader.log"

_LOADER_KINDS = (("n_skipped", "skipped", "record(s) skipped by the loader"),
                 ("n_files_skipped", "files_skipped", "file(s) skipped"),
                 ("n_repairs", "repairs", "repair(s) of the input"),
                 ("n_files_ignored", "files_ignored", "folder entry(ies) ignored as not data"))


def loader_lines(data, *, log=LOADER_LOG, files=5, kinds=None):
    """One line per kind of loader event: its count and the files concerned (the details are in ``log``).

    Parameters
    ----------
    data : dict
        What :func:`coref.inputs.load_input` described (``n_skipped``, ``repairs_files``, ...).
    log : str or None
        Name of the log file holding the details (None: not mentioned).
    files : int
        Files named per line; the rest are counted.
    kinds : iterable of str or None
        Only these kinds (``"skipped"``, ``"files_skipped"``, ``"repairs"``,
        ``"files_ignored"``); None: all.

    Returns
    -------
    list of str
    """
    lines = []
    for count, name, label in _LOADER_KINDS:
        n = int(data.get(count) or 0)
        if not n or (kinds is not None and name not in kinds):
            continue
        fs = list(data.get(f"{name}_files") or [])
        where = ""
        if fs:
            where = " in " + ", ".join(fs[:files]) + (f" and {len(fs) - files} more file(s)" if len(fs) > files else "")
        lines.append(f"{n} {label}{where}" + (f" (details: {log})" if log else ""))
    return lines


def write_loader_log(od, lines):
    """Write ``lines`` (one per loader event) to :data:`LOADER_LOG` of the output ``od``, if there are any."""
    if lines:
        atomic_write_text(od.path(LOADER_LOG), "\n".join(lines) + "\n")

CLUSTER_COLUMNS = ["sampler", "fold", "block", "mention_id", "cluster_id", "gold", "scored"]
CURVE_COLUMNS = ["sampler", "sweep", "n_factor_evals", "b3_precision", "b3_recall", "b3_f1"]


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


def _fmt_int(v):
    return "-" if v is None else f"{int(v):,}"


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
        lines.append(f"the loader skipped {d['n_skipped']} unreadable records (details: {LOADER_LOG})")
    lines += loader_lines(d, kinds=("files_skipped", "repairs", "files_ignored"))
    return "\n".join(lines)


def render_report_md(metrics, curves):
    """The text of report.md (Markdown) for ``metrics`` and the sweep ``curves``."""
    s = metrics["settings"]
    d = metrics["data"]
    lines = [
        "# Author coreference: Racing-Normal Gibbs vs exact Gibbs",
        "",
        f"Data: `{d.get('path')}` (format `{d.get('format')}`): {d['n_mentions']} mentions in "
        f"{d['n_blocks']} blocks; {d.get('n_skipped', 0)} records skipped by the loader, "
        f"{d.get('n_repairs', 0)} repairs, {d.get('n_files_skipped', 0)} files skipped"
        + (f" (details: `{LOADER_LOG}`)." if any(d.get(k) for k, _, _ in _LOADER_KINDS) else "."),
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
             f"Gibbs {summary.get('gibbs_wall_s', 0.0):.1f} s; whole command {summary.get('elapsed_s', 0.0):.1f} s."
             + (f" Blocks of {m['big_block_min_n']:,} mentions or more are scored with the model's big-block weights "
                "(fitted on simulated blocks that large: no labeled block is)." if m.get("big_block_min_n") else ""),
             ""]
    if summary.get("sampling"):
        where = summary["sampling"].get("blocks_file")     # streamed runs list the blocks in their own file
        lines += [summary["sampling"]["text"] + " The sampler of each block and why: "
                  + (f"`{where}`." if where else "`sampling.blocks` in summary.json."), ""]
    if "n_old_mentions" in summary:
        lines += [f"Added {summary['n_new_mentions']} new mentions to {summary['n_old_mentions']} clustered ones: "
                  f"{summary['n_joined_existing']} joined existing clusters, {summary['n_new_clusters']} new "
                  f"clusters; {summary['n_blocks_touched']} existing blocks received mentions, "
                  f"{summary['n_blocks_new']} new blocks were clustered from scratch; "
                  f"existing cluster ids changed: {summary['n_old_ids_changed']}.", ""]
    for line in loader_lines(d):
        lines += [line + ".", ""]
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
