import numpy as np
import pytest

from sampling import ControlVariate, race, taylor_control_variate
from sampling.control_variates import check_control_variate
from sampling.synthetic import MatrixLogF, exact_state, make_rewards


def _gauss_problem(n_data=20_000, n_states=6, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.normal(0.3, 1.0, size=n_data)
    theta = np.linspace(0.28, 0.32, n_states)
    rewards = -0.5 * (y[None, :] - theta[:, None]) ** 2
    return y, theta, rewards


def test_taylor_proxy_is_exact_for_quadratic_log_likelihood():
    # l_i(y) = -(y - theta_i)^2 / 2 is quadratic in y: the 2nd-order Taylor proxy is exact
    y, theta, rewards = _gauss_problem()
    y_hat = y.mean()
    cv = taylor_control_variate(y, -0.5 * (y_hat - theta) ** 2, -(y_hat - theta)[:, None],
                                -np.ones((theta.size, 1, 1)))
    idx = np.arange(0, y.size, 7)
    np.testing.assert_allclose(cv.proxy(np.arange(theta.size), idx), rewards[:, idx], atol=1e-12)
    np.testing.assert_allclose(cv.mean, rewards.mean(axis=1), rtol=1e-12)


def test_first_order_proxy_mean_is_value_at_reference():
    y, theta, rewards = _gauss_problem(n_data=1000)
    cv = taylor_control_variate(y, np.zeros(theta.size), np.ones((theta.size, 1)))
    idx = np.arange(1000)
    np.testing.assert_allclose(cv.proxy(np.arange(theta.size), idx).mean(axis=1), cv.mean, atol=1e-12)


def test_race_with_taylor_control_variate_is_cheap_and_right():
    y, theta, rewards = _gauss_problem()
    noise = 1e-4 * np.random.default_rng(1).standard_normal(rewards.shape)  # not explained by the proxy
    log_f = MatrixLogF(rewards + noise)
    y_hat = y.mean()
    cv = taylor_control_variate(y, -0.5 * (y_hat - theta) ** 2, -(y_hat - theta)[:, None],
                                -np.ones((theta.size, 1, 1)))
    rng = np.random.default_rng(2)
    for _ in range(10):
        g = rng.gumbel(size=theta.size)
        with_cv = race(log_f, np.zeros(theta.size), y.size, gumbels=g, rng=rng, control_variate=cv)
        plain = race(log_f, np.zeros(theta.size), y.size, gumbels=g, rng=rng)
        assert with_cv.state == exact_state(rewards + noise, np.zeros(theta.size), g)
        assert with_cv.n_evals <= plain.n_evals


def test_check_control_variate_accepts_tuple_and_object():
    f = lambda s, i: np.zeros((len(s), len(i)))
    assert isinstance(check_control_variate((f, [0.0, 1.0]), 2), ControlVariate)
    assert check_control_variate(None, 2) is None
    with pytest.raises(TypeError, match="proxy of race must be callable"):
        check_control_variate((1, [0.0, 1.0]), 2)
    with pytest.raises(ValueError, match="mean of race must be finite"):
        check_control_variate((f, [0.0, np.nan]), 2)


def test_race_rejects_proxy_of_wrong_shape():
    rewards = make_rewards("normal", 3, 200, 1e-2, rng=0)
    bad = (lambda s, i: np.zeros((len(i), len(s))), np.zeros(3))
    with pytest.raises(ValueError, match="control_variate proxy of race must return shape"):
        race(MatrixLogF(rewards), np.zeros(3), 200, control_variate=bad)
