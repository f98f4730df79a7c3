"""Anytime bounds on the partition function of discrete graphical models.

Implements Lou, Dechter & Ihler (2017), "Dynamic Importance Sampling for Anytime
Bounds of the Partition Function": weighted mini-bucket (WMB), AND/OR best-first
search (AOBFS), WMB importance sampling, two-stage sampling and dynamic importance
sampling (DIS). Everything is in natural log (``log_Z``).

Names are imported lazily from their modules (table below) so that importing
``sampling.bounds`` stays cheap.
"""
from sampling.utils.cli import lazy_exports

_EXPORTS = {
    # model and I/O
    "Factor": "sampling.bounds.model",
    "GraphicalModel": "sampling.bounds.model",
    "read_uai": "sampling.bounds.uai",
    "write_uai": "sampling.bounds.uai",
    "read_evidence": "sampling.bounds.uai",
    # orders and pseudo trees
    "min_fill_order": "sampling.bounds.ordering",
    "min_size_order": "sampling.bounds.ordering",
    "induced_width": "sampling.bounds.ordering",
    "PseudoTree": "sampling.bounds.ordering",
    # exact and WMB
    "log_partition": "sampling.bounds.exact",
    "WeightedMiniBucket": "sampling.bounds.wmb",
    # search, sampling, traces
    "AOBFS": "sampling.bounds.aobfs",
    "BoundTrace": "sampling.bounds.trace",
    "run": "sampling.bounds.dis",
    # marginals P(X_i = x | evidence)
    "marginals": "sampling.bounds.marginal_bounds",
    "MarginalBounds": "sampling.bounds.marginal_bounds",
    # probabilities of events P(A) = Z_A / Z, one sample stream for all
    "event_probabilities": "sampling.bounds.ratios",
    "EventBounds": "sampling.bounds.ratios",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports('sampling.bounds', _EXPORTS, globals())
