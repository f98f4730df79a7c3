"""Accuracy and confidence of ``coref fit`` + ``coref predict --confidence`` on names the model did not see.

Two protocols over the labeled AMiner sets ``aminer_na`` and ``aminer_dblp_dev`` (blocks = names):

* ``cv``: grouped K-fold cross-validation by block over both sets pooled (folds balanced by
  mention count, seeded): ``coref fit`` on K-1 folds, ``coref predict --confidence`` (its
  defaults) on the held-out fold;
* ``cross``: fit on one set, predict the other (both directions).

Each fit and prediction is the CLI as a user runs it (``python -m coref fit --data TRAIN.parquet
--model M --seed S``; ``python -m coref predict --data TEST.parquet --model M --out O
--confidence``), with ``PYTHONPATH`` = ``--code`` (a source tree with its kernels built), so the
code before and after a change can be measured with the same script. Block, gold and mention
ids are prefixed with the set's name (the two sets may share a name).

Figures (pooled over the held-out predictions of a protocol; the definitions of
``../shared/checks/confidence.py``): B3 precision / recall / F1; per confidence column, ECE over
10 equal-width bins, the share of wrong mentions among the 10% least confident (the review
queue), coverage and accuracy of confidence >= 0.95. "Wrong": the mention's gold author is not
the majority gold author of its predicted cluster.

Usage::

    python benchmarks/scripts/coref_grouped_cv.py --code /work/wt-A --label after [--folds 5]
        [--protocols cv cross] [--seed 0] [--extra-train LABELED.parquet]

``--extra-train``: labeled mentions (e.g. ``coref synth --one-name``) added to every training
set, ids prefixed ``x:``; never predicted or scored.

writes ``benchmarks/results/coref_grouped_cv_<label>.json`` and a work directory of the fits
and predictions (``--work``, default ``/tmp/coref_grouped_cv_<label>``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
SETS = {"na": ROOT / "data" / "aminer_na", "dev": ROOT / "data" / "aminer_dblp_dev"}
SHARED_DEV = ROOT.parent / "shared" / "data" / "coref" / "aminer_dblp_dev"


def load_sets():
    """Both sets as one DataFrame, ids prefixed with the set's short name (column ``set``)."""
    sys.path.insert(0, str(ROOT))
    import coref

    parts = []
    for name, path in SETS.items():
        if not path.exists() and name == "dev":
            path = SHARED_DEV
        df = coref.load_mentions(path)
        for c in ("mention_id", "block", "gold"):
            df[c] = df[c].map(lambda v, n=name: v if v is None or v is pd.NA else f"{n}:{v}")
        df["set"] = name
        parts.append(df)
    return pd.concat(parts, ignore_index=True)


def folds_of(df, k, seed):
    """block -> fold in 0..k-1: blocks in a seeded random order, each to the fold with fewest mentions."""
    sizes = df.groupby("block").size()
    rng = np.random.default_rng(seed)
    order = sizes.index[rng.permutation(len(sizes))]
    order = sorted(order, key=lambda b: -sizes[b])  # stable: ties keep the random order
    load = np.zeros(k)
    out = {}
    for b in order:
        f = int(np.argmin(load))
        out[b] = f
        load[f] += sizes[b]
    return out


def run(cmd, code, log):
    env = dict(os.environ, PYTHONPATH=str(code))
    t0 = time.time()
    with open(log, "w") as fh:
        r = subprocess.run([sys.executable, "-m", "coref", *cmd], env=env, stdout=fh, stderr=subprocess.STDOUT,
                           cwd="/tmp")
    if r.returncode:
        raise SystemExit(f"failed ({r.returncode}): coref {' '.join(cmd)}; see {log}")
    return time.time() - t0


def fit_predict(train, test, work, code, seed, extra=None):
    """Fit on ``train`` (+ ``extra``), predict ``test`` with --confidence; the prediction's clusters + confidence."""
    sys.path.insert(0, str(ROOT))
    from coref.io import write_mentions

    work.mkdir(parents=True, exist_ok=True)
    cols = [c for c in train.columns if c != "set"]
    if extra is not None:
        train = pd.concat([train, extra.reindex(columns=train.columns)], ignore_index=True)
    write_mentions(train[cols], work / "train.parquet")
    write_mentions(test[cols], work / "test.parquet")
    t_fit = run(["fit", "--data", str(work / "train.parquet"), "--model", str(work / "model"), "--seed", str(seed)],
                code, work / "fit.log")
    t_pred = run(["predict", "--data", str(work / "test.parquet"), "--model", str(work / "model"),
                  "--out", str(work / "pred"), "--confidence", "--quiet"], code, work / "predict.log")
    cl = pd.read_csv(work / "pred" / "clusters.csv", dtype=str, keep_default_na=False, na_values=[""])
    cf = pd.read_csv(work / "pred" / "confidence.csv", dtype={"mention_id": str})
    cl = cl.drop_duplicates("mention_id")
    m = cl.merge(cf.drop_duplicates("mention_id"), on="mention_id", how="left", suffixes=("", "_conf"))
    return m, {"fit_s": round(t_fit, 1), "predict_s": round(t_pred, 1)}


def figures(m):
    """B3 and the confidence figures of pooled predictions (``../shared/checks/confidence.py``)."""
    m = m[m["gold"].notna()].copy()
    m["p_lab"] = m["block"] + "|" + m["cluster_id"]
    m["g_lab"] = m["block"] + "|" + m["gold"]
    n_pg = m.groupby(["p_lab", "g_lab"])["mention_id"].transform("size")
    n_p = m.groupby("p_lab")["mention_id"].transform("size")
    n_g = m.groupby("g_lab")["mention_id"].transform("size")
    p, r = float((n_pg / n_p).mean()), float((n_pg / n_g).mean())
    maj = m.groupby("p_lab")["g_lab"].agg(lambda s: s.value_counts().index[0])
    m["correct"] = m["g_lab"] == m["p_lab"].map(maj)
    n_wrong = int((~m["correct"]).sum())
    out = {"n": int(len(m)), "b3_p": round(p, 4), "b3_r": round(r, 4), "b3_f1": round(2 * p * r / (p + r), 4),
           "n_wrong": n_wrong}
    for c in (c for c in ("confidence", "p_calibrated", "p") if c in m.columns):
        v = m[c].astype(float)
        if v.isna().any():
            out[c] = {"missing": int(v.isna().sum())}
            continue
        hi = v >= 0.95
        bins = np.minimum((v * 10).astype(int), 9)
        g = m.assign(v=v).groupby(bins).agg(n=("v", "size"), conf=("v", "mean"), acc=("correct", "mean"))
        ece = float((g["n"] * (g["conf"] - g["acc"]).abs()).sum() / g["n"].sum())
        k = max(1, int(0.1 * len(m)))
        low = m.assign(v=v).sort_values("v", kind="stable").head(k)
        out[c] = {"ece": round(ece, 4), "queue": round(int((~low["correct"]).sum()) / max(1, n_wrong), 4),
                  "cov95": round(float(hi.mean()), 4),
                  "acc95": round(float(m.loc[hi, "correct"].mean()) if hi.any() else float("nan"), 4)}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--code", default=str(ROOT), help="source tree whose coref is measured (PYTHONPATH)")
    ap.add_argument("--label", required=True, help="name of this run (e.g. before, after)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--protocols", nargs="+", default=["cv", "cross"], choices=["cv", "cross"])
    ap.add_argument("--work", default=None, help="work directory (default /tmp/coref_grouped_cv_<label>)")
    ap.add_argument("--extra-train", default=None, help="labeled mentions added to every training set")
    a = ap.parse_args(argv)
    # absolute: the runs execute in /tmp, where a relative --code (".") would name /tmp and
    # silently measure the installed coref instead of this tree
    a.code = str(Path(a.code).resolve())
    if not (Path(a.code) / "coref" / "__init__.py").is_file():
        ap.error(f"--code {a.code} holds no coref package")
    work = Path(a.work or f"/tmp/coref_grouped_cv_{a.label}")
    df = load_sets()
    extra = None
    if a.extra_train:
        import coref

        extra = coref.load_mentions(a.extra_train)
        for c in ("mention_id", "block", "gold"):
            extra[c] = extra[c].map(lambda v: v if v is None or v is pd.NA else f"x:{v}")
    result = {"label": a.label, "code": a.code, "folds": a.folds, "seed": a.seed,
              "commands": {"fit": "python -m coref fit --data TRAIN.parquet --model M --seed SEED",
                           "predict": "python -m coref predict --data TEST.parquet --model M --out O "
                                      "--confidence --quiet"},
              "n_mentions": {s: int((df["set"] == s).sum()) for s in SETS},
              "extra_train": a.extra_train}
    out_path = ROOT / "benchmarks" / "results" / f"coref_grouped_cv_{a.label}.json"
    if "cross" in a.protocols:
        for tr, te in (("na", "dev"), ("dev", "na")):
            m, t = fit_predict(df[df["set"] == tr], df[df["set"] == te], work / f"cross_{tr}_to_{te}", a.code, a.seed,
                                extra)
            result[f"cross_{tr}_to_{te}"] = {**figures(m), **t}
            print(f"cross {tr} -> {te}: {result[f'cross_{tr}_to_{te}']}", flush=True)
    if "cv" in a.protocols:
        fold = df["block"].map(folds_of(df, a.folds, a.seed))
        preds, times = [], []
        for k in range(a.folds):
            m, t = fit_predict(df[fold != k], df[fold == k], work / f"cv_{k}", a.code, a.seed, extra)
            preds.append(m.assign(set=m["block"].str.split(":").str[0]))
            times.append(t)
            print(f"cv fold {k}: {figures(m)} {t}", flush=True)
        allm = pd.concat(preds, ignore_index=True)
        result["cv"] = {**figures(allm), "per_set": {s: figures(allm[allm["set"] == s]) for s in SETS},
                        "times": times}
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()
