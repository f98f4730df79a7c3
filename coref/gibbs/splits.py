"""Split-merge proposals between Gibbs sweeps (``GibbsCoref(split_moves=...)``).

A single-site Gibbs step moves one mention, and :mod:`coref.gibbs.merges` merges two
whole clusters, but nothing takes a cluster apart: once two authors share a cluster,
each of their mentions is held in place by the other author's members.  This module
adds the sequentially-allocated split-merge proposal of Dahl (2003) ("SAMS"), a
Metropolis-Hastings move that splits one cluster in two or merges two clusters, with
the exact acceptance ratio of the annealed target

    pi_tau(y) ∝ exp( sum_{i < j, y_i = y_j} f_theta(x_i, x_j) / tau ).

Proposal (one step): draw a movable mention i and another mention j (uniformly, whatever
the state).  If they share a cluster C, split it: start S_i = {i}, S_j = {j}, visit the
other members of C in a random order and put each k into S_i with probability

    P(k -> S_i) = 1 / (1 + exp( (sum_{l in S_j} f_kl - sum_{l in S_i} f_kl) / tau )),

the conditional of k given the members allocated so far (else S_j).  The proposal
probability q is the product of these choices; the split is accepted with probability
min(1, exp(-Delta / tau) / q), Delta = sum_{a in S_i, b in S_j} f_ab.  If i and j are in
different clusters A and B, propose their merge and accept with probability
min(1, exp(Delta / tau) q'), Delta = sum_{a in A, b in B} f_ab and q' the probability
that the allocation above (launched from i and j, in a fresh random order) would have
produced exactly A and B.  These are the Metropolis-Hastings ratios of Dahl (2003, Sec. 3)
and Jain & Neal (2004) for the pairwise model: each move leaves pi_tau invariant
(``tests/coref/test_coref_gibbs_splits.py`` checks it against the enumerated posterior).

Every factor of the clusters involved is summed exactly (the allocation needs each of
them anyway), with the racing sampler too; a proposal that touches a cluster with a fixed
mention, or more than ``split_max_size`` mentions, is skipped (both directions alike, so
invariance holds on the rest).
"""
from __future__ import annotations

import numpy as np

from sampling.utils.kernels import load_kernel

_factors = load_kernel("coref.factors._factors")

__all__ = ["split_merge_moves", "allocation_log_q", "cluster_factors", "draw_pair"]


def draw_pair(movable, n, gen):
    """The launch of one cluster-level proposal: a movable mention i, another mention j, log u.

    i is uniform over ``movable``, j uniform over the other n - 1 mentions and u uniform on
    (0, 1), drawn from ``gen`` in this order whatever the state (so the probability of
    proposing (i, j) is the same forwards and backwards).

    Returns
    -------
    i, j : int
    log_u : float
    """
    i = int(movable[gen.integers(len(movable))])
    j = int(gen.integers(n - 1))
    j += j >= i
    return i, j, float(np.log(gen.random()))


def cluster_factors(run, members):
    """The symmetric factor matrix of the mentions ``members`` (sorted block positions).

    ``F[a, b] = f_theta(x_{members[a]}, x_{members[b]})`` evaluated once per pair, for the
    lower position first (the order of ``log p(y | x)``'s sum over i < j); zero diagonal.

    Returns
    -------
    F : ndarray of float64, shape (m, m)
    evals : int
        Factors evaluated, m (m - 1) / 2.
    """
    m = len(members)
    F = np.zeros((m, m))
    if m < 2:
        return F, 0
    a, b = np.triu_indices(m, 1)
    out = np.empty(len(a))
    _factors.pair_factors(run.enc, run.theta, run.bias, members[a], members[b], out)
    F[a, b] = out
    F[b, a] = out
    return F, len(a)


def allocation_log_q(F, pi, pj, order, inv_temp, side=None, gen=None):
    """Sequential allocation of Dahl (2003): log probability of the allocation of ``order``.

    Parameters
    ----------
    F : ndarray of float, shape (m, m)
        Symmetric factors of the mentions involved (:func:`cluster_factors`).
    pi, pj : int
        Positions (rows of F) of the two launch mentions, in S_i and S_j from the start.
    order : ndarray of int
        The other positions, in the order they are allocated.
    inv_temp : float
        1 / temperature.
    side : ndarray of bool, shape (m,), optional
        Given: the allocation to score (True = S_i), and the returned log q is that of
        producing it.  None: draw the allocation with ``gen``.
    gen : numpy.random.Generator, optional
        Needed when ``side`` is None.

    Returns
    -------
    log_q : float
        Natural log of the probability of the allocation.
    side : ndarray of bool, shape (m,)
        True for the members of S_i (``pi`` True, ``pj`` False).
    """
    m = F.shape[0]
    draw = side is None
    if draw:
        side = np.zeros(m, bool)
        side[pi] = True
    acc_i = F[:, pi].copy()
    acc_j = F[:, pj].copy()
    u = gen.random(len(order)) if draw else None
    log_q = 0.0
    for t, k in enumerate(order.tolist()):
        z = (acc_j[k] - acc_i[k]) * inv_temp          # P(k -> S_i) = 1 / (1 + e^z)
        lp_i, lp_j = -np.logaddexp(0.0, z), -np.logaddexp(0.0, -z)
        if draw:
            side[k] = bool(np.log(u[t]) < lp_i)
        if side[k]:
            log_q += lp_i
            acc_i += F[:, k]
        else:
            log_q += lp_j
            acc_j += F[:, k]
    return float(log_q), side


def split_merge_moves(labels, size, inv_temp, run, gen, fixed, settings):
    """``settings.split_moves`` split-merge (SAMS) proposals on one block, in place.

    Parameters
    ----------
    labels, size : ndarray of int64, shape (n,)
        The block's state (labels in [0, n), ``size[y]`` members of label y), updated in place.
    inv_temp : float
        1 / temperature: the proposals leave pi_tau (module docstring) invariant.
    run : coref.gibbs.block.KernelRun
        The block's kernel arguments (``enc``, ``theta``, ``bias``, ``movable``).
    gen : numpy.random.Generator
        The block's generator (advanced).
    fixed : ndarray of bool, shape (n,)
        Mentions that never move (their clusters are never split or merged here).
    settings : coref.settings.GibbsSettings
        ``split_moves`` proposals, each on at most ``split_max_size`` mentions.

    Returns
    -------
    int
        Factors evaluated.

    References
    ----------
    Dahl (2003), "An improved merge-split sampler for conjugate Dirichlet process mixture
    models", Tech. Rep. 1086, Univ. of Wisconsin; Jain & Neal (2004), "A split-merge Markov
    chain Monte Carlo procedure for the Dirichlet process mixture model", JCGS 13(1).
    """
    movable = run.movable
    n = len(labels)
    evals = 0
    if n < 2 or len(movable) == 0:
        return 0
    max_size = int(settings.split_max_size)
    for _ in range(int(settings.split_moves)):
        i, j, log_u = draw_pair(movable, n, gen)
        li, lj = int(labels[i]), int(labels[j])
        members = np.flatnonzero((labels == li) | (labels == lj))
        if len(members) > max_size or fixed[members].any():
            continue
        F, e = cluster_factors(run, members)
        evals += e
        pi, pj = int(np.searchsorted(members, i)), int(np.searchsorted(members, j))
        rest = np.flatnonzero((np.arange(len(members)) != pi) & (np.arange(len(members)) != pj))
        order = rest[gen.permutation(len(rest))]
        if li == lj:
            log_q, side = allocation_log_q(F, pi, pj, order, inv_temp, gen=gen)
            delta = float(F[np.ix_(side, ~side)].sum())
            if log_u < -delta * inv_temp - log_q:
                new = int(np.flatnonzero(size == 0)[0])
                moved = members[~side]
                labels[moved] = new
                size[new] = len(moved)
                size[li] -= len(moved)
        else:
            side = labels[members] == li
            log_q, _ = allocation_log_q(F, pi, pj, order, inv_temp, side=side)
            delta = float(F[np.ix_(side, ~side)].sum())
            if log_u < delta * inv_temp + log_q:
                moved = members[~side]
                labels[moved] = li
                size[li] += len(moved)
                size[lj] = 0
    return evals
