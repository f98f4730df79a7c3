# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: extra_compile_args = -ffp-contract=off
"""Compiled block assembly: the arrays of one :class:`coref.encoding.blocks.EncodedBlock`.

:func:`assemble` does in one call what the numpy twin ``coref.encoding._assemble_py.assemble_block_py``
does in ~35 numpy calls (whose per-call overhead, not the arithmetic, dominated on blocks
of ~10 mentions): block-local first-appearance codes (coauthors, keys, venues, names,
acronyms), block-local coauthor IDF, block-local columns of unseen words, the component
profiles (top words, summed TF-IDF, L2-normalised), component year ranges and topic
vectors, the name statistics and the block statistics. The connected components of the
coauthor graphs come in as arguments: scipy computes them (``coref.encoding.components``), for many
blocks in one call.

Floating-point sums run sequentially in a fixed order (entry order, or the order stated
at each sum), so the result is deterministic for a given build; the tests compare every
array with the twin's (integers exactly, floats to a relative 1e-12).

The arrays are checked for dtype, length and CSR consistency (``ValueError`` naming the
array); the table ids are trusted to be those of a valid
:class:`coref.encoding.mentions.MentionEncoding` (``MentionEncoding.validate``). Built with
``-ffp-contract=off`` (no fused multiply-adds), so another compiler or CPU rounds alike.
"""
import numpy as np

cimport numpy as cnp
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.math cimport log, sqrt
from libc.stdint cimport INT64_MIN, int32_t, int64_t, uint64_t
from libc.string cimport memcpy, memset
from libc.stdlib cimport qsort

cnp.import_array()

ctypedef int64_t i64
ctypedef int32_t i32

cdef i64 _EMPTY = INT64_MIN

#: TF-IDF CSR prefixes in the order of ``n_vocab`` (title, venue, affiliation, abstract, keywords)
TEXT_PREFIXES = ("ti", "ve", "af", "ab", "kw")


# --------------------------------------------------------------------------- memory

cdef struct Arena:
    char* block          # caller's scratch block (on its stack), bump-allocated
    size_t used
    size_t size
    void** ptrs          # allocations that did not fit in the block
    int count
    int cap


cdef void _arena_init(Arena* ar, char* block, size_t size) noexcept:
    ar.block = block
    ar.used = 0
    ar.size = size
    ar.ptrs = NULL
    ar.count = 0
    ar.cap = 0


cdef void* _alloc(Arena* ar, size_t size) except NULL:
    """Scratch memory (16-byte aligned) freed by ``_arena_free``."""
    cdef void** grown
    cdef void* p
    size = (size + 15) & ~(<size_t>15)
    if size == 0:
        size = 16
    if ar.used + size <= ar.size:
        p = ar.block + ar.used
        ar.used += size
        return p
    if ar.count == ar.cap:
        grown = <void**>PyMem_Malloc((2 * ar.cap + 8) * sizeof(void*))
        if grown == NULL:
            raise MemoryError()
        if ar.count:
            memcpy(grown, ar.ptrs, ar.count * sizeof(void*))
        PyMem_Free(ar.ptrs)
        ar.ptrs = grown
        ar.cap = 2 * ar.cap + 8
    p = PyMem_Malloc(size)
    if p == NULL:
        raise MemoryError()
    ar.ptrs[ar.count] = p
    ar.count += 1
    return p


cdef void _arena_free(Arena* ar) noexcept:
    cdef int k
    for k in range(ar.count):
        PyMem_Free(ar.ptrs[k])
    PyMem_Free(ar.ptrs)
    ar.ptrs = NULL
    ar.count = 0


# --------------------------------------------------------------------------- int64 -> int64 hash map

cdef struct Map:
    i64* keys
    i64* vals
    i64 mask
    int shift


cdef int _map_init(Map* m, i64 n_items, Arena* ar) except -1:
    cdef i64 cap = 8, k
    cdef int bits = 3
    while cap < 2 * n_items:
        cap <<= 1
        bits += 1
    m.keys = <i64*>_alloc(ar, 2 * cap * sizeof(i64))
    m.vals = m.keys + cap
    for k in range(cap):
        m.keys[k] = _EMPTY
    m.mask = cap - 1
    m.shift = 64 - bits
    return 0


cdef inline i64 _slot(const Map* m, i64 key) noexcept nogil:
    """The slot holding ``key``, or the empty slot where it would go."""
    cdef i64 s = <i64>((<uint64_t>key * <uint64_t>0x9E3779B97F4A7C15) >> m.shift)
    while m.keys[s] != _EMPTY and m.keys[s] != key:
        s = (s + 1) & m.mask
    return s


cdef inline i64 _get(const Map* m, i64 key, i64 default) noexcept nogil:
    cdef i64 s = _slot(m, key)
    return default if m.keys[s] == _EMPTY else m.vals[s]


# --------------------------------------------------------------------------- sorts

cdef struct KP:      # sort key and position (entries start in position order; sorts are stable)
    i64 key
    i64 pos


cdef struct VI:      # profile word: summed weight and id, ordered by (val desc, id asc)
    double val
    i64 id


cdef int _kp_cmp(const void* x, const void* y) noexcept nogil:
    """By key, then by position: with distinct positions, the order of a stable sort by key."""
    cdef const KP* a = <const KP*>x
    cdef const KP* b = <const KP*>y
    if a.key != b.key:
        return -1 if a.key < b.key else 1
    return (a.pos > b.pos) - (a.pos < b.pos)


cdef int _vi_cmp_val(const void* x, const void* y) noexcept nogil:
    """By summed weight, largest first, then by word id (ids distinct: a total order)."""
    cdef const VI* a = <const VI*>x
    cdef const VI* b = <const VI*>y
    if a.val != b.val:
        return -1 if a.val > b.val else 1
    return (a.id > b.id) - (a.id < b.id)


cdef int _vi_cmp_id(const void* x, const void* y) noexcept nogil:
    cdef const VI* a = <const VI*>x
    cdef const VI* b = <const VI*>y
    return (a.id > b.id) - (a.id < b.id)


cdef inline void _kp_sort(KP* v, i64 m) noexcept nogil:
    """Stable sort by key (libc ``qsort`` on (key, position))."""
    if m > 1:
        qsort(v, m, sizeof(KP), _kp_cmp)


cdef inline void _vi_sort(VI* v, i64 m, bint by_id) noexcept nogil:
    """Sort by (val desc, id asc), or by id (``qsort``; ids are distinct)."""
    if m > 1:
        qsort(v, m, sizeof(VI), _vi_cmp_id if by_id else _vi_cmp_val)


# --------------------------------------------------------------------------- float sums

cdef inline double _sum(const double* x, i64 m) noexcept nogil:
    """Sequential sum of ``x[0 .. m - 1]`` from 0.0."""
    cdef double f = 0.0
    cdef i64 k
    for k in range(m):
        f += x[k]
    return f


# --------------------------------------------------------------------------- arrays in and out

cdef inline cnp.ndarray _empty(i64 m, int typenum):
    cdef cnp.npy_intp d = m
    return cnp.PyArray_EMPTY(1, &d, typenum, 0)


cdef inline cnp.ndarray _zeros(i64 m, int typenum):
    cdef cnp.npy_intp d = m
    return cnp.PyArray_ZEROS(1, &d, typenum, 0)


cdef inline i64* _p64(cnp.ndarray x) noexcept:
    return <i64*>cnp.PyArray_DATA(x)


cdef inline i32* _p32(cnp.ndarray x) noexcept:
    return <i32*>cnp.PyArray_DATA(x)


cdef inline double* _pf(cnp.ndarray x) noexcept:
    return <double*>cnp.PyArray_DATA(x)


_DTYPE_NAMES = {cnp.NPY_INT64: "int64", cnp.NPY_INT32: "int32", cnp.NPY_FLOAT64: "float64"}


cdef cnp.ndarray _arg(dict a, str name, int typenum, i64 length, list keep):
    """The array ``a[name]`` (1-D, given dtype, ``length`` entries unless -1), C-contiguous."""
    obj = a.get(name)
    if obj is None:
        raise ValueError(f"encoding lacks the array {name!r}")
    if not cnp.PyArray_Check(obj):
        raise ValueError(f"array {name!r} must be a numpy array; got {type(obj).__name__}")
    cdef cnp.ndarray arr = <cnp.ndarray>obj
    if cnp.PyArray_TYPE(arr) != typenum or cnp.PyArray_NDIM(arr) != 1:
        raise ValueError(f"array {name!r} must be a 1-D {_DTYPE_NAMES[typenum]} array; got "
                         f"{(<object>arr).ndim}-D {(<object>arr).dtype}")
    if length >= 0 and cnp.PyArray_DIM(arr, 0) != length:
        raise ValueError(f"array {name!r} has {cnp.PyArray_DIM(arr, 0)} entries, expected {length}")
    if not cnp.PyArray_ISCARRAY_RO(arr):
        arr = np.ascontiguousarray(arr, dtype=(<object>arr).dtype.newbyteorder("="))
    keep.append(arr)
    return arr


cdef cnp.ndarray _csr_ptr(dict a, str name, i64 n, list keep):
    """``a[name]`` checked as a CSR ptr: n + 1 int64 entries from 0, never decreasing."""
    cdef cnp.ndarray ptr = _arg(a, name, cnp.NPY_INT64, n + 1, keep)
    cdef const i64* q = _p64(ptr)
    cdef i64 r
    if q[0] != 0:
        raise ValueError(f"array {name!r} must start at 0")
    for r in range(n):
        if q[r + 1] < q[r]:
            raise ValueError(f"array {name!r} decreases at row {r}")
    return ptr


cdef cnp.ndarray _comp_arg(dict comps, str name, i64 n, list keep):
    """A copy of ``comps[name]``: n int32 component labels numbered by first mention (each
    label at most one above every label before it), so 0 <= label < n."""
    cdef cnp.ndarray arr = _copy(_arg(comps, name, cnp.NPY_INT32, n, keep))
    cdef const i32* q = _p32(arr)
    cdef i64 r, top = -1
    for r in range(n):
        if q[r] < 0 or q[r] > top + 1:
            raise ValueError(f"array {name!r} is not numbered by first mention at row {r}")
        if q[r] > top:
            top = q[r]
    return arr


cdef inline cnp.ndarray _copy(cnp.ndarray x):
    return cnp.PyArray_NewCopy(x, cnp.NPY_CORDER)


# --------------------------------------------------------------------------- pieces

cdef i64 _code_map(const i32* v, i64 m, i32* codes, Map* mp, Arena* ar) except -1:
    """Codes 0, 1, ... by first appearance of the values v[k] >= 0: ``mp`` (initialised here)
    maps each value to its code; ``codes[k]`` (unless NULL) is v[k]'s code, -1 where v[k] < 0
    (as ``_codes_of``). Returns the number of codes."""
    cdef i64 k, s, nxt = 0
    _map_init(mp, m, ar)
    for k in range(m):
        if v[k] < 0:
            if codes != NULL:
                codes[k] = -1
            continue
        s = _slot(mp, v[k])
        if mp.keys[s] == _EMPTY:
            mp.keys[s] = v[k]
            mp.vals[s] = nxt
            nxt += 1
        if codes != NULL:
            codes[k] = <i32>mp.vals[s]
    return nxt


cdef i64 _first_codes(const i32* v, i64 m, i32* codes, Arena* ar) except -1:
    """codes[k]: 0, 1, ... by first appearance of v[k] (-1 where v[k] < 0). Returns the number of codes."""
    cdef Map mp
    return _code_map(v, m, codes, &mp, ar)


cdef int _sort_rows(i64 n, const i64* ptr, const i32* codes, i64* perm, Arena* ar) except -1:
    """perm[ptr[r]:ptr[r + 1]]: the entries of row r stably sorted by code (``np.lexsort``)."""
    cdef i64 r, s, e, k, widest = 0
    cdef bint ordered
    cdef KP* buf = NULL
    for r in range(n):
        s = ptr[r]
        e = ptr[r + 1]
        ordered = True
        for k in range(s + 1, e):
            if codes[k] < codes[k - 1]:
                ordered = False
                break
        if ordered:
            for k in range(s, e):
                perm[k] = k
            continue
        if buf == NULL:
            for k in range(n):
                if ptr[k + 1] - ptr[k] > widest:
                    widest = ptr[k + 1] - ptr[k]
            buf = <KP*>_alloc(ar, widest * sizeof(KP))
        for k in range(s, e):
            buf[k - s].key = codes[k]
            buf[k - s].pos = k
        _kp_sort(buf, e - s)
        for k in range(s, e):
            perm[k] = buf[k - s].pos
    return 0


cdef tuple _rows_by_code(i64 n, const i64* ptr, const i32* codes, const double* w_of_code, double pad_w,
                         i64* perm, Arena* ar):
    """(ids int32, w float64) of a CSR list with each row's entries stably sorted by code
    (``perm`` receives the order): ids[k] the code, w[k] = w_of_code[code] (1.0 if NULL),
    then one padding entry (0, pad_w)."""
    cdef i64 k, nnz = ptr[n]
    _sort_rows(n, ptr, codes, perm, ar)
    cdef cnp.ndarray oids = _empty(nnz + 1, cnp.NPY_INT32)
    cdef cnp.ndarray ow = _empty(nnz + 1, cnp.NPY_FLOAT64)
    for k in range(nnz):
        _p32(oids)[k] = codes[perm[k]]
        _pf(ow)[k] = 1.0 if w_of_code == NULL else w_of_code[codes[perm[k]]]
    _p32(oids)[nnz] = 0
    _pf(ow)[nnz] = pad_w
    return oids, ow


cdef tuple _profiles(i64 n, const i32* comp, i64 ncomp, const i64* ptr, const i32* ids, const double* w,
                     i64 top, Arena* ar):
    """(ptr, ids, w) of the component profiles: per component, the member weights summed per word
    in entry order (from 0.0), the ``top`` largest (ties: smaller id), divided by their norm
    (squares summed in that order), then sorted by word id; row r = component r."""
    cdef i64 nnz = ptr[n], c, i, k, j, g, s, kept, width = 0, total = 0, key
    cdef cnp.ndarray out_ptr = _zeros(n + 1, cnp.NPY_INT64)
    cdef i64* optr = _p64(out_ptr)
    cdef i64* start
    cdef i64* members
    cdef VI* grp
    cdef double* sq
    cdef double norm
    cdef i32* res_ids
    cdef double* res_w
    cdef Map mp
    cdef cnp.ndarray out_ids, out_w
    if nnz == 0:
        out_ids = _zeros(1, cnp.NPY_INT32)
        out_w = _zeros(1, cnp.NPY_FLOAT64)
        return out_ptr, out_ids, out_w
    # members of each component, in mention order (counting sort)
    start = <i64*>_alloc(ar, (ncomp + 1) * sizeof(i64))
    members = <i64*>_alloc(ar, n * sizeof(i64))
    memset(start, 0, (ncomp + 1) * sizeof(i64))
    for i in range(n):
        start[comp[i] + 1] += 1
    for c in range(ncomp):
        start[c + 1] += start[c]
    for i in range(n):
        members[start[comp[i]]] = i
        start[comp[i]] += 1
    for c in range(ncomp - 1, 0, -1):
        start[c] = start[c - 1]
    start[0] = 0
    for k in range(nnz):
        if ids[k] >= width:
            width = <i64>ids[k] + 1
    _map_init(&mp, nnz, ar)                     # (component, word) -> its entry in grp
    grp = <VI*>_alloc(ar, nnz * sizeof(VI))
    sq = <double*>_alloc(ar, nnz * sizeof(double))
    res_ids = <i32*>_alloc(ar, nnz * sizeof(i32))
    res_w = <double*>_alloc(ar, nnz * sizeof(double))
    for c in range(ncomp):
        g = 0
        for j in range(start[c], start[c + 1]):
            i = members[j]
            for k in range(ptr[i], ptr[i + 1]):
                key = c * width + ids[k]
                s = _slot(&mp, key)
                if mp.keys[s] == _EMPTY:
                    mp.keys[s] = key
                    mp.vals[s] = g
                    grp[g].val = 0.0
                    grp[g].id = ids[k]
                    g += 1
                grp[mp.vals[s]].val += w[k]      # entry order, as np.bincount
        if g == 0:
            continue
        _vi_sort(grp, g, False)                 # largest first, then smaller id
        kept = g if g < top else top
        for k in range(kept):
            sq[k] = grp[k].val * grp[k].val
        norm = sqrt(_sum(sq, kept))
        for k in range(kept):
            grp[k].val = grp[k].val / norm
        _vi_sort(grp, kept, True)               # by word id
        for k in range(kept):
            res_ids[total + k] = <i32>grp[k].id
            res_w[total + k] = grp[k].val
        total += kept
        optr[c + 1] = kept
    for c in range(n):
        optr[c + 1] += optr[c]
    out_ids = _empty(total + 1, cnp.NPY_INT32)
    out_w = _empty(total + 1, cnp.NPY_FLOAT64)
    memcpy(cnp.PyArray_DATA(out_ids), res_ids, total * sizeof(i32))
    memcpy(cnp.PyArray_DATA(out_w), res_w, total * sizeof(double))
    _p32(out_ids)[total] = 0
    _pf(out_w)[total] = 0.0
    return out_ptr, out_ids, out_w


cdef double _coherence(i64 n, const i64* ptr, const i32* ids, const double* w, Arena* ar) except? -1.0:
    """Squared norm of the summed rows (word sums in entry order; squares summed in order of
    the words' first appearance) over the squared number of non-empty rows."""
    cdef i64 rows = 0, r, k, nnz = ptr[n], nc
    cdef i32* codes
    cdef double* acc
    for r in range(n):
        if ptr[r + 1] != ptr[r]:
            rows += 1
    if rows == 0:
        return 0.0
    codes = <i32*>_alloc(ar, nnz * sizeof(i32))
    nc = _first_codes(ids, nnz, codes, ar)
    acc = <double*>_alloc(ar, nc * sizeof(double))
    for k in range(nc):
        acc[k] = 0.0
    for k in range(nnz):
        acc[codes[k]] += w[k]
    for k in range(nc):
        acc[k] = acc[k] * acc[k]
    return _sum(acc, nc) / <double>(rows * rows)


# --------------------------------------------------------------------------- the block

# names of the arrays read and written (interned once: dict look-ups hash nothing per call)
_TEXT_NAMES = tuple((p + "_ptr", p + "_ids", p + "_w") for p in TEXT_PREFIXES)
_CODE_NAMES = (("venue_g", "venue_id"), ("affil_g", "affil_id"), ("first_g", "first_code"),
               ("given_g", "given_code"), ("paper_g", "paper_code"))
_COPY_NAMES = ("year", "first_init", "init_code", "init_len", "mid_init")
_PROFILE_NAMES = (("pt_ptr", "pt_ids", "pt_w", 80), ("pv_ptr", "pv_ids", "pv_w", 25), ("pa_ptr", "pa_ids", "pa_w", 25))

cdef enum:
    SCRATCH_DOUBLES = 4096       # per-call scratch on the stack, 32 kB (beyond: PyMem_Malloc)


def assemble(dict a, tuple n_vocab, Py_ssize_t n, Py_ssize_t n_topics, dict comps):
    """Every array of the :class:`coref.encoding.blocks.EncodedBlock` of one block.

    Parameters
    ----------
    a : dict of str -> ndarray
        ``MentionEncoding.arrays`` of the block's mentions, in block row order (dtypes as
        documented there; CSR ``*_ptr`` int64 of shape (n + 1,) starting at 0).
    n_vocab : tuple of 5 int
        V per TF-IDF field, in the order title, venue, affiliation, abstract, keywords.
    n : int
        Number of mentions.
    n_topics : int
        Columns of ``a["topic"]`` (shape (n, n_topics), float64).
    comps : dict of str -> ndarray
        ``comp1``, ``comp2``, ``comp3``: int32 of shape (n,), the components of the
        shared-coauthor graphs (>= 1 and >= 2 shared coauthors, >= 1 shared initial + last
        name key), numbered 0, 1, ... in the order of each component's first mention, as
        :func:`coref.encoding.components.token_components` (scipy) computes them.

    Returns
    -------
    dict of str -> ndarray or tuple
        The ``EncodedBlock`` fields except ``n``, ``n_topics`` and ``mention_id``
        (``block_stats`` a tuple of 5 floats).

    Raises
    ------
    ValueError
        If an array is missing or has the wrong dtype, shape or CSR layout, or a component
        array is not numbered by first mention (the message names it).
    """
    cdef list keep = []
    cdef dict out = {}
    cdef Arena ar
    cdef double scratch[SCRATCH_DOUBLES]
    if len(n_vocab) != 5:
        raise ValueError(f"n_vocab must hold 5 sizes; got {n_vocab!r}")
    if n < 0 or n_topics < 0:
        raise ValueError(f"n and n_topics must be >= 0; got {n}, {n_topics}")
    _arena_init(&ar, <char*>scratch, SCRATCH_DOUBLES * sizeof(double))
    try:
        _assemble(a, n_vocab, n, n_topics, comps, out, keep, &ar)
    finally:
        _arena_free(&ar)
    return out


cdef int _assemble(dict a, tuple n_vocab, i64 n, i64 kt, dict comps, dict out, list keep, Arena* ar) except -1:
    cdef i64 r, k, s, m, nnz, nc, V, nun, lo, hi, mid, ncomp1 = 0, c, i, key, n_middle = 0
    cdef int f
    cdef const i64* ptr
    cdef const i32* ids
    cdef const i32* iv
    cdef const double* w
    cdef i32* codes
    cdef i32* co_codes
    cdef i32* comp1
    cdef i64* perm
    cdef i64* cnt
    cdef i64* un
    cdef i64* vt_ptr
    cdef KP* kp
    cdef double* dw
    cdef double* idf
    cdef double* sq
    cdef double norm, dn = <double>n
    cdef Map mp, mp2, mpair
    cdef cnp.ndarray x, optr, oids, ow, ofn, oi
    cdef i32* text_ids[5]
    cdef const double* text_w[5]
    cdef const i64* text_ptr[5]
    cdef const i32* first_g
    cdef const i32* first0
    cdef const i32* first_init
    cdef const i32* year
    cdef const i32* middle
    cdef const i32* fs
    cdef const double* T

    # ---------------- coauthors: first-appearance codes, block-local IDF, rows sorted by code
    optr = _csr_ptr(a, "co_ptr", n, keep)
    ptr = _p64(optr)
    nnz = ptr[n]
    ids = _p32(_arg(a, "co_ids", cnp.NPY_INT32, nnz, keep))
    co_codes = <i32*>_alloc(ar, nnz * sizeof(i32))
    nc = _first_codes(ids, nnz, co_codes, ar)
    cnt = <i64*>_alloc(ar, nc * sizeof(i64))
    idf = <double*>_alloc(ar, nc * sizeof(double))
    memset(cnt, 0, nc * sizeof(i64))
    for k in range(nnz):
        if co_codes[k] < 0:
            raise ValueError("array 'co_ids' holds a negative id")
        cnt[co_codes[k]] += 1
    for k in range(nc):
        idf[k] = log((1.0 + dn) / (1.0 + <double>cnt[k])) + 1.0
    perm = <i64*>_alloc(ar, nnz * sizeof(i64))
    oids, ow = _rows_by_code(n, ptr, co_codes, idf, 0.0, perm, ar)
    out["co_ptr"] = _copy(optr)
    out["co_ids"] = oids
    out["co_w"] = ow

    # components of the shared-coauthor graphs (>= 1 and >= 2 shared coauthors), given
    x = _comp_arg(comps, "comp1", n, keep)
    comp1 = _p32(x)
    out["comp1"] = x
    out["comp2"] = _comp_arg(comps, "comp2", n, keep)
    for i in range(n):
        if comp1[i] + 1 > ncomp1:
            ncomp1 = comp1[i] + 1

    # ---------------- TF-IDF fields: unseen words get block-local columns V, V + 1, ... (sorted)
    for f in range(5):
        name_ptr, name_ids, name_w = _TEXT_NAMES[f]
        V = n_vocab[f]
        optr = _csr_ptr(a, name_ptr, n, keep)
        ptr = _p64(optr)
        nnz = ptr[n]
        ids = _p32(_arg(a, name_ids, cnp.NPY_INT32, nnz, keep))
        w = _pf(_arg(a, name_w, cnp.NPY_FLOAT64, nnz, keep))
        oids = _empty(nnz + 1, cnp.NPY_INT32)
        ow = _empty(nnz + 1, cnp.NPY_FLOAT64)
        memcpy(_pf(ow), w, nnz * sizeof(double))
        _pf(ow)[nnz] = 0.0
        memcpy(_p32(oids), ids, nnz * sizeof(i32))
        _p32(oids)[nnz] = 0
        nun = 0
        for k in range(nnz):
            if ids[k] >= V:
                nun += 1
        if nun:
            un = <i64*>_alloc(ar, nun * sizeof(i64))
            kp = <KP*>_alloc(ar, nun * sizeof(KP))
            m = 0
            for k in range(nnz):
                if ids[k] >= V:
                    kp[m].key = ids[k]
                    kp[m].pos = m
                    m += 1
            _kp_sort(kp, nun)
            un[0] = kp[0].key
            m = 1
            for k in range(1, nun):
                if kp[k].key != un[m - 1]:
                    un[m] = kp[k].key
                    m += 1
            for k in range(nnz):
                if ids[k] >= V:
                    lo = 0
                    hi = m
                    while lo < hi:                   # rank of ids[k] among the distinct unseen ids
                        mid = (lo + hi) >> 1
                        if un[mid] < ids[k]:
                            lo = mid + 1
                        else:
                            hi = mid
                    _p32(oids)[k] = <i32>(V + lo)
        x = _copy(optr)
        out[name_ptr] = x
        out[name_ids] = oids
        out[name_w] = ow
        text_ptr[f] = _p64(x)
        text_ids[f] = _p32(oids)
        text_w[f] = _pf(ow)

    # ---------------- per-mention codes and copies
    for name_in, name_out in _CODE_NAMES:
        iv = _p32(_arg(a, name_in, cnp.NPY_INT32, n, keep))
        x = _empty(n, cnp.NPY_INT32)
        _first_codes(iv, n, _p32(x), ar)
        out[name_out] = x
    for name_in in _COPY_NAMES:
        out[name_in] = _copy(_arg(a, name_in, cnp.NPY_INT32, n, keep))

    # ---------------- venue acronyms (va) and venue words that are acronyms of the block (vt)
    iv = _p32(_arg(a, "acr_g", cnp.NPY_INT32, n, keep))
    codes = <i32*>_alloc(ar, n * sizeof(i32))
    nc = _code_map(iv, n, codes, &mp, ar)       # mp: acronym -> code
    m = 0
    for r in range(n):
        if codes[r] >= 0:
            m += 1
    optr = _empty(n + 1, cnp.NPY_INT64)
    oids = _empty(m + 1, cnp.NPY_INT32)
    ow = _empty(m + 1, cnp.NPY_FLOAT64)
    _p64(optr)[0] = 0
    k = 0
    for r in range(n):
        if codes[r] >= 0:
            _p32(oids)[k] = codes[r]
            _pf(ow)[k] = 1.0
            k += 1
        _p64(optr)[r + 1] = k
    _p32(oids)[m] = 0
    _pf(ow)[m] = 0.0
    out["va_ptr"] = optr
    out["va_ids"] = oids
    out["va_w"] = ow
    optr = _csr_ptr(a, "vw_ptr", n, keep)
    ptr = _p64(optr)
    nnz = ptr[n]
    ids = _p32(_arg(a, "vw_ids", cnp.NPY_INT32, nnz, keep))
    codes = <i32*>_alloc(ar, nnz * sizeof(i32))
    x = _empty(n + 1, cnp.NPY_INT64)
    vt_ptr = _p64(x)
    vt_ptr[0] = 0
    m = 0
    for r in range(n):
        if nc:
            for k in range(ptr[r], ptr[r + 1]):
                s = _get(&mp, ids[k], -1)
                if s >= 0:
                    codes[m] = <i32>s
                    m += 1
        vt_ptr[r + 1] = m
    perm = <i64*>_alloc(ar, m * sizeof(i64))
    oids, ow = _rows_by_code(n, vt_ptr, codes, NULL, 0.0, perm, ar)
    out["vt_ptr"] = x
    out["vt_ids"] = oids
    out["vt_w"] = ow

    # ---------------- name rarity and initial ambiguity
    first_g = _p32(_arg(a, "first_g", cnp.NPY_INT32, n, keep))
    first0 = _p32(_arg(a, "first0", cnp.NPY_INT32, n, keep))
    first_init = _p32(<cnp.ndarray>out["first_init"])
    _map_init(&mp, n, ar)              # first name -> mentions
    _map_init(&mp2, n, ar)             # letter -> distinct first names
    _map_init(&mpair, n, ar)           # (letter, first name) seen
    for r in range(n):
        if first_g[r] < 0:
            continue
        s = _slot(&mp, first_g[r])
        if mp.keys[s] == _EMPTY:
            mp.keys[s] = first_g[r]
            mp.vals[s] = 0
        mp.vals[s] += 1
        key = ((<i64>first0[r] + 1) << 32) | <i64>first_g[r]
        s = _slot(&mpair, key)
        if mpair.keys[s] == _EMPTY:
            mpair.keys[s] = key
            s = _slot(&mp2, first0[r])
            if mp2.keys[s] == _EMPTY:
                mp2.keys[s] = first0[r]
                mp2.vals[s] = 0
            mp2.vals[s] += 1
    x = _zeros(n, cnp.NPY_FLOAT64)
    for r in range(n):
        if first_g[r] >= 0:
            _pf(x)[r] = -log(<double>_get(&mp, first_g[r], 0) / dn)
    out["name_rarity"] = x
    x = _empty(n, cnp.NPY_FLOAT64)
    for r in range(n):
        _pf(x)[r] = log(1.0 + <double>_get(&mp2, first_init[r], 0)) if first_init[r] >= 0 else 0.0
    out["init_amb"] = x

    # ---------------- coauthors keyed by initial + last name (ck), with their full first names
    optr = _csr_ptr(a, "ck_ptr", n, keep)
    ptr = _p64(optr)
    nnz = ptr[n]
    ids = _p32(_arg(a, "ck_ids", cnp.NPY_INT32, nnz, keep))
    iv = _p32(_arg(a, "ck_fn", cnp.NPY_INT32, nnz, keep))
    codes = <i32*>_alloc(ar, nnz * sizeof(i32))
    nc = _first_codes(ids, nnz, codes, ar)
    for k in range(nnz):
        if codes[k] < 0:
            raise ValueError("array 'ck_ids' holds a negative id")
    out["comp3"] = _comp_arg(comps, "comp3", n, keep)
    x = _csr_ptr(a, "fs_ptr", n, keep)
    m = _p64(x)[n]
    fs = _p32(_arg(a, "fs_ids", cnp.NPY_INT32, m, keep))
    _code_map(fs, m, NULL, &mp, ar)     # mp: full first name -> code by first appearance
    perm = <i64*>_alloc(ar, nnz * sizeof(i64))
    oids, ow = _rows_by_code(n, ptr, codes, NULL, 1.0, perm, ar)
    ofn = _empty(nnz + 1, cnp.NPY_INT32)
    for k in range(nnz):
        s = iv[perm[k]]
        _p32(ofn)[k] = <i32>(_get(&mp, s, -1) if s >= 0 else -1)
    _p32(ofn)[nnz] = -1
    out["ck_ptr"] = _copy(optr)
    out["ck_ids"] = oids
    out["ck_w"] = ow
    out["ck_fn"] = ofn

    # ---------------- component sizes, profiles, year ranges
    cnt = <i64*>_alloc(ar, n * sizeof(i64))
    memset(cnt, 0, n * sizeof(i64))
    for i in range(n):
        cnt[comp1[i]] += 1
    x = _empty(n, cnp.NPY_FLOAT64)
    for i in range(n):
        _pf(x)[i] = log(<double>cnt[comp1[i]])
    out["comp1_logsize"] = x
    for f in range(3):
        name_ptr, name_ids, name_w, top = _PROFILE_NAMES[f]
        out[name_ptr], out[name_ids], out[name_w] = _profiles(
            n, comp1, ncomp1, text_ptr[f], text_ids[f], text_w[f], top, ar)
    year = _p32(<cnp.ndarray>out["year"])
    oi = _empty(n, cnp.NPY_INT32)
    x = _empty(n, cnp.NPY_INT32)
    for i in range(n):
        _p32(oi)[i] = -1
        _p32(x)[i] = -1
    for i in range(n):
        if year[i] >= 0:
            c = comp1[i]
            if _p32(oi)[c] < 0 or year[i] < _p32(oi)[c]:
                _p32(oi)[c] = year[i]
            if year[i] > _p32(x)[c]:
                _p32(x)[c] = year[i]
    out["comp_ymin"] = oi
    out["comp_ymax"] = x

    # ---------------- topic vectors of the mentions and of the components (rows by label)
    T = _pf(_topic_arg(a, n, kt, keep))
    x = _empty(n * kt + 1, cnp.NPY_FLOAT64)
    memcpy(_pf(x), T, n * kt * sizeof(double))
    _pf(x)[n * kt] = 0.0
    out["topic"] = x
    x = _zeros(n * kt + 1, cnp.NPY_FLOAT64)
    dw = _pf(x)
    if kt and n:
        for i in range(n):                       # np.add.at: rows added in mention order
            c = comp1[i]
            for k in range(kt):
                dw[c * kt + k] += T[i * kt + k]
        sq = <double*>_alloc(ar, kt * sizeof(double))
        for c in range(ncomp1):                  # rows of unused labels stay 0 (norm 0)
            for k in range(kt):
                sq[k] = dw[c * kt + k] * dw[c * kt + k]
            norm = sqrt(_sum(sq, kt))
            if norm > 0:
                for k in range(kt):
                    dw[c * kt + k] = dw[c * kt + k] / norm
    out["comp_topic"] = x

    # ---------------- block statistics
    middle = _p32(_arg(a, "middle", cnp.NPY_INT32, n, keep))
    for i in range(n):
        n_middle += middle[i]
    out["block_stats"] = (
        <double>ncomp1 / dn if n else 0.0,
        _coherence(n, text_ptr[0], text_ids[0], text_w[0], ar),
        _coherence(n, text_ptr[1], text_ids[1], text_w[1], ar),
        _coherence(n, text_ptr[2], text_ids[2], text_w[2], ar),
        <double>n_middle / dn if n else 0.0,
    )
    return 0


cdef cnp.ndarray _topic_arg(dict a, i64 n, i64 k, list keep):
    obj = a.get("topic")
    if obj is None:
        raise ValueError("encoding lacks the array 'topic'")
    if not cnp.PyArray_Check(obj):
        raise ValueError(f"array 'topic' must be a numpy array; got {type(obj).__name__}")
    cdef cnp.ndarray arr = <cnp.ndarray>obj
    if cnp.PyArray_TYPE(arr) != cnp.NPY_FLOAT64 or cnp.PyArray_NDIM(arr) != 2 \
            or cnp.PyArray_DIM(arr, 0) != n or cnp.PyArray_DIM(arr, 1) != k:
        raise ValueError(f"array 'topic' must be a float64 array of shape ({n}, {k}); got "
                         f"{(<object>arr).dtype} of shape {(<object>arr).shape}")
    if not cnp.PyArray_ISCARRAY_RO(arr):
        arr = np.ascontiguousarray(arr, dtype=(<object>arr).dtype.newbyteorder("="))
    keep.append(arr)
    return arr
