# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Row mode of the factor kernel: one mention's id lists scattered into dense tables.

``row_set(d, i)`` writes the weights of mention i's id lists (and the profiles of its
coauthor component) into per-block tables indexed by id (0.0 = absent); a factor
(i, j) then walks j's lists once, looking each id up, instead of merging two sorted
lists.  The shared ids come in the same increasing order and an absent id adds
0.0 * w = +-0.0, which leaves a sum that starts at +0.0 unchanged, so the values are
the merges' bit for bit.  ``row_tables`` refuses (``scatter_ok`` = 0, merges kept)
when an id list is not strictly increasing, an id is negative, a weight is not
finite, or the tables would take more than ``ROW_MAX_BYTES``.
"""
from coref.factors._block cimport BlockData, Mention, ROW_MAX_BYTES
from coref.factors._lists cimport scan_field, scatter


cdef inline void row_toggle(BlockData* d, Py_ssize_t i, bint on) noexcept nogil:
    """Scatter (``on``) or clear the entries of mention i in every row table."""
    cdef const Mention* m = d.men + i
    cdef long long k
    cdef int c = m.comp1
    scatter(d.wm_co, d.co_ids, d.co_w, m.co, m.n_co, on)
    scatter(d.wm_ti, d.ti_ids, d.ti_w, m.ti, m.n_ti, on)
    scatter(d.wm_ve, d.ve_ids, d.ve_w, m.ve, m.n_ve, on)
    scatter(d.wm_af, d.af_ids, d.af_w, m.af, m.n_af, on)
    scatter(d.wm_ab, d.ab_ids, d.ab_w, m.ab, m.n_ab, on)
    scatter(d.wm_kw, d.kw_ids, d.kw_w, m.kw, m.n_kw, on)
    scatter(d.wm_va, d.va_ids, d.va_w, m.va, m.n_va, on)
    scatter(d.wm_vt, d.vt_ids, d.vt_w, m.vt, m.n_vt, on)
    for k in range(m.co, m.co + m.n_co):
        d.hm_co[d.co_ids[k]] = on
    for k in range(m.ve, m.ve + m.n_ve):
        d.hm_ve[d.ve_ids[k]] = on
    for k in range(m.ck, m.ck + m.n_ck):
        d.hm_ck[d.ck_ids[k]] = on
        d.fm_ck[d.ck_ids[k]] = d.ck_fn[k] if on else 0
    scatter(d.wm_pt, d.pt_ids, d.pt_w, d.pt_ptr[c], d.pt_ptr[c + 1] - d.pt_ptr[c], on)
    scatter(d.wm_pv, d.pv_ids, d.pv_w, d.pv_ptr[c], d.pv_ptr[c + 1] - d.pv_ptr[c], on)
    scatter(d.wm_pa, d.pa_ids, d.pa_w, d.pa_ptr[c], d.pa_ptr[c + 1] - d.pa_ptr[c], on)


cdef inline void row_set(BlockData* d, Py_ssize_t i) noexcept nogil:
    """Scatter the id lists of mention i (and the profiles of its comp1) into the row tables.

    Factors (i, j) then look the ids of j up instead of merging (same values, bit for
    bit); call ``row_clear(d)`` before scattering another mention.  No-op when the
    block has no row tables (``scatter_ok`` = 0).
    """
    if not d.scatter_ok:
        return
    row_toggle(d, i, True)
    d.row = i


cdef inline void row_clear(BlockData* d) noexcept nogil:
    """Undo ``row_set``: every row table back to zero, row mode off."""
    if d.row < 0:
        return
    row_toggle(d, d.row, False)
    d.row = -1


cdef inline void row_tables(BlockData* d, list keep, Py_ssize_t n_pt, Py_ssize_t n_pv,
                            Py_ssize_t n_pa) except *:
    """Allocate the row tables of ``row_set`` (zeros), or leave ``scatter_ok`` = 0.

    ``n_pt``, ``n_pv``, ``n_pa``: rows of the component profiles (one per comp1 label).
    The arrays are appended to ``keep``, which must outlive ``d``.
    """
    import numpy as np
    cdef int mco = -1, mti = -1, mve = -1, maf = -1, mck = -1, mab = -1, mkw = -1, mv = -1
    cdef int mpv = -1, mpa = -1
    cdef bint ok
    cdef double[::1] a
    cdef unsigned char[::1] h
    cdef int[::1] f
    with nogil:
        ok = (scan_field(d.co_ptr, d.co_ids, d.co_w, d.n, &mco)
              and scan_field(d.ti_ptr, d.ti_ids, d.ti_w, d.n, &mti)
              and scan_field(d.ve_ptr, d.ve_ids, d.ve_w, d.n, &mve)
              and scan_field(d.af_ptr, d.af_ids, d.af_w, d.n, &maf)
              and scan_field(d.ck_ptr, d.ck_ids, NULL, d.n, &mck)
              and scan_field(d.ab_ptr, d.ab_ids, d.ab_w, d.n, &mab)
              and scan_field(d.kw_ptr, d.kw_ids, d.kw_w, d.n, &mkw)
              and scan_field(d.va_ptr, d.va_ids, d.va_w, d.n, &mv)
              and scan_field(d.vt_ptr, d.vt_ids, d.vt_w, d.n, &mv)
              # profiles: title words share the ti table's code space (mti: the larger)
              and scan_field(d.pt_ptr, d.pt_ids, d.pt_w, n_pt, &mti)
              and scan_field(d.pv_ptr, d.pv_ids, d.pv_w, n_pv, &mpv)
              and scan_field(d.pa_ptr, d.pa_ids, d.pa_w, n_pa, &mpa))
    if not ok:
        return
    n_w = (<Py_ssize_t>mco + 1 + 2 * (mti + 1) + mve + 1 + maf + 1 + mab + 1 + mkw + 1 + 2 * (mv + 1)
           + mpv + 1 + mpa + 1 + 1)
    if n_w * 8 + (<Py_ssize_t>mco + mve + mck + 4) * 5 > ROW_MAX_BYTES:
        return
    arr = np.zeros(n_w)
    keep.append(arr)
    a = arr
    d.wm_co = &a[0]
    d.wm_ti = d.wm_co + mco + 1
    d.wm_ve = d.wm_ti + mti + 1
    d.wm_af = d.wm_ve + mve + 1
    d.wm_ab = d.wm_af + maf + 1
    d.wm_kw = d.wm_ab + mab + 1
    d.wm_va = d.wm_kw + mkw + 1
    d.wm_vt = d.wm_va + mv + 1
    d.wm_pt = d.wm_vt + mv + 1
    d.wm_pv = d.wm_pt + mti + 1
    d.wm_pa = d.wm_pv + mpv + 1
    harr = np.zeros(mco + 1 + mve + 1 + mck + 1 + 1, np.uint8)
    keep.append(harr)
    h = harr
    d.hm_co = &h[0]
    d.hm_ve = d.hm_co + mco + 1
    d.hm_ck = d.hm_ve + mve + 1
    farr = np.zeros(mck + 1 + 1, np.int32)
    keep.append(farr)
    f = farr
    d.fm_ck = &f[0]
    d.scatter_ok = True
