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
