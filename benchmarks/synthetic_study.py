"""Sec. 5.1 synthetic study of Chen & Ghahramani (2016) (Fig. 1 b-d, f-h).

    nice -n 10 python benchmarks/synthetic_study.py            # modest default (few minutes)
    nice -n 10 python benchmarks/synthetic_study.py --full     # the paper's setting (hours)

Thin wrapper over ``sampling synthetic`` (sampling/synthetic.py). The default is the
command's default: D = 10, N = 1e5, Normal / Uniform / LogNormal(0, 2) rewards normalised
to a fixed p(X), sigma in {0.1, 1e-4, 1e-5}, delta in {1e-3, 1e-2, 0.1}, 40 draws per
setting, algorithms racing-normal (pairwise), racing-normal-marginal, racing-ebs
(pairwise) and lil-ucb. ``--full`` uses the paper's 10,000 draws per setting, seven
deltas in [1e-3, 0.1] and all five algorithms (EBS marginal too). Any further arguments
are passed to ``sampling synthetic`` (e.g. ``--out DIR``, ``--draws 200``).
"""
from __future__ import annotations

import argparse
import sys

from sampling import synthetic

FULL = ["--n-data", "100000", "--draws", "10000", "--deltas", "0.001,0.002,0.005,0.01,0.02,0.05,0.1",
        "--algorithms", "racing-normal,racing-normal-marginal,racing-ebs,racing-ebs-marginal,lil-ucb"]


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    full = "--full" in argv
    argv = [a for a in argv if a != "--full"]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    synthetic.add_arguments(parser)
    args = parser.parse_args((FULL if full else []) + argv)
    return synthetic.main(args)


if __name__ == "__main__":
    raise SystemExit(main())
