"""Compiled WMB kernels against their pure-Python twin."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sampling.bounds import _wmb, _wmb_py
from sampling.bounds.model import _logsumexp0, _logsumexp0_numpy


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(seed=st.integers(0, 2**31 - 1), card=st.integers(1, 5), n=st.integers(0, 9),
       weight=st.sampled_from([1.0, 0.5, 0.01, 3.0]), zero_prob=st.sampled_from([0.0, 0.5, 1.0]))
def test_lse_axis0_matches_twin(seed, card, n, weight, zero_prob):
    rng = np.random.default_rng(seed)
    a = rng.normal(scale=20, size=(card, n))
    a[rng.random(a.shape) < zero_prob] = -np.inf
    out_c, out_p = np.empty(n), np.empty(n)
    _wmb.lse_axis0(a, weight, out_c, np.empty(n))
    _wmb_py.lse_axis0(a, weight, out_p, np.empty(n))
    np.testing.assert_array_equal(np.isneginf(out_c), np.isneginf(out_p))
    fin = np.isfinite(out_p)
    np.testing.assert_allclose(out_c[fin], out_p[fin], rtol=1e-12, atol=1e-12)
    assert not np.isnan(out_c).any()
    np.testing.assert_allclose(_logsumexp0(a, weight), _logsumexp0_numpy(a, weight), rtol=1e-12, atol=1e-12)


def test_lse_axis0_edge_cases():
    out = np.empty(2)
    _wmb.lse_axis0(np.array([[0.0, -np.inf]]), 1.0, out, np.empty(2))  # a single state
    assert out[0] == 0.0 and out[1] == -np.inf
    _wmb.lse_axis0(np.log(np.array([[1.0, 2.0], [3.0, 2.0]])), 1.0, out, np.empty(2))
    np.testing.assert_allclose(out, np.log([4.0, 4.0]))
    # weight -> 0 approaches the max
    _wmb.lse_axis0(np.array([[1.0, 5.0], [2.0, 5.0]]), 1e-6, out, np.empty(2))
    np.testing.assert_allclose(out, [2.0, 5.0], atol=1e-5)
    assert _logsumexp0(np.array([-np.inf, -np.inf])) == -np.inf
    with pytest.raises(ValueError):
        _wmb.lse_axis0(np.zeros((2, 3)), 1.0, np.empty(2), np.empty(3))
