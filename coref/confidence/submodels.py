"""Sub-models of a coreference block as graphical models: a set S of mentions, the rest of the block fixed.

Model (Chen & Ghahramani 2016, Sec. 5.3): within a block, p(y | x) is proportional to
exp(sum_{i < j, y_i = y_j} f(x_i, x_j)).  Fix the labels of the mentions outside S
(the set R); the clusters they form are the K *existing* clusters c = 0 .. K - 1.  A
configuration of S is then one set partition of S in which every group either joins
exactly one existing cluster (two groups never join the same one) or is a new
cluster.  Its log-weight is the sum of f over the pairs that become co-clustered and
involve at least one mention of S::

    log w = sum_{s in S joins c} u[s, c]  +  sum_{s < t in S, same cluster} f[s, t],
    u[s, c] = sum_{r in R, y_r = c} f[s, r].

Pairs inside R are a constant and are left out, so the sub-model's partition function
is Z_S = sum over the configurations of S of w (each partition counted once), and
P(A | y_R) = Z_A / Z_S for an event A.

Graphical-model encoding (:func:`build_graphical_model`), restricted growth
-------------------------------------------------------------------------
Order S as s_0 .. s_{m-1}.  Variable ``k`` (0 <= k < m) is the label y_k of s_k with
``K + k + 1`` states: ``0 .. K - 1`` = existing cluster, ``K + j`` = the j-th *new*
cluster, j = 0 .. k.  Variable ``m + k`` is the auxiliary count a_k (``k + 2`` states:
0 .. k + 1) of new clusters opened by s_0 .. s_k.  Zero/one factors tie them:

* (y_0, a_0): a_0 = 1 if y_0 = K (s_0 opens new cluster 0), a_0 = 0 if y_0 < K;
* (a_{k-1}, y_k, a_k) for k >= 1: y_k < K (existing) or y_k = K + j with
  j < a_{k-1} (a new cluster already open) keep a_k = a_{k-1}; y_k = K + a_{k-1}
  opens the next one, a_k = a_{k-1} + 1; y_k = K + j with j > a_{k-1} is forbidden.

So the new-cluster labels appear in first-use order (a restricted-growth string);
the labels of a valid configuration are determined by the partition and a_k by the
labels, so every partition of S is counted exactly once, and nothing else is
counted.  The weights are a unary factor over y_k (``u[k, c]`` on the existing
labels, 0 on the new ones) and, for k < l, a pairwise factor over (y_k, y_l) equal to
``f[k, l]`` where the labels are equal and 0 elsewhere (all in natural log).  The
proof of the count is a test: ``tests/coref/test_coref_confidence.py`` compares
exact ln Z of the model with brute-force enumeration of set partitions.

Events (constraints), each added as 0/-inf factors:
``("same", i, j)`` y_i = y_j; ``("cluster", i, c)`` y_i = existing cluster c;
``("alone", i)`` s_i is a new cluster of its own (no existing cluster, no other
mention of S).  ``i``, ``j`` are row indices into the block (members of S) and ``c``
an existing cluster *label* (a value of the assignment outside S).

Exact evaluation: :mod:`coref.confidence.exact`; a fitted model's sub-model:
:func:`submodel`.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sampling.bounds import Factor, GraphicalModel

__all__ = ["SubProblem", "subproblem", "check_constraints", "build_graphical_model", "event_indicators", "submodel",
           "ENCODINGS"]


@dataclass(frozen=True, eq=False)
class SubProblem:
    """The numbers that define a sub-model (see the module docstring).

    Attributes
    ----------
    S : ndarray of int64, shape (m,)
        Row indices of the sub-model's mentions in the block, in encoding order.
    u : ndarray of shape (m, K)
        ``u[k, c]``: sum of f between s_k and the fixed members of existing cluster c.
    f : ndarray of shape (m, m)
        Pairwise factors among S (symmetric, zero diagonal), natural-log odds.
    cluster_labels : ndarray of int64, shape (K,)
        The assignment label of each existing cluster.
    """

    S: np.ndarray
    u: np.ndarray
    f: np.ndarray
    cluster_labels: np.ndarray

    @property
    def m(self):
        return int(self.S.shape[0])

    @property
    def K(self):
        return int(self.cluster_labels.shape[0])

    def position(self, i):
        """Position k of block row ``i`` in S (ValueError if i is not in S)."""
        hit = np.flatnonzero(self.S == int(i))
        if hit.size == 0:
            raise ValueError(f"mention row {i} is not in the sub-model's mention set S = {self.S.tolist()}")
        return int(hit[0])

    def cluster_index(self, c):
        """Index of existing cluster label ``c`` (ValueError if no fixed mention has it)."""
        hit = np.flatnonzero(self.cluster_labels == int(c))
        if hit.size == 0:
            raise ValueError(f"cluster {c} is not an existing cluster of the fixed mentions "
                             f"(labels {self.cluster_labels.tolist()})")
        return int(hit[0])


def _int_index(x, name):
    if not isinstance(x, numbers.Integral) or isinstance(x, bool):
        raise TypeError(f"the {name} of a constraint must be an int; got {x!r} ({type(x).__name__})")
    return int(x)


def subproblem(F, S, assignment=None):
    """Build the :class:`SubProblem` of mention rows ``S`` from the block's factor matrix.

    Parameters
    ----------
    F : ndarray of shape (n, n)
        Pairwise factors f of the block (symmetric; the diagonal is ignored).
    S : sequence of int
        Distinct row indices in ``[0, n)``.
    assignment : array_like of int of shape (n,), optional
        Cluster label of every row; the rows outside S are fixed at it (the labels of
        the rows in S are ignored). Needed unless S is the whole block.

    Raises
    ------
    ValueError
        If S is empty, repeats a row, holds a row out of range, if ``assignment`` has
        the wrong length, or if it is missing while S is not the whole block.
    TypeError
        If S or ``assignment`` hold non-integers.
    """
    F = np.asarray(F, dtype=np.float64)
    n = F.shape[0]
    S_arr = np.asarray(S)
    if S_arr.ndim != 1:
        raise ValueError(f"S must be a 1-d sequence of row indices; got shape {S_arr.shape}")
    if S_arr.size and S_arr.dtype.kind not in "iu":
        raise TypeError(f"S must hold integer row indices; got dtype {S_arr.dtype}")
    S_arr = S_arr.astype(np.int64)
    if S_arr.size == 0:
        raise ValueError("S must hold at least one mention row; got an empty set")
    if np.unique(S_arr).size != S_arr.size:
        raise ValueError(f"S must not repeat a mention row; got {S_arr.tolist()}")
    if S_arr.min() < 0 or S_arr.max() >= n:
        raise ValueError(f"S holds a row outside [0, {n}) of the block: {S_arr.tolist()}")
    rest = np.setdiff1d(np.arange(n), S_arr)
    if assignment is None:
        if rest.size:
            raise ValueError(f"assignment is needed to fix the {rest.size} mention(s) outside S; "
                             "pass the block's cluster labels (int per row)")
        labels = np.zeros(0, np.int64)
        u = np.zeros((S_arr.size, 0))
    else:
        a = np.asarray(assignment)
        if a.shape != (n,):
            raise ValueError(f"assignment must have one label per block row, shape ({n},); got {a.shape}")
        if a.size and a.dtype.kind not in "iu":
            raise TypeError(f"assignment must hold integer cluster labels; got dtype {a.dtype}")
        a = a.astype(np.int64)
        labels, inv = np.unique(a[rest], return_inverse=True)
        onehot = np.zeros((rest.size, labels.size))
        onehot[np.arange(rest.size), inv] = 1.0
        u = F[np.ix_(S_arr, rest)] @ onehot if rest.size else np.zeros((S_arr.size, 0))
    f = F[np.ix_(S_arr, S_arr)].copy()
    np.fill_diagonal(f, 0.0)
    f = 0.5 * (f + f.T)
    return SubProblem(S=S_arr, u=np.ascontiguousarray(u), f=f, cluster_labels=labels.astype(np.int64))


def check_constraints(sub, constraint):
    """Normalise ``constraint`` to a list of ``(kind, k, ...)`` tuples in S positions.

    Parameters
    ----------
    sub : SubProblem
    constraint : None, tuple or sequence of tuples
        ``("same", i, j)``, ``("cluster", i, c)`` or ``("alone", i)`` with block rows
        i, j in S and c an existing cluster label.

    Returns
    -------
    list of tuple
        ``("same", k, l)``, ``("cluster", k, ci)``, ``("alone", k)`` with positions k, l
        in S and ci the index of the existing cluster.

    Raises
    ------
    ValueError
        For an unknown kind, a row not in S, ``i == j``, or an unknown cluster.
    TypeError
        If a constraint is not a tuple or holds non-integers.
    """
    if constraint is None:
        return []
    if isinstance(constraint, tuple) and constraint and isinstance(constraint[0], str):
        constraint = [constraint]
    out = []
    for con in constraint:
        if not isinstance(con, tuple) or not con or not isinstance(con[0], str):
            raise TypeError(f"a constraint must be a tuple like ('same', i, j); got {con!r}")
        kind = con[0]
        if kind == "same" and len(con) == 3:
            i, j = _int_index(con[1], "row i"), _int_index(con[2], "row j")
            if i == j:
                raise ValueError(f"constraint {con!r}: the two rows must differ")
            out.append(("same", sub.position(i), sub.position(j)))
        elif kind == "cluster" and len(con) == 3:
            i, c = _int_index(con[1], "row i"), _int_index(con[2], "cluster c")
            out.append(("cluster", sub.position(i), sub.cluster_index(c)))
        elif kind == "alone" and len(con) == 2:
            out.append(("alone", sub.position(_int_index(con[1], "row i"))))
        else:
            raise ValueError(f"unknown constraint {con!r}; expected ('same', i, j), ('cluster', i, c) "
                             "or ('alone', i)")
    return out


# --------------------------------------------------------------------- graphical model

ENCODINGS = ("leader", "growth")


def build_graphical_model(sub, constraints=(), *, encoding="leader"):
    """The graphical model of ``sub`` (module docstring), natural-log factors.

    Parameters
    ----------
    sub : SubProblem
    constraints : list of tuple
        Output of :func:`check_constraints`.
    encoding : {"leader", "growth"}, default "leader"
        ``"growth"``: restricted-growth labels with the auxiliary counts a_k (2 m
        variables). ``"leader"``: a new cluster is labelled by its first member
        (m variables, only pairwise 0/1 factors; see the module docstring).

    Returns
    -------
    sampling.bounds.GraphicalModel
        Its partition function is Z_S (or Z_A with constraints).

    Raises
    ------
    ValueError
        For an unknown encoding.
    """
    if encoding not in ENCODINGS:
        raise ValueError(f"the encoding parameter must be one of {ENCODINGS}; got {encoding!r}")
    m, K = sub.m, sub.K
    factors = []
    if encoding == "growth":
        cards = [K + k + 1 for k in range(m)] + [k + 2 for k in range(m)]
        # restricted growth: (y_0, a_0), then (a_{k-1}, y_k, a_k)
        t0 = np.full((K + 1, 2), -np.inf)
        t0[:K, 0] = 0.0
        t0[K, 1] = 0.0
        factors.append(Factor((0, m), t0))
        for k in range(1, m):
            t = np.full((k + 1, K + k + 1, k + 2), -np.inf)
            for a in range(k + 1):
                t[a, :K, a] = 0.0  # existing cluster
                t[a, K:K + a, a] = 0.0  # a new cluster already opened
                t[a, K + a, a + 1] = 0.0  # opens the next new cluster
            factors.append(Factor((m + k - 1, k, m + k), t))
    else:
        cards = [K + k + 1 for k in range(m)]
    for k in range(m):
        if K:
            factors.append(Factor((k,), np.concatenate([sub.u[k], np.zeros(k + 1)])))
    for k in range(m):
        for l in range(k + 1, m):
            t = np.zeros((K + k + 1, K + l + 1))
            idx = np.arange(K + k + 1)
            t[idx, idx] = sub.f[k, l]
            if encoding == "leader":
                # y_l = K + k (s_l's new cluster starts at s_k) needs y_k = K + k
                keep = t[K + k, K + k]
                t[:, K + k] = -np.inf
                t[K + k, K + k] = keep
            factors.append(Factor((k, l), t))
    # events
    for con in constraints:
        if con[0] == "same":
            k, l = sorted(con[1:])
            t = np.full((K + k + 1, K + l + 1), -np.inf)
            idx = np.arange(K + k + 1)
            t[idx, idx] = 0.0
            factors.append(Factor((k, l), t))
        elif con[0] == "cluster":
            k, ci = con[1], con[2]
            t = np.full(K + k + 1, -np.inf)
            t[ci] = 0.0
            factors.append(Factor((k,), t))
        else:  # alone
            k = con[1]
            t = np.full(K + k + 1, -np.inf)
            t[K:] = 0.0
            factors.append(Factor((k,), t))
            for l in range(m):
                if l == k:
                    continue
                a, b = min(k, l), max(k, l)
                t2 = np.zeros((K + a + 1, K + b + 1))
                idx = np.arange(K + a + 1)
                t2[idx, idx] = -np.inf
                factors.append(Factor((a, b), t2))
    return GraphicalModel(cards, factors)


def event_indicators(sub, events):
    """Indicators of events on configurations of the graphical model of ``sub``.

    Parameters
    ----------
    sub : SubProblem
    events : list of list of tuple
        Each event a list of constraints (output of :func:`check_constraints`), all of
        which must hold (an empty list is the sure event).

    Returns
    -------
    callable
        ``indicators(X) -> ndarray of bool, shape (k, len(events))`` for configurations
        ``X`` (ndarray of int, shape (k, n_vars)) of :func:`build_graphical_model` (either
        encoding: column k < m is the label y_k of s_k, values < K an existing cluster).
        With either encoding a valid configuration's labels determine its partition, so
        ``("same", k, l)`` is y_k = y_l, ``("cluster", k, c)`` is y_k = c and
        ``("alone", k)`` is y_k >= K with no other y_l equal to it; the indicator of an
        event is 1 exactly on the configurations its factors of
        :func:`build_graphical_model` keep.
    """
    m, K = sub.m, sub.K
    events = [list(ev) for ev in events]

    def indicators(X):
        Y = np.asarray(X)[:, :m]
        out = np.ones((Y.shape[0], len(events)), dtype=bool)
        for j, ev in enumerate(events):
            for con in ev:
                if con[0] == "same":
                    out[:, j] &= Y[:, con[1]] == Y[:, con[2]]
                elif con[0] == "cluster":
                    out[:, j] &= Y[:, con[1]] == con[2]
                else:  # alone
                    y = Y[:, con[1]]
                    out[:, j] &= (y >= K) & ((Y == y[:, None]).sum(axis=1) == 1)
        return out
    return indicators


# --------------------------------------------------------------------- a fitted model's sub-model

def _block_factors(model, block):
    """(EncodedBlock, F) for a DataFrame block or an EncodedBlock."""
    if isinstance(block, pd.DataFrame):
        enc = model.encode(block)
    else:
        enc = block
    if not hasattr(enc, "n"):
        raise TypeError("enc_or_df_block must be a pandas DataFrame of one block or an EncodedBlock; "
                        f"got {type(block).__name__}")
    return enc, model.factor_matrix(enc)


def submodel(model, enc_or_df_block, S, *, assignment=None, constraint=None, encoding="leader"):
    """The sub-model of mentions ``S`` of a block, the rest fixed, as a graphical model.

    Parameters
    ----------
    model : PairwiseModel
        Fitted pairwise factor (``encode``, ``factor_matrix``).
    enc_or_df_block : pandas.DataFrame or EncodedBlock
        One block (row order = the indices of ``S`` and ``assignment``).
    S : sequence of int
        Distinct row indices of the sub-model's mentions.
    assignment : array_like of int of shape (n,), optional
        Cluster label per row; rows outside S are fixed at it. Required unless S is
        the whole block.
    constraint : None, tuple or list of tuples, optional
        Event(s) A: ``("same", i, j)`` for y_i = y_j, ``("cluster", i, c)`` for
        y_i = existing cluster label c, ``("alone", i)`` for "i is a cluster of its
        own"; i, j are rows in S.
    encoding : {"leader", "growth"}, default "leader"
        Label-symmetry removal (:mod:`coref.confidence.submodels`): restricted growth with
        auxiliary counts, or the first member of each new cluster as its label. Both
        have the same partition function; DIS bounds are far tighter with "leader"
        (measured in ``benchmarks/bench_coref_confidence.py``).

    Returns
    -------
    sampling.bounds.GraphicalModel
        Partition function Z_S = sum over the set partitions of S (each once), where
        every group is a new cluster or joins one existing cluster, of
        exp(sum of f over newly co-clustered pairs involving S), natural log; with a
        constraint, Z_A. Write it with ``sampling.bounds.write_uai``.

    Raises
    ------
    ValueError
        If S is empty, repeats or exceeds the rows, ``assignment`` is missing or of the
        wrong length, or a constraint names a row outside S or an unknown cluster.
    TypeError
        For non-integer rows or labels, or a malformed constraint.

    Examples
    --------
    >>> import numpy as np
    >>> from coref.confidence import build_graphical_model, subproblem
    >>> from sampling.bounds import log_partition
    >>> F = np.array([[0., 1., -1.], [1., 0., 0.5], [-1., 0.5, 0.]])
    >>> gm = build_graphical_model(subproblem(F, [0, 1, 2]))
    >>> # 5 partitions of 3 mentions: {}, {01}, {02}, {12}, {012}
    >>> w = [0, 1, -1, 0.5, 0.5]
    >>> bool(abs(log_partition(gm) - np.log(np.exp(w).sum())) < 1e-12)
    True

    References
    ----------
    .. [1] Lou, Dechter & Ihler (2017), NIPS, Sec. 2 (graphical model, partition function).
    """
    _, F = _block_factors(model, enc_or_df_block)
    sub = subproblem(F, S, assignment)
    return build_graphical_model(sub, check_constraints(sub, constraint), encoding=encoding)
