"""Scale benchmark of author coreference: synthetic mentions end to end.

For each size N: ``coref.synthesize_mentions(N)`` -> fit ``PairwiseModel`` on a small
labeled subset of blocks -> encode + annealed Gibbs (racing by default) over every
block with ``coref.inference.infer_blocks`` (the code path of ``coref run``) -> B3
against the synthetic gold. Each size runs in its own subprocess so that the peak
resident memory (``ru_maxrss``) belongs to that size alone.

Reported per size: mentions, blocks, largest block, seconds for synthesis / fit /
inference, mentions per second of inference (encode + all sweeps) and per sweep,
factor evaluations, B3 F1, peak RSS (MB). Memory should grow like
O(mentions + largest block) -- factors are computed on demand, never as an n x n
matrix for a block.

Usage::

    python benchmarks/scripts/bench_coref_scale.py                       # 10k and 100k, 5 sweeps
    python benchmarks/scripts/bench_coref_scale.py --sizes 10000,100000,1000000 --sweeps 2
    python benchmarks/scripts/bench_coref_scale.py --sizes 100000 --workers 2   # Dask LocalCluster
    python benchmarks/scripts/bench_coref_scale.py --one 10000               # one size, JSON line
    python benchmarks/scripts/bench_coref_scale.py --sampler auto --sweeps 30  # cached-factor exact where it fits

Not run by the tests.

Measured on 2026-11-21 on the shared 2-core build machine (load average 3-9 from other
jobs, ``nice -n 10``; racing, delta 0.05, theta fitted on ~3,000 labeled mentions):

=========  ======  =======  ======  =======  =========  =========  =====  =======
mentions   sweeps  blocks   larg.   infer s  mention/s  evals/upd  B3 F1  peak MB
=========  ======  =======  ======  =======  =========  =========  =====  =======
10,000     5       972      146     22.3     449        12.5       0.976  278
100,000    5       8,167    588     149.7    668        28.9       0.974  400
1,000,000  2       66,027   4,081   1,117.6  895        208.1      0.963  1,848
=========  ======  =======  ======  =======  =========  =========  =====  =======

(``infer s`` = encode + Gibbs over all blocks; 1M total with synthesis and fit: 1,150 s.)
With ``--buffer-size 1024`` the 10k run infers in 9.6 s instead of 22.3 s: the default
65,536-number random buffer refilled every sweep of every (mostly tiny) block dominates.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time


def _rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def _train_subset(df, n_train, max_block, seed):
    """Blocks (random order, each at most ``max_block`` mentions) until ``n_train`` mentions."""
    import numpy as np

    sizes = df["block"].value_counts()
    sizes = sizes[(sizes >= 2) & (sizes <= max_block)]
    order = np.random.default_rng(seed).permutation(len(sizes))
    chosen, total = [], 0
    for i in order:
        chosen.append(sizes.index[i])
        total += int(sizes.iloc[i])
        if total >= n_train:
            break
    return df[df["block"].isin(set(chosen))].reset_index(drop=True)


def run_one(n, *, sweeps, sampler, seed, n_train, max_train_block, workers, delta, buffer_size=None,
            factor_cache_mb=0.0):
    """Benchmark one size in this process; returns a dict of numbers."""
    import numpy as np
    import pandas as pd

    from coref.evaluate import b3
    from coref.model import PairwiseModel
    from coref.inference import executor_context, infer_blocks
    from coref.settings import make_settings
    from coref.synth import synthesize_mentions

    res = {"n_mentions": n, "sampler": sampler, "n_sweeps": sweeps, "seed": seed, "workers": workers or 0,
           "buffer_size": buffer_size, "factor_cache_mb": factor_cache_mb}
    rss0 = _rss_mb()
    t = time.perf_counter()
    df = synthesize_mentions(n, rng=seed)
    res["synth_s"] = time.perf_counter() - t
    sizes = df["block"].value_counts()
    res["n_blocks"] = int(len(sizes))
    res["largest_block"] = int(sizes.max())
    res["n_mentions_in_blocks_over_1000"] = int(sizes[sizes > 1000].sum())
    res["rss_after_synth_mb"] = _rss_mb()

    t = time.perf_counter()
    train = _train_subset(df, n_train, max_train_block, seed)
    model = PairwiseModel().fit(train)
    res["fit_s"] = time.perf_counter() - t
    res["n_train_mentions"] = int(len(train))
    res["n_train_blocks"] = int(train["block"].nunique())

    gp = {} if buffer_size is None else {"buffer_size": buffer_size}
    if factor_cache_mb:
        gp["factor_cache_mb"] = factor_cache_mb
    settings = make_settings(sampler=sampler, seed=seed, delta=delta, n_sweeps=sweeps, gibbs_params=gp or None)
    with executor_context(None, workers, None) as (client, desc):
        t = time.perf_counter()
        results = infer_blocks(df, model, settings, record_history=False, client=client,
                               progress=sys.stderr.isatty())
        res["infer_s"] = time.perf_counter() - t
        res["executor"] = desc
    res["mentions_per_s"] = n / res["infer_s"]
    res["mention_updates_per_s"] = n * sweeps / res["infer_s"]
    res["n_factor_evals"] = int(sum(r.n_factor_evals for r in results))
    res["factor_evals_per_mention_update"] = res["n_factor_evals"] / (n * sweeps)
    res["gibbs_s_sum"] = float(sum(r.wall_s for r in results))
    slowest = max(results, key=lambda r: r.wall_s)
    res["slowest_block"] = {"block": slowest.block, "n": int(len(slowest.mention_id)), "s": slowest.wall_s}
    pred = pd.Series(np.concatenate([r.cluster_id for r in results]).astype(str),
                     index=np.concatenate([r.mention_id for r in results]))
    gold = df.set_index("mention_id")["gold"].reindex(pred.index)
    if gold.notna().any():
        r = b3(pred, gold)
        res.update(b3_precision=r.precision, b3_recall=r.recall, b3_f1=r.f1)
    res["peak_rss_mb"] = _rss_mb()
    res["rss_before_mb"] = rss0
    return res


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="10000,100000", help="comma-separated mention counts")
    p.add_argument("--sweeps", type=int, default=5)
    p.add_argument("--sampler", choices=("racing", "exact", "auto"), default="racing",
                   help="auto: exact Gibbs from cached factors where a block's matrix fits, racing elsewhere")
    p.add_argument("--factor-cache-mb", type=float, default=0.0,
                   help="GibbsCoref factor_cache_mb (exact / auto samplers; 0: off for exact, 256 for auto)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--delta", type=float, default=0.05)
    p.add_argument("--train", type=int, default=3000, help="labeled mentions to fit theta on")
    p.add_argument("--max-train-block", type=int, default=300)
    p.add_argument("--workers", type=int, default=None, help="Dask LocalCluster workers (default: in process)")
    p.add_argument("--buffer-size", type=int, default=None,
                   help="GibbsCoref random-number buffer length (default: its own default)")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds allowed per size")
    p.add_argument("--out", default=None, help="append JSON lines here")
    p.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    kw = dict(sweeps=args.sweeps, sampler=args.sampler, seed=args.seed, n_train=args.train,
              max_train_block=args.max_train_block, workers=args.workers, delta=args.delta,
              buffer_size=args.buffer_size, factor_cache_mb=args.factor_cache_mb)
    if args.one is not None:
        print(json.dumps(run_one(args.one, **kw)), flush=True)
        return 0
    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        cmd = [sys.executable, os.path.abspath(__file__), "--one", str(n), "--sweeps", str(args.sweeps),
               "--sampler", args.sampler, "--seed", str(args.seed), "--delta", str(args.delta),
               "--train", str(args.train), "--max-train-block", str(args.max_train_block)]
        if args.workers:
            cmd += ["--workers", str(args.workers)]
        if args.buffer_size:
            cmd += ["--buffer-size", str(args.buffer_size)]
        if args.factor_cache_mb:
            cmd += ["--factor-cache-mb", str(args.factor_cache_mb)]
        t = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            row = {"n_mentions": n, "error": f"did not finish within {args.timeout:.0f} s"}
        else:
            if proc.returncode != 0:
                row = {"n_mentions": n, "error": f"exit {proc.returncode}: {proc.stderr.strip()[-800:]}"}
            else:
                row = json.loads(proc.stdout.strip().splitlines()[-1])
        row["total_s"] = time.perf_counter() - t
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")
    print()
    print(f"{'mentions':>9} {'blocks':>7} {'largest':>7} {'synth s':>8} {'fit s':>6} {'infer s':>8} "
          f"{'mention/s':>9} {'evals/upd':>9} {'B3 F1':>6} {'peak MB':>8}")
    for r in rows:
        if "error" in r:
            print(f"{r['n_mentions']:>9} {r['error']}")
            continue
        print(f"{r['n_mentions']:>9} {r['n_blocks']:>7} {r['largest_block']:>7} {r['synth_s']:>8.1f} "
              f"{r['fit_s']:>6.1f} {r['infer_s']:>8.1f} {r['mentions_per_s']:>9.0f} "
              f"{r['factor_evals_per_mention_update']:>9.1f} {r.get('b3_f1', float('nan')):>6.3f} "
              f"{r['peak_rss_mb']:>8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
