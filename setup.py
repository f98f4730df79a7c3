"""Build the Cython kernels: one Extension per ``.pyx`` under sampling/ and coref/.

Everything else (metadata, dependencies, entry points) lives in pyproject.toml.
The shipped data in ``data/`` is installed under ``<prefix>/share/racing-inference``
so that ``coref run`` and ``sampling arch`` find it after a non-editable install.
"""
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = Path(__file__).parent
COMPILER_DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
}

# Results must not depend on the compiler: no FMA contraction of a * b + c (which rounds
# once instead of twice and so changes sums in their last bits on CPUs with FMA), and no
# -ffast-math / -Ofast (which reorder and contract float arithmetic): -O3 enables neither.
COMPILE_ARGS = ["-O3", "-ffp-contract=off", "-fno-fast-math"]
# Kernels with OpenMP threads (``cython.parallel``): results do not depend on the number
# of threads (each thread computes whole, independent items; see the modules).
OPENMP = {"coref.gibbs._gibbs"}


def _extension(pyx):
    name = ".".join(pyx.with_suffix("").parts)
    omp = ["-fopenmp"] if name in OPENMP else []
    return Extension(
        name,
        [str(pyx)],
        include_dirs=[np.get_include()],
        extra_compile_args=COMPILE_ARGS + omp,
        extra_link_args=omp,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )


extensions = [_extension(pyx) for pkg in ("sampling", "coref") for pyx in sorted(Path(pkg).rglob("*.pyx"))]


def _data_files():
    out = {}
    for f in sorted((HERE / "data").rglob("*")):
        if f.is_file():
            rel = f.relative_to(HERE)
            out.setdefault(str(Path("share/racing-inference") / rel.parent), []).append(str(rel))
    return sorted(out.items())


setup(
    ext_modules=cythonize(extensions, compiler_directives=COMPILER_DIRECTIVES),
    data_files=_data_files(),
)
