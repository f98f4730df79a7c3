"""AOBFS (Lou et al. 2017, Eq. 3-5): bounds, priority, solved nodes, memory cap."""
import math

import numpy as np
import pytest

from sampling.bounds.aobfs import AOBFS
from bounds_oracle import BruteForceHeuristic, brute_log_z, fit_wmb, random_model
from sampling.bounds.model import Factor, GraphicalModel


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("eps", [0.0, 0.4], ids=["exact-heur", "loose-heur"])
def test_search_bounds_and_solves_exactly(seed, eps):
    m = random_model(seed=seed)
    lz = brute_log_z(m)
    oracle = BruteForceHeuristic(m, eps=eps).fit()
    s = AOBFS(m, wmb=oracle).fit(max_expansions=0)
    assert s.log_Z_upper_ == pytest.approx(oracle.log_Z_upper, abs=1e-9)
    while s.can_expand:
        assert s.log_Z_upper_ >= lz - 1e-9
        assert s.log_Z_lower_ <= lz + 1e-9
        s.expand(1)
    assert s.solved_
    assert s.log_Z_upper_ == pytest.approx(lz, abs=1e-9)
    assert s.log_Z_lower_ == pytest.approx(lz, abs=1e-9)
    assert s.n_nodes_ == 1  # every solved subtree was freed


@pytest.mark.parametrize("seed", [3, 4])
def test_real_wmb_upper_bound_monotone_and_valid(seed):
    m = random_model(n=8, seed=seed)
    lz = brute_log_z(m)
    w = fit_wmb(m, 1)
    s = AOBFS(m, wmb=w).fit(max_expansions=0)
    prev = s.log_Z_upper_
    assert prev == pytest.approx(w.log_Z_upper, abs=1e-6)
    for _ in range(400):
        if not s.can_expand:
            break
        s.expand(1)
        assert s.log_Z_upper_ >= lz - 1e-8
        assert s.log_Z_upper_ <= prev + 1e-8  # WMB heuristics are monotone (Hoelder)
        prev = s.log_Z_upper_
    assert s.solved_ and s.log_Z_upper_ == pytest.approx(lz, abs=1e-8)


def _frontier(s):
    out, stack = [], [s.root_]
    while stack:
        n = stack.pop()
        if n.solved:
            continue
        if n.children is None:
            out.append(n)
            continue
        for o in n.children:
            if not o.solved:
                stack.extend(o.children)
    return out


def _priority(node):
    """ln of Eq. 4 computed bottom-up: g_n u_n prod_{s in branch(n)} u_s."""
    val = node.log_u
    cur = node
    while cur.parent is not None:
        s = cur.parent
        val += cur.log_w
        a = s.parent
        val += sum(o.log_u for o in a.children if o is not s)
        cur = a
    return val + cur.log_w


@pytest.mark.parametrize("seed", [5, 6])
def test_selection_is_argmax_of_upper_priority(seed):
    m = random_model(n=8, seed=seed)
    s = AOBFS(m, wmb=BruteForceHeuristic(m, eps=0.3).fit()).fit(max_expansions=0)
    for _ in range(25):
        if not s.can_expand:
            break
        pri = [_priority(n) for n in _frontier(s)]
        chosen = s._select()
        assert _priority(chosen) == pytest.approx(max(pri), abs=1e-9)
        # the root's priority bookkeeping equals the best priority as well
        assert s.root_.log_b + s.root_.log_w == pytest.approx(max(pri), abs=1e-9)
        s.expand(1)


def test_node_cap_stops_growth():
    m = random_model(n=8, seed=7)
    s = AOBFS(m, wmb=BruteForceHeuristic(m, eps=0.3).fit(), max_nodes=12).fit()
    assert s.full_ and not s.can_expand
    n_exp = s.n_expansions_
    assert s.expand(5) == 0 and s.n_expansions_ == n_exp
    assert s.n_nodes_ >= 12


def test_memory_budget_gives_node_cap():
    m = random_model(n=6, seed=8)
    s = AOBFS(m, wmb=BruteForceHeuristic(m).fit(), memory_mb=1.0).fit(max_expansions=0)
    assert 16 <= s.max_nodes_ <= 2**20 // 100


def test_zero_model_is_solved_with_zero():
    m = GraphicalModel([2, 2], [Factor((0, 1), np.full((2, 2), -np.inf)), Factor((0,), [0.0, 0.0])])
    s = AOBFS(m, wmb=BruteForceHeuristic(m).fit()).fit()
    assert s.solved_ and s.log_Z_upper_ == -math.inf


@pytest.mark.parametrize("bad, match", [(dict(memory_mb=-1), "memory_mb"), (dict(max_nodes=0), "max_nodes")])
def test_bad_arguments(bad, match):
    m = random_model(n=4, seed=9)
    with pytest.raises(ValueError, match=match):
        AOBFS(m, wmb=BruteForceHeuristic(m).fit(), **bad).fit()


@pytest.mark.parametrize("seed", [10, 11, 12])
def test_compiled_tree_matches_python_twin(seed):
    """The flat-array AND/OR tree makes the same choices as the reference implementation."""
    m = random_model(n=11, seed=seed)
    w = fit_wmb(m, 1)
    a = AOBFS(m, wmb=w, backend="python").fit(max_expansions=0)
    b = AOBFS(m, wmb=w, backend="compiled").fit(max_expansions=0)
    assert b.compiled_ and not a.compiled_
    for _ in range(2000):
        if not a.can_expand:
            break
        assert a.expand(1) == b.expand(1) == 1
        assert a.log_Z_upper_ == b.log_Z_upper_
        assert a.log_Z_lower_ == b.log_Z_lower_
        assert a.n_nodes_ == b.n_nodes_
    assert a.solved_ and b.solved_ and not b.can_expand
    assert b.log_Z_upper_ == pytest.approx(brute_log_z(m), abs=1e-8)


@pytest.mark.parametrize("seed", [13, 14])
def test_compiled_tree_matches_python_twin_with_ties(seed):
    """Factors taking only the values 1 and 2 make many upper priorities exactly equal;
    the compiled tree stores each node's selection (first maximum) in the node and must
    still pick the same frontier node as the reference descent at every step."""
    m = random_model(n=10, seed=seed, zeros=0.1)
    m = GraphicalModel(m.cards, [Factor(f.scope, np.where(np.isfinite(f.log_values),
                                                          math.log(2.0) * (f.log_values > 0), -np.inf))
                                 for f in m.factors])
    w = fit_wmb(m, 1)
    a = AOBFS(m, wmb=w, backend="python").fit(max_expansions=0)
    b = AOBFS(m, wmb=w, backend="compiled").fit(max_expansions=0)
    n_steps = 0
    while a.can_expand:
        assert a.expand(1) == b.expand(1) == 1
        assert (a.log_Z_upper_, a.log_Z_lower_, a.n_nodes_) == (b.log_Z_upper_, b.log_Z_lower_, b.n_nodes_)
        n_steps += 1
    assert n_steps > 20 and b.solved_
    assert b.log_Z_upper_ == pytest.approx(brute_log_z(m), abs=1e-8)


def test_compiled_tree_node_cap_and_bad_backend():
    m = random_model(n=11, seed=13)
    w = fit_wmb(m, 1)
    s = AOBFS(m, wmb=w, max_nodes=40).fit()
    assert s.compiled_ and s.full_ and not s.can_expand and s.n_nodes_ >= 40
    with pytest.raises(ValueError, match="backend"):
        AOBFS(m, wmb=w, backend="gpu").fit()
    with pytest.raises(ValueError, match="compiled"):
        AOBFS(m, wmb=BruteForceHeuristic(m).fit(), backend="compiled").fit()


# ------------------------------------------------ memory-limited search (past the node cap)
def _limited_pair(seed, max_nodes, backend="compiled"):
    m = random_model(n=11, seed=seed)
    w = fit_wmb(m, 1)
    base = AOBFS(m, wmb=w, max_nodes=max_nodes, backend=backend).fit()
    lim = AOBFS(m, wmb=w, max_nodes=max_nodes, backend=backend, memory_limited=True).fit(max_expansions=0)
    return m, base, lim


@pytest.mark.parametrize("seed, max_nodes", [(21, 40), (26, 40), (29, 40), (33, 40), (37, 40), (33, 80)])
def test_memory_limited_bound_valid_monotone_and_capped(seed, max_nodes):
    m, base, s = _limited_pair(seed, max_nodes)
    lz = brute_log_z(m)
    assert base.full_ and not base.can_expand and not base.solved_
    prev = s.log_Z_upper_min_
    for _ in range(1500):
        if not s.can_expand:
            break
        assert s.expand(1) == 1
        assert lz - 1e-9 <= s.log_Z_upper_ <= prev  # min of valid bounds: never increases
        assert s.log_Z_upper_min_ == s.log_Z_upper_
        assert s.log_Z_lower_ <= lz + 1e-9
        assert s.n_nodes_ <= max_nodes
        prev = s.log_Z_upper_
    assert s.full_ and s.n_collapses_ > 0
    assert s.solved_ or (s.can_expand and s.n_expansions_ == 1500)  # stops only when solved


@pytest.mark.parametrize("seed, max_nodes", [(21, 40), (26, 40), (29, 40), (33, 40), (37, 40), (21, 80), (33, 80)])
def test_memory_limited_improves_past_the_cap(seed, max_nodes):
    m, base, s = _limited_pair(seed, max_nodes)
    s.expand(3000)
    assert base.full_ and not base.solved_
    assert s.log_Z_upper_ < base.log_Z_upper_ - 1e-6  # the plain search stopped above this
    assert s.log_Z_upper_ >= brute_log_z(m) - 1e-9


@pytest.mark.parametrize("seed, max_nodes", [(22, 40), (24, 40), (28, 40), (35, 40), (26, 80), (29, 80), (33, 150)])
def test_memory_limited_reaches_log_z(seed, max_nodes):
    """On these tiny models the limited search solves what the plain search leaves open.
    (Not always within a given number of expansions: e.g. seed 21 with 40 nodes is still
    0.019 above ln Z after 5000, cycling collapses and re-expansions as SMA* can.)"""
    m, base, s = _limited_pair(seed, max_nodes)
    lz = brute_log_z(m)
    assert base.log_Z_upper_ > lz + 1e-4 and not base.solved_
    s.expand(5000)
    assert s.solved_ and not s.can_expand
    assert s.log_Z_upper_ == pytest.approx(lz, abs=1e-6)
    assert s.log_Z_lower_ == pytest.approx(lz, abs=1e-6)
    assert s.n_nodes_ == 1


@pytest.mark.parametrize("backend", ["python", "compiled"])
def test_memory_limited_stops_when_only_the_root_could_go(backend):
    m = random_model(n=11, seed=21)
    w = fit_wmb(m, 1)
    s = AOBFS(m, wmb=w, backend=backend, max_nodes=8, memory_limited=True).fit(max_expansions=50)
    assert s.n_expansions_ == 0 and s.full_ and not s.can_expand and not s.solved_
    assert s.expand(5) == 0
    # a cap that holds one level more: collapses, keeps expanding, bound still valid
    s = AOBFS(m, wmb=w, backend=backend, max_nodes=20, memory_limited=True).fit(max_expansions=300)
    assert s.n_expansions_ == 300 and s.can_expand and s.n_collapses_ > 0
    assert brute_log_z(m) - 1e-9 <= s.log_Z_upper_ <= s.log_Z_upper_min_


def test_run_aobfs_is_memory_limited_but_two_stage_is_not():
    from sampling.bounds.dis import run

    m = random_model(n=11, seed=33)
    w = fit_wmb(m, 1)
    tr = run(m, "aobfs", time_limit=math.inf, max_expansions=2000, wmb=w, max_nodes=80)
    base = AOBFS(m, wmb=w, max_nodes=80).fit()
    assert tr.meta["n_expansions_total"] == 2000 > base.n_expansions_
    assert tr.meta["n_collapses"] > 0
    assert tr.log_Z_upper[-1] < base.log_Z_upper_ - 1e-6
    tr2 = run(m, "two-stage", time_limit=math.inf, max_samples=10, wmb=w, max_nodes=80, rng=0)
    assert tr2.n_expansions[-1] == base.n_expansions_


# ------------- memory-limited search whose tree stays a DIS proposal (reset_collapsed)
@pytest.mark.parametrize("mode", ["memory_limited", "reset_collapsed"])
@pytest.mark.parametrize("seed, max_nodes", [(21, 40), (26, 40), (37, 40), (33, 80), (45, 120)])
def test_collapsing_search_compiled_matches_python_twin(seed, max_nodes, mode):
    """Both collapsing variants (memory-limited AOBFS, and the one whose tree stays a DIS
    proposal) expand, collapse and bound identically in the compiled kernel and its twin."""
    m = random_model(n=11, seed=seed)
    w = fit_wmb(m, 1)
    a = AOBFS(m, wmb=w, backend="python", max_nodes=max_nodes, **{mode: True}).fit(max_expansions=0)
    b = AOBFS(m, wmb=w, backend="compiled", max_nodes=max_nodes, **{mode: True}).fit(max_expansions=0)
    assert b.compiled_ and not a.compiled_
    for _ in range(800):
        assert a.expand(1) == b.expand(1)
        assert a.log_Z_upper_ == b.log_Z_upper_
        assert a.log_Z_upper_min_ == b.log_Z_upper_min_
        assert a.log_Z_lower_ == b.log_Z_lower_
        assert (a.n_nodes_, a.n_collapses_, a.full_, a.can_expand) == (b.n_nodes_, b.n_collapses_, b.full_, b.can_expand)
        if not a.can_expand:
            break
    assert a.n_collapses_ > 0


@pytest.mark.parametrize("seed, max_nodes", [(21, 40), (26, 40), (29, 40), (33, 80)])
def test_reset_collapsed_bound_valid_and_improves_past_the_cap(seed, max_nodes):
    """U_S may rise after a collapse (the node goes back to its heuristic) but stays >= Z;
    its running minimum goes below where the plain search stopped at the cap."""
    m = random_model(n=11, seed=seed)
    w = fit_wmb(m, 1)
    lz = brute_log_z(m)
    base = AOBFS(m, wmb=w, max_nodes=max_nodes).fit()
    s = AOBFS(m, wmb=w, max_nodes=max_nodes, reset_collapsed=True).fit(max_expansions=0)
    assert base.full_ and not base.solved_
    for _ in range(3000):
        if not s.can_expand:
            break
        s.expand(1)
        assert s.log_Z_upper_ >= lz - 1e-9 and s.log_Z_upper_min_ >= lz - 1e-9
        assert s.log_Z_lower_ <= lz + 1e-9
        assert s.n_nodes_ <= max_nodes
    assert s.n_collapses_ > 0
    assert s.log_Z_upper_min_ < base.log_Z_upper_ - 1e-6


@pytest.mark.parametrize("seed", [21, 26, 33])
def test_reset_collapsed_tree_is_a_valid_proposal(seed):
    """After collapses, q_S of the tree (both backends) has weights f/q <= U_S and mean Z
    (Prop. 2 of Lou et al. 2017 needs Eq. 3 with equality, which this mode keeps)."""
    from sampling.bounds.importance import FactorEvaluator, FastProposal, sample_search_tree

    m = random_model(n=11, seed=seed)
    w = fit_wmb(m, 1)
    lz = brute_log_z(m)
    ev = FactorEvaluator(w.model, w.pseudo_tree.parent)
    fast = FastProposal(w, ev)
    for backend in ("python", "compiled"):
        s = AOBFS(m, wmb=w, backend=backend, max_nodes=40, reset_collapsed=True).fit(max_expansions=0)
        while s.n_collapses_ < 3 and s.can_expand:
            s.expand(1)
        assert s.n_collapses_ >= 3 and not s.solved_
        log_w, log_U = sample_search_tree(s, ev, 4000, np.random.default_rng(seed), fast=fast)
        assert np.all(log_U == s.log_Z_upper_)
        assert np.all(log_w <= log_U + 1e-9)
        r = np.exp(log_w - lz)
        assert abs(r.mean() - 1.0) < 5 * r.std(ddof=1) / math.sqrt(r.size) + 1e-9
