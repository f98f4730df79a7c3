"""Table 1 of Lou, Dechter & Ihler (2017) on the UAI'08 pedigree set.

For each instance a weighted mini-bucket (WMB) is fitted once (its time is not charged to
the methods), then each method runs for ``--time`` seconds:

    AOBFS, WMB-IS, DIS (Nl=1, Nd=1), DIS (Nl=1, Nd=10), two-stage

The score of a run is the area between the ln upper and the ln lower bound over [0, T]
(:func:`sampling.bounds.trace.bound_area`), every method getting the same initial lower
bound ("To avoid vacuous lower bounds, we provide each algorithm with an initial lower
bound on logZ from WMB", Sec. 5 of the paper); areas are normalised by WMB-IS on the same
instance and summarised by their geometric mean over instances. Two initial lower bounds
are scored from the same traces:

* ``greedy``: ln f(x) of the best of the greedy WMB configuration and 2000 WMB proposal
  draws (deterministic, but 70-150 nats below ln Z on the pedigrees, so it dominates the
  area of AOBFS and of the search stage of two-stage, which have no other lower bound);
* ``markov``: the Markov lower bound ln(mean_i f(x_i)/q(x_i)) + ln(delta) of
  ``--floor-samples`` WMB proposal draws made once per instance (not charged to any
  method; holds with probability >= 1 - delta), i.e. a WMB-based initial lower bound
  a few nats below ln Z, in the spirit of the paper's WMB lower bound / free lower-bound
  heuristic for AOBFS.

A third table scores the Markov-floor areas over ln t from ``--log-t0`` seconds to T (the
x-axis of the paper's Fig. 3; the paper does not say whether Table 1 integrates over t or
ln t). ``--rescore DIR[,DIR...]`` recomputes all tables from the traces earlier runs saved
in those folders. With a known ln Z it also checks that each run's bounds
bracket ln Z at every trace point and that the deterministic upper bound stays >= ln Z, up to
the rounding of the printed reference (``bounds_refs.py``, shared with
``bench_bounds_anytime.py``: half a unit of the last printed digit of log10 Z, times ln 10;
0.0115 nats for the two-decimal pedigree38 / pedigree50 values or a ``.PR`` file like
Grids_17's ``1311.98``). A ``NAME.uai.PR`` file beside ``NAME.uai`` in ``--data`` is used
as the reference of an instance that is not a UAI'08 pedigree.

Paper (1 hour per run, C++, 1 GB): AOBFS 16.638, WMB-IS 1, DIS(1,1) 0.711,
DIS(1,10) 0.585, two-stage 1.321.

Full protocol (22 instances x 5 settings x 60 s, about 2 h plus WMB time)::

    python benchmarks/scripts/bench_bounds_table1.py --all --time 60 --out results/table1

If it is stopped, the same command with ``--resume`` keeps the runs already saved in
``OUT/runs.csv`` (with their traces) and runs only the missing instance / setting pairs.

Measured (commit 45f04eb; the CSV is git history: benchmarks/measured/table1_pedigree_60s_cpu.csv):
all 22 pedigrees, 60 CPU-s per run (``--clock cpu --i-bound 0 --time 60``; i-bound the
largest that fits 1 GB, WMB time not charged), delta 0.025, seed 0, one process per core on
the 2-core machine (the AOBFS traces are those of bc36c9e: the search did not change since).
Geometric mean of area / WMB-IS, Markov floor (paper, 1 hour, in brackets): AOBFS 113.6
(16.638), DIS(1,1) 0.976 (0.711), DIS(1,10) 1.128 (0.585), two-stage 14.8 (1.321); over ln t:
29.9 / 0.985 / 1.180 / 19.6; greedy floor 1337 / 0.987 / 1.069 / 148. Final gap narrower
than WMB-IS's: DIS(1,1) on 10/22, DIS(1,10) on 10/22, two-stage on 9/22. Every sampling run
with a known ln Z bracketed it at every trace point (84/84); no deterministic upper bound
fell below ln Z (0/105). Per sample q_S is about as good as the WMB proposal (median gap x
sqrt(samples) 0.97 of WMB-IS's, below 0.9 on 8 of 21 instances; pedigree1 is solved exactly
by the WMB), and in 60 s DIS(1,1) draws a median 0.83 as many samples (0.52-1.06), DIS(1,10)
0.72 (0.37-1.06); so DIS clearly wins only where search cuts the weight variance a lot
(pedigrees 19, 37, 38: gap 0.50-0.62 of WMB-IS's; 41: 0.87-0.89). AOBFS and two-stage have
no lower bound but the floor while they search, which dominates their area at 60 s.

Anytime protocol (issue 15): every run builds its own WMB ladder inside the budget
(``benchmarks/scripts/bench_bounds_anytime.py --traces``, one run per process), then
``--anytime-summary DIR --time T`` scores the saved traces: final gaps, Table 1 (area over
[0, T], normalised by WMB-IS) and the anytime area over ln t in ``--window`` (default
[1, 60] s), every method of an instance given the same initial lower bound from the WMB
(the lower of the two runs' first WMB-IS lower bounds)::

    python benchmarks/scripts/bench_bounds_anytime.py pedigree19 --method dis --time 300 --clock cpu \
        --traces git history: benchmarks/measured/bounds_traces_300s_dis \
        --out git history: benchmarks/measured/bounds_runs/300s_dis_pedigree19.csv   # and --method wmb-is
    python benchmarks/scripts/bench_bounds_table1.py --anytime-summary benchmarks/measured --time 300

Measured (code of 0f8e0dd, i.e. DIS sampling from the fixed tree once it is full; 300 CPU-s,
1 GB, delta 0.025, seed 1, two runs at a time on the shared 2-core machine;
``git history: benchmarks/measured/bounds_table1_300s.{csv,txt}``): DIS(1,10)'s final gap below
WMB-IS's on 7/7 instances (pedigree19 0.031 vs 0.054, pedigree33 0.0036 vs 0.0040,
pedigree37 0.0025 vs 0.0052, pedigree38 0.012 vs 0.020, pedigree41 0.016 vs 0.019,
Grids_16 0.0003 vs 0.0010, Promedus_38 0.000005 vs 0.0005; geometric mean ratio 0.34);
Table 1 area ratio 0.880 (paper, 1 h: 0.585), anytime area over ln t in [1, 60] s 0.898;
all 14 runs bracket ln Z
at every trace point, no deterministic upper bound below it. In every DIS run the search
tree stopped growing (node budget full) 18-50 s into the run; DIS then sampled from that
fixed tree for the remaining 250-280 s. The first lower bound came 6-48 s into the runs
(one big WMB rung at this budget; the capped first-bound share of schedule.py, added
after these runs, brings it to 1.6-2.1 s on pedigrees 37 and 19).

Measured at 60 CPU-s (code of 0d95606, with the capped first-bound share; seed 1, 1 GB, delta
0.025, one run at a time, 1-min load 0.9-4.4; ``git history: benchmarks/measured/bounds_table1_60s.{csv,txt}``,
same 8 instances)::

    python benchmarks/scripts/bench_bounds_table1.py --anytime-summary benchmarks/measured --time 60 \
        --only Grids_16,Promedus_25,Promedus_38,pedigree19,pedigree33,pedigree37,pedigree38,pedigree41

DIS(1,10)'s final gap below WMB-IS's on 8/8 (geometric mean ratio 0.320; 300 s: 0.239);
Table 1 area over [0, T] / WMB-IS 0.936 at 60 s, 0.878 at 300 s (paper, 1 h: 0.585); anytime
area over ln t in [1, 60] s 0.899 (300 s runs: 0.896); first finite upper bound <= 0.63 s,
first lower bound <= 2.16 s, every run bracketed ln Z at every trace point (16/16). The same
60 s runs plus pedigrees 23 and 30, absolute areas per pedigree for a side-by-side comparison:
``git history: benchmarks/measured/bounds_pedigree_area_60s.txt`` (``--prefix bounds_pedigree_area_60s``).

Short run used in the session::

    python benchmarks/scripts/bench_bounds_table1.py --instances pedigree1,pedigree20 --time 20
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from sampling.utils.atomic import atomic_path
from sampling.bounds.dis import run
from sampling.bounds.trace import BoundTrace, bound_area, plot_traces
from sampling.bounds.uai import read_uai
from sampling.bounds.wmb import WeightedMiniBucket

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared helper beside this script
from bounds_refs import PEDIGREE_LNZ as LN_Z, UAI_DATA, brackets, reference  # noqa: E402

DATA = str(UAI_DATA / "pedigree")  # the shared pedigree set beside the repository

SETTINGS = {
    "AOBFS": dict(method="aobfs", n_expansions=10),
    "WMB-IS": dict(method="wmb-is", n_samples=1),
    "DIS(1,1)": dict(method="dis", n_samples=1, n_expansions=1),
    "DIS(1,10)": dict(method="dis", n_samples=1, n_expansions=10),
    "two-stage": dict(method="two-stage", n_samples=1, n_expansions=10),
}
PAPER = {"AOBFS": 16.638, "WMB-IS": 1.0, "DIS(1,1)": 0.711, "DIS(1,10)": 0.585, "two-stage": 1.321}


def common_floor(model, wmb, seed, n=2000):
    """Deterministic initial lower bound shared by every method: max ln f(x) over the greedy
    WMB configuration and ``n`` WMB proposal draws (any x has f(x) <= Z)."""
    from sampling.bounds.importance import FactorEvaluator, FastProposal, greedy_log_lower

    ev = FactorEvaluator(wmb.model, wmb.pseudo_tree.parent)
    fast = FastProposal(wmb, ev)
    rng = np.random.default_rng(seed)
    zero = np.zeros(fast.n_vars, dtype=np.int64)
    best = greedy_log_lower(wmb, ev)
    for _ in range(n):
        _, _, log_g = fast.sample(rng, zero, fast.roots)
        best = max(best, fast.log_constant + log_g)
    return float(best)


def markov_floor(wmb, seed, delta, n=1000):
    """Markov lower bound ln(mean w) + ln(delta) from ``n`` WMB proposal draws (w = f/q):
    P(mean w >= Z / delta) <= delta, so it is a (1 - delta) probabilistic lower bound."""
    from sampling.bounds.importance import FactorEvaluator, FastProposal, sample_wmb_is

    ev = FactorEvaluator(wmb.model, wmb.pseudo_tree.parent)
    fast = FastProposal(wmb, ev)
    log_w = sample_wmb_is(wmb, ev, n, np.random.default_rng([seed, 991]), fast=fast)
    m = float(np.max(log_w))
    return float(m + np.log(np.mean(np.exp(log_w - m))) + np.log(delta))


def summarise(df, settings, title):
    """Print Table 1 (both floors) and the per-instance final-gap comparison; returns df."""
    for floor in ("greedy", "markov", "markov_logt"):
        col = f"area_{floor}"
        if col not in df:
            continue
        ref = df[df.setting == "WMB-IS"].set_index("instance")[col]
        area = df[col].to_numpy(float)
        base = df["instance"].map(ref).to_numpy(float)   # NaN where WMB-IS did not run
        with np.errstate(divide="ignore", invalid="ignore"):
            # both areas 0 (both exact at once): the same area, ratio 1
            df[f"normalized_{floor}"] = np.where((area == 0.0) & (base == 0.0), 1.0, area / base)
        with np.errstate(divide="ignore"):  # an area of 0 (solved at once) gives a mean of 0
            summary = (df.groupby("setting")[f"normalized_{floor}"]
                       .apply(lambda x: float(np.exp(np.mean(np.log(x))))).reindex(settings))
        print(f"\nTable 1 ({title}), initial lower bound '{floor}': geometric mean of area / area(WMB-IS)")
        print(f"{'setting':12s} {'ours':>10s} {'paper':>10s}")
        for s in settings:
            print(f"{s:12s} {summary[s]:10.3f} {PAPER[s]:10.3f}")
    if "brackets_all" in df:
        known = df[df.brackets_all.notna()]  # instances with a known ln Z only
        prob = known[known.setting.isin(["DIS(1,1)", "DIS(1,10)", "two-stage", "WMB-IS"])]
        print(f"\nruns bracketing ln Z at every trace point: {int(prob.brackets_all.astype(bool).sum())}/{len(prob)} "
              f"(sampling methods, instances with a known ln Z); runs whose deterministic upper bound fell "
              f"below ln Z: {int((~known.det_upper_ok.astype(bool)).sum())}/{len(known)}")
        for s in settings:
            sub = known[known.setting == s]
            print(f"  {s:10s} brackets at every point in {int(sub.brackets_all.astype(bool).sum())}/{len(sub)} runs")
    wis = df[df.setting == "WMB-IS"].set_index("instance")["gap"]
    for s in ("DIS(1,1)", "DIS(1,10)", "two-stage"):
        dis = df[df.setting == s].set_index("instance")["gap"]
        both = dis.index.intersection(wis.index)
        if len(both):
            per = ", ".join(f"{i}: {dis[i]:.4f} vs {wis[i]:.4f}" for i in both)
            print(f"final gap {s} < WMB-IS on {int((dis[both] < wis[both]).sum())}/{len(both)} instances ({per})")
    return df


def rescore(args, settings):
    """Recompute areas (both floors) from the traces saved by earlier runs in ``args.rescore``
    (the Markov floor saved with the runs is reused when all runs of an instance agree on it)."""
    dirs = args.rescore.split(",")
    parts = []
    for d in dirs:
        part = pd.read_csv(os.path.join(d, "runs.csv"))
        part["trace_dir"] = os.path.join(d, "traces")
        parts.append(part)
    df = pd.concat(parts, ignore_index=True).sort_values("instance", kind="stable")
    rows = []
    for name, sub in df.groupby("instance", sort=False):
        saved = sub.get("log_Z_floor_markov", pd.Series(dtype=float)).dropna().unique()
        if len(saved) == 1:  # every run of this instance was scored with the same Markov floor
            mfloor = float(saved[0])
        else:
            model = read_uai(os.path.join(args.data, name + ".uai"))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                wmb = WeightedMiniBucket(model, i_bound=int(sub.i_bound.iloc[0]), memory_mb=args.memory_mb).fit()
            mfloor = markov_floor(wmb, args.seed, args.delta, args.floor_samples)
        gfloor = float(sub.log_Z_floor.iloc[0])
        for _, r in sub.iterrows():
            s = r["setting"]
            tr = BoundTrace.from_csv(os.path.join(r["trace_dir"], _trace_name(name, s)))
            r = r.to_dict()
            r["log_Z_floor_markov"] = mfloor
            r["area_greedy"] = bound_area(tr, t_start=0.0, t_end=args.time, log_Z_floor=gfloor)
            r["area_markov"] = bound_area(tr, t_start=0.0, t_end=args.time, log_Z_floor=mfloor)
            r["area_markov_logt"] = bound_area(tr, t_start=args.log_t0, t_end=args.time, log_Z_floor=mfloor,
                                               log_time=True)
            rows.append(r)
        print(f"{name}: greedy floor {gfloor:.3f}, Markov floor {mfloor:.3f}", file=sys.stderr, flush=True)
    out = pd.DataFrame(rows)
    out = summarise(out, [s for s in settings if s in set(out.setting)], f"rescored {args.rescore}, {args.time:g} s")
    _write_csv(out, os.path.join(dirs[0], "runs_rescored.csv"))
    return 0


def _gap_area(df, t0, t1, floor, log_time):
    """Area of max(up - max(lo, floor), 0) over [t0, t1] (t or ln t) of a trace frame whose
    bounds are step functions; before the first record the gap is the first finite upper
    bound minus the floor (the run has no bound yet: the floor and the first bound)."""
    t = df["time_s"].to_numpy(dtype=float)
    up = df["log_Z_upper"].to_numpy(dtype=float)
    lo = np.maximum(df["log_Z_lower"].to_numpy(dtype=float), floor)
    gap = np.where(np.isfinite(up), np.maximum(up - lo, 0.0), np.nan)
    fin = np.isfinite(gap)
    if not fin.any():
        return math.inf
    first_up = up[np.flatnonzero(np.isfinite(up))[0]]
    gap = np.where(fin, gap, max(first_up - floor, 0.0))  # rows before the first finite bound
    f = np.log if log_time else (lambda v: v)
    ends = np.append(t[1:], max(t1, t[-1]))
    a = f(np.clip(t, t0, t1))
    b = f(np.clip(ends, t0, t1))
    total = float(np.sum(np.where(b > a, (b - a) * gap, 0.0)))
    if t[0] > t0:
        total += (f(min(t[0], t1)) - f(t0)) * max(first_up - floor, 0.0)
    return total


def anytime_summary(root, t_final, t_window, out_prefix, settings=("wmb-is", "dis"), only=None, note=None):
    """Table 1 and the anytime area from the traces of ``bench_bounds_anytime.py --traces``
    runs saved as ``ROOT/bounds_traces_{T}s_{method}/NAME.csv`` (+ ``NAME.json``) and their
    one-row CSVs ``ROOT/bounds_runs/{T}s_{method}_NAME.csv`` (every run built its own WMB
    ladder inside the budget: the anytime protocol of issue 15).

    Per instance the initial lower bound given to both methods (Sec. 5 of the paper: "an
    initial lower bound on logZ from WMB") is the lower of the two runs' first finite lower
    bounds, which are Markov / empirical-Bernstein bounds of WMB-IS draws from the first
    WMB of the ladder (a (1 - delta) WMB lower bound, available about 1 s into a run).
    Prints per instance the final gaps, the area over [0, T] (Table 1, normalised by
    WMB-IS) and over ln t in ``t_window`` (the anytime area), and their geometric means
    beside the paper's, then the absolute anytime areas with each run's first-bound times;
    writes ``OUT_PREFIX.csv`` and ``OUT_PREFIX.txt``. ``only``: restrict to these instances;
    ``note``: a first line for the text (how the runs were made, the machine's load).

    Bracketing is recomputed from each saved trace against the reference ln Z and its rounding
    tolerance (:func:`bounds_refs.reference`: half a unit of the last printed digit of log10 Z),
    so runs saved by any version of ``bench_bounds_anytime.py`` are judged alike."""
    import json

    T = int(t_final)
    # every run of this budget (any method, with or without a partner run): first bound,
    # return time, bracketing (the must-show of issue 15)
    runs = sorted((Path(root) / "bounds_runs").glob(f"{T}s_*.csv"))
    lines = [note] if note else []
    if runs:
        allr = pd.concat([pd.read_csv(f) for f in runs], ignore_index=True)
        if only is not None:
            allr = allr[allr.instance.isin(only)].reset_index(drop=True)
        for k, r in allr.iterrows():  # judge every saved trace with the same reference and tolerance
            tr_csv = Path(root) / f"bounds_traces_{T}s_{r['method']}" / f"{r['instance']}.csv"
            lz, tol = reference(r["instance"], UAI_DATA)
            allr.loc[k, "log_Z_tol"] = tol
            if tr_csv.exists() and lz is not None:
                d = pd.read_csv(tr_csv)
                allr.loc[k, "log_Z_ref"] = lz
                allr.loc[k, "bracketed"] = brackets(d["log_Z_upper"], d["log_Z_lower"], lz, tol)
                allr.loc[k, "det_upper_ok"] = brackets(d["log_Z_upper_det"], -np.inf, lz, tol)
        with atomic_path(out_prefix + "_runs.csv") as tmp:
            allr.to_csv(tmp, index=False)
        for m, sub in allr.groupby("method"):
            known = sub[sub.log_Z_ref.notna()]
            lines.append(f"{m} {T} s runs: {len(sub)} ({', '.join(sub.instance)}); first finite upper bound "
                         f"max {sub.first_upper_s.max():.2f} s (median {sub.first_upper_s.median():.2f}); first lower "
                         f"max {sub.first_lower_s.max():.2f} s; returned max {sub.returned_s.max():.1f} s; "
                         f"bracketed ln Z at every trace point {int(known.bracketed.astype(bool).sum())}/{len(known)}; "
                         f"deterministic upper >= ln Z {int(known.det_upper_ok.astype(bool).sum())}/{len(known)}")
    dirs = {m: Path(root) / f"bounds_traces_{T}s_{m}" for m in settings}
    names = sorted(set.intersection(*[{p.stem for p in d.glob("*.csv")} for d in dirs.values()]))
    if only is not None:
        names = [n for n in names if n in set(only)]
    rows = []
    for name in names:
        dfs = {m: pd.read_csv(dirs[m] / f"{name}.csv") for m in settings}
        metas = {m: json.loads((dirs[m] / f"{name}.json").read_text()) for m in settings}
        firsts = [float(d["log_Z_lower"][np.isfinite(d["log_Z_lower"])].iloc[0]) for d in dfs.values()
                  if np.isfinite(d["log_Z_lower"]).any()]
        floor = min(firsts) if firsts else float(metas[settings[0]].get("log_Z_floor") or -np.inf)
        ref, tol = reference(name, UAI_DATA)
        for m in settings:
            d = dfs[m]
            run_csv = Path(root) / "bounds_runs" / f"{T}s_{m}_{name}.csv"
            r = pd.read_csv(run_csv).iloc[0].to_dict() if run_csv.exists() else {}
            if ref is not None:  # recomputed from the trace (see the docstring)
                r["bracketed"] = brackets(d["log_Z_upper"], d["log_Z_lower"], ref, tol)
                r["det_upper_ok"] = brackets(d["log_Z_upper_det"], -np.inf, ref, tol)
            rows.append(dict(instance=name, method=m, time_limit=T, log_Z_ref=ref, log_Z_tol=tol, floor=floor,
                             final_upper=float(d["log_Z_upper"].iloc[-1]),
                             final_lower=float(d["log_Z_lower"].iloc[-1]),
                             gap=float(d["log_Z_upper"].iloc[-1] - d["log_Z_lower"].iloc[-1]),
                             area=_gap_area(d, 0.0, T, floor, False),
                             area_logt=_gap_area(d, t_window[0], t_window[1], floor, True),
                             area_logt_full=_gap_area(d, t_window[0], T, floor, True),
                             first_upper_s=r.get("first_upper_s"), first_lower_s=r.get("first_lower_s"),
                             returned_s=r.get("returned_s"), bracketed=r.get("bracketed"),
                             det_upper_ok=r.get("det_upper_ok"), n_samples=int(d["n_samples"].iloc[-1]),
                             n_expansions=int(d["n_expansions"].iloc[-1]), i_bound=r.get("i_bound"),
                             max_nodes_reached_s=(float(d["time_s"][d["n_nodes"] == d["n_nodes"].max()].iloc[0])
                                                  if d["n_nodes"].max() > 0 else None)))
    df = pd.DataFrame(rows)
    if df.empty:
        lines.append(f"no instance has {T} s traces of every setting {settings}")
        print("\n".join(lines))
        with atomic_path(out_prefix + ".txt") as tmp:
            Path(tmp).write_text("\n".join(lines) + "\n")
        return df
    base = df[df.method == settings[0]].set_index("instance")
    df["area_norm"] = df.apply(lambda r: r["area"] / base.loc[r["instance"], "area"], axis=1)
    df["area_logt_norm"] = df.apply(lambda r: r["area_logt"] / base.loc[r["instance"], "area_logt"], axis=1)
    df["area_logt_full_norm"] = df.apply(lambda r: r["area_logt_full"] / base.loc[r["instance"], "area_logt_full"],
                                         axis=1)
    df["gap_norm"] = df.apply(lambda r: r["gap"] / base.loc[r["instance"], "gap"], axis=1)
    paper = {"wmb-is": PAPER["WMB-IS"], "dis": PAPER["DIS(1,10)"]}
    lines.append(f"Anytime protocol, {T} CPU-s per run (WMB ladder inside the budget), delta 0.025, "
                 f"1 GB, DIS = DIS(1,10); {len(names)} instances: {', '.join(names)}")
    lines.append(f"{'instance':20s} {'gap WMB-IS':>11s} {'gap DIS':>9s} {'DIS/WIS':>8s} {'area/WIS':>9s} "
                 f"{'lnt[1,60]/WIS':>13s} {'lnt[1,T]/WIS':>12s} {'bracketed':>10s}")
    for name in names:
        a, b = base.loc[name], df[(df.instance == name) & (df.method == settings[1])].iloc[0]
        lines.append(f"{name:20s} {a['gap']:11.4f} {b['gap']:9.4f} {b['gap_norm']:8.3f} {b['area_norm']:9.3f} "
                     f"{b['area_logt_norm']:13.3f} {b['area_logt_full_norm']:12.3f} {str(a['bracketed']) + '/' + str(b['bracketed']):>10s}")
    dis = df[df.method == settings[1]]
    gm = lambda x: float(np.exp(np.mean(np.log(np.asarray(x, dtype=float)))))  # noqa: E731
    lines.append(f"final gap DIS(1,10) < WMB-IS on {int((dis.gap_norm < 1).sum())}/{len(dis)}; "
                 f"geometric mean gap ratio {gm(dis.gap_norm):.3f}")
    lines.append(f"Table 1 (area over [0, {T}] s / WMB-IS, geometric mean): DIS(1,10) {gm(dis.area_norm):.3f} "
                 f"(paper, 1 h: {paper['dis']}), WMB-IS 1 (paper 1)")
    lines.append(f"anytime area over ln t in [{t_window[0]:g}, {t_window[1]:g}] s / WMB-IS, geometric mean: "
                 f"DIS(1,10) {gm(dis.area_logt_norm):.3f}; over ln t in [{t_window[0]:g}, {T}] s: "
                 f"{gm(dis.area_logt_full_norm):.3f}")
    lines.append(f"absolute anytime area over ln t in [{t_window[0]:g}, {t_window[1]:g}] s (nats x ln s; same floor "
                 f"for both: the lower first WMB-IS lower bound), with each run's first finite upper / lower "
                 f"bound time (CPU s):")
    for name in names:
        parts = []
        for m in settings:
            r = df[(df.instance == name) & (df.method == m)].iloc[0]
            parts.append(f"{m} {r['area_logt']:8.4f} (first {r['first_upper_s']:.2f} / {r['first_lower_s']:.2f} s)")
        lines.append(f"  {name:18s} floor {df[df.instance == name].floor.iloc[0]:.4f}: " + ", ".join(parts))
    print("\n".join(lines))
    with atomic_path(out_prefix + ".csv") as tmp:
        df.to_csv(tmp, index=False)
    with atomic_path(out_prefix + ".txt") as tmp:
        Path(tmp).write_text("\n".join(lines) + "\n")
    return df


def _trace_name(name, s):
    return f"{name}_{s.replace('(', '_').replace(')', '').replace(',', '_')}.csv"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--instances", default="pedigree1,pedigree20,pedigree23,pedigree38,pedigree42,pedigree50")
    p.add_argument("--all", action="store_true", help="all 22 pedigree instances")
    p.add_argument("--time", type=float, default=20.0, help="seconds per run (paper: 3600)")
    p.add_argument("--i-bound", type=int, default=12,
                   help="WMB i-bound; 0 = the largest that fits --memory-mb (the paper's choice)")
    p.add_argument("--memory-mb", type=float, default=1024.0)
    p.add_argument("--delta", type=float, default=0.025)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--settings", default=";".join(SETTINGS), help="settings separated by ;")
    p.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" / "table1"))
    p.add_argument("--data", default=DATA, help="folder with pedigreeN.uai (default: the shared full set)")
    p.add_argument("--floor-samples", type=int, default=1000,
                   help="WMB proposal draws for the Markov initial lower bound")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="time budget and trace clock: wall seconds (paper) or this process's CPU seconds "
                        "(fair between methods on a shared, loaded machine)")
    p.add_argument("--log-t0", type=float, default=0.1, help="start (s) of the ln-t area window")
    p.add_argument("--resume", action="store_true",
                   help="keep the runs already in OUT/runs.csv (same instance and setting) and run only the rest")
    p.add_argument("--rescore", default=None,
                   help="recompute the tables from the traces saved in these folders (comma-separated; "
                        "e.g. one run of WMB-IS and DIS and one of AOBFS and two-stage)")
    p.add_argument("--anytime-summary", default=None, metavar="DIR",
                   help="no runs: Table 1 and the anytime area from the bench_bounds_anytime.py traces "
                        "saved under DIR (bounds_traces_{T}s_{wmb-is,dis}/, bounds_runs/), T = --time; "
                        "writes DIR/bounds_table1_{T}s.csv/.txt (see --only, --prefix)")
    p.add_argument("--window", default="1,60", help="ln-t window (s) of the anytime area, e.g. 1,60")
    p.add_argument("--only", default=None,
                   help="--anytime-summary: score only these instances (comma-separated; default: every "
                        "instance with traces of both settings)")
    p.add_argument("--note", default=None, help="--anytime-summary: first line of the text (how the runs were made)")
    p.add_argument("--prefix", default=None,
                   help="--anytime-summary: output file name without extension (default bounds_table1_{T}s)")
    args = p.parse_args(argv)
    if args.anytime_summary:
        t0, t1 = (float(v) for v in args.window.split(","))
        anytime_summary(args.anytime_summary, args.time, (t0, t1),
                        os.path.join(args.anytime_summary, args.prefix or f"bounds_table1_{int(args.time)}s"),
                        only=args.only.split(",") if args.only else None, note=args.note)
        return 0
    if args.rescore:
        return rescore(args, args.settings.split(";"))
    names = list(LN_Z) if args.all else args.instances.split(",")
    settings = args.settings.split(";")
    os.makedirs(os.path.join(args.out, "traces"), exist_ok=True)
    rows = []
    done = {}  # (instance, setting) -> row of an earlier run kept by --resume
    runs_csv = os.path.join(args.out, "runs.csv")
    if args.resume and os.path.exists(runs_csv):
        for r in pd.read_csv(runs_csv).to_dict("records"):
            if os.path.exists(os.path.join(args.out, "traces", _trace_name(r["instance"], r["setting"]))):
                done[(r["instance"], r["setting"])] = r
        print(f"resuming: {len(done)} runs kept from {runs_csv}", file=sys.stderr, flush=True)
    for name in names:
        if all((name, s) in done for s in settings):
            rows.extend(done[(name, s)] for s in settings)
            continue
        model = read_uai(os.path.join(args.data, name + ".uai"))
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            wmb = WeightedMiniBucket(model, i_bound=args.i_bound or None, memory_mb=args.memory_mb).fit()
        t_wmb = time.perf_counter() - t0
        # ln Z and its rounding (bounds_refs): a pedigree's listed value or a .PR file beside the model
        lz, tol = reference(name, pr_path=os.path.join(args.data, name + ".uai.PR"))
        floor = common_floor(model, wmb, args.seed)
        mfloor = markov_floor(wmb, args.seed, args.delta, args.floor_samples)
        print(f"{name}: n_vars={model.n_vars} i_bound={wmb.i_bound} ln U_wmb={wmb.log_Z_upper:.4f} "
              f"ln Z={lz} floor={floor:.3f} Markov floor={mfloor:.3f} (WMB {t_wmb:.1f} s)",
              file=sys.stderr, flush=True)
        traces = {}
        for k, s in enumerate(settings):
            if (name, s) in done:
                rows.append(done[(name, s)])
                traces[s] = BoundTrace.from_csv(os.path.join(args.out, "traces", _trace_name(name, s)))
                continue
            cfg = SETTINGS[s]
            tr = run(model, time_limit=args.time, memory_mb=args.memory_mb, delta=args.delta, wmb=wmb,
                     rng=np.random.default_rng([args.seed, k]), clock=args.clock, **cfg)
            traces[s] = tr
            tr.to_csv(os.path.join(args.out, "traces", _trace_name(name, s)))
            area = bound_area(tr, t_start=0.0, t_end=args.time, log_Z_floor=floor)
            area_m = bound_area(tr, t_start=0.0, t_end=args.time, log_Z_floor=mfloor)
            area_ml = bound_area(tr, t_start=args.log_t0, t_end=args.time, log_Z_floor=mfloor, log_time=True)
            row = dict(instance=name, setting=s, area=area, area_greedy=area, area_markov=area_m,
                       area_markov_logt=area_ml,
                       t_wmb=t_wmb, i_bound=wmb.i_bound,
                       log_Z=lz, log_Z_wmb=wmb.log_Z_upper, log_Z_floor=floor, log_Z_floor_markov=mfloor,
                       final_upper=tr.final_log_Z_upper, final_lower=tr.final_log_Z_lower,
                       final_hat=tr.final_log_Z_hat, gap=tr.final_log_Z_upper - max(tr.final_log_Z_lower, floor),
                       n_samples=int(tr.n_samples[-1]), n_expansions=int(tr.n_expansions[-1]),
                       n_nodes=int(tr.n_nodes[-1]), n_records=len(tr))
            if lz is not None:
                row["log_Z_tol"] = tol
                row["brackets_all"] = brackets(tr.log_Z_upper, tr.log_Z_lower, lz, tol)
                row["lower_ok"] = brackets(np.inf, tr.log_Z_lower, lz, tol)
                row["upper_ok"] = brackets(tr.log_Z_upper, -np.inf, lz, tol)
                row["det_upper_ok"] = brackets(tr.log_Z_upper_det, -np.inf, lz, tol)
            rows.append(row)
            print(f"  {s:10s} area={area:10.3f} (Markov floor {area_m:8.3f}) gap={row['gap']:.4f} [{row['final_lower']:.4f}, "
                  f"{row['final_upper']:.4f}] samples={row['n_samples']} exp={row['n_expansions']} "
                  f"brackets={row.get('brackets_all')}", file=sys.stderr, flush=True)
        try:
            plot_traces(traces, os.path.join(args.out, f"{name}.png"), log_Z=lz, title=f"pedigree/{name}")
        except Exception as exc:  # noqa: BLE001 - a plot failure must not lose the numbers
            print(f"  (plot failed: {exc})", file=sys.stderr)
        _write_csv(pd.DataFrame(rows), runs_csv)
    df = summarise(pd.DataFrame(rows), settings,
                   f"pedigree, {len(names)} instances, {args.time:g} s per run, i-bound {args.i_bound}")
    _write_csv(df, runs_csv)
    return 0


def _write_csv(df, path):
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)


if __name__ == "__main__":
    sys.exit(main())
