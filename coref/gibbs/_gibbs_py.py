"""Pure-Python reference twin of ``coref.gibbs._gibbs`` (same generator state -> same results).

Slow; used by the tests only.  See ``coref.gibbs._gibbs`` for the algorithm.
"""
import math

import numpy as np

from coref.factors._factors_py import block_factor
from coref.gibbs.partners import check_index, check_tier

_MASK = (1 << 64) - 1


class Xoshiro:
    """xoshiro256** on Python ints (state: 4 unsigned 64-bit words)."""

    def __init__(self, state):
        self.s = [int(x) & _MASK for x in state]

    def next(self):
        s = self.s
        x = (s[1] * 5) & _MASK
        result = ((((x << 7) | (x >> 57)) & _MASK) * 9) & _MASK
        t = (s[1] << 17) & _MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = ((s[3] << 45) | (s[3] >> 19)) & _MASK
        return result

    def below(self, m):
        return ((self.next() >> 32) * m) >> 32

    def gumbel(self):
        u = (float(self.next() >> 11) + 0.5) * (1.0 / 9007199254740992.0)
        return -math.log(-math.log(u))


def _sched(r, prev, N, fb):
    if r == 1:
        t = fb
    elif r == 2:
        t = fb + max(1, (N - fb) // 10)
    else:
        t = 2 * prev
    return min(t, N)


def _n_rounds(N, fb):
    r, t = 1, _sched(1, 0, N, fb)
    while t < N:
        r += 1
        t = _sched(r, t, N, fb)
    return r


def _memo_build(enc, theta, bias, i, memo):
    """i's memo as the kernel's ``memo_build``: ``(row, evals)``, row = {j: f(i, j)} of the
    factors evaluated (i's candidates, or the whole row); K best partners (ties to the
    smaller j) sorted by j, and rest."""
    mj, mf, mrest, _, index, tier, accept = memo
    n, K = enc.n, mj.shape[1]

    def keep(row):
        ranked = sorted(row, key=lambda j: (-row[j], j))
        return sorted(ranked[:K]), (row[ranked[K]] if len(ranked) > K else -math.inf)

    row, t, whole = {}, accept, True
    if index is not None:
        q_ptr, q_key, k_ptr, k_men, c_rest = index
        for lev in range(len(c_rest) // n):
            o = lev * (n + 1)
            for p in range(int(q_ptr[o + i]), int(q_ptr[o + i + 1])):
                k = int(q_key[p])
                for j in (int(x) for x in k_men[int(k_ptr[k]):int(k_ptr[k + 1])]):
                    if j != i and j not in row:
                        row[j] = block_factor(enc, theta, bias, i, j)
            kept, rest = keep(row)
            cr = float(c_rest[lev * n + i])
            if cr <= max(rest, accept):
                rest = max(rest, cr)
                kept = [j for j in kept if row[j] > cr]
                t, whole = cr, False
                break
    if whole:
        row = {j: row[j] if j in row else block_factor(enc, theta, bias, i, j) for j in range(n) if j != i}
        kept, rest = keep(row)
    evals = len(row)
    mj[i, :] = n
    mf[i, :] = 0.0
    mj[i, :len(kept)] = kept
    mf[i, :len(kept)] = [row[j] for j in kept]
    mrest[i] = rest
    if tier is not None:
        ovf, at, tb = tier
        at[n + i] = -1
        if rest > t:
            ks = set(kept)
            lst = sorted(j for j in row if row[j] > t and j not in ks)
            if at[2 * n] + len(lst) <= len(ovf):
                q = int(at[2 * n])
                at[i], at[n + i], tb[i] = q, len(lst), t
                ovf[q:q + len(lst)] = lst
                at[2 * n] = q + len(lst)
    return row, evals


def _memo_sums(memo, i, labels, cidx, n, inv_temp):
    """Per arm: the sum of f(i, j) / tau over i's memo partners in it (memo order), the sum
    of their absolute values, their number."""
    msum, mabs, mcnt = {}, {}, {}
    for k in range(memo[0].shape[1]):
        j = int(memo[0][i, k])
        if j >= n or j == i:
            continue
        c = cidx[int(labels[j])]
        t = float(memo[1][i, k]) * inv_temp
        msum[c] = msum.get(c, 0.0) + t
        mabs[c] = mabs.get(c, 0.0) + abs(t)
        mcnt[c] = mcnt.get(c, 0) + 1
    ocnt = {}
    tier = memo[5]
    if tier is not None and tier[1][n + i] > 0:
        a = int(tier[1][i])
        for j in tier[0][a:a + int(tier[1][n + i])]:
            c = cidx[int(labels[int(j)])]
            ocnt[c] = ocnt.get(c, 0) + 1
    return msum, mabs, mcnt, ocnt


def _memo_ub(memo, i, sums, c, N, inv_temp):
    """The kernel's ``_memo_ub``: memo part + (N - mcnt) rest_i / tau, raised by 1e-9 |.|."""
    msum, mabs, mcnt, ocnt = sums
    s, a, e = msum.get(c, 0.0), mabs.get(c, 0.0), mcnt.get(c, 0)
    tier = memo[5]
    if e < N:
        if tier is not None and tier[1][len(memo[2]) + i] >= 0:
            o = ocnt.get(c, 0)
            r = o * (float(memo[2][i]) * inv_temp)
            s += r
            a += abs(r)
            r = (N - e - o) * (float(tier[2][i]) * inv_temp)
        else:
            r = (N - e) * (float(memo[2][i]) * inv_temp)
        if r == -math.inf:
            return -math.inf
        s += r
        a += abs(r)
    return s + 1e-9 * a


def step(enc, theta, bias, labels, size, i, inv_temp, racing, fb, b_table, rng, n_evals,
         fmax=None, fmat=None, memo=None, cv=None):
    """Resample labels[i] in place; return the chosen label (``fmat``: cached factors, exact only;
    ``memo``: the partner memo ``(memo_j, memo_f, memo_rest, row_min)`` of racing, or None;
    ``cv``: racing's control variate ``(ranks, weight)``, or None)."""
    n = enc.n
    old = int(labels[i])
    size[old] -= 1
    cand = [l for l in range(n) if size[l] > 0]
    cidx = {l: c for c, l in enumerate(cand)}
    C = len(cand)
    if size[old] == 0:
        new_label = old
    else:
        new_label = 0
        while size[new_label] > 0:
            new_label += 1
    D = C + 1
    g = [rng.gumbel() for c in range(D)]
    acc = [0.0] * C
    acc2 = [0.0] * C
    N = [int(size[l]) for l in cand]
    T = [0] * C
    evals = 0

    def f(j):
        return block_factor(enc, theta, bias, i, j)

    if not racing:
        for j in range(n):
            if j != i:
                acc[cidx[int(labels[j])]] += f(j) if fmat is None else float(fmat[i][j])
        evals = (n - 1 if n > 1 else 0) if fmat is None else 0
        best, g_best = C, g[C]
        for c in range(C):
            v = acc[c] * inv_temp + g[c]
            if v > g_best:
                g_best, best = v, c
    else:
        members = [[] for _ in range(C)]
        for j in range(n):
            if j != i:
                members[cidx[int(labels[j])]].append(j)
        tstar, n_open = 1, 0
        alive = [True] * D
        lazy = [False] * C
        # control variate: h(i, j) = w if both ranks >= 0 differ; hc[c] = its sum / tau
        rank, w = cv if cv is not None else (None, 0.0)
        ri = rank[i] if cv is not None else -1
        hc = [0.0] * C
        ub = [None] * C          # bound sums of the small arms, computed on first test
        ex = [0] * C             # their members in i's memo (-1 without a memo)
        # clusters holding a paper mate of i (coref.factors.papers): dropped before the race
        mate_ptr, mate_idx = enc.mate_ptr, enc.mate_idx
        forb = set() if mate_ptr is None else {cidx[int(labels[j])] for j in mate_idx[mate_ptr[i]:mate_ptr[i + 1]]}
        for c in range(C):
            if c in forb:
                alive[c] = False
                continue
            if N[c] <= fb:
                if fmax is not None:
                    lazy[c] = True
                else:
                    for k in range(N[c]):
                        acc[c] += f(members[c][k]) * inv_temp
                    evals += N[c]
                    T[c] = N[c]
            else:
                tstar = max(tstar, _n_rounds(N[c], fb))
                n_open += 1
                if ri >= 0:
                    k = sum(1 for j in members[c] if rank[j] >= 0 and rank[j] != ri)
                    hc[c] = w * float(k) * inv_temp
        if memo is not None and memo[4] is not None and memo[2][i] != memo[2][i]:
            _, e = _memo_build(enc, theta, bias, i, memo)      # a candidate memo: at i's first step
            evals += e
        sums = None
        if memo is not None and memo[2][i] == memo[2][i]:
            sums = _memo_sums(memo, i, labels, cidx, n, inv_temp)
        if n_open > 0 and sums is not None:
            # memo bound of the subsampled arms: dropped when behind the new cluster
            tstar, n_open = 1, 0
            for c in range(C):
                if lazy[c] or N[c] <= fb or not alive[c]:
                    continue
                if g[C] - (g[c] + _memo_ub(memo, i, sums, c, N[c], inv_temp)) > 0.0:
                    alive[c] = False
                    continue
                tstar = max(tstar, _n_rounds(N[c], fb))
                n_open += 1
        B = 0.0
        if n_open > 0:
            tstar = min(max(tstar, 2), b_table.shape[1] - 1)
            B = float(b_table[D, tstar])
        est = [0.0] * D
        se2 = [0.0] * D
        r = 0
        settle = False
        while True:
            if not settle:
                r += 1
            for c in range(C if not settle else 0):
                if alive[c] and not lazy[c] and T[c] < N[c]:
                    tr = _sched(r, T[c], N[c], fb)
                    m = members[c]
                    for k in range(T[c], tr):
                        p = k + rng.below(N[c] - k)
                        m[k], m[p] = m[p], m[k]
                        v = f(m[k]) * inv_temp
                        if ri >= 0 and rank[m[k]] >= 0 and rank[m[k]] != ri:
                            v -= w * inv_temp
                        acc[c] += v
                        acc2[c] += v * v
                    evals += tr - T[c]
                    T[c] = tr
            est[C], se2[C] = g[C], 0.0
            leader, n_open, n_alive = -1, 0, 0
            if alive[C]:
                leader, n_alive = C, 1
            for c in range(C):
                if not alive[c] or lazy[c]:
                    continue
                n_alive += 1
                if T[c] == N[c]:
                    est[c] = acc[c] + hc[c] + g[c]
                    se2[c] = 0.0
                else:
                    n_open += 1
                    mean = acc[c] / T[c]
                    var = (acc2[c] - acc[c] * mean) / (T[c] - 1)
                    if var < 0.0:
                        var = 0.0
                    est[c] = N[c] * mean + hc[c] + g[c]
                    se2[c] = (float(N[c]) * N[c]) * var * (1.0 - (T[c] - 1.0) / (N[c] - 1.0)) / T[c]
                if leader < 0 or est[c] > est[leader]:
                    leader = c
            if any(lazy):
                # pending small arms: dropped when clearly behind, summed once the race
                # of the subsampled arms is over
                final = n_open == 0 or n_alive == 1
                hasm = memo is not None and memo[2][i] == memo[2][i]

                def bound(c, hasm):
                    if hasm:
                        ub[c] = _memo_ub(memo, i, sums, c, N[c], inv_temp)
                        ex[c] = sums[2].get(c, 0)
                    else:
                        u = 0.0
                        for j in members[c]:
                            u += min(fmax[i], fmax[j]) * inv_temp
                        ub[c], ex[c] = u, -1

                def behind(c):
                    margin = B * math.sqrt(se2[leader]) if se2[leader] > 0.0 else 0.0
                    return est[leader] - (g[c] + ub[c]) > margin

                keep = []
                for c in range(C):
                    if not lazy[c]:
                        continue
                    if ub[c] is None:
                        bound(c, hasm)
                    if behind(c):
                        lazy[c] = False
                        alive[c] = False
                    else:
                        keep.append(c)
                if final and keep:
                    row = None
                    if memo is not None and not hasm and sum(N[c] for c in keep) >= memo[3]:
                        row, e = _memo_build(enc, theta, bias, i, memo)
                        evals += e
                        sums = _memo_sums(memo, i, labels, cidx, n, inv_temp)
                        for c in keep:
                            bound(c, True)
                    part = dict(zip(memo[0][i].tolist(), memo[1][i].tolist())) if (
                        memo is not None and memo[2][i] == memo[2][i]) else {}
                    for c in keep:
                        lazy[c] = False
                        if behind(c):
                            alive[c] = False
                            continue
                        if ex[c] == N[c]:
                            acc[c] = sums[0].get(c, 0.0)
                        else:
                            acc[c] = 0.0
                            for j in members[c]:
                                if row is not None and j in row:
                                    v = row[j]
                                elif row is not None:
                                    v = f(j)         # outside i's candidates
                                    evals += 1
                                elif j in part:
                                    v = part[j]
                                else:
                                    v = f(j)
                                acc[c] += v * inv_temp
                            if row is None:
                                evals += N[c] - max(ex[c], 0)
                        T[c] = N[c]
                        est[c] = acc[c] + g[c]
                        se2[c] = 0.0
                        n_alive += 1
                        if est[c] > est[leader]:
                            leader = c
            settle = False
            if n_open == 0 or n_alive == 1:
                break
            for c in range(D):
                if c == leader or not alive[c] or (c < C and lazy[c]):
                    continue
                if est[leader] - est[c] > B * math.sqrt(se2[leader] + se2[c]):
                    alive[c] = False
                    n_alive -= 1
            if n_alive == 1 or not any(alive[c] and not lazy[c] and T[c] < N[c] for c in range(C)):
                if any(lazy):
                    settle = True          # no draw: test (and sum) the pending small arms
                    continue
                break
        best = -1
        for c in range(D):
            if not alive[c]:
                continue
            if c < C and T[c] == N[c]:
                est[c] = acc[c] + hc[c] + g[c]
            if best < 0 or est[c] > est[best]:
                best = c
    n_evals[0] += evals
    l = new_label if best == C else cand[best]
    labels[i] = l
    size[l] += 1
    return l


def anneal(enc, theta, bias, labels, size, movable, inv_temps, stop_mask, patience, racing,
           first_batch, small_arm_bound, fmax_out, b_table, rng_state, lab_hist, evals,
           fmat=None, fmat_mode=0, memo_j=None, memo_f=None, memo_rest=None, memo_row_min=0,
           still_moves=0, cv_rank=None, cv_weight=0.0, cand_q_ptr=None, cand_q_key=None,
           cand_k_ptr=None, cand_k_men=None, cand_rest=None, cand_accept=0.0, memo_ovf=None,
           memo_ovf_at=None, memo_tier=None, memo_threads=1):
    """Same contract as ``coref.gibbs._gibbs.anneal`` (``memo_threads`` changes nothing
    there but the wall time: the builds run at the steps here)."""
    n = enc.n
    rng = Xoshiro(rng_state)
    still = used = 0
    fmax = None
    ev0 = 0
    if fmat_mode not in (0, 1, 2):
        raise ValueError(f"fmat_mode must be 0, 1 or 2; got {fmat_mode}")
    if still_moves < 0:
        raise ValueError(f"still_moves must be >= 0; got {still_moves}")
    if fmat_mode and racing:
        raise ValueError("the factor matrix (fmat_mode 1 or 2) is for the exact sampler (racing = 0)")
    if fmat_mode and (fmat is None or fmat.shape != (n, n)):
        raise ValueError(f"fmat must have shape ({n}, {n}) when fmat_mode is set")
    if fmat_mode == 1 and len(inv_temps) > 0:
        for i in (int(x) for x in movable):
            for j in range(n):
                if j != i:
                    fmat[i, j] = block_factor(enc, theta, bias, i, j)
            fmat[i, i] = 0.0
            ev0 += n - 1
    if racing and small_arm_bound == 1 and len(inv_temps) > 0 and len(movable) == n > 0:
        fmax = [-math.inf] * n
        for i in range(n):
            for j in range(i + 1, n):
                fv = block_factor(enc, theta, bias, i, j)
                if fv > fmax[i]:
                    fmax[i] = fv
                if fv > fmax[j]:
                    fmax[j] = fv
        ev0 = n * (n - 1) // 2
        fmax_out[:] = fmax
    elif racing and small_arm_bound == 1 and len(inv_temps) > 0 and len(movable) > 0:
        # some mentions fixed: only the movable mentions' fmax (fixed ones: +inf)
        mov = {int(x) for x in movable}
        fmax = [-math.inf if i in mov else math.inf for i in range(n)]
        for i in sorted(mov):
            for j in range(n):
                if j == i or (j in mov and j < i):
                    continue
                fv = block_factor(enc, theta, bias, i, j)
                ev0 += 1
                if fv > fmax[i]:
                    fmax[i] = fv
                if j in mov and fv > fmax[j]:
                    fmax[j] = fv
        fmax_out[:] = fmax
    if racing and small_arm_bound:
        fmax = [float(x) for x in fmax_out]
    memo = None
    if memo_j is not None and racing and small_arm_bound and n > 0:
        if memo_f is None or memo_rest is None or memo_j.shape[0] != n or memo_f.shape[0] != n \
                or memo_f.shape[1] != memo_j.shape[1] or memo_rest.shape[0] != n:
            raise ValueError("memo_j, memo_f must have shape (n, K) and memo_rest (n,)")
        if memo_j.shape[1] > 0:
            index = None
            if cand_q_ptr is not None:
                if cand_q_key is None or cand_k_ptr is None or cand_k_men is None or cand_rest is None:
                    raise ValueError("the candidate index needs cand_q_ptr, cand_q_key, cand_k_ptr, "
                                     "cand_k_men and cand_rest")
                check_index(cand_q_ptr, cand_q_key, cand_k_ptr, cand_k_men, cand_rest, n)
                index = (cand_q_ptr, cand_q_key, cand_k_ptr, cand_k_men, cand_rest)
            tier = None
            if memo_ovf is not None:
                check_tier(memo_ovf, memo_ovf_at, memo_tier, n)
                tier = (memo_ovf, memo_ovf_at, memo_tier)
            memo = (memo_j, memo_f, memo_rest, memo_row_min, index, tier, float(cand_accept))
    cv = None
    if racing and cv_rank is not None and cv_weight != 0.0 and n > 0:
        if len(cv_rank) != n:
            raise ValueError("cv_rank must have one entry per mention")
        if min(int(x) for x in cv_rank) < -1:
            raise ValueError("cv_rank entries must be >= -1")
        if max(int(x) for x in cv_rank) >= 0:
            cv = ([int(x) for x in cv_rank], float(cv_weight))
    for s, inv_temp in enumerate(inv_temps):
        order = [int(x) for x in movable]
        for k in range(len(order) - 1, 0, -1):
            j = rng.below(k + 1)
            order[k], order[j] = order[j], order[k]
        ev = [ev0 if s == 0 else 0]
        moved = 0
        for i in order:
            before = int(labels[i])
            if step(enc, theta, bias, labels, size, i, float(inv_temp), racing, first_batch,
                    b_table, rng, ev, fmax, fmat if fmat_mode else None, memo, cv) != before:
                moved += 1
        evals[s] = ev[0]
        if len(lab_hist):
            lab_hist[s, :n] = labels
        used = s + 1
        if patience > 0 and stop_mask[s]:
            still = 0 if moved > still_moves else still + 1
            if still >= patience:
                break
    rng_state[:] = rng.s
    return used
