# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled annealed Gibbs sweeps over the cluster labels of one block.

One step resamples the label of mention i from

    p(y_i = y | y_-i, x)  ∝  exp( S_y / tau ),   S_y = sum_{j in C_y \\ {i}} f_theta(x_i, x_j),

over every non-empty cluster y plus one new empty cluster (S = 0), by the
Gumbel-max trick (Chen & Ghahramani 2016, Eq. 2): y* = argmax_y S_y / tau + g_y.
``racing=0`` sums every factor (exact Gibbs); ``racing=1`` estimates each S_y from
a subsample of C_y drawn without replacement and stops with the unequal-population
Racing-Normal test of Appx. C.3 (Eq. 26-27): arm y has its own population
N_y = |C_y \\ {i}|, estimate N_y mu_y + g_y, standard error
N_y sigma_y ((1 - (T_y - 1)/(N_y - 1)) / T_y)^(1/2), and arm y is eliminated when
the leader's estimate exceeds its own by more than
B * (se_leader^2 + se_y^2)^(1/2), with B = Phi^-1(1 - delta / ((D - 1)(t* - 1)))
given as a table ``b_table[D, t*]``.  Mini-batches: T(1) = first_batch,
T(2) = first_batch + max(1, (N_y - first_batch) // 10), then T(t) = 2 T(t - 1),
capped at N_y; arms with N_y <= first_batch are summed exactly.

Random numbers come from one xoshiro256** generator per block (Blackman & Vigna
2018), state ``rng_state`` (4 x uint64), drawn inside the kernel so that no Python
code runs between steps: per sweep, a Fisher-Yates shuffle of the movable
mentions (k = n_mov - 1 .. 1 swaps position k with ``below(k + 1)``); per step,
one Gumbel per arm in the order clusters by increasing label, then the new
cluster; per subsampled member, one ``below(N_y - k)`` of a partial Fisher-Yates
shuffle.  ``below(m) = ((x >> 32) * m) >> 32`` (integer arithmetic, m < 2^32);
Gumbel = -log(-log(u)) with u = ((x >> 11) + 0.5) 2^-53 (every arm's u is drawn; its
two logs are taken only when a comparison needs them: the tables ``G_LO(u)`` <= the
Gumbel <= ``G_UP(u)`` bracket the arm's score, and a comparison the bracket settles
is the one the Gumbel would give, so no decision changes; on the shipped data racing
takes ~2 Gumbels' logs per step instead of ~16).  Each step scatters mention
i's id lists into the block's row tables (``coref.factors._rows.row_set``), so its
factors look the ids of j up instead of merging sorted lists (same values).  The
pure-Python twin is
``coref.gibbs._gibbs_py``; both give bit-identical results from the same state.  Inputs
are validated by ``coref.gibbs.sampler``.

Small arms (N_y <= first_batch) with the small-arm bound ``fmax`` are pending: tested
against the leader every round by an upper bound of their sum, dropped when clearly
behind, summed only when the race of the subsampled arms is over.  The partner memo
(``RowMemo``: per mention its K best partners and the best other factor, built from one
evaluated row when a step would otherwise sum many small-arm members) tightens that
bound per (mention, arm) and bounds the subsampled arms in O(K) per step before their
first draw (see ``anneal``).
"""
from libc.math cimport sqrt, log, INFINITY, NAN
from libc.stdint cimport uint64_t
from libc.string cimport memset

from coref.factors._factors cimport (BlockData, make_block, block_factor, row_set, row_clear,
                                     prefetch_pair)
from coref.gibbs._pool cimport pool_init, pool_remove, pool_insert, pool_members, merge_act, mates_mark, _finish
from coref.gibbs._prepass cimport row_maxima, matrix_rows
from coref.gibbs._memo cimport (RowMemo, memo_build, memo_find, memo_max, memo_arm_sums,
                               memo_arm_clear, memo_ub, lazy_bound, memo_row_has)
from coref.gibbs._xoshiro cimport below, uniform
from coref.gibbs._rounds cimport _sched, _n_rounds
from coref.gibbs._cv cimport CVState, cv_init, cv_arm, cv_move
from coref.gibbs._pipe cimport (Sweep, MemoPipe, take_memo, pipelined_sweep, pipe_open, pipe_close,
                               sweep_work)

from coref.factors._factors import shared_memo
from coref.gibbs.partners import check_index, check_tier
from coref.gibbs.work import Work


# G_UP[k] >= -log(-log(u)) for every u < (k + 1) / N_GUP: the Gumbel at the bin's upper
# end, raised by a relative 1e-9 (far above the few-ulp error of two logs), +inf for
# the last bin.  A test "score with G_UP in place of the Gumbel is out of the race"
# then implies the same test with the Gumbel (float sums and differences are
# monotone), so the Gumbel's two logs are computed only for arms still in the race.
cdef enum:
    N_GUP = 4096
cdef double G_UP[N_GUP]
# G_LO[k] <= -log(-log(u)) for every u >= k / N_GUP: the Gumbel at the bin's lower end,
# lowered by a relative 1e-9; -inf for the first bin.  With G_UP it brackets an arm's
# score, so a comparison that the bracket already settles needs no logs.
cdef double G_LO[N_GUP]


cdef void _init_gup():
    cdef int k
    cdef double x, g
    for k in range(N_GUP - 1):
        x = (k + 1.0) / N_GUP
        g = -log(-log(x))
        G_UP[k] = g + 1e-9 * (1.0 + (g if g > 0.0 else -g))
    G_UP[N_GUP - 1] = INFINITY
    G_LO[0] = -INFINITY
    for k in range(1, N_GUP):
        x = (<double>k) / N_GUP
        g = -log(-log(x))
        G_LO[k] = g - 1e-9 * (1.0 + (g if g > 0.0 else -g))


_init_gup()


cdef inline double _gum_up(double u) noexcept nogil:
    """An upper bound of -log(-log(u)) (table G_UP)."""
    return G_UP[<int>(u * N_GUP)]


cdef inline double _gum_lo(double u) noexcept nogil:
    """A lower bound of -log(-log(u)) (table G_LO)."""
    return G_LO[<int>(u * N_GUP)]


def gumbel_lower(const double[::1] u, double[::1] out):
    """The table bound G_LO(u) <= -log(-log(u)) for each u in (0, 1) (tests)."""
    cdef Py_ssize_t k
    for k in range(u.shape[0]):
        if not 0.0 < u[k] < 1.0:
            raise ValueError(f"u[{k}] = {u[k]!r} is not in (0, 1)")
        out[k] = _gum_lo(u[k])


def gumbel_upper(const double[::1] u, double[::1] out):
    """The table bound G_UP(u) >= -log(-log(u)) for each u in (0, 1) (tests)."""
    cdef Py_ssize_t k
    for k in range(u.shape[0]):
        if not 0.0 < u[k] < 1.0:
            raise ValueError(f"u[{k}] = {u[k]!r} is not in (0, 1)")
        out[k] = _gum_up(u[k])


cdef inline double _gum(const double* us, double* gumbels, char* gok, Py_ssize_t c) noexcept nogil:
    """The Gumbel -log(-log(us[c])) of arm c, computed on first use."""
    if not gok[c]:
        gumbels[c] = -log(-log(us[c]))
        gok[c] = 1
    return gumbels[c]


cdef inline double _hi(const double* est, const double* us, const double* gumbels,
                      const char* gok, Py_ssize_t c) noexcept nogil:
    """est[c] + (its Gumbel if computed, else G_UP(u)): at least the arm's score."""
    return est[c] + (gumbels[c] if gok[c] else _gum_up(us[c]))


cdef inline double _lo(const double* est, const double* us, const double* gumbels,
                      const char* gok, Py_ssize_t c) noexcept nogil:
    """est[c] + (its Gumbel if computed, else G_LO(u)): at most the arm's score."""
    return est[c] + (gumbels[c] if gok[c] else _gum_lo(us[c]))


cdef inline bint _beats(const double* est, const double* us, double* gumbels, char* gok,
                        Py_ssize_t c, double* e_best) noexcept nogil:
    """True, and ``e_best`` raised to it, when arm c's score est[c] + g_c exceeds ``e_best``.

    The Gumbel g_c is computed only when the bound G_UP (``_hi``) leaves it possible.
    """
    cdef double v
    if _hi(est, us, gumbels, gok, c) > e_best[0]:
        v = est[c] + _gum(us, gumbels, gok, c)
        if v > e_best[0]:
            e_best[0] = v
            return True
    return False


cdef inline bint _behind(double eL, double margin, double v, const double* us, double* gumbels,
                         char* gok, Py_ssize_t c) noexcept nogil:
    """True when eL - (g_c + v) > margin, g_c arm c's Gumbel (computed only if the table
    bounds G_LO(u) <= g_c <= G_UP(u) leave the answer open; float sums are monotone)."""
    if eL - (_gum_up(us[c]) + v) > margin:
        return True
    if eL - (_gum_lo(us[c]) + v) > margin:
        return eL - (_gum(us, gumbels, gok, c) + v) > margin
    return False


cdef Py_ssize_t _step(BlockData* d,
                      long long* labels,          # INOUT (n,)
                      long long* size,            # INOUT (n,) cluster sizes
                      Py_ssize_t i, double inv_temp, int racing, int fb,
                      const double* b_table, Py_ssize_t b_cols,
                      uint64_t* rs,               # INOUT generator state (4,)
                      long long* n_evals,         # INOUT factor count
                      double* gumbels,            # work (n + 2,)
                      long long* cand, long long* cidx, long long* start,
                      long long* members, long long* fill,
                      double* acc, double* acc2, long long* T, long long* N,
                      double* est, double* se2, char* alive,
                      const double* fmax, long long* act,
                      long long* pool, long long* nC,
                      long long* bj, long long* bc,
                      double* us, char* gok, long long* lz,
                      const long long* n_rounds,
                      const double* fm, RowMemo* rm,
                      const CVState* cv, double* hc) noexcept nogil:
    """Resample labels[i]; return the chosen label (n_rounds[N] = _n_rounds(N, fb)).

    ``fm`` (exact sampler only; NULL = off): the block's factor matrix, row-major
    (n, n), fm[i * n + j] = f_theta(x_i, x_j) for the rows of the movable mentions;
    the step reads those instead of evaluating the factors (same values, same sums).
    ``rm`` (racing with the small-arm bound): the partner memo (``RowMemo``, K = 0 off).
    """
    cdef Py_ssize_t n = d.n
    cdef Py_ssize_t old = labels[i]
    cdef Py_ssize_t l, j, c, C = 0, D, new_label, k, pos, r, tstar, tr, leader, n_alive
    cdef Py_ssize_t n_open, best, nk, msum
    cdef bint final, settle = False, hasm, built, sums, out0
    cdef double f, g_best, v, B, mean, var, diff, tmp, fi, margin
    cdef Py_ssize_t n_lazy, na, a, m
    cdef long long evals = 0
    cdef long long sw
    cdef Py_ssize_t nb, q, lz_nmax, m2, e2, c_old
    cdef double lz_gmax, lz_umax, u, eL, eB
    # control variate (``coref.gibbs._cv``; ri = -1: off): hc[c] = H_y / tau of arm c
    cdef int ri = cv.rank[i] if cv != NULL else -1
    cdef double cvt = cv.w * inv_temp if cv != NULL else 0.0

    size[old] -= 1
    # mention i's id lists into the row tables: each factor (i, j) looks up j's ids
    if fm == NULL:
        row_set(d, i)
    # candidate clusters, by increasing label, and their members (fill = their starts).
    # i leaves the pool now only if its cluster empties; otherwise it stays in its
    # cluster's run (c_old), skipped when members are read, and leaves it at the end
    # only if it moves (most steps put i back where it was: no pool update at all)
    if size[old] == 0:
        pool_remove(i, old, size, cand, cidx, fill, pool, nC)
        c_old = -1
    else:
        c_old = cidx[old]
    C = nC[0]
    if size[old] == 0:
        new_label = old
    else:
        new_label = 0
        while size[new_label] > 0:
            new_label += 1
    D = C + 1
    # one uniform per arm (the Gumbel draws' stream); the Gumbel -log(-log(u)) itself
    # is computed only for the arms that need it (``_gum``): an arm whose score is
    # already out of the race with the table bound G_UP >= its Gumbel needs none
    if not racing:
        for c in range(D):
            us[c] = uniform(rs)
            gok[c] = 0
        for c in range(C):
            acc[c] = 0.0
        if fm != NULL:
            # the cached row of i: the same values in the same order, nothing evaluated
            for j in range(n):
                if j != i:
                    acc[cidx[labels[j]]] += fm[i * n + j]
        else:
            for j in range(n):
                if j != i:
                    acc[cidx[labels[j]]] += block_factor(d, i, j)
            evals = n - 1 if n > 1 else 0
        best = C
        g_best = _gum(us, gumbels, gok, C)
        for c in range(C):
            # acc * tau^-1 + G_UP(u) >= the arm's score: at most g_best, it cannot win
            if acc[c] * inv_temp + _gum_up(us[c]) <= g_best:
                continue
            v = acc[c] * inv_temp + _gum(us, gumbels, gok, c)
            if v > g_best:
                g_best = v
                best = c
        return _finish(d, labels, size, i, old, new_label if best == C else cand[best], c_old,
                       evals, n_evals, cand, cidx, fill, pool, nC)

    # ---- racing: one pass over the candidate clusters draws the arms' uniforms (in
    # increasing c, then the new cluster's: the stream of the exact sampler), sets up
    # each arm and sorts it: N <= first batch: exact (lazily, after an upper-bound
    # test, if fmax is given; listed in lz[0:n_lazy], increasing c); others:
    # subsampled, their members copied from the pool at the first draw (the subsampling
    # shuffles the copy; the pool stays sorted by index; an arm dropped before then is
    # never copied).  act[0:na] lists the arms that are not
    # lazy, in increasing c.
    tstar = 1
    n_open = 0
    n_lazy = 0
    na = 0
    fi = fmax[i] if fmax != NULL else 0.0
    lz_umax = 0.0
    lz_nmax = 0
    mates_mark(d, i, labels, cidx)
    for c in range(C):
        u = uniform(rs)
        us[c] = u
        if d.forb != NULL and d.forb[c]:
            d.forb[c] = 0          # it holds a paper mate of i: two authors, never one cluster
            continue
        m = fill[c + 1] - fill[c] - (c == c_old)    # N_y = |C_y \ {i}| (= size[cand[c]])
        if m <= fb and fmax != NULL:
            # lazy small arm: only its uniform, position and population are noted here;
            # the rest of its state is set if it is ever tested on its own.  The group's
            # bound uses max_y G_UP(u_y) = G_UP(max_y u_y) (G_UP is nondecreasing)
            lz[n_lazy] = c
            n_lazy += 1
            gok[c] = 0
            acc2[c] = NAN          # its bound sum, computed on its first test
            hc[c] = 0.0
            if u > lz_umax:
                lz_umax = u
            if m > lz_nmax:
                lz_nmax = m
            continue
        gok[c] = 0
        acc[c] = 0.0
        acc2[c] = 0.0
        hc[c] = 0.0
        N[c] = m
        alive[c] = 1
        if m <= fb:
            for q in range(fill[c], fill[c + 1]):
                if pool[q] != i:
                    acc[c] += block_factor(d, i, pool[q]) * inv_temp
            evals += m
            T[c] = m
        else:
            T[c] = 0               # its members are copied from the pool at its first draw
            if ri >= 0:
                hc[c] = cv_arm(cv, cand[c], ri, inv_temp)
            tr = n_rounds[m]
            if tr > tstar:
                tstar = tr
            n_open += 1
        act[na] = c
        na += 1
    lz_gmax = _gum_up(lz_umax) if n_lazy > 0 else -INFINITY
    us[C] = uniform(rs)
    gok[C] = 0
    alive[C] = 1
    # with i's memo, every arm y is bounded without a factor in O(1): the memo partners
    # in it exactly, every other member by rest_i (``memo_arm_sums``, ``memo_ub``;
    # the per-arm sums are zeroed again before the step ends)
    # with a candidate index a memo costs a few factors: built at i's first step
    if rm.K > 0 and rm.q_ptr != NULL and rm.rest[i] != rm.rest[i]:
        evals += memo_build(d, i, rm, n)
    sums = rm.K > 0 and rm.rest[i] == rm.rest[i]
    if sums:
        memo_arm_sums(rm, i, labels, cidx, n, inv_temp)
    if n_open > 0 and sums:
        # a subsampled arm whose bound is behind the new cluster's exact score (its
        # Gumbel) cannot win: dropped before its first draw
        eB = _gum(us, gumbels, gok, C)
        m = 0
        tstar = 1
        n_open = 0
        for a in range(na):
            c = act[a]
            if T[c] == 0 and N[c] > 0:
                v = memo_ub(rm, i, c, N[c], inv_temp)
                if _behind(eB, 0.0, v, us, gumbels, gok, c):
                    continue
                tr = n_rounds[N[c]]
                if tr > tstar:
                    tstar = tr
                n_open += 1
            act[m] = c
            m += 1
        na = m
    B = 0.0
    if n_open > 0:
        if tstar < 2:
            tstar = 2
        if tstar > b_cols - 1:
            tstar = b_cols - 1
        B = b_table[D * b_cols + tstar]
    # act is compacted after each elimination, so later rounds touch only the arms
    # still alive (same order, same decisions)
    r = 0
    while True:
        # ``settle``: the race of the subsampled arms is over but small arms are pending:
        # this pass draws nothing, it only tests and sums them (``final`` below)
        if not settle:
            r += 1
        # draw the next mini-batch of every alive, unfinished arm (arms in act order,
        # members in draw order), then evaluate the drawn pairs in that order: the
        # random stream and every sum are those of drawing and evaluating in turn, and
        # the next member's data can be fetched while a factor is computed
        nb = 0
        for a in range(na if not settle else 0):
            c = act[a]
            if alive[c] and 0 <= T[c] < N[c]:
                if T[c] == 0:
                    pool_members(members, pool, fill, c, c_old, i, N[c])
                tr = _sched(r, T[c], N[c], fb)
                for k in range(T[c], tr):
                    pos = fill[c] + k + below(rs, N[c] - k)
                    sw = members[fill[c] + k]
                    members[fill[c] + k] = members[pos]
                    members[pos] = sw
                    bj[nb] = members[fill[c] + k]
                    bc[nb] = c
                    nb += 1
                evals += tr - T[c]
                T[c] = tr
        if nb > 0:
            prefetch_pair(d, i, bj[0])
        for q in range(nb):
            if q + 1 < nb:
                prefetch_pair(d, i, bj[q + 1])
            c = bc[q]
            f = block_factor(d, i, bj[q]) * inv_temp
            if ri >= 0 and cv.rank[bj[q]] >= 0 and cv.rank[bj[q]] != ri:
                f -= cvt           # the residual f - h (control variate)
            acc[c] += f
            acc2[c] += f * f
        # estimates of the totals WITHOUT the Gumbels (est) and their standard errors.
        # The leader's score eL = est + g is exact; another arm's Gumbel is computed
        # only when a comparison needs it: lo = est + G_LO(u) <= est + g <= est + G_UP(u)
        # = hi (float sums are monotone), so "hi not above eL" = "cannot lead",
        # "eL - hi beyond the bound" = "eliminated", "eL - lo within it" = "stays",
        # each the decision the exact score would give.  (The new-cluster arm C is
        # exact: its score is its Gumbel.)
        leader = -1
        eL = 0.0
        n_open = 0
        n_alive = 0
        if alive[C]:
            est[C] = 0.0
            se2[C] = 0.0
            leader = C
            eL = _gum(us, gumbels, gok, C)
            n_alive = 1
        for a in range(na):
            c = act[a]
            if not alive[c]:
                continue
            n_alive += 1
            if T[c] == N[c]:
                est[c] = acc[c] + hc[c]
                se2[c] = 0.0
            else:
                n_open += 1
                mean = acc[c] / T[c]
                var = (acc2[c] - acc[c] * mean) / (T[c] - 1)
                if var < 0.0:
                    var = 0.0
                est[c] = N[c] * mean + hc[c]
                se2[c] = (<double>N[c] * N[c]) * var * (1.0 - (T[c] - 1.0) / (N[c] - 1.0)) / T[c]
            if leader < 0:
                leader = c
                eL = est[c] + _gum(us, gumbels, gok, c)
            elif _beats(est, us, gumbels, gok, c, &eL):
                leader = c
        if n_lazy > 0:
            # pending small arms (increasing c), tested every round: dropped unevaluated
            # once their upper bound g_y + sum_j b(i, j) / tau is clearly behind the
            # leader (the racing test with the bound in place of the arm's exact sum),
            # b(i, j) = min(fmax_i, fmax_j), or from i's partner memo (``RowMemo``) when
            # it has one; summed exactly (the leader updated) only when the race of the
            # subsampled arms is over (``final``: the leader exact or alone, its margin
            # smallest).  Each test first uses G_UP(u) >= g_y, then G_LO(u) <= g_y, and
            # g_y itself only if still undecided (``_behind``); the margin changes only
            # with the leader (to 0: a new leader is exact)
            final = n_open == 0 or n_alive == 1
            margin = B * sqrt(se2[leader]) if se2[leader] > 0.0 else 0.0
            hasm = rm.K > 0 and rm.rest[i] == rm.rest[i]
            # all at once first: every term b(i, j) / tau <= t = (max_j b(i, j)) / tau,
            # so each arm's bound is at most max_y G_UP(u_y) + (t + ... + t) (the largest
            # N_y terms if t >= 0, one term if t < 0): clearly behind with it, every
            # arm is clearly behind on its own (then none needs a test)
            v = 0.0
            f = (memo_max(rm, i) if hasm else fi) * inv_temp
            if f >= 0.0:
                for k in range(lz_nmax):
                    v += f
            else:
                v += f
            if eL - (lz_gmax + v) > margin:
                n_lazy = 0
            # with the memo, the arms without a memo partner at once: each one's bound
            # memo_ub(N_y) is at most that of N_y = the largest N (rest_i >= 0) or 1
            # (rest_i < 0), N * x and x + 1e-9 |x| being monotone
            out0 = False
            if hasm and n_lazy > 0:
                f = rm.rest[i] * inv_temp
                k = lz_nmax if f >= 0.0 else 1
                v = k * f
                v = v + 1e-9 * (v if v >= 0.0 else -v)
                out0 = eL - (lz_gmax + v) > margin
            nk = 0
            msum = 0
            for a in range(n_lazy):
                c = lz[a]
                if out0 and rm.mcnt[c] == 0:
                    continue
                if acc2[c] != acc2[c]:
                    lazy_bound(c, fill, pool, c_old, i, fi, fmax, inv_temp, rm, hasm, N, T, acc2)
                if _behind(eL, margin, acc2[c], us, gumbels, gok, c):
                    continue
                lz[nk] = c             # still pending
                nk += 1
                msum += N[c]
            n_lazy = nk
            if final and n_lazy > 0:
                # the race is over: sum the pending arms (each tested again, the leader
                # may change).  Many members to sum and no memo yet: evaluate i's whole
                # row once instead (its values give these sums) and keep its memo
                built = False
                if rm.K > 0 and not hasm and msum >= rm.row_min:
                    evals += memo_build(d, i, rm, n)
                    built = True
                    sums = True
                    memo_arm_sums(rm, i, labels, cidx, n, inv_temp)
                    for a in range(n_lazy):
                        c = lz[a]
                        lazy_bound(c, fill, pool, c_old, i, fi, fmax, inv_temp, rm, True, N, T,
                                    acc2)
                m = 0
                for a in range(n_lazy):
                    c = lz[a]
                    if _behind(eL, margin, acc2[c], us, gumbels, gok, c):
                        continue
                    m2 = fill[c]
                    e2 = fill[c + 1]
                    if T[c] == N[c]:
                        # every member a memo partner: their memo sum (pool and memo
                        # orders are both by index) is the exact sum
                        acc[c] = rm.msum[c]
                    elif built:
                        # the row's values; a member the build did not evaluate (outside
                        # i's candidates) is evaluated here
                        acc[c] = 0.0
                        for q in range(m2, e2):
                            j = pool[q]
                            if j == i:
                                continue
                            if memo_row_has(rm, i, j):
                                acc[c] += rm.row[j] * inv_temp
                            else:
                                acc[c] += block_factor(d, i, j) * inv_temp
                                evals += 1
                    else:
                        acc[c] = 0.0
                        for q in range(m2, e2):
                            if q + 1 < e2:
                                prefetch_pair(d, i, pool[q + 1])
                            j = pool[q]
                            if j == i:
                                continue
                            k = memo_find(rm.j + i * rm.K, rm.K, j) if hasm else -1
                            if k >= 0:
                                acc[c] += rm.f[i * rm.K + k] * inv_temp
                            else:
                                acc[c] += block_factor(d, i, j) * inv_temp
                        evals += N[c] - (T[c] if T[c] > 0 else 0)
                    acc2[c] = 0.0
                    alive[c] = 1
                    T[c] = N[c]
                    est[c] = acc[c]
                    se2[c] = 0.0
                    n_alive += 1
                    if _beats(est, us, gumbels, gok, c, &eL):
                        leader = c
                        margin = 0.0
                    bj[m] = c
                    m += 1
                n_lazy = 0
                if m > 0:
                    # merge the summed small arms into act (both increasing in c)
                    na = merge_act(act, na, bj, m, bc)
        settle = False
        if n_open == 0 or n_alive == 1:
            break
        # eliminate arms clearly behind the leader (each test reads only the leader
        # and the arm, so the order of the tests does not matter)
        m = 0
        for a in range(na):
            c = act[a]
            if not alive[c]:
                continue
            if c != leader:
                margin = B * sqrt(se2[leader] + se2[c])
                if eL - _hi(est, us, gumbels, gok, c) > margin:
                    alive[c] = 0
                    n_alive -= 1
                    continue
                if eL - _lo(est, us, gumbels, gok, c) > margin:
                    if eL - (est[c] + _gum(us, gumbels, gok, c)) > margin:
                        alive[c] = 0
                        n_alive -= 1
                        continue
            act[m] = c
            m += 1
        na = m
        if C != leader and alive[C]:
            diff = eL - gumbels[C]
            if diff > B * sqrt(se2[leader] + se2[C]):
                alive[C] = 0
                n_alive -= 1
        if n_alive == 1:
            if n_lazy > 0:
                settle = True      # no draw: test (and sum) the pending small arms
                continue
            break
        # an arm still open?
        n_open = 0
        for a in range(na):
            c = act[a]
            if alive[c] and T[c] < N[c]:
                n_open += 1
        if n_open == 0:
            if n_lazy > 0:
                settle = True
                continue
            break
    # final choice: the best alive arm (exhausted arms' est = their sums)
    best = -1
    eB = 0.0
    for a in range(na):
        c = act[a]
        if not alive[c]:
            continue
        if T[c] == N[c]:
            est[c] = acc[c] + hc[c]
        if best < 0:
            best = c
            eB = est[c] + _gum(us, gumbels, gok, c)
        elif _beats(est, us, gumbels, gok, c, &eB):
            best = c
    if alive[C] and (best < 0 or gumbels[C] > eB):
        best = C
    if sums:
        memo_arm_clear(rm, i, labels, cidx, n)
    return _finish(d, labels, size, i, old, new_label if best == C else cand[best], c_old, evals,
                   n_evals, cand, cidx, fill, pool, nC)


cdef Py_ssize_t _steps(Sweep* w, const long long* order, Py_ssize_t n_mov, double inv_temp,
                       long long* ev, MemoPipe* pipe) noexcept nogil:
    """One sweep's steps in ``order``; returns the mentions moved.  With ``pipe`` (the
    first sweep of ``coref.gibbs._pipe.pipelined_sweep``), each mention's memo is taken by ``take_memo``
    before its step."""
    cdef Py_ssize_t k, i, moved = 0
    cdef long long tmp
    for k in range(n_mov):
        i = order[k]
        if pipe != NULL:
            take_memo(w, pipe, i, ev)
        tmp = w.labels[i]
        if _step(w.d, w.labels, w.size, i, inv_temp, w.racing, w.fb, w.b_table, w.b_cols, w.rs, ev,
                 w.gumbels, w.cand, w.cidx, w.start, w.members, w.fill, w.acc, w.acc2, w.T, w.N,
                 w.est, w.se2, w.alive, w.fmax, w.act, w.pool, w.nC, w.bj, w.bc, w.us, w.gok,
                 w.lz, w.n_rounds, w.fm, w.rm, w.cv, w.hc) != tmp:
            moved += 1
            if w.cv != NULL:
                cv_move(w.cv, i, tmp, w.labels[i])
    return moved


def anneal(object enc,                      # IN  EncodedBlock
           const double[::1] theta,         # IN  (N_FEATURES,)
           double bias,
           long long[::1] labels,           # INOUT (n,) labels in [0, n)
           long long[::1] size,             # INOUT (n,) cluster sizes of labels
           const long long[::1] movable,    # IN  (n_mov,) mentions Gibbs may move
           const double[::1] inv_temps,     # IN  (n_sweeps,) 1 / temperature per sweep
           const char[::1] stop_mask,       # IN  (n_sweeps,) 1 = sweep counts for patience
           int patience,                    # early stop after this many still sweeps (0 = off)
           int racing, int first_batch,
           int small_arm_bound,             # racing: 0 off, 1 compute fmax then use, 2 use fmax
           double[::1] fmax,                # INOUT (n,) max_k f(x_j, x_k) (mode 1 writes it)
           const double[:, ::1] b_table,    # IN  (>= n + 2, n_cols) bounds B[D, t*]
           unsigned long long[::1] rng_state,   # INOUT (4,) xoshiro256** state
           long long[:, ::1] lab_hist,      # OUT (n_sweeps, n) labels after each sweep, or (0, n)
           long long[::1] evals,            # OUT (n_sweeps,) factors evaluated per sweep
           double[:, ::1] fmat=None,        # INOUT (n, n) factor matrix (exact sampler), or None
           int fmat_mode=0,                 # 0 off, 1 compute the movable rows then use, 2 use
           long long[:, ::1] memo_j=None,   # INOUT (n, K) partner memo: indices, or None
           double[:, ::1] memo_f=None,      # INOUT (n, K) their factors
           double[::1] memo_rest=None,      # INOUT (n,) best factor not kept (NaN: no memo)
           Py_ssize_t memo_row_min=0,       # build a row when this many members pend
           Py_ssize_t still_moves=0,        # a counting sweep moving at most this many is still
           const int[::1] cv_rank=None,     # IN  (n,) racing's control variate: first-name ranks
           double cv_weight=0.0,            # its weight (0: off)
           const long long[::1] cand_q_ptr=None,    # IN  (L (n + 1),) candidate index (PartnerIndex)
           const long long[::1] cand_q_key=None,    # IN  its query keys
           const long long[::1] cand_k_ptr=None,    # IN  (n_keys + 1,) postings per key
           const long long[::1] cand_k_men=None,    # IN  the postings (mentions)
           const double[::1] cand_rest=None,        # IN  (L n,) bound of f(i, j) off the candidates
           double cand_accept=0.0,  # keep a candidate memo up to this rest
           long long[::1] memo_ovf=None,    # INOUT (cap,) the memo's second tier (arena), or None
           long long[::1] memo_ovf_at=None, # INOUT (2 n + 1,) per mention start, length (-1: none); fill
           double[::1] memo_tier=None,      # INOUT (n,) the tier's bound t_i
           int memo_threads=1):             # threads of the first sweep's candidate memos
    """Run the sweeps of one block; return the number of sweeps run.

    Sweep s visits the movable mentions in a fresh random order at inverse
    temperature ``inv_temps[s]``.  Early stop: after a sweep with
    ``stop_mask[s]`` set that moved at most ``still_moves`` mentions (none by
    default), a counter grows (a sweep moving more resets it; sweeps without the
    mask leave it alone); when it reaches ``patience`` the run stops.  Rows of ``lab_hist`` and entries of ``evals`` after the stop are
    not written.

    ``small_arm_bound`` (racing only; 1: first compute fmax_j = max_{k != j}
    f_theta(x_j, x_k) for every mention into ``fmax``, n (n - 1) / 2 factors counted
    in ``evals[0]``, unless no mention is movable; when only some are (``movable``
    shorter than n, sorted and distinct), for the movable mentions only, the fixed
    ones getting +inf, n_mov (n - 1) - n_mov (n_mov - 1) / 2 factors; 2: use
    ``fmax`` as given); then an arm with N_y <= first_batch is summed only if its upper
    bound g_y + sum_{j in C_y} min(fmax_i, fmax_j) / tau is not behind the leader
    by more than B se_leader after the first mini-batch round (0 when the leader is
    exact); otherwise it is eliminated without evaluating a factor.

    ``fmat_mode`` (exact sampler only; 1: first write f_theta(x_i, x_j) into
    ``fmat[i, j]`` for every movable mention i and every j != i, n_mov (n - 1) factors
    counted in ``evals[0]`` (both orders are evaluated: symmetry is not
    assumed); 2: use ``fmat`` as given): every step then reads row i of the
    matrix instead of evaluating factors, so a sweep evaluates none.  The labels,
    the random stream and every sum are those of ``fmat_mode=0``.

    Partner memo (racing with ``small_arm_bound`` only; ``memo_j`` None = off): when a
    step is about to sum pending small arms holding at least ``memo_row_min`` members
    and mention i has no memo yet (``memo_rest[i]`` NaN), it evaluates i's whole row
    (n - 1 factors, counted) and keeps the K = ``memo_j.shape[1]`` partners j with the
    largest f(x_i, x_j) (ties to the smaller j) in ``memo_j[i]`` / ``memo_f[i]``, sorted by
    j (unused slots j = n, f = 0.0), and in ``memo_rest[i]`` the largest factor of the
    others (-inf if none).  Later steps of i bound every arm by its memo: f(x_i, x_j) for
    a partner in it (exact), memo_rest[i] for any other (``coref.gibbs._memo``), and read
    the memo's factors instead of evaluating them.  The memo persists across calls.
    Candidate index (``cand_*``, ``coref.gibbs.partners.partner_index``; None: off): a
    mention's memo is built at its first step from its candidates (level by level, the
    whole row as the last resort) with ``cand_rest`` bounding the others, kept above
    ``cand_accept``; second tier (``memo_ovf`` / ``memo_ovf_at`` / ``memo_tier``; None:
    off): the partners beyond the K kept above t_i, listed while the arena has room.  The
    exact contract: ``coref.gibbs._memo.memo_build``.  Only evaluated factors count.
    ``memo_threads`` > 1 (candidate index only): in the first sweep, ``memo_threads - 1``
    OpenMP helper threads build the memos ahead of the steps (``coref.gibbs._pipe``);
    labels, memos, tier arrays and factor counts are those of one thread, which the twin
    follows.

    Control variate (racing only; ``cv_rank`` None or ``cv_weight`` 0 = off): a
    subsampled arm y is estimated as N_y mean(f - h) + H_y with h(i, j) = ``cv_weight``
    when ``cv_rank[i]``, ``cv_rank[j]`` >= 0 differ, else 0, and H_y its exact sum over the
    arm (``coref.gibbs._cv``; Chen & Ghahramani 2016, Sec. 3.4); the racing test reads the
    residuals' variance.  Exactly summed arms are unchanged.
    """
    cdef list keep = []
    cdef BlockData d = make_block(enc, theta, bias, keep, 64 * 1024 * 1024, True,
                                  shared_memo(enc))
    cdef Py_ssize_t n = d.n, n_mov = movable.shape[0], n_sw = inv_temps.shape[0]
    w = Work(n)
    cdef long long[::1] cand = w.cand, cidx = w.cidx, start = w.start, order = w.order
    cdef long long[::1] members = w.members, fill = w.fill, N = w.N, act = w.act, pool = w.pool
    cdef long long[::1] nc = w.nc, nr = w.nr
    cdef const double* fmx = NULL
    cdef double* fmp = NULL
    cdef long long ev0 = 0
    cdef char[::1] alive = w.alive
    cdef Py_ssize_t b_cols = b_table.shape[1], s, k, j, i, tmp, still = 0, used = 0
    cdef bint record = lab_hist.shape[0] > 0
    cdef Py_ssize_t moved
    cdef long long ev
    cdef uint64_t st[4]
    if stop_mask.shape[0] != n_sw or evals.shape[0] != n_sw or rng_state.shape[0] != 4:
        raise ValueError("stop_mask, evals must have one entry per sweep; rng_state 4")
    if record and (lab_hist.shape[0] != n_sw or lab_hist.shape[1] != n):
        raise ValueError("lab_hist must have shape (n_sweeps, n) or (0, n)")
    if racing and small_arm_bound and fmax.shape[0] != n:
        raise ValueError("fmax must have one entry per mention")
    if b_table.shape[0] < n + 2:
        raise ValueError("b_table needs n + 2 rows")
    if fmat_mode not in (0, 1, 2):
        raise ValueError(f"fmat_mode must be 0, 1 or 2; got {fmat_mode}")
    if still_moves < 0:
        raise ValueError(f"still_moves must be >= 0; got {still_moves}")
    cdef RowMemo rm
    cdef CVState cvs
    cdef CVState* cvp = NULL
    cdef long long[::1] cv_named
    cdef int[::1] cv_cnt
    if racing and cv_rank is not None and cv_weight != 0.0 and n > 0:
        if cv_rank.shape[0] != n:
            raise ValueError("cv_rank must have one entry per mention")
        import numpy as np
        cvs.M = int(np.max(cv_rank)) + 1
        if np.min(cv_rank) < -1:
            raise ValueError("cv_rank entries must be >= -1")
        if cvs.M > 0:
            cv_named = np.zeros(n, np.int64)
            cv_cnt = np.zeros(n * cvs.M, np.int32)
            cvs.rank = &cv_rank[0]
            cvs.named = &cv_named[0]
            cvs.cnt = &cv_cnt[0]
            cvs.w = cv_weight
            cvp = &cvs
    cdef double[::1] rowbuf = w.row, msum = w.msum, mabs = w.mabs
    cdef long long[::1] mcnt = w.mcnt
    memset(&rm, 0, sizeof(RowMemo))        # K = 0 (off), every pointer NULL, every flag off
    rm.n = n
    rm.row_min = memo_row_min
    rm.row = &rowbuf[0]
    rm.msum = &msum[0]
    rm.mabs = &mabs[0]
    rm.mcnt = &mcnt[0]
    rm.accept = cand_accept
    rm.row_all = True
    cdef long long[::1] ocnt_buf, vis_buf, stamp_buf
    if memo_j is not None and racing and small_arm_bound and n > 0:
        if memo_f is None or memo_rest is None or memo_j.shape[0] != n or memo_f.shape[0] != n \
                or memo_f.shape[1] != memo_j.shape[1] or memo_rest.shape[0] != n:
            raise ValueError("memo_j, memo_f must have shape (n, K) and memo_rest (n,)")
        if memo_j.shape[1] > 0:
            rm.K = memo_j.shape[1]
            rm.j = &memo_j[0, 0]
            rm.f = &memo_f[0, 0]
            rm.rest = &memo_rest[0]
            if cand_q_ptr is not None:
                if cand_q_key is None or cand_k_ptr is None or cand_k_men is None or cand_rest is None:
                    raise ValueError("the candidate index needs cand_q_ptr, cand_q_key, cand_k_ptr, "
                                     "cand_k_men and cand_rest")
                check_index(cand_q_ptr, cand_q_key, cand_k_ptr, cand_k_men, cand_rest, n)
                import numpy as np
                stamp_buf = np.zeros(n, np.int64)
                rm.q_ptr = &cand_q_ptr[0]
                rm.q_key = &cand_q_key[0] if cand_q_key.shape[0] > 0 else NULL
                rm.k_ptr = &cand_k_ptr[0]
                rm.k_men = &cand_k_men[0] if cand_k_men.shape[0] > 0 else NULL
                rm.c_rest = &cand_rest[0]
                rm.n_levels = cand_rest.shape[0] // n
                rm.stamp = &stamp_buf[0]
                vis_buf = np.zeros(n, np.int64)
                rm.vis = &vis_buf[0]
            if memo_ovf is not None:
                check_tier(memo_ovf, memo_ovf_at, memo_tier, n)
                import numpy as np
                ocnt_buf = np.zeros(n + 2, np.int64)
                rm.ovf = &memo_ovf[0]
                rm.ovf_cap = memo_ovf.shape[0]
                rm.ovf_at = &memo_ovf_at[0]
                rm.tier = &memo_tier[0]
                rm.ocnt = &ocnt_buf[0]
    if fmat_mode:
        if racing:
            raise ValueError("the factor matrix (fmat_mode 1 or 2) is for the exact sampler "
                             "(racing = 0)")
        if fmat is None or fmat.shape[0] != n or fmat.shape[1] != n:
            raise ValueError(f"fmat must have shape ({n}, {n}) when fmat_mode is set")
        if n > 0:
            fmp = &fmat[0, 0]
    # the first sweep's memos built ahead of its steps over threads (``coref.gibbs._pipe``)
    cdef int nt = memo_threads if memo_threads > 1 and rm.K > 0 and rm.q_ptr != NULL \
        and racing and n_sw > 0 and n_mov > 1 else 1
    cdef MemoPipe pipe
    cdef MemoPipe* pp = NULL
    if nt > 1:
        pp = pipe_open(&pipe, &rm, &d, enc, theta, bias, keep, nt, &order[0], n_mov, memo_rest)
    cdef Sweep sw
    sw.d = &d
    sw.labels = &labels[0] if n > 0 else NULL
    sw.size = &size[0] if n > 0 else NULL
    sw.racing = racing
    sw.fb = first_batch
    sw.b_table = &b_table[0, 0]
    sw.b_cols = b_cols
    sw.rs = st
    sweep_work(&sw, w)
    sw.rm = &rm
    sw.cv = cvp
    for k in range(4):
        st[k] = rng_state[k]
    with nogil:
        if racing and small_arm_bound == 1 and n_sw > 0 and n_mov > 0:
            ev0 = row_maxima(&d, n, &movable[0], n_mov, &fmax[0], &alive[0])
        if fmat_mode == 1 and n_sw > 0 and n_mov > 0:
            ev0 += matrix_rows(&d, n, &movable[0], n_mov, fmp)
        if racing and small_arm_bound and n > 0:
            fmx = &fmax[0]
        # rounds until an arm of population N is exhausted, for every N < n
        for k in range(n):
            nr[k] = _n_rounds(k, first_batch) if racing else 0
        if n > 0:
            pool_init(n, &labels[0], &size[0], &cand[0], &cidx[0], &fill[0], &pool[0],
                       &act[0], &nc[0])
        if cvp != NULL:
            cv_init(cvp, &labels[0], n)
        for s in range(n_sw):
            for k in range(n_mov):
                order[k] = movable[k]
            k = n_mov - 1
            while k >= 1:
                j = below(st, k + 1)
                tmp = order[k]
                order[k] = order[j]
                order[j] = tmp
                k -= 1
            ev = ev0 if s == 0 else 0
            sw.fmax = fmx
            sw.fm = fmp
            if s == 0 and pp != NULL:
                moved = pipelined_sweep(&sw, pp, inv_temps[s], &ev, _steps)
                pipe_close(pp)
                pp = NULL
            else:
                moved = _steps(&sw, &order[0], n_mov, inv_temps[s], &ev, NULL)
            evals[s] = ev
            if record:
                for k in range(n):
                    lab_hist[s, k] = labels[k]
            used = s + 1
            if patience > 0 and stop_mask[s]:
                if moved > still_moves:
                    still = 0
                else:
                    still += 1
                    if still >= patience:
                        break
    for k in range(4):
        rng_state[k] = st[k]
    return used


def marginal_sweep(const double[:, ::1] F,       # IN  (n, n) factors / temperature, zero diagonal
                   double[:, ::1] S,              # INOUT (n, n) S[i, c] = sum_{j in slot c} F[i, j]
                   long long[::1] lab,            # INOUT (n,) slot of each mention
                   long long[::1] size,           # INOUT (n,) mentions per slot
                   const long long[::1] perm,     # IN  (n,) visiting order of the sweep
                   const double[::1] u,           # IN  (n,) one uniform per visit, in visiting order
                   exp):                          # numpy.exp (the ufunc), see below
    """One single-site Gibbs sweep of :func:`coref.confidence.gibbs_marginals`, compiled.

    Visit k resamples mention i = perm[k] among the non-empty slots and one new slot
    (the slot of i if it has just emptied, else the first empty one) with weights
    exp(S[i, c] - m) and exp(-m), m = max(0, max_c S[i, c]), by inverse CDF at
    u[k] * (total weight) on the running sum over slots in increasing order (numpy's
    ``searchsorted(..., side="right")``, stepping back over zero weights), and moves F's
    column i between the columns of S.  The exponentials are computed by ``exp``
    (``numpy.exp``) on one array per visit, so that every weight, sum and draw is the
    numpy implementation's bit for bit (``numpy.exp`` and the C library's ``exp`` differ
    in the last bit for some arguments).
    """
    import numpy as np
    cdef Py_ssize_t n = F.shape[0], k, c, nv, b, a, i, lo, hi, mid
    cdef double m, x, tot
    xs_arr = np.empty(n + 1)
    es_arr = np.empty(n + 1)
    cdef double[::1] xs = xs_arr
    cdef double[::1] es = es_arr
    cdef double[::1] w = np.zeros(n)
    cdef double[::1] cs = np.zeros(n)
    cdef long long[::1] slot = np.zeros(n + 1, np.int64)
    if S.shape[0] != n or S.shape[1] != n or lab.shape[0] != n or size.shape[0] != n \
            or perm.shape[0] != n or u.shape[0] != n or F.shape[1] != n:
        raise ValueError("F and S must be (n, n); lab, size, perm and u must have n entries")
    for k in range(n):
        i = perm[k]
        a = lab[i]
        size[a] -= 1
        # non-empty slots (increasing), their S[i, c], and m
        nv = 0
        m = 0.0
        for c in range(n):
            if size[c] > 0:
                slot[nv] = c
                xs[nv] = S[i, c]
                if S[i, c] > m:
                    m = S[i, c]
                nv += 1
        for c in range(nv):
            xs[c] = xs[c] - m
        xs[nv] = -m
        exp(xs_arr[:nv + 1], out=es_arr[:nv + 1])
        # the new-cluster slot: a if it has just emptied, else the first empty slot
        if size[a] == 0:
            b = a
        else:
            b = 0
            while b < n and size[b] > 0:
                b += 1
        for c in range(n):
            w[c] = 0.0
        for c in range(nv):
            w[slot[c]] = es[c]
        w[b] = es[nv]
        tot = 0.0
        for c in range(n):
            tot = tot + w[c]
            cs[c] = tot
        x = u[k] * cs[n - 1]
        # first index with cs[idx] > x (searchsorted side="right"), at most n - 1
        lo = 0
        hi = n
        while lo < hi:
            mid = (lo + hi) // 2
            if cs[mid] > x:
                hi = mid
            else:
                lo = mid + 1
        b = lo if lo < n - 1 else n - 1
        while w[b] == 0.0:
            b -= 1
        if b != a:
            for c in range(n):
                S[c, a] -= F[c, i]
                S[c, b] += F[c, i]
            lab[i] = b
        size[b] += 1
