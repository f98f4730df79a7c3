# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Shared C-level declarations of the pairwise factor kernel.

Both ``_factors.pyx`` and ``_gibbs.pyx`` cimport this file: the struct holds raw
pointers into the arrays of one encoded block (filled by ``fill_block`` from typed
memoryviews) and ``block_phi`` / ``block_factor`` are inline, so no Python object
is touched while a factor is evaluated.  The feature list must match
``coref.features.FEATURE_NAMES`` and the pure-Python twin ``coref._factors_py``.
"""
from libc.math cimport log, log1p, sqrt, fabs, NAN
from libc.stdint cimport uint64_t

# number of pairwise features phi(x_i, x_j)
cdef enum:
    N_BASE = 53
    N_FEATURES = 106
    # signature words per mention: 2 (128 bits) for each of SIG_FIELDS id lists
    SIG_FIELDS = 9
    N_SIG = 18
    SIG_CO = 0
    SIG_TI = 2
    SIG_VE = 4
    SIG_AF = 6
    SIG_CK = 8
    SIG_AB = 10
    SIG_KW = 12
    SIG_VA = 14
    SIG_VT = 16
    MEMO_CC = 5

cdef struct BlockData:
    Py_ssize_t n
    double log_n
    # coauthors: CSR over mentions, sorted token ids, block-local IDF weights
    const long long* co_ptr
    const int* co_ids
    const double* co_w
    # title words: CSR, sorted ids, L2-normalised TF-IDF weights
    const long long* ti_ptr
    const int* ti_ids
    const double* ti_w
    # venue words: CSR, sorted ids, L2-normalised TF-IDF weights
    const long long* ve_ptr
    const int* ve_ids
    const double* ve_w
    # affiliation words: CSR, sorted ids, L2-normalised TF-IDF weights
    const long long* af_ptr
    const int* af_ids
    const double* af_w
    const int* venue_id      # -1 = missing
    const int* affil_id      # -1 = missing
    const int* year          # -1 = missing
    const int* first_code    # full first-name token id, -1 = missing
    const int* first_init    # first initial (char code), -1 = missing
    const int* comp1         # component of the shared-coauthor graph (>= 1 shared)
    const int* comp2         # component of the graph with >= 2 shared coauthors
    const double* comp1_logsize  # log size of comp1
    # component profiles (rows indexed by the comp1 label): top words, L2-normalised
    const long long* pt_ptr
    const int* pt_ids
    const double* pt_w
    const long long* pv_ptr
    const int* pv_ids
    const double* pv_w
    const long long* pa_ptr
    const int* pa_ids
    const double* pa_w
    const int* comp_ymin     # year range of each comp1 component (rows by label), -1 = none
    const int* comp_ymax
    const int* comp3         # components when coauthors are keyed by initial + last name
    const long long* ck_ptr  # coauthors keyed by first initial + last name: CSR, sorted ids
    const int* ck_ids
    const double* ck_w
    const int* ck_fn         # full first-name code of each ck entry, -1 = initial only
    # name variants
    const int* init_code     # given-name initials, 5 bits each, first most significant
    const int* init_len      # number of initials (0 = no given name)
    const int* mid_init      # second given initial (char code), -1 = none
    const int* given_code    # whole given names (full first name only), -1 = none
    const double* name_rarity  # -log share of the block's mentions with this first name
    const double* init_amb   # log(1 + full first names with this initial in the block)
    # abstract words, keywords: CSR, sorted ids, L2-normalised TF-IDF weights
    const long long* ab_ptr
    const int* ab_ids
    const double* ab_w
    const long long* kw_ptr
    const int* kw_ids
    const double* kw_w
    # venue acronyms (va) against venue words in the same code space (vt)
    const long long* va_ptr
    const int* va_ids
    const double* va_w
    const long long* vt_ptr
    const int* vt_ids
    const double* vt_w
    # LSA topic vectors (row-major, n_topics per row) of mentions and of comp1 components
    Py_ssize_t n_topics
    const double* topic
    const double* comp_topic
    # block-level constants (act as block-specific intercepts)
    double comp_frac         # number of comp1 components / n
    double title_coh         # squared norm of the mean title vector (mean pairwise cosine)
    double venue_coh
    double affil_coh
    double name_middle       # fraction of mention names with 3 or more parts
    # model
    const double* theta      # (N_FEATURES,)
    double bias
    # --- acceleration structures built by make_block (they never change a value)
    # per-mention signatures of the sorted id lists, N_SIG words per mention:
    # bit h(id) is set for every id of the list (h: multiplicative hash, 128 buckets),
    # so lists whose signatures share no bit share no id and their merge is skipped
    const uint64_t* sig
    # memo of the terms that depend on the two comp1 components only (phi[20..23],
    # phi[47]; MEMO_CC doubles per ordered component pair, NaN = not yet computed) and
    # of the title-vs-profile dot of a mention and a component (phi[24]); NULL = off
    Py_ssize_t n_comp        # number of distinct comp1 labels
    const int* comp_idx      # (n,) dense index of comp1[i] in [0, n_comp)
    double* cc_memo          # (n_comp * n_comp * MEMO_CC) or NULL
    double* mc_memo          # (n * n_comp) or NULL


cdef inline bint _sig_meet(const BlockData* d, Py_ssize_t i, Py_ssize_t j, int f) noexcept nogil:
    """True unless the id lists of field f of mentions i and j certainly share no id."""
    cdef const uint64_t* a = d.sig + i * N_SIG + f
    cdef const uint64_t* b = d.sig + j * N_SIG + f
    return ((a[0] & b[0]) | (a[1] & b[1])) != 0


cdef inline bint _sig_meet2(const BlockData* d, Py_ssize_t i, int fi, Py_ssize_t j,
                            int fj) noexcept nogil:
    """Same, field fi of mention i against field fj of mention j (one id space)."""
    cdef const uint64_t* a = d.sig + i * N_SIG + fi
    cdef const uint64_t* b = d.sig + j * N_SIG + fj
    return ((a[0] & b[0]) | (a[1] & b[1])) != 0


cdef inline double _dot_sorted(const long long* ptr, const int* ids, const double* w,
                               Py_ssize_t i, Py_ssize_t j, int* n_common,
                               double* w_common) noexcept nogil:
    """Merge two sorted id lists; return sum of w_i * w_j over shared ids.

    Branch-free advance (a += ia <= ib; b += ib <= ia): the shared ids are visited in
    the same increasing order as by the textbook merge, so the sums are identical.
    """
    cdef long long a = ptr[i], ae = ptr[i + 1], b = ptr[j], be = ptr[j + 1]
    cdef double s = 0.0, sw = 0.0
    cdef int c = 0
    cdef int ia, ib
    while a < ae and b < be:
        ia = ids[a]
        ib = ids[b]
        if ia == ib:
            s += w[a] * w[b]
            sw += w[a]
            c += 1
        a += ia <= ib
        b += ib <= ia
    n_common[0] = c
    w_common[0] = sw
    return s


cdef inline double _dot_sorted2(const long long* ptr_a, const int* ids_a, const double* w_a,
                                Py_ssize_t i, const long long* ptr_b, const int* ids_b,
                                const double* w_b, Py_ssize_t j) noexcept nogil:
    """sum of w_a * w_b over ids shared by row i of list a and row j of list b."""
    cdef long long a = ptr_a[i], ae = ptr_a[i + 1], b = ptr_b[j], be = ptr_b[j + 1]
    cdef double s = 0.0
    cdef int ia, ib
    while a < ae and b < be:
        ia = ids_a[a]
        ib = ids_b[b]
        if ia == ib:
            s += w_a[a] * w_b[b]
        a += ia <= ib
        b += ib <= ia
    return s


cdef inline void _match_names(const long long* ptr, const int* ids, const int* fn,
                              Py_ssize_t i, Py_ssize_t j, int* n_ok, int* n_bad) noexcept nogil:
    """Count shared keys whose full names agree or are unknown (n_ok) or clash (n_bad)."""
    cdef long long a = ptr[i], ae = ptr[i + 1], b = ptr[j], be = ptr[j + 1]
    cdef int ok = 0, bad = 0
    cdef int ia, ib
    while a < ae and b < be:
        ia = ids[a]
        ib = ids[b]
        if ia == ib:
            if fn[a] < 0 or fn[b] < 0 or fn[a] == fn[b]:
                ok += 1
            else:
                bad += 1
        a += ia <= ib
        b += ib <= ia
    n_ok[0] = ok
    n_bad[0] = bad


cdef inline double _dense_dot(const double* x, const double* y, Py_ssize_t k) noexcept nogil:
    cdef double s = 0.0
    cdef Py_ssize_t t
    for t in range(k):
        s += x[t] * y[t]
    return s


cdef inline void _comp_terms(const BlockData* d, Py_ssize_t i, Py_ssize_t j,
                             double* out) noexcept nogil:
    """phi[20], phi[21], phi[22], phi[23], phi[47] of mentions in different comp1 components.

    They depend on the two components only: read from (or computed into) the memo.
    """
    cdef int ci = d.comp1[i], cj = d.comp1[j]
    cdef int c = 0
    cdef double sw = 0.0, gap
    cdef double* m = NULL
    cdef int k
    if d.cc_memo != NULL:
        m = d.cc_memo + (<Py_ssize_t>d.comp_idx[i] * d.n_comp + d.comp_idx[j]) * MEMO_CC
        if m[0] == m[0]:          # not NaN: computed before
            for k in range(MEMO_CC):
                out[k] = m[k]
            return
    out[0] = _dot_sorted(d.pt_ptr, d.pt_ids, d.pt_w, ci, cj, &c, &sw)
    out[1] = _dot_sorted(d.pv_ptr, d.pv_ids, d.pv_w, ci, cj, &c, &sw)
    out[2] = _dot_sorted(d.pa_ptr, d.pa_ids, d.pa_w, ci, cj, &c, &sw)
    out[3] = 0.0
    if d.comp_ymin[ci] >= 0 and d.comp_ymin[cj] >= 0:
        if d.comp_ymin[ci] > d.comp_ymax[cj]:
            gap = <double>(d.comp_ymin[ci] - d.comp_ymax[cj])
        elif d.comp_ymin[cj] > d.comp_ymax[ci]:
            gap = <double>(d.comp_ymin[cj] - d.comp_ymax[ci])
        else:
            gap = 0.0
        if gap > 30.0:
            gap = 30.0
        out[3] = gap / 10.0
    if d.n_topics > 0:
        out[4] = _dense_dot(d.comp_topic + ci * d.n_topics, d.comp_topic + cj * d.n_topics,
                            d.n_topics)
    else:
        out[4] = 0.0
    if m != NULL:
        for k in range(MEMO_CC):
            m[k] = out[k]


cdef inline double _title_profile(const BlockData* d, Py_ssize_t i, Py_ssize_t j) noexcept nogil:
    """Title of mention i against the title profile of the comp1 component of j."""
    cdef double* m = NULL
    cdef double v
    if d.mc_memo != NULL:
        m = d.mc_memo + i * d.n_comp + d.comp_idx[j]
        if m[0] == m[0]:
            return m[0]
    v = _dot_sorted2(d.ti_ptr, d.ti_ids, d.ti_w, i, d.pt_ptr, d.pt_ids, d.pt_w, d.comp1[j])
    if m != NULL:
        m[0] = v
    return v


cdef inline void block_phi_base(const BlockData* d, Py_ssize_t i, Py_ssize_t j,
                                double* phi) noexcept nogil:
    """Write the N_BASE base features of mentions (i, j) into phi[0:N_BASE].

    Same values, bit for bit, as the textbook merges of ``coref._factors_py``: a merge
    is skipped only when the signatures prove that the lists share no id (its sums are
    then exactly 0.0 and its counts 0), and memoised terms are the values computed the
    first time.
    """
    cdef int c = 0
    cdef double sw = 0.0, dot
    cdef long long ni = d.co_ptr[i + 1] - d.co_ptr[i]
    cdef long long nj = d.co_ptr[j + 1] - d.co_ptr[j]
    cdef double gap
    cdef double ct[MEMO_CC]
    cdef int ci, cj, k, li, lj, fi, fj, n_ok = 0, n_bad = 0
    cdef long long nvi, nvj
    cdef bint compat
    # --- coauthors
    if _sig_meet(d, i, j, SIG_CO):
        _dot_sorted(d.co_ptr, d.co_ids, d.co_w, i, j, &c, &sw)
    phi[0] = log1p(<double>c) if c > 0 else 0.0
    if ni + nj - c > 0:
        phi[1] = <double>c / <double>(ni + nj - c)
    else:
        phi[1] = 0.0
    phi[2] = sw
    phi[3] = 1.0 if c >= 1 else 0.0
    phi[4] = 1.0 if (ni == 0 or nj == 0) else 0.0
    phi[5] = 1.0 if c >= 2 else 0.0
    # --- title
    phi[6] = 0.0
    if _sig_meet(d, i, j, SIG_TI):
        phi[6] = _dot_sorted(d.ti_ptr, d.ti_ids, d.ti_w, i, j, &c, &sw)
    # --- venue
    c = 0
    phi[7] = 0.0
    if _sig_meet(d, i, j, SIG_VE):
        phi[7] = _dot_sorted(d.ve_ptr, d.ve_ids, d.ve_w, i, j, &c, &sw)
    phi[8] = 1.0 if (d.venue_id[i] >= 0 and d.venue_id[i] == d.venue_id[j]) else 0.0
    nvi = d.ve_ptr[i + 1] - d.ve_ptr[i]
    nvj = d.ve_ptr[j + 1] - d.ve_ptr[j]
    if nvi > 0 and nvj > 0 and phi[8] == 0.0 and (c == nvi or c == nvj):
        phi[49] = 1.0
    else:
        phi[49] = 0.0
    # --- affiliation
    if d.affil_id[i] >= 0 and d.affil_id[j] >= 0:
        phi[9] = 0.0
        if _sig_meet(d, i, j, SIG_AF):
            phi[9] = _dot_sorted(d.af_ptr, d.af_ids, d.af_w, i, j, &c, &sw)
        phi[10] = 0.0
        phi[11] = 1.0 if d.affil_id[i] == d.affil_id[j] else 0.0
    else:
        phi[9] = 0.0
        phi[10] = 1.0
        phi[11] = 0.0
    # --- year gap
    if d.year[i] >= 0 and d.year[j] >= 0:
        gap = fabs(<double>(d.year[i] - d.year[j]))
        if gap > 30.0:
            gap = 30.0
        phi[12] = gap / 10.0
        phi[13] = (gap / 10.0) * (gap / 10.0)
        phi[14] = 0.0
    else:
        phi[12] = 0.0
        phi[13] = 0.0
        phi[14] = 1.0
    # --- name compatibility: 1 same full first name, 0.5 compatible initials (or missing), 0 otherwise
    if d.first_code[i] >= 0 and d.first_code[i] == d.first_code[j]:
        phi[15] = 1.0
    elif d.first_init[i] < 0 or d.first_init[j] < 0 or d.first_init[i] == d.first_init[j]:
        phi[15] = 0.5
    else:
        phi[15] = 0.0
    # --- block size (prior of co-reference falls with the number of mentions)
    phi[16] = d.log_n * phi[0]
    # --- coauthor-graph components (transitive coauthor evidence inside the block)
    phi[17] = 1.0 if d.comp1[i] == d.comp1[j] else 0.0
    phi[18] = 1.0 if d.comp2[i] == d.comp2[j] else 0.0
    phi[19] = phi[17] * d.comp1_logsize[i]
    # --- components: profiles (1 inside one component), year-range gap (0 if they
    #     overlap), mention-to-profile titles, topic of the components
    if phi[17] > 0.0:
        phi[20] = 1.0
        phi[21] = 1.0
        phi[22] = 1.0
        phi[23] = 0.0
        phi[24] = 1.0
        phi[25] = 0.0
        ct[4] = 1.0
    else:
        _comp_terms(d, i, j, ct)
        phi[20] = ct[0]
        phi[21] = ct[1]
        phi[22] = ct[2]
        phi[23] = ct[3]
        dot = _title_profile(d, i, j)
        dot += _title_profile(d, j, i)
        phi[24] = 0.5 * dot
        phi[25] = d.comp1_logsize[i] + d.comp1_logsize[j]
    phi[26] = 1.0 if d.comp3[i] == d.comp3[j] else 0.0
    phi[27] = d.log_n
    phi[28] = d.comp_frac
    phi[29] = d.title_coh
    phi[30] = d.venue_coh
    phi[31] = d.affil_coh
    phi[32] = d.name_middle
    # --- coauthors keyed by initials: shared count, and shared only through initials
    if _sig_meet(d, i, j, SIG_CK):
        _match_names(d.ck_ptr, d.ck_ids, d.ck_fn, i, j, &n_ok, &n_bad)
    phi[33] = log1p(<double>(n_ok + n_bad)) if n_ok + n_bad > 0 else 0.0
    phi[34] = phi[33] - phi[0] if phi[33] > phi[0] else 0.0
    phi[51] = log1p(<double>n_ok) if n_ok > 0 else 0.0
    phi[52] = log1p(<double>n_bad) if n_bad > 0 else 0.0
    # --- name variants: full first names, initials (prefix-compatible), middle initials
    fi = d.first_code[i]
    fj = d.first_code[j]
    li = d.init_len[i]
    lj = d.init_len[j]
    if li > 0 and lj > 0:
        if li <= lj:
            compat = (d.init_code[j] >> (5 * (lj - li))) == d.init_code[i]
        else:
            compat = (d.init_code[i] >> (5 * (li - lj))) == d.init_code[j]
    else:
        compat = False
    phi[39] = 1.0 if (d.given_code[i] >= 0 and d.given_code[i] == d.given_code[j]) else 0.0
    # "Jian Xin" / "Jianxin": first names differ, whole given names agree -> same first name
    phi[35] = 1.0 if ((fi >= 0 and fi == fj) or phi[39] > 0.0) else 0.0
    phi[36] = 1.0 if ((fi >= 0 and fj >= 0 and fi != fj and phi[39] == 0.0)
                      or (li > 0 and lj > 0 and d.first_init[i] != d.first_init[j])) else 0.0
    phi[37] = 1.0 if (phi[35] == 0.0 and phi[36] == 0.0 and compat and (fi < 0 or fj < 0)) else 0.0
    phi[38] = 1.0 if (d.mid_init[i] >= 0 and d.mid_init[j] >= 0 and d.mid_init[i] != d.mid_init[j]) else 0.0
    if phi[35] > 0.0:  # the rarer reading of the two first names (symmetric in i, j)
        phi[40] = d.name_rarity[i] if d.name_rarity[i] < d.name_rarity[j] else d.name_rarity[j]
    else:
        phi[40] = 0.0
    phi[41] = d.init_amb[i] if phi[37] > 0.0 else 0.0
    # --- abstract and keywords (missing is never a match)
    if d.ab_ptr[i + 1] > d.ab_ptr[i] and d.ab_ptr[j + 1] > d.ab_ptr[j]:
        phi[42] = 0.0
        if _sig_meet(d, i, j, SIG_AB):
            phi[42] = _dot_sorted(d.ab_ptr, d.ab_ids, d.ab_w, i, j, &c, &sw)
        phi[43] = 0.0
    else:
        phi[42] = 0.0
        phi[43] = 1.0
    if d.kw_ptr[i + 1] > d.kw_ptr[i] and d.kw_ptr[j + 1] > d.kw_ptr[j]:
        phi[44] = 0.0
        if _sig_meet(d, i, j, SIG_KW):
            phi[44] = _dot_sorted(d.kw_ptr, d.kw_ids, d.kw_w, i, j, &c, &sw)
        phi[45] = 0.0
    else:
        phi[44] = 0.0
        phi[45] = 1.0
    # --- topics (LSA) of the mentions and of their coauthor components
    if d.n_topics > 0:
        phi[46] = _dense_dot(d.topic + i * d.n_topics, d.topic + j * d.n_topics, d.n_topics)
        phi[47] = ct[4]
    else:
        phi[46] = 0.0
        phi[47] = 0.0
    # --- venue acronym against the other venue's words
    dot = 0.0
    if _sig_meet2(d, i, SIG_VA, j, SIG_VT):
        dot = _dot_sorted2(d.va_ptr, d.va_ids, d.va_w, i, d.vt_ptr, d.vt_ids, d.vt_w, j)
    if _sig_meet2(d, j, SIG_VA, i, SIG_VT):
        dot += _dot_sorted2(d.va_ptr, d.va_ids, d.va_w, j, d.vt_ptr, d.vt_ids, d.vt_w, i)
    phi[48] = 1.0 if dot > 0.0 else 0.0
    phi[50] = phi[46] * phi[12]


cdef inline void block_phi(const BlockData* d, Py_ssize_t i, Py_ssize_t j,
                           double* phi) noexcept nogil:
    """Write the N_FEATURES pairwise features of mentions (i, j) into phi."""
    cdef int k
    block_phi_base(d, i, j, phi)
    # --- the same features again, inside one coauthor component only (separate weights)
    for k in range(N_BASE):
        phi[N_BASE + k] = phi[k] * phi[17]


cdef inline double block_factor(const BlockData* d, Py_ssize_t i, Py_ssize_t j) noexcept nogil:
    """f_theta(x_i, x_j) = theta . phi(x_i, x_j) + bias (a log-odds, natural log).

    The interaction half phi[N_BASE + k] = phi[k] * same_comp1 is not materialised:
    same_comp1 is 0 or 1, so its terms are added only inside one coauthor component
    (adding theta * 0.0 would not change the sum).
    """
    cdef double phi[N_BASE]
    cdef double s = d.bias
    cdef int k
    block_phi_base(d, i, j, phi)
    for k in range(N_BASE):
        s += d.theta[k] * phi[k]
    if phi[17] != 0.0:
        for k in range(N_BASE):
            s += d.theta[N_BASE + k] * phi[k]
    return s


cdef inline void _fill_sig(uint64_t* sig, Py_ssize_t n, int f, const long long* ptr,
                           const int* ids) noexcept nogil:
    """Signature words f, f + 1 of every mention for one CSR id list."""
    cdef Py_ssize_t r
    cdef long long a
    cdef uint64_t h
    for r in range(n):
        for a in range(ptr[r], ptr[r + 1]):
            h = (<uint64_t>(<unsigned int>ids[a]) * <uint64_t>0x9E3779B97F4A7C15) >> 57
            sig[r * N_SIG + f + <int>(h >> 6)] |= (<uint64_t>1) << (h & 63)


cdef inline BlockData make_block(object enc, const double[::1] theta, double bias,
                                 list keep, Py_ssize_t memo_max_bytes) except *:
    """Point a BlockData at the arrays of an EncodedBlock (which must outlive it).

    Also builds the per-mention id-list signatures and, when each table fits in
    ``memo_max_bytes`` (0 = no memo), the component memo tables; these arrays are
    appended to ``keep``, which the caller must hold while the BlockData is used.
    """
    cdef BlockData d
    cdef uint64_t[::1] sig
    cdef int[::1] comp_idx
    cdef double[::1] cc_memo, mc_memo
    cdef Py_ssize_t n_comp
    cdef const long long[::1] co_ptr = enc.co_ptr, ti_ptr = enc.ti_ptr
    cdef const long long[::1] ve_ptr = enc.ve_ptr, af_ptr = enc.af_ptr
    cdef const int[::1] co_ids = enc.co_ids, ti_ids = enc.ti_ids
    cdef const int[::1] ve_ids = enc.ve_ids, af_ids = enc.af_ids
    cdef const double[::1] co_w = enc.co_w, ti_w = enc.ti_w, ve_w = enc.ve_w, af_w = enc.af_w
    cdef const int[::1] venue_id = enc.venue_id, affil_id = enc.affil_id, year = enc.year
    cdef const int[::1] first_code = enc.first_code, first_init = enc.first_init
    cdef const int[::1] comp1 = enc.comp1, comp2 = enc.comp2
    cdef const double[::1] comp1_logsize = enc.comp1_logsize
    cdef const long long[::1] pt_ptr = enc.pt_ptr, pv_ptr = enc.pv_ptr, pa_ptr = enc.pa_ptr
    cdef const int[::1] pt_ids = enc.pt_ids, pv_ids = enc.pv_ids, pa_ids = enc.pa_ids
    cdef const double[::1] pt_w = enc.pt_w, pv_w = enc.pv_w, pa_w = enc.pa_w
    cdef const int[::1] comp_ymin = enc.comp_ymin, comp_ymax = enc.comp_ymax
    cdef const int[::1] comp3 = enc.comp3
    cdef const long long[::1] ck_ptr = enc.ck_ptr
    cdef const int[::1] ck_ids = enc.ck_ids
    cdef const double[::1] ck_w = enc.ck_w
    cdef const int[::1] ck_fn = enc.ck_fn
    cdef const int[::1] init_code = enc.init_code, init_len = enc.init_len
    cdef const int[::1] mid_init = enc.mid_init, given_code = enc.given_code
    cdef const double[::1] name_rarity = enc.name_rarity, init_amb = enc.init_amb
    cdef const long long[::1] ab_ptr = enc.ab_ptr, kw_ptr = enc.kw_ptr
    cdef const long long[::1] va_ptr = enc.va_ptr, vt_ptr = enc.vt_ptr
    cdef const int[::1] ab_ids = enc.ab_ids, kw_ids = enc.kw_ids
    cdef const int[::1] va_ids = enc.va_ids, vt_ids = enc.vt_ids
    cdef const double[::1] ab_w = enc.ab_w, kw_w = enc.kw_w, va_w = enc.va_w, vt_w = enc.vt_w
    cdef const double[::1] topic = enc.topic, comp_topic = enc.comp_topic
    if theta.shape[0] != N_FEATURES:
        raise ValueError(f"theta must have {N_FEATURES} entries; got {theta.shape[0]}")
    d.n = enc.n
    d.log_n = log(<double>enc.n) if enc.n > 0 else 0.0
    d.theta = &theta[0]
    d.bias = bias
    d.comp_frac = enc.block_stats[0]
    d.title_coh = enc.block_stats[1]
    d.venue_coh = enc.block_stats[2]
    d.affil_coh = enc.block_stats[3]
    d.name_middle = enc.block_stats[4]
    if d.n == 0:
        return d
    d.co_ptr = &co_ptr[0]
    d.co_ids = &co_ids[0]
    d.co_w = &co_w[0]
    d.ti_ptr = &ti_ptr[0]
    d.ti_ids = &ti_ids[0]
    d.ti_w = &ti_w[0]
    d.ve_ptr = &ve_ptr[0]
    d.ve_ids = &ve_ids[0]
    d.ve_w = &ve_w[0]
    d.af_ptr = &af_ptr[0]
    d.af_ids = &af_ids[0]
    d.af_w = &af_w[0]
    d.venue_id = &venue_id[0]
    d.affil_id = &affil_id[0]
    d.year = &year[0]
    d.first_code = &first_code[0]
    d.first_init = &first_init[0]
    d.comp1 = &comp1[0]
    d.comp2 = &comp2[0]
    d.comp1_logsize = &comp1_logsize[0]
    d.pt_ptr = &pt_ptr[0]
    d.pt_ids = &pt_ids[0]
    d.pt_w = &pt_w[0]
    d.pv_ptr = &pv_ptr[0]
    d.pv_ids = &pv_ids[0]
    d.pv_w = &pv_w[0]
    d.pa_ptr = &pa_ptr[0]
    d.pa_ids = &pa_ids[0]
    d.pa_w = &pa_w[0]
    d.comp_ymin = &comp_ymin[0]
    d.comp_ymax = &comp_ymax[0]
    d.comp3 = &comp3[0]
    d.ck_ptr = &ck_ptr[0]
    d.ck_ids = &ck_ids[0]
    d.ck_w = &ck_w[0]
    d.ck_fn = &ck_fn[0]
    d.init_code = &init_code[0]
    d.init_len = &init_len[0]
    d.mid_init = &mid_init[0]
    d.given_code = &given_code[0]
    d.name_rarity = &name_rarity[0]
    d.init_amb = &init_amb[0]
    d.ab_ptr = &ab_ptr[0]
    d.ab_ids = &ab_ids[0]
    d.ab_w = &ab_w[0]
    d.kw_ptr = &kw_ptr[0]
    d.kw_ids = &kw_ids[0]
    d.kw_w = &kw_w[0]
    d.va_ptr = &va_ptr[0]
    d.va_ids = &va_ids[0]
    d.va_w = &va_w[0]
    d.vt_ptr = &vt_ptr[0]
    d.vt_ids = &vt_ids[0]
    d.vt_w = &vt_w[0]
    d.n_topics = enc.n_topics
    d.topic = &topic[0]
    d.comp_topic = &comp_topic[0]
    d.theta = &theta[0]
    d.bias = bias
    # signatures
    import numpy as np
    sig_arr = np.zeros(d.n * N_SIG, dtype=np.uint64)
    keep.append(sig_arr)
    sig = sig_arr
    with nogil:
        _fill_sig(&sig[0], d.n, SIG_CO, d.co_ptr, d.co_ids)
        _fill_sig(&sig[0], d.n, SIG_TI, d.ti_ptr, d.ti_ids)
        _fill_sig(&sig[0], d.n, SIG_VE, d.ve_ptr, d.ve_ids)
        _fill_sig(&sig[0], d.n, SIG_AF, d.af_ptr, d.af_ids)
        _fill_sig(&sig[0], d.n, SIG_CK, d.ck_ptr, d.ck_ids)
        _fill_sig(&sig[0], d.n, SIG_AB, d.ab_ptr, d.ab_ids)
        _fill_sig(&sig[0], d.n, SIG_KW, d.kw_ptr, d.kw_ids)
        _fill_sig(&sig[0], d.n, SIG_VA, d.va_ptr, d.va_ids)
        _fill_sig(&sig[0], d.n, SIG_VT, d.vt_ptr, d.vt_ids)
    d.sig = &sig[0]
    # component memo tables (NaN = not computed yet)
    d.n_comp = 0
    d.comp_idx = NULL
    d.cc_memo = NULL
    d.mc_memo = NULL
    if memo_max_bytes > 0:
        uniq, inv = np.unique(np.asarray(comp1), return_inverse=True)
        n_comp = len(uniq)
        comp_idx_arr = np.ascontiguousarray(inv.reshape(-1), dtype=np.int32)
        keep.append(comp_idx_arr)
        comp_idx = comp_idx_arr
        d.n_comp = n_comp
        d.comp_idx = &comp_idx[0]
        if n_comp * n_comp * MEMO_CC * 8 <= memo_max_bytes:
            cc_arr = np.full(n_comp * n_comp * MEMO_CC, np.nan)
            keep.append(cc_arr)
            cc_memo = cc_arr
            d.cc_memo = &cc_memo[0]
        if d.n * n_comp * 8 <= memo_max_bytes:
            mc_arr = np.full(d.n * n_comp, np.nan)
            keep.append(mc_arr)
            mc_memo = mc_arr
            d.mc_memo = &mc_memo[0]
    return d
