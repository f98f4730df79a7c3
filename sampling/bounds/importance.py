"""Importance sampling for bounds on Z: WMB-IS, the search-tree proposal q_S, Eq. 13-14.

* :func:`sample_wmb_is` draws from the WMB mixture proposal q(x) (Eq. 7 of [1]_, the
  proposal of [2]_); the weights f(x)/q(x) are bounded by the WMB bound h+ (Eq. 8).
* :func:`sample_search_tree` is the two-step sampler of Sec. 3 / Alg. 1 (TWOSTEPSAMPLING):
  a partial solution tree of the AOBFS tree S is drawn top-down (OR node -> child c with
  probability w_c u_c / u_n, Prop. 1), and below each open frontier node the rest is
  drawn from the WMB proposal. Solved nodes are Rao-Blackwellised: their exact value
  enters the weight, nothing is sampled below them. The weight is
  ``U_S * prod_open g(x>n|x<=n) / (h+_n q(x>n|x<=n))`` (Eq. 10-12), so ``f/q_S <= U_S``.
* The estimator of Eq. 13 and the Theorem 1 bounds are in :mod:`sampling.bounds.estimator`
  (:class:`ImportanceAccumulator`), the proposal kernel and the factor index in
  :mod:`sampling.bounds.proposal`; their names are re-exported here.

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

import numpy as np

from .estimator import ImportanceAccumulator  # noqa: F401  (re-export)
from .proposal import (FactorEvaluator, FastProposal, constant_bucket, factor_arrays,  # noqa: F401
                       make_fast_proposal)

__all__ = [
    "FactorEvaluator",
    "FastProposal",
    "ImportanceAccumulator",
    "constant_bucket",
    "dis_rounds",
    "factor_arrays",
    "greedy_log_lower",
    "make_fast_proposal",
    "sample_search_tree",
    "sample_wmb_is",
]

_NEG_INF = -math.inf


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
    ct = getattr(search, "compiled_tree", None)
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
    ct = getattr(search, "compiled_tree", None)
    if ct is not None and fast is not None:
        nv = search.n_vars_
        m = n_rounds * n_samples
        log_w, log_U = np.empty(m), np.empty(m)
        u = fast.uniforms(rng, m, nv)
        exp0 = ct.n_expansions
        k = ct.dis_rounds(fast.kernel, n_rounds, n_expansions, n_samples,
                          -1 if max_expansions is None else int(max_expansions), u,
                          np.zeros(nv, dtype=np.int64), log_w, log_U)
        search.record_expansions(ct.n_expansions - exp0)
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


def greedy_log_lower(wmb, evaluator, max_steps=None, n_draws=0, seed=0):
    """ln f(x) of a greedy configuration of the WMB proposal that avoids zeros.

    Any configuration gives a deterministic lower bound ``f(x) <= Z``; this one is used
    as the common initial lower bound of the area metric (Sec. 5 of [1]_). The variables
    are assigned in search order (ancestors first), each to its most probable value under
    the WMB proposal among the values whose arc weight and WMB heuristic are both non-zero
    (a zero heuristic is an upper bound 0 on the sub-problem below: it has no solution).
    When a variable has no such value the assignment backs up chronologically to the
    previous variable's next value. Without zeros on the way this is the plain per-variable
    argmax of ``q``; on models with zeros (pedigrees) the plain argmax often reaches
    ``f(x) = 0`` and the floor of the area was -inf.

    Parameters
    ----------
    wmb : WeightedMiniBucket
        Fitted (its ``log_proposal``; ``log_arc_weight`` / ``log_heuristic`` when it has
        them, else no value is filtered out).
    evaluator : FactorEvaluator
    max_steps : int, optional
        Assignments tried in all, backtracking included (default ``2 * n_vars + 100``: a
        few dead ends, no exhaustive search); past it the greedy search gives up.
    n_draws : int, default 0
        Also draw this many configurations from the WMB proposal (``wmb.sample``, with its
        own generator seeded by ``seed``, so the caller's random stream is untouched) and
        keep the largest ln f(x): on models with many zeros, where the greedy search runs
        into dead ends, some draws have f(x) > 0.
    seed : int, default 0

    Returns
    -------
    float
        The largest ln f(x) found (the greedy configuration and the draws); -inf when every
        one has f(x) = 0 (or ``Z = 0``).
    """
    best = _greedy_search(wmb, evaluator, max_steps)
    if n_draws > 0:
        x, _ = wmb.sample(int(n_draws), np.random.default_rng(seed))
        best = max(best, float(np.max(evaluator.log_value(x))))
    return best


def _greedy_search(wmb, evaluator, max_steps):
    """ln f(x) of the zero-avoiding greedy configuration of :func:`greedy_log_lower`, or -inf."""
    n_vars = evaluator.n_vars
    order = [int(v) for v in np.asarray(wmb.pseudo_tree.search_order).tolist()]
    arc = getattr(wmb, "log_arc_weight", None)
    heur = getattr(wmb, "log_heuristic", None)
    budget = 2 * n_vars + 100 if max_steps is None else int(max_steps)
    x = np.zeros(n_vars, dtype=np.int64)
    cands = [None] * len(order)
    i = steps = 0
    while 0 <= i < len(order):
        v = order[i]
        if cands[i] is None:
            lp = np.asarray(wmb.log_proposal(v, x), dtype=float)
            ok = lp > -np.inf
            if arc is not None and heur is not None:
                ok &= np.asarray(arc(v, x), dtype=float) + np.asarray(heur(v, x), dtype=float) > -np.inf
            vals = np.flatnonzero(ok)
            cands[i] = list(vals[np.argsort(-lp[vals], kind="stable")][::-1])  # best last (pop)
        steps += 1
        if steps > budget:
            return _NEG_INF
        if cands[i]:
            x[v] = int(cands[i].pop())
            i += 1
        else:  # dead end: the previous variable's next value
            cands[i] = None
            i -= 1
    if i < 0:
        return _NEG_INF
    return float(evaluator.log_value(x[None, :])[0])
