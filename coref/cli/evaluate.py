"""``coref evaluate``: score a predicted clustering (CSV or Parquet) against a gold one: B3 and pairwise."""
from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd

from coref.evaluate import evaluate_clusters

__all__ = ["EvaluateInputError", "read_clusters", "read_parquet_text", "add_arguments", "main"]


class EvaluateInputError(Exception):
    """A prediction or gold file ``coref evaluate`` cannot score (reported with exit status 2)."""


def read_parquet_text(path):
    """The id and label columns of a Parquet table as strings (NA kept), like the CSV reader."""
    table = pd.read_parquet(path)
    keep = [c for c in ("mention_id", "sampler", "cluster_id", "gold") if c in table.columns]
    out = table[keep].copy()
    for c in keep:
        out[c] = out[c].astype("string").astype(object).where(out[c].notna(), None)
    return out


def read_clusters(path, role, columns, sampler=None):
    """Series mention_id -> the first of ``columns`` present, and that column's name.

    A ``sampler`` column (``coref run``'s clusters.csv holds one row per sampler and
    mention) is filtered to ``sampler`` (default: "racing" when present, else the only one).
    """
    try:
        if str(path).lower().endswith(".parquet"):  # e.g. a mention table with its gold column
            table = read_parquet_text(path)
        else:
            table = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    except FileNotFoundError:
        raise EvaluateInputError(f"{role} file not found: {path}") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise EvaluateInputError(f"{path}: cannot read {role} CSV: {exc}") from None
    except (OSError, ValueError) as exc:  # pyarrow: not a Parquet file, truncated, ...
        raise EvaluateInputError(f"{path}: cannot read {role} Parquet file: {exc}") from None
    if "mention_id" not in table.columns:
        raise EvaluateInputError(f"{path}: the {role} CSV needs a 'mention_id' column; got {list(table.columns)}")
    used = None
    if "sampler" in table.columns:
        present = sorted(table["sampler"].dropna().unique())
        if sampler is None:
            sampler = "racing" if "racing" in present else (present[0] if len(present) == 1 else None)
            if sampler is None:
                raise EvaluateInputError(f"{path}: rows of several samplers {present}; pick one with --sampler")
        if sampler not in present:
            raise EvaluateInputError(f"{path}: no rows of sampler {sampler!r} (samplers in the file: {present})")
        table = table[table["sampler"] == sampler]
        used = sampler
    col = next((c for c in columns if c in table.columns), None)
    if col is None:
        raise EvaluateInputError(f"{path}: the {role} CSV needs a {' or '.join(repr(c) for c in columns)} column; "
                        f"got {list(table.columns)}")
    ids = table["mention_id"]
    if ids.isna().any():
        raise EvaluateInputError(f"{path}: {int(ids.isna().sum())} row(s) have an empty mention_id "
                        f"(first at line {int(np.flatnonzero(ids.isna().to_numpy())[0]) + 2})")
    if ids.duplicated().any():
        raise EvaluateInputError(f"{path}: duplicate mention_id(s) in the {role} CSV, e.g. "
                        f"{ids[ids.duplicated()].head(3).tolist()}")
    series = pd.Series(table[col].to_numpy(), index=pd.Index(ids, name="mention_id"), name=col).astype("string")
    return series, col, used


def add_arguments(parser):
    """Register the ``coref evaluate`` arguments."""
    parser.add_argument("pred", metavar="PRED.csv",
                        help="predicted clusters: columns mention_id, cluster_id (a coref clusters.csv works)")
    parser.add_argument("gold", metavar="GOLD.csv",
                        help="gold clusters: mention_id and gold (preferred) or cluster_id; empty = unlabelled")
    parser.add_argument("--sampler", default=None,
                        help="rows of this sampler when a file has a sampler column (default: racing)")
    parser.add_argument("--json", action="store_true", help="print the metrics as one JSON object")


def main(args):
    """Run ``coref evaluate``; returns the exit status (0 ok, 2 bad input).

    The gold file's ``gold`` column is scored when present (a clusters.csv of this
    project carries both its prediction, ``cluster_id``, and the gold passed through);
    ``cluster_id`` only when there is no ``gold`` column. The output says which.
    """
    sampler = getattr(args, "sampler", None)
    try:
        pred, _, pred_sampler = read_clusters(args.pred, "prediction", ("cluster_id",), sampler)
        gold, gold_col, _ = read_clusters(args.gold, "gold", ("gold", "cluster_id"), sampler)
        missing = gold.index.difference(pred.index)
        if len(missing):
            raise EvaluateInputError(f"{args.pred}: {len(missing)} mention_id(s) of the gold file have no predicted cluster, "
                            f"e.g. {missing[:3].tolist()}")
        if pred.isna().any():
            raise EvaluateInputError(f"{args.pred}: {int(pred.isna().sum())} mention(s) have an empty cluster_id")
        extra = pred.index.difference(gold.index)
        if len(extra):
            print(f"note: {len(extra)} predicted mention(s) are not in the gold file; scored as unlabelled",
                  file=sys.stderr)
        gold = gold.reindex(pred.index)
        if gold.isna().all():
            raise EvaluateInputError(f"{args.gold}: no labelled mention in common with {args.pred} (column {gold_col!r})")
        metrics = evaluate_clusters(pred, gold)
    except EvaluateInputError as exc:
        print(f"coref evaluate: error: {exc}", file=sys.stderr)
        return 2
    metrics["gold_column"] = gold_col
    metrics["sampler"] = pred_sampler
    if args.json:
        print(json.dumps(metrics, indent=2))
    else:
        print(f"scored: predicted 'cluster_id' of {args.pred}"
              + (f" (sampler {pred_sampler})" if pred_sampler else "")
              + f" against gold column {gold_col!r} of {args.gold}")
        print(f"mentions scored: {metrics['n_mentions']}")
        for kind in ("b3", "pairwise"):
            print(f"{kind:9s} precision={metrics[kind + '_precision']:.4f} recall={metrics[kind + '_recall']:.4f} "
                  f"f1={metrics[kind + '_f1']:.4f}")
    return 0
