"""Certified marginals (``sampling.bounds.marginals``) against exact marginals (issue 30).

Usage::

    python benchmarks/scripts/bounds_marginals.py [--time 30] [--method dis] [--sampler dis] [--delta 0.025]
        [--memory-mb 1024] [--exact-memory-mb 12000] [--seed 0] [--out F.csv] [NAME_OR_PATH ...]

For each instance (a shipped model name such as ``pedigree1``, or a ``.uai`` path; a
``PATH.evid`` next to it is applied): the exact marginals by two-pass bucket-tree
propagation (``method="exact"`` with ``--exact-memory-mb``), then ``marginals`` at ``--time``
seconds of ``--clock`` with ``--method`` (``dis`` forces the sampling path on an instance elimination
solves; ``auto`` is what ``sampling bounds --marginals`` does). Over the (variable, value)
pairs of unobserved variables it reports the share of intervals holding the exact marginal
(target >= 1 - 2 delta), the median and largest interval width (target median <= 0.01), the
largest |p - exact|, samples and times. One summary row per instance to ``--out`` (default
``benchmarks/results/bounds_marginals.csv``). Not run by the tests.
"""
import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from sampling.bounds import read_uai
from sampling.bounds.marginal_bounds import marginals
from sampling.datasets import resolve_uai

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT.parent / "shared" / "data" / "uai" / "uai2014_dev"
DEFAULT = ["pedigree1", "pedigree20", "pedigree23"] + [str(DEV / f"{n}.uai") for n in (
    "Promedus_27", "Promedus_34", "Segmentation_14", "ObjectDetection_68", "CSP_13", "DBN_14")]


def load(name):
    path = Path(name) if name.endswith(".uai") else Path(resolve_uai(name))
    evid = Path(str(path) + ".evid")
    return path.stem, read_uai(path, evidence=evid if evid.exists() else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=DEFAULT)
    ap.add_argument("--time", type=float, default=30.0)
    ap.add_argument("--method", choices=("auto", "exact", "dis"), default="dis")
    ap.add_argument("--delta", type=float, default=0.025)
    ap.add_argument("--memory-mb", type=float, default=1024.0)
    ap.add_argument("--exact-memory-mb", type=float, default=12000.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--i-bound", type=int, default=None, help="WMB i-bound (default: marginals' choice)")
    ap.add_argument("--sampler", choices=("dis", "wmb-is"), default="dis",
                    help="samples of the sampling path: DIS (search tree + proposal) or WMB-IS")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="cpu",
                    help="clock of --time (default cpu: fair on a shared, loaded machine)")
    ap.add_argument("--cache", default=str(ROOT / "benchmarks" / "results" / "marginals_exact"),
                    help="folder of exact marginals (INSTANCE.csv), read if there, else written")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bounds_marginals.csv"))
    args = ap.parse_args()
    rows = []
    for name in args.names:
        inst, model = load(name)
        t = time.perf_counter()
        cached = Path(args.cache) / f"{inst}.csv"
        if cached.exists():
            ex_p, t_exact = pd.read_csv(cached)["p"].to_numpy(), float("nan")
        else:
            try:
                ex = marginals(model, method="exact", memory_mb=args.exact_memory_mb)
            except MemoryError as exc:
                print(f"{inst}: skipped, no exact answer within --exact-memory-mb ({exc})", flush=True)
                continue
            t_exact, ex_p = time.perf_counter() - t, ex.p
            os.makedirs(cached.parent, exist_ok=True)
            ex.to_csv(cached)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = marginals(model, time_limit=args.time, delta=args.delta, memory_mb=args.memory_mb,
                          method=args.method, rng=args.seed, clock=args.clock, sampler=args.sampler,
                          i_bound=args.i_bound)
        free = model.cards[r.variable] > 1
        held = (r.p_lower <= ex_p + 1e-10) & (ex_p <= r.p_upper + 1e-10)
        w = r.width[free]
        row = {"instance": inst, "method": r.method, "sampler": r.meta.get("sampler", "-"), "time_limit": args.time, "delta": args.delta,
               "n_pairs": int(free.sum()), "held": float(held[free].mean()) if free.any() else 1.0,
               "n_missed": int((~held[free]).sum()), "median_width": float(np.median(w)) if w.size else 0.0,
               "max_width": float(w.max(initial=0.0)), "max_abs_err": float(np.abs(r.p - ex_p).max(initial=0.0)),
               "n_samples": r.n_samples, "i_bound": r.meta.get("i_bound", -1), "time_s": r.meta["time_s"],
               "exact_time_s": t_exact, "log_Z_lower": r.log_Z_lower,
               "log_Z_upper": r.log_Z_upper, "log_Z_wmb": r.meta.get("log_Z_wmb", float("nan")),
               "wmb_passes": r.meta.get("wmb_passes", -1), "log_Z_search": r.meta.get("log_Z_search", float("nan")),
               "n_expansions": r.meta.get("n_expansions", 0),
               "n_capped": r.meta.get("n_capped", 0),
               "accept": r.meta.get("n_subproblems", 0) / r.meta["n_tries"] if r.meta.get("n_tries") else float("nan")}
        rows.append(row)
        print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)
    if rows:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        pd.DataFrame(rows).to_csv(args.out, index=False, float_format="%.6g")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
