"""Randomized elimination orders for the larger rungs of the WMB ladder (issue 30, item 3)."""
import itertools
import time

import numpy as np
import pytest

from sampling.bounds import _ladder
from sampling.bounds.dis import run
from sampling.bounds.exact import log_partition
from sampling.bounds.model import random_model
from sampling.bounds.ordering import check_order, randomized_min_fill_orders, total_log_size
from sampling.bounds.wmb import WeightedMiniBucket

pytestmark = pytest.mark.filterwarnings("ignore::sampling.exceptions.ConvergenceWarning")


def test_randomized_orders_are_seeded_permutations():
    m = random_model(30, 45, max_scope=3, max_card=3, rng=2)
    a = randomized_min_fill_orders(m, 4, seed=5)
    b = randomized_min_fill_orders(m, 4, seed=5)
    assert len(a) == 4 and randomized_min_fill_orders(m, 0) == []
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(check_order(m, x), x)  # a permutation of the variables
    c = randomized_min_fill_orders(m, 4, seed=6)
    assert any(not np.array_equal(x, y) for x, y in zip(a, c))


def test_better_order_is_strictly_smaller_or_none():
    for s in range(4):
        p = WeightedMiniBucket(random_model(40, 60, max_scope=3, max_card=3, rng=s)).prepare()
        base = total_log_size(p.model, p.elim_order)
        got = _ladder._better_order(p, 6)
        costs = [total_log_size(p.model, o) for o in randomized_min_fill_orders(p.model, 6, seed=0)]
        if got is None:
            assert min(costs) >= base - 1e-9
        else:
            assert total_log_size(p.model, got) == pytest.approx(min(costs), abs=1e-12)
            assert total_log_size(p.model, got) < base
        assert _ladder._better_order(p, 0) is None


def test_ladder_switches_order_and_still_brackets(monkeypatch):
    """random_model(40, 60, rng=0): a restart beats the default order, so the larger rungs use
    it (meta ``elim_order_restarts``); the WMB the method uses has that order and the run's
    bounds hold ln Z (deterministic upper bound always)."""
    m = random_model(40, 60, max_scope=3, max_card=3, rng=0)
    lz = log_partition(m)
    p = WeightedMiniBucket(m).prepare()
    better = _ladder._better_order(p, _ladder.ORDER_RESTARTS)
    assert better is not None
    seen = []
    real = _ladder.WeightedMiniBucket

    class Spy(real):
        def fit(self, *a, **k):
            out = super().fit(*a, **k)
            seen.append(np.asarray(self.elim_order).copy())
            return out

    monkeypatch.setattr(_ladder, "WeightedMiniBucket", Spy)
    # a clock that barely moves: the work-based plan (two rungs at i-bound 3) runs whole
    ticks = itertools.count()
    monkeypatch.setattr(time, "perf_counter", lambda: 1000.0 + 1e-9 * next(ticks))
    tr = run(m, "dis", time_limit=0.02, i_bound=3, max_samples=300, rng=0)
    assert len(tr.meta["wmb_ladder"]) == 2
    assert tr.meta["elim_order_restarts"] == _ladder.ORDER_RESTARTS
    np.testing.assert_array_equal(seen[-1], better)
    assert not np.array_equal(seen[0], better)
    assert np.all(tr.log_Z_upper_det >= lz - 1e-9)
    assert tr.final_log_Z_lower <= lz + 1e-9 <= tr.final_log_Z_upper + 2e-9


def test_no_restarts_with_a_given_order(monkeypatch):
    m = random_model(40, 60, max_scope=3, max_card=3, rng=0)
    order = WeightedMiniBucket(m).prepare().elim_order
    called = []
    monkeypatch.setattr(_ladder, "_better_order", lambda *a: called.append(1))
    tr = run(m, "dis", time_limit=0.05, i_bound=2, max_samples=100, rng=0, clock="cpu", elim_order=order)
    assert not called and "elim_order_restarts" not in tr.meta
