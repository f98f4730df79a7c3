"""``coref synth``: write realistic synthetic citation mentions with gold labels."""
from __future__ import annotations

import sys
import time

from coref.io import write_mentions
from coref.synth import synthesize_mentions
from coref.synth_block import synthesize_block

__all__ = ["add_arguments", "main"]


def add_arguments(parser):
    """Register the ``coref synth`` arguments."""
    parser.add_argument("--mentions", type=int, default=100_000, help="number of mentions (default 100000)")
    parser.add_argument("--out", required=True, help="output file (.parquet or .csv), written atomically")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--authors", type=int, default=None, help="number of true authors (default mentions/6)")
    parser.add_argument("--unlabeled-fraction", type=float, default=0.0, help="fraction of mentions with no gold")
    parser.add_argument("--one-name", action="store_true",
                        help="huge one-name blocks instead: every author of a block prints one name or "
                             "a variant ('Wei Wang', 'W. Wang', 'Wen Wang', ...), mentions per author "
                             "heavy-tailed (coref.synth_block)")
    parser.add_argument("--blocks", type=int, default=1, help="--one-name: number of blocks (1-6, default 1); "
                        "--mentions is split evenly over them")
    parser.add_argument("--size-exponent", type=float, default=1.8,
                        help="--one-name: exponent a of P(mentions per author = s) ~ s^-a (default 1.8)")
    parser.add_argument("--max-cluster", type=int, default=None,
                        help="--one-name: largest author size (default min(3000, block size / 10))")


def main(args):
    """Run ``coref synth``; returns the exit status (0 ok, 2 bad arguments)."""
    t0 = time.perf_counter()
    print(f"generating {args.mentions} synthetic mentions (seed {args.seed}) ...", file=sys.stderr, flush=True)
    try:
        if args.one_name:
            if args.authors is not None or args.unlabeled_fraction:
                raise ValueError("--authors and --unlabeled-fraction do not apply to --one-name "
                                 "(the number of authors follows from --size-exponent)")
            df = synthesize_block(args.mentions, rng=args.seed, n_blocks=args.blocks,
                                  size_exponent=args.size_exponent, max_cluster=args.max_cluster)
        else:
            df = synthesize_mentions(args.mentions, rng=args.seed, n_authors=args.authors,
                                     unlabeled_fraction=args.unlabeled_fraction)
        t_gen = time.perf_counter() - t0
        path = write_mentions(df, args.out)
    except (TypeError, ValueError) as exc:
        print(f"coref synth: error: {exc}", file=sys.stderr)
        return 2
    sizes = df["block"].value_counts()
    print(f"wrote {len(df)} mentions of {df['gold'].nunique()} authors in {len(sizes)} blocks "
          f"(largest {sizes.iat[0]}: {sizes.index[0]!r}) to {path}; "
          f"generated in {t_gen:.1f} s, total {time.perf_counter() - t0:.1f} s")
    return 0
