"""``coref run``: k-fold evaluation: load -> block -> fit theta -> Gibbs -> score -> report."""
from __future__ import annotations

import sys

from coref.cli.common import (ERRORS, add_executor_arguments, add_fit_arguments, add_flag_arguments,
                              add_gibbs_arguments, add_input_arguments, report_error)
from coref.jobs import run as run_job
from coref.settings import ALL_SAMPLERS

__all__ = ["add_arguments", "main"]


def add_arguments(parser):
    """Options of ``coref run``."""
    add_input_arguments(parser, data_help="mention file or directory (default: the shipped AMiner set "
                                          "data/aminer_na)",
                        format_help="input format (default: detected from the path)")
    add_gibbs_arguments(parser, samplers=ALL_SAMPLERS + ("both",), default="both",
                        sampler_help="Gibbs conditional sampler: Racing-Normal, exact, auto (exact from cached "
                                     "factors where a block's matrix fits, racing otherwise), or both (racing "
                                     "and exact; default)")
    parser.add_argument("--folds", type=int, default=5, help="grouped k-fold by block (default 5)")
    parser.add_argument("--out", metavar="DIR", default="results/", help="output directory (default results/)")
    add_executor_arguments(parser, scheduler_help="run blocks on the Dask scheduler at ADDRESS "
                                                  "(e.g. tcp://10.0.0.5:8786)")
    parser.add_argument("--resume", action="store_true",
                        help="reuse per-block results checkpointed in DIR/.checkpoint by an earlier run")
    parser.add_argument("--no-confidence", dest="confidence", action="store_false",
                        help="skip the held-out confidence calibration figures")
    add_fit_arguments(parser, calibration_help="confidence calibration map, fitted on each fold's training folds "
                                               "(default isotonic)",
                      block_prior_help="per-block prior odds of coreference in the fold models (default pcc; none: "
                                       "the pooled intercept only)")
    add_flag_arguments(parser, strict_help="fail on the first bad record instead of skipping it")


def main(args):
    """Entry point of ``coref run``; returns the exit status."""
    try:
        result = run_job.run(args.data, format=args.format, sampler=args.sampler, folds=args.folds, out=args.out,
                             workers=args.workers, scheduler=args.scheduler, seed=args.seed, delta=args.delta,
                             n_sweeps=args.n_sweeps, resume=args.resume, strict=args.strict, progress=not args.quiet,
                             confidence=getattr(args, "confidence", True),
                             calibration=getattr(args, "calibration", "isotonic"),
                             block_prior=getattr(args, "block_prior", "pcc"))
    except ERRORS as exc:
        return report_error("run", args, exc)
    except KeyboardInterrupt as exc:
        print("coref run: interrupted", file=sys.stderr)
        for note in getattr(exc, "__notes__", ()):
            print(f"coref run: {note}", file=sys.stderr)
        return 130
    print(result.summary())
    if result.n_reused:
        print(f"reused {result.n_reused} block results from checkpoints, computed {result.n_computed}")
    if result.refused:
        print(f"refused {len(result.refused)} checkpoint(s) and recomputed them:")
        for why in result.refused[:10]:
            print(f"  {why}")
        if len(result.refused) > 10:
            print(f"  ... and {len(result.refused) - 10} more (metrics.json: checkpoints_refused)")
    print(f"outputs: {result.out}/ (report.md, metrics.json, clusters.csv, curves.csv, plots)")
    return 0
