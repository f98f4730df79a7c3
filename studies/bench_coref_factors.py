"""Pairwise factor kernel speed: compiled (coref.factors._factors) vs pure-Python twin.

Encodes the biggest shipped AMiner block, fits theta on a few other blocks, and
reports pairwise factor evaluations per second (one core) of the compiled kernel
(cycling over the block's pairs; also one single pass over them, where every memo
entry is computed once; and without its per-block memo tables) and of the
pure-Python twin, and
checks that compiled and twin give the same sum bit for bit.

Times the *importable* ``coref`` (the installed build); to time a source tree
with in-place built kernels, put it first on the path:

    PYTHONPATH=. python studies/bench_coref_factors.py [--evals 2000000] [--block Lei_Wang]
"""
import argparse
import time
from pathlib import Path


def _rate(fn, n_evals, repeat):
    """Best of ``repeat`` timings of fn(n_evals) (the machine is shared); (rate, sum)."""
    best, s = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        s = fn(n_evals)
        best = min(best, time.perf_counter() - t0)
    return n_evals / best, s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--evals", type=int, default=2_000_000, help="compiled evaluations")
    ap.add_argument("--py-evals", type=int, default=20_000, help="pure-Python evaluations")
    ap.add_argument("--block", default=None, help="block to encode (default: the largest)")
    ap.add_argument("--repeat", type=int, default=3, help="timings of the compiled kernel (best)")
    args = ap.parse_args(argv)

    import coref
    from coref.factors import _factors, _factors_py
    from coref.datasets import load_aminer
    from coref.model import PairwiseModel

    df = load_aminer()
    sizes = df.groupby("block").size().sort_values()
    block = args.block or sizes.index[-1]
    train = df[df["block"].isin(sizes.index[:20])]
    model = PairwiseModel(bias_shift=0.0).fit(train)
    enc = model.encode(df[df["block"] == block])
    theta, bias = model.theta_, model.bias_
    _factors.factor_rate(enc, theta, bias, 1000)  # warm-up
    rate_c, s_c = _rate(lambda m: _factors.factor_rate(enc, theta, bias, m), args.evals, args.repeat)
    rate_n, s_n = _rate(lambda m: _factors.factor_rate(enc, theta, bias, m, memo=False),
                        args.evals, args.repeat)
    n_pairs = enc.n * (enc.n - 1) // 2   # one pass: every memo entry is computed once
    rate_1, _ = _rate(lambda m: _factors.factor_rate(enc, theta, bias, m), n_pairs, args.repeat)
    t0 = time.perf_counter()
    s_p = _factors_py.factor_rate(enc, theta, bias, args.py_evals)
    t_p = time.perf_counter() - t0
    s_c2 = _factors.factor_rate(enc, theta, bias, args.py_evals)
    assert s_c2 == s_p, (s_c2, s_p)  # same factors, same sum (bit for bit)
    assert s_c == s_n, (s_c, s_n)    # the memo tables change no value
    rate_p = args.py_evals / t_p

    print(f"coref from {Path(coref.__file__).parent}")
    print(f"block {block} ({enc.n} mentions, features={len(theta)})")
    print(f"cython         : {rate_c:14,.0f} factors/s  (best of {args.repeat} x {args.evals:,})"
          f"  checksum {s_c!r}")
    print(f"cython, 1 pass : {rate_1:14,.0f} factors/s  (each of the {n_pairs:,} pairs once: "
          "cold memo tables)")
    print(f"cython, no memo: {rate_n:14,.0f} factors/s")
    print(f"python         : {rate_p:14,.0f} factors/s  ({args.py_evals:,} in {t_p:.3f}s)")
    print(f"speed ratio cython/python = {rate_c / rate_p:.0f}x")


if __name__ == "__main__":
    main()
