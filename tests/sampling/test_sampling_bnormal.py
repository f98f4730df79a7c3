import time

import pytest

from sampling import b_normal
from sampling.bounds_normal import _b_normal_cached, exceedance_probability, schedule_proportions, simulate_b_normal

# (delta, pi1, Appendix B table value): small-delta entries the table gets right
APPX_B = [(1e-6, 1e-3, 5.19704), (1e-3, 1e-4, 3.78066), (1e-2, 1e-2, 2.93484), (5e-2, 1e-3, 2.46819),
          (1e-1, 5e-5, 2.33161)]


def test_schedule_has_ceil_log2_rounds():
    assert schedule_proportions(1e-3).shape == (10,)
    assert schedule_proportions(0.25).tolist() == [0.25, 0.5]
    assert schedule_proportions(0.6).tolist() == [0.6]


def test_single_round_is_the_normal_quantile():
    # one round before T = N: no correlation, B = Phi^-1(1 - delta)
    assert b_normal(0.05, 0.6) == pytest.approx(1.6448536, abs=1e-6)


def test_exceedance_is_decreasing_and_solves_delta():
    e = [exceedance_probability(b, 1e-3) for b in (1.0, 2.0, 3.0)]
    assert e[0] > e[1] > e[2]
    assert exceedance_probability(b_normal(0.05, 1e-3), 1e-3) == pytest.approx(0.05, rel=1e-5)


@pytest.mark.parametrize("delta, pi1, table", APPX_B)
def test_b_normal_matches_appendix_b_for_small_delta(delta, pi1, table):
    assert abs(b_normal(delta, pi1) - table) < 0.01


@pytest.mark.parametrize(
    "delta, pi1",
    [(0.01, 1e-4), (0.1, 1e-3), (0.3, 1e-2), (0.49, 1e-2)],
    ids=["d.01-p1e-4", "d.1-p1e-3", "d.3-p1e-2", "d.49-p1e-2"],
)
def test_b_normal_matches_simulation_of_eq8(delta, pi1):
    sim = simulate_b_normal(delta, pi1, n_paths=200_000, rng=12345)
    tol = 0.02 if delta <= 0.1 else 0.03
    assert abs(b_normal(delta, pi1) - sim) < tol


def test_appendix_b_large_delta_entry_is_wrong():
    # the erratum: the table says 0.618 at (0.49, 0.01); the walk of Eq. 8 says ~1.03
    assert abs(b_normal(0.49, 1e-2) - 1.03) < 0.01


def test_b_normal_fresh_call_is_fast():
    _b_normal_cached.cache_clear()
    t0 = time.perf_counter()
    b_normal(1e-5, 1e-4)
    assert time.perf_counter() - t0 < 5.0  # target < 1 s; loose here because the CI box is shared


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, float("nan")])
def test_b_normal_rejects_bad_delta(delta):
    with pytest.raises(ValueError, match="delta parameter of b_normal must be in \\(0, 1\\)"):
        b_normal(delta, 1e-3)


def test_b_normal_rejects_bad_pi1():
    with pytest.raises(ValueError, match="pi1 parameter of b_normal must be in \\(0, 1\\)"):
        b_normal(0.05, 1.0)
    with pytest.raises(TypeError, match="pi1 parameter"):
        b_normal(0.05, "0.1")


@pytest.mark.slow
@pytest.mark.parametrize("pi1", [1e-4, 1e-3, 1e-2])
def test_b_normal_matches_simulation_full_grid(pi1):
    deltas = [1e-3, 1e-2, 0.05, 0.1, 0.2, 0.3, 0.4, 0.49]
    for i, delta in enumerate(deltas):
        sim = simulate_b_normal(delta, pi1, n_paths=400_000, rng=1000 + i)
        tol = 0.02 if delta <= 0.1 else 0.03
        assert abs(b_normal(delta, pi1) - sim) < tol, (delta, pi1)
