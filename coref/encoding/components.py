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

__all__ = ["token_components", "token_list_components", "bounded_groups", "cut_thin_groups", "coauthor_groups",
           "MAX_GROUP", "CUT_CONDUCTANCE", "MIN_CUT_PART"]

#: Largest coauthor group (``comp1`` component) the features trust as one group; see :func:`bounded_groups`.
MAX_GROUP = 200
#: A coauthor group is cut in two where the sweep cut of its Fiedler vector has a conductance below
#: this (:func:`cut_thin_groups`).
CUT_CONDUCTANCE = 0.03
#: Smallest side of such a cut (mentions); groups of fewer than twice this are never cut.
MIN_CUT_PART = 10

_BLAS = []   # the process's threadpoolctl controller, made at the first cut (library discovery: ~1 ms)


def _one_blas_thread():
    """A context in which BLAS / LAPACK run on one thread (threadpoolctl; ~10 us to enter).

    The eigendecompositions of the cuts are of a few hundred nodes at most: one thread does
    one in ~10 ms, while OpenBLAS's default threads, spinning against other busy processes,
    took 1.6 s for a 300 x 300 ``eigh`` on this 2-core machine under a load of 3.7.
    """
    if not _BLAS:
        from threadpoolctl import ThreadpoolController
        _BLAS.append(ThreadpoolController())
    return _BLAS[0].limit(limits=1, user_api="blas")


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


def _sweep_cut(A, min_part):
    """Best sweep cut of the Fiedler vector of the weighted graph ``A`` (dense, symmetric, zero diagonal,
    no isolated node): ``(conductance, mask of one side)``, or ``(inf, None)`` without a cut leaving
    ``min_part`` nodes on each side."""
    n = A.shape[0]
    d = A.sum(axis=1)
    s = 1.0 / np.sqrt(d)
    lap = np.eye(n) - s[:, None] * A * s[None, :]           # normalised Laplacian I - D^-1/2 A D^-1/2
    _, vec = np.linalg.eigh(lap)
    order = np.argsort(vec[:, 1] * s, kind="stable")          # the Fiedler vector of D^-1 L (Shi & Malik)
    P = A[np.ix_(order, order)]
    vol = np.cumsum(d[order])[:-1]                             # volume of the first k + 1 nodes
    inner = np.cumsum(np.tril(P, -1).sum(axis=1))[:-1]         # weight inside them
    cond = (vol - 2.0 * inner) / np.minimum(vol, d.sum() - vol)
    k = np.arange(1, n)
    cond[(k < min_part) | (n - k < min_part)] = np.inf
    best = int(np.argmin(cond))
    if not np.isfinite(cond[best]):
        return np.inf, None
    mask = np.zeros(n, dtype=bool)
    mask[order[:best + 1]] = True
    return float(cond[best]), mask


def _cut_recursive(A, tau, min_part, out, nodes, next_label):
    """Label ``nodes`` (indices into ``out``) of the connected graph ``A`` by recursive thin cuts."""
    with _one_blas_thread():
        return _cut_stack([(A, nodes)], tau, min_part, out, next_label)


def _cut_stack(stack, tau, min_part, out, next_label):
    """:func:`_cut_recursive`'s loop over the parts still to cut."""
    from scipy.sparse.csgraph import connected_components

    while stack:
        A, nodes = stack.pop()
        if len(nodes) >= 2 * min_part:
            cond, mask = _sweep_cut(A, min_part)
            if cond < tau:
                for side in (mask, ~mask):
                    sub = A[np.ix_(side, side)]
                    nc, lab = connected_components(sub > 0, directed=False)
                    for c in range(nc):
                        keep = lab == c
                        stack.append((sub[np.ix_(keep, keep)], nodes[side][keep]))
                continue
        out[nodes] = next_label
        next_label += 1
    return next_label


def cut_thin_groups(groups, ptr, ids, tau=CUT_CONDUCTANCE, min_part=MIN_CUT_PART):
    """Coauthor groups cut where their shared-coauthor graph is thin: two circles joined by a few hubs.

    In a connected component of the shared-coauthor graph, one coauthor that two people with the
    same name share (a common coauthor name, or a famous collaborator of both) joins their
    circles into one group, and every group feature then treats the two as one author. In the dev
    name ``Wei_Wang`` a 196-mention group holds three authors (88, 65 and 39 mentions) joined by
    eleven shared coauthors; pairs inside it were 37% co-referent, against >= 99.8% for the groups
    of aminer_na. Each group of at least ``2 * min_part`` mentions is therefore cut recursively by
    the sweep cut of the Fiedler vector of its normalised Laplacian (spectral bisection, Shi & Malik
    2000; the sweep keeps the cut of least conductance, as in Cheeger-inequality partitioning)
    while that conductance, ``w(S, not S) / min(vol S, vol not S)`` with edge weights = number of
    shared coauthors, is below ``tau``. The parts are groups of their own; the group-profile
    features then compare them, so a single author whose circles were cut is joined again by
    his profiles rather than by the chain.

    Measured on the labeled sets (pairs inside one group, blocks of >= 20 mentions): on
    aminer_dblp_dev precision 0.611 -> 0.957 (wrong pairs 12,525 -> 813), recall 0.719 -> 0.653;
    on aminer_na no group is cut (precision 0.998, recall 0.486). ``tau`` 0.03 cuts the dev group
    above (best cut 0.02-0.03) and none of the single-author groups of aminer_na (the thinnest,
    David_E._Goldberg's 182 and Jim_Gray's 111 mentions, at 0.03-0.04); 0.05 cut those two and
    scored 0.0001-0.003 lower in B3 F1 on each of the four grouped-CV folds it was run on.

    Parameters
    ----------
    groups : ndarray of int, shape (n,)
        Group labels of ONE block, each group connected in the shared-coauthor graph
        (:func:`token_components` with ``min_shared=1``, or :func:`bounded_groups` of it).
    ptr, ids : ndarray of int
        The block's coauthor lists in CSR form, as for :func:`token_components`.
    tau : float, default :data:`CUT_CONDUCTANCE`
        Cut while the best sweep cut's conductance is below this (0 disables cutting).
    min_part : int, default :data:`MIN_CUT_PART`
        Smallest side of a cut (mentions), >= 1.

    Returns
    -------
    ndarray of int32, shape (n,)
        Group labels ``0, 1, ...`` numbered in the order of each group's first mention; the
        input's partition when no group is cut.

    Raises
    ------
    ValueError
        If ``min_part`` < 1, ``tau`` is not a finite number >= 0, or the arrays disagree in length.
    """
    import scipy.sparse as sp

    g = np.asarray(groups, dtype=np.int64)
    ptr = np.asarray(ptr, dtype=np.int64)
    if g.ndim != 1 or len(ptr) != len(g) + 1:
        raise ValueError(f"groups must be 1-D with len(ptr) - 1 = {len(ptr) - 1} entries; got shape {g.shape}")
    if int(min_part) < 1:
        raise ValueError(f"min_part must be >= 1; got {min_part}")
    if not (np.isfinite(tau) and tau >= 0):
        raise ValueError(f"tau must be a finite number >= 0; got {tau}")
    n = len(g)
    if n == 0 or tau == 0:
        return g.astype(np.int32)
    sizes = np.bincount(g)
    big = np.flatnonzero(sizes >= 2 * int(min_part))
    if len(big) == 0:
        return g.astype(np.int32)
    nnz = int(ptr[-1])
    tok = np.asarray(ids)[:nnz].astype(np.int64)
    _, col = np.unique(tok, return_inverse=True)
    incidence = sp.csr_matrix((np.ones(nnz), col.reshape(-1), ptr), shape=(n, int(col.max()) + 1 if nnz else 0))
    out = g.copy()
    next_label = int(g.max()) + 1
    for c in big:
        nodes = np.flatnonzero(g == c)
        B = incidence[nodes]
        A = (B @ B.T).toarray()
        np.fill_diagonal(A, 0.0)
        if not (A.sum(axis=1) > 0).all():
            continue                                           # not a shared-coauthor component: left whole
        next_label = _cut_recursive(A, float(tau), int(min_part), out, nodes, next_label)
    _, first, inv = np.unique(out, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inv.reshape(-1)].astype(np.int32)


def coauthor_groups(comp1, comp2, ptr, ids):
    """The ``comp1`` coauthor groups every group feature uses: components that do not percolate
    (:func:`bounded_groups`), cut where they are thin (:func:`cut_thin_groups`).

    Parameters
    ----------
    comp1, comp2 : ndarray of int, shape (n,)
        Components of ONE block with >= 1 / >= 2 shared coauthors (:func:`token_components`).
    ptr, ids : ndarray of int
        The block's coauthor lists (CSR), from which those components were computed.

    Returns
    -------
    ndarray of int32, shape (n,)
        Group labels numbered in the order of each group's first mention.
    """
    return cut_thin_groups(bounded_groups(comp1, comp2), ptr, ids)
