"""Connected components of mentions linked by shared tokens, for many blocks in one call.

The coauthor-graph features of :mod:`coref.encoding` (``comp1``: mentions sharing at least one
coauthor, ``comp2``: at least two, ``comp3``: at least one coauthor keyed by initial + last
name) are the connected components of a graph whose nodes are the mentions of ONE block.
:func:`token_components` computes them for any number of blocks at once with
:func:`scipy.sparse.csgraph.connected_components` (tokens are keyed by block, so no edge
crosses two blocks), and numbers each block's components 0, 1, ... in the order of their
first mention -- the labels the per-block encoding has always used.
"""
from __future__ import annotations

import numpy as np

from coref.encoding._arrays import intern_lists

__all__ = ["token_components", "token_list_components", "bounded_groups", "MAX_GROUP"]

#: Largest coauthor group (``comp1`` component) the features trust as one group; see :func:`bounded_groups`.
MAX_GROUP = 200


def token_components(ptr, ids, min_shared=1, group=None):
    """Component label of every mention; mentions are linked by >= ``min_shared`` shared tokens.

    Parameters
    ----------
    ptr : ndarray of int, shape (n + 1,)
        CSR row pointer: the tokens of mention r are ``ids[ptr[r]:ptr[r + 1]]`` (entries
        past ``ptr[-1]``, e.g. a pad, are ignored). A token listed k times by one mention
        and m times by another counts k * m times.
    ids : ndarray of int, shape (>= ptr[-1],)
        Token ids (any non-negative integers; equal ids are one token).
    min_shared : int, default 1
        Two mentions are linked when they share at least this many tokens (values below
        1 mean 1).
    group : ndarray of int, shape (n,), or None
        Block of each mention, non-decreasing (the mentions of a block contiguous); ``None``
        = one block. Tokens of different blocks are different tokens.

    Returns
    -------
    ndarray of int32, shape (n,)
        Per mention, its component within its block: ``0, 1, ...`` numbered in the order of
        each component's first mention in that block.

    Raises
    ------
    ValueError
        If ``ptr`` is not a non-decreasing pointer starting at 0 covered by ``ids``, a token
        id is negative, or ``group`` has the wrong length or decreases.
    """
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    ptr = np.asarray(ptr, dtype=np.int64)
    if ptr.ndim != 1 or len(ptr) == 0 or ptr[0] != 0 or np.any(np.diff(ptr) < 0):
        raise ValueError("ptr must be a non-decreasing 1-D CSR pointer starting at 0")
    n = len(ptr) - 1
    nnz = int(ptr[-1])
    ids = np.asarray(ids)
    if len(ids) < nnz:
        raise ValueError(f"ids holds {len(ids)} entries; ptr needs {nnz}")
    tok = ids[:nnz].astype(np.int64)
    if nnz and tok.min() < 0:
        raise ValueError("token ids must be >= 0")
    if group is None:
        grp = np.zeros(n, dtype=np.int64)
    else:
        grp = np.asarray(group, dtype=np.int64)
        if grp.shape != (n,):
            raise ValueError(f"group must have one entry per mention ({n}); got shape {grp.shape}")
        if n and np.any(np.diff(grp) < 0):
            raise ValueError("group must be non-decreasing (the mentions of a block contiguous)")
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    row = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
    if nnz == 0:
        col, n_tok = np.zeros(0, dtype=np.int64), 0
    elif group is None and int(tok.max()) < 4 * nnz + 64:
        col, n_tok = tok, int(tok.max()) + 1                 # ids as columns (unused ones stay alone)
    else:
        width = int(tok.max()) + 1
        _, col = np.unique(grp[row] * width + tok, return_inverse=True)   # a token per (block, id)
        col = col.reshape(-1)
        n_tok = int(col.max()) + 1
    if max(int(min_shared), 1) <= 1:
        # mentions and tokens as one bipartite graph (edge mention -> token; connected_components
        # reads it as undirected): the mentions' components are those of the shared-token graph
        indptr = np.concatenate([ptr, np.full(n_tok, nnz, dtype=np.int64)])
        graph = sp.csr_matrix((np.ones(nnz, dtype=np.int8), n + col, indptr), shape=(n + n_tok, n + n_tok))
    else:
        incidence = sp.csr_matrix((np.ones(nnz, dtype=np.int64), col, ptr), shape=(n, n_tok))
        shared = (incidence @ incidence.T).tocoo()           # shared-token counts of every pair
        keep = (shared.data >= int(min_shared)) & (shared.row != shared.col)
        graph = sp.csr_matrix((np.ones(int(keep.sum()), dtype=np.int8),
                               (shared.row[keep], shared.col[keep])), shape=(n, n))
    _, label = connected_components(graph, directed=False)
    label = label[:n]
    # number each block's components by their first mention
    _, first = np.unique(label, return_index=True)          # first mention of each component
    first = np.sort(first)
    comp_grp = grp[first]
    local = np.arange(len(first)) - np.searchsorted(comp_grp, comp_grp, side="left")
    code = np.empty(int(label.max()) + 1, dtype=np.int64)
    code[label[first]] = local
    return code[label].astype(np.int32)


def token_list_components(token_lists, min_shared):
    """Connected components of mentions (token lists) linked by >= ``min_shared`` shared tokens.

    Returns int32 labels in ``[0, n)``, numbered in the order of each component's first
    mention (:func:`token_components`, scipy).
    """
    _, ptr, ids = intern_lists([sorted(set(map(str, t))) for t in token_lists])
    return token_components(ptr, ids, min_shared)


def bounded_groups(comp1, comp2, max_size=MAX_GROUP):
    """Coauthor groups that do not percolate: ``comp1``, with oversized components split.

    A chain of shared coauthors grows into one giant component as a block grows: in a
    one-name block of 10,000 synthetic mentions, 8,701 mentions of 643 authors are linked
    (one common coauthor name shared by two people is enough), and the group features
    (``same_comp1``, the group profiles) then call most strangers one group (issue 27). The
    largest ``comp1`` group of the labeled training data is 182 mentions of one author; the
    one larger group of the dev names (196 mentions) joins 4 authors. So a component of more
    than ``max_size`` mentions is replaced by its ``comp2`` parts (mentions linked by >= 2
    shared coauthors, which refine ``comp1``), and a ``comp2`` part still larger than
    ``max_size`` by single mentions.

    Parameters
    ----------
    comp1, comp2 : ndarray of int, shape (n,)
        Component labels of ONE block (:func:`token_components` with ``min_shared`` 1 and 2).
    max_size : int, default :data:`MAX_GROUP`
        Largest group kept whole (mentions).

    Returns
    -------
    ndarray of int32, shape (n,)
        Group labels ``0, 1, ...`` numbered in the order of each group's first mention;
        ``comp1`` itself when no component exceeds ``max_size``.

    Raises
    ------
    ValueError
        If the two label arrays differ in length or ``max_size`` < 1.
    """
    c1 = np.asarray(comp1, dtype=np.int64)
    c2 = np.asarray(comp2, dtype=np.int64)
    if c1.shape != c2.shape or c1.ndim != 1:
        raise ValueError(f"comp1 and comp2 must be 1-D of one length; got shapes {c1.shape} and {c2.shape}")
    if int(max_size) < 1:
        raise ValueError(f"max_size must be >= 1; got {max_size}")
    n = len(c1)
    if n == 0 or n <= max_size:
        return np.asarray(comp1, dtype=np.int32)
    big1 = np.bincount(c1)[c1] > max_size
    if not big1.any():
        return np.asarray(comp1, dtype=np.int32)
    lab = c1.copy()
    lab[big1] = n + c2[big1]
    big2 = big1 & (np.bincount(c2)[c2] > max_size)
    lab[big2] = 2 * n + np.flatnonzero(big2)
    _, first, inv = np.unique(lab, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inv.reshape(-1)].astype(np.int32)
