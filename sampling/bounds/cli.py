"""``sampling bounds``: anytime bounds on ln Z of a UAI model (Lou, Dechter & Ihler 2017).

Example::

    sampling bounds pedigree1.uai --method dis --time 60 --out trace.csv --plot trace.png
    sampling bounds pedigree1 --time 10     # a shipped model, by name
    sampling bounds pedigree1.uai --time 3600 --checkpoint run.json   # resumable
    sampling bounds pedigree20 --marginals --time 30 --marginals-out marg.csv   # P(X_i = x | e)

Progress goes to stderr; the last line on stdout holds the final bounds.
"""
from __future__ import annotations

import math
import os
import sys
import time

import numpy as np

from .dis import METHODS

__all__ = ["add_arguments", "main"]


def add_arguments(parser):
    """Register the ``sampling bounds`` options on an argparse parser."""
    parser.add_argument("model", help="UAI model file (.uai), or the name of a shipped model "
                                      "(e.g. pedigree1; sampling.datasets.list_uai() lists them)")
    parser.add_argument("--evid", default=None, help="UAI evidence file (.evid)")
    parser.add_argument("--method", default="dis", choices=METHODS, help="bounding method (default dis)")
    parser.add_argument("--time", type=float, default=60.0, help="time budget in seconds (default 60)")
    parser.add_argument("--memory-mb", type=float, default=1024.0,
                        help="memory budget in MiB for the tables the method allocates: the WMB tables "
                             "and search nodes together, or all live tables of exact elimination (the "
                             "model's own tables and the Python interpreter are not counted; default 1024)")
    parser.add_argument("--delta", type=float, default=0.025,
                        help="failure probability of each probabilistic bound (default 0.025)")
    parser.add_argument("--i-bound", type=int, default=None, help="WMB i-bound (default: largest that fits)")
    parser.add_argument("--n-samples", type=int, default=1, help="samples per DIS round, N_l (default 1)")
    parser.add_argument("--n-expansions", type=int, default=10, help="expansions per DIS round, N_d (default 10)")
    parser.add_argument("--past-memory", choices=("sample", "search"), default="sample",
                        help="dis once the search tree fills its memory: only sample from the fixed "
                             "tree (sample, default, Alg. 1) or keep searching with the memory-limited "
                             "AOBFS as well (search)")
    parser.add_argument("--max-samples", type=_positive_int, default=None,
                        help="stop after this many samples (>= 1)")
    parser.add_argument("--seed", type=int, default=None,
                        help="random seed (default 0; a resumed --checkpoint goes on with its saved "
                             "random stream, and a --seed different from the saved one is refused)")
    parser.add_argument("--out", default=None, help="write the anytime trace here (CSV, atomic)")
    parser.add_argument("--plot", default=None, help="write a Fig. 3 style PNG of the trace here")
    parser.add_argument("--log-z", type=float, default=None, help="known ln Z to draw on the plot")
    parser.add_argument("--checkpoint", default=None,
                        help="checkpoint file: resume from it if it exists, else write it as the run goes "
                             "(a finished run resumed with a longer --time goes on)")
    parser.add_argument("--checkpoint-every", type=float, default=60.0,
                        help="seconds between checkpoint writes (default 60)")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument("--marginals", action="store_true",
                        help="certified marginals P(X_i = x | evidence) instead of ln Z: an estimate and "
                             "bounds per variable and value, all holding jointly with probability "
                             "1 - delta (sampling.bounds.marginals); CSV to --marginals-out or stdout")
    parser.add_argument("--marginals-out", default=None,
                        help="write the marginals here (CSV, atomic; columns variable, value, p, "
                             "p_lower, p_upper, method)")
    parser.add_argument("--marginals-method", choices=("auto", "exact", "dis"), default="auto",
                        help="marginals: exact propagation when it fits --memory-mb, else sampling "
                             "(auto, default), or force one")


def _positive_int(text):
    import argparse

    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1; got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1; got {v}")
    return v


def main(args) -> int:
    """Run ``sampling bounds``; returns the process exit code.

    0 done; 2 bad input (model, option, checkpoint, or an output that cannot be written,
    found before the run); 3 over the memory budget; 4 the final bounds were printed but an
    output file (``--out``/``--plot``) could not be written.
    """
    from ..datasets import resolve_uai
    from ..exceptions import UAIFormatError
    from .uai import read_uai
    from .checkpoint import check_writable
    from .dis import run

    if args.marginals_out and not args.marginals:
        print("sampling bounds: --marginals-out needs --marginals", file=sys.stderr)
        return 2
    # outputs are checked before the (possibly long) run, not after it
    if args.marginals_out:
        try:
            check_writable(args.marginals_out, "marginals (--marginals-out)")
        except ValueError as exc:
            print(f"sampling bounds: {exc}", file=sys.stderr)
            return 2
    resuming = bool(args.checkpoint) and args.method not in ("exact", "wmb") and os.path.exists(args.checkpoint)
    try:
        for what, path in (("trace (--out)", args.out), ("plot (--plot)", args.plot),
                           ("checkpoint (--checkpoint)", None if resuming else args.checkpoint)):
            if path:
                check_writable(path, what)
    except ValueError as exc:
        print(f"sampling bounds: {exc}", file=sys.stderr)
        return 2
    try:
        model = read_uai(resolve_uai(args.model), evidence=args.evid)
    except (OSError, UAIFormatError) as exc:
        print(f"sampling bounds: cannot read the model: {exc}", file=sys.stderr)
        return 2
    seed = args.seed
    if seed is None and not resuming:
        seed = 0
    if args.marginals:
        return _marginals_main(args, model, seed)
    t_start = time.perf_counter()
    last = [0.0]

    def progress(row):
        now = time.perf_counter()
        if args.quiet or (now - last[0] < 1.0 and row["time_s"] > 0.5):
            return
        last[0] = now
        print(f"[{row['time_s']:8.2f}s] ln Z in [{row['log_Z_lower']:.4f}, {row['log_Z_upper']:.4f}]"
              f"  hat {row['log_Z_hat']:.4f}  samples {row['n_samples']}  nodes {row['n_nodes']}",
              file=sys.stderr, flush=True)

    if not args.quiet:
        print(f"sampling bounds: {args.model} ({len(model.cards)} variables, {len(model.factors)} factors), "
              f"method {args.method}, time {args.time:g} s, memory {args.memory_mb:g} MB",
              file=sys.stderr, flush=True)
        if resuming:
            print(f"resuming from {args.checkpoint} (rebuilding the bound and the search tree) ...",
                  file=sys.stderr, flush=True)
        elif args.method != "exact":
            ib = "largest that fits" if args.i_bound is None else args.i_bound
            print(f"building the weighted mini-bucket bound (i-bound: {ib}) ...", file=sys.stderr, flush=True)
    trace, code = _computed(lambda: run(
        model, method=args.method, time_limit=args.time, memory_mb=args.memory_mb, delta=args.delta,
        n_samples=args.n_samples, n_expansions=args.n_expansions, i_bound=args.i_bound, rng=seed,
        max_samples=args.max_samples, progress=progress, checkpoint=args.checkpoint,
        checkpoint_every=args.checkpoint_every, past_memory=args.past_memory))
    if code:
        return code
    # the result first: a failing output file must not lose it
    f = trace.final
    log10 = math.log(10.0)
    print(f"{args.method}: ln Z in [{f['log_Z_lower']:.6f}, {f['log_Z_upper']:.6f}] "
          f"(log10 [{f['log_Z_lower'] / log10:.6f}, {f['log_Z_upper'] / log10:.6f}]), "
          f"ln Z_hat {f['log_Z_hat']:.6f}, samples {f['n_samples']}, nodes {f['n_nodes']}, "
          f"delta {args.delta}, {time.perf_counter() - t_start:.1f} s", flush=True)
    code = 0
    if args.out:
        try:
            trace.to_csv(args.out)
        except OSError as exc:
            print(f"sampling bounds: cannot write the trace to {args.out}: {exc}", file=sys.stderr)
            code = 4
    if args.plot:
        from .trace import plot_traces

        try:
            plot_traces({args.method: trace}, args.plot, log_Z=args.log_z, title=os.path.basename(str(args.model)))
        except OSError as exc:
            print(f"sampling bounds: cannot write the plot to {args.plot}: {exc}", file=sys.stderr)
            code = 4
    return code


def _computed(compute):
    """``(compute(), 0)``, or ``(None, exit code)`` with the reason on stderr: 2 bad input, 3 over the memory budget."""
    try:
        return compute(), 0
    except (ValueError, TypeError) as exc:
        print(f"sampling bounds: {exc}", file=sys.stderr)
        return None, 2
    except MemoryError as exc:
        print(f"sampling bounds: out of memory budget: {exc}", file=sys.stderr)
        return None, 3


def _marginals_main(args, model, seed):
    """``--marginals``: run :func:`sampling.bounds.marginals` and write its CSV."""
    from .marginal_bounds import marginals

    if not args.quiet:
        print(f"sampling bounds: marginals of {args.model} ({len(model.cards)} variables), "
              f"{args.marginals_method}, time {args.time:g} s, memory {args.memory_mb:g} MB, delta {args.delta}",
              file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    res, code = _computed(lambda: marginals(model, time_limit=args.time, delta=args.delta, memory_mb=args.memory_mb,
                                            method=args.marginals_method, rng=seed, i_bound=args.i_bound,
                                            max_samples=args.max_samples))
    if code:
        return code
    if args.marginals_out:
        try:
            res.to_csv(args.marginals_out)
        except OSError as exc:
            print(f"sampling bounds: cannot write the marginals to {args.marginals_out}: {exc}", file=sys.stderr)
            return 4
    else:
        res.to_frame().to_csv(sys.stdout, index=False, float_format="%.12g")
    width = res.p_upper - res.p_lower
    print(f"marginals ({res.method}): {len(res)} (variable, value) rows, median width "
          f"{float(np.median(width)) if len(res) else 0.0:.3g}, max width {float(width.max(initial=0.0)):.3g}, "
          f"ln Z in [{res.log_Z_lower:.6f}, {res.log_Z_upper:.6f}], samples {res.n_samples}, "
          f"joint delta {res.delta}, {time.perf_counter() - t0:.1f} s",
          file=sys.stdout if args.marginals_out else sys.stderr, flush=True)
    return 0
