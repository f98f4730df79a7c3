"""Shared utilities of ``sampling`` and ``coref``: public API for both packages.

- :mod:`sampling.utils.atomic`: atomic file writes (temporary file, then rename).
- :mod:`sampling.utils.kernels`: :func:`load_kernel`, import a compiled Cython kernel or fail loudly.
- :mod:`sampling.utils.rng`: :func:`as_generator`, the ``rng`` argument as a ``numpy.random.Generator``.
- :mod:`sampling.utils.data`: :func:`data_path`, the real data shipped with the project.
- :mod:`sampling.utils.cli`: the sub-command router and lazy package exports.
"""
from sampling.utils.atomic import atomic_open, atomic_path, atomic_write_text
from sampling.utils.cli import build_parser, lazy_exports, route
from sampling.utils.data import data_dirs, data_path
from sampling.utils.kernels import BUILD_HINT, load_kernel
from sampling.utils.rng import as_generator

__all__ = [
    "BUILD_HINT",
    "as_generator",
    "atomic_open",
    "atomic_path",
    "atomic_write_text",
    "build_parser",
    "data_dirs",
    "data_path",
    "lazy_exports",
    "load_kernel",
    "route",
]
