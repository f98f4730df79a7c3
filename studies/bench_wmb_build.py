"""Weighted mini-bucket build time: the compiled table kernels against the NumPy code they replaced.

Usage::

    python studies/bench_wmb_build.py [--i-bounds 12 16 20] [--repeats 1] [--n-iters 10]
        [--memory-mb 2048] [NAME ...]      (default: pedigree23 pedigree37 Grids_16)

For each instance (a UAI'08 pedigree under ``../shared/data/uai/pedigree`` or a UAI 2014
instance with its ``.evid`` under ``../shared/data/uai/uai2014_dev``) and i-bound, builds
:class:`sampling.bounds.WeightedMiniBucket` (``fit``: first pass + up to ``n_iters``
forward/backward passes) twice per repeat in ONE process, alternating the order: with
the compiled kernels (``_wmb.lse_axes``, ``cond_add``, ``broadcast_sum``, ``match_stats``, ``backward_info``; the code as
shipped) and with the NumPy versions (``tests/bounds/wmb_numpy_ref.py``: ``lse_axes_numpy``,
``lse_all_numpy``, ``cond_inplace_numpy``, ``match_stats_numpy``, ``backward_info_numpy``,
``broadcast_sum_numpy``) patched in, and the
mini-bucket elimination ``_logsumexp0`` run by the two-pass loops of the former ``lse_axis0``
kernel, now with a branch-free max, so the old path is if anything a little faster than it
was). Prints CPU seconds
of each (the machine is shared: ratios, not absolute times, are the result), the ratio
numpy/kernel, and the largest difference between the two bound histories (nats).
Not run by the tests.

Measured at 05b3197 (``git history: benchmarks/measured/bounds_wmb_build_wmbfast.txt``; 10 passes unless
converged earlier; bounds of the two paths within 4.4e-12 nats): numpy/kernel CPU-time ratio
pedigree23 i-bound 12/16/20 2.04/2.52/2.96 (i-bound 20: 16.6 s -> 5.6 s), pedigree37 i-bound
10/12/13 2.48/2.79/3.08 (i-bound 14 and up exceed 2 GB), Grids_16 i-bound 12/16/20 1.79/1.56/1.25
(binary variables: the mini-bucket elimination, compiled on both paths, dominates).
"""
import argparse
import contextlib
import math
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # measure this tree, not an installed copy
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "bounds"))  # wmb_numpy_ref: the NumPy code the kernels replaced

DATA = ROOT.parent / "shared" / "data" / "uai"
if not DATA.exists():
    DATA = ROOT.parents[1] / "shared" / "data" / "uai"  # a worktree under /work/wt/NAME


def find(name):
    """(model path, evidence path or None)."""
    p = DATA / "pedigree" / f"{name}.uai"
    if p.exists():
        return p, None
    p = DATA / "uai2014_dev" / f"{name}.uai"
    if p.exists():
        e = Path(str(p) + ".evid")
        return p, (e if e.exists() else None)
    raise FileNotFoundError(f"no instance {name!r} under {DATA}")


def _logsumexp0_two_pass(a, weight=1.0):
    """The mini-bucket elimination as the kernel did it before its cardinality-2/3 path: two
    passes over the ``(card, n)`` table (``_wmb.lse_axes`` with axis 0 summed out runs the same
    loops and sums in the same order)."""
    import numpy as np
    from sampling.bounds import _tables
    a = np.ascontiguousarray(a, dtype=np.float64)
    n = int(np.prod(a.shape[1:], dtype=np.int64))
    out = np.empty(n)
    _tables._kernels.lse_axes(a.reshape(-1), np.array([a.shape[0], n], dtype=np.intp),
                              np.array([1, 0], dtype=np.uint8), float(weight), out, np.empty(n))
    return out.reshape(a.shape[1:])


@contextlib.contextmanager
def numpy_path():
    """Patch the NumPy versions of the table helpers into the WMB modules that call the kernels
    (the code before the kernels), as tests/bounds/test_bounds_wmb_kernels.py does."""
    import wmb_numpy_ref as ref
    from sampling.bounds import _lookup, _reparam
    patches = {"lse_axes": ref.lse_axes_numpy, "lse_all": ref.lse_all_numpy, "cond_inplace": ref.cond_inplace_numpy,
               "broadcast_sum": ref.broadcast_sum_numpy, "match_stats": ref.match_stats_numpy,
               "logsumexp0": _logsumexp0_two_pass, "backward_info": ref.backward_info_numpy}
    saved = [(mod, name, getattr(mod, name)) for mod in (_reparam, _lookup) for name in patches if hasattr(mod, name)]
    for mod, name, _ in saved:
        setattr(mod, name, patches[name])
    try:
        yield
    finally:
        for mod, name, fn in saved:
            setattr(mod, name, fn)


def build(model, i_bound, n_iters, memory_mb, use_numpy):
    from sampling.bounds.wmb import WeightedMiniBucket
    w = WeightedMiniBucket(model, i_bound=i_bound, n_iters=n_iters, memory_mb=memory_mb).prepare()
    ctx = numpy_path() if use_numpy else contextlib.nullcontext()
    with ctx, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.process_time()
        w.fit()
        dt = time.process_time() - t0
    return dt, w


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", default=["pedigree23", "pedigree37", "Grids_16"])
    ap.add_argument("--i-bounds", type=int, nargs="+", default=[12, 16, 20])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--n-iters", type=int, default=10)
    ap.add_argument("--memory-mb", type=float, default=2048)
    args = ap.parse_args(argv)
    from sampling.bounds import read_uai

    print(f"{'instance':<12} {'ib':>3} {'MiB':>7} {'passes':>6} {'numpy_s':>8} {'kernel_s':>8} {'ratio':>6} "
          f"{'max|dU|':>9} {'U':>12}")
    ratios = []
    for name in args.names:
        path, evid = find(name)
        m = read_uai(path, evidence=evid) if evid is not None else read_uai(path)
        for ib in args.i_bounds:
            t = {False: [], True: []}
            fits = {}
            try:
                for r in range(args.repeats):
                    for use_numpy in ((True, False) if r % 2 == 0 else (False, True)):
                        dt, w = build(m, ib, args.n_iters, args.memory_mb, use_numpy)
                        t[use_numpy].append(dt)
                        fits[use_numpy] = w
                        del w
            except MemoryError as e:  # e.g. pedigree37 above i-bound 13 at 2 GB
                print(f"{name:<12} {ib:>3} skipped: {e}", flush=True)
                continue
            tn, tk = min(t[True]), min(t[False])
            hn, hk = fits[True].bound_history_, fits[False].bound_history_
            diff = max((abs(a - b) for a, b in zip(hn, hk)), default=0.0) if len(hn) == len(hk) else math.inf
            ratios.append(tn / tk)
            print(f"{name:<12} {fits[False].i_bound:>3} {fits[False].memory_mb_:>7.1f} {fits[False].n_iters_:>6} "
                  f"{tn:>8.2f} {tk:>8.2f} {tn / tk:>6.2f} {diff:>9.2e} {fits[False].log_Z_upper:>12.6f}", flush=True)
            fits.clear()
    if ratios:
        print(f"geometric mean numpy/kernel: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f} "
              f"over {len(ratios)} builds")


if __name__ == "__main__":
    main()
