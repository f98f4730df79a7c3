"""Racing vs exact Gibbs on one huge one-name synthetic block, with B3 F1 beside every time.

For each block size n: one block of ``coref.synth_block.synthesize_block(n, rng=seed)``
(heavy-tailed authors, one name) clustered by racing Gibbs with its defaults (small-arm
bound from the factor's structure, ``coref.gibbs.arm_bound``; partner memo,
``coref.gibbs._memo``) and, in the same run: racing with the exact row maxima
(n (n - 1) / 2 factors first) when ``--exact-bound-max`` allows; exact Gibbs in full
from its cached factor matrix when the matrix fits ``--cache-mb`` (same clusters as
uncached exact: its B3 F1); uncached exact Gibbs in full up to ``--exact-full-max``
mentions, beyond it ``--exact-sweeps`` timed sweeps (an exact step evaluates n - 1
factors whatever the state, so its sweep time does not depend on the clustering) times
30.  Prints one JSON line per run and a line of ratios.  Under load compare ``cpu_s``
(thread CPU time) rather than walls.

Usage (from outside the tree; big runs with ``nice``, one at a time)::

    PYTHONPATH=/work/wt-E2 nice python benchmarks/scripts/coref_racing_scale.py \
        --sizes 10000 --model /tmp/E2/m_synth

Model: ``coref fit`` on ``synthesize_block(3000, rng=7, n_blocks=3)`` (the shipped model
puts a one-name block into 1-2 clusters).  Measured 2026-11-27 (2 cores, load 10-18:
each process got 7-25% of a core, so CPU seconds, not walls), n = 10,000, seed 1:

* before (main d96a86b): racing 1.29e9 factors, ~13 exact sweeps' worth.
* pending small arms + partner memo K = 32: racing 1.83e8 factors (1.02e8 in sweep 1,
  the memo rows), 96 CPU-s, B3 F1 0.3235; exact from its cached matrix B3 F1 0.3238
  (racing - exact = -0.0003); uncached exact 14.3 CPU-s per sweep (2 timed), 430
  CPU-s for 30: 4.5x racing's CPU, 16.4x its factors.
* + O(1) memo bounds, K = 128: racing 1.11e8 factors (1.02e8 in sweep 1), 38.5 CPU-s,
  B3 F1 0.3233 (exact 0.3238): 27x fewer factors and 11x less CPU than 30 exact sweeps.
  What is left is sweep 1 (every singleton's row, one exact sweep) and the per-arm work
  of a step (one uniform and a bound per candidate cluster, ~5,300 of them).

Measured 2026-11-27 (second session, w/E3; load 7-9 on 2 cores, so CPU seconds), the SHIPPED
model (``coref predict``'s default) on ``coref synth --one-name --seed 0`` blocks:

* n = 10,000 (``--sizes 10000 --seed 0 --still-off``): racing 19 sweeps (early stop with
  the move tolerance, ``coref.gibbs.block.STILL_FRACTION``) 65.9 CPU-s, 2.63e8 factors, B3 F1
  0.3242; the same without the tolerance 30 sweeps, 102.1 CPU-s, 4.02e8 factors, F1 0.3256
  (1.55x the CPU); exact from its cached matrix 22.0 CPU-s (1.0e8 factors), F1 0.3250
  (racing - exact = -0.001); uncached exact 15.6 CPU-s per sweep (1e8 factors): x 30 = 469
  CPU-s = 7.1x racing's CPU (11.4x its factors), x 19 = 4.5x.
* Where racing's time goes (per-sweep profile): sweep 1 from singletons 2.9e7 factors at
  10k (2,008 partner-memo rows: 20% of the mentions), 5.8e8 at 30k (17,511 rows: 58%; 120
  CPU-s); every later sweep ~n / 11 factors per step (10k: 1.3e7, 3.4 CPU-s; 30k: 7.5e7-7.9e7,
  31-34 CPU-s), i.e. quadratic in n: the model puts about half of the block into one cluster
  (10k: 5,445 mentions, within-cluster factor sd 2-3), whose standard error enters every
  elimination test, and Appx. C.3's second mini-batch (N - 3) / 10 makes that arm draw N / 10.
  The literal reading of Appx. C.3's ``(|C_y| - 3)/10 ∧ 1`` (min: second batch 1, then
  doubling) costs 1.3x more factors per sweep at 10k (1.8e7 against 1.3e7), F1 0.321 at sweep 10.
  Starting from one cluster: sweep 1 2.0e7 factors but B3 F1 0.30 (stuck more merged).
* n = 30,000, ``nice /usr/bin/time -v python -P -m coref predict --data b30000.parquet`` (defaults:
  ``auto`` -> racing, matrix over 1024 MiB): 15 min 57 s wall at 63% of a core (603 CPU-s),
  peak RSS 588 MB, 1.90e9 factors (~19 sweeps: 5.8e8 in sweep 1), 4,472 clusters, B3 F1 0.642
  (P 0.730, R 0.573).  Raising ``MEMO_ROW_FRACTION`` to 1/2: sweep 1 4.3e8 factors (-25%, 140
  against 150 CPU-s, same state), sweep 2 1.03e8 against 7.5e7 (58 against 39 CPU-s): kept 1/16.
* n = 100,000: encoding 38 s, peak RSS before the sweeps 1.23 GB (memo arrays allocated).
  Extrapolated from 30k: sweep 1 ~6e9 factors (~25 CPU-min), later sweeps ~8.6e8 factors
  (~6 CPU-min) each: about 2 CPU-hours for 19 sweeps, against the 10-minute target.

Measured 2026-11-27 (w/E4, main 1dda5ab's model; load 2-5 on 2 cores: CPU seconds), first
clusterings of big blocks (``--inits``, ``coref.gibbs.start``), ``--seed 0 --no-exact --per-sweep``:

* n = 10,000: from singletons 20 sweeps, 3.21e8 factors (sweep 1 4.2e7, then ~1.47e7 each),
  73.0 CPU-s, B3 F1 0.6021; from the greedy over coauthor ids (3,251 clusters, start F1 0.748,
  2.4e5 factors, 0.04 s) 19 sweeps, 2.98e8 factors (sweep 1 3.5e7), 68.4 CPU-s, F1 0.6123;
  from the coauthor components (4,698 clusters, start F1 0.669) 19 sweeps, 2.94e8, 65.5 CPU-s,
  F1 0.6103.  The model drags every start to ~460 clusters (precision 0.5): F1 falls from
  sweep 1 on whatever the start.
* n = 30,000: greedy start 12,680 clusters (F1 0.591, 1.6e6 factors); racing 20 sweeps,
  1.99e9 factors (sweep 1 5.2e8), 578 CPU-s, F1 0.6622; components (19,322 clusters)
  2.00e9 (sweep 1 5.2e8), 619 CPU-s, F1 0.6596; from singletons (``coref predict``, see
  below) 1.97e9 factors, F1 0.6612.  Sweep 1 stays ~6x a later sweep from any of these starts:
  its cost is the partner-memo rows (n - 1 factors each, built once per mention when its
  pending small arms hold n / 16 members; ~14,000 of them at 30k), not the n singleton arms,
  and a start of thousands of small clusters still has that many small-arm members.
* n = 30,000, ``nice /usr/bin/time -v python -P -m coref predict --data b30000.parquet`` (racing),
  before (start from singletons) / after (``init="auto"``: the greedy start): wall 13:12 /
  11:03 (load 4-5), user CPU 677 / 648 s (0.96), peak RSS 587 / 585 MB, factors 1.967e9 /
  1.994e9, clusters 5,027 / 4,978, B3 F1 0.6612 / 0.6622.
* n = 10,000, defaults (``--sizes 10000 --seed 0 --exact-sweeps 2``; every sampler from the greedy
  start): racing 90.1 s wall (71.9 CPU-s), 19 sweeps, 2.98e8 factors, B3 F1 0.6123; exact from
  its cached matrix 20.3 s, F1 0.6151 (racing - exact = -0.003); uncached exact 14.4 s per
  sweep: x 30 = 431 s = 4.8x racing's wall (10.1x its factors), x 19 = 3.0x.
* The memo rows pay (greedy start, ``MEMO_ROW_FRACTION`` 1/16 / 1/4 / 1 = no rows): 10k
  2.98e8 / 3.00e8 / 3.07e8 factors (sweep 1 3.5e7 / 2.2e7 / 1.8e7, later sweeps 1.45e7 /
  1.50e7 / 1.56e7), F1 0.612 / 0.612 / 0.611; 30k without rows still running after 18 CPU-min
  (killed; 578 CPU-s with them).
* n = 100,000: the greedy start 3.6 s, 7.7e6 factors, 42,688 clusters (F1 0.539; 13.5% of
  the mentions have no coauthor and stay singletons).

Measured 2026-11-27 (third session; main 47d461e: 10 sweeps for big blocks, racing's control
variate ``coref.gibbs.control``; quiet machine but for one other process), ``--sizes 10000 --seed 0
--exact-sweeps 1 --exact-full-max 0``: racing 32.6 s (9 sweeps, 1.40e8 factors, sweep 1 3.44e7),
B3 F1 0.614; exact from its cached matrix 18.4 s (8 sweeps), F1 0.616 (racing - exact = -0.002);
one uncached exact sweep 14.4 s: x 30 = 431 s = 13.2x racing's wall (21.4x its factors); with
the 10-sweep schedule that racing ran (x 10) 4.4x.  Without the control variate (same process,
``cvrun``-style side by side): 1.67e8 factors, 38.4 CPU-s, F1 0.612.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd

from coref.datasets import default_model_path
from coref.evaluate import b3
from coref.gibbs import GibbsCoref
from coref.gibbs import block as gibbs_block
from coref.model import load_model
from coref.synth_block import synthesize_block


def _run(model, df, sampler, seed, n_sweeps=30, bound="features", cache_mb=0.0, still=True,
         per_sweep=False, init="singletons"):
    """One GibbsCoref fit; returns a dict of wall, cpu, factors, sweeps and B3 F1.

    ``still=False``: the early stop without its move tolerance (``STILL_MIN_N`` out of reach).
    ``per_sweep``: also ``sweeps``, one dict per sweep run (factors, mentions moved, clusters,
    B3 F1 of its state), from the recorded label history.
    """
    keep = gibbs_block.EXACT_BOUND_MAX_N
    keep_still = gibbs_block.STILL_MIN_N
    gibbs_block.EXACT_BOUND_MAX_N = 10**12 if bound == "exact" else keep
    gibbs_block.STILL_MIN_N = keep_still if still else 10**12
    try:
        t0 = time.perf_counter()
        g = GibbsCoref(model, sampler=sampler, rng=seed, n_sweeps=n_sweeps, record_history=per_sweep,
                       factor_cache_mb=cache_mb, init=init).fit(df)
        wall = time.perf_counter() - t0
    finally:
        gibbs_block.EXACT_BOUND_MAX_N = keep
        gibbs_block.STILL_MIN_N = keep_still
    pred = pd.Series(np.asarray(g.labels_), index=df["mention_id"].to_numpy())
    gold = pd.Series(df["gold"].to_numpy(), index=df["mention_id"].to_numpy())
    res = b3(pred, gold)
    sweeps = int(sum(g.n_sweeps_used_.values()))
    per = [int(x) for x in g.n_factor_evals_per_sweep_]
    extra = {}
    if per_sweep:
        h = g.labels_history_
        extra["sweeps"] = [dict(sweep=s, factors=per[s], moved=int((h[s] != h[max(s - 1, 0)]).sum()),
                                clusters=int(len(np.unique(h[s]))),
                                b3_f1=b3(pd.Series(h[s], index=pred.index), gold).f1)
                           for s in range(0, sweeps + 1)]
    return dict(extra, init=init, sampler=sampler, bound=bound, cached=bool(cache_mb), still=still, n=len(df),
                n_sweeps=n_sweeps,
                wall_s=wall, gibbs_wall_s=float(g.wall_s_), cpu_s=float(g.cpu_s_),
                factors=int(g.n_factor_evals_), factors_sweep1=per[1] if len(per) > 1 else 0,
                sweeps_used=sweeps, clusters=int(pred.nunique()), b3_p=res.precision, b3_r=res.recall,
                b3_f1=res.f1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--model", default=None, help="model directory (default: the shipped model)")
    ap.add_argument("--exact-full-max", type=int, default=3000,
                    help="run uncached exact Gibbs in full up to this n (beyond: timed sweeps)")
    ap.add_argument("--exact-sweeps", type=int, default=2)
    ap.add_argument("--cache-mb", type=float, default=1024.0,
                    help="also run exact Gibbs in full from its cached factor matrix (same clusters "
                         "as uncached exact) when the n x n matrix fits this many MiB: its B3 F1")
    ap.add_argument("--still-off", action="store_true",
                    help="also run racing with the early stop's move tolerance off (coref.gibbs.block."
                         "STILL_FRACTION), side by side")
    ap.add_argument("--no-exact", action="store_true", help="racing runs only")
    ap.add_argument("--per-sweep", action="store_true",
                    help="racing: also report factors, mentions moved, clusters and B3 F1 of every sweep")
    ap.add_argument("--inits", nargs="+", default=["auto"],
                    help="racing from each of these starts (GibbsCoref init), side by side; the "
                         "first is the one compared with exact")
    ap.add_argument("--exact-bound-max", type=int, default=0,
                    help="also run racing with the exact n^2 small-arm bound up to this n")
    args = ap.parse_args(argv)
    model, _ = load_model(args.model or default_model_path())
    rows = []
    for n in args.sizes:
        df = synthesize_block(n, rng=args.seed)
        runs = [("racing", "features", 30, 0.0, True)]
        if args.still_off:
            runs.append(("racing", "features", 30, 0.0, False))
        if n <= args.exact_bound_max:
            runs.append(("racing", "exact", 30, 0.0, True))
        if not args.no_exact and 8.0 * n * n <= args.cache_mb * 2.0**20:
            runs.append(("exact", "-", 30, args.cache_mb, True))
        if not args.no_exact:
            runs.append(("exact", "-", 30 if n <= args.exact_full_max else args.exact_sweeps, 0.0,
                         True))
        res = {}
        for sampler, bound, sw, mb, still in runs:
            r = _run(model, df, sampler, args.seed, sw, bound, mb, still,
                     args.per_sweep and sampler == "racing", args.inits[0])
            res[(sampler, bound, bool(mb), still)] = r
            print(json.dumps(r), flush=True)
            rows.append(r)
        rf = res[("racing", "features", False, True)]
        for init in args.inits[1:]:
            r = _run(model, df, "racing", args.seed, 30, "features", 0.0, True, args.per_sweep, init)
            print(json.dumps(r), flush=True)
            rows.append(r)
            print(f"n={n}: racing from {init}: {r['gibbs_wall_s']:.1f} s ({r['cpu_s']:.1f} CPU-s, "
                  f"{r['sweeps_used']} sweeps, {r['factors']:.3g} factors) B3 F1 {r['b3_f1']:.4f}; from "
                  f"{args.inits[0]}: {rf['gibbs_wall_s']:.1f} s ({rf['cpu_s']:.1f} CPU-s, {rf['sweeps_used']} "
                  f"sweeps, {rf['factors']:.3g} factors) B3 F1 {rf['b3_f1']:.4f}; CPU ratio "
                  f"{r['cpu_s'] / rf['cpu_s']:.2f}", flush=True)
        if ("racing", "features", False, False) in res:
            ro = res[("racing", "features", False, False)]
            print(f"n={n}: racing {rf['gibbs_wall_s']:.1f} s ({rf['cpu_s']:.1f} CPU-s, "
                  f"{rf['sweeps_used']} sweeps) B3 F1 {rf['b3_f1']:.4f}; without the move tolerance "
                  f"{ro['gibbs_wall_s']:.1f} s ({ro['cpu_s']:.1f} CPU-s, {ro['sweeps_used']} sweeps) "
                  f"B3 F1 {ro['b3_f1']:.4f}; CPU ratio {ro['cpu_s'] / rf['cpu_s']:.2f}", flush=True)
        if ("exact", "-", False, True) not in res:
            continue
        ex = res[("exact", "-", False, True)]
        if ex["n_sweeps"] < 30:
            per = ex["gibbs_wall_s"] / max(ex["sweeps_used"], 1)
            ex_est = per * 30
            note = f"exact estimated: {per:.2f} s/sweep x 30 sweeps"
        else:
            ex_est = ex["gibbs_wall_s"]
            note = f"exact run in full, B3 F1 {ex['b3_f1']:.3f}"
        line = (f"n={n}: racing {rf['gibbs_wall_s']:.1f} s B3 F1 {rf['b3_f1']:.3f} "
                f"{rf['factors'] / max(rf['sweeps_used'], 1) / n:.0f} factors/step "
                f"({rf['factors']:.3g} factors, sweep 1 {rf['factors_sweep1']:.3g}); exact {ex_est:.1f} s ({note}); "
                f"exact/racing wall = {ex_est / rf['gibbs_wall_s']:.1f}x, factors = "
                f"{30.0 * n * (n - 1) / max(rf['factors'], 1):.1f}x")
        if ("exact", "-", True, True) in res:
            ec = res[("exact", "-", True, True)]
            line += (f"; exact from its cached matrix {ec['gibbs_wall_s']:.1f} s B3 F1 {ec['b3_f1']:.3f} "
                     f"(racing - exact F1 = {rf['b3_f1'] - ec['b3_f1']:+.3f})")
        if ("racing", "exact", False, True) in res:
            re_ = res[("racing", "exact", False, True)]
            line += (f"; racing(exact n^2 bound) {re_['gibbs_wall_s']:.1f} s F1 {re_['b3_f1']:.3f} "
                     f"-> feature/exact-bound wall = {rf['gibbs_wall_s'] / re_['gibbs_wall_s']:.2f}")
        print(line, flush=True)
    return rows


if __name__ == "__main__":
    main()
