"""ARCH order selection on the shipped SPY 1-minute returns: subsampled against exact chain
(Chen & Ghahramani 2016, Sec. 5.2). A short run (2 chains x 500 sweeps) per method;
``extra_info`` holds the likelihood terms per sweep (in units of N, the number of returns),
ESS(q) and the posterior over the order q. The full comparison (4 chains x 6000, wall time per
effective sample, racing error rates) is ``python benchmarks/scripts/bench_arch.py``.
"""
import warnings

import pytest

import sampling

SETTINGS = dict(n_iterations=500, n_warmup=300, n_chains=2, n_pilot=500, rng=0)


@pytest.fixture(scope="module")
def returns():
    return sampling.arch.load_returns()


@pytest.mark.parametrize("method", ["subsampled", "exact"])
def test_select_order(benchmark, returns, method):
    benchmark.group = "arch select_order, 2 x 500 sweeps"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # low ESS of a short run
        res = benchmark.pedantic(sampling.arch.select_order, args=(returns,), kwargs={"method": method, **SETTINGS},
                                 rounds=1, iterations=1)
    n = len(returns) - max(res.orders)
    sweeps = res.q_trace.size
    benchmark.extra_info.update(terms_per_sweep_over_n=res.n_loglik_evals_sampling / sweeps / n, ess_q=float(res.ess),
                                posterior={int(q): float(p) for q, p in zip(res.orders, res.posterior)})
