"""One frozen, validated settings object per coref command, passed whole.

Every command (``coref run``, ``fit``, ``predict``, ``add``) validates its
parameters exactly once, here, into a :class:`CorefSettings`; the stages below
(inference, checkpoints, reports, manifest) take the object and never re-check.
:meth:`CorefSettings.key` is the hash that identifies a run's settings in
checkpoints and manifests.
"""
from __future__ import annotations

import hashlib
import json
import math
import numbers
import warnings
from dataclasses import asdict, dataclass, field

__all__ = ["SAMPLERS", "ALL_SAMPLERS", "INITS", "CALIBRATIONS", "CorefSettings", "make_settings", "GibbsSettings",
           "GIBBS_PARAMS", "make_gibbs_settings", "check_calibration", "check_delta", "check_memory_mb",
           "check_nonnegative", "check_positive"]

#: Gibbs conditional samplers of :class:`coref.gibbs.GibbsCoref` (racing first).
SAMPLERS = ("racing", "exact")
#: Every sampler a command accepts: :data:`SAMPLERS` (what ``"both"`` runs) and ``"auto"``
#: (per block, exact Gibbs from the cached factor matrix when it fits, racing otherwise;
#: see :class:`coref.gibbs.GibbsCoref`).
ALL_SAMPLERS = SAMPLERS + ("auto",)
#: Initial states of :class:`coref.gibbs.GibbsCoref`: one cluster per mention, or per block;
#: "auto" (``coref.gibbs.block.BIG_INIT`` for big blocks, singletons otherwise), and the cheap
#: clusterings of :mod:`coref.gibbs.start` ("greedy" over coauthor ids, coauthor "components").
INITS = ("singletons", "one", "auto", "greedy", "components")
#: Annealed sweeps of a block of at least ``coref.gibbs.block.STILL_MIN_N`` movable mentions
#: (the same temperatures, t_start to t_end, in fewer steps); ``None`` = ``n_sweeps``.  Such a
#: block starts from a greedy clustering, and its first sweep (at temperature t_start) does
#: nearly all the work: racing, shipped model, seed 0 (2026-12-05), B3 F1 with 1 / 2 / 3 / 4 /
#: 10 sweeps (10 early-stopped at 8): one-name block of 10,000 mentions - / 0.9069 / - / 0.9066 /
#: 0.9063; 20,000 (seed 1) - / 0.9082 / 0.9086 / 0.9081 / 0.9089; 30,000 0.8917 / 0.8924 / 0.8919 /
#: 0.8923 / 0.8919; three of 8,000 (seed 2, exponent 1.5) 0.9296 / 0.9276 / 0.9270 / 0.9269 /
#: 0.9273; the 18 first-initial blocks of >= 5,000 mentions of 3M ``coref synth`` mentions
#: (123,742) - / 0.7555 / - / 0.7500 / 0.7475.  Walls (2 cores): 30,000 mentions 36 s with 2
#: sweeps, 48 s with 4; the 3M blocks 121 s with 2, 134 s with 4, 146 s with 10.  Each sweep
#: after the first costs ~2,100 factors per step at 100,000 mentions.
BIG_BLOCK_SWEEPS = 2
#: Calibration maps of the held-out confidence of ``coref run`` (:mod:`coref.jobs.heldout`).
CALIBRATIONS = ("isotonic", "temperature", "none")


def check_calibration(calibration):
    """Raise ValueError unless ``calibration`` is one of :data:`CALIBRATIONS`."""
    if not (isinstance(calibration, str) and calibration in CALIBRATIONS):
        raise ValueError(f"the calibration parameter must be 'isotonic', 'temperature' or 'none'; got {calibration!r}")


def check_delta(value, name="delta", where=None):
    """Validate a racing error level: a real number in (0, 1).

    Parameters
    ----------
    value : object
        The value given.
    name : str, default "delta"
        Parameter name, for the message.
    where : str or None
        Function or command named in the message (``"coref.run"``, ``"GibbsCoref"``).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        ``the <name> parameter [of <where>] must be in (0, 1); got <value> [instead]``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 < float(value) < 1.0:
        if where is None:
            raise ValueError(f"the {name} parameter must be in (0, 1); got {value!r}")
        raise ValueError(f"the {name} parameter of {where} must be in (0, 1); got {value!r} instead")
    return float(value)


def check_nonnegative(value, name):
    """Validate a finite real number >= 0 (a budget: MiB, seconds; 0 = off); return it as float.

    Raises
    ------
    ValueError
        ``<name> must be a finite number >= 0; got <value>`` (also for a bool).
    """
    if isinstance(value, bool) or not (isinstance(value, numbers.Real) and math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a finite number >= 0; got {value!r}")
    return float(value)


def check_memory_mb(value, name="factor_cache_mb"):
    """Validate a memory budget in MiB: a finite real number >= 0 (0 = off); see :func:`check_nonnegative`."""
    return check_nonnegative(value, name)


def check_positive(value, name):
    """Validate a finite real number > 0 (a temperature); return it as float.

    Raises
    ------
    ValueError
        ``<name> must be a finite number > 0; got <value>``.
    """
    if not (isinstance(value, numbers.Real) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return float(value)


@dataclass(frozen=True)
class CorefSettings:
    """Validated settings of one coref command (build with :func:`make_settings`).

    Attributes
    ----------
    command : str
        ``"run"``, ``"fit"``, ``"predict"`` or ``"add"`` (named in error messages).
    samplers : tuple of str
        Gibbs samplers to run, a subset of :data:`SAMPLERS`.
    seed : int
        Run seed; block ``b`` is sampled with ``coref.gibbs.block_rng(seed, b)``.
    delta : float
        Racing error level in (0, 1).
    n_sweeps : int or None
        Gibbs sweeps per block; ``None`` = the ``GibbsCoref`` default.
    folds : int or None
        Grouped k-fold (``coref run`` only).
    workers : int or None
        Dask ``LocalCluster`` size.
    scheduler : str or None
        Address of a running Dask scheduler.
    format : str or None
        Input format (``None``: detected by the loader).
    strict : bool
        Make the loader fail on the first bad record or file.
    revisit : bool
        ``coref add``: let Gibbs move the old mentions of the blocks that got new ones.
    gibbs_params : tuple of (str, value)
        Further ``GibbsCoref`` hyperparameters, sorted by name.
    """

    command: str = "predict"
    samplers: tuple = ("racing",)
    seed: int = 0
    delta: float = 0.05
    n_sweeps: int | None = None
    folds: int | None = None
    workers: int | None = None
    scheduler: str | None = None
    format: str | None = None
    strict: bool = False
    revisit: bool = False
    gibbs_params: tuple = field(default=())

    def to_dict(self):
        """Plain JSON-able dict of every field."""
        d = asdict(self)
        d["samplers"] = list(self.samplers)
        d["gibbs_params"] = {k: v for k, v in self.gibbs_params}
        return d

    def key(self, *extra):
        """First 16 hex digits of the SHA-256 of the result-affecting fields and ``extra``.

        Workers / scheduler / strict do not change results (same seed, same clusters on
        any executor) and are left out.
        """
        d = self.to_dict()
        for k in ("workers", "scheduler", "strict", "command"):
            d.pop(k)
        blob = json.dumps([d, list(extra)], sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def gibbs_kwargs(self, sampler):
        """Keyword arguments of ``GibbsCoref`` for ``sampler`` (rng and history excluded)."""
        kw = dict(self.gibbs_params)
        kw.update(sampler=sampler, delta=self.delta)
        if self.n_sweeps is not None:
            # sweeps asked for: every block runs them, the big ones too
            kw["n_sweeps"] = self.n_sweeps
            kw["big_block_sweeps"] = None
        return kw


def _int(name, value, command, *, minimum, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        what = f"None or an int >= {minimum}" if allow_none else f"an int >= {minimum}"
        if minimum == 0 and not allow_none:
            what = "a non-negative int"
        raise ValueError(f"the {name} parameter of coref.{command} must be {what}; got {value!r} instead")
    return int(value)


def make_settings(command="predict", *, sampler="racing", seed=0, delta=0.05, n_sweeps=None, folds=None,
                  workers=None, scheduler=None, format=None, strict=False, revisit=False,
                  gibbs_params=None):
    """Validate a command's parameters once into a :class:`CorefSettings`.

    Parameters
    ----------
    command : str
        Command name used in error messages (``coref.<command>``).
    sampler : {"racing", "exact", "auto", "both"}
        ``"both"`` = racing and exact.
    seed : int >= 0
    delta : float in (0, 1)
    n_sweeps : int >= 1 or None
    folds : int >= 2 or None
    workers : int >= 1 or None
    scheduler : str or None
    format : str or None
        One of ``coref.io.FORMATS``.
    strict, revisit : bool
    gibbs_params : dict or None
        Further ``GibbsCoref`` hyperparameters (JSON-able values).

    Returns
    -------
    CorefSettings

    Raises
    ------
    ValueError
        Naming the parameter, what was expected and what was received.
    """
    from coref.io import FORMATS

    if sampler == "both":
        samplers = SAMPLERS
    elif sampler in ALL_SAMPLERS:
        samplers = (sampler,)
    else:
        names = ", ".join(repr(x) for x in ALL_SAMPLERS)
        raise ValueError(f"the sampler parameter of coref.{command} must be {names} or 'both'; "
                         f"got {sampler!r} instead")
    seed = _int("seed", seed, command, minimum=0)
    delta = check_delta(delta, where=f"coref.{command}")
    n_sweeps = _int("n_sweeps", n_sweeps, command, minimum=1, allow_none=True)
    folds = _int("folds", folds, command, minimum=2, allow_none=command != "run")
    workers = _int("workers", workers, command, minimum=1, allow_none=True)
    if workers is not None and scheduler is not None:
        raise ValueError("give either workers (start a local Dask cluster) or scheduler (connect to one), not both")
    if scheduler is not None and not isinstance(scheduler, str):
        raise ValueError(f"the scheduler parameter of coref.{command} must be an address string; "
                         f"got {scheduler!r} instead")
    if format is not None and format not in FORMATS:
        raise ValueError(f"the format parameter of coref.{command} must be None or one of {FORMATS}; "
                         f"got {format!r} instead")
    gp = dict(gibbs_params or {})
    for k in ("sampler", "delta", "n_sweeps", "rng", "record_history"):
        if k in gp:
            raise ValueError(f"gibbs_params of coref.{command} may not set {k!r}; use the {k} parameter")
    return CorefSettings(command=command, samplers=tuple(samplers), seed=seed, delta=float(delta),
                         n_sweeps=n_sweeps, folds=folds, workers=workers, scheduler=scheduler, format=format,
                         strict=bool(strict), revisit=bool(revisit), gibbs_params=tuple(sorted(gp.items())))


#: The hyperparameters of :class:`coref.gibbs.GibbsCoref` that :class:`GibbsSettings` holds
#: (``model``, ``rng`` and ``record_history`` are not settings of the sampler).
GIBBS_PARAMS = ("sampler", "delta", "n_sweeps", "big_block_sweeps", "t_start", "t_end", "first_batch", "init",
                "buffer_size", "n_samples", "patience", "early_stop_temp", "small_arm_bound",
                "merge_moves", "merge_exact_max", "merge_max_temp", "factor_cache_mb", "split_moves",
                "split_max_size")


@dataclass(frozen=True)
class GibbsSettings:
    """Validated hyperparameters of one :class:`coref.gibbs.GibbsCoref` fit (see there).

    Built by :func:`make_gibbs_settings`; the Gibbs stages (block runs, merge moves,
    marginals) take it whole and never re-check.  ``patience`` is an int (0 = off) and
    ``small_arm_bound`` a bool; every other field has the type documented in
    ``GibbsCoref``.
    """

    sampler: str = "racing"
    delta: float = 0.05
    n_sweeps: int = 30
    big_block_sweeps: int | None = BIG_BLOCK_SWEEPS
    t_start: float = 1.0
    t_end: float = 0.05
    first_batch: int = 3
    init: str = "auto"
    n_samples: int = 0
    patience: int = 3
    early_stop_temp: float = 0.2
    small_arm_bound: bool = True
    merge_moves: int = 0
    merge_exact_max: int = 64
    merge_max_temp: float = 0.2
    factor_cache_mb: float = 0.0
    split_moves: int = 0
    split_max_size: int = 1000


def _check_int(name, value):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int; got {type(value).__name__}")
    return int(value)


def make_gibbs_settings(*, sampler="racing", delta=0.05, n_sweeps=30, big_block_sweeps=BIG_BLOCK_SWEEPS,
                        t_start=1.0, t_end=0.05,
                        first_batch=3, init="auto", buffer_size=None, n_samples=0, patience=3,
                        early_stop_temp=0.2, small_arm_bound=True, merge_moves=0, merge_exact_max=64,
                        merge_max_temp=0.2, factor_cache_mb=0.0, split_moves=0, split_max_size=1000):
    """Validate the ``GibbsCoref`` hyperparameters once into a :class:`GibbsSettings`.

    Parameters are those of :class:`coref.gibbs.GibbsCoref` (same defaults).

    Returns
    -------
    GibbsSettings

    Raises
    ------
    TypeError
        If a count (``n_sweeps``, ``first_batch``, ``n_samples``, ``merge_moves``,
        ``merge_exact_max``, ``split_moves``, ``split_max_size``) is not an int.
    ValueError
        If a value is out of range (the message names the parameter), or ``split_moves``
        is positive while ``merge_moves`` is 0.

    Warns
    -----
    DeprecationWarning
        If ``buffer_size`` is given (ignored).
    """
    if sampler not in ALL_SAMPLERS:
        raise ValueError(f"sampler must be one of {ALL_SAMPLERS}; got {sampler!r}")
    if init not in INITS:
        raise ValueError(f"init must be one of {INITS}; got {init!r}")
    delta = check_delta(delta, where="GibbsCoref")
    if buffer_size is not None:
        warnings.warn("GibbsCoref(buffer_size=...) is ignored (random numbers are drawn in "
                      "the kernel) and will be removed", DeprecationWarning, stacklevel=4)
    counts = {name: _check_int(name, v) for name, v in (
        ("n_sweeps", n_sweeps), ("first_batch", first_batch), ("n_samples", n_samples),
        ("merge_moves", merge_moves), ("merge_exact_max", merge_exact_max),
        ("split_moves", split_moves), ("split_max_size", split_max_size))}
    if n_sweeps < 1:
        raise ValueError(f"n_sweeps must be >= 1; got {n_sweeps}")
    if big_block_sweeps is not None:
        big_block_sweeps = _check_int("big_block_sweeps", big_block_sweeps)
        if big_block_sweeps < 1:
            raise ValueError(f"big_block_sweeps must be None or >= 1; got {big_block_sweeps}")
    if patience is not None and (not isinstance(patience, numbers.Integral) or isinstance(patience, bool)
                                 or patience < 0):
        raise ValueError(f"patience must be None or an int >= 0; got {patience!r}")
    merge_max_temp = check_positive(merge_max_temp, "merge_max_temp")
    factor_cache_mb = check_memory_mb(factor_cache_mb, "factor_cache_mb")
    early_stop_temp = check_positive(early_stop_temp, "early_stop_temp")
    if merge_moves < 0 or merge_exact_max < 0:
        raise ValueError("merge_moves and merge_exact_max must be >= 0; got "
                         f"{merge_moves} and {merge_exact_max}")
    if split_moves < 0 or split_max_size < 2:
        raise ValueError("split_moves must be >= 0 and split_max_size >= 2; got "
                         f"{split_moves} and {split_max_size}")
    if split_moves > 0 and merge_moves == 0:
        raise ValueError("split_moves > 0 needs merge_moves >= 1: the split-merge proposals run "
                         "after the merge proposals of each sweep")
    if n_samples < 0:
        raise ValueError(f"n_samples must be >= 0; got {n_samples}")
    if first_batch < 2:
        raise ValueError(f"first_batch must be >= 2; got {first_batch}")
    t_start = check_positive(t_start, "t_start")
    t_end = check_positive(t_end, "t_end")
    return GibbsSettings(sampler=sampler, delta=delta, big_block_sweeps=big_block_sweeps, t_start=t_start,
                         t_end=t_end, init=init,
                         patience=int(patience or 0), early_stop_temp=early_stop_temp,
                         small_arm_bound=bool(small_arm_bound), merge_max_temp=merge_max_temp,
                         factor_cache_mb=factor_cache_mb, **counts)
