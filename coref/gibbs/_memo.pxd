# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Racing's partner memo: per mention its K best partners and a bound of every other factor.

``memo_build`` evaluates the row f(i, .) of a mention once (n - 1 factors, or only its
candidates with ``coref.gibbs.partners``' bound of the others) and keeps
its K best partners (largest f(i, j), ties to the smaller j; sorted by j) and
``rest[i]``, the largest factor of the others.  Then for any arm (candidate cluster) y,
sum_{j in y} f(i, j) <= (sum over its memo partners of f(i, j)) + (|y| - their number)
rest[i]: ``memo_arm_sums`` gathers the memo part of every arm in O(K) per step and
``memo_ub`` gives the bound in O(1) (with a relative slack for the rounding of the
kernel's sums).  Without a memo, ``fmax_arm_bound`` bounds an arm by
sum_j min(fmax_i, fmax_j); ``lazy_bound`` picks one of the two for a pending small arm.
Used by ``coref.gibbs._gibbs``; twin: ``coref.gibbs._gibbs_py``.
"""
from libc.math cimport INFINITY
from libc.stdlib cimport realloc

from coref.factors._factors cimport BlockData, block_factor


cdef struct RowMemo:
    # per mention i: its K best partners (largest f(i, j), ties to the smaller j), sorted
    # by j (unused slots j = n, f = 0.0), and rest[i] = the largest f(i, j) of the others
    # (-inf if none); rest[i] = NaN until i's row has been evaluated.  K = 0: off.
    long long* j
    double* f
    double* rest
    double* row              # work (n,): the row f(i, .) of the step that built it
    double* msum             # work (n,), zero between steps: memo sums per arm
    double* mabs
    long long* mcnt
    Py_ssize_t K
    Py_ssize_t n             # mentions of the block (the padding index)
    Py_ssize_t row_min       # build when the pending small arms hold this many members
    # the candidate index (``coref.gibbs.partners.PartnerIndex``; q_ptr NULL: whole rows):
    # i's candidates are the mentions posted under its query keys, and c_rest[i] bounds
    # f(i, j) for every other j.  A build evaluates the candidates only and keeps that
    # memo when c_rest[i] <= max(the candidates' rest, accept); otherwise the whole row.
    const long long* q_ptr
    const long long* q_key
    const long long* k_ptr
    const long long* k_men
    const double* c_rest
    Py_ssize_t n_levels      # the index's levels (q_ptr: n_levels * (n + 1), c_rest: n_levels * n)
    double accept
    long long* stamp         # (n,) stamp[j] == i + 1: row[j] holds f(i, j) of i's build
    bint row_all             # the last build evaluated the whole row
    # the second tier (ovf NULL: off): when more than K partners of i lie above a
    # threshold t_i (the accepted level's c_rest, or accept after a whole row), those not
    # kept are listed (sorted) in ovf[ovf_at[i] : ovf_at[i] + ovf_at[n + i]] and
    # tier[i] = t_i bounds every partner neither kept nor listed (ovf_at[n + i] = -1: no
    # tier); ovf_at[2 n] is the arena's fill, ovf_cap its size.  ocnt: work (n,), zero
    # between steps: listed partners per arm.  vis: work (n,), the build's candidates.
    long long* ovf
    long long ovf_cap
    long long* ovf_at
    double* tier
    long long* ocnt
    long long* vis
    # a thread's own arena (``coref.gibbs._gibbs``'s parallel first builds): grows with
    # realloc instead of refusing a list; ovf_fail is set when it cannot
    bint ovf_grow
    bint ovf_fail


cdef inline bint worse(double a, long long ja, double b, long long jb) noexcept nogil:
    """(a, ja) ranks below (b, jb): smaller value, or the same value and a larger index."""
    return a < b or (a == b and ja > jb)


cdef inline void _heap_push(long long* hj, double* hf, Py_ssize_t K, Py_ssize_t* cnt,
                            double* rest, double v, long long j) noexcept nogil:
    """Offer (v, j) to the min-heap of the K best (worst kept on top); the best value not
    kept goes to rest."""
    cdef Py_ssize_t p, q, b
    if cnt[0] < K:
        # push, sift up
        p = cnt[0]
        cnt[0] += 1
        while p > 0:
            q = (p - 1) // 2
            if worse(v, j, hf[q], hj[q]):
                hf[p] = hf[q]
                hj[p] = hj[q]
                p = q
            else:
                break
        hf[p] = v
        hj[p] = j
    elif worse(hf[0], hj[0], v, j):
        if hf[0] > rest[0]:
            rest[0] = hf[0]
        # replace the top, sift down
        p = 0
        while True:
            q = 2 * p + 1
            if q >= K:
                break
            b = q
            if q + 1 < K and worse(hf[q + 1], hj[q + 1], hf[q], hj[q]):
                b = q + 1
            if worse(hf[b], hj[b], v, j):
                hf[p] = hf[b]
                hj[p] = hj[b]
                p = b
            else:
                break
        hf[p] = v
        hj[p] = j
    elif v > rest[0]:
        rest[0] = v


cdef inline void _ovf_reserve(RowMemo* rm, long long need) noexcept nogil:
    """Grow a thread's own second-tier arena (``ovf_grow``) to hold ``need`` entries."""
    cdef long long cap = 2 * rm.ovf_cap
    cdef long long* p
    if cap < need:
        cap = need
    p = <long long*>realloc(rm.ovf, cap * sizeof(long long))
    if p == NULL:
        rm.ovf_fail = True
        return
    rm.ovf = p
    rm.ovf_cap = cap


cdef inline Py_ssize_t memo_build(BlockData* d, Py_ssize_t i, RowMemo* rm, Py_ssize_t n) noexcept nogil:
    """Build i's memo (row mode for i) and return the factors evaluated.

    Without a candidate index: f(i, j) for every j != i into rm.row (n - 1 factors).
    With one: f(i, j) for i's candidates of level 0 (rm.row[j], stamp[j] = i + 1); when
    their bound c = c_rest[i] <= max(their rest, accept) the memo is kept with rest =
    max(their rest, c) and only the kept partners above c; else the next level's new
    candidates are evaluated and tested the same way, and after the last level the rest
    of the row (n - 1 factors in all).  Either way the K
    best partners (largest f(i, j), ties to the smaller j: the same set in any visiting
    order) are sorted by j, unused slots j = n, f = 0.0.
    """
    cdef Py_ssize_t K = rm.K, cnt = 0, j, p, q, evals = 0, lev, o, nvis = 0, m
    cdef long long* hj = rm.j + i * K
    cdef double* hf = rm.f + i * K
    cdef double v, rest = -INFINITY, tf, cr, t = rm.accept
    cdef long long tj, mark = i + 1
    rm.row_all = True
    if rm.q_ptr != NULL:
        for lev in range(rm.n_levels):
            o = lev * (n + 1)
            for p in range(rm.q_ptr[o + i], rm.q_ptr[o + i + 1]):
                for q in range(rm.k_ptr[rm.q_key[p]], rm.k_ptr[rm.q_key[p] + 1]):
                    j = rm.k_men[q]
                    if j == i or rm.stamp[j] == mark:
                        continue
                    rm.stamp[j] = mark
                    v = block_factor(d, i, j)
                    rm.row[j] = v
                    if rm.vis != NULL:
                        rm.vis[nvis] = j
                        nvis += 1
                    evals += 1
                    _heap_push(hj, hf, K, &cnt, &rest, v, j)
            tf = rest if rest > rm.accept else rm.accept
            cr = rm.c_rest[lev * n + i]
            if cr <= tf:
                t = cr
                if cr > rest:
                    rest = cr
                rm.row_all = False
                # partners at or below cr <= rest add nothing to the bound: dropped
                q = 0
                for p in range(cnt):
                    if hf[p] > cr:
                        hj[q] = hj[p]
                        hf[q] = hf[p]
                        q += 1
                cnt = q
                break
        if rm.row_all:
            # the bound is too loose to help: the whole row (the candidates' values kept)
            cnt = 0
            rest = -INFINITY
            for j in range(n):
                if j == i:
                    continue
                if rm.stamp[j] != mark:
                    rm.row[j] = block_factor(d, i, j)
                    evals += 1
                _heap_push(hj, hf, K, &cnt, &rest, rm.row[j], j)
    else:
        for j in range(n):
            if j == i:
                rm.row[j] = 0.0
                continue
            v = block_factor(d, i, j)
            rm.row[j] = v
            evals += 1
            _heap_push(hj, hf, K, &cnt, &rest, v, j)
    # sort the kept partners by index (insertion sort, K is small); pad with j = n
    for p in range(1, cnt):
        tj = hj[p]
        tf = hf[p]
        q = p - 1
        while q >= 0 and hj[q] > tj:
            hj[q + 1] = hj[q]
            hf[q + 1] = hf[q]
            q -= 1
        hj[q + 1] = tj
        hf[q + 1] = tf
    for p in range(cnt, K):
        hj[p] = n
        hf[p] = 0.0
    rm.rest[i] = rest
    if rm.ovf != NULL:
        rm.ovf_at[n + i] = -1
        if rest > t:
            # more than K partners above t: list the others above it (increasing j)
            m = 0
            if rm.row_all:
                for j in range(n):
                    if j != i and rm.row[j] > t and memo_find(hj, K, j) < 0:
                        m += 1
            else:
                for p in range(nvis):
                    j = rm.vis[p]
                    if rm.row[j] > t and memo_find(hj, K, j) < 0:
                        m += 1
            if rm.ovf_grow and rm.ovf_at[2 * n] + m > rm.ovf_cap:
                _ovf_reserve(rm, rm.ovf_at[2 * n] + m)
            if rm.ovf_at[2 * n] + m <= rm.ovf_cap:
                q = rm.ovf_at[2 * n]
                rm.ovf_at[i] = q
                rm.ovf_at[n + i] = m
                rm.tier[i] = t
                if rm.row_all:
                    for j in range(n):
                        if j != i and rm.row[j] > t and memo_find(hj, K, j) < 0:
                            rm.ovf[q] = j
                            q += 1
                else:
                    for p in range(nvis):
                        j = rm.vis[p]
                        if rm.row[j] > t and memo_find(hj, K, j) < 0:
                            rm.ovf[q] = j
                            q += 1
                    _sort_ll(rm.ovf + rm.ovf_at[i], m)
                rm.ovf_at[2 * n] = q
    return evals


cdef inline void _sift(long long* a, Py_ssize_t root, Py_ssize_t end) noexcept nogil:
    """Sift a[root] down the max-heap a[0:end + 1]."""
    cdef Py_ssize_t child
    cdef long long tmp
    while 2 * root + 1 <= end:
        child = 2 * root + 1
        if child + 1 <= end and a[child] < a[child + 1]:
            child += 1
        if a[root] < a[child]:
            tmp = a[root]
            a[root] = a[child]
            a[child] = tmp
            root = child
        else:
            return


cdef inline void _sort_ll(long long* a, Py_ssize_t m) noexcept nogil:
    """Sort a[0:m] increasing (heapsort: no allocation, O(m log m))."""
    cdef Py_ssize_t start, end
    cdef long long tmp
    if m < 2:
        return
    for start in range(m // 2 - 1, -1, -1):
        _sift(a, start, m - 1)
    end = m - 1
    while end > 0:
        tmp = a[0]
        a[0] = a[end]
        a[end] = tmp
        end -= 1
        _sift(a, 0, end)


cdef inline bint memo_row_has(const RowMemo* rm, Py_ssize_t i, Py_ssize_t j) noexcept nogil:
    """rm.row[j] holds f(i, j) after i's build."""
    return rm.row_all or rm.stamp[j] == i + 1


cdef inline Py_ssize_t memo_find(const long long* hj, Py_ssize_t K, long long j) noexcept nogil:
    """Position of partner j in the sorted hj[0:K], or -1."""
    cdef Py_ssize_t lo = 0, hi = K, mid
    while lo < hi:
        mid = (lo + hi) // 2
        if hj[mid] < j:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < K and hj[lo] == j else -1


cdef inline double memo_max(const RowMemo* rm, Py_ssize_t i) noexcept nogil:
    """max_j f(i, j) from i's memo (its best partner or rest)."""
    cdef double v = rm.rest[i]
    cdef Py_ssize_t k
    for k in range(rm.K):
        if rm.j[i * rm.K + k] >= rm.n:
            break              # padding: the partners come first, sorted by j
        if rm.f[i * rm.K + k] > v:
            v = rm.f[i * rm.K + k]
    return v


cdef inline void memo_arm_sums(RowMemo* rm, Py_ssize_t i, const long long* labels,
                               const long long* cidx, Py_ssize_t n, double inv_temp) noexcept nogil:
    """Per arm c: rm.msum[c] = sum of f(i, j) / tau over i's memo partners j in it (memo
    order), rm.mabs[c] the sum of their absolute values, rm.mcnt[c] their number."""
    cdef Py_ssize_t k, j, c
    cdef double t
    for k in range(rm.K):
        j = rm.j[i * rm.K + k]
        if j >= n:
            break              # padding: the partners come first, sorted by j
        if j == i:
            continue
        c = cidx[labels[j]]
        t = rm.f[i * rm.K + k] * inv_temp
        rm.msum[c] += t
        rm.mabs[c] += t if t >= 0.0 else -t
        rm.mcnt[c] += 1
    if rm.ovf != NULL and rm.ovf_at[n + i] > 0:
        for k in range(rm.ovf_at[i], rm.ovf_at[i] + rm.ovf_at[n + i]):
            rm.ocnt[cidx[labels[rm.ovf[k]]]] += 1


cdef inline void memo_arm_clear(RowMemo* rm, Py_ssize_t i, const long long* labels,
                                const long long* cidx, Py_ssize_t n) noexcept nogil:
    """Zero what ``memo_arm_sums`` wrote."""
    cdef Py_ssize_t k, j, c
    for k in range(rm.K):
        j = rm.j[i * rm.K + k]
        if j >= n:
            break
        if j == i:
            continue
        c = cidx[labels[j]]
        rm.msum[c] = 0.0
        rm.mabs[c] = 0.0
        rm.mcnt[c] = 0
    if rm.ovf != NULL and rm.ovf_at[n + i] > 0:
        for k in range(rm.ovf_at[i], rm.ovf_at[i] + rm.ovf_at[n + i]):
            rm.ocnt[cidx[labels[rm.ovf[k]]]] = 0


cdef inline double memo_ub(const RowMemo* rm, Py_ssize_t i, Py_ssize_t c, Py_ssize_t N,
                           double inv_temp) noexcept nogil:
    """An upper bound of sum_{j in arm c} f(i, j) / tau as the kernel sums it: the memo part
    plus (N - mcnt) rest_i / tau, raised by 1e-9 (|memo terms| + |rest part|), far above the
    rounding of sums of up to 1e6 terms (x + 1e-9 |x| is increasing in x)."""
    cdef double r, s = rm.msum[c], a = rm.mabs[c]
    cdef long long o
    if rm.mcnt[c] < N:
        if rm.ovf != NULL and rm.ovf_at[rm.n + i] >= 0:
            # the tier: listed partners by rest_i, the others by tier_i <= rest_i
            o = rm.ocnt[c]
            r = o * (rm.rest[i] * inv_temp)
            s += r
            a += r if r >= 0.0 else -r
            r = (N - rm.mcnt[c] - o) * (rm.tier[i] * inv_temp)
        else:
            r = (N - rm.mcnt[c]) * (rm.rest[i] * inv_temp)
        if r == -INFINITY:
            return -INFINITY
        s += r
        a += r if r >= 0.0 else -r
    return s + 1e-9 * a


cdef inline double fmax_arm_bound(const long long* pool, Py_ssize_t q0, Py_ssize_t q1,
                                  Py_ssize_t i, double fi, const double* fmax,
                                  double inv_temp) noexcept nogil:
    """sum over the members j != i of pool[q0:q1] of min(fmax_i, fmax_j) / tau (in pool order)."""
    cdef Py_ssize_t q, j
    cdef double v = 0.0
    for q in range(q0, q1):
        j = pool[q]
        if j != i:
            v += (fi if fi < fmax[j] else fmax[j]) * inv_temp
    return v


cdef inline void lazy_bound(Py_ssize_t c, const long long* fill, const long long* pool,
                             Py_ssize_t c_old, Py_ssize_t i, double fi, const double* fmax,
                             double inv_temp, const RowMemo* rm, bint hasm, long long* N,
                             long long* T, double* acc2) noexcept nogil:
    """Arm c's population N[c] and bound sum acc2[c] (T[c]: its members in i's memo, -1
    without a memo).  With the memo (its arm sums ``memo_arm_sums`` in place) the bound
    is ``memo_ub``, O(1)."""
    N[c] = fill[c + 1] - fill[c] - (c == c_old)
    if hasm:
        acc2[c] = memo_ub(rm, i, c, N[c], inv_temp)
        T[c] = rm.mcnt[c]
    else:
        acc2[c] = fmax_arm_bound(pool, fill[c], fill[c + 1], i, fi, fmax, inv_temp)
        T[c] = -1
