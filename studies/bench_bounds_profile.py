"""Where DIS spends its time, and whether the search tree's memory layout costs (issue 15, item 2).

Two measurements (one process, CPU clock; the machine is shared: run nothing else heavy):

``run``: one DIS(1,10) call of ``--time`` CPU-s on an instance, meant to be wrapped by a
sampling profiler (``perf record -e cpu-clock -g``); prints the rates of the two phases read
from the trace: expansions and samples per CPU-s while the tree grows, samples per CPU-s once
it is full. ::

    perf record -e cpu-clock -F 999 -g -o /tmp/dis.perf \\
        python studies/bench_bounds_profile.py run pedigree19 --time 30
    perf report -i /tmp/dis.perf --no-children --sort symbol --stdio

``sizes``: one WMB, then for each node cap a fresh search tree grown by AOBFS (upper priority,
Eq. 4) until it is full, and ``--samples`` two-step DIS draws from that fixed tree (Alg. 1 with
N_d = 0: exactly the work of DIS once its tree is full). Reports CPU microseconds per expansion
(the whole growth from the root to full) and per draw, and the tree's bytes; a tiny cap is the baseline
of draws made almost wholly by the WMB proposal. If walking the tree stalled on memory, draws
from a tree far beyond the caches (hundreds of MB) would cost more than draws from an L2-sized
tree, although they take more of their variables from the tree and fewer from the proposal. ::

    python studies/bench_bounds_profile.py sizes pedigree19 --caps 64,4096,65536,1048576,16777216

``ab``: paired CPU-time ratio of this tree's ``_aobfs`` kernel (A) against another build of it
(B, a ``.so`` path, e.g. built from the previous commit) in one process: two trees of the same
cap grown in alternating chunks, then alternating rounds of draws with the same seed, which must
be bit-identical (checked). ::

    python studies/bench_bounds_profile.py ab pedigree37 --i-bound 11 --cap 16777216 \
        --ref-kernel /tmp/old/_aobfs.cpython-311-x86_64-linux-gnu.so

Measured (``git history: benchmarks/measured/bounds_profile_pedigree37.txt``): about 40 % of a 30 s DIS run's
CPU is ``_sample`` and ``_select`` waiting on node loads; a draw from a 1 GB tree costs 2.8x one
from a 4 MB tree; software prefetch in the draw (A/B 0.970), huge pages (1.044) and OR nodes
beside their AND children in one pool (0.995-1.101) did not pay and were not kept.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # measure this tree
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "scripts"))  # bench_bounds_anytime.find
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_bounds_anytime import find  # noqa: E402


def _model(name):
    from sampling.bounds import read_uai

    path, evid, ref = find(name)
    return (read_uai(path, evidence=evid) if evid is not None else read_uai(path)), ref


def profile_run(name, time_limit, seed):
    """One DIS(1,10) run; the rates of its phases from the trace."""
    from sampling.bounds import run

    m, _ = _model(name)
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = run(m, method="dis", time_limit=time_limit, rng=seed, clock="cpu")
    el = time.process_time() - t0
    df = tr.to_frame()
    full = df["n_nodes"].max()
    # the tree is full once it holds (nearly) the node cap: expansions then stop
    cap = tr.meta.get("max_nodes") or math.inf
    at_cap = df["n_nodes"] >= 0.99 * cap
    t_full = float(df["time_s"][at_cap].iloc[0]) if at_cap.any() else math.inf
    first_s = df[df["n_samples"] > 0]
    t_s0 = float(first_s["time_s"].iloc[0]) if len(first_s) else math.nan
    grow = df[(df["time_s"] >= t_s0) & (df["time_s"] <= min(t_full, df["time_s"].iloc[-1]))]
    rest = df[df["time_s"] >= t_full]
    print(f"{name}: {el:.1f} CPU-s, i-bound {tr.meta.get('i_bound')}, ladder "
          f"{[(r['i_bound'], round(r['time_s'], 1)) for r in tr.meta.get('wmb_ladder', [])]}; first sample "
          f"{t_s0:.1f} s, " + (f"tree full ({full} nodes) at {t_full:.1f} s" if math.isfinite(t_full)
                                else f"tree still growing at the end ({full} of {cap} nodes)"))
    if len(grow) > 1:
        dt = grow["time_s"].iloc[-1] - grow["time_s"].iloc[0]
        print(f"  growing  {dt:5.1f} s: {(grow['n_expansions'].iloc[-1] - grow['n_expansions'].iloc[0]) / dt:9.0f} "
              f"expansions/s, {(grow['n_samples'].iloc[-1] - grow['n_samples'].iloc[0]) / dt:9.0f} samples/s")
    if len(rest) > 1:
        dt = rest["time_s"].iloc[-1] - rest["time_s"].iloc[0]
        print(f"  full     {dt:5.1f} s: {(rest['n_samples'].iloc[-1] - rest['n_samples'].iloc[0]) / dt:9.0f} samples/s")
    return 0


def sizes(name, caps, n_samples, i_bound, seed, memory_mb=1024.0):
    """CPU cost per expansion and per two-step draw on trees of the given node caps."""
    from sampling.bounds.aobfs import AOBFS, NODE_BYTES_COMPILED
    from sampling.bounds._ladder import wmb_evaluator as _evaluator
    from sampling.bounds.importance import dis_rounds, make_fast_proposal
    from sampling.bounds.wmb import WeightedMiniBucket

    m, _ = _model(name)
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wmb = WeightedMiniBucket(m, i_bound=i_bound, memory_mb=memory_mb).fit()
    ev = _evaluator(wmb, m)
    fast = make_fast_proposal(wmb, ev)
    print(f"{name}: WMB i-bound {wmb.i_bound}, {time.process_time() - t0:.1f} CPU-s; n_vars {ev.n_vars}")
    rows = []
    for cap in caps:
        s = AOBFS(m, wmb=wmb, max_nodes=int(cap)).fit(max_expansions=0)  # the root only
        t0 = time.process_time()
        s.expand(None)  # grown until full (or solved)
        t_exp = time.process_time() - t0
        n_exp = s.n_expansions_
        rng = np.random.default_rng([seed, int(cap)])
        dis_rounds(s, ev, min(n_samples, 2000), 0, 1, rng, fast=fast)  # warm the code paths
        t0 = time.process_time()
        done, check = 0, 0.0
        while done < n_samples:
            k = min(4096, n_samples - done)
            log_w, _ = dis_rounds(s, ev, k, 0, 1, rng, fast=fast)
            check += float(np.sum(log_w[np.isfinite(log_w)]))
            done += k
        t_smp = time.process_time() - t0
        r = dict(cap=int(cap), nodes=int(s.n_nodes_), tree_mb=s.n_nodes_ * NODE_BYTES_COMPILED / 2**20,
                 expansions=int(n_exp), us_per_exp=1e6 * t_exp / max(n_exp, 1),
                 us_per_sample=1e6 * t_smp / n_samples, log_U=float(s.log_Z_upper_), check=check)
        rows.append(r)
        print(f"  cap {r['cap']:>9d}: {r['nodes']:>9d} nodes ({r['tree_mb']:7.1f} MB), {n_exp:>8d} expansions "
              f"{r['us_per_exp']:6.2f} us each, {n_samples} draws {r['us_per_sample']:7.2f} us each, "
              f"ln U_S {r['log_U']:.4f}, sum of finite ln w {r['check']!r}", flush=True)
        del s
    return rows


def _load_ref_kernel(path):
    """The ``_aobfs`` extension built from another source (e.g. the previous commit), loaded
    from ``path`` beside the current one (not registered in ``sys.modules``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("sampling.bounds._aobfs", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ab(name, ref_kernel, cap, n_rounds, draws, i_bound, seed, memory_mb=1024.0, chunk=20000):
    """Paired timing of this tree's ``_aobfs`` kernel (A) against ``ref_kernel`` (B) in one
    process: two trees of the same cap, grown in alternating chunks of ``chunk`` expansions,
    then ``n_rounds`` rounds of ``draws`` two-step draws from each full tree with the same
    seed (order alternating per round). The draws must be identical (checked); prints the
    CPU time per expansion and per draw of each and the median of the per-chunk / per-round
    ratios A/B."""
    import sampling.utils.kernels as build
    from sampling.bounds.aobfs import AOBFS
    from sampling.bounds._ladder import wmb_evaluator as _evaluator
    from sampling.bounds.importance import dis_rounds, make_fast_proposal
    from sampling.bounds.wmb import WeightedMiniBucket

    m, _ = _model(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wmb = WeightedMiniBucket(m, i_bound=i_bound, memory_mb=memory_mb).fit()
    ev = _evaluator(wmb, m)
    fast = make_fast_proposal(wmb, ev)
    ref = _load_ref_kernel(ref_kernel)
    trees = {"A": AOBFS(m, wmb=wmb, max_nodes=int(cap)).fit(max_expansions=0)}
    orig = build.load_kernel
    build.load_kernel = lambda n: ref if n == "sampling.bounds._aobfs" else orig(n)
    try:
        trees["B"] = AOBFS(m, wmb=wmb, max_nodes=int(cap)).fit(max_expansions=0)
    finally:
        build.load_kernel = orig
    assert trees["B"].compiled_tree.__class__ is ref.AndOrTree  # B really runs the other build
    t_exp = {"A": [], "B": []}
    k = 0
    while trees["A"].can_expand or trees["B"].can_expand:
        for key in (("A", "B") if k % 2 == 0 else ("B", "A")):
            t0 = time.process_time()
            done = trees[key].expand(chunk)
            t_exp[key].append((time.process_time() - t0, done))
        k += 1
    assert trees["A"].n_expansions_ == trees["B"].n_expansions_ and trees["A"].log_Z_upper_ == trees["B"].log_Z_upper_
    full = [i for i in range(len(t_exp["A"])) if t_exp["A"][i][1] == chunk and t_exp["B"][i][1] == chunk]
    r_exp = [t_exp["A"][i][0] / t_exp["B"][i][0] for i in full]
    t_smp = {"A": [], "B": []}
    for r in range(n_rounds):
        out = {}
        for key in (("A", "B") if r % 2 == 0 else ("B", "A")):
            rng = np.random.default_rng([seed, r])
            t0 = time.process_time()
            out[key] = dis_rounds(trees[key], ev, draws, 0, 1, rng, fast=fast)[0]
            t_smp[key].append(time.process_time() - t0)
        np.testing.assert_array_equal(out["A"], out["B"])  # bit-identical draws
    r_smp = [a / b for a, b in zip(t_smp["A"], t_smp["B"])]
    n_exp = trees["A"].n_expansions_
    print(f"{name}: WMB i-bound {wmb.i_bound}, cap {cap} nodes ({trees['A'].n_nodes_} stored), {n_exp} expansions; "
          f"A = this tree's kernel, B = {ref_kernel}")
    for key in ("A", "B"):
        print(f"  {key}: {1e6 * sum(t for t, _ in t_exp[key]) / n_exp:6.3f} us per expansion, "
              f"{1e6 * np.median(t_smp[key]) / draws:7.2f} us per draw (median of {n_rounds} rounds of {draws})")
    print(f"  A/B: expansions {np.median(r_exp):.3f} (median of {len(r_exp)} paired chunks of {chunk}), "
          f"draws {np.median(r_smp):.3f} (median of {n_rounds} paired rounds; quartiles "
          f"{np.percentile(r_smp, 25):.3f}-{np.percentile(r_smp, 75):.3f}); draws identical: yes")
    return r_exp, r_smp


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("run", help="one DIS(1,10) run (wrap it in perf record)")
    a.add_argument("instance")
    a.add_argument("--time", type=float, default=30.0)
    a.add_argument("--seed", type=int, default=1)
    b = sub.add_parser("sizes", help="cost per expansion and per draw against the tree size")
    b.add_argument("instance")
    b.add_argument("--caps", default="64,4096,65536,1048576,16777216")
    b.add_argument("--samples", type=int, default=20000)
    b.add_argument("--i-bound", type=int, default=None)
    b.add_argument("--seed", type=int, default=1)
    c = sub.add_parser("ab", help="paired timing of this tree's _aobfs kernel against another build of it")
    c.add_argument("instance")
    c.add_argument("--ref-kernel", required=True, help="path of the other _aobfs*.so")
    c.add_argument("--cap", type=int, default=16777216)
    c.add_argument("--rounds", type=int, default=11)
    c.add_argument("--draws", type=int, default=20000)
    c.add_argument("--i-bound", type=int, default=None)
    c.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    if args.cmd == "ab":
        ab(args.instance, args.ref_kernel, args.cap, args.rounds, args.draws, args.i_bound, args.seed)
        return 0
    if args.cmd == "run":
        return profile_run(args.instance, args.time, args.seed)
    sizes(args.instance, [int(c) for c in args.caps.split(",")], args.samples, args.i_bound, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
