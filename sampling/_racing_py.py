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
