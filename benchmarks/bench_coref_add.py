"""``coref add`` against predicting everything at once, on the shipped AMiner data.

Splits the shipped mentions 80 / 20 by a hash of the mention id (as the coref-add check
does), then in ONE process: ``predict`` on all, ``predict`` on the 80%, ``add`` the 20%.
Reports B3 F1 of both final clusterings (gold passed through), how many existing ids
changed, and the CPU time of ``add`` over that of the full ``predict`` (a ratio of two
runs side by side; wall time on a shared machine is not comparable).

    python benchmarks/bench_coref_add.py [--seed 0] [--sweeps N]
"""
import argparse
import shutil
import tempfile
import time
import zlib
from pathlib import Path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sweeps", type=int, default=None, help="Gibbs sweeps of add (default: its own)")
    args = ap.parse_args(argv)
    import pandas as pd

    from coref.add import add
    from coref.datasets import load_aminer
    from coref.evaluate import b3
    from coref.predict import predict

    df = load_aminer()
    new = df["mention_id"].map(lambda m: zlib.crc32(str(m).encode()) % 5 == 0).to_numpy()
    d = Path(tempfile.mkdtemp())
    try:
        t = time.process_time()
        predict(df, out=d / "R", seed=args.seed, progress=False)
        t_all = time.process_time() - t
        predict(df[~new], out=d / "P", seed=args.seed, progress=False)
        t = time.process_time()
        s = add(d / "P", df[new], out=d / "Q", seed=args.seed, n_sweeps=args.sweeps, progress=False)
        t_add = time.process_time() - t
        f1 = {}
        for x in "RQ":
            cl = pd.read_csv(d / x / "clusters.csv", dtype=str, keep_default_na=False)
            f1[x] = b3(pd.Series((cl["block"] + "|" + cl["cluster_id"]).to_numpy(), index=cl["mention_id"]),
                       pd.Series((cl["block"] + "|" + cl["gold"]).to_numpy(), index=cl["mention_id"])).f1
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print(f"B3 F1 predict-all {f1['R']:.4f}, predict 80% + add 20% {f1['Q']:.4f} (diff {f1['Q'] - f1['R']:+.4f}); "
          f"existing ids changed {s['n_old_ids_changed']}; CPU add {t_add:.2f} s / predict-all {t_all:.2f} s "
          f"= {t_add / t_all:.2f}")


if __name__ == "__main__":
    main()
