"""Racing against exact sampling of one discrete variable (Chen & Ghahramani 2016, Sec. 5.1).

One draw of X from p(x) ∝ prod_n f_n(x) with D = 10 states and N = 100,000 factors, on the
synthetic Normal reward populations of the paper (sigma = 1e-5 very easy, 1e-4 easy, 0.1 very
hard). Each group holds the exact draw and the Racing-Normal draw of one problem: the ratio of
their times is the speed-up; ``extra_info["fraction_evaluated"]`` is the mean share of the D N
factors evaluated over 20 further draws.
"""
import numpy as np
import pytest

import sampling
from sampling.synthetic import MatrixLogF, make_rewards

N_STATES, N_DATA = 10, 100_000


@pytest.fixture(scope="module", params=[1e-5, 1e-4, 0.1], ids=lambda s: f"sigma={s:g}")
def problem(request):
    sigma = request.param
    return sigma, MatrixLogF(make_rewards("normal", N_STATES, N_DATA, sigma, rng=3))


@pytest.mark.parametrize("method", ["exact", "racing-normal"])
def test_draw(benchmark, problem, method):
    sigma, log_f = problem
    rng = np.random.default_rng(2)
    benchmark.group = f"one draw, D=10, N=1e5, sigma={sigma:g}"
    res = benchmark(sampling.sample_discrete, log_f, np.zeros(N_STATES), N_DATA, method=method, delta=0.05, rng=rng)
    fractions = [sampling.sample_discrete(log_f, np.zeros(N_STATES), N_DATA, method=method, delta=0.05,
                                          rng=rng).fraction_evaluated for _ in range(20)]
    benchmark.extra_info["fraction_evaluated"] = float(np.mean(fractions))
    assert 0 <= res.state < N_STATES


def test_b_normal(benchmark):
    """B_Normal(delta, pi1) of Eq. 8-9 (a cached call after the first)."""
    benchmark.group = "b_normal"
    value = benchmark(sampling.b_normal, 0.05, 1e-3)
    assert value > 0
