"""Author coreference on citation data with Racing-Normal Gibbs (``coref`` command line).

Argument parsing and printing only: each sub-command is a module of this package with
``add_arguments(parser)`` and ``main(args) -> int`` over a job of :mod:`coref.jobs`.
This file only routes (:func:`sampling.utils.cli.route`); shared options and error
reporting are in :mod:`coref.cli.common`.
"""
import sys

from coref import __version__
from sampling.utils.cli import route

__all__ = ["main", "SUBCOMMANDS"]

# name -> (module, one-line help)
SUBCOMMANDS = {
    "fit": ("coref.cli.fit", "train the pairwise model on labeled mentions and save it (JSON + npz)"),
    "predict": ("coref.cli.predict", "cluster unlabeled mentions with a saved (or the shipped) model"),
    "add": ("coref.cli.add", "add new mentions to an earlier clustering without renumbering it"),
    "explain": ("coref.cli.explain", "break the pairwise factor of two mentions down by feature"),
    "run": ("coref.cli.run", "k-fold evaluation: load -> block -> fit theta -> Gibbs -> score -> report"),
    "evaluate": ("coref.cli.evaluate", "score a predicted clustering (CSV) against a gold one: B3 and pairwise"),
    "synth": ("coref.cli.synth", "write realistic synthetic citation mentions with gold labels"),
}


def main(argv=None):
    """Run ``coref ARGS``; ``coref --version`` prints the package version. Returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] not in (["--version"], ["-V"]):
        from coref.cli.common import console_warnings   # (not needed by --version)

        with console_warnings(argv[0] if argv and argv[0] in SUBCOMMANDS else "command"):
            return route("coref", __doc__.splitlines()[0], SUBCOMMANDS, argv)
    print(f"coref (racing-inference) {__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
