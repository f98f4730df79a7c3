"""Pure-Python reference twin of ``coref._gibbs`` (same buffers -> same results).

Slow; used by the tests only.  See ``coref._gibbs`` for the algorithm.
"""
import math

from coref._factors_py import block_factor

_G, _U, _K, _E = 0, 1, 2, 3


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


def step(enc, theta, bias, labels, size, i, inv_temp, racing, fb, b_table, gumbels,
         uniforms, state):
    """Resample labels[i] in place; return the chosen label."""
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
    gpos, upos = int(state[_G]), int(state[_U])
    g = [float(gumbels[gpos + c]) for c in range(D)]
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
                acc[cidx[int(labels[j])]] += f(j)
        evals = n - 1 if n > 1 else 0
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
        for c in range(C):
            if N[c] <= fb:
                for k in range(N[c]):
                    acc[c] += f(members[c][k]) * inv_temp
                evals += N[c]
                T[c] = N[c]
            else:
                tstar = max(tstar, _n_rounds(N[c], fb))
                n_open += 1
        if n_open > 0:
            tstar = min(max(tstar, 2), b_table.shape[1] - 1)
            B = float(b_table[D, tstar])
            est = [0.0] * D
            se2 = [0.0] * D
            r = 0
            while True:
                r += 1
                for c in range(C):
                    if alive[c] and T[c] < N[c]:
                        tr = _sched(r, T[c], N[c], fb)
                        m = members[c]
                        for k in range(T[c], tr):
                            p = k + int(math.floor(float(uniforms[upos]) * (N[c] - k)))
                            upos += 1
                            m[k], m[p] = m[p], m[k]
                            v = f(m[k]) * inv_temp
                            acc[c] += v
                            acc2[c] += v * v
                        evals += tr - T[c]
                        T[c] = tr
                est[C], se2[C] = g[C], 0.0
                leader, n_open, n_alive = -1, 0, 0
                if alive[C]:
                    leader, n_alive = C, 1
                for c in range(C):
                    if not alive[c]:
                        continue
                    n_alive += 1
                    if T[c] == N[c]:
                        est[c] = acc[c] + g[c]
                        se2[c] = 0.0
                    else:
                        n_open += 1
                        mean = acc[c] / T[c]
                        var = (acc2[c] - acc[c] * mean) / (T[c] - 1)
                        if var < 0.0:
                            var = 0.0
                        est[c] = N[c] * mean + g[c]
                        se2[c] = (float(N[c]) * N[c]) * var * (1.0 - (T[c] - 1.0) / (N[c] - 1.0)) / T[c]
                    if leader < 0 or est[c] > est[leader]:
                        leader = c
                if n_open == 0 or n_alive == 1:
                    break
                for c in range(D):
                    if c == leader or not alive[c]:
                        continue
                    if est[leader] - est[c] > B * math.sqrt(se2[leader] + se2[c]):
                        alive[c] = False
                        n_alive -= 1
                if n_alive == 1:
                    break
                if not any(alive[c] and T[c] < N[c] for c in range(C)):
                    break
            best = -1
            for c in range(D):
                if not alive[c]:
                    continue
                if c < C and T[c] == N[c]:
                    est[c] = acc[c] + g[c]
                if best < 0 or est[c] > est[best]:
                    best = c
        else:
            best, g_best = C, g[C]
            for c in range(C):
                v = acc[c] + g[c]
                if v > g_best:
                    g_best, best = v, c
    state[_G] = gpos + D
    state[_U] = upos
    state[_E] += evals
    l = new_label if best == C else cand[best]
    labels[i] = l
    size[l] += 1
    return l


def sweep(enc, theta, bias, labels, size, order, inv_temp, racing, first_batch, b_table,
          gumbels, uniforms, state):
    """Same contract as ``coref._gibbs.sweep``."""
    n, m = enc.n, len(order)
    if n == 0:
        return True
    while True:
        if state[_K] >= m:
            return True
        if state[_G] + n + 1 > len(gumbels) or state[_U] + n > len(uniforms):
            return False
        step(enc, theta, bias, labels, size, int(order[state[_K]]), inv_temp, racing,
             first_batch, b_table, gumbels, uniforms, state)
        state[_K] += 1
