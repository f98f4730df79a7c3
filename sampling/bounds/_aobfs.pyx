# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled kernel: one draw from the WMB mixture proposal below a set of pseudo-tree
nodes, plus the conditional cost g of what was drawn (Lou et al. 2017, Eq. 7 and 10).

Reference twin: ``_aobfs_py.py`` (same class, pure Python), tested against this one.
The caller validates every array once (see ``importance.FastProposal``).
"""
from libc.math cimport exp, log, INFINITY
from libc.stdlib cimport malloc, free


cdef class ProposalKernel:
    """Mixture-proposal sampler over flattened WMB tables.

    Parameters (all int64 / float64 contiguous arrays; see the Python twin for meaning)
    ----------
    cards, pre, pos, size : pseudo-tree preorder (``pre``), position of each variable in
        it (``pos``) and subtree sizes (``size``): the subtree of v is
        ``pre[pos[v] : pos[v] + size[v]]``, parents first.
    comp_ptr, comp_lw, comp_kstride, comp_vptr, comp_vars, comp_strides, tables :
        mixture components of each variable's conditional (Eq. 7): component c of var k
        (``comp_ptr[k] <= c < comp_ptr[k+1]``) has log weight ``comp_lw[c]`` and table
        ``tables[c]`` read at ``sum x[comp_vars[j]] * comp_strides[j] + kstride * x_k``.
    bucket_ptr, bucket_fac, f_off, f_vptr, f_vars, f_strides, f_flat : the original log
        factors of each variable's bucket (arc weights), in one flat table.
    """

    cdef const double** tab
    cdef object _keep
    cdef const long long[::1] cards, pre, pos, size
    cdef const long long[::1] comp_ptr, comp_kstride, comp_vptr, comp_vars, comp_strides
    cdef const double[::1] comp_lw
    cdef const long long[::1] bucket_ptr, bucket_fac, f_off, f_vptr, f_vars, f_strides
    cdef const double[::1] f_flat
    cdef double[::1] row
    cdef int max_card

    def __cinit__(self, cards, pre, pos, size, comp_ptr, comp_lw, comp_kstride, comp_vptr,
                  comp_vars, comp_strides, tables, bucket_ptr, bucket_fac, f_off, f_vptr,
                  f_vars, f_strides, f_flat, row):
        cdef Py_ssize_t i, n = len(tables)
        cdef const double[::1] mv
        self.tab = <const double**> malloc((n + 1) * sizeof(double*))
        if self.tab == NULL:
            raise MemoryError()
        self._keep = list(tables)
        for i in range(n):
            mv = self._keep[i]
            self.tab[i] = &mv[0]
        self.cards = cards
        self.pre = pre
        self.pos = pos
        self.size = size
        self.comp_ptr = comp_ptr
        self.comp_lw = comp_lw
        self.comp_kstride = comp_kstride
        self.comp_vptr = comp_vptr
        self.comp_vars = comp_vars
        self.comp_strides = comp_strides
        self.bucket_ptr = bucket_ptr
        self.bucket_fac = bucket_fac
        self.f_off = f_off
        self.f_vptr = f_vptr
        self.f_vars = f_vars
        self.f_strides = f_strides
        self.f_flat = f_flat
        self.row = row  # work space of length max card

    def __dealloc__(self):
        if self.tab != NULL:
            free(self.tab)

    def sample(self, const long long[::1] starts,   # IN  variables whose subtrees are drawn
               long long[::1] x,                    # INOUT assignment (ancestors set)
               const double[::1] uniforms):         # IN  >= total subtree size uniforms
        """Draw the subtrees of ``starts`` in place; return (ln q, ln g) of the draw."""
        cdef double log_q = 0.0, log_g = 0.0
        if starts.shape[0] > 0:
            self._draw(&starts[0], starts.shape[0], &x[0], &uniforms[0], &log_q, &log_g)
        return log_q, log_g

    def sample_batch(self, const long long[::1] starts,    # IN  variables whose subtrees are drawn
                     const double[:, ::1] uniforms,         # IN  (n, >= total subtree size)
                     long long[::1] x,                      # WORK (n_vars,) assignment
                     double log_const,                      # IN  constant added to every weight
                     double[::1] out):                      # OUT (n,) ln f(x_i) - ln q(x_i)
        """``n`` independent draws from the all-zero assignment (WMB-IS, Eq. 7-9): the same
        as ``n`` calls of :meth:`sample` with ``x`` zeroed and row ``i`` of ``uniforms``."""
        cdef Py_ssize_t i, v, n = uniforms.shape[0]
        cdef double log_q, log_g
        if starts.shape[0] == 0:
            for i in range(n):
                out[i] = log_const
            return
        for i in range(n):
            for v in range(x.shape[0]):
                x[v] = 0
            log_q = 0.0
            log_g = 0.0
            self._draw(&starts[0], starts.shape[0], &x[0], &uniforms[i, 0], &log_q, &log_g)
            out[i] = log_const + log_g - log_q

    cdef void _draw(self, const long long* starts, Py_ssize_t n_starts, long long* x,
                    const double* uniforms, double* out_q, double* out_g) noexcept:
        cdef Py_ssize_t s, i, k, v, c, j, f, xv, card, used = 0
        cdef long long base, idx
        cdef double log_q = 0.0, log_g = 0.0, m, tot, u, acc, val, lv
        cdef double* row = &self.row[0]
        for s in range(n_starts):
            v = starts[s]
            for i in range(self.pos[v], self.pos[v] + self.size[v]):
                k = self.pre[i]
                card = self.cards[k]
                if card > 1:
                    # row[x] = log sum_c exp(lw_c + T_c[base_c + kstride_c x])
                    for xv in range(card):
                        row[xv] = -INFINITY
                    for c in range(self.comp_ptr[k], self.comp_ptr[k + 1]):
                        base = 0
                        for j in range(self.comp_vptr[c], self.comp_vptr[c + 1]):
                            base += x[self.comp_vars[j]] * self.comp_strides[j]
                        for xv in range(card):
                            val = self.comp_lw[c] + self.tab[c][base + self.comp_kstride[c] * xv]
                            if val > row[xv]:
                                if row[xv] == -INFINITY:
                                    row[xv] = val
                                else:
                                    row[xv] = val + log(1.0 + exp(row[xv] - val))
                            elif val > -INFINITY:
                                row[xv] = row[xv] + log(1.0 + exp(val - row[xv]))
                    m = -INFINITY
                    for xv in range(card):
                        if row[xv] > m:
                            m = row[xv]
                    if m == -INFINITY:  # all-zero conditional: fall back to uniform
                        for xv in range(card):
                            row[xv] = 0.0
                        m = 0.0
                    tot = 0.0
                    for xv in range(card):
                        tot += exp(row[xv] - m)
                    u = uniforms[used] * tot
                    used += 1
                    acc = 0.0
                    idx = card - 1
                    for xv in range(card):
                        acc += exp(row[xv] - m)
                        if u < acc:
                            idx = xv
                            break
                    while idx > 0 and row[idx] == -INFINITY:  # rounding at the top end
                        idx -= 1
                    x[k] = idx
                    log_q += row[idx] - m - log(tot)
                else:
                    x[k] = 0
                # arc weight of k at the drawn value: sum of its bucket's log factors
                for j in range(self.bucket_ptr[k], self.bucket_ptr[k + 1]):
                    f = self.bucket_fac[j]
                    base = self.f_off[f]
                    for c in range(self.f_vptr[f], self.f_vptr[f + 1]):
                        base += x[self.f_vars[c]] * self.f_strides[c]
                    lv = self.f_flat[base]
                    log_g += lv
        out_q[0] = log_q
        out_g[0] = log_g


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
        cdef Py_ssize_t i, n = len(tables)
        cdef const double[::1] mv
        self.tab = <const double**> malloc((n + 1) * sizeof(double*))
        if self.tab == NULL:
            raise MemoryError()
        self._keep = list(tables)
        for i in range(n):
            mv = self._keep[i]
            self.tab[i] = &mv[0]
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


cdef class AndOrTree:
    """Explicit AND/OR search tree in flat arrays: AOBFS with the upper priority (Eq. 3-5)
    and the two-step sampler of Alg. 1 (Lou et al. 2017). The reference twin is the
    pure-Python ``aobfs.AOBFS`` (``backend="python"``); both make identical choices.

    AND node arrays ``a_*`` and OR node arrays ``o_*``; the children of a node occupy a
    contiguous block (``*_child0``, ``*_nchild``). ``a_nchild = -1`` marks an open frontier
    AND node, ``0`` a solved one (children freed). Freed blocks are reused (free lists).
    Node 0 is the dummy root AND node (variable -1).

    With ``memory_limited=True`` (pure search only; the sampler needs the Eq. 3 identities
    that this mode gives up) the search keeps going once ``max_nodes`` is reached: before
    an expansion that could exceed the cap, the internal AND node found by a top-down
    descent through the *smallest* relative best subtree priorities (``w_c b_c / u_s``, the
    mirror of the selection descent) whose unsolved grandchildren are all open frontier nodes is
    collapsed back into a frontier node that keeps its tightened bounds and the best
    priority of its forgotten subtree (``a_logb``, like SMA*'s backed-up f). Every AND node
    keeps the running min of its Eq. 3 upper bounds (max of its lower bounds), so U_S
    never increases. This is an SMA*-style stand-in for Alg. 2 of Lou, Dechter & Ihler
    (AAAI 2017), whose text we do not have.
    """

    cdef const long long[::1] ch_ptr, ch_idx, is_leaf, cards
    cdef LookupSum arc, heur
    cdef long long n_vars
    cdef int[::1] a_var, a_val, a_parent, a_child0, a_nchild
    cdef double[::1] a_logw, a_logu, a_logl, a_logb
    cdef signed char[::1] a_solved
    cdef int[::1] o_var, o_parent, o_child0, o_nchild
    cdef double[::1] o_logu, o_logl, o_logb
    cdef signed char[::1] o_solved
    cdef public long long n_and, n_or, n_nodes, n_expansions, max_nodes, cap_and, cap_or
    cdef public bint full, memory_limited, stuck
    cdef public long long n_collapses
    cdef public double log_Z_upper_min
    cdef long long[::1] exp_size
    cdef object free_and, free_or
    cdef long long[::1] assign, stack, starts
    cdef double[::1] row_a, row_h

    def __cinit__(self, ch_ptr, ch_idx, is_leaf, cards, LookupSum arc, LookupSum heur,
                  double log_const, long long max_nodes, long long capacity=1024,
                  bint memory_limited=False):
        self.ch_ptr = ch_ptr
        self.ch_idx = ch_idx
        self.is_leaf = is_leaf
        self.cards = cards
        self.arc = arc
        self.heur = heur
        self.n_vars = cards.shape[0]
        self.max_nodes = max_nodes
        self.full = False
        self.memory_limited = memory_limited
        self.stuck = False
        self.n_collapses = 0
        self.free_and = {}
        self.free_or = {}
        self.cap_and = 0
        self.cap_or = 0
        self._alloc_arrays_and(capacity)
        self._alloc_arrays_or(capacity)
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
        self.a_var[0] = -1
        self.a_val[0] = -1
        self.a_parent[0] = -1
        self.a_child0[0] = -1
        self.a_nchild[0] = -1
        self.a_logw[0] = log_const
        # memory-limited mode keeps min(stored, Eq. 3): the root starts with no bound
        self.a_logu[0] = INFINITY if memory_limited else 0.0
        self.a_logl[0] = NEG_INF
        self.a_logb[0] = 0.0
        self.a_solved[0] = 0
        self.n_nodes = 1
        self.n_expansions = 0
        self._expand(0)
        self.log_Z_upper_min = self.a_logw[0] + self.a_logu[0]
        if self.n_nodes >= self.max_nodes:
            self.full = True

    # ---------------------------------------------------------------- storage
    def _alloc_arrays_and(self, long long cap):
        # np.zeros takes untouched (lazily zeroed) pages, so a large initial capacity
        # costs memory only as nodes are created; every field of a node is set when it is
        old = self.cap_and
        def grow(arr, dtype):
            new = _np.zeros(cap, dtype=dtype)
            if old:
                new[:old] = _np.asarray(arr)[:old]
            return new
        self.a_var = grow(self.a_var if old else None, _np.int32)
        self.a_val = grow(self.a_val if old else None, _np.int32)
        self.a_parent = grow(self.a_parent if old else None, _np.int32)
        self.a_child0 = grow(self.a_child0 if old else None, _np.int32)
        self.a_nchild = grow(self.a_nchild if old else None, _np.int32)
        self.a_logw = grow(self.a_logw if old else None, _np.float64)
        self.a_logu = grow(self.a_logu if old else None, _np.float64)
        self.a_logl = grow(self.a_logl if old else None, _np.float64)
        self.a_logb = grow(self.a_logb if old else None, _np.float64)
        self.a_solved = grow(self.a_solved if old else None, _np.int8)
        self.cap_and = cap

    def _alloc_arrays_or(self, long long cap):
        old = self.cap_or
        def grow(arr, dtype):
            new = _np.zeros(cap, dtype=dtype)
            if old:
                new[:old] = _np.asarray(arr)[:old]
            return new
        self.o_var = grow(self.o_var if old else None, _np.int32)
        self.o_parent = grow(self.o_parent if old else None, _np.int32)
        self.o_child0 = grow(self.o_child0 if old else None, _np.int32)
        self.o_nchild = grow(self.o_nchild if old else None, _np.int32)
        self.o_logu = grow(self.o_logu if old else None, _np.float64)
        self.o_logl = grow(self.o_logl if old else None, _np.float64)
        self.o_logb = grow(self.o_logb if old else None, _np.float64)
        self.o_solved = grow(self.o_solved if old else None, _np.int8)
        self.cap_or = cap

    cdef long long _new_and(self, long long k):
        lst = self.free_and.get(k)
        if lst:
            return lst.pop()
        if self.n_and + k > self.cap_and:
            self._alloc_arrays_and(max(2 * self.cap_and, self.n_and + k))
        cdef long long start = self.n_and
        self.n_and += k
        return start

    cdef long long _new_or(self, long long k):
        lst = self.free_or.get(k)
        if lst:
            return lst.pop()
        if self.n_or + k > self.cap_or:
            self._alloc_arrays_or(max(2 * self.cap_or, self.n_or + k))
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
        cdef long long total = 0, c, t, k = self.o_nchild[s], c0 = self.o_child0[s]
        if k <= 0:
            return 0
        total += k
        for c in range(c0, c0 + k):
            if self.a_nchild[c] > 0:
                for t in range(self.a_child0[c], self.a_child0[c] + self.a_nchild[c]):
                    total += self._free_below_or(t)
                total += self.a_nchild[c]
                self._free_or_block(self.a_child0[c], self.a_nchild[c])
                self.a_nchild[c] = 0
        self._free_and_block(c0, k)
        self.o_nchild[s] = 0
        return total

    # ---------------------------------------------------------------- search
    @property
    def log_Z_upper(self):
        return self.a_logw[0] + self.a_logu[0]

    @property
    def log_Z_lower(self):
        return self.a_logw[0] + self.a_logl[0]

    @property
    def solved(self):
        return bool(self.a_solved[0])

    @property
    def can_expand(self):
        return not (self.a_solved[0] or self.a_logb[0] == NEG_INF or self.stuck
                    or (self.full and not self.memory_limited))

    def worst(self):
        """Index of the AND node the memory-limited search would collapse next (0 = none)."""
        return self._worst()

    def collapse(self, long long n):
        """Collapse internal AND node ``n`` into a frontier node; returns the nodes freed."""
        if n <= 0 or n >= self.n_and or self.a_nchild[n] <= 0:
            raise ValueError(f"node {n} is not an internal non-root AND node")
        return self._collapse(n)

    def expand(self, long long n):
        """Expand up to n nodes by the upper priority; returns the number done."""
        return self._expand_n(n)

    cdef long long _expand_n(self, long long n):
        cdef long long done = 0
        cdef double u
        cdef long long node, c, vi
        while done < n and not (self.a_solved[0] or self.a_logb[0] == NEG_INF or self.stuck
                                or (self.full and not self.memory_limited)):
            node = self._select()
            if self.memory_limited:
                while True:
                    vi = self.a_var[node] if self.a_var[node] >= 0 else self.n_vars
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
            u = self.a_logw[0] + self.a_logu[0]
            if u < self.log_Z_upper_min:
                self.log_Z_upper_min = u
        return done

    cdef long long _select(self):
        cdef long long node = 0, s, c, bs, bc
        cdef double best, val
        while self.a_nchild[node] > 0:
            best = NEG_INF
            bs = -1
            for s in range(self.a_child0[node], self.a_child0[node] + self.a_nchild[node]):
                if not self.o_solved[s]:
                    val = self.o_logb[s] - self.o_logu[s]
                    if val > best or bs < 0:
                        best = val
                        bs = s
            best = NEG_INF
            bc = -1
            for c in range(self.o_child0[bs], self.o_child0[bs] + self.o_nchild[bs]):
                if not self.a_solved[c]:
                    val = self.a_logw[c] + self.a_logb[c]
                    if val > best or bc < 0:
                        best = val
                        bc = c
            node = bc
        return node

    cdef long long _worst(self):
        """Top-down descent by the smallest relative best priority w_c b_c / u_s over internal
        AND grandchildren; returns the first node whose unsolved grandchildren are all
        open frontier nodes (0 when that is the root)."""
        cdef long long node = 0, s, c, bc
        cdef double best, val
        while True:
            best = INFINITY
            bc = -1
            for s in range(self.a_child0[node], self.a_child0[node] + self.a_nchild[node]):
                if self.o_solved[s]:
                    continue
                for c in range(self.o_child0[s], self.o_child0[s] + self.o_nchild[s]):
                    if self.a_nchild[c] > 0:
                        val = self.a_logw[c] + self.a_logb[c] - self.o_logu[s]
                        if val < best or bc < 0:
                            best = val
                            bc = c
            if bc < 0:
                return node
            node = bc

    cdef long long _collapse(self, long long n):
        """Free the OR children of AND node n and everything below; n becomes an open
        frontier node that keeps its (tightened) u_n, l_n and best subtree priority b_n.
        Updates the ancestors."""
        cdef long long k = self.a_nchild[n], o0 = self.a_child0[n], s, freed = k, cur
        for s in range(o0, o0 + k):
            freed += self._free_below_or(s)
        self._free_or_block(o0, k)
        self.a_nchild[n] = -1
        self.a_child0[n] = -1
        self.n_nodes -= freed
        self.n_collapses += 1
        cur = n
        while True:
            s = self.a_parent[cur]
            if s < 0:
                break
            self._update_or(s, True)
            cur = self.o_parent[s]
            self._update_and(cur)
        return freed

    cdef void _expand(self, long long n):
        cdef long long cur = n, v, vi, k, j, y, s, o0, a0, x, cnt, i, card, created
        cdef double m, t
        while cur >= 0 and self.a_var[cur] >= 0:
            self.assign[self.a_var[cur]] = self.a_val[cur]
            cur = self.o_parent[self.a_parent[cur]]
        v = self.a_var[n]
        vi = v if v >= 0 else self.n_vars
        k = self.ch_ptr[vi + 1] - self.ch_ptr[vi]
        created = k
        o0 = self._new_or(k) if k > 0 else 0
        for j in range(k):
            y = self.ch_idx[self.ch_ptr[vi] + j]
            s = o0 + j
            self.o_var[s] = y
            self.o_parent[s] = n
            self.o_child0[s] = -1
            self.o_nchild[s] = 0
            self.o_solved[s] = 0
            self.o_logb[s] = NEG_INF
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
                self.o_logu[s] = t
                self.o_logl[s] = t
                self.o_solved[s] = 1
            else:
                self.heur._rows(y, &self.assign[0], &self.row_h[0])
                cnt = 0
                for x in range(card):
                    if self.row_a[x] > NEG_INF and self.row_h[x] > NEG_INF:
                        cnt += 1
                if cnt == 0:
                    self.o_logu[s] = NEG_INF
                    self.o_logl[s] = NEG_INF
                    self.o_solved[s] = 1
                else:
                    a0 = self._new_and(cnt)
                    i = a0
                    for x in range(card):
                        if self.row_a[x] > NEG_INF and self.row_h[x] > NEG_INF:
                            self.a_var[i] = y
                            self.a_val[i] = x
                            self.a_logw[i] = self.row_a[x]
                            self.a_logu[i] = self.row_h[x]
                            self.a_logl[i] = NEG_INF
                            self.a_logb[i] = self.row_h[x]
                            self.a_parent[i] = s
                            self.a_child0[i] = -1
                            self.a_nchild[i] = -1
                            self.a_solved[i] = 0
                            i += 1
                    self.o_child0[s] = a0
                    self.o_nchild[s] = cnt
                    created += cnt
                    self._update_or(s, False)
        self.n_nodes += created
        self.a_child0[n] = o0
        self.a_nchild[n] = k
        cur = n
        while True:
            self._update_and(cur)
            s = self.a_parent[cur]
            if s < 0:
                break
            self._update_or(s, True)
            cur = self.o_parent[s]
        if self.n_nodes >= self.max_nodes:
            self.full = True

    cdef void _update_and(self, long long n):
        cdef long long k = self.a_nchild[n], o0 = self.a_child0[n], s
        cdef double log_u = 0.0, log_l = 0.0, best = NEG_INF, r
        cdef bint solved = True
        if k <= 0:
            return
        for s in range(o0, o0 + k):
            log_u += self.o_logu[s]
            log_l += self.o_logl[s]
            if not self.o_solved[s]:
                solved = False
                r = self.o_logb[s] - self.o_logu[s]
                if r > best:
                    best = r
        if log_u == NEG_INF:
            if not solved:
                for s in range(o0, o0 + k):
                    if not self.o_solved[s]:
                        self.n_nodes -= self._free_below_or(s)
                        self.o_solved[s] = 1
            log_l = NEG_INF
            solved = True
        if self.memory_limited:  # min / max of valid bounds (a collapsed node's are tighter)
            if self.a_logu[n] < log_u:
                log_u = self.a_logu[n]
            if self.a_logl[n] > log_l:
                log_l = self.a_logl[n]
            if log_l > log_u:
                log_l = log_u
        self.a_logu[n] = log_u
        if solved:
            self.a_logl[n] = log_u
            self.n_nodes -= k
            for s in range(o0, o0 + k):  # solved OR children may still hold blocks
                self._free_below_or(s)
            self._free_or_block(o0, k)
            self.a_nchild[n] = 0
            self.a_solved[n] = 1
            self.a_logb[n] = NEG_INF
        else:
            self.a_logl[n] = log_l
            self.a_logb[n] = log_u + best

    cdef void _update_or(self, long long s, bint count):
        cdef long long k = self.o_nchild[s], c0 = self.o_child0[s], c
        cdef double m = NEG_INF, ml = NEG_INF, bm = NEG_INF, v, t, log_u
        cdef bint solved = True
        if k <= 0:
            return
        for c in range(c0, c0 + k):
            v = self.a_logw[c] + self.a_logu[c]
            if v > m:
                m = v
            v = self.a_logw[c] + self.a_logl[c]
            if v > ml:
                ml = v
            if not self.a_solved[c]:
                solved = False
                v = self.a_logw[c] + self.a_logb[c]
                if v > bm:
                    bm = v
        if m == NEG_INF:
            log_u = NEG_INF
        else:
            t = 0.0
            for c in range(c0, c0 + k):
                t += exp(self.a_logw[c] + self.a_logu[c] - m)
            log_u = m + log(t)
        self.o_logu[s] = log_u
        if solved:
            self.o_logl[s] = log_u
            if count:
                self.n_nodes -= k
            self._free_and_block(c0, k)
            self.o_nchild[s] = 0
            self.o_solved[s] = 1
            self.o_logb[s] = NEG_INF
        else:
            if ml == NEG_INF:
                self.o_logl[s] = NEG_INF
            else:
                t = 0.0
                for c in range(c0, c0 + k):
                    t += exp(self.a_logw[c] + self.a_logl[c] - ml)
                self.o_logl[s] = ml + log(t)
            self.o_logb[s] = bm

    # ---------------------------------------------------------------- sampling
    def sample_one(self, ProposalKernel prop,       # IN  WMB proposal below open frontier nodes
                   const double[::1] u_tree,        # IN  >= n_vars uniforms (OR choices)
                   const double[::1] u_prop,        # IN  >= n_vars uniforms (proposal)
                   long long[::1] x):               # OUT assignment of the drawn variables
        """One two-step sample from q_S (Alg. 1); returns ln f(x)/q_S(x) (<= ln U_S)."""
        return self._sample(prop, &u_tree[0], &u_prop[0], &x[0])

    def dis_rounds(self, ProposalKernel prop,
                   long long n_rounds,               # IN  rounds of Alg. 1
                   long long n_exp,                  # IN  N_d expansions per round
                   long long n_samp,                 # IN  N_l samples per round
                   long long max_exp,                # IN  expansions allowed in all (-1: no limit)
                   const double[:, ::1] uniforms,    # IN  (n_rounds * n_samp, 2 * n_vars)
                   long long[::1] x,                 # WORK (n_vars,) assignment
                   double[::1] out_logw,             # OUT (n_rounds * n_samp,) ln f/q_S
                   double[::1] out_logU):            # OUT (n_rounds * n_samp,) ln U_S at each draw
        """Rounds of DIS (Alg. 1): expand up to ``n_exp`` nodes (while the memory budget
        and ``max_exp`` allow), then draw ``n_samp`` two-step samples from q_S. Sample i
        uses ``uniforms[i, :n_vars]`` for the OR choices and ``uniforms[i, n_vars:]`` for
        the proposal, so the result equals the one-call-per-step loop exactly. Stops
        early (before sampling) once the root is solved; returns the samples written."""
        cdef long long r, j, v, k, i = 0, nv = self.n_vars
        cdef double log_U
        for r in range(n_rounds):
            if n_exp > 0:
                k = n_exp if max_exp < 0 else min(n_exp, max_exp)
                if k > 0:
                    k = self._expand_n(k)
                    if max_exp >= 0:
                        max_exp -= k
            if self.a_solved[0]:
                break
            log_U = self.a_logw[0] + self.a_logu[0]
            for j in range(n_samp):
                for v in range(nv):
                    x[v] = 0
                out_logw[i] = self._sample(prop, &uniforms[i, 0], &uniforms[i, nv], &x[0])
                out_logU[i] = log_U
                i += 1
        return i

    cdef double _sample(self, ProposalKernel prop, const double* u_tree, const double* u_prop,
                        long long* x) noexcept:
        cdef long long top = 1, n, s, c, k, c0, vi, j, nst = 0, used = 0
        cdef double log_U = self.a_logw[0] + self.a_logu[0], log_h = 0.0, target, acc, best
        cdef double log_q = 0.0, log_g = 0.0
        self.stack[0] = 0
        while top > 0:
            top -= 1
            n = self.stack[top]
            if self.a_solved[n]:
                continue
            if self.a_nchild[n] < 0:
                vi = self.a_var[n] if self.a_var[n] >= 0 else self.n_vars
                for j in range(self.ch_ptr[vi], self.ch_ptr[vi + 1]):
                    self.starts[nst] = self.ch_idx[j]
                    nst += 1
                log_h += self.a_logu[n]
                continue
            for s in range(self.a_child0[n], self.a_child0[n] + self.a_nchild[n]):
                if self.o_solved[s]:
                    continue
                k = self.o_nchild[s]
                c0 = self.o_child0[s]
                if k == 1:
                    c = c0
                else:
                    target = u_tree[used]
                    used += 1
                    acc = 0.0
                    c = -1
                    for j in range(c0, c0 + k):
                        acc += exp(self.a_logw[j] + self.a_logu[j] - self.o_logu[s])
                        if target < acc:
                            c = j
                            break
                    if c < 0:
                        best = NEG_INF
                        for j in range(c0, c0 + k):
                            if self.a_logu[j] > NEG_INF and self.a_logw[j] + self.a_logu[j] > best:
                                best = self.a_logw[j] + self.a_logu[j]
                                c = j
                x[self.o_var[s]] = self.a_val[c]
                self.stack[top] = c
                top += 1
        if nst == 0:
            return log_U - log_h
        prop._draw(&self.starts[0], nst, x, u_prop, &log_q, &log_g)
        return log_U + log_g - log_h - log_q
