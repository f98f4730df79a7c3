"""A stream of dynamic importance sampling (DIS) draws with their whole configurations.

:class:`DisStream` runs the rounds of Alg. 1 of [1]_ (expand N_d nodes of the AND/OR search
tree by the upper priority while the memory budget allows, then draw N_l two-step samples
from the tree's proposal q_S) and returns, per sample, the configuration x, ln f(x)/q_S(x)
and ln U_S, the bound of the tree it was drawn from. The weights are those of
:func:`sampling.bounds.run` with ``method="dis"``; the configurations are what estimates of
event probabilities need (:func:`sampling.bounds.marginals`): below a node the search has
solved, x is drawn exactly from the sub-problem (see ``_aobfs.AndOrTree.dis_samples``).

References
----------
.. [1] Lou, Dechter & Ihler (2017), "Dynamic Importance Sampling for Anytime Bounds of the
   Partition Function", NIPS. Alg. 1, Eq. 10-14.
"""
from __future__ import annotations

import numpy as np

from ._ladder import wmb_evaluator
from .aobfs import AOBFS
from .proposal import FastProposal

__all__ = ["DisStream", "MAX_TRIES", "N_EXPANSIONS", "N_SAMPLES", "SEARCH_SHARE"]

#: N_d of Alg. 1: node expansions per round (the default of :func:`sampling.bounds.run`).
N_EXPANSIONS = 10
#: N_l of Alg. 1: samples per round.
N_SAMPLES = 1
#: Most of the sampling time :meth:`DisStream.search_first` may spend searching before the
#: first draw (two-stage DIS, Sec. 3 of [1]_); it stops sooner when the tree is full.
SEARCH_SHARE = 0.5
#: Rejection tries per solved sub-problem of a draw before it keeps its last try (counted in
#: ``n_capped``; the draws are then no longer exact). The acceptance rate of a sub-problem is
#: Z_s / H_s, its value over its WMB bound.
MAX_TRIES = 100_000


class DisStream:
    """DIS draws (Alg. 1 of [1]_) with configurations, from a fitted weighted mini-bucket.

    Parameters
    ----------
    wmb : WeightedMiniBucket
        Fitted, with lookup tables (its heuristic and proposal).
    model : GraphicalModel
        The model ``wmb`` bounds.
    memory_mb : float
        Budget (MiB) of the WMB tables and the search nodes together; the search gets what
        the WMB leaves (at least 5%), as in :func:`sampling.bounds.run`.
    n_expansions, n_samples : int
        N_d and N_l of Alg. 1.
    max_tries : int
        See :data:`MAX_TRIES`.
    backend : {"compiled", "python"}
        The compiled tree and proposal, or their pure-Python twins (slow; for tests).

    Attributes
    ----------
    search : AOBFS
        The search tree (it grows as :meth:`draw` runs rounds).
    n_tries, n_subproblems, n_capped : int
        Rejection tries, solved sub-problems drawn, and those kept after ``max_tries``.

    Raises
    ------
    AttributeError
        If ``wmb`` has no lookup tables (a duck-typed heuristic).
    """

    def __init__(self, wmb, model, memory_mb, *, n_expansions=N_EXPANSIONS, n_samples=N_SAMPLES,
                 max_tries=MAX_TRIES, backend="compiled"):
        if backend not in ("compiled", "python"):
            raise ValueError(f"the backend parameter must be 'compiled' or 'python'; got {backend!r} instead")
        self.fast = FastProposal(wmb, wmb_evaluator(wmb, model), pure_python=backend == "python")
        wmb_mb = float(getattr(wmb, "memory_mb_", 0.0) or 0.0)
        search_mb = max(float(memory_mb) - wmb_mb, 0.05 * float(memory_mb))
        self.search = AOBFS(model, wmb=wmb, memory_mb=float(memory_mb), search_memory_mb=search_mb,
                            backend=backend).fit(max_expansions=0)
        self.n_vars = int(self.fast.n_vars)
        self.n_expansions, self.n_samples = int(n_expansions), int(n_samples)
        self.max_tries = int(max_tries)
        self._counts = np.zeros(3, dtype=np.int64)

    n_tries = property(lambda self: int(self._counts[0]))
    n_subproblems = property(lambda self: int(self._counts[1]))
    n_capped = property(lambda self: int(self._counts[2]))

    @property
    def log_Z_upper(self):
        """ln U_S of the current tree (a deterministic upper bound on ln Z)."""
        return float(self.search.log_Z_upper_)

    def search_first(self, stop, max_expansions=None):
        """Expand the tree before sampling (the first stage of two-stage DIS, Sec. 3 of [1]_)
        until it is full (the memory budget) or solved, ``stop()`` is true, or
        ``max_expansions`` (None: no limit) are done; returns the expansions done.

        When the estimate is needed only at the end (not anytime), every draw then comes
        from the tightest tree the memory allows; :meth:`draw` goes on expanding N_d nodes
        per round if the tree can still grow. The tree depends only on the number of
        expansions, never on the draws, so the draws stay independent.
        """
        done, cap = 0, float("inf") if max_expansions is None else int(max_expansions)
        while done < cap and self.search.can_expand and not stop():
            k = self.search.expand(int(min(4096, cap - done)))
            done += k
            if k == 0:
                break
        return done

    def draw(self, k, gen):
        """About ``k`` more draws: ``ceil(k / n_samples)`` rounds of Alg. 1.

        Parameters
        ----------
        k : int >= 1
        gen : numpy.random.Generator
            Gives each draw a row of uniforms (the tree's choices and the proposal's draws)
            and a 64-bit seed (the rejection draws below solved nodes).

        Returns
        -------
        X : ndarray of int64, shape (m, n_vars)
            Configurations (a row of weight 0 may be incomplete).
        log_w, log_U : ndarray of float, shape (m,)
            ln f(x)/q_S(x) and ln U_S of each draw, with ``log_w <= log_U``.
        """
        rounds = -(-int(k) // self.n_samples)
        m = rounds * self.n_samples
        u = self.fast.uniforms(gen, m, self.n_vars)
        seeds = gen.integers(0, 2**63, size=m, dtype=np.uint64)
        X = np.empty((m, self.n_vars), dtype=np.int64)
        log_w, log_U = np.empty(m), np.empty(m)
        tree = self.search.tree
        e0 = tree.n_expansions
        got = tree.dis_samples(self.fast.kernel, rounds, self.n_expansions, self.n_samples, -1, u, seeds,
                               self.max_tries, X, log_w, log_U, self._counts)
        self.search.record_expansions(tree.n_expansions - e0)
        return X[:got], log_w[:got], log_U[:got]
