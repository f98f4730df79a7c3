"""Factor / GraphicalModel: validation, log_value, conditioning, squeezing."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sampling.bounds.exact import log_partition_enumerate
from sampling.bounds._tables import broadcast_sum, logsumexp0
from sampling.bounds.model import Factor, GraphicalModel, random_model


def _tiny():
    # f0(x0) f1(x0, x1) f2(x1, x2), cards 2 2 3 (same as tests/data/bounds_tiny.uai)
    f0 = Factor.from_values((0,), [0.25, 0.75])
    f1 = Factor.from_values((0, 1), [[1.0, 2.0], [0.5, 0.0]])
    f2 = Factor.from_values((1, 2), [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    return GraphicalModel([2, 2, 3], [f0, f1, f2])


def test_log_value_matches_hand_computation():
    m = _tiny()
    x = np.array([[1, 0, 2], [1, 1, 0], [0, 1, 1]])
    with np.errstate(divide="ignore"):
        expect = np.log([0.75 * 0.5 * 3.0, 0.0, 0.25 * 2.0 * 5.0])
        np.testing.assert_allclose(m.log_value(x), expect)
    assert m.log_value(np.array([0, 0, 0])) == pytest.approx(np.log(0.25))


def test_zero_is_minus_inf_not_nan():
    f = Factor.from_values((0,), [0.0, 1.0])
    assert f.log_values[0] == -np.inf


@pytest.mark.parametrize(
    "scope, values, exc, match",
    [
        ((0, 0), np.zeros((2, 2)), ValueError, "repeat"),
        ((0,), np.zeros((2, 2)), ValueError, "one axis per scope"),
        ((0,), [np.nan, 0.0], ValueError, "NaN"),
        ((0,), [np.inf, 0.0], ValueError, r"\+inf"),
        ((0.5,), [0.0, 0.0], TypeError, "ints"),
        ((-1,), [0.0, 0.0], ValueError, "non-negative"),
    ],
    ids=["repeat", "ndim", "nan", "posinf", "float-id", "negative-id"],
)
def test_factor_validation(scope, values, exc, match):
    with pytest.raises(exc, match=match):
        Factor(scope, values)


def test_model_validation():
    with pytest.raises(ValueError, match="cards"):
        GraphicalModel([2, 0], [])
    with pytest.raises(ValueError, match="only 2 variables"):
        GraphicalModel([2, 2], [Factor((2,), [0.0, 0.0])])
    with pytest.raises(ValueError, match="shape"):
        GraphicalModel([2, 3], [Factor((1,), [0.0, 0.0])])
    with pytest.raises(ValueError, match="out of range"):
        _tiny().log_value(np.array([[0, 0, 3]]))
    with pytest.raises(ValueError, match="shape"):
        _tiny().log_value(np.array([[0, 0]]))


def test_condition_gives_probability_of_evidence():
    m = _tiny()
    c = m.condition({2: 1})
    assert c.cards.tolist() == [2, 2, 1]
    assert all(2 not in f.scope for f in c.factors)
    X = np.array(list(itertools.product(range(2), range(2), range(3))))
    lv = m.log_value(X)
    keep = X[:, 2] == 1
    with np.errstate(divide="ignore"):
        expect = np.log(np.exp(lv[keep]).sum())
    assert log_partition_enumerate(c) == pytest.approx(expect, abs=1e-12)
    with pytest.raises(ValueError, match="out of range"):
        m.condition({2: 3})
    with pytest.raises(ValueError, match="out of range"):
        m.condition({5: 0})


def test_condition_can_empty_a_scope():
    m = _tiny().condition({0: 1})
    assert m.factors[0].scope == ()
    assert float(m.factors[0].log_values) == pytest.approx(np.log(0.75))


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_squeeze_keeps_values(seed):
    m = random_model(6, 7, max_card=2, zero_prob=0.1, rng=seed)
    s = m.squeeze()
    for f in s.factors:
        assert all(s.cards[v] > 1 for v in f.scope)
    X = np.array(list(itertools.product(*[range(c) for c in m.cards])))
    np.testing.assert_array_equal(m.log_value(X), s.log_value(X))


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_product_commutes_and_marginal_order_is_free(seed):
    rng = np.random.default_rng(seed)
    cards = {0: 2, 1: 3, 2: 2}
    a = ((0, 1), rng.normal(size=(2, 3)))
    b = ((2, 0), np.where(rng.random((2, 2)) < 0.3, -np.inf, rng.normal(size=(2, 2))))
    for scope in [(0, 1, 2), (2, 1, 0)]:
        shape = tuple(cards[v] for v in scope)
        ab = broadcast_sum(scope, shape, [a, b])
        ba = broadcast_sum(scope, shape, [b, a])
        np.testing.assert_array_equal(ab, ba)
    t = broadcast_sum((0, 1, 2), (2, 3, 2), [a, b])
    # sum out 0 then 1 == sum out 1 then 0 (axes moved to the front)
    one = logsumexp0(logsumexp0(t))
    two = logsumexp0(logsumexp0(np.moveaxis(t, 1, 0)))
    np.testing.assert_allclose(one, two, atol=1e-12)
