"""Anytime behaviour of ``sampling.bounds.run`` (issue 15, item 1): time of the first finite
upper bound, time the call returns, bracketing of the reference ln Z at every trace point.

The logic of ``/work/shared/checks/bounds-anytime`` (which calls the installed package), run on
this source tree, over any instances::

    python benchmarks/scripts/bench_bounds_anytime.py --time 30 pedigree23 pedigree37 Grids_15 Promedus_25
    python benchmarks/scripts/bench_bounds_anytime.py --time 30 --all-dev --out git history: benchmarks/measured/anytime_30s.csv
    python benchmarks/scripts/bench_bounds_anytime.py --time 60 --first-only --all-pedigree --all-dev --clock cpu

A name is looked up in ``../shared/data/uai/pedigree`` (reference ln Z from its SOURCES.md) and in
``../shared/data/uai/uai2014_dev`` (with its ``.evid``; reference from the ``.PR`` file, log10).
"Bracketed" allows the rounding of the printed reference (``bounds_refs.py``, shared with
``bench_bounds_table1.py``).
One process, instances one after the other (the machine is shared: never run two at once).

Measured on the shared 2-core machine (load 4-7), CPU clock:

* The six cases of the check, 30 s DIS, seed 1, at 451109e
  (``git history: benchmarks/measured/table1_anytime_check_30s_cpu.csv``): first finite upper bound 0.42-0.86 s,
  first lower bound 0.51-2.05 s, returned by 30.08 s (DBN_14: exact, 1.69 s), every trace point
  bracketed the reference ln Z.
* ``--first-only --time 60`` on all 22 pedigrees and 43 uai2014_dev instances at 55e225e
  (``git history: benchmarks/measured/table1_first_bound_60s_cpu.csv``): first finite upper bound max 1.47 s
  (pedigree51), median 0.24 s (at 800d303, before every pass's bound was recorded: max 3.7 s,
  median 1.28 s); 20 of the 65 plans end in an exact WMB; all first bounds >= the reference ln Z.
* ``--compare`` of 30 s DIS traces, this tree at b9bf345 against the code before the ladder (5764e47,
  ``--installed``): log-time area over [1 s, 30 s] 0.003 / 0.041 / 0.14 / 0.22 of the old one on
  pedigrees 23 / 30 / 33 / 37 (geometric mean 0.045; first record 0.15-0.45 s vs 7.1-9.1 s); final
  gaps 0.0042 / 0.0116 / 0.0233 / 0.0210 vs 0.0037 / 0.0081 / 0.0241 / 0.0418.
* The check's own logic (wall clock, 30 s, load ~5) on this tree at 55e225e: first bound 0.1-0.7 s,
  returned by 30.2 s (DBN_14 exact at 3.4 s), all bracketed: rc 0.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if "--installed" not in sys.argv and str(ROOT) not in sys.path:  # measure this tree, not an installed copy
    sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared helper beside this script
from bounds_refs import PEDIGREE_LNZ, brackets, reference  # noqa: E402,F401  (PEDIGREE_LNZ: for importers)
from bounds_refs import UAI_DATA as DATA  # noqa: E402  (the shared data beside the repository)


def ref_tol(name):
    """Rounding tolerance (nats) of the reference ln Z of ``name`` (:func:`bounds_refs.reference`:
    half a unit of the last printed digit of log10 Z, times ln 10), or None if none is known."""
    return reference(name, DATA)[1]


def find(name):
    """(model path, evidence path or None, reference ln Z or None)."""
    p = DATA / "pedigree" / f"{name}.uai"
    if p.exists():
        return p, None, reference(name, DATA)[0]
    p = DATA / "uai2014_dev" / f"{name}.uai"
    if p.exists():
        return p, Path(str(p) + ".evid"), reference(name, DATA)[0]
    raise FileNotFoundError(f"no instance {name!r} under {DATA}")


class _FirstBound(Exception):
    pass


def first_bound(name, time_limit, method, memory_mb, seed, clock="wall"):
    """Time to the first finite upper bound of a ``time_limit`` run (the run is stopped
    there), the ladder planned for that budget, and whether its last WMB is exact."""
    from sampling.bounds import read_uai, run
    from sampling.bounds.schedule import plan_wmb
    from sampling.bounds.wmb import WeightedMiniBucket

    path, evid, ref = find(name)
    m = read_uai(path, evidence=evid) if evid is not None else read_uai(path)
    seen = {}

    def progress(row):
        if math.isfinite(row["log_Z_upper"]):
            seen.update(row)
            raise _FirstBound

    now = time.perf_counter if clock == "wall" else time.process_time
    t0 = now()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tr = run(m, method=method, time_limit=time_limit, memory_mb=memory_mb, rng=seed, clock=clock,
                     progress=progress)
            seen = tr.to_frame().iloc[0].to_dict() if len(tr) else {}
        except _FirstBound:
            pass
        el = now() - t0
        rungs = plan_wmb(WeightedMiniBucket(m, memory_mb=memory_mb).prepare(), memory_mb=memory_mb,
                         time_limit=time_limit)
    ok = ref is None or seen.get("log_Z_upper", math.inf) >= ref - ref_tol(name)
    return dict(instance=name, time_limit=time_limit, clock=clock, first_upper_s=round(seen.get("time_s", math.inf), 3),
                call_s=round(el, 2), first_upper=seen.get("log_Z_upper"), log_Z_ref=ref, upper_ok=ok,
                plan=";".join(f"i{r.i_bound}x{r.n_iters}{'(exact)' if r.exact else ''}" for r in rungs),
                last_exact=rungs[-1].exact)


def measure(name, time_limit, method, memory_mb, delta, seed, log_Z=None, tol=None, clock="wall",
            trace_dir=None):
    from sampling.bounds import read_uai, run

    path, evid, ref = find(name)
    lz = ref if log_Z is None else log_Z
    if tol is None:  # the reference's printed precision; a log_Z given without a tol is taken as exact
        tol = ref_tol(name) if log_Z is None else 1e-6
    m = read_uai(path, evidence=evid) if evid is not None else read_uai(path)
    now = time.perf_counter if clock == "wall" else time.process_time
    t0 = now()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = run(m, method=method, time_limit=time_limit, memory_mb=memory_mb, delta=delta, rng=seed,
                 clock=clock)
    el = now() - t0
    df = tr.to_frame()
    if trace_dir is not None:
        import json

        Path(trace_dir).mkdir(parents=True, exist_ok=True)
        df.to_csv(Path(trace_dir) / f"{name}.csv", index=False, float_format="%.10g")
        (Path(trace_dir) / f"{name}.json").write_text(json.dumps(
            {"returned_s": el, "log_Z_ref": lz, "log_Z_floor": tr.meta.get("log_Z_floor"),
             "log_Z_wmb": tr.meta.get("log_Z_wmb")}, default=str))
    up, lo = df["log_Z_upper"].to_numpy(), df["log_Z_lower"].to_numpy()
    fin = np.isfinite(up)
    first = float(df["time_s"].to_numpy()[fin].min()) if fin.any() else math.inf
    fin_lo = np.isfinite(lo)
    first_lo = float(df["time_s"].to_numpy()[fin_lo].min()) if fin_lo.any() else math.inf
    if lz is None:
        bracket = None
        det_ok = None
    else:
        bracket = brackets(up, lo, lz, tol)
        det_ok = not (df["log_Z_upper_det"].to_numpy() < lz - tol).any()
    ladder = ";".join(f"i{r['i_bound']}x{r['n_iters']}@{r['time_s']:.1f}s" + ("" if r["finished"] else "(cut)")
                      for r in tr.meta.get("wmb_ladder", []))
    return dict(instance=name, method=method, clock=clock, time_limit=time_limit, first_upper_s=round(first, 3),
                first_lower_s=round(first_lo, 3), returned_s=round(el, 2), log_Z_ref=lz,
                final_upper=float(up[-1]), final_lower=float(lo[-1]), gap=float(up[-1] - lo[-1]),
                bracketed=bracket, det_upper_ok=det_ok, n_samples=int(df["n_samples"].iloc[-1]),
                n_expansions=int(df["n_expansions"].iloc[-1]), i_bound=tr.meta.get("i_bound"),
                exact=bool(tr.meta.get("exact", False)), ladder=ladder)


def _log_area(df, t0, t1, floor):
    """Area of max(up - max(lo, floor), 0) over ln t in [t0, t1]; before the first record
    no lower bound is known: the gap there is the first finite upper bound minus the floor."""
    t = df["time_s"].to_numpy(dtype=float)
    up = df["log_Z_upper"].to_numpy(dtype=float)
    lo = np.maximum(df["log_Z_lower"].to_numpy(dtype=float), floor)
    gap = np.maximum(up - lo, 0.0)
    fin = np.isfinite(gap)
    if not fin.any():
        return math.inf
    ends = np.append(t[1:], max(t1, t[-1]))
    total = 0.0
    a = np.log(np.clip(t, t0, t1))
    b = np.log(np.clip(ends, t0, t1))
    total += float(np.sum(np.where(b > a, (b - a) * np.where(fin, gap, 0.0), 0.0)))
    if t[0] > t0:
        first = max(up[np.flatnonzero(np.isfinite(up))[0]] - floor, 0.0)
        total += (math.log(min(t[0], t1)) - math.log(t0)) * first
    return total


def compare(dir_a, dir_b, t_end):
    """Print per instance the log-time areas over [1, t_end] of two trace folders and their ratio."""
    import json

    import pandas as pd

    ratios = []
    for pa in sorted(Path(dir_a).glob("*.csv")):
        pb = Path(dir_b) / pa.name
        if not pb.exists():
            continue
        da, db = pd.read_csv(pa), pd.read_csv(pb)
        meta = json.loads(pa.with_suffix(".json").read_text())
        floor = meta.get("log_Z_floor")
        floor = float(floor) if floor is not None and math.isfinite(float(floor)) else None
        if floor is None:
            los = np.concatenate([d["log_Z_lower"].to_numpy(dtype=float) for d in (da, db)])
            floor = float(np.min(los[np.isfinite(los)]))
        aa, ab = _log_area(da, 1.0, t_end, floor), _log_area(db, 1.0, t_end, floor)
        ratios.append(aa / ab)
        print(f"{pa.stem}: area A {aa:.4f}, area B {ab:.4f}, A/B {aa / ab:.3f}; final gap A "
              f"{da['log_Z_upper'].iloc[-1] - da['log_Z_lower'].iloc[-1]:.4f}, B "
              f"{db['log_Z_upper'].iloc[-1] - db['log_Z_lower'].iloc[-1]:.4f}; first record A "
              f"{da['time_s'].iloc[0]:.2f}s, B {db['time_s'].iloc[0]:.2f}s", flush=True)
    if ratios:
        print(f"geometric mean A/B over {len(ratios)}: {math.exp(np.mean(np.log(ratios))):.3f}")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("instances", nargs="*")
    ap.add_argument("--all-dev", action="store_true", help="every instance of uai2014_dev")
    ap.add_argument("--all-pedigree", action="store_true", help="every pedigree")
    ap.add_argument("--time", type=float, default=30.0)
    ap.add_argument("--method", default="dis")
    ap.add_argument("--memory-mb", type=float, default=1024.0)
    ap.add_argument("--delta", type=float, default=0.025)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="budget and times in wall-clock or process CPU seconds (cpu: a loaded shared "
                         "machine measured as if the core were free)")
    ap.add_argument("--installed", action="store_true",
                    help="measure the installed sampling package instead of this tree (run with python -P "
                         "from outside the repository)")
    ap.add_argument("--traces", default=None, help="write each run's trace (CSV + JSON) into this folder")
    ap.add_argument("--compare", nargs=2, metavar=("DIR_A", "DIR_B"), default=None,
                    help="no runs: area between ln upper and ln lower over [1 s, --time] (log time) of the "
                         "traces in DIR_A and DIR_B, same floor (the greedy floor of DIR_A's run, or the lowest "
                         "finite lower bound of both); before a run's first record the gap is its first "
                         "upper bound minus the floor")
    ap.add_argument("--first-only", action="store_true",
                    help="stop each run at its first finite upper bound (time to first bound, the plan)")
    ap.add_argument("--out", default=None, help="CSV of the measurements (atomic)")
    args = ap.parse_args(argv)
    if args.compare:
        return compare(args.compare[0], args.compare[1], args.time)
    names = list(args.instances)
    if args.all_pedigree:
        names += sorted(p.stem for p in (DATA / "pedigree").glob("pedigree*.uai"))
    if args.all_dev:
        names += sorted(p.stem for p in (DATA / "uai2014_dev").glob("*.uai"))
    if not names:
        ap.error("give instance names or --all-dev / --all-pedigree")
    rows = []
    for name in names:
        if args.first_only:
            r = first_bound(name, args.time, args.method, args.memory_mb, args.seed, clock=args.clock)
            rows.append(r)
            print(f"{name}: first upper {r['first_upper_s']:.2f}s ({r['first_upper']}, ref {r['log_Z_ref']}, "
                  f"ok {r['upper_ok']}), plan {r['plan']}", flush=True)
            continue
        r = measure(name, args.time, args.method, args.memory_mb, args.delta, args.seed, clock=args.clock,
                    trace_dir=args.traces)
        rows.append(r)
        print(f"{name}: first upper {r['first_upper_s']:.2f}s, first lower {r['first_lower_s']:.2f}s, "
              f"returned {r['returned_s']:.1f}s, gap {r['gap']:.4f}, bracketed {r['bracketed']}, "
              f"exact {r['exact']}, i-bound {r['i_bound']}, samples {r['n_samples']}, "
              f"expansions {r['n_expansions']}, ladder {r['ladder']}", flush=True)
    if args.out:
        import pandas as pd

        from sampling.utils.atomic import atomic_open

        with atomic_open(args.out, "w", newline="") as fh:
            pd.DataFrame(rows).to_csv(fh, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
