"""Annealed Gibbs sampling over coreference cluster labels (package; see sampler)."""
from coref.gibbs.sampler import *  # noqa
from coref.gibbs.sampler import FACTOR_CACHE_MB, GibbsCoref, block_rng, bound_table, temperature_schedule, _merge_counts, _within_pairs, _bound_table_ro  # noqa
