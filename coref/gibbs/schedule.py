"""The annealing schedule of the Gibbs sweeps, the racing bounds, and the early-stop rule.

Temperatures fall geometrically from ``t_start`` to ``t_end`` over the sweeps (annealing
for MAP, Finkel et al. 2005).  The Racing-Normal test of Chen & Ghahramani (2016,
Appx. C.3, Eq. 27) reads its bound ``B[D, t*]`` from :func:`bound_table`.  Early stop:
a block stops after ``patience`` consecutive sweeps without a move among the sweeps at
or below ``early_stop_temp`` (:class:`EarlyStop`; the compiled kernel applies the same
rule inside one call).
"""
from __future__ import annotations

import functools
from statistics import NormalDist

import numpy as np

__all__ = ["temperature_schedule", "bound_table", "bound_table_ro", "stop_mask", "EarlyStop", "NDTRI_MIN"]


def temperature_schedule(n_sweeps: int, t_start: float, t_end: float) -> np.ndarray:
    """Geometric temperatures of sweeps 1..n_sweeps, from t_start to t_end."""
    if n_sweeps == 1:
        return np.array([float(t_end)])
    return t_start * (t_end / t_start) ** (np.arange(n_sweeps) / (n_sweeps - 1.0))


#: From this many entries :func:`bound_table` takes scipy's ``ndtri`` (vectorised) instead of
#: the standard library's quantile, one call per distinct entry: the table of a 100,000-mention
#: block (8.4 million entries, 3.3 million distinct) fell from 2.2 s to 0.6 s; below, the
#: import (~0.3 s) would cost more than it saves.
NDTRI_MIN = 200_000


def bound_table(delta: float, n_arms_max: int, n_rounds_max: int = 64) -> np.ndarray:
    """Racing bounds ``B[D, t*] = Phi^-1(1 - delta / ((D - 1)(t* - 1)))`` (Eq. 27).

    Returns
    -------
    ndarray of shape (n_arms_max + 1, n_rounds_max)
        ``inf`` where D < 2 or t* < 2 (no test needed there).
    """
    # the standard library's normal quantile (Wichura's AS241, |error| ~1e-15 against scipy's
    # ndtri): importing scipy.special costs ~0.3 s per process, which `coref add` would pay;
    # from NDTRI_MIN entries (the table of a block of 2,048 mentions and more) scipy's is the cheaper
    inv_cdf = NormalDist().inv_cdf
    D = np.arange(n_arms_max + 1, dtype=float)[:, None]
    t = np.arange(n_rounds_max, dtype=float)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        q = delta / ((D - 1.0) * (t - 1.0))
    B = np.full(q.shape, np.inf)
    ok = (q > 0.0) & (q < 1.0)
    if ok.sum() >= NDTRI_MIN:
        from scipy.special import ndtri

        B[ok] = ndtri(1.0 - q[ok])
    else:
        # q depends on (D - 1)(t* - 1) only: one quantile per distinct product
        uq, inverse = np.unique(q[ok], return_inverse=True)
        B[ok] = np.array([inv_cdf(1.0 - x) for x in uq.tolist()], dtype=float)[inverse.ravel()]
    B[(D < 2).ravel(), :] = np.inf
    B[:, (t < 2).ravel()] = np.inf
    return np.ascontiguousarray(B)


@functools.lru_cache(maxsize=32)
def _bound_table_pow2(delta: float, size: int) -> np.ndarray:
    B = bound_table(delta, size)
    B.flags.writeable = False
    return B


def bound_table_ro(delta: float, n_arms_max: int) -> np.ndarray:
    """:func:`bound_table` rows ``0 .. n_arms_max``, read-only.

    Row D does not depend on ``n_arms_max``, so one table per delta and power of two (at least
    64) serves every block: a C-contiguous row slice of it.
    """
    size = max(64, 1 << int(max(n_arms_max, 1) - 1).bit_length())
    return _bound_table_pow2(delta, size)[: n_arms_max + 1]


def stop_mask(temps, early_stop_temp: float) -> np.ndarray:
    """int8 per sweep: 1 where the sweep counts towards ``patience`` (temperature <= early_stop_temp)."""
    return (np.asarray(temps) <= float(early_stop_temp)).astype(np.int8)


class EarlyStop:
    """The early-stop rule, one sweep at a time.

    Parameters
    ----------
    patience : int >= 0
        Stop after this many consecutive counting sweeps without a move (0 = never).
    """

    def __init__(self, patience: int):
        self.patience = int(patience)
        self.still = 0

    def update(self, counts: bool, moved: bool) -> bool:
        """Record a sweep (``counts``: its stop-mask entry); True when the block should stop.

        A counting sweep without a move adds one, a counting sweep with a move resets the
        count; a sweep that does not count leaves it alone.
        """
        if self.patience <= 0 or not counts:
            return False
        self.still = 0 if moved else self.still + 1
        return self.still >= self.patience
