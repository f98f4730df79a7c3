"""The WMB mixture proposal (Eq. 7 of [1]_) as one compiled call per draw, and the factor
index it and the samplers evaluate f(x) with.

* :class:`FactorEvaluator`: vectorised log factor values and bucket sums (Sec. 2.1 of [1]_).
* :class:`FastProposal`: the compiled proposal kernel (``_proposal.ProposalKernel``; twin
  ``_proposal_py``) over the WMB's :class:`~sampling.bounds.wmb.LookupTables`.

References
----------
.. [1] Lou, Dechter & Ihler (2017), "Dynamic Importance Sampling for Anytime Bounds of
   the Partition Function", NIPS. Eq. 6-12.
"""
from __future__ import annotations

import warnings

import numpy as np

from ._lookup import lookup_arrays

__all__ = ["FactorEvaluator", "FastProposal", "constant_bucket", "factor_arrays", "make_fast_proposal"]


# --------------------------------------------------------------------------- factors
def _cards(model):
    """Cardinalities of ``model`` (``cards``, or ``card`` for duck-typed models)."""
    c = getattr(model, "cards", None)
    return getattr(model, "card") if c is None else c


def factor_arrays(model):
    """The factors of ``model`` as ``(scope, log_table)`` pairs.

    Parameters
    ----------
    model : GraphicalModel
        Each factor has a ``scope`` (variable indices) and a natural-log table of shape
        ``card[scope]``.

    Returns
    -------
    list of (tuple of int, ndarray)
    """
    out = []
    for f in model.factors:
        scope = getattr(f, "scope", None)
        if scope is None:
            scope = getattr(f, "vars")
        table = None
        for name in ("log_table", "log_values", "log_potential", "values"):
            table = getattr(f, name, None)
            if table is not None:
                break
        if table is None:
            raise TypeError(f"cannot read the log table of factor {f!r}")
        scope = tuple(int(v) for v in scope)
        out.append((scope, np.asarray(table, dtype=float).reshape([int(_cards(model)[v]) for v in scope])))
    return out


class FactorEvaluator:
    """Vectorised log factor values and bucket sums for full or partial assignments.

    Each factor belongs to the bucket of its scope variable deepest in the pseudo tree
    (the first one eliminated); the arc weight of an AND node for variable k is the sum of
    its bucket's log factors (Sec. 2.1 of [1]_).

    Parameters
    ----------
    model : GraphicalModel
    parent : ndarray of shape (n_vars,) of int
        Pseudo-tree parent of each variable, -1 for roots.
    const_bucket : int, optional
        Bucket holding the empty-scope (constant) factors, as the heuristic does it (see
        :func:`constant_bucket`); None = constants belong to no bucket
        (``log_constant``).
    """

    def __init__(self, model, parent, const_bucket=None):
        parent = np.asarray(parent, dtype=np.int64)
        n_vars = parent.shape[0]
        depth = np.full(n_vars, -1, dtype=np.int64)
        for v in range(n_vars):  # depth by walking up (memoised)
            path = []
            u = v
            while u >= 0 and depth[u] < 0:
                path.append(u)
                u = parent[u]
            d = -1 if u < 0 else depth[u]
            for w in reversed(path):
                d += 1
                depth[w] = d
        self.depth = depth
        facs = factor_arrays(model)
        self.log_constant = 0.0
        scopes, tables, buckets = [], [], []
        card_all = np.asarray(_cards(model), dtype=np.int64)
        for scope, table in facs:
            if len(scope) == 0:
                if const_bucket is None:
                    self.log_constant += float(table.reshape(-1)[0])
                    continue
                # the heuristic files constants in a bucket: do the same
                scope = (int(const_bucket),)
                table = np.full(int(card_all[const_bucket]), float(table.reshape(-1)[0]))
            scopes.append(scope)
            tables.append(table.reshape(-1))
            buckets.append(max(scope, key=lambda v: depth[v]))
        n_f = len(scopes)
        arity = max((len(s) for s in scopes), default=1)
        self.scope_pad = np.zeros((n_f, arity), dtype=np.int64)
        self.strides = np.zeros((n_f, arity), dtype=np.int64)
        sizes = np.array([t.size for t in tables], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if n_f else np.zeros(0, np.int64)
        self.flat = np.concatenate(tables) if n_f else np.zeros(0)
        card = np.asarray(_cards(model), dtype=np.int64)
        for i, scope in enumerate(scopes):
            st = 1
            for j in range(len(scope) - 1, -1, -1):
                self.scope_pad[i, j] = scope[j]
                self.strides[i, j] = st
                st *= card[scope[j]]
        self.bucket = np.asarray(buckets, dtype=np.int64)
        # factors whose bucket lies in the pseudo subtree of each variable
        kids = [[] for _ in range(n_vars)]
        for v in range(n_vars):
            if parent[v] >= 0:
                kids[parent[v]].append(v)
        own = [[] for _ in range(n_vars)]
        for i, b in enumerate(buckets):
            own[b].append(i)
        order = np.argsort(-depth, kind="stable")  # deepest first
        desc = [None] * n_vars
        for v in order:
            parts = [np.asarray(own[v], dtype=np.int64)] + [desc[c] for c in kids[v]]
            desc[v] = np.concatenate(parts) if len(parts) > 1 else parts[0]
        self.desc_factors = desc
        self.n_vars = n_vars

    def log_factor_values(self, x):
        """Log value of every (non-constant) factor, shape (n, n_factors), for x (n, n_vars)."""
        x = np.asarray(x, dtype=np.int64)
        idx = self.offsets[None, :] + np.einsum("nfa,fa->nf", x[:, self.scope_pad], self.strides)
        return self.flat[idx]

    def log_value(self, x):
        """ln f(x) for full assignments x of shape (n, n_vars); returns (n,)."""
        vals = self.log_factor_values(x)
        with np.errstate(invalid="ignore"):
            return vals.sum(axis=1) + self.log_constant

    def log_subtree_cost(self, x, start_vars):
        """ln g(x below) = sum of the log factors in the buckets of the pseudo subtrees of
        ``start_vars`` (the conditional cost of Sec. 2.1), for one assignment x (n_vars,)."""
        if len(start_vars) == 1:
            idx = self.desc_factors[int(start_vars[0])]
        else:
            idx = np.concatenate([self.desc_factors[int(v)] for v in start_vars])
        if idx.size == 0:
            return 0.0
        xs = np.asarray(x, dtype=np.int64)
        flat_idx = self.offsets[idx] + (xs[self.scope_pad[idx]] * self.strides[idx]).sum(axis=1)
        return float(self.flat[flat_idx].sum())


def constant_bucket(wmb, model, parent):
    """The pseudo-tree root whose WMB arc weights hold the empty-scope factors, or None.

    The arc-weight contract says "the factors in var's bucket" but not where constants
    go; this compares each root's arc weights with its own factors to find out.
    """
    facs = factor_arrays(model)
    const = sum(float(t.reshape(-1)[0]) for sc, t in facs if len(sc) == 0)
    if not any(len(sc) == 0 for sc, _ in facs) or const == 0.0:
        return None
    ev = FactorEvaluator(model, parent)
    n = len(parent)
    zero = np.zeros(n, dtype=np.int64)
    for r in np.flatnonzero(np.asarray(parent) < 0):
        r = int(r)
        card = int(_cards(model)[r])
        x = np.zeros((card, n), dtype=np.int64)
        x[:, r] = np.arange(card)
        idx = np.flatnonzero(ev.bucket == r)
        own = ev.log_factor_values(x)[:, idx].sum(axis=1) if idx.size else np.zeros(card)
        theirs = np.asarray(wmb.log_arc_weight(r, zero), dtype=float)
        fin = np.isfinite(own) & np.isfinite(theirs)
        if fin.any() and np.allclose(theirs[fin] - own[fin], const, atol=1e-9 * max(1.0, abs(const))):
            return r
    return None



# --------------------------------------------------------------------------- fast proposal
def _load_kernel(pure_python=False):
    if pure_python:
        from . import _proposal_py as mod
    else:
        from ..utils.kernels import load_kernel

        mod = load_kernel("sampling.bounds._proposal")
    return mod.ProposalKernel


class FastProposal:
    """One compiled call per draw: WMB mixture proposal (Eq. 7) below given pseudo-tree
    nodes, returning ln q of the draw and ln g, the sum of the drawn variables' bucket
    factors (their arc weights), as used in the q_S weights of Eq. 10-12.

    It reads the mixture components that :class:`WeightedMiniBucket` prepared for its own
    ``sample`` (``wmb.tables.proposal``) without copying them.

    Parameters
    ----------
    wmb : WeightedMiniBucket
        Fitted.
    evaluator : FactorEvaluator
        Built on ``wmb.model`` with the WMB pseudo tree.
    pure_python : bool, default False
        Use the reference twin ``_proposal_py`` (slow; for tests).

    Raises
    ------
    AttributeError
        If ``wmb`` does not expose the proposal tables (use ``wmb.sample`` instead).
    """

    def __init__(self, wmb, evaluator, *, pure_python=False):
        props = wmb.tables.proposal  # AttributeError -> caller falls back to wmb.sample
        parent = np.asarray(wmb.pseudo_tree.parent, dtype=np.int64)
        n = parent.shape[0]
        cards = np.ascontiguousarray(np.asarray(_cards(wmb.model), dtype=np.int64))
        kids = [[] for _ in range(n)]
        roots = []
        for v in range(n):
            (roots if parent[v] < 0 else kids[parent[v]]).append(v)
        pre = []
        size = np.zeros(n, dtype=np.int64)
        stack = list(reversed(roots))
        while stack:
            v = stack.pop()
            pre.append(v)
            stack.extend(reversed(kids[v]))
        pre = np.asarray(pre, dtype=np.int64)
        pos = np.empty(n, dtype=np.int64)
        pos[pre] = np.arange(n)
        for v in pre[::-1]:
            size[v] = 1 + sum(size[c] for c in kids[v])
        _, comp_ptr, comp_kstride, comp_vptr, comp_vars, comp_strides, tables = lookup_arrays(
            cards, [[look for _, look in props[k]] for k in range(n)])
        comp_lw = [float(lw) for k in range(n) for lw, _ in props[k]]
        ev = evaluator
        order = np.argsort(ev.bucket, kind="stable")
        counts = np.bincount(ev.bucket, minlength=n) if ev.bucket.size else np.zeros(n, dtype=np.int64)
        bucket_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        arity = ev.scope_pad.shape[1] if ev.scope_pad.ndim == 2 else 1
        n_f = ev.scope_pad.shape[0]
        i64 = lambda a: np.ascontiguousarray(np.asarray(a, dtype=np.int64))  # noqa: E731
        f64 = lambda a: np.ascontiguousarray(np.asarray(a, dtype=np.float64))  # noqa: E731
        self.kernel = _load_kernel(pure_python)(
            cards, i64(pre), i64(pos), i64(size), i64(comp_ptr), f64(comp_lw), i64(comp_kstride),
            i64(comp_vptr), i64(comp_vars), i64(comp_strides), tables, bucket_ptr, i64(order),
            i64(ev.offsets), i64(np.arange(n_f + 1) * arity), i64(ev.scope_pad.reshape(-1)),
            i64(ev.strides.reshape(-1)), f64(ev.flat) if ev.flat.size else np.zeros(1),
            np.zeros(max(int(cards.max(initial=1)), 1)))
        self.size = size
        self.roots = np.asarray(roots, dtype=np.int64)
        self.n_vars = n
        self.log_constant = ev.log_constant
        self._ubuf = np.empty(0)

    def uniforms(self, rng, rows, cols):
        """``rng.random((rows, cols))`` written into a buffer kept between calls: the same
        numbers, without the kernel zeroing fresh pages for each batch (a batch of 1024
        rows is about 8 MB on a pedigree). The result is overwritten by the next call."""
        need = int(rows) * int(cols)
        if self._ubuf.size < need:
            self._ubuf = np.empty(need)
        u = self._ubuf[:need].reshape(int(rows), int(cols))
        rng.random(out=u)
        return u

    def sample(self, rng, assignment, start_vars):
        """Draw the pseudo subtrees of ``start_vars`` (ancestors set in ``assignment``).

        Returns
        -------
        x : ndarray of int64 of shape (n_vars,)
        log_q : float
            ln q of the drawn variables given the rest.
        log_g : float
            Sum of the log factors in the drawn variables' buckets.
        """
        x = np.array(assignment, dtype=np.int64)
        starts = np.ascontiguousarray(start_vars, dtype=np.int64)
        u = rng.random(int(self.size[starts].sum()))
        log_q, log_g = self.kernel.sample(starts, x, u)
        return x, log_q, log_g


def make_fast_proposal(wmb, evaluator):
    """A :class:`FastProposal` for ``wmb``, or None (with a PerformanceWarning) if the WMB
    does not expose its proposal tables (a duck-typed heuristic). An unbuilt compiled kernel
    raises the ImportError of :func:`sampling.utils.kernels.load_kernel`."""
    from ..exceptions import PerformanceWarning

    try:
        return FastProposal(wmb, evaluator)
    except AttributeError as exc:  # a duck-typed WMB without tables; an unbuilt kernel raises
        warnings.warn(f"compiled proposal sampler unavailable ({exc}); using wmb.sample (slower)",
                      PerformanceWarning, stacklevel=2)
        return None
