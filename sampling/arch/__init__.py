"""Bayesian ARCH order selection with subsampled MCMC (Chen & Ghahramani 2016, Sec. 5.2).

Public names: :func:`select_order` (-> :class:`ARCHSelection`, with
``to_inference_data()`` for ArviZ), :class:`ARCHModel`, :func:`load_returns`,
:func:`build_returns`, :func:`extreme_returns`, :func:`simulate_arch` (the returns
series is read and checked in :mod:`sampling.arch.returns`). The chain's sweep is compiled
(:mod:`sampling.arch._chain`); checkpoints are ``.npz`` files validated on resume
(:mod:`sampling.arch.checkpoint`).
"""
from .model import ARCHModel, LaplaceApprox, simulate_arch
from .result import ARCHSelection
from .returns import build_returns, extreme_returns, load_returns
from .sampler import select_order

__all__ = ["ARCHModel", "ARCHSelection", "LaplaceApprox", "build_returns", "extreme_returns",
           "load_returns", "select_order", "simulate_arch"]
