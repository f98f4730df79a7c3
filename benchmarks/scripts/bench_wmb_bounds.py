"""WMB upper bounds on the UAI'08 pedigrees (quality and time), and exact VE where it fits.

Usage::

    python benchmarks/scripts/bench_wmb_bounds.py [--memory-mb 1024] [--n-iters 10] [--time-limit 60]
        [--data ../shared/data/uai/pedigree] [NAME ...]

Prints one line per instance: chosen i-bound, induced width of the order, number
of mini-buckets, the uniform-weight bound, the tuned bound, the reference ln Z
(from SOURCES.md, log10 Z * ln 10) and the gap, and the fit time. Not run by the tests.
"""
import argparse
import math
import time
import warnings
from pathlib import Path

from sampling.bounds.uai import read_uai
from sampling.bounds.wmb import WeightedMiniBucket

# log10 Z from data/uai/SOURCES.md (shared copy); pedigree51 is disputed there.
LOG10_Z = {
    "pedigree1": -14.107169, "pedigree7": -64.8245, "pedigree9": -78.5222, "pedigree13": -31.1776,
    "pedigree18": -78.143606, "pedigree19": -59.0249, "pedigree20": -29.6304, "pedigree23": -38.555591,
    "pedigree25": -115.7720, "pedigree30": -83.733131, "pedigree31": -69.7017, "pedigree33": -54.2777,
    "pedigree34": -64.2292, "pedigree37": -116.5800, "pedigree38": -54.2500, "pedigree39": -102.199094,
    "pedigree40": -87.8848, "pedigree41": -76.0389, "pedigree42": -30.7614, "pedigree44": -63.4735,
    "pedigree50": -22.8800, "pedigree51": -76.6058,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=sorted(LOG10_Z, key=lambda s: int(s[8:])))
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2].parent / "shared" / "data" / "uai" / "pedigree"))
    ap.add_argument("--memory-mb", type=float, default=1024)
    ap.add_argument("--n-iters", type=int, default=10)
    ap.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args()
    print(f"{'instance':<11} {'ibound':>6} {'w':>3} {'n_mb':>5} {'MiB':>6} {'U_uniform':>10} {'U_tuned':>10} "
          f"{'ln Z ref':>10} {'gap':>7} {'passes':>6} {'fit_s':>7}")
    for name in args.names:
        path = Path(args.data) / f"{name}.uai"
        if not path.exists():
            print(f"{name:<11} missing")
            continue
        m = read_uai(path)
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            w = WeightedMiniBucket(m, memory_mb=args.memory_mb, n_iters=args.n_iters,
                                   time_limit=args.time_limit).fit()
        dt = time.perf_counter() - t
        ref = LOG10_Z.get(name, math.nan) * math.log(10)
        print(f"{name:<11} {w.i_bound:>6} {w.pseudo_tree.induced_width:>3} {w.n_mini_buckets:>5} "
              f"{w.memory_mb_:>6.0f} {w.bound_history_[0]:>10.3f} {w.log_Z_upper:>10.3f} {ref:>10.3f} "
              f"{w.log_Z_upper - ref:>7.3f} {w.n_iters_:>6} {dt:>7.1f}", flush=True)


if __name__ == "__main__":
    main()
