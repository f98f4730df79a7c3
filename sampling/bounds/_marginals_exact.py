"""Exact single-variable marginals by two-pass bucket-tree propagation (log space).

The forward pass is the bucket elimination of :func:`sampling.bounds.log_partition`; it keeps
every message. The backward pass sends each bucket's belief, without the message of a child,
down to that child's separator. The belief of the bucket of variable v, summed over the other
variables, is Z * P(X_v = x). Used by :mod:`sampling.bounds.marginal_bounds`.
"""
from __future__ import annotations

import math

import numpy as np

from ._tables import broadcast_sum, lse_axes
from .exact import default_order
from .ordering import eliminate

__all__ = ["exact_marginal_entries", "exact_log_marginals"]


def exact_marginal_entries(model, order):
    """Float64 entries the two-pass propagation holds at most (Python int).

    All forward messages stay alive, all backward messages (one per separator, the
    same sizes) too, plus two bucket tables (a belief and its copy without one child).
    """
    _, later, _ = eliminate(model, order)
    cards = [int(c) for c in model.cards]
    msgs, biggest = 0, 0
    for v in range(len(cards)):
        sep = math.prod(cards[int(u)] for u in later[v])
        msgs += sep
        biggest = max(biggest, sep * cards[v])
    return 2 * msgs + 2 * biggest


def _marg(table, scope, keep):
    """``table`` over ``scope`` summed (log-sum-exp) onto ``keep`` (in the order of ``keep``)."""
    axes = tuple(i for i, v in enumerate(scope) if v not in keep)
    out = lse_axes(table, axes)
    left = [v for v in scope if v in keep]
    perm = [left.index(v) for v in keep]
    return np.ascontiguousarray(np.transpose(out, perm)) if perm != list(range(len(perm))) else out


def exact_log_marginals(model, *, memory_mb):
    """ln Z and, per variable, ln Z_{v,x} = ln Z + ln P(X_v = x).

    Parameters
    ----------
    model : GraphicalModel
    memory_mb : float
        Budget (MiB, 8 bytes per entry) for :func:`exact_marginal_entries`.

    Returns
    -------
    (float, list of ndarray)
        ln Z and one array of length ``cards[v]`` per variable (``-inf`` where the
        value has probability 0; all ``-inf`` when Z = 0).

    Raises
    ------
    MemoryError
        Before any large allocation, when the tables would exceed ``memory_mb``.
    """
    model = model.squeeze()
    order = default_order(model)
    need = exact_marginal_entries(model, order)
    if need * 8 / 2**20 > memory_mb:
        raise MemoryError(f"exact marginals need {need} table entries ({need * 8 / 2**20:.1f} MiB), "
                          f"over the budget memory_mb={memory_mb:g}")
    _, later, pos = eliminate(model, order)
    n = model.n_vars
    cards = model.cards
    own = [[] for _ in range(n)]
    const = 0.0
    for f in model.factors:
        if not f.scope:
            const += float(f.log_values)
        else:
            own[min(f.scope, key=lambda u: pos[u])].append((f.scope, f.log_values))
    scope = [(v,) + tuple(int(u) for u in later[v]) for v in range(n)]
    kids = [[] for _ in range(n)]
    fwd = [None] * n
    log_z = const
    for v in order.tolist():
        items = own[v] + [(scope[c][1:], fwd[c]) for c in kids[v]]
        table = broadcast_sum(scope[v], tuple(int(cards[u]) for u in scope[v]), items)
        msg = lse_axes(table, (0,))
        if len(scope[v]) == 1:
            log_z += float(msg)
        else:
            fwd[v] = msg
            kids[scope[v][1]].append(v)
    out = [None] * n
    bwd = [None] * n
    for v in reversed(order.tolist()):
        shape = tuple(int(cards[u]) for u in scope[v])
        items = own[v] + ([(scope[v][1:], bwd[v])] if bwd[v] is not None else [])
        base = broadcast_sum(scope[v], shape, items)
        belief = broadcast_sum(scope[v], shape, [(scope[c][1:], fwd[c]) for c in kids[v]], out=base.copy())
        m = lse_axes(belief, tuple(range(1, len(shape)))) if len(shape) > 1 else belief
        z_comp = float(np.logaddexp.reduce(m)) if m.size else -math.inf
        # the belief sums to the ln Z of v's connected component: rescale to the whole Z
        out[v] = m - z_comp + log_z if z_comp > -math.inf and log_z > -math.inf else np.full(m.shape, -math.inf)
        for c in kids[v]:
            others = [(scope[d][1:], fwd[d]) for d in kids[v] if d != c]
            b = broadcast_sum(scope[v], shape, others, out=base.copy()) if others else base
            bwd[c] = _marg(b, scope[v], scope[c][1:])
        bwd[v] = None
        for c in kids[v]:  # each forward message is needed once more, here
            fwd[c] = None
    return float(log_z), [np.asarray(o, dtype=float).reshape(int(cards[v])) for v, o in enumerate(out)]
