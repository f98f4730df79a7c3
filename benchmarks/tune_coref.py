"""Accuracy harness for coreference: B3 F1 under grouped k-fold by block.

theta (and the bias shift) are fitted on the training blocks of each fold only;
B3 is computed on the held-out blocks.  Runs the exact and the racing sampler and
reports B3 precision / recall / F1, factor evaluations and wall time.

    python benchmarks/tune_coref.py [--folds 5] [--sweeps 30] [--sampler both]
"""
import argparse
import os
import re
import sys
import time

import pandas as pd

from coref.evaluate import b3 as coref_b3


def _read_aminer_fallback(folder):
    """Throwaway AMiner reader (used only if coref.io is not available)."""
    import glob
    import defusedxml.ElementTree as ET

    def norm(s):
        return " ".join(re.sub(r"[^a-z ]", "", s.lower().replace("-", "").replace(".", " ")).split())

    rows = []
    for path in sorted(glob.glob(os.path.join(folder, "*.xml"))):
        block = os.path.basename(path)[:-4]
        txt = open(path, encoding="utf-8").read()
        txt = re.sub(r"&(?!(amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);)", "&amp;", txt)
        root = ET.fromstring(txt)
        full = root.findtext("FullName") or block.replace("_", " ")
        for k, pub in enumerate(root.iter("publication")):
            authors = [a.strip() for a in (pub.findtext("authors") or "").split(",") if a.strip()]
            y = (pub.findtext("year") or "").strip()
            org = (pub.findtext("organization") or "").strip()
            rows.append(dict(
                mention_id=f"{block}/{k}", block=block, name=full,
                coauthors=[a for a in authors if norm(a) != norm(full)],
                title=(pub.findtext("title") or "").strip(),
                venue=(pub.findtext("jconf") or "").strip(),
                year=int(y) if y.isdigit() and int(y) > 0 else None,
                affiliation="" if org == "null" else org,
                gold=f"{block}/{(pub.findtext('label') or '').strip()}"))
    df = pd.DataFrame(rows)
    df["year"] = df["year"].astype("Int64")
    df["gold"] = df["gold"].astype("string")
    return df


def load(path=None):
    from sampling.utils.data import data_path

    path = path or str(data_path("aminer_na"))
    try:
        from coref.io import load_mentions
        return load_mentions(path, format="aminer")
    except Exception as exc:  # noqa: BLE001 - harness only
        print(f"[tune] coref.io unavailable ({type(exc).__name__}: {exc}); fallback reader",
              file=sys.stderr)
        return _read_aminer_fallback(path)


def b3_prf(pred, gold):
    """B3 (precision, recall, F1) of two Series indexed by mention_id (coref.evaluate.b3)."""
    r = coref_b3(pred, gold)
    return r.precision, r.recall, r.f1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--sweeps", type=int, default=30)
    ap.add_argument("--sampler", default="both", choices=["both", "racing", "exact"])
    ap.add_argument("--shift", default="auto")
    ap.add_argument("--C", type=float, default=0.1)
    ap.add_argument("--t-start", type=float, default=1.0)
    ap.add_argument("--t-end", type=float, default=0.05)
    ap.add_argument("--delta", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--init", default="singletons")
    ap.add_argument("--max-pairs", type=int, default=3000)
    ap.add_argument("--dump", default="", help="write out-of-fold predictions to this CSV")
    ap.add_argument("--grid", default="", help="comma list: shift_grid for --shift auto")
    ap.add_argument("--scan", default="", help="comma list of shifts: exact-sampler scan only")
    ap.add_argument("--blocks", type=int, default=0, help="use only the first N blocks (quick)")
    args = ap.parse_args(argv)

    from sklearn.model_selection import GroupKFold
    from coref.gibbs import GibbsCoref
    from coref.model import PairwiseModel

    t0 = time.perf_counter()
    df = load(args.data).reset_index(drop=True)
    if args.blocks:
        keep = sorted(df["block"].unique())[: args.blocks]
        df = df[df["block"].isin(keep)].reset_index(drop=True)
    print(f"[tune] {len(df)} mentions, {df['block'].nunique()} blocks, load {time.perf_counter()-t0:.1f}s")
    shift = args.shift if args.shift == "auto" else float(args.shift)
    if args.scan:
        return scan(df, args, [float(x) for x in args.scan.split(",")])
    samplers = ["exact", "racing"] if args.sampler == "both" else [args.sampler]
    pred = {s: pd.Series(index=df["mention_id"], dtype="string") for s in samplers}
    evals = {s: 0 for s in samplers}
    wall = {s: 0.0 for s in samplers}
    t_fit = 0.0
    for k, (tr, te) in enumerate(GroupKFold(n_splits=args.folds).split(df, groups=df["block"])):
        t1 = time.perf_counter()
        extra = {"shift_grid": tuple(float(x) for x in args.grid.split(","))} if args.grid else {}
        model = PairwiseModel(C=args.C, bias_shift=shift, max_pairs_per_block=args.max_pairs,
                              rng=args.seed, **extra).fit(df.iloc[tr])
        t_fit += time.perf_counter() - t1
        test = df.iloc[te]
        line = f"[tune] fold {k}: shift={model.shift_:+.2f} bias={model.bias_:+.3f}"
        if model.shift_scores_:
            line += " grid=" + ",".join(f"{s:+.1f}:{v:.3f}" for s, v in model.shift_scores_.items())
        for s in samplers:
            g = GibbsCoref(model, sampler=s, n_sweeps=args.sweeps, t_start=args.t_start,
                           t_end=args.t_end, delta=args.delta, init=args.init, rng=args.seed,
                           record_history=False).fit(test)
            pred[s].loc[g.clusters_.index] = g.clusters_.to_numpy()
            evals[s] += g.n_factor_evals_
            wall[s] += g.wall_s_
            P, R, F = b3_prf(g.clusters_, test.set_index("mention_id")["gold"])
            line += f" | {s} F1={F:.4f}"
        print(line, flush=True)
    gold = df.set_index("mention_id")["gold"]
    if args.dump:
        out = pd.DataFrame({s: pred[s] for s in samplers})
        out["gold"] = gold
        out["block"] = df.set_index("mention_id")["block"]
        out.to_csv(args.dump)
    for s in samplers:
        P, R, F = b3_prf(pred[s].reindex(gold.index), gold)
        print(f"[tune] {s:6s} B3 P={P:.4f} R={R:.4f} F1={F:.4f} factor_evals={evals[s]:,} "
              f"gibbs_wall={wall[s]:.1f}s")
    if len(samplers) == 2:
        print(f"[tune] exact/racing factor-eval ratio = {evals['exact'] / max(evals['racing'], 1):.2f}")
    print(f"[tune] fit time {t_fit:.1f}s, total {time.perf_counter() - t0:.1f}s")


def scan(df, args, shifts):
    """B3 of the exact sampler for several bias shifts (theta fitted once per fold)."""
    from sklearn.model_selection import GroupKFold
    from coref.gibbs import GibbsCoref
    from coref.model import PairwiseModel

    pred = {s: pd.Series(index=df["mention_id"], dtype="string") for s in shifts}
    for k, (tr, te) in enumerate(GroupKFold(n_splits=args.folds).split(df, groups=df["block"])):
        model = PairwiseModel(C=args.C, bias_shift=0.0, block_prior="none", max_pairs_per_block=args.max_pairs,
                              rng=args.seed).fit(df.iloc[tr])
        test = df.iloc[te]
        for s in shifts:
            model.bias_ = model.intercept_ + s
            g = GibbsCoref(model, sampler=args.sampler if args.sampler != "both" else "exact",
                           n_sweeps=args.sweeps, t_start=args.t_start, t_end=args.t_end,
                           init=args.init, rng=args.seed, record_history=False).fit(test)
            pred[s].loc[g.clusters_.index] = g.clusters_.to_numpy()
    gold = df.set_index("mention_id")["gold"]
    for s in shifts:
        P, R, F = b3_prf(pred[s].reindex(gold.index), gold)
        print(f"[scan] shift={s:+.2f} B3 P={P:.4f} R={R:.4f} F1={F:.4f}", flush=True)


if __name__ == "__main__":
    main()
