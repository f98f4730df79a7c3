"""Greedy merges of linked clusters after annealing: two clusters whose factors sum above zero become one.

Single-site Gibbs moves one mention at a time.  At the low temperatures that end an
annealing run, a sub-cluster of an author whose mentions are tightly linked among
themselves stays apart from the rest of that author even when the two clusters together
score higher: each mention alone gains more by staying with its own sub-cluster than by
joining the other.  In one-name synthetic blocks (``coref synth --one-name``) this is
where recall is lost as blocks grow: at 30,000 mentions the largest author (1,965 mentions)
ends in 517 clusters, the largest of 899, and merging the next ones into it raises
log p(y | x) by 2e4 to 4e4 each.

This pass is the zero-temperature limit of a cluster-merge Metropolis move (Singh et al.
2012) with proposals aimed where the evidence is: candidate pairs of clusters are those
linked by factors already known (racing's partner memo ``memo_j``/``memo_f``, or the exact
sampler's cached factor matrix), visited in decreasing order of their linked factor mass
(the sum of the known positive factors between them); each pair's

    Delta(A, B) = sum_{a in A, b in B} f_theta(x_a, x_b)

(the change of log p(y | x) if A and B merge) is summed exactly, from the matrix or by the
factor kernel, and the two merge when Delta > ``min_mean`` |A| |B|: their mean pairwise
log-odds exceeds a margin (``coref.gibbs.block.LINK_MERGE_MIN_MEAN``), because a sum of
pairwise log-odds rewards size and the model over-merges big pairs of clusters.  After a merge the pair's links go to
the merged cluster, whose pairs are proposed again.  No random numbers: the same state gives
the same merges.  Mentions that Gibbs may not move (``coref add``'s old mentions) keep
their clusters: the pass runs only when every mention is movable.
"""
from __future__ import annotations

import heapq

import numpy as np

from sampling.utils.kernels import load_kernel

_factors = load_kernel("coref.factors._factors")

__all__ = ["candidate_links", "link_merges"]

#: Rows of a cached factor matrix ranked at a time by :func:`candidate_links`.
_ROWS = 256


def candidate_links(run, labels, k_matrix=32):
    """Known positive factors between mentions of different clusters.

    Parameters
    ----------
    run : coref.gibbs.block.KernelRun
        The block's kernel arguments after annealing: ``memo_j``, ``memo_f``, ``memo_rest``
        (racing's partner memo: rows whose rest is NaN were never built) or ``fmat``
        (the exact sampler's cached factor matrix, ``fmat_mode`` 2).
    labels : ndarray of int64, shape (n,)
    k_matrix : int, default 32
        From a factor matrix: the largest ``k_matrix`` factors of each row.

    Returns
    -------
    I, J : ndarray of int64, shape (m,)
        Linked mentions (``labels[I] != labels[J]``).
    F : ndarray of float64, shape (m,)
        Their factors (natural-log odds, > 0).
    """
    n = len(labels)
    if _from_matrix(run):
        k = min(int(k_matrix), n - 1)
        F = run.fmat
        parts = []
        for a in range(0, n, _ROWS):       # in slices of rows: no n x n temporary
            rows = F[a:a + _ROWS]
            J = np.argpartition(-rows, k - 1, axis=1)[:, :k] if k < n - 1 else np.tile(np.arange(n), (len(rows), 1))
            parts.append(J.astype(np.int64))
        J = np.concatenate(parts)
        I = np.repeat(np.arange(n, dtype=np.int64), J.shape[1])
        J = J.ravel()
        f = F[I, J]
    elif run.memo_j is not None:
        built = ~np.isnan(run.memo_rest)
        mj, mf = run.memo_j[built], run.memo_f[built]
        I = np.repeat(np.flatnonzero(built).astype(np.int64), mj.shape[1])
        J = mj.ravel()
        f = mf.ravel()
        keep = J < n                      # padding: j = n
        I, J, f = I[keep], J[keep], f[keep]
    else:
        e = np.zeros(0, np.int64)
        return e, e, np.zeros(0)
    keep = (I != J) & (f > 0.0)
    I, J, f = I[keep], J[keep], f[keep]
    keep = labels[I] != labels[J]
    return I[keep], J[keep], f[keep]


def _from_matrix(run):
    """True when the block's factors are read from its cached matrix (the exact sampler's, computed)."""
    return run.fmat is not None and run.fmat_mode == 2


def _delta(run, A, B):
    """sum over A x B of f(a, b) and the factors it evaluated (0 from the cached matrix)."""
    if _from_matrix(run):
        return float(run.fmat[np.ix_(A, B)].sum()), 0
    I = np.repeat(A, len(B))
    J = np.tile(B, len(A))
    lo, hi = np.minimum(I, J), np.maximum(I, J)
    out = np.empty(len(lo))
    _factors.pair_factors(run.enc, run.theta, run.bias, lo, hi, out)
    return float(out.sum()), len(out)


def link_merges(labels, size, run, max_evals, min_mean=0.0):
    """Merge linked cluster pairs whose factors average above ``min_mean`` per pair, greedily, in place.

    Parameters
    ----------
    labels, size : ndarray of int64, shape (n,)
        The block's state (labels in [0, n), ``size[c]`` members of cluster c), updated in
        place: a merged cluster takes the label of the larger of the two (the lower label
        on a tie).
    run : coref.gibbs.block.KernelRun
        The block's kernel arguments after annealing (see :func:`candidate_links`).
    max_evals : int
        Factor budget: a pair whose exact sum would take the factors evaluated past it is
        skipped (sums from a cached matrix cost none).
    min_mean : float, default 0.0
        Merge A and B when Delta(A, B) > ``min_mean`` |A| |B| (natural-log odds per pair;
        0: whenever the merge raises log p(y | x)).

    Returns
    -------
    merges : int
        Merges made.
    evals : int
        Factors evaluated.
    """
    I, J, f = candidate_links(run, labels)
    if len(I) == 0:
        return 0, 0
    a, b = labels[I], labels[J]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    key = lo * len(labels) + hi
    uk, inv = np.unique(key, return_inverse=True)
    mass = np.bincount(inv, weights=f)
    # links[c] = {d: linked factor mass between clusters c and d}
    links = {}
    for k, m in zip(uk.tolist(), mass.tolist()):
        c, d = divmod(k, len(labels))
        links.setdefault(c, {})[d] = m
        links.setdefault(d, {})[c] = m
    order = np.argsort(labels, kind="stable")
    starts = np.searchsorted(labels[order], np.arange(len(labels) + 1))
    members = {c: order[starts[c]:starts[c + 1]] for c in links}
    version = dict.fromkeys(links, 0)
    heap = [(-m, c, d, 0, 0) for c, nb in links.items() for d, m in nb.items() if c < d]
    heapq.heapify(heap)
    merges = evals = 0
    while heap:
        _, c, d, vc, vd = heapq.heappop(heap)
        if version.get(c) != vc or version.get(d) != vd:
            continue                      # a side merged since: its pair was pushed again
        A, B = members[c], members[d]
        if evals + (0 if _from_matrix(run) else len(A) * len(B)) > max_evals:
            continue
        delta, e = _delta(run, A, B)
        evals += e
        if not delta > min_mean * len(A) * len(B):
            continue
        keep, gone = (c, d) if (len(A), -c) >= (len(B), -d) else (d, c)
        labels[members[gone]] = keep
        size[keep] += size[gone]
        size[gone] = 0
        members[keep] = np.sort(np.concatenate([members[keep], members.pop(gone)]))
        merges += 1
        # the merged cluster's links: the sum of both sides'
        nb_keep, nb_gone = links.pop(keep), links.pop(gone)
        nb_keep.pop(gone, None)
        nb_gone.pop(keep, None)
        for x, m in nb_gone.items():
            nb_keep[x] = nb_keep.get(x, 0.0) + m
            del links[x][gone]
        for x, m in nb_keep.items():
            links[x][keep] = m
        links[keep] = nb_keep
        del version[gone]
        version[keep] += 1
        for x, m in nb_keep.items():
            u, v = min(keep, x), max(keep, x)
            heapq.heappush(heap, (-m, u, v, version[u], version[v]))
    return merges, evals
