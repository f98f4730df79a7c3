"""Bayesian ARCH order selection with subsampled MCMC (Chen & Ghahramani 2016, Sec. 5.2).

Public names: :func:`select_order` (-> :class:`ARCHSelection`), :class:`ARCHModel`,
:func:`load_returns`, :func:`build_returns`.
"""
from .model import ARCHModel, LaplaceApprox, build_returns, load_returns, simulate_arch
from .sampler import ARCHSelection, select_order

__all__ = ["ARCHModel", "ARCHSelection", "LaplaceApprox", "build_returns", "load_returns",
           "select_order", "simulate_arch"]
