"""Cluster-merge proposals between Gibbs sweeps (``GibbsCoref(merge_moves=...)``).

A single-site Gibbs step moves one mention; two clusters of one author can then take
many sweeps to meet.  A merge proposal moves a whole cluster into another and is
accepted by an annealed Metropolis test (Singh et al. 2012 merge proposals), summed
exactly or decided by the Racing-Normal MH test of :func:`sampling.mh.mh_accept`.
"""
from __future__ import annotations

import numpy as np

from sampling.utils.kernels import load_kernel

from coref.gibbs.splits import draw_pair, split_merge_moves

_factors = load_kernel("coref.factors._factors")

__all__ = ["merge_moves"]


def merge_moves(labels, size, inv_temp, run, gen, fixed, settings):
    """``settings.merge_moves`` annealed Metropolis proposals to merge two whole clusters.

    Proposal: a random movable mention i and a random other mention j in another
    cluster; A = C(i), B = C(j).  Never merges two clusters that both hold fixed
    mentions; moves the cluster without fixed mentions (else the smaller) into
    the other.  Accept when log u < Delta / tau, Delta = sum_{a in A, b in B}
    f_theta(x_a, x_b) (the change of log p(y | x) / tau; Singh et al. 2012 merge
    proposals, annealed).  Delta is summed exactly for the exact sampler or when
    |A| |B| <= ``merge_exact_max``; otherwise the racing sampler decides with the
    Racing-Normal MH test :func:`sampling.mh.mh_accept` (error level ``delta``).

    Parameters
    ----------
    labels, size : ndarray of int64, shape (n,)
        The block's state, updated in place.
    inv_temp : float
        1 / temperature of the sweep the proposals follow.
    run : coref.gibbs.block.KernelRun
        The block's kernel arguments (``enc``, ``theta``, ``bias``, ``racing``, ``movable``).
    gen : numpy.random.Generator
        The block's generator (advanced).
    fixed : ndarray of bool, shape (n,)
        Mentions that never move.
    settings : coref.settings.GibbsSettings

    Then ``settings.split_moves`` split-merge proposals
    (:func:`coref.gibbs.splits.split_merge_moves`), which can also take a cluster apart.

    Returns
    -------
    int
        Factors evaluated.
    """
    # imported here: sampling.mh pulls in scipy.optimize (~1 s), which runs without
    # merge moves (the default, and every `coref add`) need not pay
    from sampling.mh import mh_accept

    enc, theta, bias, movable = run.enc, run.theta, run.bias, run.movable
    n = len(labels)
    evals = 0
    for _ in range(int(settings.merge_moves)):
        i, j, log_u = draw_pair(movable, n, gen)
        la, lb = int(labels[i]), int(labels[j])
        if la == lb:
            continue
        A = np.flatnonzero(labels == la)
        B = np.flatnonzero(labels == lb)
        fa, fb = bool(fixed[A].any()), bool(fixed[B].any())
        if fa and fb:
            continue
        N = len(A) * len(B)

        def diffs(idx, A=A, B=B):
            idx = np.asarray(idx, np.int64)
            out = np.empty(len(idx))
            _factors.pair_factors(enc, theta, bias, A[idx // len(B)], B[idx % len(B)], out)
            return out * inv_temp

        if run.racing and N > int(settings.merge_exact_max):
            res = mh_accept(diffs, N, log_u / N, delta=float(settings.delta),
                            first_batch=min(50, N), rng=gen)
            accept, evals = bool(res.accept), evals + int(res.n_evals)
        else:
            accept = float(diffs(np.arange(N)).sum()) > log_u
            evals += N
        if not accept:
            continue
        if fa or (not fb and len(A) > len(B)) or (not fb and len(A) == len(B)):
            src, dst = B, la          # B joins A
        else:
            src, dst = A, lb
        size[labels[src[0]]] = 0
        labels[src] = dst
        size[dst] += len(src)
    if settings.split_moves > 0:
        evals += split_merge_moves(labels, size, inv_temp, run, gen, fixed, settings)
    return evals
