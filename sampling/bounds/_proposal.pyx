# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled kernel: one draw from the WMB mixture proposal below a set of pseudo-tree
nodes, plus the conditional cost g of what was drawn (Lou et al. 2017, Eq. 7 and 10).

Attributes are declared in ``_proposal.pxd`` (the search tree of ``_aobfs.pyx`` calls
``_draw`` directly). Reference twin: ``_proposal_py.py`` (same class, pure Python),
tested against this one. The caller validates every array once (see
``proposal.FastProposal``).
"""
from libc.math cimport exp, log, INFINITY
from libc.stdlib cimport malloc, free


cdef const double** pin_tables(list keep) except NULL:
    """Pointers to the data of the C-contiguous float64 tables in ``keep`` (one more slot
    than tables, malloc'ed: the caller frees it and keeps ``keep`` alive while it is used)."""
    cdef Py_ssize_t i, n = len(keep)
    cdef const double[::1] mv
    cdef const double** tab = <const double**> malloc((n + 1) * sizeof(double*))
    if tab == NULL:
        raise MemoryError()
    for i in range(n):
        mv = keep[i]
        tab[i] = &mv[0]
    return tab


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


    def __cinit__(self, cards, pre, pos, size, comp_ptr, comp_lw, comp_kstride, comp_vptr,
                  comp_vars, comp_strides, tables, bucket_ptr, bucket_fac, f_off, f_vptr,
                  f_vars, f_strides, f_flat, row):
        self._keep = list(tables)
        self.tab = pin_tables(self._keep)
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
        self.ex = row.copy()  # work space: exp(row - max) of one draw

    def __dealloc__(self):
        if self.tab != NULL:
            free(self.tab)

    def sample(self, const long long[::1] starts,   # IN  variables whose subtrees are drawn
               long long[::1] x,                    # INOUT assignment (ancestors set)
               const double[::1] uniforms):         # IN  >= total subtree size uniforms
        """Draw the subtrees of ``starts`` in place; return (ln q, ln g) of the draw."""
        cdef double log_q = 0.0, log_g = 0.0
        if starts.shape[0] > 0:
            self._draw(&starts[0], starts.shape[0], &x[0], &uniforms[0], &log_q, &log_g, False)
        return log_q, log_g

    def sample_batch(self, const long long[::1] starts,    # IN  variables whose subtrees are drawn
                     const double[:, ::1] uniforms,         # IN  (n, >= total subtree size)
                     long long[::1] x,                      # WORK (n_vars,) assignment
                     double log_const,                      # IN  constant added to every weight
                     double[::1] out):                      # OUT (n,) ln f(x_i) - ln q(x_i)
        """``n`` independent draws from the all-zero assignment (WMB-IS, Eq. 7-9): the same
        as ``n`` calls of :meth:`sample` with ``x`` zeroed and row ``i`` of ``uniforms``.
        A draw stops at the first zero factor (its weight is 0 whatever follows), so ``x``
        is not the full draw afterwards."""
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
            self._draw(&starts[0], starts.shape[0], &x[0], &uniforms[i, 0], &log_q, &log_g, True)
            out[i] = -INFINITY if log_g == -INFINITY else log_const + log_g - log_q

    cdef void _draw(self, const long long* starts, Py_ssize_t n_starts, long long* x,
                    const double* uniforms, double* out_q, double* out_g,
                    bint stop_at_zero) noexcept:
        """Draw the subtrees of ``starts`` in preorder; ``out_g`` = ln g of the draw and
        ``out_q`` = its ln q. With ``stop_at_zero`` the draw ends at the first variable whose
        arc weight is 0: then ``out_g`` is -inf and ``out_q`` covers the variables drawn so
        far (the weight g/q is 0 either way; on pedigrees over half the WMB-IS draws end so).
        """
        cdef Py_ssize_t s, i, k, v, c, j, f, xv, card, used = 0
        cdef long long base, idx
        cdef double log_q = 0.0, log_g = 0.0, m, tot, u, acc, val, lv
        cdef double* row = &self.row[0]
        cdef double* ex = &self.ex[0]
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
                    for xv in range(card):  # each exp once (the same numbers as twice)
                        ex[xv] = exp(row[xv] - m)
                        tot += ex[xv]
                    u = uniforms[used] * tot
                    used += 1
                    acc = 0.0
                    idx = card - 1
                    for xv in range(card):
                        acc += ex[xv]
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
                if stop_at_zero and log_g == -INFINITY:
                    out_q[0] = log_q
                    out_g[0] = log_g
                    return
        out_q[0] = log_q
        out_g[0] = log_g
