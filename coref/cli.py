"""``coref`` command line: one sub-command per module, registered below.

Each sub-command lives in the module it drives and exposes ``add_arguments(parser)``
and ``main(args) -> int``. This file only routes.
"""
import argparse
import importlib
import sys

# name -> (module, one-line help)
SUBCOMMANDS = {
    "run": ("coref.pipeline", "load -> block -> fit theta -> Gibbs -> score -> report (grouped k-fold)"),
    "evaluate": ("coref.evaluate", "score a predicted clustering (CSV) against a gold one: B3 and pairwise"),
    "synth": ("coref.synth", "write realistic synthetic citation mentions with gold labels"),
}


def build_parser():
    parser = argparse.ArgumentParser(prog="coref", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:  # a sub-command whose module is not built yet
            p.set_defaults(_missing=f"coref {name}: not available ({exc})")
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
