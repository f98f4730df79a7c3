"""Where the gap of a hard instance comes from (issue 30, deliverable 3: linkage_20, linkage_25).

Two measurements, each on this source tree::

    python benchmarks/scripts/bounds_profile.py wmb linkage_25 --i-bounds 8 10 12 14
    python benchmarks/scripts/bounds_profile.py dis linkage_25 --time 20 --i-bound 10

``wmb``: per i-bound, the WMB (same elimination order, ``--passes`` passes): table memory
(our estimate), build CPU seconds, first-pass and final bound, and ``--draws`` WMB-IS draws from
its proposal: the share of zero weights (a draw that reaches a zero factor), ln of the mean
weight (the estimate of ln Z), the largest ln weight, and the effective sample size
(sum w)^2 / sum w^2 of the draws.

``dis``: one DIS run (CPU clock) and the terms of its final Theorem 1 bounds (Lou, Dechter &
Ihler 2017, Eq. 14): with r_i = w_i / U_i, ``mean_r`` against the deviation terms ``t1 =
sqrt(2 Var(r) ln(2/delta) / N)`` (variance) and ``t2 = 7 ln(2/delta) / (3 (N - 1))`` (range);
the lower bound is the Markov one (``ln Zhat + ln delta``) while ``mean_r <= t1 + t2``. This
says which of the two (heavy-tailed weights: t1; a loose U: t2) keeps a gap open.

Measured (shared 2-core machine, load 9-12, w/F at 643ec1e; ln Z of linkage_25 = -202.362):

* ``wmb linkage_25 --i-bounds 8 10 12 14`` (10 passes): bound -177.0 / -182.6 / -190.0 / -192.7
  (first pass -133.1 / -143.9 / -156.4 / -158.3), 15 / 62 / 534 / 986 MiB; zero weights 99.9 /
  99.8 / 97.7 / 94.7 % of 4000 draws; ESS 1.0 / 1.1 / 3.4 / 21.5 of 4000; ln mean weight
  -214.6 / -207.7 / -202.8 / -202.3. Every WMB is 10-25 nats above ln Z and its WMB-IS
  weights are extremely heavy-tailed.
* ``dis linkage_25 --time 20 --i-bound 10``: N = 94695, U_S = -183.15, mean_r = 2.7e-9,
  t1 = 2.3e-9, t2 = 1.1e-4: the range term (U_S / Z = e^19.8) keeps the lower bound at
  Markov's; at 60 s with the default ladder (i-bound 12) U_S reached -200.5 (U / Z = e^1.9),
  and then t1 (the largest weights are e^10 times the mean) is what keeps it there.
* The order decides the table sizes: five randomized weighted min-fill orders
  (``sampling.bounds.ordering.randomized_min_fill_orders``) gave WMB tables at i-bound 14 of
  344-697 MiB against 986 MiB for the default order; the best (least total exact-table size)
  bounds ln Z by -193.45 at i-bound 14 in 461 MiB (10 CPU-s) against -190.01 at i-bound 12 in
  534 MiB for the default. With the ladder's restarts (w/F 1bbd17e), 60 CPU-s DIS, run two by
  two against 643ec1e: linkage_25 gap 0.259 (i-bound 15, Bernstein lower bound) vs 5.438
  (Markov); linkage_20 0.138 vs 0.245.
* Tried and dropped: restricting the WMB-IS mixture to the values every mini-bucket supports
  (a zero of one component is a zero of the model): zero weights 0.998 -> 0.86 (i-bound 10)
  and ESS x3, but draws cost more and the 60 CPU-s gaps did not improve (linkage_25 5.95 vs
  5.62, linkage_20 0.43 vs 0.38). 10 samples per DIS round instead of 1 changed little
  (30 CPU-s: 6.00 vs 6.80, 4.83 vs 5.12, both still Markov).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _setup():
    if str(ROOT) not in sys.path:  # measure this tree, not an installed copy
        sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(HERE))


def weight_stats(log_w):
    """``(zero share, ln mean weight, max ln weight, ESS)`` of log weights (n,)."""
    from scipy.special import logsumexp

    log_w = np.asarray(log_w, dtype=float)
    fin = np.isfinite(log_w)
    if not fin.any():
        return 1.0, -math.inf, -math.inf, 0.0
    lw = log_w[fin]
    ess = math.exp(2.0 * logsumexp(lw) - logsumexp(2.0 * lw))
    return float(1.0 - fin.mean()), float(logsumexp(lw) - math.log(log_w.size)), float(lw.max()), ess


def deviation_terms(acc):
    """The terms of Eq. 14 at the state of an ImportanceAccumulator: mean_r, t1, t2, ln HM(U)."""
    L = math.log(2.0 / acc.delta)
    n = acc.n
    scale = math.exp(acc._m) if acc._m > -math.inf else 0.0  # r values are stored divided by e^m
    mean_r = scale * acc._mean
    t1 = scale * math.sqrt(max(2.0 * acc._m2 / max(n - 1, 1) * L / max(n, 1), 0.0))
    t2 = 7.0 * L / (3.0 * (n - 1)) if n > 1 else math.inf
    return {"n": n, "mean_r": mean_r, "t1": t1, "t2": t2, "log_hm_U": acc.log_hm, "log_w_max": acc.log_w_max}


def profile_wmb(model, i_bounds, passes, draws, seed):
    """Rows (dicts) of the ``wmb`` measurement."""
    from sampling.bounds._ladder import wmb_evaluator
    from sampling.bounds.exact import default_order
    from sampling.bounds.importance import make_fast_proposal, sample_wmb_is
    from sampling.bounds.wmb import WeightedMiniBucket
    from sampling.exceptions import ConvergenceWarning

    order = default_order(model.squeeze())
    rows = []
    for ib in i_bounds:
        c0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            w = WeightedMiniBucket(model, i_bound=ib, memory_mb=1e6, elim_order=order, n_iters=passes).fit()
        build = time.process_time() - c0
        ev = wmb_evaluator(w, model)
        lw = sample_wmb_is(w, ev, draws, np.random.default_rng(seed), fast=make_fast_proposal(w, ev))
        zero, lmean, lmax, ess = weight_stats(lw)
        rows.append({"i_bound": ib, "memory_mb": float(w.memory_mb_), "build_cpu_s": build,
                     "first_pass": float(w.bound_history_[0]), "bound": float(w.log_Z_upper),
                     "passes": int(w.n_iters_), "zero_share": zero, "log_mean_w": lmean, "max_log_w": lmax,
                     "ess": ess, "draws": draws})
    return rows


def profile_dis(model, time_limit, i_bound, seed):
    """The ``dis`` measurement: final trace row and the Eq. 14 terms of the last bounds."""
    from sampling.bounds import dis, estimator

    last = {}
    orig = estimator.ImportanceAccumulator.bounds

    def spy(self, log_U_current=math.inf):
        out = orig(self, log_U_current)
        last.update(deviation_terms(self), log_U_current=float(log_U_current))
        return out

    estimator.ImportanceAccumulator.bounds = spy
    try:
        tr = dis.run(model, "dis", time_limit=time_limit, clock="cpu", i_bound=i_bound, rng=seed)
    finally:
        estimator.ImportanceAccumulator.bounds = orig
    return {**{k: v for k, v in tr.final.items() if k != "method"}, **last, "i_bound": tr.meta.get("i_bound")}


def main(argv=None):
    """Command line (see the module docstring)."""
    _setup()
    from bench_bounds_anytime import find
    from sampling import bounds

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("wmb", "dis"))
    ap.add_argument("instance")
    ap.add_argument("--i-bounds", type=int, nargs="+", default=[8, 10, 12])
    ap.add_argument("--i-bound", type=int, default=None, help="dis: WMB i-bound (default: the ladder's)")
    ap.add_argument("--passes", type=int, default=10)
    ap.add_argument("--draws", type=int, default=4000)
    ap.add_argument("--time", type=float, default=20.0, help="dis: CPU seconds")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    path, evid, log_Z = find(args.instance)
    model = bounds.read_uai(str(path), evidence=str(evid) if evid else None)
    if args.what == "wmb":
        for row in profile_wmb(model, args.i_bounds, args.passes, args.draws, args.seed):
            print(json.dumps({"instance": args.instance, "log_Z": log_Z, **row}), flush=True)
    else:
        row = profile_dis(model, args.time, args.i_bound, args.seed)
        print(json.dumps({"instance": args.instance, "log_Z": log_Z, **row}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
