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
import numbers
from dataclasses import asdict, dataclass, field

__all__ = ["SAMPLERS", "ALL_SAMPLERS", "CorefSettings", "make_settings"]

#: Gibbs conditional samplers of :class:`coref.gibbs.GibbsCoref` (racing first).
SAMPLERS = ("racing", "exact")
#: Every sampler a command accepts: :data:`SAMPLERS` (what ``"both"`` runs) and ``"auto"``
#: (per block, exact Gibbs from the cached factor matrix when it fits, racing otherwise;
#: see :class:`coref.gibbs.GibbsCoref`).
ALL_SAMPLERS = SAMPLERS + ("auto",)


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
            kw["n_sweeps"] = self.n_sweeps
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
        raise ValueError(f"the sampler parameter of coref.{command} must be 'racing', 'exact', 'auto' or "
                         f"'both'; got {sampler!r} instead")
    seed = _int("seed", seed, command, minimum=0)
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not 0.0 < float(delta) < 1.0:
        raise ValueError(f"the delta parameter of coref.{command} must be in (0, 1); got {delta!r} instead")
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
