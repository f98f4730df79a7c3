"""Pairwise factor kernel speed: compiled (coref._factors) vs pure-Python twin.

Encodes the biggest shipped AMiner block, fits theta on a few other blocks, and
reports pairwise factor evaluations per second for both, and their ratio.

    python benchmarks/bench_coref_factors.py [--evals 2000000] [--block Lei_Wang]
"""
import argparse
import sys
import time
from pathlib import Path



def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--evals", type=int, default=2_000_000, help="compiled evaluations")
    ap.add_argument("--py-evals", type=int, default=20_000, help="pure-Python evaluations")
    ap.add_argument("--block", default=None, help="block to encode (default: the largest)")
    args = ap.parse_args(argv)

    root = Path(__file__).resolve().parents[1]
    sys.path[:0] = [str(root), str(Path(__file__).parent)]  # this tree's build, not an installed copy
    from tune_coref import load
    from coref import _factors, _factors_py
    from coref.model import PairwiseModel

    df = load()
    sizes = df.groupby("block").size().sort_values()
    block = args.block or sizes.index[-1]
    train = df[df["block"].isin(sizes.index[:20])]
    model = PairwiseModel(bias_shift=0.0).fit(train)
    enc = model.encode(df[df["block"] == block])
    theta = model.theta_
    _factors.factor_rate(enc, theta, model.bias_, 1000)  # warm-up
    t0 = time.perf_counter()
    s_c = _factors.factor_rate(enc, theta, model.bias_, args.evals)
    t_c = time.perf_counter() - t0
    t0 = time.perf_counter()
    s_p = _factors_py.factor_rate(enc, theta, model.bias_, args.py_evals)
    t_p = time.perf_counter() - t0
    s_c2 = _factors.factor_rate(enc, theta, model.bias_, args.py_evals)
    assert s_c2 == s_p, (s_c2, s_p)  # same factors, same sum (bit for bit)
    rate_c, rate_p = args.evals / t_c, args.py_evals / t_p
    import coref

    print(f"coref from {Path(coref.__file__).parent}")
    print(f"block {block} ({enc.n} mentions, features={len(theta)})")
    print(f"cython : {rate_c:14,.0f} factors/s  ({args.evals:,} in {t_c:.3f}s)  checksum {s_c:.6g}")
    print(f"python : {rate_p:14,.0f} factors/s  ({args.py_evals:,} in {t_p:.3f}s)")
    print(f"speed ratio cython/python = {rate_c / rate_p:.0f}x")


if __name__ == "__main__":
    main()
