"""Author coreference on citation data with Racing-Normal Gibbs (``coref`` command line).

One sub-command per module, registered below. Each sub-command lives in the module it drives and exposes ``add_arguments(parser)``
and ``main(args) -> int``. This file only routes.
"""
import sys

from sampling._cli import route

# name -> (module, one-line help)
SUBCOMMANDS = {
    "run": ("coref.pipeline", "load -> block -> fit theta -> Gibbs -> score -> report (grouped k-fold)"),
    "evaluate": ("coref.evaluate", "score a predicted clustering (CSV) against a gold one: B3 and pairwise"),
    "synth": ("coref.synth", "write realistic synthetic citation mentions with gold labels"),
}


def main(argv=None):
    return route("coref", __doc__.splitlines()[0], SUBCOMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())
