"""``coref explain``: break the pairwise factor of two mentions down by feature."""
from __future__ import annotations

import json
import sys

from coref.cli.common import ERRORS, add_input_arguments, report_error
from coref.jobs.explain import explain

__all__ = ["add_arguments", "main"]


def add_arguments(parser):
    """Options of ``coref explain``."""
    parser.add_argument("mention_a", metavar="MENTION_A")
    parser.add_argument("mention_b", metavar="MENTION_B")
    add_input_arguments(parser, data_help="mentions holding both (default: shipped AMiner)",
                        model_help="model directory (default: the shipped model)")
    parser.add_argument("--top", type=int, default=12, help="feature terms to list (default 12)")
    parser.add_argument("--json", action="store_true", help="print the breakdown as JSON")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")


def main(args):
    """Entry point of ``coref explain``; returns the exit status."""
    try:
        e = explain(args.mention_a, args.mention_b, data=args.data, format=args.format, model=args.model)
    except (KeyError, *ERRORS) as exc:
        return report_error("explain", args, exc)
    if args.json:
        print(json.dumps({"mention_a": e.mention_a, "mention_b": e.mention_b, "block": e.block, "f": e.f,
                          "bias": e.bias, "by_group": e.by_group.to_dict("records"),
                          "by_feature": e.by_feature.to_dict("records")}, indent=2))
    else:
        print(e.text(top=args.top), file=sys.stdout)
    return 0
