"""Pure-Python (NumPy) reference twin of :mod:`sampling._racing`.

Same signatures and in-place semantics; used by the tests to check the compiled
kernels, never as a silent fallback.
"""
import numpy as np


def merge_block(rewards, arms, n_old, mean, m2, pair_m2, do_pairs, work):
    """Merge one shared mini-batch into the running moments (Chan et al. update)."""
    rewards = np.asarray(rewards, dtype=np.float64)
    arms = np.asarray(arms, dtype=np.int64)
    m = rewards.shape[1]
    n_new = n_old + m
    w = n_old * m / n_new
    bm = rewards.mean(axis=1)
    work[: len(arms)] = bm
    centred = rewards - bm[:, None]
    delta = bm - mean[arms]
    if do_pairs:
        k = len(arms)
        for a in range(k):
            for b in range(a + 1, k):
                d = centred[a] - centred[b]
                c = float(np.dot(d, d)) + (delta[a] - delta[b]) ** 2 * w
                pair_m2[arms[a], arms[b]] += c
                pair_m2[arms[b], arms[a]] += c
    m2[arms] += np.einsum("ij,ij->i", centred, centred) + delta**2 * w
    mean[arms] += delta * m / n_new


def eliminate(mean, m2, pair_m2, arms, n_seen, coef_sd, coef_c, c_range, pairwise, alive):
    """Find the leader and mark arms whose gap to it exceeds the bound G; return the leader id."""
    arms = np.asarray(arms, dtype=np.int64)
    best = int(np.argmax(mean[arms]))
    ix = int(arms[best])
    gap = mean[ix] - mean[arms]
    if pairwise:
        g = coef_sd * np.sqrt(np.maximum(pair_m2[ix, arms] / n_seen, 0.0))
    else:
        g = coef_sd * (np.sqrt(max(m2[ix] / n_seen, 0.0)) + np.sqrt(np.maximum(m2[arms] / n_seen, 0.0)))
    g = g + coef_c * (c_range[ix] + c_range[arms])
    keep = ~(gap > g)
    keep[best] = True
    alive[:] = keep.astype(np.uint8)
    return ix


def _lil_ucb_value(total, t, n_data, sigma, coef, eps, delta):
    if t >= n_data:
        return total / t
    inner = np.log((1.0 + eps) * t)
    if inner <= 0.0 or inner <= delta:
        return np.inf
    return total / t + coef * np.sqrt(2.0 * sigma * sigma * (1.0 + eps) * np.log(inner / delta) / t)


def lil_ucb_run(buf, buf_len, buf_pos, pulls, sums, active, sigma, n_data, eps, beta, lam, delta):
    """Run adapted lil'UCB until it stops or needs more rewards of an arm (see the .pyx)."""
    d = pulls.shape[0]
    coef = (1.0 + beta) * (1.0 + np.sqrt(eps))
    total = int(pulls.sum())
    ucb = np.full(d, -np.inf)
    for i in range(d):
        if active[i]:
            ucb[i] = _lil_ucb_value(sums[i], pulls[i], n_data, sigma[i], coef, eps, delta)
    while True:
        cand = np.flatnonzero(np.asarray(active, dtype=bool))
        best = int(cand[np.argmax(ucb[cand])])
        if pulls[best] >= n_data:
            return 1, best
        if buf_pos[best] >= buf_len[best]:
            return 2, best
        r = buf[best, buf_pos[best]]
        buf_pos[best] += 1
        pulls[best] += 1
        sums[best] += r
        total += 1
        ucb[best] = _lil_ucb_value(sums[best], pulls[best], n_data, sigma[best], coef, eps, delta)
        if pulls[best] * (1.0 + lam) >= 1.0 + lam * total:
            return 0, best


def merge_pairs(rewards, arms, n_old, mean, block_mean, gram, pair_m2, rtol):
    """Merge a block into the pairwise moments using its centred Gram matrix (see the .pyx)."""
    k, m = rewards.shape
    w = n_old * m / (n_old + m)
    for a in range(k):
        for b in range(a + 1, k):
            ia, ib = int(arms[a]), int(arms[b])
            c = gram[a, a] + gram[b, b] - 2.0 * gram[a, b]
            if c < rtol * (gram[a, a] + gram[b, b]):
                d = rewards[a] - rewards[b] - (block_mean[a] - block_mean[b])
                c = float(np.dot(d, d))
            da, db = block_mean[a] - mean[ia], block_mean[b] - mean[ib]
            pair_m2[ia, ib] += c + (da - db) ** 2 * w
            pair_m2[ib, ia] = pair_m2[ia, ib]
