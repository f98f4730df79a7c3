"""Author coreference on citation data with Racing-Normal Gibbs (``coref`` command line).

One sub-command per module, registered below. Each sub-command lives in the module it drives and exposes ``add_arguments(parser)``
and ``main(args) -> int``. This file only routes.
"""
import sys

from sampling.utils.cli import route

# name -> (module, one-line help)
SUBCOMMANDS = {
    "fit": ("coref.train", "train the pairwise model on labeled mentions and save it (JSON + npz)"),
    "predict": ("coref.predict", "cluster unlabeled mentions with a saved (or the shipped) model"),
    "add": ("coref.add", "add new mentions to an earlier clustering without renumbering it"),
    "explain": ("coref.explain", "break the pairwise factor of two mentions down by feature"),
    "run": ("coref.pipeline", "k-fold evaluation: load -> block -> fit theta -> Gibbs -> score -> report"),
    "evaluate": ("coref.evaluate", "score a predicted clustering (CSV) against a gold one: B3 and pairwise"),
    "synth": ("coref.synth", "write realistic synthetic citation mentions with gold labels"),
}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] in (["--version"], ["-V"]):
        from coref import __version__

        print(f"coref (racing-inference) {__version__}")
        return 0
    return route("coref", __doc__.splitlines()[0], SUBCOMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())
