"""Import a compiled Cython kernel, or fail loudly with how to build it.

The package's hot loops live in Cython extensions (``*.pyx``). Every module that
needs one imports it through :func:`load_kernel`, so that running from an unbuilt
source tree (e.g. a Python session started in the repository root, which shadows
the installed build) raises one clear ``ImportError`` instead of an obscure
``cannot import name`` or a silent fall-back to the slow pure-Python twins. The
twins (``*_py.py``) are imported only by the tests that compare them with the
kernels.

This is what scikit-learn does for its own unbuilt checkouts.
"""
import importlib

__all__ = ["BUILD_HINT", "load_kernel"]

BUILD_HINT = (
    "the compiled kernels of racing-inference are not built in this source tree. "
    "Build them in place with `pip install -e .` (or `python setup.py build_ext --inplace`), "
    "or install the package with `pip install .` and run from outside the repository root "
    "(or with `python -P`) so that the checkout does not shadow the installed build."
)


def load_kernel(name):
    """Return the compiled extension module ``name`` (e.g. ``"coref.gibbs._gibbs"``).

    Parameters
    ----------
    name : str
        Dotted module name of a Cython extension of this package.

    Returns
    -------
    module

    Raises
    ------
    ImportError
        If the extension is not built (or cannot be loaded); the message names the
        module and says how to build it in place.
    """
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(f"cannot import the compiled kernel {name} ({exc}); {BUILD_HINT}", name=name) from exc
