"""Posterior marginals of a block's clustering at temperature 1, sampled by single-site Gibbs.

:func:`gibbs_marginals`: Rao-Blackwellised pair and singleton marginals of
p(y | x) proportional to exp(sum_{i < j, y_i = y_j} f(x_i, x_j) / T) (Chen &
Ghahramani 2016, Sec. 5.3), one compiled sweep per step
(``coref.gibbs._gibbs.marginal_sweep``) and its pure-numpy twin :func:`marginal_sweep_py`.
:func:`mention_confidence` / :func:`direct_confidence`: the per-mention confidence
and the pairwise model's direct one from the marginals / the factors.
"""
from __future__ import annotations

import numpy as np

from coref.confidence.moves import split_merge_moves
from sampling.utils.kernels import load_kernel

_gibbs = load_kernel("coref.gibbs._gibbs")

__all__ = ["gibbs_marginals", "marginal_sweep_py", "mention_confidence", "direct_confidence", "competing_clusters"]


def marginal_sweep_py(F, S, lab, size, perm, u, exp):
    """Pure-numpy twin of ``coref.gibbs._gibbs.marginal_sweep`` (one sweep, arrays in place)."""
    n = F.shape[0]
    for k, i in enumerate(perm):
        a = lab[i]
        size[a] -= 1
        valid = size > 0
        w = np.zeros(n)
        si = S[i, valid]
        # the new-cluster option: slot a if it has just emptied, else the first empty slot
        e = a if size[a] == 0 else int(np.argmin(valid))
        m = max(si.max(initial=0.0), 0.0)
        w[valid] = exp(si - m)
        w[e] = exp(-m)
        c = np.cumsum(w)
        b = int(np.searchsorted(c, u[k] * c[-1], side="right"))
        b = min(b, n - 1)
        while w[b] == 0.0:  # float edge: step back to a slot with weight
            b -= 1
        if b != a:
            S[:, a] -= F[:, i]
            S[:, b] += F[:, i]
            lab[i] = b
        size[b] += 1


def gibbs_marginals(F, labels, *, n_samples, n_burn, rng, temperature=1.0, n_moves=0, _sweep=None):
    """Rao-Blackwellised pair marginals from single-site Gibbs at a fixed temperature.

    The chain targets p(y | x) proportional to exp(sum_{i < j, y_i = y_j} F[i, j] / T)
    over the set partitions y of the block (T = ``temperature``; 1 is the model's
    posterior, Chen & Ghahramani 2016, Sec. 5.3).  It starts at ``labels`` (the
    predicted clustering), runs ``n_burn`` sweeps, then ``n_samples`` sweeps; after
    each kept sweep, for every mention i, the exact conditional
    q_i(c) = P(y_i = c | y_{-i}, x) over the clusters c of the others and one new
    cluster (weights exp(sum_{j in c} F[i, j] / T) and 1) is averaged instead of
    the 0/1 indicator 1{y_i = y_j}::

        P(y_i = y_j | x) ~= (1 / n_samples) sum_t (q_i^t(y_j^t) + q_j^t(y_i^t)) / 2,
        P(i alone | x)   ~= (1 / n_samples) sum_t q_i^t(new).

    Both are Rao-Blackwellised (conditioning on y_{-i}) estimates of the same
    marginals as the indicator average, with no larger variance; they are smooth in
    F, so a pair that never shares a cluster in the samples still gets its
    conditional probability rather than 0.

    Parameters
    ----------
    F : ndarray of shape (n, n)
        Pairwise factors f(x_i, x_j) (natural-log odds; the diagonal is ignored).
    labels : array_like of int of shape (n,)
        Start state (any integer labels).
    n_samples : int >= 1
        Sweeps averaged.
    n_burn : int >= 0
        Sweeps discarded first.
    rng : numpy.random.Generator
        Random order of each sweep and the draws.
    temperature : float > 0, default 1
    n_moves : int >= 0, default 0
        Split-merge proposals after each sweep (:func:`coref.confidence.moves.split_merge_moves`,
        exact Metropolis-Hastings for the tempered target), so that the chain can leave the
        start's mode by whole clusters.

    Returns
    -------
    P : ndarray of shape (n, n)
        Estimated P(y_i = y_j | x), symmetric, diagonal 1.
    alone : ndarray of shape (n,)
        Estimated P(i is a cluster of its own | x).

    Notes
    -----
    O(n) per site update, in one compiled call per sweep (``coref.gibbs._gibbs.marginal_sweep``,
    which takes its exponentials from ``numpy.exp``; twin :func:`marginal_sweep_py`, the
    earlier all-numpy loop), and O(n^2) per kept sweep in numpy (the matrix of
    conditionals of every mention); the cluster sums S[i, c] = sum_{j in c} F[i, j]
    are updated incrementally.  ``_sweep`` (tests): the sweep function to use.
    """
    F = np.array(F, dtype=float) / float(temperature)
    n = F.shape[0]
    if F.shape != (n, n):
        raise ValueError(f"F must be square; got shape {F.shape}")
    np.fill_diagonal(F, 0.0)
    lab = np.unique(np.asarray(labels), return_inverse=True)[1].astype(np.int64).ravel()
    if lab.shape != (n,):
        raise ValueError(f"labels must have one entry per row of F ({n}); got {np.shape(labels)}")
    size = np.bincount(lab, minlength=n).astype(np.int64)
    # S[i, c] = sum_{j in cluster slot c} F[i, j]; n slots (at most n clusters)
    S = np.zeros((n, n))
    np.add.at(S.T, lab, F.T)
    P = np.zeros((n, n))
    alone = np.zeros(n)
    rows = np.arange(n)
    sweep = _gibbs.marginal_sweep if _sweep is None else _sweep
    for t in range(int(n_burn) + int(n_samples)):
        # the visiting order, then one uniform per visit (the stream of drawing them in turn)
        perm = rng.permutation(n).astype(np.int64)
        u = rng.random(n)
        sweep(F, S, lab, size, perm, u, np.exp)
        if n_moves:
            split_merge_moves(F, S, lab, size, rng, n_moves)
        if t < int(n_burn):
            continue
        sz = np.broadcast_to(size, (n, n)).copy()
        sz[rows, lab] -= 1  # the clusters as mention i sees them (without i)
        L = np.where(sz > 0, S, -np.inf)
        m = np.maximum(L.max(axis=1), 0.0)
        E = np.exp(L - m[:, None])
        new = np.exp(-m)
        Z = E.sum(axis=1) + new
        Q = E[:, lab] / Z[:, None]  # Q[i, j] = q_i(slot of j), for j != i
        P += Q
        P += Q.T
        alone += new / Z
    P /= 2.0 * int(n_samples)
    alone /= int(n_samples)
    np.fill_diagonal(P, 1.0)
    return np.clip(P, 0.0, 1.0), np.clip(alone, 0.0, 1.0)


def direct_confidence(F, labels):
    """p_direct(i) = mean_{j in C(i), j != i} sigmoid(F[i, j]); 1 for a predicted singleton."""
    same = labels[:, None] == labels[None, :]
    np.fill_diagonal(same, False)
    k = same.sum(axis=1)
    S = 0.5 * (1.0 + np.tanh(0.5 * F))  # sigmoid, overflow-free
    return np.where(k > 0, (S * same).sum(axis=1) / np.maximum(k, 1), 1.0)


def mention_confidence(P, alone, labels):
    """conf(i) = mean_{j in C(i), j != i} P[i, j], or ``alone[i]`` for a predicted singleton
    (:mod:`coref.confidence.assignment`), clipped to [0, 1]."""
    same = labels[:, None] == labels[None, :]
    np.fill_diagonal(same, False)
    k = same.sum(axis=1)
    conf = np.where(k > 0, (P * same).sum(axis=1) / np.maximum(k, 1), alone)
    return np.clip(conf, 0.0, 1.0)


def competing_clusters(P, alone, labels):
    """The most probable other place of each mention: another predicted cluster, or a cluster of its own.

    For mention i in predicted cluster C(i), the support of cluster c != C(i) is
    mean_{j in c} P[i, j] (the confidence of :func:`mention_confidence` had i been put in
    c); for a mention of a cluster of two or more, being alone has support ``alone[i]``.

    Parameters
    ----------
    P : ndarray of shape (n, n)
        Pair marginals.
    alone : ndarray of shape (n,)
        P(i is a cluster of its own).
    labels : ndarray of int of shape (n,)
        Predicted clustering.

    Returns
    -------
    competing : ndarray of int64 of shape (n,)
        Index of a member of the competing cluster (so its label / id can be looked up),
        or -1 for "a cluster of its own" (and for a block of one mention).
    p_competing : ndarray of shape (n,)
        Its support, in [0, 1]; 0 for a block of one mention.
    """
    lab = np.unique(np.asarray(labels), return_inverse=True)[1].astype(np.int64).ravel()
    n = len(lab)
    if n < 2:
        return np.full(n, -1, np.int64), np.zeros(n)
    import scipy.sparse as sp

    K = int(lab.max()) + 1
    onehot = sp.csr_matrix((np.ones(n), (np.arange(n), lab)), shape=(n, K))
    sizes = np.bincount(lab, minlength=K).astype(float)
    M = np.asarray(sp.csr_matrix.transpose(onehot).dot(np.asarray(P, float).T).T) / sizes[None, :]
    M[np.arange(n), lab] = -np.inf
    best = M.argmax(axis=1)
    p_best = M[np.arange(n), best]
    own = sizes[lab] > 1
    use_alone = own & (np.asarray(alone, float) >= np.where(np.isfinite(p_best), p_best, -1.0))
    first = np.full(K, -1, np.int64)
    first[lab[::-1]] = np.arange(n)[::-1]          # a member of each cluster
    comp = np.where(use_alone | ~np.isfinite(p_best), -1, first[best])
    p_comp = np.where(use_alone, alone, np.where(np.isfinite(p_best), p_best, 0.0))
    return comp.astype(np.int64), np.clip(p_comp, 0.0, 1.0)
