"""Side by side with pyGMs (issue 30, deliverable 4): WMB bound at equal i-bound, anytime bounds.

pyGMs (Ihler's Python toolbox, ``pip install pygms``) is never a dependency of this package:
it runs in its own virtual environment, as a subprocess (this same file with ``--worker``,
which imports only numpy and pygms)::

    python -m venv /tmp/pygms && /tmp/pygms/bin/pip install pygms numpy scipy
    python benchmarks/scripts/bounds_pygms.py --python /tmp/pygms/bin/python --time 20 pedigree1 pedigree23
    python benchmarks/scripts/bounds_pygms.py --all-pedigree --all-dev --time 60

Per instance, both get the same elimination order (ours), the same i-bound (ours: at most
``i + 1`` variables per mini-bucket, i.e. pyGMs ``iBound = i + 1``) and the same number of
reparameterisation passes, and run at the same time on this machine, each on its own CPU clock
(``time.process_time``; the machine is shared):

* **WMB at equal i-bound**: our :class:`~sampling.bounds.wmb.WeightedMiniBucket` against pyGMs
  ``WMB`` with its documented schedule (``msgForward(0.5, 0.1)`` then ``msgBackward()`` per
  pass; the first pass plain, ``msgForward(0, 0)``); ours with ``tol=0`` (no early stop), so
  both run the same passes (ours stops early only when a pass raises the bound and its
  step has shrunk 1000-fold). Both build the same clique tables (same
  order and i-bound); the memory columns are each one's own estimate (ours counts the tables,
  three times the messages and the work space; pyGMs ``WMB.memory()`` the clique tables only).
  pyGMs' best finite pass is taken; its passes stop at the first one that raises the bound
  (the worker keeps a copy of the state before each pass and samples from the best one: pyGMs'
  schedule diverges on some models, e.g. DBN_14 348.08 -> 447.10 in 10 passes).
* **Anytime bounds**: our ``sampling.bounds.run(method="dis")`` with ``--time`` and
  ``--memory-mb`` against pyGMs WMB-IS (its ``WMB.sample()`` mixture proposal, Liu, Fisher &
  Ihler 2015) for the rest of the same budget. pyGMs has no bound on Z from its samples; its
  weights ``ln f(x) - ln q(x)`` (f evaluated by pyGMs) go through the same estimator and
  Theorem 1 bounds as ours (:class:`~sampling.bounds.estimator.ImportanceAccumulator`, bound U =
  its WMB bound), the upper bound being the min of that and its WMB bound. Area: gap (ln upper -
  max(ln lower, floor)) integrated over [1 s, --time] (Table 1 of Lou, Dechter & Ihler 2017),
  the floor our greedy ln f(x) (the same for both). Before pyGMs' first record its gap counts as
  its final WMB bound minus the floor (lenient to pyGMs).

pyGMs' reparameterisation gives NaN on models with zeros (moment matching of -inf entries):
on such a model (``--eps``, default 1e-30) pyGMs works on the model with every factor value
raised to at least eps, whose Z is >= ours, so its bound stays a valid upper bound on ln Z and
its WMB-IS weights (the original f over its q) stay below it. Rows state ``eps`` used.

Results: one CSV row per instance (default ``benchmarks/results/bounds_pygms.csv``, git-ignored,
written atomically) and a summary with the ratios (geometric means) on stdout.

Measured (2026-11-27, --time 20, default --wmb-mb 64 and --passes 10, shared 2-core machine,
every pedigree and 21 of the 42 uai2014_dev instances, 43 in all): our WMB bound is no looser
on 43 of 43 (pyGMs minus ours: min 0 (DBN_14/15/16, Promedus_26/27/28: both exact), median
1.07 nats; Segmentation_14 +1.3e-5, Segmentation_16 +3.1e-4, where the last run had pyGMs
tighter by 1e-4 / 8e-4 before our weight step used the entropies of the matched beliefs and
ours ran all passes); our anytime area is smaller on 43 of 43 (ours / pyGMs: 0 on 8 where ours
is exact at once or pyGMs has no finite lower bound, geometric mean 0.012 over the other 35,
largest 0.87 on DBN_16). Pedigrees 13, 19, 30, 34 and 37 had an infinite area on both sides
before the floor avoided zeros (greedy configuration at f(x) = 0).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RESULTS = ROOT / "benchmarks" / "results"  # git-ignored


# --------------------------------------------------------------------------- the pyGMs side
def worker(argv):
    """Run pyGMs (inside its venv): WMB passes, then WMB-IS draws until the CPU budget.

    Prints one JSON object per line: ``built`` (memory), ``pass`` (k, bound), ``samples``
    (log weights and the bound U they were drawn under), ``done`` (peak RSS); each with
    ``t``, CPU seconds since the start (reading the model included).
    """
    import copy
    import resource

    import numpy as np
    import pygms as gm
    from pygms.wmb import WMB

    uai, evid, order_path, ib, passes, tlimit, seed, eps = argv
    t0 = time.process_time()

    def emit(**k):
        k["t"] = time.process_time() - t0
        print(json.dumps(k), flush=True)

    model = gm.GraphModel(gm.readUai(uai))
    if evid:
        model.condition(gm.readEvidence14(evid))
    orig = model
    if float(eps) > 0:
        orig = model.copy()
        model.makePositive(float(eps))
    with open(order_path) as fh:
        order = json.load(fh)
    w = WMB(model, elimOrder=order, iBound=int(ib) + 1, weights=1.0)
    emit(event="built", memory_mb=float(w.memory()))
    U = math.inf
    for k in range(int(passes) + 1):
        keep = copy.deepcopy(w) if k else None  # pyGMs cannot undo a pass that raises the bound
        b = float(w.msgForward(0.5, 0.1) if k else w.msgForward(0.0, 0.0))
        emit(event="pass", k=k, bound=b)
        if not math.isfinite(b):
            U = math.nan  # NaN: the messages are broken, no sampling from them
            break
        if b > U:  # worse than the previous pass: sample from the previous state, stop passing
            w = keep
            break
        U = b
        if time.process_time() - t0 > float(tlimit):
            break
        w.msgBackward()
    np.random.seed(int(seed))
    batch, n = [], 0
    while math.isfinite(U) and time.process_time() - t0 < float(tlimit):
        x, lq = w.sample()
        batch.append(float(orig.logValue(x) - lq))
        n += 1
        if len(batch) >= max(8, n // 8):
            emit(event="samples", log_w=batch, U=U)
            batch = []
    if batch:
        emit(event="samples", log_w=batch, U=U)
    emit(event="done", rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)


# --------------------------------------------------------------------------- our side
def _setup():
    if str(ROOT) not in sys.path:  # measure this tree, not an installed copy
        sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(HERE))


def pygms_trace(events, floor, delta):
    """A :class:`BoundTrace` of the worker's events: the best finite WMB bound so far, and
    the Theorem 1 bounds of its WMB-IS weights through our estimator.

    Returns
    -------
    (BoundTrace, dict)
        The trace (empty if pyGMs gave no finite bound) and a summary: ``memory_mb``,
        ``first_bound`` (pass 0), ``best_bound``, ``n_passes``, ``nan_pass`` (the first pass
        that gave NaN, or None), ``n_samples``, ``zero_frac`` (share of zero weights), ``rss_mb``,
        ``violations`` (weights above pyGMs' own bound U: clipped to U by the estimator).
    """
    import warnings

    import numpy as np

    from sampling.bounds._recorder import NEG_INF, trace_row
    from sampling.bounds.estimator import ImportanceAccumulator
    from sampling.bounds.trace import BoundTrace

    acc = ImportanceAccumulator(delta)
    best, rows = math.inf, []
    info = {"memory_mb": math.nan, "first_bound": math.nan, "best_bound": math.inf, "n_passes": 0,
            "nan_pass": None, "n_samples": 0, "zero_frac": math.nan, "rss_mb": math.nan}
    n_zero = 0
    for e in events:
        ev = e["event"]
        if ev == "built":
            info["memory_mb"] = e["memory_mb"]
            continue
        if ev == "done":
            info["rss_mb"] = e["rss_mb"]
            continue
        if ev == "pass":
            b = e["bound"]
            if e["k"] == 0:
                info["first_bound"] = b
            if b is None or not math.isfinite(b):
                if info["nan_pass"] is None:
                    info["nan_pass"] = e["k"]
                continue
            info["n_passes"] = e["k"]
            best = min(best, b)
        elif ev == "samples":
            lw = np.asarray(e["log_w"], dtype=float)
            lw = np.where(np.isnan(lw), -np.inf, lw)
            n_zero += int((lw == -np.inf).sum())
            with warnings.catch_warnings():  # weights above U are counted (``pygms_violations``)
                warnings.simplefilter("ignore", RuntimeWarning)
                acc.add(lw, float(e["U"]))
        else:
            continue
        if not math.isfinite(best):
            continue
        if acc.n:
            lo, up = acc.bounds(best)
            row = trace_row(min(up, best), lo, acc.log_Z_hat, acc.n, 0, 0, acc.lower_is_markov, best)
        else:
            row = trace_row(best, NEG_INF, math.nan, 0, 0, 0, False, best)
        row["time_s"] = float(e["t"])
        rows.append(row)
    info["best_bound"] = best
    info["n_samples"] = acc.n
    info["zero_frac"] = n_zero / acc.n if acc.n else math.nan
    info["violations"] = acc.n_bound_violations
    meta = {"log_Z_wmb": best, "log_Z_floor": floor}
    return BoundTrace.from_rows(rows, method="pygms-wmb-is", meta=meta), info


def _area(trace, t0, t1, floor):
    from sampling.bounds.trace import bound_area

    if len(trace) == 0:
        return math.inf
    return bound_area(trace, t_start=t0, t_end=t1, log_Z_floor=floor)


def _ratio(a_ours, a_py):
    """Area ours / pyGMs: 0 when only pyGMs' is infinite (no finite lower bound in the
    window), NaN when both are (or pyGMs' is 0), inf when only ours is."""
    if math.isinf(a_py):
        return math.nan if math.isinf(a_ours) else 0.0
    return a_ours / a_py if a_py > 0 else math.nan


def run_instance(name, args):
    """Both sides on one instance; returns the CSV row (dict)."""
    import warnings

    import numpy as np

    from bench_bounds_anytime import find, ref_tol
    from sampling import bounds
    from sampling.bounds.wmb import WeightedMiniBucket
    from sampling.exceptions import ConvergenceWarning

    path, evid, log_Z = find(name)
    model = bounds.read_uai(str(path), evidence=str(evid) if evid else None)
    probe = WeightedMiniBucket(model, memory_mb=args.memory_mb).prepare()
    width = int(probe.pseudo_tree.induced_width)
    if args.i_bound is not None:
        ib = min(args.i_bound, width)
    else:  # the largest our estimate fits in --wmb-mb (pyGMs is pure Python: keep it modest)
        ib = max([i for i in range(1, width + 1) if probe.memory_for(i) <= args.wmb_mb] or [1])
    has_zero = any(np.isneginf(f.log_values).any() for f in model.factors)
    eps = args.eps if has_zero else 0.0
    with tempfile.TemporaryDirectory() as tmp:
        order_path = os.path.join(tmp, "order.json")
        with open(order_path, "w") as fh:
            json.dump([int(v) for v in probe.elim_order], fh)
        cmd = [args.python, str(Path(__file__).resolve()), "--worker", str(path), str(evid or ""), order_path,
               str(ib), str(args.passes), str(args.time), str(args.seed), repr(eps)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            c0 = time.process_time()
            # tol=0: every one of the --passes passes, as pyGMs (its default tol of 1e-2 nats
            # stopped Segmentation_14 at -90.94376 after 3 passes, pyGMs -90.94388 after 10)
            ours_wmb = WeightedMiniBucket(model, i_bound=ib, memory_mb=args.memory_mb, elim_order=probe.elim_order,
                                          n_iters=args.passes, tol=0.0).fit()
            t_wmb = time.process_time() - c0
            tr = bounds.run(model, method="dis", time_limit=args.time, memory_mb=args.memory_mb, delta=args.delta,
                            rng=args.seed, clock="cpu")
        try:
            out, err = proc.communicate(timeout=max(10.0 * args.time, 600.0))
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
    events = []
    for line in out.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    floor = float(tr.meta.get("log_Z_floor", -math.inf))
    ptr, info = pygms_trace(events, floor, args.delta)
    t0, t1 = 1.0, args.time
    a_ours, a_py = _area(tr, t0, t1, floor), _area(ptr, t0, t1, floor)
    tol = ref_tol(name) or 0.0
    f = tr.final
    pf = ptr.final if len(ptr) else {"log_Z_upper": math.inf, "log_Z_lower": -math.inf}
    brk = None if log_Z is None else bool(log_Z - tol <= pf["log_Z_upper"] and pf["log_Z_lower"] <= log_Z + tol)
    row = {
        "instance": name, "i_bound": ib, "induced_width": width, "passes": args.passes, "eps": eps,
        "log_Z_ref": log_Z,
        "wmb_ours": float(ours_wmb.log_Z_upper), "wmb_pygms": info["best_bound"],
        "wmb_pygms_first_pass": info["first_bound"], "pygms_nan_pass": info["nan_pass"],
        "wmb_diff": info["best_bound"] - float(ours_wmb.log_Z_upper),
        "wmb_mb_ours": float(ours_wmb.memory_mb_), "wmb_mb_pygms": info["memory_mb"],
        "wmb_cpu_s_ours": t_wmb, "pygms_passes_done": info["n_passes"],
        "dis_upper": f["log_Z_upper"], "dis_lower": f["log_Z_lower"],
        "dis_gap": f["log_Z_upper"] - f["log_Z_lower"], "dis_i_bound": tr.meta.get("i_bound"),
        "pygms_upper": pf["log_Z_upper"], "pygms_lower": pf["log_Z_lower"],
        "pygms_gap": pf["log_Z_upper"] - pf["log_Z_lower"], "pygms_brackets": brk,
        "pygms_samples": info["n_samples"], "pygms_violations": info["violations"], "pygms_zero_frac": info["zero_frac"], "pygms_rss_mb": info["rss_mb"],
        "area_ours": a_ours, "area_pygms": a_py,
        "area_ratio": _ratio(a_ours, a_py),
        "pygms_rc": proc.returncode, "pygms_error": err.strip().splitlines()[-1][:200] if proc.returncode else "",
    }
    return row


def main(argv=None):
    """Command line: instances (names under ../shared/data/uai), budgets, the pyGMs python."""
    import pandas as pd

    _setup()
    from bench_bounds_anytime import DATA
    from sampling.utils import atomic_path

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("instances", nargs="*")
    ap.add_argument("--all-dev", action="store_true", help="every instance of uai2014_dev")
    ap.add_argument("--all-pedigree", action="store_true", help="every pedigree")
    ap.add_argument("--python", default="/tmp/pygms/bin/python", help="python of the venv holding pygms")
    ap.add_argument("--time", type=float, default=20.0, help="CPU seconds per side and instance (default 20)")
    ap.add_argument("--memory-mb", type=float, default=1024.0, help="our memory budget (default 1024)")
    ap.add_argument("--i-bound", type=int, default=None, help="WMB i-bound of the comparison (default: --wmb-mb)")
    ap.add_argument("--wmb-mb", type=float, default=64.0,
                    help="without --i-bound: the largest i-bound whose tables (our estimate) fit this (default 64)")
    ap.add_argument("--passes", type=int, default=10, help="reparameterisation passes, both sides (default 10)")
    ap.add_argument("--delta", type=float, default=0.025)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--eps", type=float, default=1e-30, help="pyGMs on models with zeros: factor floor (default 1e-30)")
    ap.add_argument("--out", default=str(RESULTS / "bounds_pygms.csv"), help="CSV of the rows (atomic)")
    args = ap.parse_args(argv)
    names = list(args.instances)
    if args.all_pedigree:
        names += sorted(p.stem for p in (DATA / "pedigree").glob("*.uai"))
    if args.all_dev:
        names += sorted(p.stem for p in (DATA / "uai2014_dev").glob("*.uai"))
    if not names:
        ap.error("no instances (give names, --all-dev or --all-pedigree)")
    if not Path(args.python).exists():
        ap.error(f"--python {args.python} does not exist (create the pyGMs venv first; see the docstring)")
    rows = []
    for name in names:
        try:
            row = run_instance(name, args)
        except (FileNotFoundError, MemoryError, ValueError) as exc:
            print(f"{name}: skipped ({type(exc).__name__}: {exc})", file=sys.stderr, flush=True)
            continue
        rows.append(row)
        print(f"{name}: i-bound {row['i_bound']}  WMB ours {row['wmb_ours']:.4f} ({row['wmb_mb_ours']:.1f} MB) "
              f"pyGMs {row['wmb_pygms']:.4f} ({row['wmb_mb_pygms']:.1f} MB, NaN at pass {row['pygms_nan_pass']})  "
              f"| gap ours {row['dis_gap']:.4f} pyGMs {row['pygms_gap']:.4f}  area ours {row['area_ours']:.3g} "
              f"pyGMs {row['area_pygms']:.3g} ratio {row['area_ratio']:.3g}  pyGMs samples {row['pygms_samples']} "
              f"(zero {row['pygms_zero_frac']:.2f}, above U {row['pygms_violations']})", flush=True)
        df = pd.DataFrame(rows)
        RESULTS.mkdir(parents=True, exist_ok=True)
        with atomic_path(args.out) as tmp:
            df.to_csv(tmp, index=False)
    if not rows:
        return 1
    df = pd.DataFrame(rows)
    looser = int((df["wmb_diff"] < -1e-6).sum())
    fin = df["area_pygms"].replace(math.inf, float("nan")).notna() & (df["area_pygms"] > 0)
    gm_area = float((df.loc[fin, "area_ratio"].clip(lower=1e-12)).apply(math.log).mean()) if fin.any() else math.nan
    print(f"{len(df)} instances: our WMB looser than pyGMs on {looser}; WMB bound difference pyGMs - ours "
          f"min {df['wmb_diff'].min():.4f} median {df['wmb_diff'].median():.4f} nats; area ours / pyGMs "
          f"geometric mean {math.exp(gm_area) if fin.any() else float('nan'):.3g} over {int(fin.sum())} finite, "
          f"pyGMs area infinite (no finite lower bound) on {int((~fin).sum())}; ours smaller on "
          f"{int((df['area_ours'] < df['area_pygms']).sum())} of {len(df)}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2:])
    else:
        sys.exit(main())
