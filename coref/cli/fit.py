"""``coref fit``: train the pairwise model on labeled mentions and save it (JSON + npz)."""
from __future__ import annotations

import argparse
import sys

from coref.cli.common import (ERRORS, add_fit_arguments, add_flag_arguments, add_gibbs_arguments, add_input_arguments,
                              report_error)
from coref.jobs.fit import fit

__all__ = ["add_arguments", "main"]


def add_arguments(parser):
    """Options of ``coref fit``."""
    add_input_arguments(parser, metavar="LABELED",
                        data_help="labeled mention file or directory (default: every shipped labeled set, aminer_na + aminer_dblp_dev)")
    parser.add_argument("--model", metavar="DIR", required=True, help="model directory to write")
    add_gibbs_arguments(parser, default="auto", sampler_help="Gibbs sampler saved with the model (default auto)",
                        seed_help="random seed (default 0)",
                        delta_help="racing error level saved with the model",
                        sweeps_help="Gibbs sweeps saved with the model")
    parser.add_argument("--C", type=float, default=0.1, help="inverse L2 strength of the regression (default 0.1)")
    add_fit_arguments(parser, calibration_help="confidence calibration maps fitted on the training mentions and "
                                               "saved with the model, applied by `coref predict --confidence` "
                                               "(default isotonic)",
                      block_prior_help="per-block prior odds of coreference, estimated from the block's own pair "
                                       "probabilities (pcc, default) or the pooled training intercept for every "
                                       "block (none)")
    parser.add_argument("--calibration-folds", dest="calibration_folds", type=int, default=5, metavar="K",
                        help="fit the calibration maps on scores cross-fitted over K groups of blocks (default 5; "
                             "0: the final model scores its own training mentions)")
    parser.add_argument("--shift-tree", dest="shift_tree", action=argparse.BooleanOptionalAction, default=True,
                        help="fit the block prior's learned correction on the same cross-fitted groups (default; "
                             "each held-out block clustered at 13 prior shifts; --no-shift-tree: none)")
    parser.add_argument("--big-blocks", dest="big_blocks", choices=["synthetic", "none"], default="synthetic",
                        help="weights for blocks of 1,000 mentions and more, larger than any labeled block: fitted on "
                             "simulated one-name blocks (synthetic, default; about 10 s) or none (one theta "
                             "for every block)")
    add_flag_arguments(parser, quiet=False)


def main(args):
    """Entry point of ``coref fit``; returns the exit status."""
    try:
        r = fit(args.data, model=args.model, format=args.format, strict=args.strict, rng=args.seed, C=args.C,
                sampler=args.sampler, delta=args.delta, n_sweeps=args.n_sweeps,
                calibration=getattr(args, "calibration", "isotonic"),
                block_prior=getattr(args, "block_prior", "pcc"),
                calibration_folds=getattr(args, "calibration_folds", 5),
                big_blocks=None if getattr(args, "big_blocks", "synthetic") == "none" else "synthetic",
                shift_tree=getattr(args, "shift_tree", True))
    except ERRORS as exc:
        return report_error("fit", args, exc)
    print(f"fitted theta on {r.n_pairs:,} labeled pairs from {r.n_labeled} labeled mentions in "
          f"{r.n_blocks} blocks (intercept shift {r.shift:+.2f}) in {r.fit_s:.1f} s", file=sys.stdout)
    if r.calibration is not None:
        c = r.calibration
        how = "cross-fitted scores" if "cross-fitted" in str(c.get("source", "")) else "in-sample scores"
        print(f"calibration ({c['method']}) fitted on {c['n_pairs']:,} pairs and {c['n_mentions']} mentions of the "
              f"training data ({how}) in {r.calibration_s:.1f} s")
    if r.shift_tree is not None:
        t = r.shift_tree
        leaves = [v for v, left in zip(t["value"], t["left"]) if left < 0]
        print(f"block prior correction: a tree of {len(leaves)} leaves ({min(leaves):+.2f} to {max(leaves):+.2f} "
              f"nats) fitted on {t['n_blocks']} cross-fitted held-out blocks in {r.shift_tree_s:.1f} s")
    print(f"model: {r.model}/ (model.json, theta.npz, manifest.json)")
    return 0
