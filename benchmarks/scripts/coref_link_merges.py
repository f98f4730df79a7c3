"""B3 of `coref predict` with the greedy link merges off and at several margins, side by side in one process.

The merges (``coref.gibbs.link_merges``, after annealing in blocks sampled from a cached factor matrix) join two
clusters whose factors average more than a margin per pair (``coref.gibbs.block.LINK_MERGE_MIN_MEAN``). This
script re-predicts, for each setting, (a) the held-out folds of a grouped-CV work directory written by
``coref_grouped_cv.py`` (each fold with the model fitted on the other folds; AMiner names never seen) and (b) an
optional synthetic corpus (``coref synth``), and prints B3 per setting.

Usage::

    python benchmarks/scripts/coref_grouped_cv.py --code . --label now --protocols cv     # the folds and models
    coref synth --mentions 100000 --seed 0 --out /tmp/s100k.parquet
    python -P benchmarks/scripts/coref_link_merges.py /tmp/coref_grouped_cv_now --synthetic /tmp/s100k.parquet \\
        --margins off 0 0.5 1 2

Measured 2026-11-27 (shipped model of that day's code, seed 0): see ``coref.gibbs.block.LINK_MERGE_MIN_MEAN``.
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pandas as pd

import coref.gibbs.block as block
from coref.cli import main as coref_main
from coref.evaluate import b3


def _scores(frames):
    """B3 (precision, recall, F1) of predicted ``clusters.csv`` frames, pooled, labels made unique per block."""
    m = pd.concat(frames, ignore_index=True)
    m = m[m["gold"].notna()]
    r = b3(pd.Series((m["block"] + "|" + m["cluster_id"]).to_numpy(), index=m["mention_id"]),
           pd.Series((m["block"] + "|" + m["gold"]).to_numpy(), index=m["mention_id"]))
    return r.precision, r.recall, r.f1


def _predict(data, model, out):
    args = ["predict", "--data", str(data), "--out", str(out), "--quiet"]
    if model is not None:
        args[3:3] = ["--model", str(model)]
    coref_main(args)
    return pd.read_csv(out / "clusters.csv", dtype=str, keep_default_na=False, na_values=[""]).drop_duplicates(
        "mention_id")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cv_work", help="work directory of coref_grouped_cv.py (its cv_<k>/ folders)")
    ap.add_argument("--synthetic", default=None, help="a labeled synthetic corpus, predicted with the shipped model")
    ap.add_argument("--margins", nargs="+", default=["off", "0", "1"], help="'off' or nats per pair")
    a = ap.parse_args(argv)
    folds = sorted(Path(a.cv_work).glob("cv_*"))
    if not folds:
        ap.error(f"no cv_<k> folders in {a.cv_work}")
    n_min, mean0 = block.LINK_MERGE_MIN_N, block.LINK_MERGE_MIN_MEAN
    with tempfile.TemporaryDirectory() as tmp:
        for k, margin in enumerate(a.margins):
            block.LINK_MERGE_MIN_N = 2**62 if margin == "off" else n_min
            block.LINK_MERGE_MIN_MEAN = mean0 if margin == "off" else float(margin)
            cv = [_predict(f / "test.parquet", f / "model", Path(tmp) / f"{k}_{f.name}") for f in folds]
            allm = pd.concat(cv, ignore_index=True)
            dev = allm[allm["block"].str.startswith("dev:")]
            line = "margin %-4s CV B3 P %.4f R %.4f F1 %.4f" % ((margin,) + _scores([allm]))
            if len(dev):
                line += " | dev names F1 %.4f" % _scores([dev])[2]
            if a.synthetic:
                line += " | synthetic P %.4f R %.4f F1 %.4f" % _scores(
                    [_predict(a.synthetic, None, Path(tmp) / f"{k}_synth")])
            print(line, flush=True)
    block.LINK_MERGE_MIN_N, block.LINK_MERGE_MIN_MEAN = n_min, mean0


if __name__ == "__main__":
    main()
