"""Shared machinery of the ``sampling`` and ``coref`` command lines and lazy exports.

A command line is a table ``{name: (module, help)}``; each module defines
``add_arguments(parser)`` and ``main(args) -> int``. A sub-command whose module
cannot be imported is still listed, and says why when it is run.
"""
import argparse
import importlib
import os
import sys


def build_parser(prog, description, subcommands, *, only=None):
    """An ``argparse`` parser with one sub-parser per entry of ``subcommands``.

    Only the module of sub-command ``only`` is imported (all of them when ``only``
    is None), so one broken or slow-to-import module does not affect the others.
    """
    parser = argparse.ArgumentParser(prog=prog, description=description)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_) in subcommands.items():
        p = sub.add_parser(name, help=help_, description=help_)
        if only is not None and name != only:
            continue
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            p.set_defaults(_missing=f"{prog} {name}: not available ({exc})")
            continue
        mod.add_arguments(p)
        p.set_defaults(_main=mod.main)
    return parser


def route(prog, description, subcommands, argv=None):
    """Parse ``argv`` and run the chosen sub-command; return its exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    only = argv[0] if argv and argv[0] in subcommands else None
    args = build_parser(prog, description, subcommands, only=only).parse_args(argv)
    if getattr(args, "_missing", None):
        print(args._missing, file=sys.stderr)
        return 2
    try:
        return int(args._main(args) or 0)
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def lazy_exports(package, exports, namespace):
    """Module-level ``__getattr__`` and ``__dir__`` importing ``exports[name]`` on first use.

    Parameters
    ----------
    package : str
        The package's dotted name (for error messages).
    exports : dict of {str: str}
        Public name -> module that defines it.
    namespace : dict
        The package's ``globals()``; resolved names are cached there.
    """

    def __getattr__(name):
        try:
            module = exports[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
