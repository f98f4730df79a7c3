# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Racing's first sweep on several threads: the partner memos built ahead of the steps.

With a candidate index (``coref.gibbs.partners``) every mention's memo is built at its
first step, from the block alone: the build of i reads no label and no other memo.
``pipelined_sweep`` runs the first sweep's steps on thread 0 while the other threads
(OpenMP) build the memos ahead of them, each with its own block view, work arrays and
growing second-tier arena; thread 0 places each list into the block's arena at the
mention's step, in visiting order, while it fits.  Every memo, arena, label and factor
count is that of the serial sweep.  Used by ``coref.gibbs._gibbs.anneal``
(``memo_threads``); the twin builds at the steps.
"""
from libc.stdint cimport uint64_t
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memcpy
from cython.parallel cimport parallel, threadid

from coref.factors._factors cimport BlockData, make_block, row_set, row_clear
from coref.gibbs._memo cimport RowMemo, memo_build
from coref.gibbs._cv cimport CVState


cdef extern from *:
    """
    static inline int co_flag_load(const int* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
    static inline void co_flag_store(int* p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
    static inline int co_flag_claim(int* p) {
        int e = 0;
        return __atomic_compare_exchange_n(p, &e, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    static inline long long co_next(long long* p) { return __atomic_fetch_add(p, 1, __ATOMIC_RELAXED); }
    """
    int co_flag_load(const int* p) noexcept nogil
    void co_flag_store(int* p, int v) noexcept nogil
    int co_flag_claim(int* p) noexcept nogil
    long long co_next(long long* p) noexcept nogil


cdef struct Sweep:
    # what every step of one anneal call reads and writes (see ``_step``)
    BlockData* d
    long long* labels
    long long* size
    int racing
    int fb
    const double* b_table
    Py_ssize_t b_cols
    uint64_t* rs
    double* gumbels
    long long* cand
    long long* cidx
    long long* start
    long long* members
    long long* fill
    double* acc
    double* acc2
    long long* T
    long long* N
    double* est
    double* se2
    char* alive
    const double* fmax
    long long* act
    long long* pool
    long long* nC
    long long* bj
    long long* bc
    double* us
    char* gok
    long long* lz
    const long long* n_rounds
    const double* fm
    RowMemo* rm
    CVState* cv
    double* hc


cdef struct MemoPipe:
    # the first sweep's candidate memos, built ahead of its steps by the threads
    # (``pipelined_sweep``): flag[i] 0 to build, 1 being built, 2 built ahead by thread
    # owner[i], 3 nothing to build, 4 to build at its step (an arena could not grow)
    BlockData* dd            # (nt,) block views of the helpers (dd[0] unused: thread 0 has d)
    RowMemo* rms             # (nt,) the threads' work arrays and own second-tier arenas
    int* flag
    int* owner
    const long long* order
    Py_ssize_t n_mov
    long long next           # next position of order a helper looks at
    long long* evs           # (nt,) factors evaluated per thread
    int nt


ctypedef Py_ssize_t (*StepsFn)(Sweep* w, const long long* order, Py_ssize_t n_mov, double inv_temp,
                                  long long* ev, MemoPipe* pipe) noexcept nogil


cdef inline bint _build_ahead(MemoPipe* pipe, BlockData* d, RowMemo* rm, int t,
                              long long* ev) noexcept nogil:
    """Thread t builds the memo of the next mention of the first sweep's order that no
    thread has claimed, into its own arena (``pipe.rms[t]``; block view ``d``).  Returns
    False when the order is exhausted or t's arena could not grow."""
    cdef long long k
    cdef Py_ssize_t i, n = rm.n
    while True:
        k = co_next(&pipe.next)
        if k >= pipe.n_mov:
            return False
        i = pipe.order[k]
        if co_flag_claim(&pipe.flag[i]):
            break
    pipe.owner[i] = t
    row_set(d, i)
    ev[0] += memo_build(d, i, &pipe.rms[t], n)
    row_clear(d)
    if pipe.rms[t].ovf_fail:
        co_flag_store(&pipe.flag[i], 4)        # its list is lost: built again at its step
        return False
    co_flag_store(&pipe.flag[i], 2)
    return True


cdef inline void take_memo(Sweep* w, MemoPipe* pipe, Py_ssize_t i, long long* ev) noexcept nogil:
    """Before mention i's first-sweep step: its memo, as the step itself would build it.

    Built here (into the arena, as at the step) when no thread has claimed it; when a
    helper is building it, this thread builds others ahead meanwhile; when a thread has
    built it, its list of partners above t_i goes into the arena while it fits.
    """
    cdef RowMemo* rm = w.rm
    cdef Py_ssize_t n = rm.n, m, q
    cdef int f, t
    cdef bint more = True
    while True:
        f = co_flag_load(&pipe.flag[i])
        if f == 3:
            return
        if (f == 0 and co_flag_claim(&pipe.flag[i])) or f == 4:
            row_set(w.d, i)
            ev[0] += memo_build(w.d, i, rm, n)
            row_clear(w.d)
            return
        if f == 2:
            break
        if f == 1 and more:
            more = _build_ahead(pipe, w.d, rm, 0, &pipe.evs[0])
    if rm.ovf != NULL:
        t = pipe.owner[i]
        m = pipe.rms[t].ovf_at[n + i]
        rm.ovf_at[n + i] = -1
        q = rm.ovf_at[2 * n]
        if m >= 0 and q + m <= rm.ovf_cap:
            if m > 0:
                memcpy(rm.ovf + q, pipe.rms[t].ovf + pipe.rms[t].ovf_at[i], m * sizeof(long long))
            rm.ovf_at[i] = q
            rm.ovf_at[n + i] = m
            rm.tier[i] = pipe.rms[t].tier[i]
            rm.ovf_at[2 * n] = q + m


cdef inline void _helper(MemoPipe* pipe, int t) noexcept nogil:
    """Helper thread t: build the first sweep's memos ahead of its steps."""
    while _build_ahead(pipe, &pipe.dd[t], &pipe.rms[t], t, &pipe.evs[t]):
        pass


cdef inline Py_ssize_t pipelined_sweep(Sweep* w, MemoPipe* pipe, double inv_temp, long long* ev,
                                       StepsFn steps) noexcept nogil:
    """The first sweep with its candidate memos built ahead by ``pipe.nt - 1`` helper
    threads (OpenMP): thread 0 runs the steps in order and takes each memo from the
    helpers, building it itself when none has started it.  Every memo, arena, label and
    factor count is that of the serial sweep.  Returns the mentions moved."""
    cdef int t
    cdef Py_ssize_t moved = 0
    cdef Py_ssize_t* out = &moved
    with parallel(num_threads=pipe.nt):
        t = threadid()
        if t == 0:
            out[0] = steps(w, pipe.order, pipe.n_mov, inv_temp, ev, pipe)
        else:
            _helper(pipe, t)
    for t in range(pipe.nt):
        ev[0] += pipe.evs[t]
    return moved


cdef inline MemoPipe* pipe_open(MemoPipe* pipe, RowMemo* rm, BlockData* d, object enc,
                                const double[::1] theta, double bias, list keep, int nt,
                                const long long* order, Py_ssize_t n_mov, object memo_rest) except *:
    """Set up ``pipe`` for ``nt`` threads (block views, work arrays and arenas; the arrays
    go into ``keep``) and return it; free its C parts with ``pipe_close``."""
    import numpy as np
    cdef Py_ssize_t n = d.n
    cdef int[::1] p_flag, p_owner
    cdef long long[::1] p_evs
    cdef long long[:, ::1] t_stamp, t_vis, t_at
    cdef double[:, ::1] t_row
    cdef double[::1] tier_buf
    cdef int t
    p_flag = np.where(np.isnan(np.asarray(memo_rest)), 0, 3).astype(np.int32)
    p_owner = np.full(n, -1, np.int32)
    p_evs = np.zeros(nt, np.int64)
    tier_buf = np.zeros(n)
    t_stamp = np.zeros((nt, n), np.int64)
    t_vis = np.zeros((nt, n), np.int64)
    t_row = np.zeros((nt, n))
    t_at = np.zeros((nt, 2 * n + 1), np.int64)
    keep.extend([p_flag, p_owner, p_evs, tier_buf, t_stamp, t_vis, t_row, t_at])
    pipe.dd = <BlockData*>malloc(nt * sizeof(BlockData))
    pipe.rms = <RowMemo*>calloc(nt, sizeof(RowMemo))
    if pipe.dd == NULL or pipe.rms == NULL:
        free(pipe.dd)
        free(pipe.rms)
        raise MemoryError("the memo threads' work arrays")
    try:
        for t in range(1, nt):
            pipe.dd[t] = make_block(enc, theta, bias, keep, 0, True, None)
    except BaseException:
        free(pipe.dd)
        free(pipe.rms)
        raise
    for t in range(nt):
        pipe.rms[t] = rm[0]
        pipe.rms[t].row = &t_row[t, 0]
        pipe.rms[t].stamp = &t_stamp[t, 0]
        pipe.rms[t].vis = &t_vis[t, 0]
        if rm.ovf != NULL:
            pipe.rms[t].ovf = <long long*>malloc(1024 * sizeof(long long))
            pipe.rms[t].ovf_cap = 1024 if pipe.rms[t].ovf != NULL else 0
            pipe.rms[t].ovf_grow = True
            pipe.rms[t].ovf_fail = pipe.rms[t].ovf == NULL
            pipe.rms[t].ovf_at = &t_at[t, 0]
            pipe.rms[t].tier = &tier_buf[0]
    pipe.flag = &p_flag[0]
    pipe.owner = &p_owner[0]
    pipe.order = order
    pipe.n_mov = n_mov
    pipe.next = 0
    pipe.evs = &p_evs[0]
    pipe.nt = nt
    return pipe


cdef inline void pipe_close(MemoPipe* pipe) noexcept nogil:
    """Free the C parts of ``pipe_open``."""
    cdef int t
    for t in range(pipe.nt):
        free(pipe.rms[t].ovf)
    free(pipe.rms)
    free(pipe.dd)


cdef inline void sweep_work(Sweep* sw, object w) except *:
    """Point ``sw`` at the step work arrays of ``w`` (``coref.gibbs._gibbs.Work``, which
    must outlive it)."""
    cdef long long[::1] a
    cdef double[::1] f
    cdef char[::1] c
    f = w.gumbels
    sw.gumbels = &f[0]
    f = w.acc
    sw.acc = &f[0]
    f = w.acc2
    sw.acc2 = &f[0]
    f = w.est
    sw.est = &f[0]
    f = w.se2
    sw.se2 = &f[0]
    f = w.us
    sw.us = &f[0]
    f = w.hc
    sw.hc = &f[0]
    c = w.alive
    sw.alive = &c[0]
    c = w.gok
    sw.gok = &c[0]
    a = w.cand
    sw.cand = &a[0]
    a = w.cidx
    sw.cidx = &a[0]
    a = w.start
    sw.start = &a[0]
    a = w.members
    sw.members = &a[0]
    a = w.fill
    sw.fill = &a[0]
    a = w.T
    sw.T = &a[0]
    a = w.N
    sw.N = &a[0]
    a = w.act
    sw.act = &a[0]
    a = w.pool
    sw.pool = &a[0]
    a = w.nc
    sw.nC = &a[0]
    a = w.bj
    sw.bj = &a[0]
    a = w.bc
    sw.bc = &a[0]
    a = w.lz
    sw.lz = &a[0]
    a = w.nr
    sw.n_rounds = &a[0]
