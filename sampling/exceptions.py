"""Every exception and warning class of the ``sampling`` package.

Each subclasses the builtin a caller would naturally catch (``ValueError`` for
bad input values, ``UserWarning`` for numerical trouble), so ``except
ValueError`` keeps working for code that does not know our names.
"""


def located(message, path, position, noun):
    """Prefix ``message`` with where it happened: ``path:position: ``, ``path: `` or ``noun position: ``."""
    if path is not None:
        return str(path) + (f":{position}" if position is not None else "") + ": " + message
    if position is not None:
        return f"{noun} {position}: {message}"
    return message


class SamplingError(RuntimeError):
    """Base class for runtime failures of a sampler (not bad input)."""


class UAIFormatError(ValueError):
    """A UAI model or evidence file could not be parsed.

    Parameters
    ----------
    message : str
        What is wrong.
    path : str or None
        The file being read.
    line : int or None
        1-based line number where the problem was detected.
    """

    def __init__(self, message, *, path=None, line=None):
        self.path = None if path is None else str(path)
        self.line = line
        super().__init__(located(message, self.path, line, "line"))


class ReturnsDataError(ValueError):
    """A returns series is unusable (NaN, too short, constant, unreadable)."""


class BuildInterrupted(Exception):
    """:meth:`sampling.bounds.WeightedMiniBucket.fit` was stopped by its ``stop`` callable."""


class ConvergenceWarning(UserWarning):
    """An iterative procedure (WMB message passing, an optimiser) did not converge."""


class PerformanceWarning(UserWarning):
    """A slower code path is used (e.g. a pure-Python fallback)."""


class DataWarning(UserWarning):
    """Input data look wrong but can be used (e.g. extreme returns in a price series)."""


class LowESSWarning(UserWarning):
    """An MCMC chain's effective sample size is too low for reliable summaries."""


class CheckpointError(ValueError):
    """A checkpoint file cannot be reused: unreadable, tampered with, or written by another run.

    The message names the file and says what is wrong.
    """
