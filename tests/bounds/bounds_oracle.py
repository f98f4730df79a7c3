"""Test-only oracles and models of the bounds tests: a brute-force heuristic with the WMB
interface (moved out of ``sampling.bounds.importance``), ln Z by enumeration, and the small
random models several test files share."""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np

from sampling.utils.rng import as_generator
from sampling.bounds.model import Factor, GraphicalModel
from sampling.bounds.proposal import FactorEvaluator, _cards
from sampling.bounds.wmb import WeightedMiniBucket

_NEG_INF = -math.inf


def random_model(n=7, seed=0, zeros=0.15, max_card=3, scale=1.0):
    """Unary factors plus ``n + 2`` random pairwise factors (entries ``scale * N(0, 1)``, a
    share ``zeros`` of them zero)."""
    rng = np.random.default_rng(seed)
    cards = rng.integers(2, max_card + 1, size=n)
    facs = [Factor((i,), rng.normal(size=cards[i])) for i in range(n)]
    for _ in range(n + 2):
        a, b = (int(v) for v in rng.choice(n, 2, replace=False))
        t = scale * rng.normal(size=(cards[a], cards[b]))
        t[rng.random(t.shape) < zeros] = -np.inf
        facs.append(Factor((a, b), t))
    return GraphicalModel(cards, facs)


def chain_model(n=24, seed=3, zeros=0.2):
    """A loopy model of width > 2 (so i_bound=2 is not exact) with some zero entries."""
    rng = np.random.default_rng(seed)
    cards = rng.integers(2, 4, size=n)
    facs = [Factor((i,), rng.normal(size=cards[i])) for i in range(n)]
    for i in range(n):
        for j in (i + 1, i + 3):
            if j < n:
                t = 1.2 * rng.normal(size=(cards[i], cards[j]))
                t[rng.random(t.shape) < zeros] = -np.inf
                facs.append(Factor((i, j), t))
    return GraphicalModel(cards, facs)


def brute_log_z(model):
    """ln Z by enumerating every assignment."""
    xs = np.array(list(itertools.product(*[range(c) for c in model.cards])))
    return float(np.logaddexp.reduce(model.log_value(xs)))


def fit_wmb(model, i_bound, **kw):
    """A fitted WeightedMiniBucket, convergence warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return WeightedMiniBucket(model, i_bound=i_bound, **kw).fit()


class BruteForceHeuristic:
    """Exact (or loosened) heuristic and proposal with the WMB interface, for tiny models.

    With ``eps = 0`` the heuristic is the exact sub-problem value and the proposal is the
    exact conditional, which is what WMB becomes once ``i_bound`` >= the induced width.
    With ``eps > 0`` every conditional is mixed with the uniform distribution,
    ``q = (1 - eps) p + eps / card``, and the heuristic is loosened to
    ``h = v (1 - eps)^-(number of descendants)``, which keeps ``g / q <= h`` (Eq. 8).
    Cost is exponential in the size of each pseudo subtree: use only on <= ~12 binary
    variables.

    Parameters
    ----------
    model : GraphicalModel
    elim_order : sequence of int, optional
        Defaults to ``range(n_vars)``.
    eps : float in [0, 1)
    """

    def __init__(self, model, elim_order=None, eps=0.0):
        if not (0.0 <= eps < 1.0):
            raise ValueError(f"eps must be in [0, 1), got {eps!r}")
        self.model = model
        self.eps = float(eps)
        from sampling.bounds.ordering import PseudoTree

        n = int(len(_cards(model)))
        self.card = np.asarray(_cards(model), dtype=np.int64)
        self.elim_order = np.arange(n) if elim_order is None else np.asarray(elim_order, dtype=np.int64)
        self.pseudo_tree = PseudoTree(model, self.elim_order)
        self.ev = FactorEvaluator(model, self.pseudo_tree.parent)
        parent = self.pseudo_tree.parent
        self.kids = [[] for _ in range(n)]
        for v in range(n):
            if parent[v] >= 0:
                self.kids[parent[v]].append(v)
        self.n_vars = n
        self.i_bound = n
        self.memory_mb_ = 0.0

    def fit(self):
        """Compute ``log_Z_upper`` (exact ln Z when eps = 0); returns self."""
        roots = [v for v in range(self.n_vars) if self.pseudo_tree.parent[v] < 0]
        a = np.zeros(self.n_vars, dtype=np.int64)
        total = self.ev.log_constant
        for r in roots:
            total += float(np.logaddexp.reduce(self.log_arc_weight(r, a) + self.log_heuristic(r, a)))
        self.log_Z_upper = total
        return self

    def _subtree(self, v):
        out, stack = [], [v]
        while stack:
            u = stack.pop()
            out.append(u)
            stack.extend(self.kids[u])
        return out

    def log_arc_weight(self, var, assignment):
        """ln w for var = each value: sum of the log factors in var's bucket."""
        idx = np.flatnonzero(self.ev.bucket == var)
        x = np.repeat(np.asarray(assignment, dtype=np.int64)[None, :], self.card[var], axis=0)
        x[:, var] = np.arange(self.card[var])
        if idx.size == 0:
            return np.zeros(self.card[var])
        return self.ev.log_factor_values(x)[:, idx].sum(axis=1)

    def _log_value(self, var, assignment):
        """Exact ln v (sub-problem below var = x) for each x, by enumeration."""
        desc = self._subtree(var)[1:]
        out = np.empty(self.card[var])
        if not desc:
            return np.zeros(self.card[var])
        grids = np.array(np.meshgrid(*[np.arange(self.card[d]) for d in desc], indexing="ij")).reshape(len(desc), -1).T
        idx = np.concatenate([self.ev.desc_factors[d] for d in self.kids[var]])
        for xv in range(self.card[var]):
            x = np.repeat(np.asarray(assignment, dtype=np.int64)[None, :], grids.shape[0], axis=0)
            x[:, var] = xv
            x[:, desc] = grids
            vals = self.ev.log_factor_values(x)[:, idx].sum(axis=1) if idx.size else np.zeros(len(x))
            out[xv] = np.logaddexp.reduce(vals)
        return out

    def log_heuristic(self, var, assignment):
        """ln h+ for var = each value (exact value, loosened by (1 - eps)^-#descendants)."""
        n_desc = len(self._subtree(var)) - 1
        loosen = -n_desc * math.log1p(-self.eps) if self.eps > 0 else 0.0
        return self._log_value(var, assignment) + loosen

    def log_proposal(self, var, assignment):
        """ln q(var = x | ancestors), normalised."""
        lp = self.log_arc_weight(var, assignment) + self._log_value(var, assignment)
        k = self.card[var]
        tot = np.logaddexp.reduce(lp)
        p = np.full(k, 1.0 / k) if tot == _NEG_INF else np.exp(lp - tot)
        with np.errstate(divide="ignore"):
            return np.log((1.0 - self.eps) * p + self.eps / k)

    def sample(self, n, rng, *, assignment=None, start_vars=None):
        """Samples (n, n_vars) and ln q (n,) of the sampled variables."""
        rng = as_generator(rng)
        base = np.zeros(self.n_vars, dtype=np.int64) if assignment is None else np.asarray(assignment, dtype=np.int64)
        if start_vars is None:
            start_vars = [v for v in range(self.n_vars) if self.pseudo_tree.parent[v] < 0]
        out = np.repeat(base[None, :], n, axis=0)
        log_q = np.zeros(n)
        for i in range(n):
            stack = [int(v) for v in start_vars]
            while stack:
                v = stack.pop()
                lq = self.log_proposal(v, out[i])
                x = rng.choice(self.card[v], p=np.exp(lq) / np.exp(lq).sum())
                out[i, v] = x
                log_q[i] += lq[x]
                stack.extend(self.kids[v])
        return out, log_q
