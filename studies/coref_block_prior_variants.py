"""Estimators of a block's prior shift d_b, compared under the grouped k-fold protocol.

``PairwiseModel(block_prior="pcc")`` adds to every factor of a block
d_b = logit(r_b) - logit(r_train), with r_b the mean of sigmoid(f) over the block's pairs and
r_train the same mean over the training blocks' pairs (one step of the EM of Saerens,
Latinne & Decaestecker 2002). This script compares that step with other choices of d_b, each
computed from the fold's default model (the same theta, intercept and rate pairs):

=============  ===============================================================================
 none          d_b = 0 (the pooled intercept)
 pcc           the default: one EM step, clipped to +-3
 em            Saerens' EM iterated to convergence, clipped to +-3
 pac           probabilistic adjusted count (Bella et al. 2010): r_b replaced by
               (r_b - fpr) / (tpr - fpr), tpr / fpr the mean probabilities of the
               co-referent / other labeled training pairs; clipped to +-3
 alpha=A       A times the pcc step, clipped to +-3 (+-4 for A >= 2)
=============  ===============================================================================

Each held-out block is clustered alone (racing Gibbs, seed 0) with the intercept bias_ + d_b;
B3 is computed within each block and pooled (so S2AND Qian's "none" row is 0.8133, where
``coref run`` pools over blocks and gives 0.8084; see ``coref_shift_oracle.py``).

    PYTHONPATH=$PWD python studies/coref_block_prior_variants.py --sets aminer,s2and_qian,han_dblp \\
        [--variants none,pcc,em,pac,alpha=0.7,alpha=1.5,alpha=2]

Results: git history: benchmarks/measured/coref_block_prior_2026-11-24.txt.
"""
from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "scripts"))  # bench_coref_accuracy.SETS
from bench_coref_accuracy import SETS  # noqa: E402
from coref_shift_oracle import b3_sums, labeled_sets, pooled  # noqa: E402


def block_rate(model, enc):
    """r_b: the mean of sigmoid(f) over the block's rate pairs, f at the pooled intercept."""
    from scipy.special import expit

    return float(np.mean(expit(model.rate_factors(enc))))


def em_shift(model, enc, iters=500):
    """Saerens et al.'s EM for the block's prior, from the training prior, to convergence."""
    from scipy.special import expit, logit

    f = model.rate_factors(enc)
    d = 0.0
    for _ in range(iters):
        r = min(max(float(np.mean(expit(f + d))), 1e-6), 1 - 1e-6)
        new = float(logit(r) - logit(model.pair_rate_))
        if abs(new - d) < 1e-6:
            return new
        d = new
    return d


def shift(variant, model, enc, tpr_fpr):
    """d_b of one variant for the block ``enc``."""
    from scipy.special import logit

    if variant == "none" or enc.n < 2:
        return 0.0
    if variant == "pcc":
        return model.block_shift(enc)
    if variant == "em":
        return float(np.clip(em_shift(model, enc), -3, 3))
    if variant == "pac":
        tpr, fpr = tpr_fpr
        adj = np.clip((block_rate(model, enc) - fpr) / (tpr - fpr), 1e-3, 1 - 1e-3)
        ref = np.clip((model.pair_rate_ - fpr) / (tpr - fpr), 1e-3, 1 - 1e-3)
        return float(np.clip(logit(adj) - logit(ref), -3, 3))
    if variant.startswith("alpha="):
        a = float(variant.split("=", 1)[1])
        raw = logit(block_rate(model, enc)) - logit(model.pair_rate_)
        cap = 4.0 if a >= 2 else 3.0
        return float(np.clip(a * raw, -cap, cap))
    raise ValueError(f"unknown variant {variant!r}")


def run(df, folds, variants, seed=0):
    """Pooled B3 rows (variant, fold, block, d, P, R, n)."""
    import pandas as pd
    from scipy.special import expit
    from sklearn.model_selection import GroupKFold

    from coref.gibbs import GibbsCoref
    from coref.inference import single_thread
    from coref.model import PairwiseModel

    rows = []
    for k, (tr, te) in enumerate(GroupKFold(n_splits=folds).split(np.zeros(len(df)), groups=df["block"].to_numpy())):
        train, test = df.iloc[tr], df.iloc[te]
        with single_thread():
            model = PairwiseModel().fit(train)
        tpr_fpr = None
        if "pac" in variants:
            X, y = model._pairs(train, model.vocabulary_, np.random.default_rng(0))
            p = expit(X @ model.theta_ + model.bias_)
            tpr_fpr = (float(p[y == 1].mean()), float(p[y == 0].mean()))
        for b, idx in test.groupby("block").indices.items():
            blk = test.iloc[idx].drop(columns=["gold"])
            gold = test["gold"].to_numpy()[idx]
            enc = model.encode(blk)
            for v in variants:
                d = shift(v, model, enc, tpr_fpr)
                m = copy.deepcopy(model)
                m.block_prior, m.bias_ = "none", model.bias_ + d
                g = GibbsCoref(m, sampler="racing", rng=seed, record_history=False).fit(blk)
                pred = g.clusters_.reindex(blk["mention_id"].astype(str)).to_numpy()
                P, R, n = b3_sums(pred, gold)
                rows.append({"variant": v, "fold": k, "block": b, "d": d, "P": P, "R": R, "n": n})
        print(f"  fold {k + 1}/{folds} done", flush=True)
    return pd.DataFrame(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="aminer", help=f"comma-separated subset of {','.join(SETS)}")
    ap.add_argument("--variants", default="none,pcc,em,pac")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for v in variants:
        if v not in ("none", "pcc", "em", "pac") and not v.startswith("alpha="):
            ap.error(f"unknown variant {v!r}")
    for _, df, folds in labeled_sets(ap, args.sets):
        rows = run(df, folds, variants, seed=args.seed)
        for v in variants:
            sel = rows[rows["variant"] == v]
            print(f"  {v:10s} B3 P %.4f R %.4f F1 %.4f   blocks at the cap: %d" % (
                pooled(sel) + (int((sel["d"].abs() >= 3 - 1e-12).sum()),)))


if __name__ == "__main__":
    main()
