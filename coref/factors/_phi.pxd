# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The pairwise features phi(x_i, x_j) and the factor f_theta(x_i, x_j) of one block.

``block_phi_base`` writes the N_BASE base features (their names and order:
``coref.factors.names.BASE_FEATURES``); ``block_factor`` = bias + theta . phi with the
interaction half (phi[k] * same_comp1) added only inside one coauthor component.  Same
values, bit for bit, as the textbook merges of the twin ``coref.factors._factors_py``:
a merge is skipped only when the signatures prove that the lists share no id (its
sums are then exactly 0.0 and its counts 0), memoised terms are the values computed
the first time, and row mode (``coref.factors._rows``) gives the merges' sums.
Per-mention data come from the packed records ``d.men``.
"""
from libc.math cimport log1p, fabs, exp

from coref.factors._block cimport (BlockData, Mention, N_BASE, MEMO_CC, COMP_DAMP, SAME_PAPER, CO_PREFETCH, SIG_CO,
                                   SIG_TI, SIG_VE, SIG_AF, SIG_CK, SIG_AB, SIG_KW, SIG_VA,
                                   SIG_VT)
from coref.factors._lists cimport (meet, merge_dot, look_dot, look_dot_rev, list_dot,
                                   list_count, csr_dot, csr_look, dense_dot)


cdef inline double gap_decades(double gap) noexcept nogil:
    """A gap in years, capped at 30, in decades."""
    if gap > 30.0:
        gap = 30.0
    return gap / 10.0


cdef inline double component_damping(double logsize_a, double logsize_b) noexcept nogil:
    """min(1, COMP_DAMP / sqrt(|A| |B|)) from the log sizes of two comp1 components.

    A term that depends on the two components only is the same for all |A| |B| pairs
    between them, so a sum of pairwise factors counts it |A| |B| times when A and B meet
    in one cluster; beyond COMP_DAMP^2 pairs its total grows as sqrt(|A| |B|) instead.
    """
    cdef double damp = COMP_DAMP * exp(-0.5 * (logsize_a + logsize_b))
    return damp if damp < 1.0 else 1.0


cdef inline void comp_terms(const BlockData* d, Py_ssize_t i, Py_ssize_t j,
                            double* out) noexcept nogil:
    """phi[20], phi[21], phi[22], phi[23], phi[47] of mentions in different comp1 components.

    They depend on the two components A, B only: read from (or computed into) the memo,
    damped by min(1, COMP_DAMP / sqrt(|A| |B|)) (``component_damping``).
    """
    cdef int ci = d.comp1[i], cj = d.comp1[j]
    cdef double* m = NULL
    cdef double damp
    cdef int k
    if d.cc_memo != NULL:
        m = d.cc_memo + (<Py_ssize_t>d.comp_idx[i] * d.n_comp + d.comp_idx[j]) * MEMO_CC
        if m[0] == m[0]:          # not NaN: computed before
            for k in range(MEMO_CC):
                out[k] = m[k]
            return
    if d.row == i:
        # row mode: ci's profiles are scattered (row_set); look cj's ids up (same sums)
        out[0] = csr_look(d.wm_pt, d.pt_ptr, d.pt_ids, d.pt_w, cj)
        out[1] = csr_look(d.wm_pv, d.pv_ptr, d.pv_ids, d.pv_w, cj)
        out[2] = csr_look(d.wm_pa, d.pa_ptr, d.pa_ids, d.pa_w, cj)
    else:
        out[0] = csr_dot(d.pt_ptr, d.pt_ids, d.pt_w, ci, cj)
        out[1] = csr_dot(d.pv_ptr, d.pv_ids, d.pv_w, ci, cj)
        out[2] = csr_dot(d.pa_ptr, d.pa_ids, d.pa_w, ci, cj)
    out[3] = 0.0
    if d.comp_ymin[ci] >= 0 and d.comp_ymin[cj] >= 0:
        if d.comp_ymin[ci] > d.comp_ymax[cj]:
            out[3] = gap_decades(<double>(d.comp_ymin[ci] - d.comp_ymax[cj]))
        elif d.comp_ymin[cj] > d.comp_ymax[ci]:
            out[3] = gap_decades(<double>(d.comp_ymin[cj] - d.comp_ymax[ci]))
        else:
            out[3] = gap_decades(0.0)
    if d.n_topics > 0:
        out[4] = dense_dot(d.comp_topic + ci * d.n_topics, d.comp_topic + cj * d.n_topics,
                           d.n_topics)
    else:
        out[4] = 0.0
    damp = component_damping(d.comp1_logsize[i], d.comp1_logsize[j])
    if damp < 1.0:
        for k in range(MEMO_CC):
            out[k] = out[k] * damp
    if m != NULL:
        for k in range(MEMO_CC):
            m[k] = out[k]


cdef inline double title_profile(const BlockData* d, const Mention* mi,
                                 Py_ssize_t i, const Mention* mj, int mode) noexcept nogil:
    """Title of mention i against the title profile of the comp1 component of j.

    ``mode`` 0: merge the two sorted lists; 1: i is the row (its title scattered in
    ``wm_ti``): look the profile's ids up; 2: j is the row (its component's title
    profile scattered in ``wm_pt``): look i's title ids up.  Same sums, bit for bit.
    """
    cdef double* m = NULL
    cdef double v, sw
    cdef int c
    cdef long long p0
    if d.mc_memo != NULL:
        m = d.mc_memo + i * d.n_comp + mj.comp_idx
        if m[0] == m[0]:
            return m[0]
    p0 = d.pt_ptr[mj.comp1]
    if mode == 1:
        v = look_dot(d.wm_ti, d.pt_ids + p0, d.pt_w + p0, d.pt_ptr[mj.comp1 + 1] - p0)
    elif mode == 2:
        v = look_dot_rev(d.wm_pt, d.ti_ids + mi.ti, d.ti_w + mi.ti, mi.n_ti)
    else:
        v = merge_dot(d.ti_ids + mi.ti, d.ti_w + mi.ti, mi.n_ti, d.pt_ids + p0, d.pt_w + p0,
                      d.pt_ptr[mj.comp1 + 1] - p0, &c, &sw)
    if m != NULL:
        m[0] = v
    return v


cdef inline void ck_counts(const BlockData* d, const Mention* mi, const Mention* mj,
                           bint rowm, int* n_ok, int* n_bad) noexcept nogil:
    """Coauthor keys (initial + last name) i and j share: names agree or unknown / clash."""
    cdef long long a, ae, b, be
    cdef int ia, ib, ok, c_ok = 0, c_bad = 0
    if meet(mi.sig + SIG_CK, mj.sig + SIG_CK):
        if rowm:
            # a shared key: ok when either full first name is unknown or they agree
            for b in range(mj.ck, mj.ck + mj.n_ck):
                ia = d.ck_ids[b]
                ib = d.fm_ck[ia]
                ok = d.hm_ck[ia] & ((ib < 0) | (d.ck_fn[b] < 0) | (ib == d.ck_fn[b]))
                c_ok += ok
                c_bad += d.hm_ck[ia] - ok
        else:
            a = mi.ck
            ae = a + mi.n_ck
            b = mj.ck
            be = b + mj.n_ck
            while a < ae and b < be:
                ia = d.ck_ids[a]
                ib = d.ck_ids[b]
                if ia == ib:
                    if d.ck_fn[a] < 0 or d.ck_fn[b] < 0 or d.ck_fn[a] == d.ck_fn[b]:
                        c_ok += 1
                    else:
                        c_bad += 1
                a += ia <= ib
                b += ib <= ia
    n_ok[0] = c_ok
    n_bad[0] = c_bad


cdef inline double log1p_count(int c) noexcept nogil:
    return log1p(<double>c) if c > 0 else 0.0


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
    """Write the N_BASE base features of mentions (i, j) into phi[0:N_BASE]."""
    cdef const Mention* mi = d.men + i
    cdef const Mention* mj = d.men + j
    cdef int c = 0
    cdef double sw = 0.0, dot
    cdef long long ni = mi.n_co
    cdef long long nj = mj.n_co
    cdef double ct[MEMO_CC]
    cdef int li, lj, fi, fj, n_ok = 0, n_bad = 0
    cdef long long nvi, nvj
    cdef bint compat
    cdef bint rowm = d.row == i
    # --- coauthors
    if meet(mi.sig + SIG_CO, mj.sig + SIG_CO):
        list_count(rowm, d.wm_co, d.hm_co, d.co_ids, d.co_w, mi.co, ni, mj.co, nj, &c, &sw)
    phi[0] = log1p_count(c)
    if ni + nj - c > 0:
        phi[1] = <double>c / <double>(ni + nj - c)
    else:
        phi[1] = 0.0
    phi[2] = sw
    phi[3] = 1.0 if c >= 1 else 0.0
    phi[4] = 1.0 if (ni == 0 or nj == 0) else 0.0
    phi[5] = 1.0 if c >= 2 else 0.0
    # --- title
    phi[6] = (list_dot(rowm, d.wm_ti, d.ti_ids, d.ti_w, mi.ti, mi.n_ti, mj.ti, mj.n_ti)
              if meet(mi.sig + SIG_TI, mj.sig + SIG_TI) else 0.0)
    # --- venue
    c = 0
    phi[7] = (list_count(rowm, d.wm_ve, d.hm_ve, d.ve_ids, d.ve_w, mi.ve, mi.n_ve, mj.ve, mj.n_ve,
                         &c, &sw)
              if meet(mi.sig + SIG_VE, mj.sig + SIG_VE) else 0.0)
    phi[8] = 1.0 if (mi.venue_id >= 0 and mi.venue_id == mj.venue_id) else 0.0
    nvi = mi.n_ve
    nvj = mj.n_ve
    if nvi > 0 and nvj > 0 and phi[8] == 0.0 and (c == nvi or c == nvj):
        phi[49] = 1.0
    else:
        phi[49] = 0.0
    # --- affiliation
    if mi.affil_id >= 0 and mj.affil_id >= 0:
        phi[9] = (list_dot(rowm, d.wm_af, d.af_ids, d.af_w, mi.af, mi.n_af, mj.af, mj.n_af)
                  if meet(mi.sig + SIG_AF, mj.sig + SIG_AF) else 0.0)
        phi[10] = 0.0
        phi[11] = 1.0 if mi.affil_id == mj.affil_id else 0.0
    else:
        phi[9] = 0.0
        phi[10] = 1.0
        phi[11] = 0.0
    # --- year gap
    if mi.year >= 0 and mj.year >= 0:
        phi[12] = gap_decades(fabs(<double>(mi.year - mj.year)))
        phi[13] = phi[12] * phi[12]
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
        comp_terms(d, i, j, ct)
        phi[20] = ct[0]
        phi[21] = ct[1]
        phi[22] = ct[2]
        phi[23] = ct[3]
        dot = title_profile(d, mi, i, mj, 1 if rowm else 0)
        dot += title_profile(d, mj, j, mi, 2 if rowm else 0)
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
    ck_counts(d, mi, mj, rowm, &n_ok, &n_bad)
    phi[33] = log1p_count(n_ok + n_bad)
    phi[34] = phi[33] - phi[0] if phi[33] > phi[0] else 0.0
    phi[51] = log1p_count(n_ok)
    phi[52] = log1p_count(n_bad)
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
        phi[42] = (list_dot(rowm, d.wm_ab, d.ab_ids, d.ab_w, mi.ab, mi.n_ab, mj.ab, mj.n_ab)
                   if meet(mi.sig + SIG_AB, mj.sig + SIG_AB) else 0.0)
        phi[43] = 0.0
    else:
        phi[42] = 0.0
        phi[43] = 1.0
    if mi.n_kw > 0 and mj.n_kw > 0:
        phi[44] = (list_dot(rowm, d.wm_kw, d.kw_ids, d.kw_w, mi.kw, mi.n_kw, mj.kw, mj.n_kw)
                   if meet(mi.sig + SIG_KW, mj.sig + SIG_KW) else 0.0)
        phi[45] = 0.0
    else:
        phi[44] = 0.0
        phi[45] = 1.0
    # --- topics (LSA) of the mentions and of their coauthor components
    if d.n_topics > 0:
        phi[46] = dense_dot(d.topic + i * d.n_topics, d.topic + j * d.n_topics, d.n_topics)
        phi[47] = ct[4]
    else:
        phi[46] = 0.0
        phi[47] = 0.0
    # --- venue acronym against the other venue's words (va and vt share one code space)
    dot = 0.0
    if meet(mi.sig + SIG_VA, mj.sig + SIG_VT):
        if rowm:
            dot = look_dot(d.wm_va, d.vt_ids + mj.vt, d.vt_w + mj.vt, mj.n_vt)
        else:
            dot = merge_dot(d.va_ids + mi.va, d.va_w + mi.va, mi.n_va,
                            d.vt_ids + mj.vt, d.vt_w + mj.vt, mj.n_vt, &c, &sw)
    if meet(mj.sig + SIG_VA, mi.sig + SIG_VT):
        if rowm:
            # the row's vt weights times j's va weights: the merge's product order
            dot += look_dot_rev(d.wm_vt, d.va_ids + mj.va, d.va_w + mj.va, mj.n_va)
        else:
            dot += merge_dot(d.va_ids + mj.va, d.va_w + mj.va, mj.n_va,
                             d.vt_ids + mi.vt, d.vt_w + mi.vt, mi.n_vt, &c, &sw)
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


cdef inline bint same_list(const int* co_ids, const Mention* mi, const Mention* mj) noexcept nogil:
    """The two mentions' coauthor id lists are equal (a duplicate record of one paper, not two authors)."""
    cdef int k
    if mi.n_co != mj.n_co:
        return False
    for k in range(mi.n_co):
        if co_ids[mi.co + k] != co_ids[mj.co + k]:
            return False
    return True


cdef inline double block_factor(const BlockData* d, Py_ssize_t i, Py_ssize_t j) noexcept nogil:
    """f_theta(x_i, x_j) = theta . phi(x_i, x_j) + bias (a log-odds, natural log).

    The interaction half phi[N_BASE + k] = phi[k] * same_comp1 is not materialised:
    same_comp1 is 0 or 1, so its terms are added only inside one coauthor component
    (adding theta * 0.0 would not change the sum). Paper mates (one paper, coauthor lists
    that differ: ``coref.factors.papers``) get SAME_PAPER nats less: they are two authors.
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
    if (d.men[i].paper >= 0 and d.men[i].paper == d.men[j].paper
            and not same_list(d.co_ids, d.men + i, d.men + j)):
        s -= SAME_PAPER
    return s

