"""Racing samplers, partition-function bounds and ARCH order selection (``sampling`` command line).

One sub-command per module, registered below. Each sub-command lives in the module it drives and exposes two functions:
``add_arguments(parser)`` and ``main(args) -> int``. This file only routes.
"""
import sys

from sampling.utils.cli import route

# name -> (module, one-line help)
SUBCOMMANDS = {
    "bnormal": ("sampling.bounds_normal", "print B_Normal(delta, pi1) and an Appendix-B style table"),
    "synthetic": ("sampling.synthetic", "the Sec. 5.1 synthetic study of Chen & Ghahramani (2016)"),
    "bounds": ("sampling.bounds.cli", "anytime bounds on log Z of a UAI model (Lou et al. 2017)"),
    "arch": ("sampling.arch.cli", "Bayesian ARCH order selection with subsampled MCMC"),
}


def version():
    """The ``racing-inference`` version (:data:`sampling.__version__`)."""
    from sampling import __version__

    return __version__


def main(argv=None):
    """Run ``sampling ARGS``; ``sampling --version`` prints the package version."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] in (["--version"], ["-V"]):
        print(f"sampling (racing-inference) {version()}")
        return 0
    return route("sampling", __doc__.splitlines()[0], SUBCOMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())
