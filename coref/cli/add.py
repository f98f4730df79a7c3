"""``coref add``: add new mentions to an earlier clustering without renumbering it."""
from __future__ import annotations

from coref.cli.common import ERRORS, add_common_arguments, add_input_arguments, print_summary, report_error
from coref.jobs.add import add

__all__ = ["add_arguments", "main"]


def add_arguments(parser):
    """Options of ``coref add``."""
    parser.add_argument("--clusters", metavar="DIR", required=True,
                        help="output directory of an earlier `coref predict` or `coref add`")
    add_input_arguments(parser, data_help="the new mentions (file or directory)", required=True,
                        model_help="model directory (default: the shipped model)")
    parser.add_argument("--out", metavar="DIR", required=True,
                        help="output directory (neither --clusters nor inside it; a finished run there is replaced "
                             "only by a finished one)")
    parser.add_argument("--revisit", action="store_true",
                        help="let Gibbs also move the old mentions of the blocks that receive new ones")
    parser.add_argument("--allow-model-change", dest="allow_model_change", action="store_true",
                        help="allow another model than the one that made --clusters (recorded in the manifest)")
    parser.add_argument("--confidence", action="store_true",
                        help="also write confidence.csv, pairs.csv and review.csv for the mentions of the blocks "
                             "that received new ones (old and new; column `new`), as `coref predict --confidence`")
    parser.add_argument("--certify-seconds", dest="certify_seconds", type=float, default=None, metavar="S",
                        help="with --confidence: seconds of DIS certification of the least certain assignments "
                             "(default: half the time of the add, 0.5 to 60 s; 0 = off)")
    add_common_arguments(parser)


def main(args):
    """Entry point of ``coref add``; returns the exit status."""
    try:
        result = add(args.clusters, args.data, model=args.model, out=args.out, revisit=args.revisit,
                     sampler=args.sampler, seed=args.seed, delta=args.delta, n_sweeps=args.n_sweeps,
                     format=args.format, strict=args.strict, workers=args.workers, scheduler=args.scheduler,
                     progress=not args.quiet, factor_cache_mb=args.factor_cache_mb,
                     allow_model_change=getattr(args, "allow_model_change", False),
                     confidence=args.confidence, certify_seconds=args.certify_seconds)
    except ERRORS as exc:
        return report_error("add", args, exc)
    s = result.summary
    print(f"added {s['n_new_mentions']} mentions: {s['n_joined_existing']} joined existing clusters, "
          f"{s['n_new_clusters']} new clusters; existing ids changed: {s['n_old_ids_changed']}"
          + (f"; skipped {s['n_skipped_duplicates']} already clustered" if s['n_skipped_duplicates'] else ""))
    print_summary(s, args.out)
    return 0
