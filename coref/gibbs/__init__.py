"""Annealed Gibbs sampling over coreference cluster labels, exact or racing.

- :mod:`coref.gibbs.sampler`: :class:`GibbsCoref`, the driver over the blocks of a frame
- :mod:`coref.gibbs.block`: one block through the compiled kernel (``_gibbs.pyx``)
- :mod:`coref.gibbs.schedule`: annealing temperatures, racing bounds, the early-stop rule
- :mod:`coref.gibbs.seeding`: run seed, per-block generators, kernel generator state
- :mod:`coref.gibbs.initial`: initial cluster keys and fixed mentions of ``fit``
- :mod:`coref.gibbs.start`: cheap first clusterings of big blocks (``init``; ``_start.pyx``)
- :mod:`coref.gibbs.merges`: cluster-merge proposals between sweeps
- :mod:`coref.gibbs.marginals`: temperature-1 sweeps, pair probabilities, confidence

The validated hyperparameters are a :class:`coref.settings.GibbsSettings`.
"""
from coref.gibbs.block import FACTOR_CACHE_MB
from coref.gibbs.sampler import GibbsCoref
from coref.gibbs.schedule import bound_table, temperature_schedule
from coref.gibbs.seeding import block_rng

__all__ = ["GibbsCoref", "block_rng", "bound_table", "temperature_schedule", "FACTOR_CACHE_MB"]
