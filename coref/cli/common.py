"""What the ``coref`` sub-commands share: options, error reporting and the console summary."""
from __future__ import annotations

import contextlib
import sys
import warnings
from pathlib import Path

from coref.exceptions import SkippedRecordsWarning
from coref.io import FORMATS
from coref.outputs.report import loader_lines
from coref.settings import ALL_SAMPLERS, CALIBRATIONS

__all__ = ["ERRORS", "report_error", "print_summary", "add_common_arguments", "add_input_arguments",
           "add_gibbs_arguments", "add_executor_arguments", "add_fit_arguments", "add_flag_arguments",
           "format_warning", "console_warnings"]

#: Errors a command reports as ``coref COMMAND: error: ...`` with exit status 2 (``--debug``: the traceback).
ERRORS = (FileNotFoundError, NotADirectoryError, ValueError, TypeError, ConnectionError, OSError, RuntimeError)

_SEED_HELP = "random seed (default 0); same seed, same clusters"


def report_error(command, args, exc):
    """Print ``coref COMMAND: error: ...`` and the error's notes (or re-raise with --debug); return exit status 2.

    The notes (``exc.__notes__``) say what the command changed in its output, e.g.
    ``--out DIR: the previous results there are kept, unchanged``.
    """
    if getattr(args, "debug", False):
        raise exc
    print(f"coref {command}: error: {exc}", file=sys.stderr)
    for note in getattr(exc, "__notes__", ()):
        print(f"coref {command}: {note}", file=sys.stderr)
    return 2


#: Where the loader's warning starts listing items: the console shows its counts only
#: (the command prints the files after, and writes every item to loader.log).
_LOADER_DETAILS = ("; files skipped:", "; repaired:", "; records skipped:", "; ignored:")


def format_warning(command, message, category=UserWarning):
    """One console line for a warning: ``coref COMMAND: warning: MESSAGE``.

    The message of this package's warnings names the data file and line where known;
    the Python source location of the ``warnings.warn`` call (and a source excerpt)
    is never shown. Line breaks in the message become ``"; "``. A loader warning
    (:class:`coref.exceptions.SkippedRecordsWarning`) is cut to its counts: the
    files follow in the command's summary, the details in ``loader.log``.
    """
    text = "; ".join(s.strip() for s in str(message).splitlines() if s.strip())
    if isinstance(category, type) and issubclass(category, SkippedRecordsWarning):
        cut = [i for i in (text.find(m) for m in _LOADER_DETAILS) if i >= 0]
        if cut:
            text = text[:min(cut)] + " (files and details below and in loader.log)"
    return f"coref {command}: warning: {text}"


@contextlib.contextmanager
def console_warnings(command, stream=None):
    """While active, every warning is printed as one line by :func:`format_warning` (on stderr)."""
    with warnings.catch_warnings():
        def show(message, category, filename, lineno, file=None, line=None):
            print(format_warning(command, message, category), file=stream or sys.stderr)

        warnings.showwarning = show
        yield


def print_summary(summary, out):
    """Short console summary of a predict / add run."""
    d = summary["data"]
    print(f"{summary['n_mentions']} mentions in {summary['n_blocks']} blocks -> {summary['n_clusters']} clusters "
          f"({summary['n_singletons']} singletons); {summary['n_factor_evals']:,} factor evaluations, "
          f"{summary['elapsed_s']:.1f} s")
    if summary.get("sampling"):
        print(summary["sampling"]["text"])
    c = summary.get("certify")
    if c and c.get("seconds"):
        widths = f", interval width median {c['width_median']:.3f}" if c.get("n_certified") else ""
        print(f"DIS certification ({c.get('used_seconds', 0.0):.1f} of {c['seconds']:.3g} s): "
              f"{c.get('n_certified', 0)} assignment(s) certified{widths}")
    for line in loader_lines(d, log=f"{Path(out) / 'loader.log'}"):
        print(line)
    written = sorted(p.name for p in Path(out).iterdir() if p.is_file() and not p.name.startswith("."))
    print(f"outputs: {out}/ ({', '.join(written)})")


def add_input_arguments(parser, *, data_help, format_help="input format (default: detected)", metavar="PATH",
                        required=False, model_help=None):
    """``--data`` and ``--format`` (and ``--model DIR``, read, when ``model_help`` is given)."""
    parser.add_argument("--data", metavar=metavar, default=None, required=required, help=data_help)
    parser.add_argument("--format", choices=FORMATS, default=None, help=format_help)
    if model_help is not None:
        parser.add_argument("--model", metavar="DIR", default=None, help=model_help)


def add_gibbs_arguments(parser, *, samplers=ALL_SAMPLERS, default="racing", sampler_help, seed_help=_SEED_HELP,
                        delta_help="racing error level (default 0.05)",
                        sweeps_help="Gibbs sweeps per block (default: the sampler's default)"):
    """``--sampler``, ``--seed``, ``--delta`` and ``--sweeps``."""
    parser.add_argument("--sampler", choices=samplers, default=default, help=sampler_help)
    parser.add_argument("--seed", type=int, default=0, help=seed_help)
    parser.add_argument("--delta", type=float, default=0.05, help=delta_help)
    parser.add_argument("--sweeps", dest="n_sweeps", type=int, default=None, metavar="N", help=sweeps_help)


def add_executor_arguments(parser, *, scheduler_help):
    """``--workers N`` or ``--scheduler ADDRESS`` (one of them)."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, metavar="N", default=None,
                       help="run blocks on a local Dask cluster of N worker processes")
    where.add_argument("--scheduler", metavar="ADDRESS", default=None, help=scheduler_help)


def add_fit_arguments(parser, *, calibration_help, block_prior_help):
    """``--calibration`` and ``--block-prior`` of the models ``coref fit`` / ``coref run`` fit."""
    parser.add_argument("--calibration", choices=CALIBRATIONS, default="isotonic", help=calibration_help)
    parser.add_argument("--block-prior", dest="block_prior", choices=("pcc", "none"), default="pcc",
                        help=block_prior_help)


def add_flag_arguments(parser, *, strict_help="fail on the first bad record or file", quiet=True):
    """``--strict``, ``--quiet`` (commands with progress bars) and ``--debug``."""
    parser.add_argument("--strict", action="store_true", help=strict_help)
    if quiet:
        parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")


def add_common_arguments(parser):
    """Options shared by ``coref predict`` and ``coref add``."""
    add_gibbs_arguments(parser, default="auto",
                        sampler_help="Gibbs sampler (default auto); auto: exact Gibbs from the cached "
                                             "factor matrix for each block whose matrix fits --factor-cache-mb "
                                             "(when not given: predict 1024 MiB, streamed predict 128, add "
                                             "256) and holds fewer than 5,000 mentions, racing otherwise")
    add_executor_arguments(parser, scheduler_help="run blocks on this Dask scheduler")
    parser.add_argument("--factor-cache-mb", type=float, default=0.0, metavar="MB",
                        help="exact and auto samplers: sample each block whose n x n factor matrix fits "
                             "MB MiB from the matrix (same clusters, factors evaluated once; default 0: "
                             "off for exact; for auto 1024 in predict, 128 in a streamed predict, 256 in add)")
    add_flag_arguments(parser)
