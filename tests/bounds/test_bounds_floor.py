"""The common initial lower bound of the area metric (``meta["log_Z_floor"]``) and the first
WMB-IS draws of the ladder (issue 30, item 4: pyGMs comparison on pedigrees with zeros)."""
import itertools
import time

import numpy as np
import pytest

from sampling.bounds import _ladder
from sampling.bounds.dis import FLOOR_DRAWS, run
from sampling.bounds.exact import log_partition
from sampling.bounds.importance import greedy_log_lower
from sampling.bounds.model import Factor, GraphicalModel, random_model
from sampling.bounds.wmb import WeightedMiniBucket

pytestmark = pytest.mark.filterwarnings("ignore::sampling.exceptions.ConvergenceWarning")

L = np.log


def _trap():
    """x1 = x0, x2 = x0, (x1, x2) != (0, 0), x0 = 0 ten times likelier a priori: the only
    configuration with f > 0 is (1, 1, 1) (f = 1, so ln Z = 0); a WMB at i-bound 1 does
    not see the conflict and its argmax path is (0, 0, 0)."""
    with np.errstate(divide="ignore"):
        eq = L(np.array([[1.0, 0.0], [0.0, 1.0]]))
        no00 = L(np.array([[0.0, 1.0], [1.0, 1.0]]))
    return GraphicalModel([2, 2, 2], [Factor((0,), L([10.0, 1.0])), Factor((0, 1), eq), Factor((0, 2), eq),
                                      Factor((1, 2), no00)])


def _plain_argmax(wmb, ev):
    """The former floor: per-variable argmax of q in search order, zeros or not."""
    x = np.zeros(ev.n_vars, dtype=np.int64)
    for v in wmb.pseudo_tree.search_order.tolist():
        x[v] = int(np.argmax(wmb.log_proposal(v, x)))
    return float(ev.log_value(x[None, :])[0])


def _fit(m, **kw):
    w = WeightedMiniBucket(m, **kw).fit()
    return w, _ladder.wmb_evaluator(w, m)


def test_floor_avoids_a_zero_the_argmax_path_hits():
    m = _trap()
    assert log_partition(m) == pytest.approx(0.0, abs=1e-12)
    w, ev = _fit(m, i_bound=1, n_iters=0, elim_order=[2, 1, 0])
    assert _plain_argmax(w, ev) == -np.inf  # the precondition: the old floor was -inf
    assert greedy_log_lower(w, ev) == 0.0  # ln f(1, 1, 1), the only solution
    assert greedy_log_lower(w, ev, max_steps=1) == -np.inf  # gives up within its budget


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_floor_without_zeros_is_the_plain_argmax(seed):
    m = random_model(14, 22, max_scope=3, max_card=3, rng=seed)
    w, ev = _fit(m, i_bound=2, n_iters=3)
    assert greedy_log_lower(w, ev) == _plain_argmax(w, ev)
    assert greedy_log_lower(w, ev) <= log_partition(m) + 1e-12


def test_floor_draws_take_the_best_configuration_and_leave_no_trace_on_rng():
    m = random_model(12, 20, max_scope=3, max_card=3, rng=4)
    w, ev = _fit(m, i_bound=2, n_iters=2)
    x, _ = w.sample(40, np.random.default_rng(7))
    want = max(greedy_log_lower(w, ev), float(np.max(ev.log_value(x))))
    assert greedy_log_lower(w, ev, n_draws=40, seed=7) == want
    # without the greedy configuration (budget 0) only the draws count
    assert greedy_log_lower(w, ev, max_steps=0, n_draws=40, seed=7) == float(np.max(ev.log_value(x)))
    assert want <= log_partition(m) + 1e-12


def test_run_floor_is_finite_on_a_model_with_zeros():
    m = _trap()
    tr = run(m, "dis", time_limit=None, i_bound=1, max_samples=50, rng=0)
    assert tr.meta["log_Z_floor"] == 0.0
    assert FLOOR_DRAWS > 0


def test_first_rung_is_sampled_before_the_order_restarts(monkeypatch):
    """The ladder draws from its first rung before it looks for a better order (the order
    restarts take about 1 s on a 1000-variable pedigree; the first lower bound waited)."""
    m = random_model(40, 60, max_scope=3, max_card=3, rng=0)
    seen = []
    real = _ladder._better_order

    def spy(probe, n):
        seen.append(n_samples[0])
        return real(probe, n)

    n_samples = [0]
    real_add = _ladder.sample_wmb_is

    def counting(*a, **k):
        out = real_add(*a, **k)
        n_samples[0] += len(out)
        return out

    monkeypatch.setattr(_ladder, "_better_order", spy)
    monkeypatch.setattr(_ladder, "sample_wmb_is", counting)
    ticks = itertools.count()  # a clock that barely moves: the two-rung plan runs whole
    monkeypatch.setattr(time, "perf_counter", lambda: 1000.0 + 1e-9 * next(ticks))
    tr = run(m, "dis", time_limit=0.02, i_bound=3, max_samples=300, rng=0)
    assert len(tr.meta["wmb_ladder"]) == 2 and len(seen) == 1
    assert seen[0] > 0
    lz = log_partition(m)
    assert tr.final_log_Z_lower <= lz + 1e-9 <= tr.final_log_Z_upper + 2e-9
