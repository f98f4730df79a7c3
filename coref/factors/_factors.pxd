# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""C-level surface of the pairwise factor kernel, for ``_factors.pyx`` and ``coref.gibbs._gibbs``.

Declarations only: the implementation is inline in the files named below (inline, so
that the Gibbs kernel evaluates factors without a call through a module boundary).

- ``_block.pxd``: constants, the packed ``Mention`` record, the ``BlockData`` view
- ``_lists.pxd``: merges, look-ups and signatures of sorted id lists
- ``_rows.pxd``: row mode (``row_set`` / ``row_clear``)
- ``_setup.pxd``: ``make_block``, ``memo_arrays``
- ``_phi.pxd``: the features, ``block_phi`` / ``block_factor``, ``prefetch_pair``
"""
from coref.factors._block cimport BlockData, N_BASE, N_FEATURES, N_SAT, COMP_DAMP, SAME_PAPER
from coref.factors._rows cimport row_set, row_clear
from coref.factors._setup cimport make_block, memo_arrays
from coref.factors._phi cimport block_phi, block_factor, prefetch_pair
