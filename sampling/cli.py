"""``sampling`` command line: one sub-command per module, registered below.

Each sub-command lives in the module it drives and exposes two functions:
``add_arguments(parser)`` and ``main(args) -> int``. This file only routes.
"""
import argparse
import importlib
import sys

# name -> (module, one-line help)
SUBCOMMANDS = {
    "bnormal": ("sampling.bounds_normal", "print B_Normal(delta, pi1) and an Appendix-B style table"),
    "synthetic": ("sampling.synthetic", "the Sec. 5.1 synthetic study of Chen & Ghahramani (2016)"),
    "bounds": ("sampling.bounds.cli", "anytime bounds on log Z of a UAI model (Lou et al. 2017)"),
    "arch": ("sampling.arch.cli", "Bayesian ARCH order selection with subsampled MCMC"),
}


def build_parser():
    parser = argparse.ArgumentParser(prog="sampling", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:  # a sub-command whose module is not built yet
            p.set_defaults(_missing=f"sampling {name}: not available ({exc})")
            continue
        mod.add_arguments(p)
        p.set_defaults(_main=mod.main)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    if getattr(args, "_missing", None):
        print(args._missing, file=sys.stderr)
        return 2
    return int(args._main(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
