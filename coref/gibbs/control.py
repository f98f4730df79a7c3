"""Racing's control variate for first-initial blocks: the inputs of ``coref.gibbs._cv``.

Racing estimates a big arm's sum S_y = sum_{j in C_y} f(i, j) / tau from a subsample, and
its test needs as many draws as the variance of f over the arm demands.  Chen &
Ghahramani (2016, Sec. 3.4) subtract a control variate h whose sum H_y over the arm is
known exactly: the estimate N_y mean(f - h) + H_y is unbiased with the residuals' variance.

In a block keyed by first initial and last name ("w wang": Wei, Wen, Weimin, W. Wang) the
big clusters of the racing regime mix first names, and the one feature
``name_first_conflict`` (weight -8 in the shipped model) then carries most of the
variance of f within an arm.  Measured on the 10,000-mention ``coref synth --one-name``
block (shipped model, 5 largest predicted clusters, 50 mentions i): var f = 8.58, var of
f minus the conflict term 2.05 (4.2x less); minus the year-gap terms too 2.23 (no gain).
So h(i, j) = w [r_i >= 0 and r_j >= 0 and r_i != r_j], with r the rank of the mention's
full first name among the block's ``max_ranks`` most frequent ones (-1 for an initial only
or a rarer name) and w that feature's weight; H_y comes from per-cluster counts of ranks.
"""
from __future__ import annotations

import numpy as np

from coref.factors.names import BASE_FEATURES

__all__ = ["CONFLICT_FEATURE", "conflict_ranks", "conflict_weight"]

#: The feature whose term the control variate subtracts.
CONFLICT_FEATURE = "name_first_conflict"
_K = [name for name, _, _ in BASE_FEATURES].index(CONFLICT_FEATURE)


def conflict_weight(theta) -> float:
    """w: the base weight of :data:`CONFLICT_FEATURE` in ``theta`` (natural-log odds per conflict)."""
    return float(np.asarray(theta, dtype=np.float64)[_K])


def conflict_ranks(enc, max_ranks: int = 64):
    """The rank of each mention's full first name among the block's most frequent ones.

    Parameters
    ----------
    enc : coref.encoding.EncodedBlock
        One block of n mentions (``first_code``: -1 = no full first name).
    max_ranks : int >= 0
        Names ranked (most frequent first, ties to the smaller code); the others get -1.

    Returns
    -------
    ndarray of int32, shape (n,), or None
        Ranks in [0, max_ranks) or -1; None when fewer than two names are ranked (no
        pair can differ: the control variate would be 0).

    Raises
    ------
    ValueError
        If ``max_ranks`` is negative.
    """
    if max_ranks < 0:
        raise ValueError(f"max_ranks must be >= 0; got {max_ranks}")
    code = np.asarray(enc.first_code, dtype=np.int64)[: int(enc.n)]
    named = code[code >= 0]
    if len(named) == 0:
        return None
    values, counts = np.unique(named, return_counts=True)       # values increasing
    top = values[np.lexsort((values, -counts))][:max_ranks]      # most frequent, ties: smaller code
    if len(top) < 2:
        return None
    order = np.argsort(top)
    pos = np.minimum(np.searchsorted(top[order], code), len(top) - 1)
    hit = top[order][pos] == code
    return np.where(hit, order[pos], -1).astype(np.int32)
