"""The settings of an anytime run (:func:`sampling.bounds.run`), validated once."""
from __future__ import annotations

import dataclasses
import math
import numbers

__all__ = ["METHODS", "RunSettings", "check_run_settings"]

METHODS = ("dis", "two-stage", "wmb-is", "aobfs", "wmb", "exact")


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """Validated settings of :func:`sampling.bounds.run` (see its parameters).

    ``time_limit`` is ``math.inf`` when none was given; ``n_expansions`` and
    ``max_expansions`` may be 0; the other counts are ints >= 1 or None.
    """

    method: str
    time_limit: float
    memory_mb: float
    delta: float
    n_samples: int
    n_expansions: int
    max_samples: int | None
    max_expansions: int | None
    search_fraction: float
    record_every: int | None
    clock: str
    past_memory: str
    checkpoint_every: float


def check_positive_int(value, name, allow_none=True):
    """``value`` as an int >= 1 (or None when allowed); TypeError / ValueError naming ``name``."""
    if value is None and allow_none:
        return None
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise TypeError(f"the {name} parameter must be an int; got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"the {name} parameter must be >= 1; got {value}")
    return int(value)


def check_run_settings(method, time_limit, memory_mb, delta, n_samples, n_expansions, max_samples,
                       max_expansions, search_fraction, record_every, clock, past_memory, checkpoint_every):
    """Validate the settings of :func:`sampling.bounds.run` in the order of its parameters.

    Returns
    -------
    RunSettings

    Raises
    ------
    ValueError, TypeError
        As documented in :func:`sampling.bounds.run`.
    """
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"the method parameter must be one of {METHODS}; got {method!r}")
    if time_limit is None:
        time_limit = math.inf
    time_limit = float(time_limit)
    if not time_limit > 0:
        raise ValueError(f"the time_limit parameter must be > 0 seconds; got {time_limit}")
    memory_mb = float(memory_mb)
    if not memory_mb > 0:
        raise ValueError(f"the memory_mb parameter must be > 0; got {memory_mb}")
    delta = float(delta)
    if not 0.0 < delta < 0.5:
        raise ValueError(f"the delta parameter must be in (0, 0.5); got {delta}")
    n_samples = check_positive_int(n_samples, "n_samples", allow_none=False)
    if isinstance(n_expansions, numbers.Integral) and not isinstance(n_expansions, bool) and n_expansions == 0:
        n_expansions = 0
    else:
        n_expansions = check_positive_int(n_expansions, "n_expansions", allow_none=False)
    max_samples = check_positive_int(max_samples, "max_samples")
    if max_expansions is not None and max_expansions == 0:
        max_expansions = 0
    else:
        max_expansions = check_positive_int(max_expansions, "max_expansions")
    search_fraction = float(search_fraction)
    if not 0.0 < search_fraction <= 1.0:
        raise ValueError(f"the search_fraction parameter must be in (0, 1]; got {search_fraction}")
    record_every = check_positive_int(record_every, "record_every")
    if method in ("dis", "two-stage", "wmb-is") and math.isinf(time_limit) and max_samples is None:
        raise ValueError(f"method {method!r} needs a finite time_limit or max_samples")
    if method == "aobfs" and math.isinf(time_limit) and max_expansions is None:
        raise ValueError("method 'aobfs' needs a finite time_limit or max_expansions")
    if clock not in ("wall", "cpu"):
        raise ValueError(f"the clock parameter must be 'wall' or 'cpu'; got {clock!r}")
    if past_memory not in ("search", "sample"):
        raise ValueError(f"the past_memory parameter must be 'search' or 'sample'; got {past_memory!r}")
    checkpoint_every = float(checkpoint_every)
    if not checkpoint_every > 0:
        raise ValueError(f"the checkpoint_every parameter must be > 0 seconds; got {checkpoint_every}")
    return RunSettings(method, time_limit, memory_mb, delta, n_samples, n_expansions, max_samples,
                       max_expansions, search_fraction, record_every, clock, past_memory, checkpoint_every)
