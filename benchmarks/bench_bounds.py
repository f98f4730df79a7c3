"""Partition-function bounds on the shipped UAI instances (Lou, Dechter & Ihler 2017).

* ``exact``: variable elimination (``sampling.bounds.log_partition``) on pedigree1 and BN_0.
* ``wmb build``: a weighted mini-bucket bound of pedigree23 at i-bound 12 (first pass +
  moment matching), and its gap to the known ln Z.
* ``anytime``: a 10 s run of each method on pedigree23 with the clock in CPU seconds;
  ``extra_info`` holds the final gap ln U - ln L (nats; smaller is better) and whether the
  bounds bracket the known ln Z. Compare the gaps, not the times (each run uses its budget).
"""
import math

import pytest

from sampling import bounds
from sampling.utils import data_path

BUDGET_S = 10.0
LN_Z_PEDIGREE23 = -88.777529  # data/uai/SOURCES.md: exact variable elimination (log10 Z = -38.555591)


def _model(name):
    if name == "BN_0":
        return bounds.read_uai(data_path("uai", "bn", "BN_0.uai"), data_path("uai", "bn", "BN_0.uai.evid"))
    return bounds.read_uai(data_path("uai", "pedigree", f"{name}.uai"))


@pytest.mark.parametrize("name", ["pedigree1", "BN_0"])
def test_exact(benchmark, name):
    model = _model(name)
    benchmark.group = "bounds exact ln Z"
    log_z = benchmark(bounds.log_partition, model)
    assert math.isfinite(log_z)


def test_wmb_build(benchmark):
    model = _model("pedigree23")
    benchmark.group = "bounds wmb build"
    wmb = benchmark.pedantic(lambda: bounds.WeightedMiniBucket(model, i_bound=12, memory_mb=1024).fit(), rounds=3,
                             iterations=1)
    benchmark.extra_info.update(log_Z_upper=float(wmb.log_Z_upper), gap=float(wmb.log_Z_upper) - LN_Z_PEDIGREE23)
    assert wmb.log_Z_upper >= LN_Z_PEDIGREE23 - 1e-6


@pytest.fixture(scope="module")
def pedigree23():
    return _model("pedigree23"), LN_Z_PEDIGREE23


@pytest.mark.parametrize("method", ["dis", "wmb-is", "two-stage"])
def test_anytime(benchmark, pedigree23, method):
    model, log_z = pedigree23
    benchmark.group = f"bounds anytime, pedigree23, {BUDGET_S:g} CPU-s"
    trace = benchmark.pedantic(bounds.run, args=(model,), kwargs={"method": method, "time_limit": BUDGET_S,
                                                                   "clock": "cpu", "rng": 0}, rounds=1, iterations=1)
    lower, upper = float(trace.final_log_Z_lower), float(trace.final_log_Z_upper)
    benchmark.extra_info.update(log_Z_lower=lower, log_Z_upper=upper, gap=upper - lower)
    benchmark.extra_info["brackets_ln_Z"] = bool(lower <= log_z + 1e-6 and log_z <= upper + 1e-6)
