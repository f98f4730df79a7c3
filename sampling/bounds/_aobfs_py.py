"""Pure-Python reference twins of ``_aobfs.pyx``: ``LookupSum`` (tests only) and
``AndOrTree``, the search tree of ``AOBFS(backend="python")`` (the reference the compiled
tree is tested against; also the backend for heuristics without lookup tables)."""
import math
from math import exp as _exp
from math import log as _log

import numpy as np


class LookupSum:
    """Same constructor and ``rows`` as the compiled ``_aobfs.LookupSum``."""

    def __init__(self, cards, ptr, kstride, vptr, vars_, strides, tables):
        self.cards, self.ptr, self.kstride = cards, ptr, kstride
        self.vptr, self.vars_, self.strides, self.tables = vptr, vars_, strides, list(tables)

    def rows(self, k, a, out):
        """Write the sums for ``k = 0..card[k]-1`` into ``out``."""
        card = int(self.cards[k])
        for xv in range(card):
            out[xv] = 0.0
        for c in range(self.ptr[k], self.ptr[k + 1]):
            base = sum(int(a[self.vars_[j]]) * int(self.strides[j]) for j in range(self.vptr[c], self.vptr[c + 1]))
            for xv in range(card):
                out[xv] += self.tables[c][base + self.kstride[c] * xv]


# ------------------------------------------------------------------ the AND/OR tree twin
_NEG_INF = -math.inf


def _lse(values):
    """log(sum(exp(values))) of a short Python sequence; -inf when empty or all -inf."""
    m = max(values, default=_NEG_INF)
    if m == _NEG_INF:
        return _NEG_INF
    t = 0.0
    for v in values:  # plain left-to-right sum: the compiled tree adds in the same order
        t += math.exp(v - m)
    return m + math.log(t)


class _AndNode:
    """AND node: variable ``var`` set to ``val`` (``var = -1`` for the dummy root).

    ``log_w``: log arc weight w_c; ``log_u``/``log_l``: log upper/lower bound on v_c;
    ``log_b``: log of the best upper priority in the subtree relative to this node (-inf
    if nothing below is expandable); ``children``: list of ``_OrNode`` or None (frontier).
    """

    __slots__ = ("children", "log_b", "log_l", "log_u", "log_w", "parent", "solved", "val", "var")

    def __init__(self, var, val, log_w, log_u, parent):
        self.var = var
        self.val = val
        self.log_w = log_w
        self.log_u = log_u
        self.log_l = _NEG_INF
        self.log_b = log_u
        self.parent = parent
        self.children = None
        self.solved = False


class _OrNode:
    """OR node for variable ``var``; ``children`` are ``_AndNode`` (None once solved)."""

    __slots__ = ("children", "log_b", "log_l", "log_u", "parent", "solved", "var")

    def __init__(self, var, parent):
        self.var = var
        self.log_u = _NEG_INF
        self.log_l = _NEG_INF
        self.log_b = _NEG_INF
        self.parent = parent
        self.children = None
        self.solved = False


def _subtree_size(node):
    """Number of stored nodes strictly below ``node``."""
    total = 0
    stack = [node]
    while stack:
        cur = stack.pop()
        if cur.children:
            total += len(cur.children)
            stack.extend(cur.children)
    return total


class AndOrTree:
    """Reference twin of the compiled ``_aobfs.AndOrTree`` (slotted Python objects; the
    ``backend="python"`` of :class:`sampling.bounds.aobfs.AOBFS`, which also takes
    duck-typed heuristics without lookup tables). Same choices, same floating-point
    order: the tests compare the two step by step.

    Parameters
    ----------
    children : list of ndarray of int, length n_vars
        Pseudo-tree children of each variable.
    roots : ndarray of int
        Pseudo-tree roots (children of the dummy root AND node).
    is_leaf : ndarray of bool, shape (n_vars,)
    cards : ndarray of int, shape (n_vars,)
    arc_fn, heur_fn : callable (var, assignment) -> ndarray (card[var],)
        Log arc weights w and log WMB heuristics h of var's values given its ancestors.
    log_const : float
        Log constant on the root's arc.
    max_nodes : int
    memory_limited, reset_collapsed : bool
        As in :class:`sampling.bounds.aobfs.AOBFS`.
    """

    def __init__(self, children, roots, is_leaf, cards, arc_fn, heur_fn, log_const, max_nodes,
                 memory_limited=False, reset_collapsed=False):
        self.children_, self.roots_, self.is_leaf_ = children, roots, is_leaf
        self.n_vars_ = len(children)
        self._arc_fn, self._heur_fn = arc_fn, heur_fn
        self.max_nodes_ = int(max_nodes)
        self._reset = bool(reset_collapsed)
        self._limited = bool(memory_limited) or self._reset
        self._assign = np.zeros(self.n_vars_, dtype=np.int64)
        self.n_nodes_ = 1
        self.n_expansions = 0
        self.full_ = False
        self._stuck = False
        self.n_collapses_ = 0
        cards = np.asarray(cards, dtype=np.int64)
        kids = list(children) + [roots]
        # most nodes an expansion of variable v's AND node creates (index n_vars: root)
        self._exp_size = [sum(1 + (0 if is_leaf[y] else int(cards[y])) for y in k.tolist()) for k in kids]
        # memory-limited mode keeps min(stored, Eq. 3): the root starts with no bound
        self.root_ = _AndNode(-1, -1, log_const, math.inf if self._limited and not self._reset else 0.0, None)
        self._expand(self.root_)
        self.log_Z_upper_min = self.log_Z_upper

    # the compiled tree's interface
    n_nodes = property(lambda self: self.n_nodes_)
    full = property(lambda self: self.full_)
    stuck = property(lambda self: self._stuck)
    n_collapses = property(lambda self: self.n_collapses_)
    memory_limited = property(lambda self: self._limited)
    reset_collapsed = property(lambda self: self._reset)
    arc_fn = property(lambda self: self._arc_fn)
    heur_fn = property(lambda self: self._heur_fn)

    def dis_samples(self, prop, *args):
        """Twin of the compiled ``dis_samples`` (``_dis_samples_py.dis_samples``)."""
        from ._dis_samples_py import dis_samples

        return dis_samples(self, prop, *args)

    @property
    def log_Z_upper(self):
        return self.root_.log_w + self.root_.log_u

    @property
    def log_Z_lower(self):
        return self.root_.log_w + self.root_.log_l

    @property
    def solved(self):
        return self.root_.solved

    @property
    def can_expand(self):
        return not (self.root_.solved or self.root_.log_b == _NEG_INF or self._stuck
                    or (self.full_ and not self._limited))

    def expand(self, n):
        """Expand up to ``n`` nodes by the upper priority; returns the number done."""
        done = 0
        while done < n and self.can_expand:
            node = self._select()
            if self._limited:
                node = self._make_room(node)
                if node is None:
                    break
            self._expand(node)
            done += 1
            self.n_expansions += 1
            u = self.log_Z_upper
            self.log_Z_upper_min = min(self.log_Z_upper_min, u)
        return done

    def _select(self):
        """Top-down descent to the open frontier node of largest upper priority."""
        node = self.root_
        while node.children is not None:
            best, best_s = _NEG_INF, None
            for s in node.children:
                if not s.solved:
                    val = s.log_b - s.log_u
                    if val > best or best_s is None:
                        best, best_s = val, s
            best, best_c = _NEG_INF, None
            for c in best_s.children:
                if not c.solved:
                    val = c.log_w + c.log_b
                    if val > best or best_c is None:
                        best, best_c = val, c
            node = best_c
        return node

    def _make_room(self, node):
        """Collapse nodes until expanding ``node`` (re-selected after each collapse) fits
        the node cap; None when only the root could be collapsed (the search stops)."""
        while self.n_nodes_ + self._exp_size[node.var if node.var >= 0 else self.n_vars_] > self.max_nodes_:
            c = self._worst()
            if c is self.root_:
                self._stuck = True
                self.full_ = True
                return None
            self._collapse(c)
            self.full_ = True
            node = self._select()
        return node

    def _worst(self):
        """Top-down descent by the smallest relative best priority w_c b_c / u_s over internal
        AND grandchildren; the first node whose unsolved grandchildren are all frontier."""
        node = self.root_
        while True:
            best, best_c = math.inf, None
            for s in node.children:
                if s.solved:
                    continue
                for c in s.children:
                    if c.children is not None:
                        val = c.log_w + c.log_b - s.log_u
                        if val < best or best_c is None:
                            best, best_c = val, c
            if best_c is None:
                return node
            node = best_c

    def _collapse(self, node):
        """Free the OR children of AND ``node`` and all below; ``node`` becomes an open
        frontier node keeping its tightened ``u_n`` / ``l_n``. Updates the ancestors."""
        ors = node.children
        self.n_nodes_ -= len(ors) + sum(_subtree_size(s) for s in ors)
        node.children = None
        if self._reset:  # back to the WMB heuristic: Eq. 3 holds with equality, q_S stays valid
            p = node.parent.parent
            a = self.assignment(p) if p.var >= 0 else self._assign
            node.log_u = float(self._heur_fn(node.var, a)[node.val])  # log_b: SMA*-style backed-up priority
        self.n_collapses_ += 1
        cur = node
        while cur.parent is not None:
            s = cur.parent
            self._update_or(s)
            cur = s.parent
            self._update_and(cur)

    def assignment(self, node, out=None):
        """Values of ``node``'s variable and its ancestors written into ``out`` (n_vars,)."""
        a = self._assign if out is None else out
        while node is not None and node.var >= 0:
            a[node.var] = node.val
            node = node.parent.parent
        return a

    def _expand(self, node):
        """Generate the OR children of AND ``node`` and their AND children, then update."""
        a = self.assignment(node)
        child_vars = self.roots_ if node.var < 0 else self.children_[node.var]
        arc_fn, heur_fn = self._arc_fn, self._heur_fn
        ors = []
        created = 0
        for y in child_vars.tolist():
            s = _OrNode(y, node)
            created += 1
            arc = arc_fn(y, a).tolist()
            if self.is_leaf_[y]:
                # leaf of the pseudo tree: every AND child is solved with v = 1
                s.solved = True
                s.log_u = s.log_l = _lse(arc)
            else:
                heur = heur_fn(y, a).tolist()
                kids = []
                for x in range(len(arc)):
                    w, h = arc[x], heur[x]
                    if w > _NEG_INF and h > _NEG_INF:
                        kids.append(_AndNode(y, x, w, h, s))
                created += len(kids)
                if kids:
                    s.children = kids
                    self._update_or(s, count=False)
                else:
                    s.solved = True
                    s.log_u = s.log_l = _NEG_INF
            ors.append(s)
        self.n_nodes_ += created
        node.children = ors
        # update the expanded node and its ancestors (Eq. 3 and the priority bookkeeping)
        cur = node
        while cur is not None:
            self._update_and(cur)
            s = cur.parent
            if s is None:
                break
            self._update_or(s)
            cur = s.parent
        if self.n_nodes_ >= self.max_nodes_:
            self.full_ = True

    def _update_and(self, n):
        ors = n.children
        if ors is None:
            return
        log_u = 0.0
        log_l = 0.0
        best = _NEG_INF
        solved = True
        for s in ors:
            log_u += s.log_u
            log_l += s.log_l
            if not s.solved:
                solved = False
                r = s.log_b - s.log_u
                best = max(best, r)
        if log_u == _NEG_INF:
            if not solved:  # a zero factor below: drop the unsolved siblings' subtrees too
                self.n_nodes_ -= sum(_subtree_size(s) for s in ors if not s.solved)
            log_l, solved = _NEG_INF, True
        if self._limited and not self._reset:  # min / max of valid bounds (a collapsed node's are tighter)
            log_u = min(log_u, n.log_u)
            log_l = max(log_l, n.log_l)
            log_l = min(log_l, log_u)
        n.log_u = log_u
        if solved:
            n.log_l = log_u
            self.n_nodes_ -= len(ors)  # free the solved OR children (their subtrees are gone)
            n.children = None
            n.solved = True
            n.log_b = _NEG_INF
        else:
            n.log_l = log_l
            n.log_b = log_u + best

    def _update_or(self, s, count=True):
        kids = s.children
        if kids is None:
            return
        m = _NEG_INF
        ml = _NEG_INF
        bm = _NEG_INF
        solved = True
        for c in kids:
            v = c.log_w + c.log_u
            m = max(m, v)
            v = c.log_w + c.log_l
            ml = max(ml, v)
            if not c.solved:
                solved = False
                v = c.log_w + c.log_b
                bm = max(bm, v)
        if m == _NEG_INF:
            log_u = _NEG_INF
        else:
            t = 0.0
            for c in kids:
                t += _exp(c.log_w + c.log_u - m)
            log_u = m + _log(t)
        s.log_u = log_u
        if solved:
            s.log_l = log_u
            if count:
                self.n_nodes_ -= len(kids)
            else:  # solved at creation: the children were never counted as stored
                pass
            s.children = None
            s.solved = True
            s.log_b = _NEG_INF
        else:
            if ml == _NEG_INF:
                s.log_l = _NEG_INF
            else:
                t = 0.0
                for c in kids:
                    t += _exp(c.log_w + c.log_l - ml)
                s.log_l = ml + _log(t)
            s.log_b = bm
