"""How much could a per-block prior gain?  B3 with the intercept shifted per block, best shift by oracle.

Issue 12's error analysis (``coref_errors.py --energy``) says almost every remaining error is a
model error: the pairwise CRF scores its own, split clustering above the gold one. This
benchmark asks whether the errors are in the *level* of the factors of a block (its prior
odds that two mentions are one author: "Robert Schreiber" is one person, "Lei Wang" a hundred)
rather than in their ranking. For each fold of the grouped k-fold protocol of
``bench_coref_accuracy.py`` it fits the default model on the training blocks, then clusters each
held-out block with racing Gibbs once per shift d of the intercept (f = theta . phi + b + d), and
reports pooled B3 per shift and with the best shift of each block chosen with its gold labels
(an oracle: an upper bound of what any per-block prior can gain, inflated a little by choosing
the best of several runs).

With ``--learn`` it also predicts each held-out block's shift from unsupervised block
statistics (block size, coauthor components per mention, title / venue / affiliation coherence,
share of mentions with coauthors, distinct name spellings per mention) by a ridge regression
fitted on the other folds' oracle shifts, and reports the B3 of those shifts.

B3 here is computed within each block and then pooled. ``coref run`` (and so
``bench_coref_accuracy.py``) pools B3 over all scored mentions at once: a gold author whose
mentions fall into two blocks counts there as missed merges that no within-block clustering
can make.

- On S2AND Qian, 24 gold clusters (437 mentions) span more than one block. That is why this
  script's shift-0 row is 0.8133 while ``coref run`` gives 0.8084. Precision is the same
  (0.8568); recall is 0.7740 here and 0.7652 there. Measured 2026-11-24 with
  ``shift_rows(df, 5, grid=(0.0,))``.
- AMiner and Han DBLP have no such cluster, and there the two agree exactly.

The models are fitted with ``block_prior="none"`` (one intercept for every block), the default
before 2026-11-24's ``block_prior="pcc"``: the oracle bounds what a per-block prior can gain, and
``bench_coref_accuracy.py`` measures what ``"pcc"`` gains.

Theta is fitted with one BLAS thread, as ``coref run`` fits it. With the default threads it
differed by 1e-14..1e-10; that did not change the Qian figure above.

Usage::

    PYTHONPATH=$PWD python -P studies/coref_shift_oracle.py [--sets aminer,s2and_qian] [--learn]
"""
from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "scripts"))  # bench_coref_accuracy.SETS
from bench_coref_accuracy import SETS  # noqa: E402

GRID = (-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0)


def b3_sums(pred, gold):
    """Sums over the mentions of one block of B3 precision and recall, and the mention count."""
    p = pd.DataFrame({"p": pred, "g": gold})
    inter = p.groupby(["p", "g"])["p"].transform("size").to_numpy()
    prec = inter / p.groupby("p")["p"].transform("size").to_numpy()
    rec = inter / p.groupby("g")["g"].transform("size").to_numpy()
    return float(prec.sum()), float(rec.sum()), len(p)


def pooled(rows):
    """Pooled B3 precision, recall and F1 of per-block rows with columns P, R, n."""
    n = rows["n"].sum()
    p, r = rows["P"].sum() / n, rows["R"].sum() / n
    return p, r, 2 * p * r / (p + r)


def shift_rows(df, folds, grid=GRID, seed=0):
    """One row per (held-out block, shift): fold, block, shift, P, R, n (B3 sums)."""
    from sklearn.model_selection import GroupKFold

    from coref.gibbs import GibbsCoref
    from coref.inference import single_thread
    from coref.model import PairwiseModel

    rows = []
    splits = GroupKFold(n_splits=folds).split(np.zeros(len(df)), groups=df["block"].to_numpy())
    for k, (tr, te) in enumerate(splits):
        test = df.iloc[te].reset_index(drop=True)
        with single_thread():       # one BLAS thread, as coref run fits: theta bit for bit the same
            # the pooled intercept (no block prior): the oracle measures what any per-block
            # prior could gain over it; PairwiseModel's block_prior="pcc" is one such prior
            model = PairwiseModel(block_prior="none").fit(df.iloc[tr])
        gold = test["gold"].to_numpy()
        blocks = test.groupby("block").indices
        for d in grid:
            shifted = copy.deepcopy(model)
            shifted.bias_ = model.bias_ + d
            g = GibbsCoref(shifted, sampler="racing", rng=seed, record_history=False).fit(test.drop(columns=["gold"]))
            pred = g.clusters_.reindex(test["mention_id"].astype(str)).to_numpy()
            for b, idx in blocks.items():
                P, R, n = b3_sums(pred[idx], gold[idx])
                rows.append({"fold": k, "block": b, "shift": d, "P": P, "R": R, "n": n})
        print(f"  fold {k + 1}/{folds} done", flush=True)
    return pd.DataFrame(rows)


def block_stats(df):
    """Unsupervised statistics of each block (DataFrame indexed by block)."""
    from coref.encoding.vocabulary import Vocabulary
    from coref.encoding.blocks import assemble_block
    from coref.encoding.mentions import encode_parts

    enc = encode_parts(df.drop(columns=["gold"]), Vocabulary.fit(df))
    out = {}
    for b, idx in df.groupby("block").indices.items():
        eb = assemble_block(enc.take(idx))
        co = df["coauthors"].iloc[idx]
        out[b] = {"log_n": np.log(len(idx)), "comp_frac": eb.block_stats[0], "title_coh": eb.block_stats[1],
                  "venue_coh": eb.block_stats[2], "affil_coh": eb.block_stats[3],
                  "with_coauthors": float(np.mean([c is not None and len(c) > 0 for c in co])),
                  "spellings": df["name"].iloc[idx].nunique() / len(idx)}
    return pd.DataFrame(out).T


def learned_choice(rows, stats):
    """The grid shift nearest to a ridge prediction fitted on the other folds' oracle shifts."""
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    f1 = 2 * rows.P * rows.R / (rows.P + rows.R) / rows.n
    best = rows.loc[f1.groupby(rows["block"]).idxmax()].set_index("block")
    grid = np.array(sorted(rows["shift"].unique()))
    chosen = {}
    for f in sorted(best["fold"].unique()):
        trn, tst = best.index[best["fold"] != f], best.index[best["fold"] == f]
        reg = make_pipeline(StandardScaler(), Ridge(alpha=3.0))
        reg.fit(stats.loc[trn], best.loc[trn, "shift"], ridge__sample_weight=best.loc[trn, "n"])
        for b, s in zip(tst, reg.predict(stats.loc[tst])):
            chosen[b] = grid[np.argmin(np.abs(grid - s))]
    return rows[[chosen[b] == s for b, s in zip(rows["block"], rows["shift"])]]


def labeled_sets(ap, sets):
    """(name, labeled mentions, folds) of each set named in the comma-separated ``sets``.

    Unknown names are a usage error of ``ap``; sets whose data is absent are reported and skipped.
    """
    import coref

    for name in [s.strip() for s in sets.split(",") if s.strip()]:
        if name not in SETS:
            ap.error(f"unknown set {name!r}; choose from {list(SETS)}")
        path, fmt, folds = SETS[name]
        if not path.exists():
            print(f"{name}: {path} absent, skipped")
            continue
        df = coref.load_mentions(str(path), format=fmt)
        df = df[0] if isinstance(df, tuple) else df
        df = df[df["gold"].notna()].reset_index(drop=True)
        print(f"{name}: {len(df)} labeled mentions, {df['block'].nunique()} blocks, {folds} folds")
        yield name, df, folds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="aminer", help=f"comma-separated subset of {','.join(SETS)}")
    ap.add_argument("--learn", action="store_true", help="also predict the shifts from block statistics")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    for name, df, folds in labeled_sets(ap, args.sets):
        rows = shift_rows(df, folds, seed=args.seed)
        for d in GRID:
            print("  shift %+.1f       B3 P %.4f R %.4f F1 %.4f" % ((d,) + pooled(rows[rows["shift"] == d])))
        f1 = 2 * rows.P * rows.R / (rows.P + rows.R) / rows.n
        best = rows.loc[f1.groupby(rows["block"]).idxmax()]
        print("  oracle per block B3 P %.4f R %.4f F1 %.4f" % pooled(best))
        print("  oracle shifts (shift: blocks):", best["shift"].value_counts().sort_index().to_dict())
        if args.learn:
            print("  learned shift    B3 P %.4f R %.4f F1 %.4f" % pooled(learned_choice(rows, block_stats(df))))


if __name__ == "__main__":
    main()
