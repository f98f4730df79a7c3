"""``coref add`` against predicting everything at once: the commands as a user runs them.

For each data set -- the shipped AMiner mentions and a synthetic set
(``coref synth --mentions N``) -- the mentions are split 80 / 20 by a hash of the mention
id (as the coref-add check does). Then, side by side in one run, ``coref predict`` on
everything (R), ``coref predict`` on the 80% (P) and ``coref add --clusters P`` of the
20% (Q) run as separate processes (the check's setting: process start, imports, model
load and file IO included). Reported: the minimum over ``--repeat`` alternating runs of
the wall and the CPU time (user + system of the child) of predict-all and of add, their
ratios, B3 F1 of R and Q against the gold passed through, and how many existing cluster
ids changed. On a shared machine compare the ratios, not the seconds.

    python benchmarks/scripts/bench_coref_add.py [--synth 20000] [--repeat 2] [--seed 0] [--in-process]

The processes run ``python -m coref`` from a temporary directory: the installed build, or
the tree on ``PYTHONPATH`` (``PYTHONPATH=$PWD python benchmarks/scripts/bench_coref_add.py``).

Measured on 2026-11-23 on the shared 2-core machine (load average 5 from other jobs),
``PYTHONPATH=$PWD python benchmarks/scripts/bench_coref_add.py --repeat 2`` (min of 2 runs):

==================  =======  ==============  ==========  =============  ==============
data                blocks   predict-all     add 20%     add / predict  B3 F1 all, add
==================  =======  ==============  ==========  =============  ==============
shipped AMiner 7k   108      cpu 5.52 s      cpu 2.07 s  0.374 (wall    0.8853, 0.8828
                                                         0.384)
synthetic 20k       1,890    cpu 5.75 s      cpu 3.76 s  0.655 (wall    0.8971, 0.8997
                                                         0.771)
==================  =======  ==============  ==========  =============  ==============

(before the per-mention encodings, on main: shipped add / predict 3.9 s / 8.6 s wall.)

Measured on 2026-11-24 (later), installed build, quiet machine,
``python benchmarks/scripts/bench_coref_add.py --repeat 3 --synth 20000 --in-process`` run from /tmp
(min of 3), after the compiled block assembly, one gather of the encodings per group, the
faster per-mention encoding and the add-path clean-ups of that day:

==================  ===============  ===========  =============  ============================
data                predict-all      add 20%      add / predict  in one process (add/predict)
==================  ===============  ===========  =============  ============================
shipped AMiner 7k   wall 1.47 s      wall 0.80 s  0.542          0.306 s / 0.951 s = 0.322
synthetic 20k       wall 2.01 s      wall 1.24 s  0.616          0.814 s / 1.528 s = 0.533
==================  ===============  ===========  =============  ============================

(0.545-0.553 and 0.669 at the start of that day.) Start-up and imports are 0.44 s of every
command (``coref add --help``), plus 0.16 s for scipy's graph module (the coauthor
components); ``--in-process`` times both through the Python API in the benchmark's own
process, imports paid once.
"""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path


def _run(args, cwd):
    """Wall and CPU seconds (user + system) of one ``python -m coref`` child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "coref", *args, "--quiet"], cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise RuntimeError(f"coref {' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _f1(path):
    import pandas as pd

    from coref.evaluate import b3

    cl = pd.read_csv(path, dtype=str, keep_default_na=False)
    return b3(pd.Series((cl["block"] + "|" + cl["cluster_id"]).to_numpy(), index=cl["mention_id"]),
              pd.Series((cl["block"] + "|" + cl["gold"]).to_numpy(), index=cl["mention_id"])).f1


def bench(name, df, d, *, repeat, seed):
    """Run R / P / Q for one data set in folder ``d``; print one line."""
    import pandas as pd

    new = df["mention_id"].map(lambda m: zlib.crc32(str(m).encode()) % 5 == 0).to_numpy()
    df.to_parquet(d / "all.parquet")
    df[~new].to_parquet(d / "old.parquet")
    df[new].to_parquet(d / "new.parquet")
    s = ["--seed", str(seed)]
    _run(["predict", "--data", str(d / "old.parquet"), "--out", str(d / "P"), *s], d)
    best = {"predict": (float("inf"), float("inf")), "add": (float("inf"), float("inf"))}
    for _ in range(repeat):
        for key, args in (("predict", ["predict", "--data", str(d / "all.parquet"), "--out", str(d / "R")]),
                          ("add", ["add", "--clusters", str(d / "P"), "--data", str(d / "new.parquet"),
                                   "--out", str(d / "Q")])):
            w, c = _run(args + s, d)
            best[key] = (min(best[key][0], w), min(best[key][1], c))
    old = pd.read_csv(d / "P" / "clusters.csv", dtype=str, keep_default_na=False).set_index("mention_id")["cluster_id"]
    q = pd.read_csv(d / "Q" / "clusters.csv", dtype=str, keep_default_na=False).set_index("mention_id")["cluster_id"]
    moved = int((q.reindex(old.index) != old).sum())
    (wp, cp), (wa, ca) = best["predict"], best["add"]
    print(f"{name}: {len(df)} mentions ({int(new.sum())} added), {df['block'].nunique()} blocks | "
          f"predict-all wall {wp:.2f} s cpu {cp:.2f} s | add wall {wa:.2f} s cpu {ca:.2f} s | "
          f"ratio add/predict wall {wa / wp:.3f} cpu {ca / cp:.3f} | "
          f"B3 F1 all-at-once {_f1(d / 'R' / 'clusters.csv'):.4f}, predict+add {_f1(d / 'Q' / 'clusters.csv'):.4f} | "
          f"old ids changed {moved}", flush=True)


def bench_in_process(name, d, *, repeat, seed):
    """The same split, both through the Python API in THIS process (imports paid once)."""
    import pandas as pd

    from coref.jobs.add import add
    from coref.jobs.predict import predict

    old, all_, new = (pd.read_parquet(d / f"{x}.parquet") for x in ("old", "all", "new"))
    predict(old, out=d / "Pi", seed=seed, progress=False)
    best = {"predict": float("inf"), "add": float("inf")}
    for k in range(repeat):
        t0 = time.perf_counter()
        predict(all_, out=d / f"Ri{k}", seed=seed, progress=False)
        best["predict"] = min(best["predict"], time.perf_counter() - t0)
        t0 = time.perf_counter()
        add(d / "Pi", new, out=d / f"Qi{k}", seed=seed, progress=False)
        best["add"] = min(best["add"], time.perf_counter() - t0)
    print(f"{name}, in one process: predict-all {best['predict']:.3f} s | add {best['add']:.3f} s | "
          f"ratio {best['add'] / best['predict']:.3f}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=2, help="alternating runs of predict-all and add (min reported)")
    ap.add_argument("--synth", type=int, default=20000, help="synthetic mentions (0: skip)")
    ap.add_argument("--in-process", action="store_true",
                    help="also time predict and add through the Python API in this process (imports paid once)")
    args = ap.parse_args(argv)
    import pandas as pd

    from coref.datasets import load_aminer

    d = Path(tempfile.mkdtemp())
    try:
        (d / "aminer").mkdir()
        bench("shipped AMiner", load_aminer(), d / "aminer", repeat=args.repeat, seed=args.seed)
        if args.in_process:
            bench_in_process("shipped AMiner", d / "aminer", repeat=args.repeat, seed=args.seed)
        if args.synth:
            (d / "synth").mkdir()
            subprocess.run([sys.executable, "-m", "coref", "synth", "--mentions", str(args.synth),
                            "--out", str(d / "synth" / "x.parquet")], cwd=d, check=True, capture_output=True,
                           env=os.environ.copy())
            bench(f"synthetic {args.synth}", pd.read_parquet(d / "synth" / "x.parquet"), d / "synth",
                  repeat=args.repeat, seed=args.seed)
            if args.in_process:
                bench_in_process(f"synthetic {args.synth}", d / "synth", repeat=args.repeat, seed=args.seed)
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
