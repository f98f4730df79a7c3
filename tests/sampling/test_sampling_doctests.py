import doctest
import importlib

import pytest

MODULES = ["sampling.gumbel", "sampling.bounds_normal", "sampling.racing", "sampling.mh", "sampling.discrete",
           "sampling.ucb", "sampling.sgld", "sampling.control_variates", "sampling.datasets",
           "sampling.bounds.wmb", "sampling.bounds.dis"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
