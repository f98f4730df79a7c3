import numpy as np
import pytest

from sampling import as_generator
from sampling.exceptions import UAIFormatError


def test_as_generator_int_is_reproducible():
    assert as_generator(3).integers(1 << 30) == as_generator(3).integers(1 << 30)


def test_as_generator_passes_generator_through():
    g = np.random.default_rng(0)
    assert as_generator(g) is g


def test_as_generator_rejects_randomstate():
    with pytest.raises(TypeError, match="rng parameter must be"):
        as_generator(np.random.RandomState(0))


def test_uai_format_error_names_file_and_line():
    err = UAIFormatError("bad count", path="m.uai", line=7)
    assert str(err) == "m.uai:7: bad count"
    assert isinstance(err, ValueError)
