"""Racing Gibbs on one large block: wall time and where the factor evaluations go.

Takes the first ``n`` mentions of a ``coref synth`` file, puts them in one block, and fits
``GibbsCoref(sampler="racing")`` with the shipped model and default settings. Reports the
Gibbs wall, the block prior's pairs (sweep 0 of ``n_factor_evals_per_sweep_``), the
small-arm bound's pass (n (n - 1) / 2 factors, counted in sweep 1) and the factors per
step of the sweeps::

    coref synth --mentions 1000000 --out /tmp/m1M.parquet
    python -P studies/coref_big_block.py /tmp/m1M.parquet --n 2000 5000 10000

Measured 2026-11-24: ``git history: benchmarks/measured/coref_big_block_2026-11-24.txt``.
"""
from __future__ import annotations

import argparse

import numpy as np
import pandas as pd


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", help="a coref synth parquet file")
    ap.add_argument("--n", type=int, nargs="+", default=[2000, 5000, 10000])
    args = ap.parse_args(argv)
    from coref.gibbs import GibbsCoref
    from coref.inference import single_thread
    from coref.inputs import resolve_model

    df = pd.read_parquet(args.data)
    model = resolve_model(None)[0]
    print("n       Gibbs wall  prior pairs  bound pass   sweep factors  sweeps  factors/step (bound pass excluded)")
    for n in args.n:
        sub = df.iloc[:n].drop(columns=["gold"], errors="ignore").assign(block="big")
        with single_thread():
            g = GibbsCoref(model, sampler="racing", rng=0).fit(sub)
        ev = np.asarray(g.n_factor_evals_per_sweep_, dtype=np.int64)
        bound = n * (n - 1) // 2
        sweeps = len(ev) - 1
        rest = int(ev[1:].sum()) - bound
        print(f"{n:<7} {g.wall_s_:9.2f} s  {int(ev[0]):>11,}  {bound:>11,}  {rest:>13,}  {sweeps:>6}  "
              f"{rest / (sweeps * n):.0f}", flush=True)


if __name__ == "__main__":
    main()
