"""Scalable discrete sampling as a best-arm problem (Chen & Ghahramani, 2016) and
anytime bounds on partition functions (Lou, Dechter & Ihler, 2017).

The public API is re-exported here; see ``__all__``.
"""
from sampling._rng import as_generator
from sampling.bounds_normal import b_normal
from sampling.control_variates import ControlVariate, taylor_control_variate
from sampling.discrete import sample_discrete
from sampling.gumbel import gumbel_max
from sampling.lil_ucb import lil_ucb
from sampling.mh import MHTestResult, mh_accept
from sampling.racing import RaceResult, race
from sampling.sgld import log_q, sgld_proposal, sgld_step

__all__ = [
    "as_generator",
    "gumbel_max",
    "b_normal",
    "race",
    "RaceResult",
    "lil_ucb",
    "sample_discrete",
    "mh_accept",
    "MHTestResult",
    "sgld_proposal",
    "sgld_step",
    "log_q",
    "ControlVariate",
    "taylor_control_variate",
]

# sub-packages loaded on first use: ``import sampling; sampling.arch.select_order(...)``
# works like ``import sampling.arch`` without importing them (and scipy.optimize, the
# compiled chain) at ``import sampling``.
_SUBPACKAGES = ("arch", "bounds")


def __getattr__(name):
    if name in _SUBPACKAGES:
        import importlib

        module = importlib.import_module(f"sampling.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'sampling' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBPACKAGES))
