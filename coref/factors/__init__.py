"""The pairwise coreference factor f_theta(x_i, x_j) = theta . phi(x_i, x_j) + b.

- :mod:`coref.factors.names`: the feature layout (``N_BASE``, ``FEATURE_NAMES``, groups, labels)
- ``coref.factors._factors``: the compiled kernel (``_factors.pyx``; C-level surface
  ``_factors.pxd`` over ``_block``, ``_lists``, ``_rows``, ``_setup`` and ``_phi.pxd``)
- ``coref.factors._factors_py``: its pure-Python twin, for the tests
"""
