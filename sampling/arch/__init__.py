"""Bayesian ARCH order selection with subsampled MCMC (Chen & Ghahramani 2016, Sec. 5.2)."""
