"""A learned correction of a block's prior shift: a small regression tree on the block's factor statistics.

The block prior (:mod:`coref.model.block_prior`) shifts every factor of block b by d_b, the
change of the log prior odds of a co-referent pair that classify-and-count estimates from the
block's own pair probabilities.  That is the right shift for the pair probabilities, not for
the clustering: the Gibbs MAP of a sum of pairwise log-odds merges the minor authors of a
block dominated by one (classify-and-count raises d_b there: most pairs are co-referent) and
leaves apart the sub-clusters of common names whose mentions have weak links.  Measured on
the held-out blocks of grouped 5-fold CV over ``aminer_na`` + ``aminer_dblp_dev`` (each
fold's model, every block clustered at d_b + dd for dd in -3, -2.5, ..., 3): the best dd of
a block is 0 for some, -3 for others, +3 for others; choosing it per block by an oracle
would raise B3 F1 from 0.892 to 0.925; one global dd does nothing (0.888-0.892 for dd in
-1..1).  A depth-2 tree on three statistics of the block's factors at the pooled intercept,
fitted on the other folds' blocks, recovered a part: B3 F1 0.8918 -> 0.8967 over both sets,
0.9017 -> 0.9079 on the dev names, 0.8874 -> 0.8913 on the others (same split in every fold:
the median of each mention's best factor, then the block size or the spread of its factors).

The statistics (:data:`STATISTICS`, natural-log odds):

* ``log_n``: log of the number of mentions;
* ``f_std``: standard deviation of f over the block's pairs;
* ``top1``: median over mentions of max_j f(i, j), the mention's strongest link.

They need every pair of the block (n(n-1)/2 factors, counted in the block's factor
evaluations), so the tree applies to blocks of 3 to :data:`SHIFT_TREE_MAX_N` mentions that
use the small-block weights (the training blocks are of that kind); other blocks keep d_b.

``coref fit`` fits the tree (:func:`fit_shift_tree`) on cross-fitted held-out blocks:
:func:`coref.training.shift_tree_table` clusters each at every dd of :data:`SHIFT_GRID` with
a model that never saw it, and the target of a block is the softmax-weighted mean of the dd
by B3 F1 (:func:`soft_best_shift`).  The tree is saved in model.json (``shift_tree``) as
node arrays (:meth:`ShiftTree.to_dict`), checked field by field when read back.
"""
from __future__ import annotations

import dataclasses
import math
import weakref

import numpy as np

from coref.model.block_prior import upper_pairs
from sampling.utils.kernels import load_kernel

_factors = load_kernel("coref.factors._factors")

__all__ = ["ShiftTree", "STATISTICS", "SHIFT_GRID", "SHIFT_TREE_MAX_N", "SHIFT_TREE_MIN_N", "block_statistics",
           "take_factor_matrix", "peek_factor_matrix",
           "statistics_evals", "fit_shift_tree", "soft_best_shift", "TREE_DEPTH", "TREE_MIN_LEAF",
           "SOFT_BEST_TEMPERATURE"]

#: The block statistics the tree reads, in order (:func:`block_statistics`).
STATISTICS = ("log_n", "f_std", "top1")
#: The shift corrections dd tried per training block (natural-log odds).
SHIFT_GRID = tuple(float(x) for x in np.arange(-3.0, 3.01, 0.5))
#: Largest block the tree applies to (its statistics take every pair: n(n-1)/2 factors).
SHIFT_TREE_MAX_N = 999
#: Smallest block the tree applies to (a block of 2 has one pair: no spread, no median).
SHIFT_TREE_MIN_N = 3
#: Depth and smallest leaf (training blocks) of the tree; measured by nested grouped CV (module docstring):
#: depth 1 / 2 / 3 gave B3 F1 0.8944 / 0.8967 / 0.8968 (leaves of 20 blocks), depth 4 0.8955.
TREE_DEPTH = 2
TREE_MIN_LEAF = 20
#: Temperature (in B3 F1) of the softmax over the grid that makes a block's target (:func:`soft_best_shift`).
SOFT_BEST_TEMPERATURE = 0.02

#: The statistics of each live encoding, with the weights they were computed for (weak keys).
_STATS = weakref.WeakKeyDictionary()
#: The factor matrix of the last block whose statistics were computed, until taken (:func:`take_factor_matrix`):
#: ``(weakref to the encoding, weights key, matrix)``; one block's at most.
_LAST = [None]


def statistics_evals(n):
    """Pairwise factors :func:`block_statistics` evaluates for a block of ``n`` mentions (0 outside the tree's range)."""
    return n * (n - 1) // 2 if SHIFT_TREE_MIN_N <= n <= SHIFT_TREE_MAX_N else 0


def block_statistics(enc, theta, bias):
    """The :data:`STATISTICS` of the block ``enc`` under the factors (``theta``, ``bias``), ndarray of shape (3,).

    ``bias`` is the intercept before the block's prior shift.  Computed once per encoding and
    weights (cached while the encoding lives).

    Raises
    ------
    ValueError
        If the block has fewer than :data:`SHIFT_TREE_MIN_N` or more than :data:`SHIFT_TREE_MAX_N` mentions.
    """
    n = int(enc.n)
    if not SHIFT_TREE_MIN_N <= n <= SHIFT_TREE_MAX_N:
        raise ValueError(f"block_statistics: blocks of {SHIFT_TREE_MIN_N} to {SHIFT_TREE_MAX_N} mentions; got {n}")
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    key = (theta.tobytes(), float(bias))
    hit = _STATS.get(enc)
    if hit is not None and hit[0] == key:
        return hit[1].copy()
    f = np.zeros((n, n))
    _factors.factor_matrix(enc, theta, float(bias), f)
    iu = upper_pairs(n)
    np.fill_diagonal(f, -np.inf)
    out = np.array([math.log(n), float(np.std(f[iu])), float(np.median(f.max(axis=1)))])
    np.fill_diagonal(f, 0.0)
    _STATS[enc] = (key, out)
    _LAST[0] = (weakref.ref(enc), key, f)
    return out.copy()


def peek_factor_matrix(enc, theta, bias):
    """The matrix :func:`take_factor_matrix` would give, left in place (None when there is none); read only.

    The block's rate (:meth:`coref.model.PairwiseModel.rate_factors`) reads its pairs from it:
    the factor kernel gives a pair the same value bit for bit in both (``factor_matrix``,
    ``pair_factors``), so each of the block's factors is evaluated once.
    """
    last = _LAST[0]
    if last is None or last[0]() is not enc:
        return None
    if last[1] != (np.ascontiguousarray(theta, dtype=np.float64).tobytes(), float(bias)):
        return None
    return last[2]


def take_factor_matrix(enc, theta, bias):
    """The n x n factor matrix (zero diagonal) that :func:`block_statistics` just computed for ``enc`` under
    (``theta``, ``bias``), or None; each matrix is given once (the exact sampler reuses it for its cache
    instead of evaluating the block's factors again)."""
    last = _LAST[0]
    if last is None or last[0]() is not enc:
        return None
    f = peek_factor_matrix(enc, theta, bias)
    _LAST[0] = None                      # given once, and dropped when asked for under other weights
    return f


def soft_best_shift(f1, grid=SHIFT_GRID, temperature=SOFT_BEST_TEMPERATURE):
    """Per block, the mean of ``grid`` weighted by softmax(B3 F1 / ``temperature``): a smooth best dd.

    Parameters
    ----------
    f1 : array_like of shape (n_blocks, len(grid))
        B3 F1 of each block clustered at each shift correction.

    Returns
    -------
    ndarray of shape (n_blocks,)
        Natural-log odds.
    """
    f1 = np.asarray(f1, dtype=float)
    w = np.exp((f1 - f1.max(axis=1, keepdims=True)) / float(temperature))
    return (w * np.asarray(grid, float)).sum(axis=1) / w.sum(axis=1)


@dataclasses.dataclass(frozen=True)
class ShiftTree:
    """A regression tree dd(statistics) added to a block's prior shift (natural-log odds).

    Attributes
    ----------
    statistics : tuple of str
        The inputs, :data:`STATISTICS`.
    feature, left, right : tuple of int
        Per node: the statistic split on and the child nodes (-1 at a leaf).
    threshold, value : tuple of float
        Per node: go left when statistic <= threshold; the leaf's dd.
    n_blocks : int
        Training blocks.
    """

    statistics: tuple
    feature: tuple
    threshold: tuple
    left: tuple
    right: tuple
    value: tuple
    n_blocks: int = 0

    def predict(self, x):
        """dd of one block's statistics ``x`` (array_like of shape (3,)), natural-log odds."""
        x = np.asarray(x, dtype=float)
        node = 0
        while self.left[node] >= 0:
            node = self.left[node] if x[self.feature[node]] <= self.threshold[node] else self.right[node]
        return float(self.value[node])

    def to_dict(self):
        """JSON-able dict (model.json ``shift_tree``)."""
        return {"statistics": list(self.statistics), "feature": [int(v) for v in self.feature],
                "threshold": [float(v) for v in self.threshold], "left": [int(v) for v in self.left],
                "right": [int(v) for v in self.right], "value": [float(v) for v in self.value],
                "n_blocks": int(self.n_blocks)}

    @classmethod
    def from_dict(cls, d, *, where="shift tree"):
        """Validate a dict written by :meth:`to_dict`, field by field.

        Raises
        ------
        ValueError
            Naming ``where`` and the field: not an object, unknown or missing fields, other
            statistics than :data:`STATISTICS`, arrays of other lengths or types, non-finite
            numbers, a split on no statistic, children that do not form a tree below node 0
            (each child after its parent, each node reached once, both children or none).
        """
        if not isinstance(d, dict):
            raise ValueError(f"{where}: expected a JSON object; got {type(d).__name__}")
        keys = {"statistics", "feature", "threshold", "left", "right", "value", "n_blocks"}
        if set(d) != keys:
            raise ValueError(f"{where}: fields must be {sorted(keys)}; got {sorted(d)}")
        if d["statistics"] != list(STATISTICS):
            raise ValueError(f"{where}: 'statistics' must be {list(STATISTICS)}; got {d['statistics']!r}")

        def ints(name):
            v = d[name]
            if not (isinstance(v, list) and v and all(isinstance(x, int) and not isinstance(x, bool) for x in v)):
                raise ValueError(f"{where}: {name!r} must be a non-empty list of integers")
            return v

        def floats(name):
            v = d[name]
            if not (isinstance(v, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                and math.isfinite(x) for x in v)):
                raise ValueError(f"{where}: {name!r} must be a list of finite numbers")
            return [float(x) for x in v]

        feature, left, right = ints("feature"), ints("left"), ints("right")
        threshold, value = floats("threshold"), floats("value")
        m = len(feature)
        if not all(len(a) == m for a in (left, right, threshold, value)):
            raise ValueError(f"{where}: 'feature', 'threshold', 'left', 'right' and 'value' must have one entry "
                             "per node")
        seen = [False] * m
        seen[0] = True
        for i in range(m):
            if (left[i] < 0) != (right[i] < 0):
                raise ValueError(f"{where}: node {i} has one child; a node has both or none")
            if left[i] >= 0:
                if not 0 <= feature[i] < len(STATISTICS):
                    raise ValueError(f"{where}: node {i} splits on statistic {feature[i]}; there are "
                                     f"{len(STATISTICS)}")
                for c in (left[i], right[i]):
                    if not i < c < m or seen[c]:
                        raise ValueError(f"{where}: node {i}'s child {c} is not a new node after it")
                    seen[c] = True
        if not all(seen):
            raise ValueError(f"{where}: node(s) {[i for i in range(m) if not seen[i]]} are not reached from node 0")
        nb = d["n_blocks"]
        if not (isinstance(nb, int) and not isinstance(nb, bool) and nb >= 0):
            raise ValueError(f"{where}: 'n_blocks' must be an integer >= 0; got {nb!r}")
        return cls(tuple(STATISTICS), tuple(feature), tuple(threshold), tuple(left), tuple(right), tuple(value), nb)


def fit_shift_tree(statistics, f1, n_mentions, grid=SHIFT_GRID, *, depth=TREE_DEPTH, min_leaf=TREE_MIN_LEAF):
    """Fit the :class:`ShiftTree` on training blocks clustered at every shift correction of ``grid``.

    Parameters
    ----------
    statistics : array_like of shape (n_blocks, 3)
        :func:`block_statistics` of each block (under the model that clustered it).
    f1 : array_like of shape (n_blocks, len(grid))
        B3 F1 of each block at each correction.
    n_mentions : array_like of shape (n_blocks,)
        Block sizes (the sample weights: B3 is a mean over mentions).
    depth, min_leaf : int
        ``sklearn.tree.DecisionTreeRegressor``'s ``max_depth`` and ``min_samples_leaf``.

    Returns
    -------
    ShiftTree or None
        None when there are fewer than 2 * ``min_leaf`` blocks (no split could be trusted).

    Raises
    ------
    ValueError
        If the shapes disagree or a value is not finite.
    """
    from sklearn.tree import DecisionTreeRegressor

    x = np.asarray(statistics, dtype=float)
    f1 = np.asarray(f1, dtype=float)
    w = np.asarray(n_mentions, dtype=float)
    if x.ndim != 2 or x.shape[1] != len(STATISTICS) or f1.shape != (len(x), len(grid)) or w.shape != (len(x),):
        raise ValueError(f"fit_shift_tree: statistics (n, {len(STATISTICS)}), f1 (n, {len(grid)}) and n_mentions "
                         f"(n,); got {x.shape}, {f1.shape}, {w.shape}")
    if not (np.isfinite(x).all() and np.isfinite(f1).all() and np.isfinite(w).all()):
        raise ValueError("fit_shift_tree: statistics, f1 and n_mentions must be finite")
    if len(x) < 2 * min_leaf:
        return None
    t = DecisionTreeRegressor(max_depth=depth, min_samples_leaf=min_leaf, random_state=0)
    t.fit(x, soft_best_shift(f1, grid), sample_weight=w)
    tr = t.tree_
    return ShiftTree(tuple(STATISTICS), tuple(int(v) if v >= 0 else 0 for v in tr.feature),
                     tuple(float(v) for v in tr.threshold), tuple(int(v) for v in tr.children_left),
                     tuple(int(v) for v in tr.children_right), tuple(float(v) for v in tr.value[:, 0, 0]), len(x))
