"""``coref synth``: write realistic synthetic citation mentions with gold labels."""
from __future__ import annotations

import sys
import time

from coref.io import write_mentions
from coref.synth import synthesize_mentions

__all__ = ["add_arguments", "main"]


def add_arguments(parser):
    """Register the ``coref synth`` arguments."""
    parser.add_argument("--mentions", type=int, default=100_000, help="number of mentions (default 100000)")
    parser.add_argument("--out", required=True, help="output file (.parquet or .csv), written atomically")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--authors", type=int, default=None, help="number of true authors (default mentions/6)")
    parser.add_argument("--unlabeled-fraction", type=float, default=0.0, help="fraction of mentions with no gold")


def main(args):
    """Run ``coref synth``; returns the exit status (0 ok, 2 bad arguments)."""
    t0 = time.perf_counter()
    print(f"generating {args.mentions} synthetic mentions (seed {args.seed}) ...", file=sys.stderr, flush=True)
    try:
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
