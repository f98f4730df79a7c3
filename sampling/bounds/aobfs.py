"""AND/OR best-first search (AOBFS) for anytime upper bounds on the partition function.

The search keeps an explicit AND/OR search *tree* (no caching) guided by the pseudo tree
of a weighted mini-bucket (WMB) relaxation [1]_ [2]_. Every node ``n`` carries an upper
bound ``u_n`` on its value ``v_n`` (Eq. 1-2 of [1]_), initialised from the WMB heuristic
``h+_n`` and propagated to the root with Eq. 3, so ``U_S = u_root`` is an anytime
deterministic upper bound on ``Z``. The node to expand is the open frontier node with the
largest *upper priority* ``U_n = g_n u_n prod_{s in branch(n)} u_s`` (Eq. 4), found by a
top-down descent that keeps, at each node, the best priority of its subtree relative to
the node. Nodes whose sub-problem has been fully enumerated are *solved*: their bound is
exact, their children are freed, and the sampler of :mod:`sampling.bounds.importance`
treats them as Rao-Blackwellised leaves. When the memory budget is reached the tree
stops growing, unless ``memory_limited=True``: then low-priority internal nodes are
collapsed back into frontier nodes that keep their tightened bounds, so the bound keeps
improving past the limit (an SMA*-style stand-in for Alg. 2 of [2]_, whose text we do
not have; see :class:`AOBFS`). That mode is for pure search only: the two-step sampler
of DIS needs Eq. 3 to hold with equality at every node, which it gives up.

A deterministic lower bound is kept as well: ``l_n = v_n`` at solved nodes, ``0`` at
open frontier nodes, propagated with Eq. 3.

Two implementations of the tree make identical choices behind this one interface: the
flat-array ``_aobfs.AndOrTree`` (Cython, about 20 us per expansion on the pedigrees; used
when the WMB exposes its lookup tables) and its slotted-object reference twin
``_aobfs_py.AndOrTree`` (``backend="python"``).

References
----------
.. [1] Q. Lou, R. Dechter, A. Ihler (2017), "Dynamic Importance Sampling for Anytime
   Bounds of the Partition Function", NIPS. Sec. 2.1-2.2, Eq. 1-5.
.. [2] Q. Lou, R. Dechter, A. Ihler (2017), "Anytime Anyspace AND/OR Search for
   Bounding the Partition Function", AAAI.
"""
from __future__ import annotations

import math
import time

import numpy as np

from ._lookup import lookup_arrays

__all__ = ["AOBFS"]

_NEG_INF = -math.inf
# Estimated bytes per search node (slotted Python object + its share of a children list),
# measured with tracemalloc on pedigree20 (220 B/node); used to turn memory_mb into a node cap.
NODE_BYTES = 224
# Compiled tree (flat 64-byte aligned arrays allocated once, touched as nodes are created):
# an AND node takes 7 x int32 + 4 x float64 + 1 uint16 + 1 byte = 63 bytes padded to one
# 64-byte cache line, an OR node 5 x int32 + 3 x float64 + 1 byte = 45 bytes padded to 48.
NODE_BYTES_COMPILED = 64
_MAX_COMPILED_NODES = 2**31 - 2**21  # int32 node indices


def tree_structure(pseudo_tree, n_vars):
    """Parent array, children lists and roots of a pseudo tree.

    Parameters
    ----------
    pseudo_tree : object
        Has a ``parent`` (or ``parents``) sequence of shape (n_vars,), -1 for roots.
    n_vars : int

    Returns
    -------
    parent : ndarray of shape (n_vars,) of int
    children : list of ndarray of int, length n_vars
    roots : ndarray of int
    """
    parent = getattr(pseudo_tree, "parent", None)
    if parent is None:
        parent = getattr(pseudo_tree, "parents")
    parent = np.asarray(parent, dtype=np.int64).reshape(-1)
    if parent.shape[0] != n_vars:
        raise ValueError(f"pseudo tree has {parent.shape[0]} variables, model has {n_vars}")
    kids = [[] for _ in range(n_vars)]
    roots = []
    for v in range(n_vars):
        p = int(parent[v])
        (roots if p < 0 else kids[p]).append(v)
    children = [np.asarray(k, dtype=np.int64) for k in kids]
    return parent, children, np.asarray(roots, dtype=np.int64)


class AOBFS:
    """Anytime AND/OR best-first search with the upper priority (Eq. 3-5 of [1]_).

    Parameters
    ----------
    model : GraphicalModel
        The model; its partition function is bounded.
    wmb : WeightedMiniBucket, optional
        A fitted WMB giving arc weights and heuristics. Built (and fitted) with
        ``i_bound`` and ``memory_mb`` when omitted.
    i_bound : int, optional
        WMB i-bound when ``wmb`` is built here; None = largest that fits ``memory_mb``.
    memory_mb : float, default 1024
        Total memory budget in MB; the search tree may use what the WMB leaves.
    max_nodes : int, optional
        Hard cap on the number of stored search nodes (overrides the memory estimate;
        use it for reproducible tests).
    search_memory_mb : float, optional
        MiB for the search nodes alone, as split once by the caller
        (:func:`sampling.bounds.run` gives the WMB its tables and the search the rest);
        overrides the split of ``memory_mb`` done here otherwise.
    backend : {"auto", "compiled", "python"}, default "auto"
        "compiled" keeps the tree in flat arrays (``_aobfs.AndOrTree``, needs the WMB's
        lookup tables); "python" uses the slotted-object reference twin
        ``_aobfs_py.AndOrTree`` (the one the compiled tree is tested against). "auto" picks
        "compiled" when possible.
    memory_limited : bool, default False
        Keep improving the bound once the node cap is reached (Sec. 5 of [1]_ uses the
        memory-limited AOBFS of [2]_). Before an expansion that could take the tree past
        ``max_nodes_`` (the most nodes the selected node's expansion creates is known
        from the pseudo tree), the search collapses one internal AND node at a time
        back into an open frontier node that keeps its current ``u_n`` and ``l_n`` and
        the best upper priority of its forgotten subtree (like the backed-up f-value of
        SMA*: the node is re-expanded when the nodes it stands for would have been
        selected, not at once), then selects again. The node collapsed is found by a
        top-down descent that mirrors the selection: at each AND node go to the internal
        AND grandchild ``c`` (through OR child ``s``) whose subtree's best upper priority
        (Eq. 4), relative to the AND node, ``w_c b_c / u_s`` is *smallest* (first one on
        ties), and stop at the first node whose unsolved grandchildren are all open
        frontier nodes. The root is never collapsed: if it is the only candidate the
        search stops (``can_expand`` becomes False).
        In this mode every AND node keeps the running minimum of its Eq. 3 upper bounds
        (and maximum of its lower bounds): a re-expanded node's regenerated children
        carry the WMB heuristic again, whose Eq. 3 combination may be looser than the
        stored ``u_n``; the min of two valid bounds is valid, so ``U_S`` never increases
        and stays >= Z. Eq. 3 at an AND node, ``u_n = prod_s u_s``, then holds only as
        ``<=``, so the tree must not be sampled from (the two-step sampler needs the
        equalities; see ``reset_collapsed``).
    reset_collapsed : bool, default False
        Memory-limited search (as ``memory_limited=True``, which it implies) whose tree
        stays a valid DIS proposal: a collapsed node's ``u_n`` goes back to its WMB
        heuristic ``h_n`` (the proposal below it is again the WMB's, whose weights are
        bounded by ``h_n``; its priority stays the backed-up best priority of the forgotten
        subtree) and every node holds Eq. 3 with equality, so the two-step
        sampler of Sec. 3 of [1]_ keeps ``f(x)/q_S(x) <= U_S``. ``U_S`` may then rise
        after a collapse; ``log_Z_upper_min_`` (the running minimum) is the deterministic
        bound. DIS uses it to keep searching past the node cap with ``run(...,
        past_memory="search")``.

    Attributes
    ----------
    log_Z_upper_ : float
        Current ln U_S (Eq. 3 at the root).
    log_Z_upper_min_ : float
        Smallest ln U_S seen so far (a valid deterministic upper bound).
    log_Z_lower_ : float
        Deterministic lower bound from solved sub-problems (-inf until any path is solved).
    n_nodes_ : int
        Stored AND + OR nodes.
    n_expansions_ : int
    solved_ : bool
        True when the root is solved (``log_Z_upper_ == log_Z_lower_ == ln Z``).
    full_ : bool
        True once the node cap was hit (no more expansions unless ``memory_limited``).
    max_nodes_ : int
        The node cap in force.
    n_collapses_ : int
        Internal nodes collapsed back into frontier nodes (``memory_limited`` only).

    References
    ----------
    .. [1] Lou, Dechter & Ihler (2017), NIPS, Sec. 2.2, Eq. 3-5, Sec. 5.
    .. [2] Lou, Dechter & Ihler (2017), "Anytime Anyspace AND/OR Search for Bounding the
       Partition Function", AAAI, Alg. 2 (memory-limited AOBFS).
    """

    def __init__(self, model, *, wmb=None, i_bound=None, memory_mb=1024.0, max_nodes=None,
                 backend="auto", memory_limited=False, search_memory_mb=None, reset_collapsed=False):
        self.search_memory_mb = search_memory_mb
        self.model = model
        self.wmb = wmb
        self.i_bound = i_bound
        self.memory_mb = memory_mb
        self.max_nodes = max_nodes
        self.backend = backend
        self.memory_limited = memory_limited
        self.reset_collapsed = reset_collapsed

    # ------------------------------------------------------------------ setup
    def _setup(self):
        if self.memory_mb is None or not (float(self.memory_mb) > 0):
            raise ValueError(f"memory_mb must be a positive number of MB, got {self.memory_mb!r}")
        if self.max_nodes is not None and (int(self.max_nodes) != self.max_nodes or self.max_nodes < 1):
            raise ValueError(f"max_nodes must be a positive integer or None, got {self.max_nodes!r}")
        if self.wmb is None:
            from .wmb import WeightedMiniBucket

            self.wmb = WeightedMiniBucket(self.model, i_bound=self.i_bound,
                                          memory_mb=self.memory_mb).fit()
        wmb = self.wmb
        self.n_vars_ = int(len(self.model.cards))
        self.parent_, self.children_, self.roots_ = tree_structure(wmb.pseudo_tree, self.n_vars_)
        self.is_leaf_ = np.array([len(c) == 0 for c in self.children_], dtype=bool)
        if self.backend not in ("auto", "compiled", "python"):
            raise ValueError(f"backend must be 'auto', 'compiled' or 'python', got {self.backend!r}")
        kernel = None
        tables = getattr(wmb, "tables", None)  # a duck-typed heuristic has none
        if self.backend != "python" and tables is not None:
            from ..utils.kernels import load_kernel

            _k = load_kernel("sampling.bounds._aobfs")  # ImportError saying how to build
            kernel = (_k.AndOrTree, _k.LookupSum)
        if self.backend == "compiled" and kernel is None:
            raise ValueError("backend='compiled' needs a fitted WeightedMiniBucket and the built _aobfs kernel")
        node_bytes = NODE_BYTES if kernel is None else NODE_BYTES_COMPILED
        if self.max_nodes is not None:
            self.max_nodes_ = int(self.max_nodes)
        elif self.search_memory_mb is not None:
            self.max_nodes_ = max(int(float(self.search_memory_mb) * 2**20 / node_bytes), 16)
        else:
            wmb_mb = float(getattr(wmb, "memory_mb_", 0.0) or 0.0)
            free = max(float(self.memory_mb) - wmb_mb, 0.05 * float(self.memory_mb))
            self.max_nodes_ = max(int(free * 2**20 / node_bytes), 16)
        if kernel is not None:
            self.max_nodes_ = min(self.max_nodes_, _MAX_COMPILED_NODES)
        self.n_nodes_ = 1
        self.n_expansions_ = 0
        self.full_ = False
        self._stuck = False
        self.n_collapses_ = 0
        self._reset = bool(self.reset_collapsed)
        self._limited = bool(self.memory_limited) or self._reset
        # the WMB may have squeezed cardinality-1 variables out of the scopes; constants
        # (empty scopes) then belong to no bucket and sit on the root's arc
        self.model_ = getattr(wmb, "model", None) or self.model
        from .importance import constant_bucket

        self.const_bucket_ = constant_bucket(wmb, self.model_, self.parent_)
        log_const = 0.0 if self.const_bucket_ is not None else float(_constant_log_factor(self.model_))
        self._ctree = None
        if kernel is not None:
            AndOrTree, LookupSum = kernel
            cards = np.ascontiguousarray(wmb.model.cards, dtype=np.int64)
            kids = list(self.children_) + [self.roots_]
            ch_ptr = np.concatenate([[0], np.cumsum([len(k) for k in kids])]).astype(np.int64)
            ch_idx = np.ascontiguousarray(np.concatenate(kids) if kids else np.zeros(0), dtype=np.int64)
            self._ctree = AndOrTree(ch_ptr, ch_idx, self.is_leaf_.astype(np.int64), cards,
                                    LookupSum(*lookup_arrays(cards, tables.arc)),
                                    LookupSum(*lookup_arrays(cards, tables.heuristic)),
                                    log_const, self.max_nodes_, self.max_nodes_ + 1024,
                                    self._limited, self._reset)
            self._tree = self._ctree
        else:
            from ._aobfs_py import AndOrTree as PyTree

            arc_fn, heur_fn = _query_functions(wmb)
            self._tree = PyTree(self.children_, self.roots_, self.is_leaf_, self.model_.cards, arc_fn,
                                heur_fn, log_const, self.max_nodes_, self._limited, self._reset)
        self.n_nodes_ = self._tree.n_nodes
        self.full_ = self._tree.full
        self.log_Z_upper_min_ = self.log_Z_upper_

    def fit(self, *, max_expansions=None, time_limit=None):
        """Build the root and expand until a budget, the memory cap or the exact answer.

        Parameters
        ----------
        max_expansions : int, optional
            Number of node expansions (None = no limit; 0 = just build the root).
        time_limit : float, optional
            Seconds of search (None = no limit). With neither limit the search runs
            until the memory cap is hit or the root is solved.

        Returns
        -------
        self
        """
        self._setup()
        self.expand(max_expansions, time_limit=time_limit)
        return self

    # ------------------------------------------------------------- properties
    @property
    def log_Z_upper_(self):
        return self._tree.log_Z_upper

    @property
    def log_Z_lower_(self):
        return self._tree.log_Z_lower

    @property
    def solved_(self):
        return self._tree.solved

    @property
    def can_expand(self):
        """True while an expansion is possible (not solved, memory cap not reached)."""
        return self._tree.can_expand

    @property
    def root_(self):
        """Root AND node of the Python backend's tree (``_aobfs_py.AndOrTree``); the
        object sampler of :func:`sampling.bounds.importance.sample_search_tree` walks it."""
        if self._ctree is not None:
            raise AttributeError("the compiled tree has no node objects (backend='python' has)")
        return self._tree.root_

    def _select(self):
        """The open frontier node the next expansion takes (Python backend; for tests)."""
        return self._tree._select()

    @property
    def compiled_(self):
        """True when the tree lives in the compiled ``_aobfs.AndOrTree``."""
        return self._ctree is not None

    @property
    def compiled_tree(self):
        """The compiled ``_aobfs.AndOrTree`` (None with the Python backend). Code that
        expands it directly (``dis_rounds``) must then call :meth:`record_expansions`."""
        return self._ctree

    @property
    def tree(self):
        """The search tree: the compiled ``_aobfs.AndOrTree`` or its twin
        ``_aobfs_py.AndOrTree`` (both have ``dis_samples``). Code that expands it directly
        must then call :meth:`record_expansions`."""
        return self._tree

    def record_expansions(self, n_expanded):
        """Update the counters after the compiled tree expanded ``n_expanded`` nodes."""
        self._sync(n_expanded)

    # ---------------------------------------------------------------- search
    def expand(self, n=1, *, time_limit=None):
        """Expand up to ``n`` open frontier nodes chosen by the upper priority (Eq. 4).

        Parameters
        ----------
        n : int or None
            Number of expansions; None = until another limit stops the search.
        time_limit : float, optional
            Stop after this many seconds.

        Returns
        -------
        int
            Number of expansions done (smaller than ``n`` when solved or full).
        """
        t0 = time.perf_counter()
        done = 0
        ct = self._tree
        while (n is None or done < n) and ct.can_expand:
            if time_limit is not None and time.perf_counter() - t0 >= time_limit:
                break
            k = ct.expand(64 if n is None else min(64, n - done))
            done += k
            self._sync(k)
            if k == 0:
                break
        self._sync(0)
        return done

    def _sync(self, n_expanded):
        """Update the counters after the tree expanded ``n_expanded`` nodes."""
        ct = self._tree
        self.n_expansions_ += int(n_expanded)
        self.log_Z_upper_min_ = min(self.log_Z_upper_min_, ct.log_Z_upper_min)
        self.n_nodes_ = ct.n_nodes
        self.full_ = ct.full
        self.n_collapses_ = ct.n_collapses


def _query_functions(wmb):
    """(arc(y, a), heuristic(y, a)) -> ndarray (card[y],), compiled when the WMB exposes its
    lookup tables (``_arc`` / ``_heur``), else the WMB's public methods."""
    tables = getattr(wmb, "tables", None)
    if tables is None:
        return wmb.log_arc_weight, wmb.log_heuristic
    arcs, heurs = tables.arc, tables.heuristic
    from ..utils.kernels import load_kernel

    LookupSum = load_kernel("sampling.bounds._aobfs").LookupSum
    cards = np.ascontiguousarray(wmb.model.cards, dtype=np.int64)
    return _lookup_fn(LookupSum, cards, arcs), _lookup_fn(LookupSum, cards, heurs)


def _lookup_fn(cls, cards, per_var):
    kern = cls(*lookup_arrays(cards, per_var))
    rows = kern.rows

    def fn(y, a):
        out = np.empty(int(cards[y]))
        rows(y, a, out)
        return out
    return fn


def _constant_log_factor(model):
    """Sum of the log values of empty-scope factors (they belong to no bucket)."""
    from .importance import factor_arrays

    total = 0.0
    for scope, table in factor_arrays(model):
        if len(scope) == 0:
            total += float(np.asarray(table).reshape(-1)[0])
    return total
