"""Cluster-level moves of the temperature-1 chain: sequentially allocated split-merge (Dahl 2003).

Single-site Gibbs started at the MAP clustering rarely leaves it: to split a wrong
cluster of k mentions it must move them one at a time through states of lower
probability.  :func:`split_merge_moves` adds Metropolis-Hastings proposals that split a
whole cluster in two or merge two whole clusters, with the exact acceptance ratio of
the posterior at temperature 1

    p(y | x) proportional to exp(sum_{i < j, y_i = y_j} F[i, j]),

so that the chain (single-site sweeps + these moves) keeps p(y | x) invariant.

Proposal (Dahl 2003, "sequentially allocated merge-split", after Jain & Neal 2004):
pick two distinct mentions i, j uniformly.  If they share a cluster C, propose a split:
i starts A, j starts B, and the other members of C, in a uniformly random order, join A
or B with the restricted Gibbs probabilities exp(sum_{a in A} F[k, a]) : exp(sum_{b in B}
F[k, b]); q(split) is the product of the probabilities of the choices made.  If they are
in different clusters A and B, propose their merge; q(merge) = 1 and the reverse split's
q(split) is the product of the same probabilities for the allocation that gives A and B
(random order again).  The acceptance probabilities are

    split: min(1, exp(-sum_{a in A, b in B} F[a, b]) / q(split)),
    merge: min(1, exp(+sum_{a in A, b in B} F[a, b]) * q(split)).

(:func:`coref.gibbs.merges.merge_moves` is an annealed, merge-only move of the MAP
search: without its reverse split it does not leave p(y | x) invariant, so it is not
used here.)

References
----------
.. [1] Dahl, D. B. (2003). An improved merge-split sampler for conjugate Dirichlet
   process mixture models. Tech. Rep. 1086, Dept. of Statistics, Univ. of Wisconsin.
.. [2] Jain, S. & Neal, R. M. (2004). A split-merge Markov chain Monte Carlo procedure
   for the Dirichlet process mixture model. J. Comput. Graph. Stat. 13(1), 158-182.
"""
from __future__ import annotations

import numpy as np

from coref.gibbs.splits import allocation_log_q

__all__ = ["split_merge_moves", "sequential_allocation"]


def sequential_allocation(F, i, j, rest, gen, *, target_a=None):
    """Sequential allocation of ``rest`` to A = {i} or B = {j}, and its log proposal probability.

    Parameters
    ----------
    F : ndarray of shape (n, n)
        Pairwise factors (natural-log odds).
    i, j : int
        The two anchors (i in A, j in B).
    rest : ndarray of int
        The other members of the cluster (split) or of A and B together (merge).
    gen : numpy.random.Generator
        Draws the random order and, without ``target_a``, the choices.
    target_a : ndarray of bool, optional
        Same length as ``rest``: the allocation whose probability is wanted (True = A);
        None draws one.

    Returns
    -------
    in_a : ndarray of bool
        The allocation of ``rest`` (True = A), in the order of ``rest``.
    log_q : float
        log of the probability of drawing it (given the order); the allocation itself is
        :func:`coref.gibbs.splits.allocation_log_q` at temperature 1.
    """
    rest = np.asarray(rest, dtype=np.int64)
    order = gen.permutation(len(rest))
    side = None
    if target_a is not None:
        side = np.zeros(F.shape[0], dtype=bool)
        side[rest] = np.asarray(target_a, dtype=bool)
    log_q, side = allocation_log_q(F, i, j, rest[order], 1.0, side=side, gen=gen)
    return side[rest], log_q


def split_merge_moves(F, S, lab, size, gen, n_moves):
    """``n_moves`` split-merge Metropolis-Hastings proposals at temperature 1, state updated in place.

    Parameters
    ----------
    F : ndarray of shape (n, n)
        Pairwise factors, diagonal 0.
    S : ndarray of shape (n, n)
        S[k, c] = sum_{l in cluster slot c} F[k, l] (the single-site sampler's cluster sums).
    lab, size : ndarray of int64, shape (n,)
        Cluster slot of each mention; number of mentions in each slot.
    gen : numpy.random.Generator
    n_moves : int >= 0

    Returns
    -------
    (int, int)
        Accepted splits and accepted merges.
    """
    n = F.shape[0]
    n_split = n_merge = 0
    if n < 2:
        return 0, 0
    for _ in range(int(n_moves)):
        i = int(gen.integers(n))
        j = int(gen.integers(n - 1))
        j += j >= i
        log_u = float(np.log(gen.random()))
        a, b = int(lab[i]), int(lab[j])
        if a == b:
            C = np.flatnonzero(lab == a)
            rest = C[(C != i) & (C != j)]
            in_a, log_q = sequential_allocation(F, i, j, rest, gen)
            A = np.concatenate([[i], rest[in_a]])
            B = np.concatenate([[j], rest[~in_a]])
            cross = float(F[np.ix_(A, B)].sum())
            if log_u < -cross - log_q:
                e = int(np.argmin(size > 0))      # an empty slot (there is one: a has >= 2 members)
                S[:, e] = F[:, B].sum(axis=1)
                S[:, a] -= S[:, e]
                lab[B] = e
                size[e] = len(B)
                size[a] -= len(B)
                n_split += 1
        else:
            A = np.flatnonzero(lab == a)
            B = np.flatnonzero(lab == b)
            cross = float(F[np.ix_(A, B)].sum())
            if log_u >= cross:               # log q <= 0: rejected whatever the reverse split's q
                continue
            rest = np.concatenate([A[A != i], B[B != j]])
            target = np.concatenate([np.ones(len(A) - 1, bool), np.zeros(len(B) - 1, bool)])
            _, log_q = sequential_allocation(F, i, j, rest, gen, target_a=target)
            if log_u < cross + log_q:
                src, dst = (B, a) if len(A) >= len(B) else (A, b)
                old = int(lab[src[0]])
                S[:, dst] += S[:, old]
                S[:, old] = 0.0
                lab[src] = dst
                size[dst] += len(src)
                size[old] = 0
                n_merge += 1
    return n_split, n_merge
