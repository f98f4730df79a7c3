# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled kernels of the AND/OR search (Lou et al. 2017, Eq. 3-5): ``LookupSum`` (WMB
arc weights / heuristics at an assignment) and ``AndOrTree`` (the flat-array search tree,
its memory-limited mode and the DIS rounds, which draw below the frontier with the
``_proposal.ProposalKernel``; ``dis_samples`` also returns each draw's configuration, with
exact rejection draws below solved nodes).

Reference twins: ``_aobfs_py.py`` (``LookupSum``), the Python backend of ``aobfs.AOBFS``
(the tree) and ``_dis_samples_py.py`` (``dis_samples``), tested against these.
"""
from libc.math cimport exp, log, INFINITY
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy
from posix.stdlib cimport posix_memalign

from sampling.bounds._proposal cimport ProposalKernel, pin_tables


cdef class LookupSum:
    """Sum of log tables read at an assignment with one variable's axis kept.

    For variable k, ``out[x] = sum_c T_c[sum_j a[vars_cj] * strides_cj + kstride_c * x]``
    over the lookups ``c`` of k (``ptr[k] <= c < ptr[k+1]``): the WMB arc weights or
    heuristics of the AND nodes ``k = x`` (Lou et al. 2017, Sec. 2.1 and Eq. 6).
    """

    cdef const double** tab
    cdef object _keep
    cdef const long long[::1] cards, ptr, kstride, vptr, vars_, strides

    def __cinit__(self, cards, ptr, kstride, vptr, vars_, strides, tables):
        self._keep = list(tables)
        self.tab = pin_tables(self._keep)
        self.cards = cards
        self.ptr = ptr
        self.kstride = kstride
        self.vptr = vptr
        self.vars_ = vars_
        self.strides = strides

    def __dealloc__(self):
        if self.tab != NULL:
            free(self.tab)

    def rows(self, Py_ssize_t k,                 # IN  variable
             const long long[::1] a,             # IN  assignment (ancestors of k read)
             double[::1] out):                   # OUT (>= card[k],) sums
        """Write the sums for ``k = 0..card[k]-1`` into ``out``."""
        self._rows(k, &a[0], &out[0])

    cdef void _rows(self, Py_ssize_t k, const long long* a, double* out) noexcept:
        cdef Py_ssize_t c, j, xv, card = self.cards[k]
        cdef long long base
        for xv in range(card):
            out[xv] = 0.0
        for c in range(self.ptr[k], self.ptr[k + 1]):
            base = 0
            for j in range(self.vptr[c], self.vptr[c + 1]):
                base += a[self.vars_[j]] * self.strides[j]
            for xv in range(card):
                out[xv] += self.tab[c][base + self.kstride[c] * xv]


import numpy as _np

cdef double NEG_INF = -INFINITY


cdef inline double _uniform(unsigned long long* state) noexcept:
    """Next double in [0, 1) of a splitmix64 stream (Steele, Lea & Flood 2014); the twin
    ``_dis_samples_py.SplitMix64`` gives the same numbers."""
    cdef unsigned long long z
    state[0] += 0x9E3779B97F4A7C15ULL
    z = state[0]
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    z = z ^ (z >> 31)
    return <double> (z >> 11) * (1.0 / 9007199254740992.0)


cdef struct AndNode:                # 63 bytes, padded to 64: one cache line (arrays are 64-aligned)
    double logw, logu, logl, logb   # arc weight w, upper bound u, lower bound l, best priority b
    int var, val, parent, child0, nchild
    int best                        # AND grandchild the selection descent goes to (-1: none)
    int blk0                        # first node of this node's sibling block (= O[parent].child0)
    unsigned short blkn             # size of that block (capped; only used as a prefetch hint)
    signed char solved


cdef struct OrNode:                 # 45 bytes, padded to 48
    double logu, logl, logb
    int var, parent, child0, nchild
    int best                        # AND child the selection descent goes to (-1: none)
    signed char solved


cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define AO_PREFETCH(p) __builtin_prefetch((const void*)(p))
    #else
    #define AO_PREFETCH(p) ((void)0)
    #endif
    """
    void AO_PREFETCH(const void* p) noexcept nogil


cdef void* _realloc64(void* old, size_t old_bytes, size_t new_bytes) noexcept:
    # 64-byte aligned (re)allocation: an AndNode then sits in exactly one cache line. Fresh
    # large blocks are untouched pages, so capacity costs memory only as nodes are created
    # (every field of a node is set when it is created; nothing relies on zeroed memory).
    cdef void* p = NULL
    if posix_memalign(&p, 64, new_bytes if new_bytes > 0 else 64) != 0:
        return NULL
    if old != NULL:
        memcpy(p, old, old_bytes if old_bytes < new_bytes else new_bytes)
        free(old)
    return p


cdef class AndOrTree:
    """Explicit AND/OR search tree in flat arrays: AOBFS with the upper priority (Eq. 3-5)
    and the two-step sampler of Alg. 1 (Lou et al. 2017). The reference twin is the
    pure-Python ``aobfs.AOBFS`` (``backend="python"``); both make identical choices.

    AND nodes ``A[i]`` and OR nodes ``O[i]`` are 64-byte aligned arrays of C structs (an
    AND node is one cache line); the children of a node occupy a contiguous block
    (``child0``, ``nchild``). Each internal node also stores the choice the selection
    descent makes from it (``best``: an AND node's selected AND grandchild, an OR node's
    selected AND child), recomputed by the upward updates that change it, so the descent
    reads one node per level instead of two blocks of siblings: with trees of hundreds of
    MB each level is a cache miss, and the descent dominated the cost of an expansion.
    ``A[i].nchild = -1`` marks an open frontier
    AND node, ``0`` a solved one (children freed). Freed blocks are reused (free lists).
    Node 0 is the dummy root AND node (variable -1).

    With ``memory_limited=True`` (pure search only; the sampler needs the Eq. 3 identities
    that this mode gives up) the search keeps going once ``max_nodes`` is reached: before
    an expansion that could exceed the cap, the internal AND node found by a top-down
    descent through the *smallest* relative best subtree priorities (``w_c b_c / u_s``, the
    mirror of the selection descent) whose unsolved grandchildren are all open frontier nodes is
    collapsed back into a frontier node that keeps its tightened bounds and the best
    priority of its forgotten subtree (``A[i].logb``, like SMA*'s backed-up f). Every AND node
    keeps the running min of its Eq. 3 upper bounds (max of its lower bounds), so U_S
    never increases. This is an SMA*-style stand-in for Alg. 2 of Lou, Dechter & Ihler
    (AAAI 2017), whose text we do not have.
    """

    cdef const long long[::1] ch_ptr, ch_idx, is_leaf, cards
    cdef LookupSum arc, heur
    cdef long long n_vars
    cdef AndNode* A
    cdef OrNode* O
    cdef public long long n_and, n_or, n_nodes, n_expansions, max_nodes, cap_and, cap_or
    cdef public bint full, memory_limited, stuck
    cdef public bint reset_collapsed  # memory-limited, q_S kept valid (collapse -> heuristic)
    cdef public long long n_collapses
    cdef public double log_Z_upper_min
    cdef long long[::1] exp_size
    cdef object free_and, free_or
    cdef long long[::1] assign, stack, starts
    cdef double[::1] row_a, row_h

    def __cinit__(self, ch_ptr, ch_idx, is_leaf, cards, LookupSum arc, LookupSum heur,
                  double log_const, long long max_nodes, long long capacity=1024,
                  bint memory_limited=False, bint reset_collapsed=False):
        self.ch_ptr = ch_ptr
        self.ch_idx = ch_idx
        self.is_leaf = is_leaf
        self.cards = cards
        self.arc = arc
        self.heur = heur
        self.n_vars = cards.shape[0]
        self.max_nodes = max_nodes
        self.full = False
        self.memory_limited = memory_limited or reset_collapsed
        self.reset_collapsed = reset_collapsed
        self.stuck = False
        self.n_collapses = 0
        self.free_and = {}
        self.free_or = {}
        self.cap_and = 0
        self.cap_or = 0
        self._alloc_and(capacity)
        self._alloc_or(capacity)
        mc = max(int(_np.max(cards)) if cards.shape[0] else 1, 1)
        self.row_a = _np.zeros(mc)
        self.row_h = _np.zeros(mc)
        self.assign = _np.zeros(max(self.n_vars, 1), dtype=_np.int64)
        self.stack = _np.zeros(self.n_vars + 2, dtype=_np.int64)
        self.starts = _np.zeros(self.n_vars + 1, dtype=_np.int64)
        # most nodes an expansion of variable v's AND node creates (index n_vars: the root)
        es = _np.zeros(self.n_vars + 1, dtype=_np.int64)
        ptr, idx, leaf, cds = (_np.asarray(ch_ptr), _np.asarray(ch_idx), _np.asarray(is_leaf),
                               _np.asarray(cards))
        for vi in range(self.n_vars + 1):
            for y in idx[ptr[vi]:ptr[vi + 1]]:
                es[vi] += 1 + (0 if leaf[y] else int(cds[y]))
        self.exp_size = es
        # root
        self.n_and = 1
        self.n_or = 0
        self.A[0].var = -1
        self.A[0].val = -1
        self.A[0].parent = -1
        self.A[0].child0 = -1
        self.A[0].nchild = -1
        self.A[0].best = -1
        self.A[0].blk0 = 0
        self.A[0].blkn = 1
        self.A[0].logw = log_const
        # memory-limited mode keeps min(stored, Eq. 3): the root starts with no bound
        self.A[0].logu = INFINITY if (memory_limited and not reset_collapsed) else 0.0
        self.A[0].logl = NEG_INF
        self.A[0].logb = 0.0
        self.A[0].solved = 0
        self.n_nodes = 1
        self.n_expansions = 0
        self._expand(0)
        self.log_Z_upper_min = self.A[0].logw + self.A[0].logu
        if self.n_nodes >= self.max_nodes:
            self.full = True

    # ---------------------------------------------------------------- storage
    cdef void _alloc_and(self, long long cap) except *:
        cdef AndNode* p = <AndNode*> _realloc64(self.A, self.cap_and * sizeof(AndNode),
                                                cap * sizeof(AndNode))
        if p == NULL:
            raise MemoryError(f"AND/OR search tree: cannot allocate {cap} AND nodes")
        self.A = p
        self.cap_and = cap

    cdef void _alloc_or(self, long long cap) except *:
        cdef OrNode* p = <OrNode*> _realloc64(self.O, self.cap_or * sizeof(OrNode),
                                              cap * sizeof(OrNode))
        if p == NULL:
            raise MemoryError(f"AND/OR search tree: cannot allocate {cap} OR nodes")
        self.O = p
        self.cap_or = cap

    def __dealloc__(self):
        free(self.A)
        free(self.O)

    cdef long long _new_and(self, long long k):
        lst = self.free_and.get(k)
        if lst:
            return lst.pop()
        if self.n_and + k > self.cap_and:
            self._alloc_and(max(2 * self.cap_and, self.n_and + k))
        cdef long long start = self.n_and
        self.n_and += k
        return start

    cdef long long _new_or(self, long long k):
        lst = self.free_or.get(k)
        if lst:
            return lst.pop()
        if self.n_or + k > self.cap_or:
            self._alloc_or(max(2 * self.cap_or, self.n_or + k))
        cdef long long start = self.n_or
        self.n_or += k
        return start

    cdef void _free_and_block(self, long long start, long long k):
        if k > 0:
            self.free_and.setdefault(k, []).append(start)

    cdef void _free_or_block(self, long long start, long long k):
        if k > 0:
            self.free_or.setdefault(k, []).append(start)

    cdef long long _free_below_or(self, long long s):
        """Free everything strictly below OR node s; return the number of nodes freed."""
        cdef long long total = 0, c, t, k = self.O[s].nchild, c0 = self.O[s].child0
        if k <= 0:
            return 0
        total += k
        for c in range(c0, c0 + k):
            if self.A[c].nchild > 0:
                for t in range(self.A[c].child0, self.A[c].child0 + self.A[c].nchild):
                    total += self._free_below_or(t)
                total += self.A[c].nchild
                self._free_or_block(self.A[c].child0, self.A[c].nchild)
                self.A[c].nchild = 0
        self._free_and_block(c0, k)
        self.O[s].nchild = 0
        return total

    # ---------------------------------------------------------------- search
    @property
    def log_Z_upper(self):
        return self.A[0].logw + self.A[0].logu

    @property
    def log_Z_lower(self):
        return self.A[0].logw + self.A[0].logl

    @property
    def solved(self):
        return bool(self.A[0].solved)

    @property
    def can_expand(self):
        return not (self.A[0].solved or self.A[0].logb == NEG_INF or self.stuck
                    or (self.full and not self.memory_limited))

    def worst(self):
        """Index of the AND node the memory-limited search would collapse next (0 = none)."""
        return self._worst()

    def collapse(self, long long n):
        """Collapse internal AND node ``n`` into a frontier node; returns the nodes freed."""
        if n <= 0 or n >= self.n_and or self.A[n].nchild <= 0:
            raise ValueError(f"node {n} is not an internal non-root AND node")
        return self._collapse(n)

    def expand(self, long long n):
        """Expand up to n nodes by the upper priority; returns the number done."""
        return self._expand_n(n)

    cdef long long _expand_n(self, long long n):
        cdef long long done = 0
        cdef double u
        cdef long long node, c, vi
        while done < n and not (self.A[0].solved or self.A[0].logb == NEG_INF or self.stuck
                                or (self.full and not self.memory_limited)):
            node = self._select()
            if self.memory_limited:
                while True:
                    vi = self.A[node].var if self.A[node].var >= 0 else self.n_vars
                    if self.n_nodes + self.exp_size[vi] <= self.max_nodes:
                        break
                    c = self._worst()
                    if c == 0:  # nothing left to collapse but the root
                        self.stuck = True
                        self.full = True
                        break
                    self._collapse(c)
                    self.full = True
                    node = self._select()
                if self.stuck:
                    break
            self._expand(node)
            done += 1
            self.n_expansions += 1
            u = self.A[0].logw + self.A[0].logu
            if u < self.log_Z_upper_min:
                self.log_Z_upper_min = u
        return done

    cdef long long _select(self):
        # Top-down descent by the upper priority (Eq. 4): at an AND node the unsolved OR
        # child with the largest b_s / u_s, then its unsolved AND child with the largest
        # w_c b_c (first one on ties). The updates store that choice in each node
        # (``best``), so the descent reads one node (one cache line) per level.
        # Each level also prefetches what the expansion's upward pass will read there (the
        # node's block of OR children and its own block of AND siblings), so those cache
        # misses overlap with the descent instead of following it one by one.
        cdef long long node = 0, i
        cdef AndNode* a
        while True:
            a = &self.A[node]
            if a.nchild <= 0:
                return node
            for i in range(a.child0, a.child0 + a.nchild):
                AO_PREFETCH(&self.O[i])
            for i in range(a.blk0, a.blk0 + a.blkn):
                AO_PREFETCH(&self.A[i])
            node = a.best

    cdef long long _worst(self):
        """Top-down descent by the smallest relative best priority w_c b_c / u_s over internal
        AND grandchildren; returns the first node whose unsolved grandchildren are all
        open frontier nodes (0 when that is the root)."""
        cdef long long node = 0, s, c, bc
        cdef double best, val
        while True:
            best = INFINITY
            bc = -1
            for s in range(self.A[node].child0, self.A[node].child0 + self.A[node].nchild):
                if self.O[s].solved:
                    continue
                for c in range(self.O[s].child0, self.O[s].child0 + self.O[s].nchild):
                    if self.A[c].nchild > 0:
                        val = self.A[c].logw + self.A[c].logb - self.O[s].logu
                        if val < best or bc < 0:
                            best = val
                            bc = c
            if bc < 0:
                return node
            node = bc

    cdef long long _collapse(self, long long n):
        """Free the OR children of AND node n and everything below; n becomes an open
        frontier node that keeps its (tightened) u_n, l_n and best subtree priority b_n
        (``reset_collapsed``: u_n goes back to the WMB heuristic h_n, so that Eq. 3
        holds with equality and q_S stays a proposal whose weights are <= U_S).
        Updates the ancestors."""
        cdef long long k = self.A[n].nchild, o0 = self.A[n].child0, s, freed = k, cur
        for s in range(o0, o0 + k):
            freed += self._free_below_or(s)
        self._free_or_block(o0, k)
        self.A[n].nchild = -1
        self.A[n].child0 = -1
        if self.reset_collapsed:
            cur = self.O[self.A[n].parent].parent  # the AND parent: h_n depends on x above n
            while cur >= 0 and self.A[cur].var >= 0:
                self.assign[self.A[cur].var] = self.A[cur].val
                cur = self.O[self.A[cur].parent].parent
            self.heur._rows(self.A[n].var, &self.assign[0], &self.row_h[0])
            self.A[n].logu = self.row_h[self.A[n].val]
            self.A[n].best = -1  # b_n keeps the best priority of the forgotten subtree
        self.n_nodes -= freed
        self.n_collapses += 1
        cur = n
        while True:
            s = self.A[cur].parent
            if s < 0:
                break
            self._update_or(s, True)
            cur = self.O[s].parent
            self._update_and(cur)
        return freed

    cdef void _expand(self, long long n):
        cdef long long cur = n, v, vi, k, j, y, s, o0, a0, x, cnt, i, card, created
        cdef double m, t
        while cur >= 0 and self.A[cur].var >= 0:
            self.assign[self.A[cur].var] = self.A[cur].val
            cur = self.O[self.A[cur].parent].parent
        v = self.A[n].var
        vi = v if v >= 0 else self.n_vars
        k = self.ch_ptr[vi + 1] - self.ch_ptr[vi]
        created = k
        o0 = self._new_or(k) if k > 0 else 0
        for j in range(k):
            y = self.ch_idx[self.ch_ptr[vi] + j]
            s = o0 + j
            self.O[s].var = y
            self.O[s].parent = n
            self.O[s].child0 = -1
            self.O[s].nchild = 0
            self.O[s].best = -1
            self.O[s].solved = 0
            self.O[s].logb = NEG_INF
            card = self.cards[y]
            self.arc._rows(y, &self.assign[0], &self.row_a[0])
            if self.is_leaf[y]:
                m = NEG_INF
                for x in range(card):
                    if self.row_a[x] > m:
                        m = self.row_a[x]
                if m == NEG_INF:
                    t = NEG_INF
                else:
                    t = 0.0
                    for x in range(card):
                        t += exp(self.row_a[x] - m)
                    t = m + log(t)
                self.O[s].logu = t
                self.O[s].logl = t
                self.O[s].solved = 1
            else:
                self.heur._rows(y, &self.assign[0], &self.row_h[0])
                cnt = 0
                for x in range(card):
                    if self.row_a[x] > NEG_INF and self.row_h[x] > NEG_INF:
                        cnt += 1
                if cnt == 0:
                    self.O[s].logu = NEG_INF
                    self.O[s].logl = NEG_INF
                    self.O[s].solved = 1
                else:
                    a0 = self._new_and(cnt)
                    i = a0
                    for x in range(card):
                        if self.row_a[x] > NEG_INF and self.row_h[x] > NEG_INF:
                            self.A[i].var = y
                            self.A[i].val = x
                            self.A[i].logw = self.row_a[x]
                            self.A[i].logu = self.row_h[x]
                            self.A[i].logl = NEG_INF
                            self.A[i].logb = self.row_h[x]
                            self.A[i].parent = s
                            self.A[i].child0 = -1
                            self.A[i].nchild = -1
                            self.A[i].best = -1
                            self.A[i].blk0 = <int> a0
                            self.A[i].blkn = <unsigned short> (cnt if cnt < 65535 else 65535)
                            self.A[i].solved = 0
                            i += 1
                    self.O[s].child0 = a0
                    self.O[s].nchild = cnt
                    created += cnt
                    self._update_or(s, False)
        self.n_nodes += created
        self.A[n].child0 = o0
        self.A[n].nchild = k
        cur = n
        while True:
            self._update_and(cur)
            s = self.A[cur].parent
            if s < 0:
                break
            self._update_or(s, True)
            cur = self.O[s].parent
        if self.n_nodes >= self.max_nodes:
            self.full = True

    cdef void _update_and(self, long long n):
        cdef long long k = self.A[n].nchild, o0 = self.A[n].child0, s, bs = -1
        cdef double log_u = 0.0, log_l = 0.0, best_r = NEG_INF, r
        cdef bint solved = True
        if k <= 0:
            return
        for s in range(o0, o0 + k):
            log_u += self.O[s].logu
            log_l += self.O[s].logl
            if not self.O[s].solved:
                solved = False
                r = self.O[s].logb - self.O[s].logu
                if r > best_r or bs < 0:  # the selection rule (first maximum)
                    best_r = r
                    bs = s
        if log_u == NEG_INF:
            if not solved:
                for s in range(o0, o0 + k):
                    if not self.O[s].solved:
                        self.n_nodes -= self._free_below_or(s)
                        self.O[s].solved = 1
            log_l = NEG_INF
            solved = True
        if self.memory_limited and not self.reset_collapsed:  # min / max of valid bounds
            if self.A[n].logu < log_u:
                log_u = self.A[n].logu
            if self.A[n].logl > log_l:
                log_l = self.A[n].logl
            if log_l > log_u:
                log_l = log_u
        self.A[n].logu = log_u
        if solved:
            self.A[n].logl = log_u
            self.n_nodes -= k
            for s in range(o0, o0 + k):  # solved OR children may still hold blocks
                self._free_below_or(s)
            self._free_or_block(o0, k)
            self.A[n].nchild = 0
            self.A[n].solved = 1
            self.A[n].logb = NEG_INF
        else:
            self.A[n].logl = log_l
            self.A[n].logb = log_u + best_r
            self.A[n].best = self.O[bs].best

    cdef void _update_or(self, long long s, bint count):
        cdef long long k = self.O[s].nchild, c0 = self.O[s].child0, c, bc = -1
        cdef double m = NEG_INF, ml = NEG_INF, bm = NEG_INF, v, t, log_u
        cdef bint solved = True
        if k <= 0:
            return
        for c in range(c0, c0 + k):
            v = self.A[c].logw + self.A[c].logu
            if v > m:
                m = v
            v = self.A[c].logw + self.A[c].logl
            if v > ml:
                ml = v
            if not self.A[c].solved:
                solved = False
                v = self.A[c].logw + self.A[c].logb
                if v > bm or bc < 0:  # the selection rule (first maximum)
                    bm = v
                    bc = c
        if m == NEG_INF:
            log_u = NEG_INF
        else:
            t = 0.0
            for c in range(c0, c0 + k):
                t += exp(self.A[c].logw + self.A[c].logu - m)
            log_u = m + log(t)
        self.O[s].logu = log_u
        if solved:
            self.O[s].logl = log_u
            if count:
                self.n_nodes -= k
            self._free_and_block(c0, k)
            self.O[s].nchild = 0
            self.O[s].solved = 1
            self.O[s].logb = NEG_INF
        else:
            if ml == NEG_INF:
                self.O[s].logl = NEG_INF
            else:
                t = 0.0
                for c in range(c0, c0 + k):
                    t += exp(self.A[c].logw + self.A[c].logl - ml)
                self.O[s].logl = ml + log(t)
            self.O[s].logb = bm
            self.O[s].best = bc

    # ---------------------------------------------------------------- sampling
    def dis_rounds(self, ProposalKernel prop,
                   long long n_rounds,               # IN  rounds of Alg. 1
                   long long n_exp,                  # IN  N_d expansions per round
                   long long n_samp,                 # IN  N_l samples per round
                   long long max_exp,                # IN  expansions allowed in all (-1: no limit)
                   const double[:, ::1] uniforms,    # IN  (n_rounds * n_samp, n_vars)
                   long long[::1] x,                 # WORK (n_vars,) assignment
                   double[::1] out_logw,             # OUT (n_rounds * n_samp,) ln f/q_S
                   double[::1] out_logU):            # OUT (n_rounds * n_samp,) ln U_S at each draw
        """Rounds of DIS (Alg. 1): expand up to ``n_exp`` nodes (while the memory budget
        and ``max_exp`` allow), then draw ``n_samp`` two-step samples from q_S. Sample i
        uses row i of ``uniforms`` (first the tree's OR choices, then the proposal draws
        below the open frontier nodes: each variable is drawn once), so the result equals
        the one-call-per-step loop exactly. Stops early (before sampling) once the root is
        solved; returns the samples written."""
        cdef long long r, j, v, i = 0, nv = self.n_vars
        cdef double log_U
        for r in range(n_rounds):
            max_exp = self._round_expansions(n_exp, max_exp)
            if self.A[0].solved:
                break
            log_U = self.A[0].logw + self.A[0].logu
            for j in range(n_samp):
                for v in range(nv):
                    x[v] = 0
                out_logw[i] = self._sample(prop, &uniforms[i, 0], &x[0])
                out_logU[i] = log_U
                i += 1
        return i

    cdef long long _round_expansions(self, long long n_exp, long long max_exp):
        """The expansions of one round of Alg. 1: up to ``n_exp`` while the memory budget and
        ``max_exp`` (-1: no limit) allow; returns what is left of ``max_exp``."""
        cdef long long k
        if n_exp > 0:
            k = n_exp if max_exp < 0 else min(n_exp, max_exp)
            if k > 0:
                k = self._expand_n(k)
                if max_exp >= 0:
                    max_exp -= k
        return max_exp

    cdef double _sample(self, ProposalKernel prop, const double* u, long long* x,
                        long long* solved_out=NULL, long long* n_solved=NULL) noexcept:
        # solved_out (optional): the variables of the solved OR nodes the draw reaches (a
        # solved AND node: its pseudo-tree children), whose subtrees this draw leaves unset
        cdef long long top = 1, n, s, c, k, c0, vi, j, nst = 0, used = 0
        cdef double log_U = self.A[0].logw + self.A[0].logu, log_h = 0.0, target, acc, best
        cdef double log_q = 0.0, log_g = 0.0
        self.stack[0] = 0
        while top > 0:
            top -= 1
            n = self.stack[top]
            if self.A[n].solved:
                if solved_out != NULL:
                    vi = self.A[n].var if self.A[n].var >= 0 else self.n_vars
                    for j in range(self.ch_ptr[vi], self.ch_ptr[vi + 1]):
                        solved_out[n_solved[0]] = self.ch_idx[j]
                        n_solved[0] += 1
                continue
            if self.A[n].nchild < 0:
                vi = self.A[n].var if self.A[n].var >= 0 else self.n_vars
                for j in range(self.ch_ptr[vi], self.ch_ptr[vi + 1]):
                    self.starts[nst] = self.ch_idx[j]
                    nst += 1
                log_h += self.A[n].logu
                continue
            for s in range(self.A[n].child0, self.A[n].child0 + self.A[n].nchild):
                if self.O[s].solved:
                    if solved_out != NULL:
                        solved_out[n_solved[0]] = self.O[s].var
                        n_solved[0] += 1
                    continue
                k = self.O[s].nchild
                c0 = self.O[s].child0
                if k == 1:
                    c = c0
                else:
                    target = u[used]
                    used += 1
                    acc = 0.0
                    c = -1
                    for j in range(c0, c0 + k):
                        acc += exp(self.A[j].logw + self.A[j].logu - self.O[s].logu)
                        if target < acc:
                            c = j
                            break
                    if c < 0:
                        best = NEG_INF
                        for j in range(c0, c0 + k):
                            if self.A[j].logu > NEG_INF and self.A[j].logw + self.A[j].logu > best:
                                best = self.A[j].logw + self.A[j].logu
                                c = j
                x[self.O[s].var] = self.A[c].val
                self.stack[top] = c
                top += 1
        if nst == 0:
            return log_U - log_h
        prop._draw(&self.starts[0], nst, x, u + used, &log_q, &log_g, True)
        if log_g == NEG_INF:
            return NEG_INF
        return log_U + log_g - log_h - log_q

    # ------------------------------------------------ sampling with the configurations
    def dis_samples(self, ProposalKernel prop,
                    long long n_rounds,                # IN  rounds of Alg. 1
                    long long n_exp,                   # IN  N_d expansions per round
                    long long n_samp,                  # IN  N_l samples per round
                    long long max_exp,                 # IN  expansions allowed in all (-1: no limit)
                    const double[:, ::1] uniforms,     # IN  (n_rounds * n_samp, n_vars)
                    const unsigned long long[::1] seeds,  # IN  (n_rounds * n_samp,) splitmix64 seeds
                    long long max_tries,               # IN  rejection tries per solved sub-problem
                    long long[:, ::1] X,               # OUT (n_rounds * n_samp, n_vars) configurations
                    double[::1] out_logw,              # OUT (n_rounds * n_samp,) ln f/q_S
                    double[::1] out_logU,              # OUT (n_rounds * n_samp,) ln U_S at each draw
                    long long[::1] counts):            # INOUT (3,) += tries, sub-problems, capped
        """``dis_rounds`` that also returns each sample's whole configuration.

        The same expansions, weights and bounds as :meth:`dis_rounds` on the same
        ``uniforms`` (the weight does not depend on what lies below a solved node), except
        that a solved root does not stop the rounds (its draws have weight U_S = Z). Row i
        of ``X`` is sample i: the tree's choices, the proposal draws below the open frontier
        and, below every solved OR node reached (variable y, its context set), an exact
        draw from the sub-problem: a leaf y in proportion to its arc weights; otherwise
        rejection sampling: y = x in proportion to w(x) h(x) (arc weight times WMB
        heuristic), the subtrees below from the WMB proposal, accepted with probability
        (g/q) / h(x) <= 1; accepted draws follow w(x) g exactly. The tries draw from a
        splitmix64 stream seeded by ``seeds[i]``. A sub-problem still rejected after
        ``max_tries`` keeps its last try (``counts[2]`` counts them). Rows of zero weight
        are not completed (their configuration does not enter any estimate)."""
        cdef long long r, j, v, i = 0, nv = self.n_vars, t, ns
        cdef double log_U
        cdef unsigned long long state
        cdef long long[::1] solved = _np.zeros(max(nv, 1), dtype=_np.int64)
        cdef double[::1] buf = _np.zeros(max(nv, 1))
        cdef long long[::1] tally = _np.zeros(3, dtype=_np.int64)
        for r in range(n_rounds):
            max_exp = self._round_expansions(n_exp, max_exp)
            log_U = self.A[0].logw + self.A[0].logu
            for j in range(n_samp):
                for v in range(nv):
                    X[i, v] = 0
                ns = 0
                out_logw[i] = self._sample(prop, &uniforms[i, 0], &X[i, 0], &solved[0], &ns)
                out_logU[i] = log_U
                if out_logw[i] > NEG_INF:
                    state = seeds[i]
                    for t in range(ns):
                        self._draw_solved(prop, solved[t], &X[i, 0], &state, &buf[0], max_tries, &tally[0])
                i += 1
        for t in range(3):
            counts[t] += tally[t]
        return i

    cdef void _draw_solved(self, ProposalKernel prop, long long y, long long* x,
                           unsigned long long* state, double* buf, long long max_tries,
                           long long* tally) noexcept:
        """Exact draw of variable y and its pseudo subtree given its ancestors in x (see
        :meth:`dis_samples`)."""
        cdef long long card = self.cards[y], xv, idx, t, n_u, c0, nc
        cdef double m, tot, acc, target, log_q, log_g, ratio
        cdef double* ra = &self.row_a[0]
        cdef double* rh = &self.row_h[0]
        self.arc._rows(y, x, ra)
        if self.is_leaf[y]:
            for xv in range(card):
                rh[xv] = 0.0
        else:
            self.heur._rows(y, x, rh)
        tally[1] += 1
        m = NEG_INF
        for xv in range(card):
            if ra[xv] + rh[xv] > m:
                m = ra[xv] + rh[xv]
        if m == NEG_INF:  # not reachable by a draw of positive weight
            x[y] = 0
            return
        tot = 0.0
        for xv in range(card):
            tot += exp(ra[xv] + rh[xv] - m)
        c0 = self.ch_ptr[y]
        nc = self.ch_ptr[y + 1] - c0
        n_u = prop.size[y] - 1
        for t in range(max_tries):
            tally[0] += 1
            target = _uniform(state) * tot
            acc = 0.0
            idx = card - 1
            for xv in range(card):
                acc += exp(ra[xv] + rh[xv] - m)
                if target < acc:
                    idx = xv
                    break
            while idx > 0 and ra[idx] + rh[idx] == NEG_INF:  # rounding at the top end
                idx -= 1
            x[y] = idx
            if nc == 0:
                return
            for xv in range(n_u):
                buf[xv] = _uniform(state)
            log_q = 0.0
            log_g = 0.0
            prop._draw(&self.ch_idx[c0], nc, x, buf, &log_q, &log_g, True)
            ratio = log_g - log_q - rh[idx]
            if log_g > NEG_INF and (ratio >= 0.0 or _uniform(state) < exp(ratio)):
                return
        tally[2] += 1
