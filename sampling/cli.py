"""Racing samplers, partition-function bounds and ARCH order selection (``sampling`` command line).

One sub-command per module, registered below. Each sub-command lives in the module it drives and exposes two functions:
``add_arguments(parser)`` and ``main(args) -> int``. This file only routes.
"""
import sys

from sampling._cli import route

# name -> (module, one-line help)
SUBCOMMANDS = {
    "bnormal": ("sampling.bounds_normal", "print B_Normal(delta, pi1) and an Appendix-B style table"),
    "synthetic": ("sampling.synthetic", "the Sec. 5.1 synthetic study of Chen & Ghahramani (2016)"),
    "bounds": ("sampling.bounds.cli", "anytime bounds on log Z of a UAI model (Lou et al. 2017)"),
    "arch": ("sampling.arch.cli", "Bayesian ARCH order selection with subsampled MCMC"),
}


def main(argv=None):
    return route("sampling", __doc__.splitlines()[0], SUBCOMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())
