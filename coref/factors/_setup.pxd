# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Set up the kernel's view of one encoded block: ``make_block``.

``make_block`` points a ``BlockData`` at the arrays of an ``EncodedBlock`` (typed
memoryviews check dtype and contiguity), packs each mention's scalars, list locations
and id-list signatures into one record (``Mention``), and attaches the component memo
tables (``memo_arrays``) and, on request, the row tables (``coref.factors._rows``).
None of this changes a value: it only decides how the features are computed.
"""
from libc.math cimport log
from libc.stdint cimport uint64_t

from coref.factors._block cimport (BlockData, Mention, N_FEATURES, N_SAT, MEMO_CC, SIG_CO, SIG_TI,
                                   SIG_VE, SIG_AF, SIG_CK, SIG_AB, SIG_KW, SIG_VA, SIG_VT)
from coref.factors._lists cimport fill_sig
from coref.factors._rows cimport row_tables as attach_row_tables


cdef inline void fill_list(Mention* m, int sig, long long* start, int* length,
                           const long long* ptr, const int* ids, Py_ssize_t r) noexcept nogil:
    """Signature, start and length of row r of a CSR id list, into record m."""
    fill_sig(m.sig + sig, ptr, ids, r)
    start[0] = ptr[r]
    length[0] = <int>(ptr[r + 1] - ptr[r])


cdef inline void fill_records(BlockData* d, Mention* men) noexcept nogil:
    """Copy every mention's scalars, list locations and signatures into its record."""
    cdef Py_ssize_t r
    cdef Mention* m
    for r in range(d.n):
        m = men + r
        fill_list(m, SIG_CO, &m.co, &m.n_co, d.co_ptr, d.co_ids, r)
        fill_list(m, SIG_TI, &m.ti, &m.n_ti, d.ti_ptr, d.ti_ids, r)
        fill_list(m, SIG_VE, &m.ve, &m.n_ve, d.ve_ptr, d.ve_ids, r)
        fill_list(m, SIG_AF, &m.af, &m.n_af, d.af_ptr, d.af_ids, r)
        fill_list(m, SIG_CK, &m.ck, &m.n_ck, d.ck_ptr, d.ck_ids, r)
        fill_list(m, SIG_AB, &m.ab, &m.n_ab, d.ab_ptr, d.ab_ids, r)
        fill_list(m, SIG_KW, &m.kw, &m.n_kw, d.kw_ptr, d.kw_ids, r)
        fill_list(m, SIG_VA, &m.va, &m.n_va, d.va_ptr, d.va_ids, r)
        fill_list(m, SIG_VT, &m.vt, &m.n_vt, d.vt_ptr, d.vt_ids, r)
        m.venue_id = d.venue_id[r]
        m.affil_id = d.affil_id[r]
        m.year = d.year[r]
        m.first_code = d.first_code[r]
        m.first_init = d.first_init[r]
        m.comp1 = d.comp1[r]
        m.comp2 = d.comp2[r]
        m.comp3 = d.comp3[r]
        m.init_code = d.init_code[r]
        m.init_len = d.init_len[r]
        m.mid_init = d.mid_init[r]
        m.given_code = d.given_code[r]
        m.paper = d.paper_code[r]
        m.comp_idx = d.comp_idx[r] if d.comp_idx != NULL else 0
        m.comp1_logsize = d.comp1_logsize[r]
        m.name_rarity = d.name_rarity[r]
        m.init_amb = d.init_amb[r]


cdef inline tuple memo_arrays(object comp1, Py_ssize_t memo_max_bytes):
    """The component memo tables of a block: ``(n_comp, comp_idx, cc_memo, mc_memo)``.

    comp_idx: int32 (n,), the dense index of each mention's comp1 label; cc_memo:
    float64 (n_comp^2 MEMO_CC,) and mc_memo: float64 (n n_comp,), NaN = not computed,
    each None when it would take more than ``memo_max_bytes``.
    """
    import numpy as np
    cdef Py_ssize_t n = len(comp1), n_comp
    uniq, inv = np.unique(np.asarray(comp1), return_inverse=True)
    n_comp = len(uniq)
    comp_idx_arr = np.ascontiguousarray(inv.reshape(-1), dtype=np.int32)
    cc_arr = mc_arr = None
    if n_comp * n_comp * MEMO_CC * 8 <= memo_max_bytes:
        cc_arr = np.full(n_comp * n_comp * MEMO_CC, np.nan)
    if n * n_comp * 8 <= memo_max_bytes:
        mc_arr = np.full(n * n_comp, np.nan)
    return (n_comp, comp_idx_arr, cc_arr, mc_arr)


cdef inline const int* int_field(object enc, str name) except? NULL:
    """Pointer to the int32 array ``enc.<name>`` (NULL when empty)."""
    cdef const int[::1] v = getattr(enc, name)
    return &v[0] if v.shape[0] > 0 else NULL


cdef inline const double* dbl_field(object enc, str name) except? NULL:
    """Pointer to the float64 array ``enc.<name>`` (NULL when empty)."""
    cdef const double[::1] v = getattr(enc, name)
    return &v[0] if v.shape[0] > 0 else NULL


cdef inline Py_ssize_t csr_field(object enc, str key, const long long** ptr, const int** ids,
                                 const double** w) except -1:
    """Point ptr / ids / w at the CSR list ``enc.<key>_ptr`` / ``_ids`` / ``_w``; return its rows."""
    cdef const long long[::1] p = getattr(enc, key + "_ptr")
    ids[0] = int_field(enc, key + "_ids")
    if w != NULL:
        w[0] = dbl_field(enc, key + "_w")
    ptr[0] = &p[0] if p.shape[0] > 0 else NULL
    return p.shape[0] - 1


cdef inline void paper_arrays(BlockData* d, object enc, list keep) except *:
    """Point d at the block's paper mates (``EncodedBlock.mate_ptr`` / ``mate_idx``,
    ``coref.factors.papers``) and a zeroed flag per cluster label, when it has any
    (otherwise they stay NULL)."""
    import numpy as np
    cdef const long long[::1] ptr, idx
    cdef char[::1] flags
    mate_ptr, mate_idx = enc.mate_ptr, enc.mate_idx
    if mate_ptr is None:
        return
    forb = np.zeros(d.n + 1, dtype=np.int8)
    keep.extend((mate_ptr, mate_idx, forb))
    ptr, idx, flags = mate_ptr, mate_idx, forb
    d.mate_ptr = &ptr[0]
    d.mate_idx = &idx[0]
    d.forb = &flags[0]


cdef inline BlockData make_block(object enc, const double[::1] theta, double bias,
                                 list keep, Py_ssize_t memo_max_bytes,
                                 bint row_tables=False, object shared=None) except *:
    """Point a BlockData at the arrays of an EncodedBlock (which must outlive it).

    Also builds the per-mention id-list signatures and, when each table fits in
    ``memo_max_bytes`` (0 = no memo), the component memo tables, unless ``shared``
    gives them (``memo_arrays`` of this encoding, kept by ``share_memo``); these arrays
    are appended to ``keep``, which the caller must hold while the BlockData is used.
    ``row_tables``: also allocate the tables of ``row_set`` (when the block allows).
    """
    import numpy as np
    cdef BlockData d
    cdef unsigned char[::1] men_buf
    cdef int[::1] comp_idx
    cdef double[::1] cc_memo, mc_memo
    cdef Py_ssize_t n_pt, n_pv, n_pa
    csr_field(enc, "co", &d.co_ptr, &d.co_ids, &d.co_w)
    csr_field(enc, "ti", &d.ti_ptr, &d.ti_ids, &d.ti_w)
    csr_field(enc, "ve", &d.ve_ptr, &d.ve_ids, &d.ve_w)
    csr_field(enc, "af", &d.af_ptr, &d.af_ids, &d.af_w)
    n_pt = csr_field(enc, "pt", &d.pt_ptr, &d.pt_ids, &d.pt_w)
    n_pv = csr_field(enc, "pv", &d.pv_ptr, &d.pv_ids, &d.pv_w)
    n_pa = csr_field(enc, "pa", &d.pa_ptr, &d.pa_ids, &d.pa_w)
    csr_field(enc, "ck", &d.ck_ptr, &d.ck_ids, &d.ck_w)
    csr_field(enc, "ab", &d.ab_ptr, &d.ab_ids, &d.ab_w)
    csr_field(enc, "kw", &d.kw_ptr, &d.kw_ids, &d.kw_w)
    csr_field(enc, "va", &d.va_ptr, &d.va_ids, &d.va_w)
    csr_field(enc, "vt", &d.vt_ptr, &d.vt_ids, &d.vt_w)
    d.ck_fn = int_field(enc, "ck_fn")
    d.venue_id = int_field(enc, "venue_id")
    d.affil_id = int_field(enc, "affil_id")
    d.year = int_field(enc, "year")
    d.first_code = int_field(enc, "first_code")
    d.first_init = int_field(enc, "first_init")
    d.comp1 = int_field(enc, "comp1")
    d.comp2 = int_field(enc, "comp2")
    d.comp3 = int_field(enc, "comp3")
    d.comp_ymin = int_field(enc, "comp_ymin")
    d.comp_ymax = int_field(enc, "comp_ymax")
    d.init_code = int_field(enc, "init_code")
    d.init_len = int_field(enc, "init_len")
    d.mid_init = int_field(enc, "mid_init")
    d.given_code = int_field(enc, "given_code")
    d.paper_code = int_field(enc, "paper_code")
    d.comp1_logsize = dbl_field(enc, "comp1_logsize")
    d.name_rarity = dbl_field(enc, "name_rarity")
    d.init_amb = dbl_field(enc, "init_amb")
    d.topic = dbl_field(enc, "topic")
    d.comp_topic = dbl_field(enc, "comp_topic")
    if theta.shape[0] != N_FEATURES:
        raise ValueError(f"theta must have {N_FEATURES} entries; got {theta.shape[0]}")
    d.n = enc.n
    d.n_topics = enc.n_topics
    d.log_n = log(<double>(enc.n if enc.n < N_SAT else N_SAT)) if enc.n > 0 else 0.0
    d.theta = &theta[0]
    d.bias = bias
    d.comp_frac = enc.block_stats[0]
    d.title_coh = enc.block_stats[1]
    d.venue_coh = enc.block_stats[2]
    d.affil_coh = enc.block_stats[3]
    d.name_middle = enc.block_stats[4]
    d.row = -1
    d.scatter_ok = False
    d.n_comp = 0
    d.comp_idx = NULL
    d.cc_memo = NULL
    d.mc_memo = NULL
    d.men = NULL
    d.mate_ptr = NULL
    d.mate_idx = NULL
    d.forb = NULL
    if d.n == 0:
        return d
    # the memo tables hold features (no theta), so calls on one encoding may share them
    # (``shared``); otherwise each call allocates its own when ``memo_max_bytes`` > 0
    tables = shared
    if tables is None and memo_max_bytes > 0:
        tables = memo_arrays(enc.comp1, memo_max_bytes)
    if tables is not None:
        n_comp, comp_idx_arr, cc_arr, mc_arr = tables
        keep.append(tables)
        comp_idx = comp_idx_arr
        d.n_comp = n_comp
        d.comp_idx = &comp_idx[0]
        if cc_arr is not None:
            cc_memo = cc_arr
            d.cc_memo = &cc_memo[0]
        if mc_arr is not None:
            mc_memo = mc_arr
            d.mc_memo = &mc_memo[0]
    # packed per-mention records (after comp_idx, which they copy)
    men_arr = np.zeros(d.n * sizeof(Mention) + 64, dtype=np.uint8)
    keep.append(men_arr)
    men_buf = men_arr
    with nogil:
        fill_records(&d, <Mention*>&men_buf[0])
    d.men = <const Mention*>&men_buf[0]
    if row_tables:
        attach_row_tables(&d, keep, n_pt, n_pv, n_pa)
    paper_arrays(&d, enc, keep)
    return d
