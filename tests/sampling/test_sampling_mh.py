import numpy as np
import pytest
from scipy import stats

from sampling import MHTestResult, log_q, mh_accept, sgld_proposal, sgld_step


def _l(mean, n=50_000, sd=1.0, seed=0, dist="normal"):
    rng = np.random.default_rng(seed)
    if dist == "normal":
        raw = rng.standard_normal(n)
    elif dist == "uniform":
        raw = rng.random(n)
    else:
        raw = rng.lognormal(0.0, 2.0, n)
    z = (raw - raw.mean()) / raw.std()
    return mean + sd * z


def test_mh_clear_decisions_use_little_data():
    l = _l(0.2)
    acc = mh_accept(lambda i: l[i], l.size, 0.0, rng=0)
    rej = mh_accept(lambda i: l[i], l.size, 0.4, rng=0)
    assert isinstance(acc, MHTestResult)
    assert acc.accept and not rej.accept
    assert acc.n_evals < 2000 and rej.n_evals < 2000 and not acc.exact


def test_mh_exact_when_first_batch_is_n():
    l = _l(0.001, n=300)
    for mu0 in (0.0, 0.002, l.mean() - 1e-12, l.mean() + 1e-12):
        res = mh_accept(lambda i: l[i], l.size, mu0, first_batch=300, rng=0)
        assert res.exact and res.n_evals == 300 and res.n_rounds == 1
        assert res.accept == (l.mean() > mu0)
        assert res.mu_hat == pytest.approx(l.mean(), abs=1e-12)


@pytest.mark.parametrize("dist", ["normal", "uniform"])
def test_mh_error_rate_within_delta(dist):
    # mu0 spread around the true mean: hard decisions; compare with the exact test
    l = _l(0.0, n=20_000, dist=dist, seed=1)
    rng = np.random.default_rng(2)
    delta, n = 0.1, 1000
    se_full = l.std() / np.sqrt(l.size)
    errors = 0
    for _ in range(n):
        mu0 = rng.normal(0.0, 5 * se_full)
        res = mh_accept(lambda i: l[i], l.size, mu0, delta=delta, rng=rng)
        errors += res.accept != (l.mean() > mu0)
    assert errors / n <= delta + 3 * np.sqrt(delta * (1 - delta) / n)


def test_mh_normal_assumption_fails_on_extreme_skew():
    # Known limitation (paper Sec. 5.1 caveat): with D = 2 and LogNormal(0, 2) terms the
    # early subsample misses the rare huge values, under-estimates mean and variance, and
    # the test falsely rejects more often than delta. Errors are one-sided (false rejects).
    l = _l(0.0, n=20_000, dist="lognormal", seed=1)
    rng = np.random.default_rng(2)
    se_full = l.std() / np.sqrt(l.size)
    false_acc = false_rej = 0
    for _ in range(600):
        mu0 = rng.normal(0.0, 5 * se_full)
        res = mh_accept(lambda i: l[i], l.size, mu0, delta=0.1, rng=rng)
        false_acc += res.accept and not l.mean() > mu0
        false_rej += (not res.accept) and l.mean() > mu0
    assert false_acc <= 3 and false_rej / 600 > 0.1


def test_mh_ebs_bound_and_infinite_mu0():
    l = _l(0.5, n=5000)
    res = mh_accept(lambda i: l[i], l.size, 0.0, bound="ebs", reward_range=np.ptp(l), rng=0)
    assert res.accept
    assert mh_accept(lambda i: l[i], l.size, np.inf).accept is False
    r = mh_accept(lambda i: l[i], l.size, -np.inf)
    assert r.accept and r.n_evals == 0


def test_mh_control_variate_reduces_work():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(50_000)
    l = 0.3 * x + 1e-3 * rng.standard_normal(x.size) + 1e-4  # a linear proxy explains most of l
    h = lambda i: 0.3 * x[i]
    plain = mh_accept(lambda i: l[i], l.size, 0.0, rng=4)
    cv = mh_accept(lambda i: l[i], l.size, 0.0, rng=4, control_variate=(h, 0.3 * x.mean()))
    assert cv.n_evals < plain.n_evals
    assert cv.accept == (l.mean() > 0.0)


@pytest.mark.parametrize(
    "kw, exc, match",
    [
        (dict(delta=1.0), ValueError, "delta parameter of mh_accept must be in \\(0, 1\\)"),
        (dict(first_batch=101), ValueError, "first_batch parameter of mh_accept must be <= n_data=100"),
        (dict(bound="ebs"), ValueError, "reward_range parameter of mh_accept is required"),
        (dict(control_variate=lambda i: i), TypeError, "control_variate parameter of mh_accept"),
    ],
)
def test_mh_rejects_bad_arguments(kw, exc, match):
    with pytest.raises(exc, match=match):
        mh_accept(lambda i: np.zeros(len(i)), 100, 0.0, **kw)


def test_mh_rejects_bad_callable_output():
    with pytest.raises(ValueError, match="must return shape \\(len\\(idx\\),\\)"):
        mh_accept(lambda i: np.zeros((len(i), 2)), 100, 0.0)
    with pytest.raises(ValueError, match="NaN or infinite"):
        mh_accept(lambda i: np.full(len(i), np.nan), 100, 0.0)
    with pytest.raises(ValueError, match="mu0 parameter of mh_accept must not be NaN"):
        mh_accept(lambda i: np.zeros(len(i)), 100, float("nan"))


# ------------------------------------------------------------------ SGLD
def test_log_q_is_the_gaussian_density():
    th, to, g, eps = np.array([0.1, -0.3]), np.array([0.4, 0.2]), np.array([1.0, -2.0]), 0.05
    ref = stats.multivariate_normal(th + 0.5 * eps * g, eps * np.eye(2)).logpdf(to)
    assert log_q(to, th, g, eps) == pytest.approx(ref, rel=1e-12)


def test_sgld_proposal_moments_and_forward_density():
    th, g, eps = np.array([1.0, 2.0]), np.array([-4.0, 2.0]), 0.01
    rng = np.random.default_rng(5)
    props = []
    for _ in range(4000):
        p, lq = sgld_proposal(th, g, step_size=eps, rng=rng)
        props.append(p)
    assert lq == pytest.approx(log_q(p, th, g, eps), rel=1e-12)
    props = np.array(props)
    se = np.sqrt(eps / 4000)
    assert np.all(np.abs(props.mean(axis=0) - (th + 0.5 * eps * g)) < 5 * se)
    assert np.all(np.abs(props.var(axis=0) / eps - 1) < 5 * np.sqrt(2 / 4000))


def test_sgld_step_samples_a_gaussian():
    # plain SGLD on N(0, 1) with a small step: stationary variance ~ 1
    rng = np.random.default_rng(6)
    th, xs = np.zeros(1), []
    for _ in range(20_000):
        th = sgld_step(th, lambda t: -t, step_size=0.05, rng=rng)
        xs.append(th[0])
    xs = np.array(xs[1000:])
    assert abs(xs.mean()) < 0.1 and abs(xs.var() - 1.0) < 0.15


def test_sgld_rejects_bad_arguments():
    with pytest.raises(ValueError, match="step_size parameter of sgld_proposal must be finite and > 0"):
        sgld_proposal([0.0], [0.0], step_size=0.0)
    with pytest.raises(ValueError, match="must have the same shape"):
        sgld_proposal([0.0, 1.0], [0.0], step_size=0.1)
    with pytest.raises(ValueError, match="must have the same shape"):
        log_q([0.0], [0.0, 1.0], [0.0], 0.1)
