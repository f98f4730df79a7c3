"""ARCH likelihood kernels, gradients, priors, data loading and the cross-check with `arch`."""
import warnings

import numpy as np
import pytest
from scipy import stats

from sampling.arch import _loglik, _loglik_py
from sampling.arch.model import ARCHModel, softplus, softplus_inv
from sampling.arch.returns import (EXTREME_K, build_returns, check_returns, extreme_returns, load_prices,
                                   load_returns, standardise)
from sampling.arch.model import simulate_arch
from sampling.exceptions import DataWarning, ReturnsDataError
from sampling.utils.data import data_path


@pytest.fixture(scope="module")
def series():
    return simulate_arch(600, [0.4, 0.3, 0.15, 0.1], 5.0, rng=7)


@pytest.mark.parametrize("q", [1, 3, 7])
def test_kernel_matches_twin(series, q):
    rng = np.random.default_rng(q)
    r = np.ascontiguousarray(series)
    r2 = r * r
    alpha = rng.uniform(0.05, 0.5, q + 1)
    nu, c0, dc0 = 4.3, -0.7, 0.01
    idx = np.sort(rng.choice(np.arange(10, r.size), 120, replace=False)).astype(np.int64)
    out = {}
    for name, k in (("c", _loglik), ("py", _loglik_py)):
        lt = np.empty(idx.size)
        k.loglik_terms(r, r2, alpha, nu, c0, idx, lt)
        lg, g = np.empty(idx.size), np.empty(q + 2)
        k.loglik_grad(r, r2, alpha, nu, c0, dc0, idx, lg, g)
        s = np.empty(idx.size)
        k.variances(r2, alpha, idx, s)
        bin_of = (np.arange(r.size) % 5).astype(np.int64)
        coef = rng.normal(size=(5, 6)) if name == "c" else out["c"][5]
        ref_r, ref_s = np.linspace(-1, 1, 5), np.linspace(0.5, 2, 5)
        lh, h = np.empty(idx.size), np.empty(idx.size)
        k.loglik_cv_terms(r, r2, alpha, nu, c0, idx, bin_of, ref_r, ref_s, coef, lh, h)
        out[name] = (lt, lg, g, s, h, coef)
    for a, b in zip(out["c"][:5], out["py"][:5]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out["c"][0], out["c"][1])


def test_kernel_empty_index(series):
    r = np.ascontiguousarray(series)
    out = np.empty(0)
    _loglik.loglik_terms(r, r * r, np.array([1.0, 0.1]), 5.0, 0.0, np.empty(0, np.int64), out)
    g = np.full(3, 7.0)
    _loglik.loglik_grad(r, r * r, np.array([1.0, 0.1]), 5.0, 0.0, 0.0, np.empty(0, np.int64), out, g)
    np.testing.assert_array_equal(g, 0.0)


def test_terms_are_standardised_student_t_log_density(series):
    """l_t equals log of scipy's t density with scale sqrt(s (nu-2)/nu)."""
    m = ARCHModel(series, 3, 5)
    alpha, nu = np.array([0.4, 0.3, 0.15, 0.1]), 4.5
    x = m.unconstrained(alpha, nu)
    t = m.all_idx
    s = alpha[0] + sum(alpha[i] * series[t - i] ** 2 for i in range(1, 4))
    ref = stats.t.logpdf(series[t], nu, scale=np.sqrt(s * (nu - 2) / nu))
    np.testing.assert_allclose(m.loglik_terms(x), ref, rtol=1e-10)
    assert m.n_data == series.size - 5


def test_gradients_match_finite_differences(series):
    m = ARCHModel(series, 3, 3)
    x = np.random.default_rng(3).normal(-1.0, 0.5, 5)
    g = m.grad_log_posterior(x)
    fd = np.empty(5)
    for i in range(5):
        e = np.zeros(5)
        e[i] = 1e-6
        fd[i] = (m.log_posterior(x + e) - m.log_posterior(x - e)) / 2e-6
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-5)
    # per-datum gradients sum to the kernel gradient
    _, gk = m.loglik_grad(x)
    np.testing.assert_allclose(m.per_datum_grad(x).sum(axis=0), gk, rtol=1e-10)


def test_prior_is_gamma11_on_alpha_and_nu_minus_2():
    m = ARCHModel(np.random.default_rng(0).normal(size=100), 2, 2)
    x = np.array([-0.3, 0.2, 1.1, 0.7])
    alpha, nu = m.constrained(x)
    theta = np.append(alpha, nu - 2)
    # density over x = Gamma(1,1) density of theta times |d theta / d x| = sigmoid(x)
    ref = np.sum(stats.gamma.logpdf(theta, 1.0) + np.log(1 / (1 + np.exp(-x))))
    assert m.log_prior(x) == pytest.approx(ref, rel=1e-12)
    np.testing.assert_allclose(softplus_inv(softplus(x)), x, rtol=1e-12)


def test_laplace_draws_match_covariance(series):
    m = ARCHModel(series, 2, 2)
    lap = m.laplace()
    assert np.all(np.linalg.eigvalsh(lap.cov) > 0)
    d = lap.sample(np.random.default_rng(0)) - lap.mean
    assert lap.logpdf(lap.mean) > lap.logpdf(lap.mean + d)
    ref = stats.multivariate_normal(lap.mean, lap.cov).logpdf(lap.mean + d)
    assert lap.logpdf(lap.mean + d) == pytest.approx(ref, rel=1e-10)


# ------------------------------------------------------------------ cross-check with arch
def _arch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arch = pytest.importorskip("arch")
    return arch


@pytest.mark.parametrize("q", [1, 3])
def test_loglik_equals_arch_studentst(series, q):
    _arch()
    from arch.univariate import StudentsT, arch_model

    alpha = np.array([0.4, 0.3, 0.15, 0.1])[: q + 1]
    nu = 5.5
    am = arch_model(series, mean="Zero", vol="ARCH", p=q, dist="t", rescale=False)
    fixed = am.fix(np.append(alpha, nu))
    s2 = np.asarray(fixed.conditional_volatility) ** 2
    ref = StudentsT().loglikelihood([nu], series[q:], s2[q:], individual=True)
    m = ARCHModel(series, q, q)
    np.testing.assert_allclose(m.loglik_terms(m.unconstrained(alpha, nu)), ref, rtol=1e-10)


def test_map_close_to_arch_mle():
    """Weak prior, 3,000 points: our MAP is within 0.5 posterior sd of arch's MLE."""
    _arch()
    from arch.univariate import arch_model

    r = simulate_arch(3000, [0.5, 0.3, 0.1], 6.0, rng=11)
    am = arch_model(r, mean="Zero", vol="ARCH", p=2, dist="t", rescale=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mle = np.asarray(am.fit(disp="off").params)
    m = ARCHModel(r, 2, 2)
    lap = m.laplace()
    alpha, nu = m.constrained(lap.mean)
    ours = np.append(alpha, nu)
    # posterior sd in the constrained space via the delta method
    x = lap.mean
    jac = 1 / (1 + np.exp(-x))
    sd = np.sqrt(np.diag(lap.cov)) * jac
    # alphas: the Gamma(1,1) prior is weak -> within 0.5 sd of the MLE
    assert np.all(np.abs(ours[:3] - mle[:3]) < 0.5 * sd[:3]), (ours, mle, sd)
    # nu: Gamma(1,1) on nu-2 (mean 3) is not weak; it pulls nu down by about
    # cov * d log prior / d nu (one nat per unit nu): within 1.5 sd, and below
    assert mle[3] - 1.5 * sd[3] < ours[3] < mle[3], (ours, mle, sd)
    # with the prior switched off our likelihood's maximiser is arch's MLE
    from scipy import optimize

    res = optimize.minimize(lambda z: -m.loglik_terms(z).sum(), m.unconstrained(mle[:3], mle[3]),
                            method="Nelder-Mead", options={"xatol": 1e-8, "fatol": 1e-9,
                                                           "maxiter": 4000})
    a_ml, nu_ml = m.constrained(res.x)
    # (arch also scores the first q points with a backcast; we condition on them,
    # so the two optima differ by a small fraction of a posterior sd)
    assert np.all(np.abs(np.append(a_ml, nu_ml) - mle) < 0.05 * sd), (a_ml, nu_ml, mle)


# ------------------------------------------------------------------ data
def test_shipped_default_returns():
    r = load_returns()
    assert 14000 < r.size < 14180
    assert np.all(np.isfinite(r))
    assert 0.15 < np.mean(r == 0) < 0.25  # 1-cent tick: zero returns kept


def test_build_returns_drops_session_gaps():
    t = np.array(["2011-01-03 10:00", "2011-01-03 10:01", "2011-01-04 09:00",
                  "2011-01-04 09:03"], dtype="datetime64[m]")
    p = np.array([100.0, 101.0, 90.0, 90.0])
    r = build_returns(p, t)
    np.testing.assert_allclose(r, [100 * np.log(1.01), 0.0])


def test_returns_errors(tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text("Date,Close\n2020-01-01,1.0\n2020-01-02,\n2020-01-03,1.2\n")
    with pytest.raises(ReturnsDataError, match=r"bad\.csv: 1 missing/NaN price.*row 2"):
        load_prices(f)
    f2 = tmp_path / "noprice.csv"
    f2.write_text("Date,Volume\n2020-01-01,1\n")
    with pytest.raises(ReturnsDataError, match=r"noprice\.csv: no price column"):
        load_prices(f2)
    with pytest.raises(ReturnsDataError, match="too few returns: got 40"):
        check_returns(np.random.default_rng(0).normal(size=40), q_max=5)
    with pytest.raises(ReturnsDataError, match="constant returns series"):
        check_returns(np.zeros(500), q_max=5)
    with pytest.raises(ReturnsDataError, match=r"spy\.txt: 1 NaN/inf return\(s\), first at position 3"):
        check_returns([0.1, 0.2, 0.3, np.nan] + [0.0] * 100, q_max=5, name="spy.txt")
    with pytest.raises(ReturnsDataError, match="cannot read"):
        load_prices(tmp_path / "missing.csv")


def test_an_infinite_price_is_reported_as_non_finite(tmp_path):
    f = tmp_path / "inf.csv"
    f.write_text("Date,Close\n2020-01-01,1.0\n2020-01-02,1.1\n2020-01-03,inf\n")
    with pytest.raises(ReturnsDataError, match=r"inf\.csv: 1 non-finite \(infinite\) price\(s\), first at "
                                               r"data row 3 \(inf\)"):
        load_prices(f)


def test_daily_bars_keep_every_return():
    """The 60-minute session-break rule is for intraday bars: daily closes are all more than
    60 minutes apart, and before they were all dropped (the shipped S&P 500 file gave 0 returns)."""
    t = np.array(["2011-01-03", "2011-01-04", "2011-01-05", "2011-01-07"], dtype="datetime64[D]")
    p = np.array([100.0, 101.0, 99.0, 99.0])
    np.testing.assert_allclose(build_returns(p, t), 100 * np.diff(np.log(p)))
    assert load_returns(data_path("returns", "sp500_daily_arch.csv.gz")).size == 5030


def test_extreme_returns_rule():
    """|r - median| > k * 1.4826 * MAD, k = 50; MAD = 0 falls back to 1.2533 * mean |r - median|."""
    assert EXTREME_K == 50
    r = np.array([-1.0, 0.0, 1.0, 0.0, -1.0, 1.0, 74.0, 0.0, 75.0])
    # median 0, MAD 1, robust sd 1.4826: the threshold is 74.13
    np.testing.assert_array_equal(extreme_returns(r), [8])
    np.testing.assert_array_equal(extreme_returns(r, k=10), [6, 8])
    flat = np.zeros(100)
    flat[[3, 50]] = [1.0, 200.0]  # MAD 0: s = 1.2533 * 201 / 100 = 2.519, threshold 126
    np.testing.assert_array_equal(extreme_returns(flat), [50])
    assert extreme_returns(np.zeros(10)).size == 0
    for name in ("spy_1min_2011-01_pyalgotrade.txt", "spy_1min_2011-03_pyalgotrade.txt"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", DataWarning)  # the shipped series raise no warning
            load_returns(data_path("returns", name))


def test_load_returns_names_the_rows_of_extreme_returns(tmp_path):
    f = tmp_path / "p.csv"
    p = 100 * np.exp(np.cumsum(np.random.default_rng(1).normal(0, 0.05, 300)) / 100)
    p[100] *= 10.0
    f.write_text("Close\n" + "\n".join(f"{v:.6f}" for v in p) + "\n")
    with pytest.warns(DataWarning, match=r"p\.csv: 2 extreme return\(s\).*at data row 101 \(\+230\.\d%\), "
                                         r"data row 102 \(-230\.\d%\)"):
        r = load_returns(f)
    assert r.size == 299  # flagged, not dropped


def test_standardise():
    z, mu, sc = standardise(np.array([1.0, 2.0, 3.0, 6.0]))
    assert mu == 3.0 and np.mean(z) == pytest.approx(0) and np.std(z) == pytest.approx(1)
