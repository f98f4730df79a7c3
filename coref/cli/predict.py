"""``coref predict``: cluster unlabeled mentions with a saved (or the shipped) model."""
from __future__ import annotations

import argparse

from coref.cli.common import ERRORS, add_common_arguments, add_input_arguments, print_summary, report_error
from coref.io.stream import GROUP_MENTIONS, STREAM_MIN_MENTIONS
from coref.jobs.predict import predict

__all__ = ["add_arguments", "main"]


def add_arguments(parser):
    """Options of ``coref predict``."""
    add_input_arguments(parser, data_help="mention file or directory (default: the shipped AMiner set)",
                        model_help="model directory from `coref fit` (default: the shipped model)")
    parser.add_argument("--out", metavar="DIR", required=True, help="output directory")
    add_common_arguments(parser)
    parser.add_argument("--confidence", action="store_true",
                        help="also write confidence.csv, pairs.csv and review.csv (per-mention assignment confidence, "
                             "the review queue)")
    parser.add_argument("--certify-seconds", dest="certify_seconds", type=float, default=None, metavar="S",
                        help="with --confidence: seconds of DIS certification of the least certain assignments "
                             "whose sub-models are too large to sum exactly (0: off; default: half the "
                             "clustering time, 0.5 to 60 s)")
    parser.add_argument("--stream", action=argparse.BooleanOptionalAction, default=None,
                        help="read one CSV/Parquet file in block groups, clustered and written one group at a time "
                             "(memory bounded by the largest group; an interrupted run resumes from the finished "
                             f"groups); default: for files of {STREAM_MIN_MENTIONS:,} mentions or more")
    parser.add_argument("--group-mentions", dest="group_mentions", type=int, default=GROUP_MENTIONS, metavar="N",
                        help=f"with --stream: mentions per block group, about (default {GROUP_MENTIONS:,})")


def main(args):
    """Entry point of ``coref predict``; returns the exit status."""
    try:
        result = predict(args.data, model=args.model, out=args.out, sampler=args.sampler, seed=args.seed,
                         delta=args.delta, n_sweeps=args.n_sweeps, format=args.format, strict=args.strict,
                         workers=args.workers, scheduler=args.scheduler, confidence=args.confidence,
                         progress=not args.quiet, factor_cache_mb=args.factor_cache_mb,
                         certify_seconds=args.certify_seconds, stream=args.stream,
                         group_mentions=args.group_mentions)
    except ERRORS as exc:
        return report_error("predict", args, exc)
    print_summary(result.summary, args.out)
    return 0
