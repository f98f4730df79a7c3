"""Scalable discrete sampling as a best-arm problem (Chen & Ghahramani, 2016) and
anytime bounds on partition functions (Lou, Dechter & Ihler, 2017).

The public API is re-exported here (see ``__all__``) and imported lazily, on first
use: ``import sampling`` does not import SciPy, the compiled kernels or the
sub-packages, so that ``coref`` commands start fast and an unbuilt source tree fails
with a clear ImportError (``sampling.utils.kernels``) only where a kernel is needed.
``import sampling; sampling.arch.select_order(...)`` works like ``import sampling.arch``, and
``sampling.datasets`` locates the shipped data (``sampling.datasets.uai_path("pedigree1")``).
"""
from sampling.utils.cli import lazy_exports

# the package version; tests/sampling/test_sampling_package.py keeps it equal to
# pyproject.toml's and to the installed distribution's
__version__ = "0.2.0"

_EXPORTS = {
    "as_generator": "sampling.utils.rng",
    "gumbel_max": "sampling.gumbel",
    "b_normal": "sampling.bounds_normal",
    "race": "sampling.racing",
    "RaceResult": "sampling.racing",
    "lil_ucb": "sampling.ucb",
    "sample_discrete": "sampling.discrete",
    "mh_accept": "sampling.mh",
    "MHTestResult": "sampling.mh",
    "sgld_proposal": "sampling.sgld",
    "sgld_step": "sampling.sgld",
    "log_q": "sampling.sgld",
    "ControlVariate": "sampling.control_variates",
    "taylor_control_variate": "sampling.control_variates",
}

__all__ = list(_EXPORTS)

# sub-packages and modules, also loaded on first use
_SUBPACKAGES = ("arch", "bounds", "datasets")

_get_export, _dir_exports = lazy_exports("sampling", _EXPORTS, globals())


def __getattr__(name):
    if name in _SUBPACKAGES:
        import importlib

        module = importlib.import_module(f"sampling.{name}")
        globals()[name] = module
        return module
    return _get_export(name)


def __dir__():
    return sorted(set(_dir_exports()) | set(_SUBPACKAGES))
