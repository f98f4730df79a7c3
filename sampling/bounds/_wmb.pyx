# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# distutils: libraries = m
"""Compiled kernels of the weighted mini-bucket elimination (see ``wmb.py``).

``lse_axis0`` is the power-sum elimination of a mini-bucket variable,
``lambda = rho * log sum_{x_k} exp(F / rho)`` ([1] Eq. 5), over a table viewed
as ``(card_k, n_rest)``. ``lse_axes`` is the log-sum-exp of a C-ordered table
over any set of its axes (the marginals of the backward pass and of moment
matching, [1] Sec. 4), computed in two passes over the table in memory order
without a temporary of the table's size. ``cond_add`` turns a mini-bucket table
into its conditional belief plus an incoming backward message in place,
``broadcast_sum`` sums log tables over sub-scopes into a table in one pass, and
``match_stats`` gathers the moment-matching marginals and conditional entropies of
a mini-bucket's belief ([1] Sec. 4, Eq. 9). Inputs are
validated by the caller (shapes are checked here); the pure-Python twins are in
``_wmb_py``.

[1] Q. Liu and A. Ihler, "Bounding the partition function using Hölder's
    inequality", ICML 2011.
"""
from libc.math cimport exp, log, INFINITY
from libc.stdlib cimport malloc, free

cdef extern from *:
    """
    /* branch-free (maxsd / minsd): on random tables a compare-and-branch mispredicts */
    static inline double wmb_max(double a, double b) { return a > b ? a : b; }
    static inline double wmb_min(double a, double b) { return a > b ? b : a; }
    """
    double wmb_max(double a, double b) nogil
    double wmb_min(double a, double b) nogil

DEF MAX_DIMS = 64


def lse_axis0(const double[:, ::1] table,   # IN  (card, n): log values, -inf allowed
              double weight,                # IN  rho > 0
              double[::1] out,              # OUT (n,): rho * log sum_i exp(table[i, j] / rho)
              double[::1] work):            # INOUT (n,): scratch
    """``out[j] = weight * log(sum_i exp(table[i, j] / weight))``; -inf where a column is all -inf.

    Cardinalities 2 and 3 (most variables of the UAI pedigrees and grids) take a
    column-wise path that skips the exp of the column's maximum (it is 1):
    ``out = hi + weight * log(1 + sum of the others' exp)``.
    """
    cdef Py_ssize_t card = table.shape[0], n = table.shape[1], i, j
    cdef double inv = 1.0 / weight, v, m, a, b, c, hi, lo, mid, e
    if out.shape[0] != n or work.shape[0] != n:
        raise ValueError(f"out and work must have length {n}; got {out.shape[0]} and {work.shape[0]}")
    with nogil:
        if card == 2:
            for j in range(n):
                a = table[0, j]
                b = table[1, j]
                hi = wmb_max(a, b)
                lo = wmb_min(a, b)
                if hi > -INFINITY:
                    e = exp((lo - hi) * inv)
                    out[j] = hi + weight * log(1.0 + e)
                    work[j] = e
                else:
                    out[j] = -INFINITY
                    work[j] = 0.0
        elif card == 3:
            for j in range(n):
                a = table[0, j]
                b = table[1, j]
                c = table[2, j]
                hi = wmb_max(a, b)
                lo = wmb_min(a, b)
                mid = wmb_min(c, hi)  # c > hi ? hi : c
                hi = wmb_max(c, hi)
                if hi > -INFINITY:
                    e = exp((lo - hi) * inv) + exp((mid - hi) * inv)
                    out[j] = hi + weight * log(1.0 + e)
                    work[j] = e
                else:
                    out[j] = -INFINITY
                    work[j] = 0.0
        else:
            for j in range(n):
                out[j] = -INFINITY
                work[j] = 0.0
            for i in range(card):
                for j in range(n):
                    v = table[i, j]
                    out[j] = wmb_max(v, out[j])
            for i in range(card):
                for j in range(n):
                    m = out[j]
                    if m > -INFINITY:
                        work[j] += exp((table[i, j] - m) * inv)
            for j in range(n):
                if out[j] > -INFINITY:
                    out[j] = out[j] + weight * log(work[j])


cdef Py_ssize_t _merge_dims(const Py_ssize_t[::1] shape, const unsigned char[::1] reduce,
                            Py_ssize_t* lens, Py_ssize_t* ostride, Py_ssize_t* total,
                            Py_ssize_t* nout) except -1:
    """Drop length-1 axes, merge neighbours of the same kind; out strides (0 on reduced axes).

    Returns the number of merged dimensions (>= 1); ``total`` and ``nout`` get the
    table's and the output's number of entries.
    """
    cdef Py_ssize_t nd = shape.shape[0], i, d = 0, s
    cdef unsigned char red[MAX_DIMS]
    if reduce.shape[0] != nd:
        raise ValueError(f"reduce must have one flag per axis ({nd}); got {reduce.shape[0]}")
    if nd > MAX_DIMS:
        raise ValueError(f"at most {MAX_DIMS} axes are supported; got {nd}")
    total[0] = 1
    for i in range(nd):
        if shape[i] < 0:
            raise ValueError(f"axis lengths must be >= 0; got {shape[i]} at axis {i}")
        total[0] *= shape[i]
        if shape[i] == 1:
            continue
        if d > 0 and red[d - 1] == (reduce[i] != 0):
            lens[d - 1] *= shape[i]
        else:
            lens[d] = shape[i]
            red[d] = reduce[i] != 0
            d += 1
    if d == 0:
        lens[0] = 1
        red[0] = 0
        d = 1
    s = 1
    for i in range(d - 1, -1, -1):
        if red[i]:
            ostride[i] = 0
        else:
            ostride[i] = s
            s *= lens[i]
    nout[0] = s
    return d


cdef inline Py_ssize_t _next_row(Py_ssize_t* idx, const Py_ssize_t* lens, const Py_ssize_t* ostride,
                                 Py_ssize_t d, Py_ssize_t ob) noexcept nogil:
    """Advance the odometer ``idx`` over the outer axes ``0..d-2`` by one row; returns the
    output offset ``ob`` moved along ``ostride`` (0 on the reduced axes)."""
    cdef Py_ssize_t k = d - 2
    while k >= 0:
        idx[k] += 1
        ob += ostride[k]
        if idx[k] < lens[k]:
            break
        ob -= ostride[k] * lens[k]
        idx[k] = 0
        k -= 1
    return ob


def lse_axes(const double[::1] table,            # IN  (prod(shape),): C-ordered log table, -inf allowed
             const Py_ssize_t[::1] shape,        # IN  (nd,): axis lengths
             const unsigned char[::1] reduce,    # IN  (nd,): 1 on the axes summed out
             double weight,                      # IN  rho > 0
             double[::1] out,                    # OUT (n_kept,): rho * log sum over the reduced axes of exp(table / rho)
             double[::1] work):                  # INOUT (n_kept,): scratch
    """``out = weight * log sum_{reduced axes} exp(table / weight)`` (kept axes in table order); -inf where all are -inf."""
    cdef Py_ssize_t lens[MAX_DIMS]
    cdef Py_ssize_t ostride[MAX_DIMS]
    cdef Py_ssize_t idx[MAX_DIMS]
    cdef Py_ssize_t total, nout, d, inner, nouter, o, j, k, ib, ob
    cdef bint inner_red
    cdef double m, s, v, inv = 1.0 / weight
    d = _merge_dims(shape, reduce, lens, ostride, &total, &nout)
    if table.shape[0] != total:
        raise ValueError(f"table must have {total} entries; got {table.shape[0]}")
    if out.shape[0] != nout or work.shape[0] != nout:
        raise ValueError(f"out and work must have length {nout}; got {out.shape[0]} and {work.shape[0]}")
    for j in range(nout):
        out[j] = -INFINITY
        work[j] = 0.0
    if total == 0:
        return
    with nogil:
        inner = lens[d - 1]
        inner_red = ostride[d - 1] == 0
        nouter = total // inner
        # pass 1: maxima
        for k in range(d):
            idx[k] = 0
        ib = 0
        ob = 0
        for o in range(nouter):
            if inner_red:
                m = out[ob]
                for j in range(inner):
                    v = table[ib + j]
                    m = wmb_max(v, m)
                out[ob] = m
            else:
                for j in range(inner):
                    v = table[ib + j]
                    out[ob + j] = wmb_max(v, out[ob + j])
            ib += inner
            ob = _next_row(idx, lens, ostride, d, ob)
        # pass 2: sums of exp(table - max)
        ib = 0
        ob = 0
        for o in range(nouter):
            if inner_red:
                m = out[ob]
                if m > -INFINITY:
                    s = work[ob]
                    for j in range(inner):
                        s = s + exp((table[ib + j] - m) * inv)
                    work[ob] = s
            else:
                for j in range(inner):
                    m = out[ob + j]
                    if m > -INFINITY:
                        work[ob + j] = work[ob + j] + exp((table[ib + j] - m) * inv)
            ib += inner
            ob = _next_row(idx, lens, ostride, d, ob)
        for j in range(nout):
            if out[j] > -INFINITY:
                out[j] = out[j] + weight * log(work[j])


def cond_add(double[:, ::1] table,      # INOUT (card, n): F in, log b(x_k | rest) (+ msg) out
             const double[::1] lam,     # IN  (n,): the message rho * log sum_k exp(F / rho)
             double weight,             # IN  rho > 0
             const double[::1] msg,     # IN  (n,) or (0,): added to every row (empty: nothing added)
             double log_card):          # IN  log(card): a -inf message gives the uniform -log_card
    """``table[i, j] = (table[i, j] - lam[j]) / weight + msg[j]``, ``-log_card + msg[j]`` where ``lam[j]`` is -inf."""
    cdef Py_ssize_t card = table.shape[0], n = table.shape[1], i, j
    cdef double inv = 1.0 / weight, v
    cdef bint scale = weight != 1.0
    cdef bint add = msg.shape[0] != 0
    if lam.shape[0] != n or (add and msg.shape[0] != n):
        raise ValueError(f"lam (and a non-empty msg) must have length {n}; got {lam.shape[0]} and {msg.shape[0]}")
    with nogil:
        for i in range(card):
            for j in range(n):
                if lam[j] > -INFINITY:
                    v = table[i, j] - lam[j]
                    if scale:
                        v = v * inv
                else:
                    v = -log_card
                if add:
                    v = v + msg[j]
                table[i, j] = v


def match_stats(const double[:, ::1] F,        # IN  (card, n): mini-bucket table F_kj, -inf allowed
                const double[::1] nu,          # IN  (n,): backward information nu_kj (message scope)
                const double[::1] lam,         # IN  (n,): rho * log sum_k exp(F / rho)
                double weight,                 # IN  rho > 0
                const Py_ssize_t[::1] omap,    # IN  (n,): offset in the common marginal of each rest entry
                Py_ssize_t ostride0,           # IN  stride of x_k in the common marginal
                double[::1] mx,                # OUT (n_common,): max of log b over each marginal slice
                double[::1] work,              # OUT (n_common,): sum exp(log b - mx) per slice
                double[::1] hw):               # OUT (n_common,): sum exp(log b - mx) * log b(x_k|rest) per slice
    """Moment-matching and entropy statistics of ``log b = (F + nu) / rho`` without a table-size temporary.

    Per entry ``(i, j)`` of ``F`` (``i`` = x_k, ``j`` = the rest in C order), with slice
    ``o = i * ostride0 + omap[j]`` of the common marginal: ``mx[o] = max log b``,
    ``work[o] = sum exp(log b - mx[o])``, ``hw[o] = sum exp(log b - mx[o]) * c`` over the
    entries whose conditional ``c = (F - lam[j]) / rho`` is finite. A slice whose entries are
    all -inf keeps ``mx = -inf`` and zero sums.
    """
    cdef Py_ssize_t card = F.shape[0], n = F.shape[1], nout = mx.shape[0], i, j, o, top = 0
    cdef double inv = 1.0 / weight, v, mo, e, c
    if nu.shape[0] != n or lam.shape[0] != n or omap.shape[0] != n:
        raise ValueError(f"nu, lam and omap must have length {n}; got {nu.shape[0]}, {lam.shape[0]} and {omap.shape[0]}")
    if work.shape[0] != nout or hw.shape[0] != nout:
        raise ValueError(f"mx, work and hw must have one length; got {nout}, {work.shape[0]} and {hw.shape[0]}")
    for j in range(n):
        if omap[j] < 0:
            raise ValueError(f"omap must be >= 0; got {omap[j]} at {j}")
        if omap[j] > top:
            top = omap[j]
    if card > 0 and n > 0 and (ostride0 < 0 or ostride0 * (card - 1) + top >= nout):
        raise ValueError(f"the marginal offsets reach {ostride0 * (card - 1) + top}; mx has {nout} entries")
    with nogil:
        for o in range(nout):
            mx[o] = -INFINITY
            work[o] = 0.0
            hw[o] = 0.0
        for i in range(card):
            for j in range(n):
                v = (F[i, j] + nu[j]) * inv
                o = i * ostride0 + omap[j]
                mx[o] = wmb_max(v, mx[o])
        for i in range(card):
            for j in range(n):
                o = i * ostride0 + omap[j]
                mo = mx[o]
                if mo > -INFINITY:
                    v = (F[i, j] + nu[j]) * inv
                    e = exp(v - mo)
                    work[o] = work[o] + e
                    c = (F[i, j] - lam[j]) * inv
                    if c > -INFINITY and c < INFINITY:
                        hw[o] = hw[o] + e * c


def broadcast_sum(double[::1] out,                   # INOUT (prod(shape),): C-ordered table over the out scope
                  const Py_ssize_t[::1] shape,       # IN  (nd,): axis lengths of out
                  list tables,                       # IN  nt C-contiguous float64 arrays (flat), over sub-scopes
                  const Py_ssize_t[:, ::1] tstrides, # IN  (nt, nd): stride of each table per out axis (0: absent)
                  bint add):                         # IN  add into out (True) or start from 0.0 (False)
    """``out[x] = (out[x] or 0.0) + tables[0][...] + tables[1][...] + ...`` in that order, one pass over ``out``."""
    cdef Py_ssize_t nd = shape.shape[0], nt = len(tables), total = 1, i, k, t, o, j, inner, nouter, d = 0, span
    cdef Py_ssize_t idx[MAX_DIMS]
    cdef Py_ssize_t lens[MAX_DIMS]
    cdef bint same
    cdef double v
    cdef const double[::1] mv
    if nd > MAX_DIMS:
        raise ValueError(f"at most {MAX_DIMS} axes are supported; got {nd}")
    if tstrides.shape[0] != nt or tstrides.shape[1] != nd:
        raise ValueError(f"tstrides must have shape ({nt}, {nd}); got ({tstrides.shape[0]}, {tstrides.shape[1]})")
    for i in range(nd):
        if shape[i] < 0:
            raise ValueError(f"axis lengths must be >= 0; got {shape[i]} at axis {i}")
        total *= shape[i]
    if out.shape[0] != total:
        raise ValueError(f"out must have {total} entries; got {out.shape[0]}")
    if total == 0:
        return
    cdef const double** ptr = <const double**> malloc((nt + 1) * sizeof(double*))
    cdef Py_ssize_t* strd = <Py_ssize_t*> malloc((nt + 1) * MAX_DIMS * sizeof(Py_ssize_t))
    cdef Py_ssize_t* tb = <Py_ssize_t*> malloc((nt + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t* istr = <Py_ssize_t*> malloc((nt + 1) * sizeof(Py_ssize_t))
    if ptr == NULL or strd == NULL or tb == NULL or istr == NULL:
        free(ptr); free(strd); free(tb); free(istr)
        raise MemoryError("broadcast_sum: no memory for its table pointers")
    try:
        for t in range(nt):
            mv = tables[t]
            span = 0
            for i in range(nd):
                if tstrides[t, i] < 0:
                    raise ValueError(f"strides must be >= 0; got {tstrides[t, i]} for table {t} at axis {i}")
                span += (shape[i] - 1) * tstrides[t, i]
            if span >= mv.shape[0]:
                raise ValueError(f"table {t} has {mv.shape[0]} entries; its strides reach entry {span}")
            ptr[t] = &mv[0]
        # drop length-1 axes; merge an axis into the previous one when every table's strides line up
        for i in range(nd):
            if shape[i] == 1:
                continue
            same = d > 0
            if same:
                for t in range(nt):
                    if strd[t * MAX_DIMS + d - 1] != tstrides[t, i] * shape[i]:
                        same = False
                        break
            if same:
                lens[d - 1] *= shape[i]
                for t in range(nt):
                    strd[t * MAX_DIMS + d - 1] = tstrides[t, i]
            else:
                lens[d] = shape[i]
                for t in range(nt):
                    strd[t * MAX_DIMS + d] = tstrides[t, i]
                d += 1
        if d == 0:
            lens[0] = 1
            for t in range(nt):
                strd[t * MAX_DIMS] = 0
            d = 1
        inner = lens[d - 1]
        nouter = total // inner
        with nogil:
            for t in range(nt):
                tb[t] = 0
                istr[t] = strd[t * MAX_DIMS + d - 1]
            for k in range(d):
                idx[k] = 0
            o = 0
            for i in range(nouter):
                for j in range(inner):
                    v = out[o + j] if add else 0.0
                    for t in range(nt):
                        v = v + ptr[t][tb[t] + j * istr[t]]
                    out[o + j] = v
                o += inner
                k = d - 2
                while k >= 0:
                    idx[k] += 1
                    for t in range(nt):
                        tb[t] += strd[t * MAX_DIMS + k]
                    if idx[k] < lens[k]:
                        break
                    for t in range(nt):
                        tb[t] -= strd[t * MAX_DIMS + k] * lens[k]
                    idx[k] = 0
                    k -= 1
    finally:
        free(ptr)
        free(strd)
        free(tb)
        free(istr)


def backward_info(const double[::1] lm,     # IN  (n,): rho-free log b_parent(sep), -inf allowed
                  const double[::1] lam,    # IN  (n,): the message lambda_kj, -inf allowed
                  double weight,            # IN  rho_kj
                  double[::1] out):         # OUT (n,): nu_kj
    """``out[j] = weight * lm[j] - lam[j]``, -inf where ``lm[j]`` or ``lam[j]`` is -inf."""
    cdef Py_ssize_t n = lm.shape[0], j
    if lam.shape[0] != n or out.shape[0] != n:
        raise ValueError(f"lam and out must have length {n}; got {lam.shape[0]} and {out.shape[0]}")
    with nogil:
        for j in range(n):
            if lm[j] > -INFINITY and lam[j] > -INFINITY:
                out[j] = weight * lm[j] - lam[j]
            else:
                out[j] = -INFINITY
