# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Shared C-level declarations of the pairwise factor kernel.

Both ``_factors.pyx`` and ``_gibbs.pyx`` cimport this file: the struct holds raw
pointers into the arrays of one encoded block (filled by ``make_block`` from typed
memoryviews) and ``block_phi`` / ``block_factor`` are inline, so no Python object
is touched while a factor is evaluated.  The feature list must match
``coref.factors.names.FEATURE_NAMES`` and the pure-Python twin ``coref._factors_py``.

Speed without changing a value (the twin tests compare bit for bit):
``make_block`` packs each mention's scalars, list offsets / lengths and 128-bit
signatures of its id lists into one record (``Mention``); a sorted-list merge runs
only when the two signatures share a bit (otherwise its sums are exactly 0.0), with
a branch-free advance that visits the shared ids in the same order; the terms that
depend on the two comp1 components only (profile cosines, year-range gap, topic
cosine) and the title-vs-profile dots are memoised per block (tables of at most
``memo_max_bytes`` each, filled on first use).  Summation orders are unchanged.
Row mode (``make_block(..., row_tables=True)``, ``row_set(d, i)``): the id lists of
one mention i are scattered into dense per-block tables indexed by id (weight, 0.0 =
absent), and a factor (i, j) walks j's lists once, looking each id up, instead of
merging two sorted lists (so are the profiles of i's coauthor component: the profile
cosines and title-vs-profile dots of a pair in two components are lookups too, which
matters where the memo tables do not fit, in blocks of thousands of mentions): the
shared ids come in the same increasing order and an absent id adds 0.0 * w = +-0.0,
which leaves a sum that starts at +0.0 unchanged, so the values are the merges' bit
for bit (refused, merges kept, when an id list is not
strictly increasing, an id is negative, a weight is not finite, or the tables would
take more than ROW_MAX_BYTES).
"""
from libc.math cimport log, log1p, sqrt, fabs, NAN, isfinite
from libc.stdint cimport uint64_t

cdef extern from *:
    """
    #define CO_PREFETCH(p) __builtin_prefetch((const void*)(p))
    """
    void CO_PREFETCH(const void* p) noexcept nogil

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
    # row tables (``row_set``) only when they take at most this many bytes (one double
    # per id and field, ids up to each field's largest)
    ROW_MAX_BYTES = 1 << 25

cdef struct Mention:
    # one mention's scalars and id-list locations, packed so that a factor touches a
    # few cache lines of each mention (make_block copies them from the EncodedBlock)
    uint64_t sig[N_SIG]      # id-list signatures (see BlockData.sig)
    long long co, ti, ve, af, ck, ab, kw, va, vt    # start of each list in its *_ids / *_w
    int n_co, n_ti, n_ve, n_af, n_ck, n_ab, n_kw, n_va, n_vt   # list lengths
    int venue_id, affil_id, year, first_code, first_init, comp1, comp2, comp3
    int init_code, init_len, mid_init, given_code, comp_idx
    double comp1_logsize, name_rarity, init_amb


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
    # per-mention signatures of the sorted id lists (in Mention.sig, 2 words per list):
    # bit h(id) is set for every id of the list (h: multiplicative hash, 128 buckets),
    # so lists whose signatures share no bit share no id and their merge is skipped
    # memo of the terms that depend on the two comp1 components only (phi[20..23],
    # phi[47]; MEMO_CC doubles per ordered component pair, NaN = not yet computed) and
    # of the title-vs-profile dot of a mention and a component (phi[24]); NULL = off
    Py_ssize_t n_comp        # number of distinct comp1 labels
    const int* comp_idx      # (n,) dense index of comp1[i] in [0, n_comp)
    double* cc_memo          # (n_comp * n_comp * MEMO_CC) or NULL
    double* mc_memo          # (n * n_comp) or NULL
    const Mention* men       # (n,) packed per-mention records
    # row mode (see ``row_set``): the id lists of one mention ``row`` scattered into
    # dense tables indexed by id, so that a factor (row, j) looks up each id of j once
    # instead of merging two sorted lists; row = -1 when off, scatter_ok = 0 when the
    # block does not allow it (an id list not strictly increasing, a negative id, a
    # non-finite weight, or tables above ROW_MAX_BYTES)
    Py_ssize_t row
    bint scatter_ok
    double* wm_co            # weight of the row's entry with this id, 0.0 = absent
    double* wm_ti
    double* wm_ve
    double* wm_af
    double* wm_ab
    double* wm_kw
    double* wm_va            # va and vt share one code space
    double* wm_vt
    double* wm_pt            # the row's comp1 profiles (title words: the ti code space, the
    double* wm_pv            #   table as long as wm_ti; venue words; affiliation words)
    double* wm_pa
    unsigned char* hm_co     # 1 = the row holds this id
    unsigned char* hm_ve
    unsigned char* hm_ck
    int* fm_ck               # ck_fn of the row's entry with this id


cdef inline bint _meet(const uint64_t* a, const uint64_t* b) noexcept nogil:
    """False when two id lists certainly share no id (their 128-bit signatures share no bit)."""
    return ((a[0] & b[0]) | (a[1] & b[1])) != 0


cdef inline double _merge(const int* ids_a, const double* w_a, long long na,
                          const int* ids_b, const double* w_b, long long nb,
                          int* n_common, double* w_common) noexcept nogil:
    """sum of w_a * w_b over the ids two sorted lists share (count and sum of w_a too).

    Branch-free advance (a += ia <= ib; b += ib <= ia): the shared ids are visited in
    the same increasing order as by the textbook merge, so the sums are identical.
    """
    cdef long long a = 0, b = 0
    cdef double s = 0.0, sw = 0.0
    cdef int c = 0
    cdef int ia, ib
    while a < na and b < nb:
        ia = ids_a[a]
        ib = ids_b[b]
        if ia == ib:
            s += w_a[a] * w_b[b]
            sw += w_a[a]
            c += 1
        a += ia <= ib
        b += ib <= ia
    n_common[0] = c
    w_common[0] = sw
    return s


cdef inline double _look(const double* wm, const int* ids_b, const double* w_b,
                         long long nb) noexcept nogil:
    """sum of w_row * w_b over the ids of list b that the scattered row holds.

    Same value, bit for bit, as ``_merge`` (row list first): the shared ids are
    visited in the same increasing order, and every id the row lacks adds
    0.0 * w_b = +-0.0, which leaves the sum unchanged (the sum starts at +0.0 and so
    is never -0.0; weights are finite, checked by ``make_block``).
    """
    cdef long long b
    cdef double s = 0.0
    for b in range(nb):
        s += wm[ids_b[b]] * w_b[b]
    return s


cdef inline double _look_rev(const double* wm, const int* ids_b, const double* w_b,
                             long long nb) noexcept nogil:
    """``_look`` with the product written w_b * w_row (``_merge`` with list b first)."""
    cdef long long b
    cdef double s = 0.0
    for b in range(nb):
        s += w_b[b] * wm[ids_b[b]]
    return s


cdef inline double _look_count(const double* wm, const unsigned char* hm, const int* ids_b,
                               const double* w_b, long long nb, int* n_common,
                               double* w_common) noexcept nogil:
    """``_look`` plus the number of shared ids and the sum of the row's weights on them."""
    cdef long long b
    cdef double s = 0.0, sw = 0.0, wa
    cdef int c = 0, t
    for b in range(nb):
        t = ids_b[b]
        wa = wm[t]
        s += wa * w_b[b]
        sw += wa
        c += hm[t]
    n_common[0] = c
    w_common[0] = sw
    return s


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
    if d.row == i:
        # row mode: ci's profiles are scattered (row_set); look cj's ids up (same sums)
        out[0] = _look(d.wm_pt, d.pt_ids + d.pt_ptr[cj], d.pt_w + d.pt_ptr[cj],
                       d.pt_ptr[cj + 1] - d.pt_ptr[cj])
        out[1] = _look(d.wm_pv, d.pv_ids + d.pv_ptr[cj], d.pv_w + d.pv_ptr[cj],
                       d.pv_ptr[cj + 1] - d.pv_ptr[cj])
        out[2] = _look(d.wm_pa, d.pa_ids + d.pa_ptr[cj], d.pa_w + d.pa_ptr[cj],
                       d.pa_ptr[cj + 1] - d.pa_ptr[cj])
    else:
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


cdef inline double _title_profile(const BlockData* d, const Mention* mi,
                                  Py_ssize_t i, const Mention* mj, int mode) noexcept nogil:
    """Title of mention i against the title profile of the comp1 component of j.

    ``mode`` 0: merge the two sorted lists; 1: i is the row (its title scattered in
    ``wm_ti``): look the profile's ids up; 2: j is the row (its component's title
    profile scattered in ``wm_pt``): look i's title ids up.  Same sums, bit for bit.
    """
    cdef double* m = NULL
    cdef double v
    cdef int c = 0
    cdef double sw = 0.0
    cdef long long p0
    if d.mc_memo != NULL:
        m = d.mc_memo + i * d.n_comp + mj.comp_idx
        if m[0] == m[0]:
            return m[0]
    p0 = d.pt_ptr[mj.comp1]
    if mode == 1:
        v = _look(d.wm_ti, d.pt_ids + p0, d.pt_w + p0, d.pt_ptr[mj.comp1 + 1] - p0)
    elif mode == 2:
        v = _look_rev(d.wm_pt, d.ti_ids + mi.ti, d.ti_w + mi.ti, mi.n_ti)
    else:
        v = _merge(d.ti_ids + mi.ti, d.ti_w + mi.ti, mi.n_ti, d.pt_ids + p0, d.pt_w + p0,
                   d.pt_ptr[mj.comp1 + 1] - p0, &c, &sw)
    if m != NULL:
        m[0] = v
    return v


cdef inline void prefetch_pair(const BlockData* d, Py_ssize_t i, Py_ssize_t j) noexcept nogil:
    """Ask the cache for what factor (i, j) reads of mention j (no value changes).

    j's packed record and topic row, and the memo entries of the two components;
    for samplers that visit the members j in random order (racing).
    """
    cdef const char* p = <const char*>(d.men + j)
    cdef Py_ssize_t k
    for k in range(0, <Py_ssize_t>sizeof(Mention), 64):
        CO_PREFETCH(p + k)
    if d.n_topics > 0:
        p = <const char*>(d.topic + j * d.n_topics)
        for k in range(0, d.n_topics * 8, 64):
            CO_PREFETCH(p + k)
    if d.comp_idx != NULL:
        if d.cc_memo != NULL:
            CO_PREFETCH(d.cc_memo + (<Py_ssize_t>d.comp_idx[i] * d.n_comp + d.comp_idx[j]) * MEMO_CC)
        if d.mc_memo != NULL:
            CO_PREFETCH(d.mc_memo + i * d.n_comp + d.comp_idx[j])
            CO_PREFETCH(d.mc_memo + j * d.n_comp + d.comp_idx[i])


cdef inline void block_phi_base(const BlockData* d, Py_ssize_t i, Py_ssize_t j,
                                double* phi) noexcept nogil:
    """Write the N_BASE base features of mentions (i, j) into phi[0:N_BASE].

    Same values, bit for bit, as the textbook merges of ``coref._factors_py``: a merge
    is skipped only when the signatures prove that the lists share no id (its sums are
    then exactly 0.0 and its counts 0), and memoised terms are the values computed the
    first time.  Per-mention data come from the packed records ``d.men``.
    """
    cdef const Mention* mi = d.men + i
    cdef const Mention* mj = d.men + j
    cdef int c = 0, c2 = 0
    cdef double sw = 0.0, dot
    cdef long long ni = mi.n_co
    cdef long long nj = mj.n_co
    cdef double gap
    cdef double ct[MEMO_CC]
    cdef int li, lj, fi, fj, n_ok = 0, n_bad = 0
    cdef long long a, ae, b, be
    cdef int ia, ib
    cdef long long nvi, nvj
    cdef bint compat
    cdef bint rowm = d.row == i
    cdef int ok
    # --- coauthors
    if _meet(mi.sig + SIG_CO, mj.sig + SIG_CO):
        if rowm:
            _look_count(d.wm_co, d.hm_co, d.co_ids + mj.co, d.co_w + mj.co, nj, &c, &sw)
        else:
            _merge(d.co_ids + mi.co, d.co_w + mi.co, ni, d.co_ids + mj.co, d.co_w + mj.co, nj,
                   &c, &sw)
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
    if _meet(mi.sig + SIG_TI, mj.sig + SIG_TI):
        if rowm:
            phi[6] = _look(d.wm_ti, d.ti_ids + mj.ti, d.ti_w + mj.ti, mj.n_ti)
        else:
            phi[6] = _merge(d.ti_ids + mi.ti, d.ti_w + mi.ti, mi.n_ti,
                            d.ti_ids + mj.ti, d.ti_w + mj.ti, mj.n_ti, &c2, &sw)
    # --- venue
    c = 0
    phi[7] = 0.0
    if _meet(mi.sig + SIG_VE, mj.sig + SIG_VE):
        if rowm:
            phi[7] = _look_count(d.wm_ve, d.hm_ve, d.ve_ids + mj.ve, d.ve_w + mj.ve, mj.n_ve,
                                 &c, &sw)
        else:
            phi[7] = _merge(d.ve_ids + mi.ve, d.ve_w + mi.ve, mi.n_ve,
                            d.ve_ids + mj.ve, d.ve_w + mj.ve, mj.n_ve, &c, &sw)
    phi[8] = 1.0 if (mi.venue_id >= 0 and mi.venue_id == mj.venue_id) else 0.0
    nvi = mi.n_ve
    nvj = mj.n_ve
    if nvi > 0 and nvj > 0 and phi[8] == 0.0 and (c == nvi or c == nvj):
        phi[49] = 1.0
    else:
        phi[49] = 0.0
    # --- affiliation
    if mi.affil_id >= 0 and mj.affil_id >= 0:
        phi[9] = 0.0
        if _meet(mi.sig + SIG_AF, mj.sig + SIG_AF):
            if rowm:
                phi[9] = _look(d.wm_af, d.af_ids + mj.af, d.af_w + mj.af, mj.n_af)
            else:
                phi[9] = _merge(d.af_ids + mi.af, d.af_w + mi.af, mi.n_af,
                                d.af_ids + mj.af, d.af_w + mj.af, mj.n_af, &c2, &sw)
        phi[10] = 0.0
        phi[11] = 1.0 if mi.affil_id == mj.affil_id else 0.0
    else:
        phi[9] = 0.0
        phi[10] = 1.0
        phi[11] = 0.0
    # --- year gap
    if mi.year >= 0 and mj.year >= 0:
        gap = fabs(<double>(mi.year - mj.year))
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
    if mi.first_code >= 0 and mi.first_code == mj.first_code:
        phi[15] = 1.0
    elif mi.first_init < 0 or mj.first_init < 0 or mi.first_init == mj.first_init:
        phi[15] = 0.5
    else:
        phi[15] = 0.0
    # --- block size (prior of co-reference falls with the number of mentions)
    phi[16] = d.log_n * phi[0]
    # --- coauthor-graph components (transitive coauthor evidence inside the block)
    phi[17] = 1.0 if mi.comp1 == mj.comp1 else 0.0
    phi[18] = 1.0 if mi.comp2 == mj.comp2 else 0.0
    phi[19] = phi[17] * mi.comp1_logsize
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
        dot = _title_profile(d, mi, i, mj, 1 if rowm else 0)
        dot += _title_profile(d, mj, j, mi, 2 if rowm else 0)
        phi[24] = 0.5 * dot
        phi[25] = mi.comp1_logsize + mj.comp1_logsize
    phi[26] = 1.0 if mi.comp3 == mj.comp3 else 0.0
    phi[27] = d.log_n
    phi[28] = d.comp_frac
    phi[29] = d.title_coh
    phi[30] = d.venue_coh
    phi[31] = d.affil_coh
    phi[32] = d.name_middle
    # --- coauthors keyed by initials: shared count, and shared only through initials
    if _meet(mi.sig + SIG_CK, mj.sig + SIG_CK) and rowm:
        # a shared key: ok when either full first name is unknown or they agree
        for b in range(mj.ck, mj.ck + mj.n_ck):
            ia = d.ck_ids[b]
            ib = d.fm_ck[ia]
            ok = d.hm_ck[ia] & ((ib < 0) | (d.ck_fn[b] < 0) | (ib == d.ck_fn[b]))
            n_ok += ok
            n_bad += d.hm_ck[ia] - ok
    elif _meet(mi.sig + SIG_CK, mj.sig + SIG_CK):
        a = mi.ck
        ae = a + mi.n_ck
        b = mj.ck
        be = b + mj.n_ck
        while a < ae and b < be:
            ia = d.ck_ids[a]
            ib = d.ck_ids[b]
            if ia == ib:
                if d.ck_fn[a] < 0 or d.ck_fn[b] < 0 or d.ck_fn[a] == d.ck_fn[b]:
                    n_ok += 1
                else:
                    n_bad += 1
            a += ia <= ib
            b += ib <= ia
    phi[33] = log1p(<double>(n_ok + n_bad)) if n_ok + n_bad > 0 else 0.0
    phi[34] = phi[33] - phi[0] if phi[33] > phi[0] else 0.0
    phi[51] = log1p(<double>n_ok) if n_ok > 0 else 0.0
    phi[52] = log1p(<double>n_bad) if n_bad > 0 else 0.0
    # --- name variants: full first names, initials (prefix-compatible), middle initials
    fi = mi.first_code
    fj = mj.first_code
    li = mi.init_len
    lj = mj.init_len
    if li > 0 and lj > 0:
        if li <= lj:
            compat = (mj.init_code >> (5 * (lj - li))) == mi.init_code
        else:
            compat = (mi.init_code >> (5 * (li - lj))) == mj.init_code
    else:
        compat = False
    phi[39] = 1.0 if (mi.given_code >= 0 and mi.given_code == mj.given_code) else 0.0
    # "Jian Xin" / "Jianxin": first names differ, whole given names agree -> same first name
    phi[35] = 1.0 if ((fi >= 0 and fi == fj) or phi[39] > 0.0) else 0.0
    phi[36] = 1.0 if ((fi >= 0 and fj >= 0 and fi != fj and phi[39] == 0.0)
                      or (li > 0 and lj > 0 and mi.first_init != mj.first_init)) else 0.0
    phi[37] = 1.0 if (phi[35] == 0.0 and phi[36] == 0.0 and compat and (fi < 0 or fj < 0)) else 0.0
    phi[38] = 1.0 if (mi.mid_init >= 0 and mj.mid_init >= 0 and mi.mid_init != mj.mid_init) else 0.0
    if phi[35] > 0.0:  # the rarer reading of the two first names (symmetric in i, j)
        phi[40] = mi.name_rarity if mi.name_rarity < mj.name_rarity else mj.name_rarity
    else:
        phi[40] = 0.0
    phi[41] = mi.init_amb if phi[37] > 0.0 else 0.0
    # --- abstract and keywords (missing is never a match)
    if mi.n_ab > 0 and mj.n_ab > 0:
        phi[42] = 0.0
        if _meet(mi.sig + SIG_AB, mj.sig + SIG_AB):
            if rowm:
                phi[42] = _look(d.wm_ab, d.ab_ids + mj.ab, d.ab_w + mj.ab, mj.n_ab)
            else:
                phi[42] = _merge(d.ab_ids + mi.ab, d.ab_w + mi.ab, mi.n_ab,
                                 d.ab_ids + mj.ab, d.ab_w + mj.ab, mj.n_ab, &c2, &sw)
        phi[43] = 0.0
    else:
        phi[42] = 0.0
        phi[43] = 1.0
    if mi.n_kw > 0 and mj.n_kw > 0:
        phi[44] = 0.0
        if _meet(mi.sig + SIG_KW, mj.sig + SIG_KW):
            if rowm:
                phi[44] = _look(d.wm_kw, d.kw_ids + mj.kw, d.kw_w + mj.kw, mj.n_kw)
            else:
                phi[44] = _merge(d.kw_ids + mi.kw, d.kw_w + mi.kw, mi.n_kw,
                                 d.kw_ids + mj.kw, d.kw_w + mj.kw, mj.n_kw, &c2, &sw)
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
    if _meet(mi.sig + SIG_VA, mj.sig + SIG_VT):
        if rowm:
            dot = _look(d.wm_va, d.vt_ids + mj.vt, d.vt_w + mj.vt, mj.n_vt)
        else:
            dot = _merge(d.va_ids + mi.va, d.va_w + mi.va, mi.n_va,
                         d.vt_ids + mj.vt, d.vt_w + mj.vt, mj.n_vt, &c2, &sw)
    if _meet(mj.sig + SIG_VA, mi.sig + SIG_VT):
        if rowm:
            # the row's vt weights times j's va weights: the merge's product order
            dot += _look_rev(d.wm_vt, d.va_ids + mj.va, d.va_w + mj.va, mj.n_va)
        else:
            dot += _merge(d.va_ids + mj.va, d.va_w + mj.va, mj.n_va,
                          d.vt_ids + mi.vt, d.vt_w + mi.vt, mi.n_vt, &c2, &sw)
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


cdef inline void _fill_sig(uint64_t* sig, const long long* ptr, const int* ids,
                           Py_ssize_t r) noexcept nogil:
    """128-bit signature (2 words) of row r of a CSR id list."""
    cdef long long a
    cdef uint64_t h
    sig[0] = 0
    sig[1] = 0
    for a in range(ptr[r], ptr[r + 1]):
        h = (<uint64_t>(<unsigned int>ids[a]) * <uint64_t>0x9E3779B97F4A7C15) >> 57
        sig[<int>(h >> 6)] |= (<uint64_t>1) << (h & 63)


cdef inline void _fill_records(BlockData* d, Mention* men) noexcept nogil:
    """Copy every mention's scalars, list locations and signatures into its record."""
    cdef Py_ssize_t r
    cdef Mention* m
    for r in range(d.n):
        m = men + r
        _fill_sig(m.sig + SIG_CO, d.co_ptr, d.co_ids, r)
        _fill_sig(m.sig + SIG_TI, d.ti_ptr, d.ti_ids, r)
        _fill_sig(m.sig + SIG_VE, d.ve_ptr, d.ve_ids, r)
        _fill_sig(m.sig + SIG_AF, d.af_ptr, d.af_ids, r)
        _fill_sig(m.sig + SIG_CK, d.ck_ptr, d.ck_ids, r)
        _fill_sig(m.sig + SIG_AB, d.ab_ptr, d.ab_ids, r)
        _fill_sig(m.sig + SIG_KW, d.kw_ptr, d.kw_ids, r)
        _fill_sig(m.sig + SIG_VA, d.va_ptr, d.va_ids, r)
        _fill_sig(m.sig + SIG_VT, d.vt_ptr, d.vt_ids, r)
        m.co = d.co_ptr[r]
        m.n_co = <int>(d.co_ptr[r + 1] - d.co_ptr[r])
        m.ti = d.ti_ptr[r]
        m.n_ti = <int>(d.ti_ptr[r + 1] - d.ti_ptr[r])
        m.ve = d.ve_ptr[r]
        m.n_ve = <int>(d.ve_ptr[r + 1] - d.ve_ptr[r])
        m.af = d.af_ptr[r]
        m.n_af = <int>(d.af_ptr[r + 1] - d.af_ptr[r])
        m.ck = d.ck_ptr[r]
        m.n_ck = <int>(d.ck_ptr[r + 1] - d.ck_ptr[r])
        m.ab = d.ab_ptr[r]
        m.n_ab = <int>(d.ab_ptr[r + 1] - d.ab_ptr[r])
        m.kw = d.kw_ptr[r]
        m.n_kw = <int>(d.kw_ptr[r + 1] - d.kw_ptr[r])
        m.va = d.va_ptr[r]
        m.n_va = <int>(d.va_ptr[r + 1] - d.va_ptr[r])
        m.vt = d.vt_ptr[r]
        m.n_vt = <int>(d.vt_ptr[r + 1] - d.vt_ptr[r])
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
        m.comp_idx = d.comp_idx[r] if d.comp_idx != NULL else 0
        m.comp1_logsize = d.comp1_logsize[r]
        m.name_rarity = d.name_rarity[r]
        m.init_amb = d.init_amb[r]


cdef inline bint _scan_field(const long long* ptr, const int* ids, const double* w,
                             Py_ssize_t n, int* max_id) noexcept nogil:
    """True when every row of a CSR id list is strictly increasing, ids >= 0, weights finite.

    Raises ``max_id`` to the largest id seen (``w`` may be NULL: no weight check).
    """
    cdef Py_ssize_t r
    cdef long long a
    cdef int prev
    for r in range(n):
        prev = -1
        for a in range(ptr[r], ptr[r + 1]):
            if ids[a] <= prev:
                return False
            prev = ids[a]
            if w != NULL and not isfinite(w[a]):
                return False
        if prev > max_id[0]:
            max_id[0] = prev
    return True


cdef inline void _scatter(double* wm, const int* ids, const double* w, long long a,
                          long long na) noexcept nogil:
    cdef long long k
    for k in range(a, a + na):
        wm[ids[k]] = w[k]


cdef inline void _unscatter(double* wm, const int* ids, long long a, long long na) noexcept nogil:
    cdef long long k
    for k in range(a, a + na):
        wm[ids[k]] = 0.0


cdef inline void row_set(BlockData* d, Py_ssize_t i) noexcept nogil:
    """Scatter the id lists of mention i (and the profiles of its comp1) into the row tables.

    Factors (i, j) then look the ids of j up instead of merging (same values, bit for
    bit); call ``row_clear(d)`` before scattering another mention.  No-op when the
    block has no row tables (``scatter_ok`` = 0).
    """
    cdef const Mention* m
    cdef long long k
    cdef int c
    if not d.scatter_ok:
        return
    m = d.men + i
    _scatter(d.wm_co, d.co_ids, d.co_w, m.co, m.n_co)
    _scatter(d.wm_ti, d.ti_ids, d.ti_w, m.ti, m.n_ti)
    _scatter(d.wm_ve, d.ve_ids, d.ve_w, m.ve, m.n_ve)
    _scatter(d.wm_af, d.af_ids, d.af_w, m.af, m.n_af)
    _scatter(d.wm_ab, d.ab_ids, d.ab_w, m.ab, m.n_ab)
    _scatter(d.wm_kw, d.kw_ids, d.kw_w, m.kw, m.n_kw)
    _scatter(d.wm_va, d.va_ids, d.va_w, m.va, m.n_va)
    _scatter(d.wm_vt, d.vt_ids, d.vt_w, m.vt, m.n_vt)
    for k in range(m.co, m.co + m.n_co):
        d.hm_co[d.co_ids[k]] = 1
    for k in range(m.ve, m.ve + m.n_ve):
        d.hm_ve[d.ve_ids[k]] = 1
    for k in range(m.ck, m.ck + m.n_ck):
        d.hm_ck[d.ck_ids[k]] = 1
        d.fm_ck[d.ck_ids[k]] = d.ck_fn[k]
    c = m.comp1
    _scatter(d.wm_pt, d.pt_ids, d.pt_w, d.pt_ptr[c], d.pt_ptr[c + 1] - d.pt_ptr[c])
    _scatter(d.wm_pv, d.pv_ids, d.pv_w, d.pv_ptr[c], d.pv_ptr[c + 1] - d.pv_ptr[c])
    _scatter(d.wm_pa, d.pa_ids, d.pa_w, d.pa_ptr[c], d.pa_ptr[c + 1] - d.pa_ptr[c])
    d.row = i


cdef inline void row_clear(BlockData* d) noexcept nogil:
    """Undo ``row_set``: every row table back to zero, row mode off."""
    cdef const Mention* m
    cdef long long k
    cdef int c
    if d.row < 0:
        return
    m = d.men + d.row
    _unscatter(d.wm_co, d.co_ids, m.co, m.n_co)
    _unscatter(d.wm_ti, d.ti_ids, m.ti, m.n_ti)
    _unscatter(d.wm_ve, d.ve_ids, m.ve, m.n_ve)
    _unscatter(d.wm_af, d.af_ids, m.af, m.n_af)
    _unscatter(d.wm_ab, d.ab_ids, m.ab, m.n_ab)
    _unscatter(d.wm_kw, d.kw_ids, m.kw, m.n_kw)
    _unscatter(d.wm_va, d.va_ids, m.va, m.n_va)
    _unscatter(d.wm_vt, d.vt_ids, m.vt, m.n_vt)
    for k in range(m.co, m.co + m.n_co):
        d.hm_co[d.co_ids[k]] = 0
    for k in range(m.ve, m.ve + m.n_ve):
        d.hm_ve[d.ve_ids[k]] = 0
    for k in range(m.ck, m.ck + m.n_ck):
        d.hm_ck[d.ck_ids[k]] = 0
        d.fm_ck[d.ck_ids[k]] = 0
    c = m.comp1
    _unscatter(d.wm_pt, d.pt_ids, d.pt_ptr[c], d.pt_ptr[c + 1] - d.pt_ptr[c])
    _unscatter(d.wm_pv, d.pv_ids, d.pv_ptr[c], d.pv_ptr[c + 1] - d.pv_ptr[c])
    _unscatter(d.wm_pa, d.pa_ids, d.pa_ptr[c], d.pa_ptr[c + 1] - d.pa_ptr[c])
    d.row = -1


cdef inline void _row_tables(BlockData* d, list keep, Py_ssize_t n_pt, Py_ssize_t n_pv,
                             Py_ssize_t n_pa) except *:
    """Allocate the row tables of ``row_set`` (zeros), or set ``scatter_ok`` = 0.

    ``n_pt``, ``n_pv``, ``n_pa``: rows of the component profiles (one per comp1 label).
    """
    import numpy as np
    cdef int mco = -1, mti = -1, mve = -1, maf = -1, mck = -1, mab = -1, mkw = -1, mv = -1
    cdef int mpv = -1, mpa = -1
    cdef bint ok
    cdef double[::1] a
    cdef unsigned char[::1] h
    cdef int[::1] f
    with nogil:
        ok = (_scan_field(d.co_ptr, d.co_ids, d.co_w, d.n, &mco)
              and _scan_field(d.ti_ptr, d.ti_ids, d.ti_w, d.n, &mti)
              and _scan_field(d.ve_ptr, d.ve_ids, d.ve_w, d.n, &mve)
              and _scan_field(d.af_ptr, d.af_ids, d.af_w, d.n, &maf)
              and _scan_field(d.ck_ptr, d.ck_ids, NULL, d.n, &mck)
              and _scan_field(d.ab_ptr, d.ab_ids, d.ab_w, d.n, &mab)
              and _scan_field(d.kw_ptr, d.kw_ids, d.kw_w, d.n, &mkw)
              and _scan_field(d.va_ptr, d.va_ids, d.va_w, d.n, &mv)
              and _scan_field(d.vt_ptr, d.vt_ids, d.vt_w, d.n, &mv)
              # profiles: title words share the ti table's code space (mti: the larger)
              and _scan_field(d.pt_ptr, d.pt_ids, d.pt_w, n_pt, &mti)
              and _scan_field(d.pv_ptr, d.pv_ids, d.pv_w, n_pv, &mpv)
              and _scan_field(d.pa_ptr, d.pa_ids, d.pa_w, n_pa, &mpa))
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


cdef inline BlockData make_block(object enc, const double[::1] theta, double bias,
                                 list keep, Py_ssize_t memo_max_bytes,
                                 bint row_tables=False) except *:
    """Point a BlockData at the arrays of an EncodedBlock (which must outlive it).

    Also builds the per-mention id-list signatures and, when each table fits in
    ``memo_max_bytes`` (0 = no memo), the component memo tables; these arrays are
    appended to ``keep``, which the caller must hold while the BlockData is used.
    ``row_tables``: also allocate the tables of ``row_set`` (when the block allows).
    """
    cdef BlockData d
    cdef unsigned char[::1] men_buf
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
    d.row = -1
    d.scatter_ok = False
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
    import numpy as np
    # component memo tables (NaN = not computed yet)
    d.n_comp = 0
    d.comp_idx = NULL
    d.cc_memo = NULL
    d.mc_memo = NULL
    # the memo tables hold features (no theta), so calls on one encoding may share them:
    # ``share_memo`` keeps a set on the encoding (see ``memo_arrays``); otherwise each
    # call allocates its own when ``memo_max_bytes`` > 0
    tables = getattr(enc, "_feature_memo", None)
    if tables is None and memo_max_bytes > 0:
        tables = memo_arrays(comp1, memo_max_bytes)
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
        _fill_records(&d, <Mention*>&men_buf[0])
    d.men = <const Mention*>&men_buf[0]
    if row_tables:
        _row_tables(&d, keep, pt_ptr.shape[0] - 1, pv_ptr.shape[0] - 1, pa_ptr.shape[0] - 1)
    return d
