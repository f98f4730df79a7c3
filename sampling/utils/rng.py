"""Turn the user-facing ``rng`` argument into a ``numpy.random.Generator`` once."""
import numbers

import numpy as np


def as_generator(rng=None):
    """Return a ``numpy.random.Generator`` for ``rng``.

    Parameters
    ----------
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator
        ``None`` gives fresh OS entropy; an int or SeedSequence seeds a new
        PCG64 generator; a Generator is returned unchanged (and advanced in
        place by the caller).

    Raises
    ------
    TypeError
        If ``rng`` is of any other type (``numpy.random.RandomState`` included).
    """
    if rng is None or isinstance(rng, (numbers.Integral, np.random.SeedSequence)):
        return np.random.default_rng(rng)
    if isinstance(rng, np.random.Generator):
        return rng
    raise TypeError(
        "the rng parameter must be None, an int, a SeedSequence or a "
        f"numpy.random.Generator; got {type(rng).__name__} instead"
    )
