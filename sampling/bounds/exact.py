"""Exact log partition function by bucket (variable) elimination in log space."""
from __future__ import annotations

import numpy as np

from ._tables import broadcast_sum, logsumexp0
from .ordering import check_order, eliminate, total_log_size, min_fill_order, min_size_order, weighted_min_fill_order

__all__ = ["log_partition"]


def check_memory(memory_mb):
    """``memory_mb`` as a float; ValueError unless it is a positive number (MiB)."""
    if isinstance(memory_mb, bool) or not isinstance(memory_mb, (int, float)) or not memory_mb > 0:
        raise ValueError(f"the memory_mb parameter must be a positive number; got {memory_mb!r} instead")
    return float(memory_mb)


def default_order(model):
    """The best of the min-fill, weighted min-fill and min-size orders.

    "Best" is the smallest total size of the exact bucket tables (sum over
    buckets of the product of their cardinalities); ties keep the earlier of
    min-fill, weighted min-fill, min-size.
    """
    sq = model.squeeze()
    best, best_cost = None, None
    for fn in (min_fill_order, weighted_min_fill_order, min_size_order):
        o = fn(sq)
        cost = total_log_size(sq, o)
        if best is None or cost < best_cost - 1e-12:
            best, best_cost = o, cost
    return best


def log_partition(model, *, elim_order=None, memory_mb=2048):
    """Exact ln Z = ln sum_x prod_a f_a(x_a) by bucket elimination.

    Parameters
    ----------
    model : GraphicalModel
    elim_order : array_like of int, shape (n_vars,), optional
        Elimination order (first eliminated first). Default: the better of
        :func:`min_fill_order` and :func:`min_size_order` by largest table.
    memory_mb : float, default 2048
        Budget in MiB (8 bytes per entry) for all the tables the elimination holds at
        once (:func:`elimination_peak_entries`; the model's own tables not counted).

    Returns
    -------
    float
        Natural log of the partition function; ``-inf`` if Z = 0.

    Raises
    ------
    MemoryError
        If the tables alive at once would exceed ``memory_mb``; the message gives the
        size, the variable being eliminated and the budget. Raised before any large
        allocation.
    ValueError
        If ``elim_order`` is not a permutation or ``memory_mb`` is not positive.

    Notes
    -----
    Each bucket sums its factors (log-domain product) over the bucket scope and
    eliminates its variable with a ``-inf``-safe logsumexp; the message goes to
    the bucket of its first-eliminated variable. Variables of cardinality 1 are
    removed from every scope first (:meth:`GraphicalModel.squeeze`).

    Examples
    --------
    >>> import numpy as np
    >>> from sampling.bounds import Factor, GraphicalModel, log_partition
    >>> m = GraphicalModel([2, 2], [Factor.from_values((0, 1), [[1.0, 2.0], [3.0, 4.0]])])
    >>> round(float(np.exp(log_partition(m))), 12)
    10.0
    """
    budget = check_memory(memory_mb)
    model = model.squeeze()
    order = default_order(model) if elim_order is None else check_order(model, elim_order)
    _, later, pos = eliminate(model, order)
    n = model.n_vars
    cards = model.cards
    # memory check first, before any large allocation
    peak, at = elimination_peak_entries(model, order, later)
    mb = peak * 8 / 2**20
    if mb > budget:
        raise MemoryError(
            f"exact elimination needs {peak} table entries ({mb:.1f} MiB) alive at once when it "
            f"eliminates variable {at} (bucket of {len(later[at]) + 1} variables), over the budget "
            f"memory_mb={budget:g}"
        )
    buckets = [[] for _ in range(n)]
    const = 0.0
    for f in model.factors:
        if not f.scope:
            const += float(f.log_values)
            continue
        first = min(f.scope, key=lambda u: pos[u])
        buckets[first].append((f.scope, f.log_values))
    for v in order.tolist():
        items = buckets[v]
        buckets[v] = None
        scope = (v,) + tuple(later[v])
        shape = tuple(int(cards[u]) for u in scope)
        table = broadcast_sum(scope, shape, items)
        del items  # the messages it consumed are freed before the next allocation
        msg = logsumexp0(table)
        del table
        if len(scope) == 1:
            const += float(msg)
        else:
            buckets[scope[1]].append((scope[1:], msg))
    return float(const)


def elimination_peak_entries(model, order, later=None):
    """Most float64 entries :func:`log_partition` holds at once, and the variable where.

    Counts every table the elimination allocates: the messages waiting in later buckets,
    the bucket table (its own messages are still alive while it is summed), and the
    message plus one work row of the same size that ``logsumexp0`` allocates. The model's
    own factor tables are not counted.

    Parameters
    ----------
    model : GraphicalModel
        Squeezed (no cardinality-1 variable in a scope).
    order : ndarray of int, shape (n_vars,)
    later : list, optional
        Per variable, the later-eliminated variables of its bucket (from ``eliminate``).

    Returns
    -------
    (int, int)
        Peak entries (Python int: no overflow) and the variable eliminated at the peak
        (-1 for a model without variables).
    """
    if later is None:
        _, later, _ = eliminate(model, order)
    cards = [int(c) for c in model.cards]
    pending = [0] * len(cards)  # entries of the messages waiting in each bucket
    alive, peak, at = 0, 0, -1
    for v in [int(u) for u in order]:
        table = cards[v]
        for u in later[v]:
            table *= cards[int(u)]
        msg = table // cards[v]
        need = max(alive + table, alive - pending[v] + table + 2 * msg)
        if need > peak:
            peak, at = need, v
        alive -= pending[v]
        pending[v] = 0
        if later[v]:
            first = int(later[v][0])
            pending[first] += msg
            alive += msg
    return peak, at


def log_partition_enumerate(model, *, max_states=2**22):
    """ln Z by enumerating every assignment (a test oracle for tiny models).

    Raises
    ------
    ValueError
        If the model has more than ``max_states`` joint states.
    """
    import itertools

    n_states = int(np.prod(model.cards.astype(np.float64)))
    if n_states > max_states:
        raise ValueError(f"the model has {n_states} joint states; enumeration is limited to max_states={max_states}")
    X = np.array(list(itertools.product(*[range(int(c)) for c in model.cards])), dtype=np.int64)
    X = X.reshape(n_states, model.n_vars)
    lv = model.log_value(X)
    m = lv.max(initial=-np.inf)
    if not np.isfinite(m):
        return -np.inf
    return float(m + np.log(np.exp(lv - m).sum()))
