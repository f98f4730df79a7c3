"""Cheap deterministic first clusterings of big blocks: where Gibbs starts instead of singletons.

From singletons, the first sweep of a block of n mentions races every mention against
up to n arms (one per singleton): at n = 100,000 that sweep alone costs ~6e9 factors.
Any start is valid for a Gibbs chain (its stationary distribution does not depend on
it; the annealed MAP search only starts elsewhere), so big blocks may start from a
clustering that costs far less than a sweep and holds a few thousand clusters:

* :func:`coauthor_greedy` (``init="greedy"``): one pass over the mentions in canonical
  order; a mention joins the best-scoring cluster among those already holding a mention
  that shares a coauthor id with it, when that score is > 0 (the score of a new cluster,
  as Gibbs at temperature 0 would choose among these candidates), else opens a cluster.
* :func:`component_start` (``init="components"``): the coauthor groups ``comp1`` the
  encoding already holds (``coref.encoding.components.coauthor_groups``), no factor.

Both read only the encoded block (and theta / bias for the greedy), no random numbers:
the same block gives the same start in every run, process and kernel.
"""
from __future__ import annotations

import numpy as np

from sampling.utils.kernels import load_kernel

_start = load_kernel("coref.gibbs._start")

__all__ = ["GREEDY_MAX_MEMBERS", "coauthor_greedy", "component_start"]

#: Members of a candidate cluster whose factors :func:`coauthor_greedy` sums: a cluster of
#: at most this many is scored exactly, a larger one by its size times the mean factor of
#: its first ``GREEDY_MAX_MEMBERS`` members (an estimate; the pass stays O(n) in factors).
GREEDY_MAX_MEMBERS = 32


def component_start(enc):
    """Labels of the block's coauthor groups ``comp1``, numbered by first mention.

    Parameters
    ----------
    enc : coref.encoding.EncodedBlock
        One encoded block of n mentions (canonical order).

    Returns
    -------
    ndarray of int64, shape (n,)
        Labels in [0, n): mentions of one ``comp1`` group share one.
    """
    comp = np.asarray(enc.comp1, dtype=np.int64)[: int(enc.n)]
    _, first, inverse = np.unique(comp, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.ravel()]


def coauthor_greedy(enc, theta, bias, *, max_members=GREEDY_MAX_MEMBERS, kernel=None):
    """One greedy pass over an inverted index of coauthor ids: a first clustering in O(n) factors.

    Mention i (canonical order) considers the clusters C already holding an earlier mention
    that shares a coauthor id with it, scores each by

        S_C = sum_{j in C} f_theta(x_i, x_j)              if |C| <= m,
        S_C = |C| / m * sum_{j in first m of C} f(i, j)   otherwise (m = ``max_members``),

    and joins the best when S_C > 0 (ties to the lower label), else opens a new cluster;
    mentions without coauthors stay singletons.  The factor is the model's (Chen &
    Ghahramani 2016, Sec. 5.3); the rule is Gibbs' zero-temperature choice restricted to
    the candidates sharing a coauthor, with sums estimated over at most m members.
    Compiled in ``coref.gibbs._start`` (pure-Python twin ``coref.gibbs._start_py``).

    Parameters
    ----------
    enc : coref.encoding.EncodedBlock
        One encoded block of n mentions (canonical order).
    theta : ndarray of float64, shape (N_FEATURES,)
        The model's weights.
    bias : float
        The block's intercept (``coref.model.block_bias_evals``).
    max_members : int >= 1, default :data:`GREEDY_MAX_MEMBERS`
        Members summed per candidate cluster.
    kernel : module, optional
        ``coref.gibbs._start`` (default) or its twin ``coref.gibbs._start_py``.

    Returns
    -------
    labels : ndarray of int64, shape (n,)
        Labels in [0, n), numbered in order of each cluster's first mention.
    evals : int
        Factors evaluated.

    Raises
    ------
    ValueError
        If ``max_members`` < 1.
    """
    labels = np.zeros(int(enc.n), np.int64)
    _, evals = (kernel or _start).greedy_start(
        enc, np.ascontiguousarray(theta, dtype=np.float64), float(bias), int(max_members), labels)
    return labels, evals
