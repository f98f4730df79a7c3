"""The mini-bucket partition of a weighted mini-bucket (WMB): which factors and messages
share a mini-bucket, where each message goes, and what the tables cost in memory.

Variables are eliminated along ``elim_order``. The bucket of ``k`` holds the original
factors whose first-eliminated variable is ``k`` and the messages sent to ``k``; it is
split greedily (largest scope first) into mini-buckets of at most ``i_bound + 1``
variables. The message of a mini-bucket goes to the bucket of the first-eliminated
variable of its scope, or, when its scope is empty, to the bucket of the pseudo-tree
root above ``k`` (or, from a root, into the bound). Scopes only: no table is built here.
"""
from __future__ import annotations

import dataclasses
import math

__all__ = ["BYTES_PER_ENTRY", "MiniBuckets", "partition", "common_vars", "memory_mib", "choose_i_bound"]

BYTES_PER_ENTRY = 8


@dataclasses.dataclass(frozen=True)
class MiniBuckets:
    """The mini-buckets of one i-bound, numbered ``c = 0..n-1`` in elimination order.

    Attributes
    ----------
    var : list of int
        The bucket variable ``k`` of each mini-bucket.
    scope : list of tuple of int
        Its scope: ``k`` first, then the other variables, first eliminated first.
    factors : list of list of int
        The ids of the model's factors it holds.
    msgs : list of list of int
        The mini-buckets whose messages it receives.
    recv : list of int
        The variable whose bucket receives its message (-1: the message is a constant
        added to the bound).
    bucket : list of list of int
        Per variable, its mini-buckets.
    const_factors : list of int
        Factors with an empty scope in a model without variables (constants of the bound).
    """

    var: list
    scope: list
    factors: list
    msgs: list
    recv: list
    bucket: list
    const_factors: list

    def __len__(self):
        return len(self.var)


def partition(model, elim_order, pseudo_tree, i_bound):
    """Scope-only mini-bucket partition of ``model`` for ``i_bound``.

    Parameters
    ----------
    model : GraphicalModel
        Squeezed (no cardinality-1 variable in a scope).
    elim_order : ndarray of int64, shape (n_vars,)
    pseudo_tree : PseudoTree
        The pseudo tree of ``elim_order``.
    i_bound : int
        Each mini-bucket spans at most ``i_bound + 1`` variables.

    Returns
    -------
    MiniBuckets
    """
    pos, pt = pseudo_tree.position, pseudo_tree
    n = model.n_vars
    items = [[] for _ in range(n)]  # (kind, id, scope) ; kind 0 = factor, 1 = message
    const_factors = []
    last = int(elim_order[-1]) if n else -1
    for a, f in enumerate(model.factors):
        if not f.scope:
            if n:
                items[last].append((0, a, ()))
            else:
                const_factors.append(a)
            continue
        first = min(f.scope, key=lambda u: pos[u])
        items[first].append((0, a, tuple(f.scope)))
    mb_var, mb_scope, mb_factors, mb_msgs, mb_recv = [], [], [], [], []
    bucket_mbs = [[] for _ in range(n)]
    for k in elim_order.tolist():
        groups = _group(k, items[k], i_bound)
        for g in groups:
            c = len(mb_var)
            others = sorted((u for u in g[0] if u != k), key=lambda u: pos[u])
            scope = (k,) + tuple(others)
            mb_var.append(k)
            mb_scope.append(scope)
            mb_factors.append(g[1])
            mb_msgs.append(g[2])
            bucket_mbs[k].append(c)
            if others:
                r = others[0]
            elif pt.parent[k] >= 0:
                r = pt.root_of(k)
            else:
                r = -1
            mb_recv.append(r)
            if r >= 0:
                items[r].append((1, c, scope[1:]))
    return MiniBuckets(var=mb_var, scope=mb_scope, factors=mb_factors, msgs=mb_msgs, recv=mb_recv,
                       bucket=bucket_mbs, const_factors=const_factors)


def _group(k, items, i_bound):
    """Greedy first-fit of the bucket items of ``k`` (largest scope first) into groups
    ``[set(vars), factor ids, message ids]`` of at most ``i_bound + 1`` variables."""
    groups = []
    for kind, idx, sc in sorted(items, key=lambda t: (-len(t[2]), t[0], t[1])):
        s = set(sc)
        s.add(k)
        placed = False
        for g in groups:
            u = g[0] | s
            if len(u) <= i_bound + 1:
                g[0] = u
                (g[1] if kind == 0 else g[2]).append(idx)
                placed = True
                break
        if not placed:
            groups.append([s, [idx] if kind == 0 else [], [idx] if kind == 1 else []])
    if not groups:
        groups.append([{k}, [], []])
    return groups


def common_vars(st, mbs, k):
    """Variables shared by all mini-buckets ``mbs`` of bucket ``k`` (just ``k`` for a single one)."""
    if len(mbs) <= 1:
        return {k}
    return set.intersection(*[set(st.scope[c]) for c in mbs])


def memory_mib(cards, st):
    """Estimated peak MiB of the WMB tables of partition ``st`` (a Python float).

    All mini-bucket tables, three times all messages (the messages, the backward
    information and the heuristic lookups share them), two copies of the cost-shifting
    tables and two copies of the largest mini-bucket table (work space), times 8 bytes.
    """
    tab = [math.prod(int(cards[u]) for u in sc) for sc in st.scope]
    msg = [t // int(cards[k]) for t, k in zip(tab, st.var)]
    shift = 0
    for k, mbs in enumerate(st.bucket):
        if len(mbs) > 1:
            shift += len(mbs) * math.prod(int(cards[u]) for u in common_vars(st, mbs, k))
    return BYTES_PER_ENTRY * (sum(tab) + 3 * sum(msg) + 2 * shift + 2 * max(tab, default=0)) / 2**20


def choose_i_bound(model, elim_order, pseudo_tree, memory_mb):
    """The largest i-bound whose tables fit ``memory_mb`` (capped at the induced width).

    Returns
    -------
    (int, MiniBuckets)
        The i-bound and its partition.

    Raises
    ------
    MemoryError
        If even the smallest useful i-bound (largest factor scope minus one) does not fit.
    """
    w = pseudo_tree.induced_width
    lo = max((len(f.scope) - 1 for f in model.factors), default=0)
    lo = max(0, min(lo, w))
    cache = {}

    def mem(i):
        if i not in cache:
            st = partition(model, elim_order, pseudo_tree, i)
            cache[i] = (memory_mib(model.cards, st), st)
        return cache[i]

    if mem(w)[0] <= memory_mb:
        return w, mem(w)[1]
    if mem(lo)[0] > memory_mb:
        raise MemoryError(
            f"weighted mini-bucket needs {mem(lo)[0]:.1f} MiB even at the smallest i-bound {lo}; "
            f"the budget is memory_mb={memory_mb:g}"
        )
    a, b = lo, w  # mem(a) fits, mem(b) does not
    while b - a > 1:
        mid = (a + b) // 2
        if mem(mid)[0] <= memory_mb:
            a = mid
        else:
            b = mid
    return a, mem(a)[1]
