"""How the damping of the component terms changes accuracy on names never seen: a grid over K.

The factor damps the terms that compare two coauthor components A != B as wholes
(``comp_title_cos``, ``comp_venue_cos``, ``comp_affil_cos``, ``comp_year_gap``,
``comp_topic_cos``) by min(1, K / sqrt(|A| |B|)), K = ``COMPONENT_DAMPING`` (20).  This
script re-weights those five columns to other values of K (``0`` = no damping, ``-1`` =
1 / sqrt(|A| |B|) without a cap), fits a plain logistic theta on each training fold and
clusters each held-out block with annealed exact Gibbs from its all-pairs factor matrix
(numpy, 6 sweeps at temperature 1, then 4 at 0, from singletons). It is a harness: no shift
tuning, no block prior, no calibration (``coref_grouped_cv.py`` measures the full
pipeline); its purpose is the comparison of K side by side on the same folds, pairs and seeds.

It reads the folds of a ``coref_grouped_cv.py`` work folder (``cv_<k>/train.parquet``,
``test.parquet`` and ``model`` for the vocabulary) and prints B3 F1 over all held-out
mentions, over the ``dev:`` names, and for the blocks of >= 100 mentions::

    python benchmarks/scripts/coref_grouped_cv.py --code . --label now --protocols cv
    python -P benchmarks/scripts/coref_damping_grid.py /tmp/coref_grouped_cv_now --K 0 8 20 30 -1

Measured 2026-11-27 (`--K 0 8 12 20 30 -1` on the seed-0 folds of both sets, after the damping
landed; B3 F1 over all held-out mentions / dev names / blocks of >= 100 mentions):
K = 0 (none) 0.8817 / 0.8852 / 0.8611, 8: 0.8827 / 0.8947 / 0.8661, 12: 0.8810 / 0.8939 / 0.8650,
20: 0.8841 / 0.8974 / 0.8687, 30: 0.8844 / 0.8965 / 0.8673, uncapped: 0.8649 / 0.8907 / 0.8448.
Differences below ~0.002 (all) and ~0.004 (dev) are within the harness's noise: a float
rounding in F changes the path of the temperature-1 sweeps.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression

from coref.encoding.blocks import encode_mentions
from coref.evaluate import b3
from coref.factors.names import COMPONENT_DAMPING, FEATURE_NAMES, N_FEATURES
from coref.model import load_model
from coref.model.pairwise import labeled_pairs
from sampling.utils.kernels import load_kernel

_factors = load_kernel("coref.factors._factors")
COMP_TERMS = [FEATURE_NAMES.index(f) for f in
              ("comp_title_cos", "comp_venue_cos", "comp_affil_cos", "comp_year_gap", "comp_topic_cos")]


def damping(size_a, size_b, K):
    """min(1, K / sqrt(|A| |B|)); K = 0: 1 (off); K = -1: 1 / sqrt(|A| |B|) (no cap)."""
    g = np.sqrt(size_a * size_b)
    if K == 0:
        return np.ones_like(g)
    if K < 0:
        return 1.0 / g
    return np.minimum(1.0, K / g)


def features(enc, I, J, K):
    """phi of pairs (I, J) with the component terms damped by ``K`` instead of ``COMPONENT_DAMPING``."""
    X = np.empty((len(I), N_FEATURES))
    _factors.pair_features(enc, I, J, X)
    comp = np.asarray(enc.comp1, dtype=np.int64)[: enc.n]
    size = np.bincount(comp, minlength=enc.n).astype(float)
    other = comp[I] != comp[J]
    a, b = size[comp[I]][other], size[comp[J]][other]
    X[np.ix_(other, COMP_TERMS)] *= (damping(a, b, K) / damping(a, b, COMPONENT_DAMPING))[:, None]
    return X


def fit_theta(X, y, C):
    """Plain L2 logistic regression on standardised features (as ``PairwiseModel`` fits theta)."""
    mu, sd = X.mean(0), X.std(0)
    sd[sd < 1e-6] = 1.0
    lr = LogisticRegression(C=C, max_iter=3000).fit((X - mu) / sd, y)
    theta = lr.coef_[0] / sd
    return theta, float(lr.intercept_[0] - np.sum(lr.coef_[0] * mu / sd))


def gibbs(F, seed, temps=(1.0,) * 6 + (0.0,) * 4):
    """Annealed exact Gibbs over clusterings from singletons, on an all-pairs factor matrix (numpy)."""
    rng = np.random.default_rng(seed)
    n = len(F)
    lab = np.arange(n)
    for T in temps:
        for i in rng.permutation(n):
            w = F[i].copy()
            w[i] = 0.0
            sums = np.bincount(lab, weights=w, minlength=n)
            cnt = np.bincount(lab, minlength=n)
            cnt[lab[i]] -= 1
            cand = np.flatnonzero(cnt > 0)
            cand = np.append(cand, np.flatnonzero(cnt == 0)[0])
            score = np.append(sums[cand[:-1]], 0.0)
            if T == 0.0:
                k = int(np.argmax(score))
            else:
                p = np.exp((score - score.max()) / T)
                k = int(rng.choice(len(p), p=p / p.sum()))
            lab[i] = cand[k]
    return lab


def fold_pairs(fold):
    """A fold's model (for its vocabulary), held-out mentions and labeled training pairs [(enc, I, J, y)]
    (``labeled_pairs`` of every training block, subsampled as ``PairwiseModel`` does, seed 0)."""
    model, _ = load_model(fold / "model")
    train, test = pd.read_parquet(fold / "train.parquet"), pd.read_parquet(fold / "test.parquet")
    gen = np.random.default_rng(0)
    pairs = []
    for _, sub in train.groupby("block", sort=True):
        enc = encode_mentions(sub, model.vocabulary_)
        gold = np.array([None if pd.isna(g) else str(g) for g in sub["gold"]], dtype=object)
        I, J, y = labeled_pairs(enc, gold, max_pairs=int(model.max_pairs_per_block), rng=gen)
        if len(I):
            pairs.append((enc, I, J, y))
    return model, test, pairs


def cluster_heldout(model, test, variants, scores):
    """Annealed exact Gibbs on every held-out block for each variant: {variant: [DataFrame(block, label, gold)]}.

    ``scores(variant, enc, I, J)`` gives the factors of the pairs (I, J) of a block (all i < j)."""
    rows = {v: [] for v in variants}
    for block, sub in test.groupby("block", sort=True):
        sub = sub.sort_values("mention_id").reset_index(drop=True)
        enc = model.encode(sub)
        I, J = (a.astype(np.int64) for a in np.triu_indices(enc.n, 1))
        for v in variants:
            lab = np.zeros(enc.n, np.int64)
            if enc.n > 1:
                F = np.zeros((enc.n, enc.n))
                F[I, J] = scores(v, enc, I, J)
                F[J, I] = F[I, J]
                lab = gibbs(F, seed=0)
            rows[v].append(pd.DataFrame({"block": block, "label": lab, "gold": sub["gold"].to_numpy()}))
    return rows


def run_fold(fold, grid, C):
    model, test, pairs = fold_pairs(fold)
    thetas = {}
    for K in grid:
        X = np.vstack([features(enc, I, J, K) for enc, I, J, _ in pairs])
        thetas[K] = fit_theta(X, np.concatenate([p[3] for p in pairs]), C)

    def scores(K, enc, I, J):
        theta, b = thetas[K]
        return features(enc, I, J, K) @ theta + b

    return cluster_heldout(model, test, grid, scores)


def f1(frame):
    """Pooled B3 F1 of the labeled rows (NaN when there are none)."""
    frame = frame[frame["gold"].notna()]
    if frame.empty:
        return float("nan")
    pred = frame["block"].astype(str) + "|" + frame["label"].astype(str)
    return float(b3(pd.Series(pred.to_numpy()), pd.Series(frame["gold"].to_numpy())).f1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("work", help="a coref_grouped_cv.py work folder with cv_<k>/ folds")
    ap.add_argument("--K", type=float, nargs="+", default=[0, 20], help="damping constants (0: off, -1: no cap)")
    ap.add_argument("--C", type=float, default=0.1, help="inverse L2 strength of the logistic fit")
    ap.add_argument("--out", default=None, help="JSON file for the results")
    a = ap.parse_args(argv)
    folds = sorted(Path(a.work).glob("cv_*"))
    if not folds:
        ap.error(f"no cv_<k> folds in {a.work}")
    rows = {K: [] for K in a.K}
    for fold in folds:
        for K, fr in run_fold(fold, a.K, a.C).items():
            rows[K].extend(fr)
        print(f"{fold.name} done", flush=True)
    result = {}
    for K, fr in rows.items():
        allm = pd.concat(fr, ignore_index=True)
        size = allm.groupby("block")["block"].transform("size")
        result[K] = {"all": f1(allm), "dev": f1(allm[allm["block"].str.startswith("dev:")]),
                     "blocks_ge_100": f1(allm[size >= 100])}
        print(f"K = {K:g}: B3 F1 all {result[K]['all']:.4f}, dev names {result[K]['dev']:.4f}, "
              f"blocks >= 100 {result[K]['blocks_ge_100']:.4f}", flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps({str(k): v for k, v in result.items()}, indent=1))


if __name__ == "__main__":
    main()
