"""Importance sampling for bounds on Z: WMB-IS, the search-tree proposal q_S, Eq. 13-14.

* :func:`sample_wmb_is` draws from the WMB mixture proposal q(x) (Eq. 7 of [1]_, the
  proposal of [2]_); the weights f(x)/q(x) are bounded by the WMB bound h+ (Eq. 8).
* :func:`sample_search_tree` is the two-step sampler of Sec. 3 / Alg. 1 (TWOSTEPSAMPLING):
  a partial solution tree of the AOBFS tree S is drawn top-down (OR node -> child c with
  probability w_c u_c / u_n, Prop. 1), and below each open frontier node the rest is
  drawn from the WMB proposal. Solved nodes are Rao-Blackwellised: their exact value
  enters the weight, nothing is sampled below them. The weight is
  ``U_S * prod_open g(x>n|x<=n) / (h+_n q(x>n|x<=n))`` (Eq. 10-12), so ``f/q_S <= U_S``.
* :class:`ImportanceAccumulator` keeps the harmonic-mean weighted estimator of Eq. 13 and
  the empirical-Bernstein bounds of Theorem 1 over samples from changing proposals,
  with the Markov lower bound of [3]_ while the Bernstein one is vacuous.
* :class:`BruteForceHeuristic` is an exact (or deliberately loosened) oracle with the
  WMB interface for tiny models, the reference twin used by the tests.

References
----------
.. [1] Lou, Dechter & Ihler (2017), "Dynamic Importance Sampling for Anytime Bounds of
   the Partition Function", NIPS. Eq. 6-14, Prop. 1-2, Theorem 1, Alg. 1.
.. [2] Liu, Fisher & Ihler (2015), "Probabilistic Variational Bounds for Graphical
   Models", NIPS.
.. [3] Gogate & Dechter (2011), "Sampling-based lower bounds for counting queries".
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .._rng import as_generator

__all__ = [
    "BruteForceHeuristic",
    "FactorEvaluator",
    "FastProposal",
    "constant_bucket",
    "dis_rounds",
    "ImportanceAccumulator",
    "factor_arrays",
    "greedy_log_lower",
    "sample_search_tree",
    "sample_wmb_is",
]

_NEG_INF = -math.inf
# relative slack allowed when checking f/q <= U (floating-point rounding of logs)
_BOUND_TOL = 1e-7


# --------------------------------------------------------------------------- factors
def _cards(model):
    """Cardinalities of ``model`` (``cards``, or ``card`` for duck-typed models)."""
    c = getattr(model, "cards", None)
    return getattr(model, "card") if c is None else c


def factor_arrays(model):
    """The factors of ``model`` as ``(scope, log_table)`` pairs.

    Parameters
    ----------
    model : GraphicalModel
        Each factor has a ``scope`` (variable indices) and a natural-log table of shape
        ``card[scope]``.

    Returns
    -------
    list of (tuple of int, ndarray)
    """
    out = []
    for f in model.factors:
        scope = getattr(f, "scope", None)
        if scope is None:
            scope = getattr(f, "vars")
        table = None
        for name in ("log_table", "log_values", "log_potential", "values"):
            table = getattr(f, name, None)
            if table is not None:
                break
        if table is None:
            raise TypeError(f"cannot read the log table of factor {f!r}")
        scope = tuple(int(v) for v in scope)
        out.append((scope, np.asarray(table, dtype=float).reshape([int(_cards(model)[v]) for v in scope])))
    return out


class FactorEvaluator:
    """Vectorised log factor values and bucket sums for full or partial assignments.

    Each factor belongs to the bucket of its scope variable deepest in the pseudo tree
    (the first one eliminated); the arc weight of an AND node for variable k is the sum of
    its bucket's log factors (Sec. 2.1 of [1]_).

    Parameters
    ----------
    model : GraphicalModel
    parent : ndarray of shape (n_vars,) of int
        Pseudo-tree parent of each variable, -1 for roots.
    const_bucket : int, optional
        Bucket holding the empty-scope (constant) factors, as the heuristic does it (see
        :func:`constant_bucket`); None = constants belong to no bucket
        (``log_constant``).
    """

    def __init__(self, model, parent, const_bucket=None):
        parent = np.asarray(parent, dtype=np.int64)
        n_vars = parent.shape[0]
        depth = np.full(n_vars, -1, dtype=np.int64)
        for v in range(n_vars):  # depth by walking up (memoised)
            path = []
            u = v
            while u >= 0 and depth[u] < 0:
                path.append(u)
                u = parent[u]
            d = -1 if u < 0 else depth[u]
            for w in reversed(path):
                d += 1
                depth[w] = d
        self.depth = depth
        facs = factor_arrays(model)
        self.log_constant = 0.0
        scopes, tables, buckets = [], [], []
        card_all = np.asarray(_cards(model), dtype=np.int64)
        for scope, table in facs:
            if len(scope) == 0:
                if const_bucket is None:
                    self.log_constant += float(table.reshape(-1)[0])
                    continue
                # the heuristic files constants in a bucket: do the same
                scope = (int(const_bucket),)
                table = np.full(int(card_all[const_bucket]), float(table.reshape(-1)[0]))
            scopes.append(scope)
            tables.append(table.reshape(-1))
            buckets.append(max(scope, key=lambda v: depth[v]))
        n_f = len(scopes)
        arity = max((len(s) for s in scopes), default=1)
        self.scope_pad = np.zeros((n_f, arity), dtype=np.int64)
        self.strides = np.zeros((n_f, arity), dtype=np.int64)
        sizes = np.array([t.size for t in tables], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if n_f else np.zeros(0, np.int64)
        self.flat = np.concatenate(tables) if n_f else np.zeros(0)
        card = np.asarray(_cards(model), dtype=np.int64)
        for i, scope in enumerate(scopes):
            st = 1
            for j in range(len(scope) - 1, -1, -1):
                self.scope_pad[i, j] = scope[j]
                self.strides[i, j] = st
                st *= card[scope[j]]
        self.bucket = np.asarray(buckets, dtype=np.int64)
        # factors whose bucket lies in the pseudo subtree of each variable
        kids = [[] for _ in range(n_vars)]
        for v in range(n_vars):
            if parent[v] >= 0:
                kids[parent[v]].append(v)
        own = [[] for _ in range(n_vars)]
        for i, b in enumerate(buckets):
            own[b].append(i)
        order = np.argsort(-depth, kind="stable")  # deepest first
        desc = [None] * n_vars
        for v in order:
            parts = [np.asarray(own[v], dtype=np.int64)] + [desc[c] for c in kids[v]]
            desc[v] = np.concatenate(parts) if len(parts) > 1 else parts[0]
        self.desc_factors = desc
        self.n_vars = n_vars

    def log_factor_values(self, x):
        """Log value of every (non-constant) factor, shape (n, n_factors), for x (n, n_vars)."""
        x = np.asarray(x, dtype=np.int64)
        idx = self.offsets[None, :] + np.einsum("nfa,fa->nf", x[:, self.scope_pad], self.strides)
        return self.flat[idx]

    def log_value(self, x):
        """ln f(x) for full assignments x of shape (n, n_vars); returns (n,)."""
        vals = self.log_factor_values(x)
        with np.errstate(invalid="ignore"):
            return vals.sum(axis=1) + self.log_constant

    def log_subtree_cost(self, x, start_vars):
        """ln g(x below) = sum of the log factors in the buckets of the pseudo subtrees of
        ``start_vars`` (the conditional cost of Sec. 2.1), for one assignment x (n_vars,)."""
        if len(start_vars) == 1:
            idx = self.desc_factors[int(start_vars[0])]
        else:
            idx = np.concatenate([self.desc_factors[int(v)] for v in start_vars])
        if idx.size == 0:
            return 0.0
        xs = np.asarray(x, dtype=np.int64)
        flat_idx = self.offsets[idx] + (xs[self.scope_pad[idx]] * self.strides[idx]).sum(axis=1)
        return float(self.flat[flat_idx].sum())


def constant_bucket(wmb, model, parent):
    """The pseudo-tree root whose WMB arc weights hold the empty-scope factors, or None.

    The arc-weight contract says "the factors in var's bucket" but not where constants
    go; this compares each root's arc weights with its own factors to find out.
    """
    facs = factor_arrays(model)
    const = sum(float(t.reshape(-1)[0]) for sc, t in facs if len(sc) == 0)
    if not any(len(sc) == 0 for sc, _ in facs) or const == 0.0:
        return None
    ev = FactorEvaluator(model, parent)
    n = len(parent)
    zero = np.zeros(n, dtype=np.int64)
    for r in np.flatnonzero(np.asarray(parent) < 0):
        r = int(r)
        card = int(_cards(model)[r])
        x = np.zeros((card, n), dtype=np.int64)
        x[:, r] = np.arange(card)
        idx = np.flatnonzero(ev.bucket == r)
        own = ev.log_factor_values(x)[:, idx].sum(axis=1) if idx.size else np.zeros(card)
        theirs = np.asarray(wmb.log_arc_weight(r, zero), dtype=float)
        fin = np.isfinite(own) & np.isfinite(theirs)
        if fin.any() and np.allclose(theirs[fin] - own[fin], const, atol=1e-9 * max(1.0, abs(const))):
            return r
    return None


# --------------------------------------------------------------------------- fast proposal
def _load_kernel(pure_python=False):
    if pure_python:
        from . import _aobfs_py as mod
    else:
        from .._build import load_kernel

        mod = load_kernel("sampling.bounds._aobfs")
    return mod.ProposalKernel


class FastProposal:
    """One compiled call per draw: WMB mixture proposal (Eq. 7) below given pseudo-tree
    nodes, returning ln q of the draw and ln g, the sum of the drawn variables' bucket
    factors (their arc weights), as used in the q_S weights of Eq. 10-12.

    It reads the mixture components that :class:`WeightedMiniBucket` prepared for its own
    ``sample`` (the ``_prop`` tables) without copying them.

    Parameters
    ----------
    wmb : WeightedMiniBucket
        Fitted.
    evaluator : FactorEvaluator
        Built on ``wmb.model`` with the WMB pseudo tree.
    pure_python : bool, default False
        Use the reference twin ``_aobfs_py`` (slow; for tests).

    Raises
    ------
    AttributeError
        If ``wmb`` does not expose the proposal tables (use ``wmb.sample`` instead).
    """

    def __init__(self, wmb, evaluator, *, pure_python=False):
        props = wmb._prop  # AttributeError -> caller falls back to wmb.sample
        parent = np.asarray(wmb.pseudo_tree.parent, dtype=np.int64)
        n = parent.shape[0]
        cards = np.ascontiguousarray(np.asarray(_cards(wmb.model), dtype=np.int64))
        kids = [[] for _ in range(n)]
        roots = []
        for v in range(n):
            (roots if parent[v] < 0 else kids[parent[v]]).append(v)
        pre = []
        size = np.zeros(n, dtype=np.int64)
        stack = list(reversed(roots))
        while stack:
            v = stack.pop()
            pre.append(v)
            stack.extend(reversed(kids[v]))
        pre = np.asarray(pre, dtype=np.int64)
        pos = np.empty(n, dtype=np.int64)
        pos[pre] = np.arange(n)
        for v in pre[::-1]:
            size[v] = 1 + sum(size[c] for c in kids[v])
        comp_ptr, comp_lw, comp_kstride, comp_vptr, comp_vars, comp_strides, tables = [0], [], [], [0], [], [], []
        for k in range(n):
            for lw, look in props[k]:
                comp_lw.append(float(lw))
                comp_kstride.append(int(look.kstride) if look.has_k else 0)
                comp_vars.extend(int(u) for u in look.vars)
                comp_strides.extend(int(u) for u in look.strides)
                comp_vptr.append(len(comp_vars))
                tables.append(np.ascontiguousarray(look.flat, dtype=np.float64))
            comp_ptr.append(len(comp_lw))
        ev = evaluator
        order = np.argsort(ev.bucket, kind="stable")
        counts = np.bincount(ev.bucket, minlength=n) if ev.bucket.size else np.zeros(n, dtype=np.int64)
        bucket_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        arity = ev.scope_pad.shape[1] if ev.scope_pad.ndim == 2 else 1
        n_f = ev.scope_pad.shape[0]
        i64 = lambda a: np.ascontiguousarray(np.asarray(a, dtype=np.int64))  # noqa: E731
        f64 = lambda a: np.ascontiguousarray(np.asarray(a, dtype=np.float64))  # noqa: E731
        self.kernel = _load_kernel(pure_python)(
            cards, i64(pre), i64(pos), i64(size), i64(comp_ptr), f64(comp_lw), i64(comp_kstride),
            i64(comp_vptr), i64(comp_vars), i64(comp_strides), tables, bucket_ptr, i64(order),
            i64(ev.offsets), i64(np.arange(n_f + 1) * arity), i64(ev.scope_pad.reshape(-1)),
            i64(ev.strides.reshape(-1)), f64(ev.flat) if ev.flat.size else np.zeros(1),
            np.zeros(max(int(cards.max(initial=1)), 1)))
        self.size = size
        self.roots = np.asarray(roots, dtype=np.int64)
        self.n_vars = n
        self.log_constant = ev.log_constant
        self._ubuf = np.empty(0)

    def uniforms(self, rng, rows, cols):
        """``rng.random((rows, cols))`` written into a buffer kept between calls: the same
        numbers, without the kernel zeroing fresh pages for each batch (a batch of 1024
        rows is about 8 MB on a pedigree). The result is overwritten by the next call."""
        need = int(rows) * int(cols)
        if self._ubuf.size < need:
            self._ubuf = np.empty(need)
        u = self._ubuf[:need].reshape(int(rows), int(cols))
        rng.random(out=u)
        return u

    def sample(self, rng, assignment, start_vars):
        """Draw the pseudo subtrees of ``start_vars`` (ancestors set in ``assignment``).

        Returns
        -------
        x : ndarray of int64 of shape (n_vars,)
        log_q : float
            ln q of the drawn variables given the rest.
        log_g : float
            Sum of the log factors in the drawn variables' buckets.
        """
        x = np.array(assignment, dtype=np.int64)
        starts = np.ascontiguousarray(start_vars, dtype=np.int64)
        u = rng.random(int(self.size[starts].sum()))
        log_q, log_g = self.kernel.sample(starts, x, u)
        return x, log_q, log_g


def make_fast_proposal(wmb, evaluator):
    """A :class:`FastProposal` for ``wmb``, or None (with a PerformanceWarning) if the WMB
    does not expose its proposal tables (a duck-typed heuristic). An unbuilt compiled kernel
    raises the ImportError of :func:`sampling._build.load_kernel`."""
    from ..exceptions import PerformanceWarning

    try:
        return FastProposal(wmb, evaluator)
    except AttributeError as exc:  # a duck-typed WMB without tables; an unbuilt kernel raises
        warnings.warn(f"compiled proposal sampler unavailable ({exc}); using wmb.sample (slower)",
                      PerformanceWarning, stacklevel=2)
        return None


# --------------------------------------------------------------------------- samplers
def sample_wmb_is(wmb, evaluator, n, rng, fast=None):
    """Draw ``n`` samples from the WMB proposal and return their log importance weights.

    Parameters
    ----------
    wmb : WeightedMiniBucket
        Fitted; ``wmb.sample(n, rng)`` gives full samples and ln q.
    evaluator : FactorEvaluator
    n : int
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of shape (n,)
        ln f(x_i) - ln q(x_i), each <= ``wmb.log_Z_upper`` (Eq. 8 of [1]_).
    """
    if fast is not None:
        # one compiled call for the batch; row i of the uniforms is what the i-th
        # ``fast.sample(rng, zeros, roots)`` call would draw, so the draws are the same
        n = int(n)
        out = np.empty(n)
        u = fast.uniforms(rng, n, int(fast.size[fast.roots].sum()))
        fast.kernel.sample_batch(fast.roots, u, np.zeros(fast.n_vars, dtype=np.int64),
                                 float(fast.log_constant), out)
        return out
    x, log_q = wmb.sample(int(n), rng)
    return evaluator.log_value(x) - np.asarray(log_q, dtype=float)


def sample_search_tree(search, evaluator, n, rng, fast=None):
    """Two-step sampling from the search tree S (Sec. 3, Alg. 1 TWOSTEPSAMPLING of [1]_).

    Parameters
    ----------
    search : AOBFS
        Set up (``fit`` called); its current tree S defines q_S.
    evaluator : FactorEvaluator
    n : int
        Number of samples (all from the same q_S).
    rng : numpy.random.Generator
    fast : FastProposal, optional
        Compiled sampler; default ``wmb.sample``.

    Returns
    -------
    log_w : ndarray of shape (n,)
        ln f(x)/q_S(x); each <= ``log_U`` (Prop. 2).
    log_U : float
        ln U_S at sampling time.
    """
    wmb = search.wmb
    log_U = search.log_Z_upper_
    out = np.empty(int(n))
    ct = getattr(search, "_ctree", None)
    if ct is not None and fast is not None:
        if ct.solved:  # every draw ends at the solved root: the weight is exactly U_S = Z
            out.fill(log_U)
            return out, log_U
        # one round of Alg. 1 without expansions: n draws, row i of the uniforms for draw i
        nv = search.n_vars_
        ct.dis_rounds(fast.kernel, 1, 0, int(n), -1, rng.random((int(n), nv)),
                      np.zeros(nv, dtype=np.int64), out, np.empty(int(n)))
        return out, log_U
    if ct is not None:
        raise ValueError("a compiled search tree needs the compiled proposal (fast=FastProposal(...))")
    root = search.root_
    children, roots = search.children_, search.roots_
    for i in range(int(n)):
        a = np.zeros(search.n_vars_, dtype=np.int64)
        open_nodes = []
        stack = [root]
        while stack:
            node = stack.pop()
            if node.solved:
                continue
            if node.children is None:
                open_nodes.append(node)
                continue
            for s in node.children:
                if s.solved:
                    continue
                kids = s.children
                if len(kids) == 1:
                    c = kids[0]
                else:
                    target = rng.random()
                    acc = 0.0
                    c = None
                    for k in kids:
                        acc += math.exp(k.log_w + k.log_u - s.log_u)
                        if target < acc:
                            c = k
                            break
                    if c is None:  # rounding: acc summed to just below 1
                        c = max((k for k in kids if k.log_u > _NEG_INF), key=lambda k: k.log_w + k.log_u)
                a[s.var] = c.val
                stack.append(c)
        if not open_nodes:
            out[i] = log_U  # every reached leaf is solved: the weight is exactly U_S
            continue
        start = [roots if nd.var < 0 else children[nd.var] for nd in open_nodes]
        start_vars = np.concatenate(start) if len(start) > 1 else start[0]
        log_h = math.fsum(nd.log_u for nd in open_nodes)
        if start_vars.size == 0:
            out[i] = log_U - log_h
            continue
        if fast is not None:
            _, log_q, log_g = fast.sample(rng, a, start_vars)
        else:
            x, log_q = wmb.sample(1, rng, assignment=a, start_vars=start_vars)
            log_g = evaluator.log_subtree_cost(np.asarray(x)[0], start_vars)
            log_q = float(np.asarray(log_q).reshape(-1)[0])
        out[i] = log_U + log_g - log_h - log_q
    return out, log_U


def dis_rounds(search, evaluator, n_rounds, n_expansions, n_samples, rng, fast=None,
               max_expansions=None):
    """``n_rounds`` rounds of Alg. 1 of [1]_: expand ``n_expansions`` nodes (N_d) of
    ``search`` while it can grow, then draw ``n_samples`` (N_l) samples from q_S.

    With a compiled search tree and ``fast`` the rounds run in one compiled call; the
    result is the same as the step-by-step loop (``search.expand`` then
    :func:`sample_search_tree` with n_vars uniforms per sample), which is what runs
    otherwise.

    Parameters
    ----------
    search : AOBFS
        Set up (``fit`` called); it is expanded in place.
    evaluator : FactorEvaluator
    n_rounds, n_expansions, n_samples : int
        Rounds, N_d (0 = no search) and N_l (>= 1).
    rng : numpy.random.Generator
    fast : FastProposal, optional
    max_expansions : int, optional
        Expansions allowed in all (None = no limit).

    Returns
    -------
    log_w : ndarray of shape (m,)
        ln f(x_i)/q_{S_i}(x_i), m <= n_rounds * n_samples (fewer once the root is solved).
    log_U : ndarray of shape (m,)
        ln U_{S_i}, the bound in force when sample i was drawn (Eq. 13-14).
    """
    n_rounds, n_expansions, n_samples = int(n_rounds), int(n_expansions), int(n_samples)
    ct = getattr(search, "_ctree", None)
    if ct is not None and fast is not None:
        nv = search.n_vars_
        m = n_rounds * n_samples
        log_w, log_U = np.empty(m), np.empty(m)
        u = fast.uniforms(rng, m, nv)
        exp0 = ct.n_expansions
        k = ct.dis_rounds(fast.kernel, n_rounds, n_expansions, n_samples,
                          -1 if max_expansions is None else int(max_expansions), u,
                          np.zeros(nv, dtype=np.int64), log_w, log_U)
        search._sync(ct.n_expansions - exp0)
        return log_w[:k], log_U[:k]
    ws, us = [], []
    left = math.inf if max_expansions is None else int(max_expansions)
    for _ in range(n_rounds):
        if n_expansions and search.can_expand and left > 0:
            left -= search.expand(int(min(n_expansions, left)))
        if search.solved_:
            break
        w, lu = sample_search_tree(search, evaluator, n_samples, rng, fast=fast)
        ws.append(w)
        us.append(np.full(len(w), lu))
    if not ws:
        return np.empty(0), np.empty(0)
    return np.concatenate(ws), np.concatenate(us)


def greedy_log_lower(wmb, evaluator):
    """ln f(x) of the greedy (per-variable argmax) configuration of the WMB proposal.

    Any configuration gives a deterministic lower bound ``f(x) <= Z``; this one is used
    as the common initial lower bound of the area metric (Sec. 5 of [1]_).

    Returns
    -------
    float
        ln f(x_greedy) (may be -inf if the greedy path hits a zero).
    """
    n_vars = evaluator.n_vars
    parent = np.asarray(wmb.pseudo_tree.parent, dtype=np.int64)
    x = np.zeros(n_vars, dtype=np.int64)
    kids = [[] for _ in range(n_vars)]
    queue = []
    for v in range(n_vars):
        (queue if parent[v] < 0 else kids[parent[v]]).append(v)
    while queue:
        v = queue.pop()
        lp = np.asarray(wmb.log_proposal(v, x), dtype=float)
        x[v] = int(np.argmax(lp))
        queue.extend(kids[v])
    return float(evaluator.log_value(x[None, :])[0])


# --------------------------------------------------------------------------- estimator
class ImportanceAccumulator:
    """Running Eq. 13 estimator and Theorem 1 bounds over samples with bounds U_i.

    Parameters
    ----------
    delta : float in (0, 1)
        Each of the lower and the upper bound fails with probability at most ``delta``.

    Notes
    -----
    With r_i = Zhat_i / U_i in [0, 1] the estimator is ``Zhat = sum r_i / sum 1/U_i``
    (Eq. 13) and the deviation term is
    ``Delta = HM(U) (sqrt(2 Var(r) ln(2/delta) / N) + 7 ln(2/delta) / (3 (N-1)))``
    (Eq. 14). Everything is stored in log space with a running scale so that weights
    like e^-200 do not underflow; the variance uses Welford/Chan updates.
    """

    def __init__(self, delta):
        delta = float(delta)
        if not (0.0 < delta < 1.0):
            raise ValueError(f"delta must be in (0, 1), got {delta!r}")
        self.delta = delta
        self.n = 0
        self._m = _NEG_INF  # log scale of the stored r values
        self._mean = 0.0  # mean of r / e^m
        self._m2 = 0.0  # sum of squared deviations of r / e^m
        self._log_sum_inv_u = _NEG_INF
        self.log_w_max = _NEG_INF
        self.n_bound_violations = 0
        self.lower_is_markov = True

    def add(self, log_w, log_U):
        """Add samples with log weights ``log_w`` (n,) and log weight bounds ``log_U``."""
        if np.ndim(log_w) == 0 or (np.size(log_w) == 1 and np.size(log_U) == 1):
            self._add_one(float(np.reshape(log_w, -1)[0]), float(np.reshape(log_U, -1)[0]))
            return
        log_w = np.atleast_1d(np.asarray(log_w, dtype=float))
        log_U = np.broadcast_to(np.asarray(log_U, dtype=float), log_w.shape)
        k = log_w.size
        if k == 0:
            return
        log_r = log_w - log_U
        bad = log_r > _BOUND_TOL * np.maximum(1.0, np.abs(log_U))
        if bad.any():
            self.n_bound_violations += int(bad.sum())
            warnings.warn(f"{int(bad.sum())} importance weight(s) exceed their bound U "
                          f"(max ln(w/U) = {float(log_r.max()):.3g}); the heuristic and the proposal "
                          "disagree", RuntimeWarning, stacklevel=2)
        log_r = np.minimum(log_r, 0.0)
        self.log_w_max = max(self.log_w_max, float(log_w.max()))
        self._log_sum_inv_u = float(np.logaddexp.reduce(np.append(-log_U, self._log_sum_inv_u)))
        new_m = max(self._m, float(log_r.max()))
        if new_m == _NEG_INF:  # all weights zero so far
            self.n += k
            return
        f = 0.0 if self._m == _NEG_INF else math.exp(self._m - new_m)
        mean_a, m2_a = self._mean * f, self._m2 * f * f
        y = np.exp(log_r - new_m)
        mean_b = float(y.mean())
        m2_b = float(((y - mean_b) ** 2).sum())
        n_a, n_tot = self.n, self.n + k
        d = mean_b - mean_a
        self._mean = mean_a + d * k / n_tot
        self._m2 = m2_a + m2_b + d * d * n_a * k / n_tot
        self._m = new_m
        self.n = n_tot

    def _add_one(self, log_w, log_U):
        """Scalar fast path of :meth:`add` (same arithmetic as a batch of one)."""
        log_r = log_w - log_U
        if log_r > _BOUND_TOL * max(1.0, abs(log_U)):
            self.n_bound_violations += 1
            warnings.warn(f"an importance weight exceeds its bound U (ln(w/U) = {log_r:.3g}); the "
                          "heuristic and the proposal disagree", RuntimeWarning, stacklevel=3)
        log_r = min(log_r, 0.0)
        if log_w > self.log_w_max:
            self.log_w_max = log_w
        a, b = self._log_sum_inv_u, -log_U
        if a == _NEG_INF:
            self._log_sum_inv_u = b
        else:
            hi, lo = (a, b) if a >= b else (b, a)
            self._log_sum_inv_u = hi + math.log1p(math.exp(lo - hi))
        new_m = max(self._m, log_r)
        if new_m == _NEG_INF:
            self.n += 1
            return
        f = 0.0 if self._m == _NEG_INF else math.exp(self._m - new_m)
        mean_a, m2_a = self._mean * f, self._m2 * f * f
        y = math.exp(log_r - new_m)
        n_a = self.n
        n_tot = n_a + 1
        d = y - mean_a
        self._mean = mean_a + d / n_tot
        self._m2 = m2_a + d * d * n_a / n_tot
        self._m = new_m
        self.n = n_tot

    _STATE = ("delta", "n", "_m", "_mean", "_m2", "_log_sum_inv_u", "log_w_max",
              "n_bound_violations", "lower_is_markov")

    def state_dict(self):
        """The running sums as a dict of Python numbers (JSON-safe with ``allow_nan``), for
        checkpoints; :meth:`from_state` restores an equal accumulator."""
        return {k: getattr(self, k) for k in self._STATE}

    @classmethod
    def from_state(cls, state):
        """Accumulator with the running sums of :meth:`state_dict`.

        Raises
        ------
        ValueError
            If a field is missing.
        """
        missing = [k for k in cls._STATE if k not in state]
        if missing:
            raise ValueError(f"accumulator state lacks {missing}")
        acc = cls(state["delta"])
        for k in cls._STATE[1:]:
            setattr(acc, k, type(getattr(acc, k))(state[k]))
        return acc

    @property
    def log_hm(self):
        """ln HM(U), the harmonic mean of the bounds (Eq. 13)."""
        return math.log(self.n) - self._log_sum_inv_u if self.n else math.inf

    @property
    def log_Z_hat(self):
        """ln Zhat of Eq. 13 (-inf before any positive weight)."""
        if self.n == 0 or self._m == _NEG_INF or self._mean <= 0:
            return _NEG_INF
        return self.log_hm + self._m + math.log(self._mean)

    def bounds(self, log_U_current=math.inf):
        """(ln lower, ln upper): Theorem 1 bounds, each holding with prob. >= 1 - delta.

        The lower bound is the Markov bound ``delta * Zhat`` while ``Zhat - Delta <= 0``;
        the upper bound is ``min(Zhat + Delta, U_current)``. Sets ``lower_is_markov``.
        """
        log_hat = self.log_Z_hat
        self.lower_is_markov = True
        if self.n < 2:
            lower = log_hat + math.log(self.delta) if log_hat > _NEG_INF else _NEG_INF
            return lower, float(log_U_current)
        L = math.log(2.0 / self.delta)
        n = self.n
        var_s = self._m2 / (n - 1)  # unbiased variance of r / e^m
        t1 = math.sqrt(max(2.0 * var_s * L / n, 0.0))
        t2 = 7.0 * L / (3.0 * (n - 1))
        log_dev = np.logaddexp(self._m + math.log(t1) if t1 > 0 else _NEG_INF, math.log(t2))
        A = self._m + math.log(self._mean) if self._mean > 0 and self._m > _NEG_INF else _NEG_INF
        upper = self.log_hm + float(np.logaddexp(A, log_dev))
        if A > log_dev:
            lower = self.log_hm + A + math.log1p(-math.exp(log_dev - A))
            self.lower_is_markov = False
        elif A > _NEG_INF:
            lower = self.log_hm + A + math.log(self.delta)  # Markov: P(Zhat >= Z/delta) <= delta
        else:
            lower = _NEG_INF
        return float(lower), float(min(upper, log_U_current))


# --------------------------------------------------------------------------- oracle
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
        from .ordering import PseudoTree

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
