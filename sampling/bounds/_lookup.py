"""What a fitted weighted mini-bucket (WMB) answers: arc weights, the search heuristic and
the WMB-IS mixture proposal, as per-variable lookup tables (Lou, Dechter & Ihler 2017,
Sec. 2.1, Eq. 6-7).

The AND/OR search and the compiled proposal sampler read :class:`LookupTables`; the
functions here evaluate them at rows of assignments and draw from the proposal.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ._tables import cond_inplace, lse_axes, strides

__all__ = ["Lookup", "LookupTables", "lookup_arrays", "build_lookup_tables", "sample_order", "draw_proposal", "log_q_rows"]


class Lookup:
    """A log table over ``vars`` read at assignments, with the axis of one variable kept.

    Attributes
    ----------
    vars : ndarray of int64, shape (m,)
        The table's variables other than the kept one.
    strides : ndarray of int64, shape (m,)
        C-order strides (in entries) of those variables in ``flat``.
    flat : ndarray of float64
        The log table, flattened in C order.
    kstride : int
        Stride of the kept variable (0 when the table does not depend on it).
    has_k : bool
        Whether the table depends on the kept variable.
    """

    __slots__ = ("vars", "strides", "flat", "kstride", "has_k")

    def __init__(self, scope, table, k):
        st = strides(table.shape)
        self.flat = np.ascontiguousarray(table).reshape(-1)
        if k in scope:
            i = scope.index(k)
            self.has_k = True
            self.kstride = int(st[i])
            keep = [j for j in range(len(scope)) if j != i]
        else:
            self.has_k = False
            self.kstride = 0
            keep = list(range(len(scope)))
        self.vars = np.array([scope[j] for j in keep], dtype=np.int64)
        self.strides = st[keep].astype(np.int64)

    def rows(self, x, card):
        """(m, card) values at rows of ``x`` (m, n_vars) with the kept variable at 0..card-1."""
        base = x[:, self.vars] @ self.strides if self.vars.size else np.zeros(x.shape[0], dtype=np.int64)
        if self.has_k:
            return self.flat[base[:, None] + self.kstride * np.arange(card)[None, :]]
        return self.flat[base][:, None]


@dataclasses.dataclass(frozen=True)
class LookupTables:
    """The per-variable tables of a fitted WMB that the search and the proposal read.

    Attributes
    ----------
    arc : list of list of Lookup, one list per variable
        Original factors of each variable's bucket (their sum is the arc weight ln w).
    heuristic : list of list of Lookup
        Messages whose sum is the WMB heuristic ln h+ of each variable's AND nodes (Eq. 6).
    proposal : list of list of (float, Lookup)
        Per variable, the mixture components of the WMB-IS proposal (Eq. 7): the log
        weight ln rho_kj and the conditional belief ln b_kj(x_k | ancestors).
    """

    arc: list
    heuristic: list
    proposal: list

    def sum_rows(self, kind, var, x, card):
        """(m, card) sum of the ``kind`` ("arc" or "heuristic") tables of ``var`` at rows ``x``."""
        out = np.zeros((x.shape[0], card))
        for t in getattr(self, kind)[var]:
            out += t.rows(x, card)
        return out

    def log_proposal_rows(self, var, x, card):
        """(m, card) normalised ``log q(var = . | ancestors)`` at rows ``x`` (Eq. 7)."""
        props = self.proposal[var]
        if len(props) == 1:
            out = props[0][1].rows(x, card)
        else:
            parts = np.stack([lw + t.rows(x, card) for lw, t in props])
            out = lse_axes(parts, (0,))
        z = out.max(axis=1, keepdims=True)
        z = z + np.log(np.exp(out - z).sum(axis=1, keepdims=True))
        return out - z


def lookup_arrays(cards, per_var):
    """CSR arrays of per-variable lookup lists (``vars``, ``strides``, ``kstride``, ``flat``)."""
    ptr, kstride, vptr, vars_, strides, tables = [0], [], [0], [], [], []
    for k in range(len(cards)):
        for look in per_var[k]:
            kstride.append(int(look.kstride) if look.has_k else 0)
            vars_.extend(int(u) for u in look.vars)
            strides.extend(int(u) for u in look.strides)
            vptr.append(len(vars_))
            tables.append(np.ascontiguousarray(look.flat, dtype=np.float64))
        ptr.append(len(kstride))
    i64 = lambda x: np.ascontiguousarray(np.asarray(x, dtype=np.int64))  # noqa: E731
    return (np.ascontiguousarray(cards, dtype=np.int64), i64(ptr), i64(kstride), i64(vptr),
            i64(vars_), i64(strides), tables)


def build_lookup_tables(model, st, pseudo_tree, passes):
    """:class:`LookupTables` of a fitted WMB; frees the ``F`` tables of ``passes``.

    Parameters
    ----------
    model : GraphicalModel
    st : MiniBuckets
    pseudo_tree : PseudoTree
    passes : MessagePasses
        After its last forward pass (``F`` and ``lam`` set); each ``F_c`` becomes the
        conditional belief ``log b_c`` in place.
    """
    n = model.n_vars
    arc = [[] for _ in range(n)]
    for c, k in enumerate(st.var):
        for a in st.factors[c]:
            f = model.factors[a]
            arc[k].append(Lookup(f.scope, f.log_values, k))
    heur = [[] for _ in range(n)]
    for c, k in enumerate(st.var):
        r = st.recv[c]
        if r < 0:
            continue
        msg_scope = st.scope[c][1:]
        v = int(pseudo_tree.parent[k])
        while v >= 0:
            heur[v].append(Lookup(msg_scope, passes.lam[c], v))
            if v == r:
                break
            v = int(pseudo_tree.parent[v])
    prop = [[] for _ in range(n)]
    for c, k in enumerate(st.var):
        cond = cond_inplace(passes.F[c], passes.lam[c], passes.weight[c])
        prop[k].append((math.log(passes.weight[c]), Lookup(st.scope[c], cond, k)))
        passes.F[c] = None
    passes.F = None
    return LookupTables(arc, heur, prop)


def sample_order(pseudo_tree, n_vars, start_vars):
    """The variables to sample, in search order: all, or ``start_vars`` and their descendants."""
    pt = pseudo_tree
    if start_vars is None:
        return pt.search_order.tolist()
    vs = set()
    for s in np.atleast_1d(np.asarray(start_vars, dtype=np.int64)).tolist():
        if not 0 <= s < n_vars:
            raise ValueError(f"start_vars holds {s}, not a variable id")
        vs.update(pt.subtree(s))
    return sorted(vs, key=lambda u: -pt.position[u])


def draw_proposal(tables, cards, order, X, gen):
    """Sample the variables of ``order`` into ``X`` (n, n_vars) in place; returns ``log q`` (n,)."""
    n = X.shape[0]
    log_q = np.zeros(n)
    rows = np.arange(n)
    for k in order:
        if cards[k] == 1:
            X[:, k] = 0
            continue
        lq = tables.log_proposal_rows(k, X, int(cards[k]))
        cum = np.cumsum(np.exp(lq), axis=1)
        u = gen.random(n) * cum[:, -1]
        xk = np.minimum((cum < u[:, None]).sum(axis=1), cards[k] - 1)
        X[:, k] = xk
        log_q += lq[rows, xk]
    return log_q


def log_q_rows(tables, cards, order, X):
    """``log q`` (n,) of the values of the variables of ``order`` in ``X`` (n, n_vars)."""
    out = np.zeros(X.shape[0])
    rows = np.arange(X.shape[0])
    for k in order:
        if cards[k] == 1:
            continue
        out += tables.log_proposal_rows(k, X, int(cards[k]))[rows, X[:, k]]
    return out
