"""Two mentions of one paper are two authors: the same-paper constraint of a block.

A paper does not list one person twice, so two mentions of one block that carry the same
known ``paper_id`` are two different authors (S2AND's clustering constraint, Subramanian
et al. 2021). The exception is a duplicate record: the same paper listed twice for one
author, as the shipped AMiner data does once (``Jose_M._Garcia/29`` and ``/82``: one
paper, one author, the same coauthor list). Two mentions are therefore *paper mates* when
their paper codes are equal and known (>= 0) and their coauthor lists differ (two authors
of one paper each list the other, so their lists cannot be equal).

The factor kernel lowers the factor of paper mates by
:data:`coref.factors.names.SAME_PAPER_PENALTY` nats (``_phi.pxd``, ``block_factor``);
racing Gibbs, which estimates big clusters' sums from a subsample that may miss the one
mate, drops every cluster holding a mate of the moving mention before its race (``_gibbs.pyx``),
from the lists built here.
"""
from __future__ import annotations

import numpy as np

__all__ = ["paper_mates"]


def paper_mates(paper_code, co_ptr, co_ids):
    """The paper mates of each mention of a block, as CSR lists.

    Parameters
    ----------
    paper_code : ndarray of int, shape (n,)
        Block-local paper codes, -1 = unknown.
    co_ptr : ndarray of int64, shape (n + 1,)
        CSR row pointers of the coauthor id lists.
    co_ids : ndarray of int, shape (>= co_ptr[-1],)
        Coauthor ids, sorted within each mention.

    Returns
    -------
    mate_ptr : ndarray of int64, shape (n + 1,)
    mate_idx : ndarray of int64, shape (mate_ptr[-1],)
        ``mate_idx[mate_ptr[i]:mate_ptr[i + 1]]`` are the mentions j != i with
        ``paper_code[j] == paper_code[i] >= 0`` and a coauthor list other than i's,
        increasing. ``None, None`` when the block has no paper mates.

    Raises
    ------
    ValueError
        If the array lengths disagree.
    """
    pc = np.asarray(paper_code)
    n = pc.shape[0]
    if np.asarray(co_ptr).shape[0] != n + 1:
        raise ValueError(f"co_ptr must have n + 1 = {n + 1} entries; got {np.asarray(co_ptr).shape[0]}")
    known = np.flatnonzero(pc >= 0)
    if known.size < 2:
        return None, None
    order = known[np.argsort(pc[known], kind="stable")]
    codes = pc[order]
    if not np.any(codes[1:] == codes[:-1]):       # every known paper once: the usual block
        return None, None
    cut = np.flatnonzero(np.diff(codes)) + 1
    groups = [g for g in np.split(order, cut) if g.size > 1]
    if not groups:
        return None, None
    mates = {}
    for g in groups:
        lists = [tuple(co_ids[co_ptr[i]:co_ptr[i + 1]].tolist()) for i in g]
        for a in range(g.size):
            row = [int(g[b]) for b in range(g.size) if b != a and lists[b] != lists[a]]
            if row:
                mates[int(g[a])] = sorted(row)
    if not mates:
        return None, None
    counts = np.zeros(n + 1, dtype=np.int64)
    for i, row in mates.items():
        counts[i + 1] = len(row)
    mate_ptr = np.cumsum(counts)
    mate_idx = np.fromiter((j for i in sorted(mates) for j in mates[i]), dtype=np.int64, count=int(mate_ptr[-1]))
    return mate_ptr, mate_idx
