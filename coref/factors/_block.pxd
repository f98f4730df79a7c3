# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Declarations of the factor kernel: constants, the packed mention record, the block view.

``BlockData`` holds raw pointers into the arrays of one encoded block (set by
``coref.factors._setup.make_block``) plus the acceleration structures built for it;
``Mention`` packs one mention's scalars, list locations and id-list signatures.  The
feature count ``N_BASE`` must equal ``coref.factors.names.N_BASE`` (the compiled
module exposes it as ``n_base``; a test compares the two).
"""
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
    # block size at which the block-size features (log_n, co_log_count_logn) saturate:
    # they use log(min(n, N_SAT)) (must equal coref.factors.names.BLOCK_SIZE_SATURATION)
    N_SAT = 512
    # component-level terms (phi[20..23], phi[47]) of two comp1 components A, B are damped by
    # min(1, COMP_DAMP / sqrt(|A| |B|)) (must equal coref.factors.names.COMPONENT_DAMPING)
    COMP_DAMP = 20
    # nats subtracted from the factor of two mentions of one paper (a constraint: two authors;
    # must equal coref.factors.names.SAME_PAPER_PENALTY)
    SAME_PAPER = 1000000
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
    int init_code, init_len, mid_init, given_code, comp_idx, paper
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
    const int* paper_code    # the paper (a constraint only: two mentions of it are two authors), -1 = unknown
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
    # paper mates (``coref.factors.papers``): CSR, NULL = none in the block; forb: (n + 1,)
    # zeroed work flags, set by racing Gibbs on the clusters a moving mention may not join
    const long long* mate_ptr
    const long long* mate_idx
    char* forb
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
