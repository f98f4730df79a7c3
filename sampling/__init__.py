"""Scalable discrete sampling as a best-arm problem (Chen & Ghahramani, 2016) and
anytime bounds on partition functions (Lou, Dechter & Ihler, 2017).

The public API is re-exported here; see ``__all__``.
"""
from sampling._rng import as_generator

__all__ = ["as_generator"]
