"""``coref`` command line (stub: the coreference pipeline is being built, see issue 3)."""
import sys


def main(argv=None):
    print("coref: not implemented yet (the coreference pipeline is issue 3)", file=sys.stderr)
    return 2
