"""Experiment: structured (clustering-level) training of theta, against the pairwise logistic fit.

Issue 12's error analysis says the remaining errors are model errors: the pairwise CRF scores
its own, split clustering above the gold one.  The logistic fit of theta never looks at
clusterings.  This script fine-tunes theta and the bias the way SampleRank-style trainers of
this model family do (Wick et al. 2011; Singh et al. 2012 train their pairwise coref CRF so):
an averaged structured perceptron whose inference is the MAP clustering the product uses.

For each fold of the grouped k-fold protocol of ``coref run`` (``coref.jobs.run``):
start from the fold's logistic model; for every training block compute all pair features
phi(i, j) once; then for ``--epochs`` passes over the training blocks in random order:
cluster the block by annealed exact Gibbs from its factor matrix F = phi theta + b (the
kernel's cached-matrix mode, ``fmat_mode=2``), optionally loss-augmented (+``--margin`` on
pairs of different gold authors, -``--margin`` on pairs of one author), and move
(theta, b) by ``--lr`` (sum of phi over the gold's within-cluster pairs - the same sum over the
predicted ones) / (pairs in the block), in standardised feature units (each coordinate divided by the
variance of its feature over the training pairs).  The averaged (theta, b) is then scored on
the held-out blocks with racing Gibbs, as ``coref run`` scores the logistic model.

Usage::

    PYTHONPATH=$PWD python -P studies/coref_structured.py [--set aminer] [--epochs 10]
        [--lr 0.05] [--margin 0.0] [--seed 0]

Not run by the tests; an experiment, not the product.
"""
from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "scripts"))  # bench_coref_accuracy.SETS
from bench_coref_accuracy import SETS  # noqa: E402


def _block_data(model, df):
    """Per labeled block: (encoding, gold codes, I, J, phi of every pair i < j)."""
    out = []
    for _, sub in df.groupby("block", sort=True):
        sub = sub.iloc[np.argsort(sub["mention_id"].astype(str).to_numpy(dtype=object), kind="stable")]
        if sub["gold"].notna().sum() < 2 or len(sub) < 2:
            continue
        enc = model.encode(sub)
        gold = pd.factorize(sub["gold"].astype(object).fillna("__none__").to_numpy())[0]
        I, J = np.triu_indices(len(sub), 1)
        phi = model.pair_features(enc, I, J)
        out.append((enc, gold, I.astype(np.int64), J.astype(np.int64), phi))
    return out


def _map(enc, F_pairs, I, J, theta, bias, seed):
    """Annealed exact Gibbs MAP labels of one block from the pair factors F_pairs (i < j)."""
    from coref.gibbs import _gibbs
    from coref.gibbs import bound_table, temperature_schedule

    n = enc.n
    F = np.zeros((n, n))
    F[I, J] = F_pairs
    F[J, I] = F_pairs
    temps = temperature_schedule(30, 1.0, 0.05)
    labels = np.arange(n, dtype=np.int64)
    size = np.ones(n, np.int64)
    state = np.random.default_rng(seed).integers(1, 2**63, size=4).astype(np.uint64)
    _gibbs.anneal(enc, theta, bias, labels, size, np.arange(n, dtype=np.int64), 1.0 / temps,
                  (temps <= 0.2).astype(np.int8), 3, 0, 3, 0, np.full(n, -np.inf), bound_table(0.05, n + 1),
                  state, np.zeros((0, n), np.int64), np.zeros(len(temps), np.int64), F, 2)
    return labels


VAR_FLOOR = 1e-2


def structured_fit(model, blocks, *, epochs, lr, margin, seed, scale="var"):
    """Averaged perceptron over clusterings, started at the model's (theta, bias)."""
    gen = np.random.default_rng(seed)
    theta = np.array(model.theta_, dtype=float)
    bias = float(model.bias_)
    allphi = np.concatenate([b[4] for b in blocks])
    var = allphi.var(axis=0)
    var = np.maximum(var, float(VAR_FLOOR)) if scale == "var" else np.ones_like(var)
    avg_t, avg_b, k = np.zeros_like(theta), 0.0, 0
    for ep in range(epochs):
        n_err = 0
        for bi in gen.permutation(len(blocks)):
            enc, gold, I, J, phi = blocks[bi]
            same_g = gold[I] == gold[J]
            F = phi @ theta + bias
            if margin:
                F = F + np.where(same_g, -margin, margin)
            lab = _map(enc, F, I, J, theta, bias, int(gen.integers(2**31)))
            same_p = lab[I] == lab[J]
            diff = same_g != same_p
            if diff.any():
                n_err += 1
                d_phi = phi[same_g].sum(axis=0) - phi[same_p].sum(axis=0)
                d_b = float(same_g.sum() - same_p.sum())
                n_pairs = len(I)
                theta += lr * d_phi / var / n_pairs
                bias += lr * d_b / n_pairs
            avg_t += theta
            avg_b += bias
            k += 1
        print(f"    epoch {ep + 1}: {n_err} of {len(blocks)} training blocks not at gold", flush=True)
    out = copy.deepcopy(model)
    out.theta_ = np.ascontiguousarray(avg_t / k)
    out.bias_ = float(avg_b / k)
    out.block_prior = "none"   # the perceptron fits one intercept for every block (its figures predate block priors)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", default="aminer", choices=sorted(SETS))
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--margin", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale", choices=("var", "none"), default="var",
                    help="divide each coordinate's step by its feature's variance (floor VAR_FLOOR) or not")
    args = ap.parse_args(argv)
    import coref
    from coref.evaluate import b3
    from coref.gibbs import GibbsCoref
    from coref.jobs.folds import assign_folds, fit_fold_model as _fit_fold_model

    path, fmt, folds = SETS[args.set]
    df = coref.load_mentions(str(path), format=fmt)
    df = df[0] if isinstance(df, tuple) else df
    df = df[df["gold"].notna()].reset_index(drop=True)
    fold_of, labeled = assign_folds(df, folds)
    df["_fold"] = df["block"].map(fold_of).astype(int)
    preds = {"logistic": [], "structured": []}
    t0 = time.perf_counter()
    for f in range(folds):
        model, _ = _fit_fold_model(df, labeled, f)
        train = df[(df["_fold"] != f)].drop(columns="_fold")
        test = df[df["_fold"] == f].drop(columns="_fold").reset_index(drop=True)
        blocks = _block_data(model, train)
        tuned = structured_fit(model, blocks, epochs=args.epochs, lr=args.lr, margin=args.margin,
                               seed=args.seed + f, scale=args.scale)
        for name, m in (("logistic", model), ("structured", tuned)):
            g = GibbsCoref(m, sampler="racing", rng=args.seed, record_history=False).fit(test.drop(columns="gold"))
            preds[name].append(pd.DataFrame({"pred": g.clusters_.reindex(test["mention_id"].astype(str)).to_numpy(),
                                             "gold": test["gold"].astype(str).to_numpy(),
                                             "mention_id": test["mention_id"].astype(str).to_numpy()}))
        print(f"  fold {f + 1}/{folds} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    for name, parts in preds.items():
        p = pd.concat(parts, ignore_index=True).set_index("mention_id")
        r = b3(p["pred"], p["gold"])
        print(f"{args.set} {name:10s} B3 P {r.precision:.4f} R {r.recall:.4f} F1 {r.f1:.4f}")


if __name__ == "__main__":
    main()
