"""Carlin-Chib sampler: control variates, racing steps, select_order, checkpoints, CLI."""
import json
import math
import pickle

import numpy as np
import pytest

from sampling.arch import _loglik_py, select_order
from sampling.arch import sampler as S
from sampling.arch.model import ARCHModel, standardise
from sampling.arch.model import simulate_arch
from sampling.exceptions import ReturnsDataError


ORDERS = (1, 2, 4)
pytestmark = pytest.mark.filterwarnings("ignore::sampling.exceptions.LowESSWarning")


@pytest.fixture(scope="module")
def returns():
    return simulate_arch(1500, [0.3, 0.4, 0.2], 6.0, rng=2016)


@pytest.fixture(scope="module")
def ctx(returns):
    z, _, _ = standardise(returns)
    laps = [ARCHModel(z, q, max(ORDERS)).laplace() for q in ORDERS]
    return S.ChainContext(z, ORDERS, laps)


@pytest.mark.parametrize("kind", ["binned", "taylor"])
def test_control_variate_mean_is_exact_and_reduces_variance(ctx, kind):
    rng = np.random.default_rng(0)
    if kind == "taylor":
        ctx = S.ChainContext(ctx.models[0].r, ORDERS, ctx.laplaces, control_variate="taylor")
    for j in range(ctx.D):
        x = ctx.laplaces[j].sample(rng)
        res, l = ctx.cv_rewards(j, x, ctx.inliers)
        # population mean of the proxy is exact: the residual rewards keep the sum
        assert res.sum() == pytest.approx(l.sum(), abs=1e-8)
        assert np.var(res) < np.var(l) / 100
        # outliers and inliers partition the data
    assert ctx.n_in + ctx.outliers.size == ctx.n_data
    assert np.intersect1d(ctx.inliers, ctx.outliers).size == 0
    assert ctx.outliers.size == round(0.2 * ctx.n_data)


def test_gradient_control_variate(ctx):
    """Linearised gradient CV: exact at the reference and over the full batch; low noise."""
    rng = np.random.default_rng(4)
    for j in range(ctx.D):
        mod, gcv = ctx.models[j], ctx.gcvs[j]
        inl = ctx.inliers
        _, g_ref = mod.loglik_grad(gcv.x0, inl)
        lin_ref, _ = gcv.linear_sums(gcv.x0, gcv.batch_terms(inl[:5]))
        np.testing.assert_allclose(lin_ref, g_ref, rtol=1e-9, atol=1e-8)
        x = ctx.laplaces[j].sample(rng)
        _, g_x = mod.loglik_grad(x, inl)
        # the batch-sum of the expansion equals its population sum when B = all inliers
        lin, lin_b = gcv.linear_sums(x, gcv.batch_terms(inl))
        np.testing.assert_allclose(lin, lin_b, rtol=1e-9, atol=1e-8)
        # first-order accuracy near the reference: error O(|x - x0|^2)
        xn = gcv.x0 + 0.05 * ctx.laplaces[j].chol @ rng.standard_normal(gcv.x0.size)
        _, g_n = mod.loglik_grad(xn, inl)
        lin_n, _ = gcv.linear_sums(xn, gcv.batch_terms(inl[:5]))
        assert np.abs(lin_n - g_n).max() < 0.05 * np.abs(g_ref - g_n).max()
        # a 100-point batch estimate is unbiased-ish and far less noisy than plain SGLD
        est, plain = [], []
        for _ in range(30):
            b = inl[rng.choice(inl.size, 100, replace=False)]
            _, gb = mod.loglik_grad(x, b)
            lin, lin_b = gcv.linear_sums(x, gcv.batch_terms(b))
            est.append(lin + inl.size / 100 * (gb - lin_b))
            plain.append(inl.size / 100 * gb)
        err = np.linalg.norm(np.array(est) - g_x, axis=1).mean()
        err_plain = np.linalg.norm(np.array(plain) - g_x, axis=1).mean()
        assert err < 0.05 * err_plain


def test_racing_gibbs_matches_exact_gumbel_max(ctx):
    """With the same Gumbels, racing picks the exact arm in >= 1 - 2 delta of draws."""
    rng = np.random.default_rng(1)
    xs = [lap.mean.copy() for lap in ctx.laplaces]
    log_f0 = np.zeros(ctx.D)
    stats = S.new_stats()
    for _ in range(100):
        xs = [lap.sample(rng) for lap in ctx.laplaces]
        S._race_q(ctx, xs, log_f0, rng, delta=0.05, first_batch=50, stats=stats, check=True)
    assert stats["gibbs_checks"] == 100
    assert stats["gibbs_errors"] <= 10  # binomial(100, <= 0.05): P(> 10) < 0.012
    assert 0 < stats["n_evals"] < 100 * ctx.D * ctx.n_in


def test_exact_gibbs_frequencies(ctx):
    """The exact q-update draws from the Carlin-Chib conditional (Gumbel-max, Eq. 2)."""
    rng = np.random.default_rng(3)
    st = S.ChainState(ctx, rng, np.zeros(ctx.D), [0.5] * ctx.D)
    st.xs = [lap.mean.copy() for lap in ctx.laplaces]
    tot = np.array([ctx.models[k].loglik_terms(st.xs[k]).sum() for k in range(ctx.D)])
    lw = tot + np.array([ctx.log_joint_prior(k, st.xs[k]) for k in range(ctx.D)])
    st.log_pi = -lw  # makes the conditional uniform
    n = 3000
    draws = [S._gibbs_q(ctx, st, method="exact", delta=0.05, first_batch=50,
                        stats=S.new_stats(), check=False) for _ in range(n)]
    freq = np.bincount(draws, minlength=ctx.D) / n
    p = 1 / ctx.D
    assert np.all(np.abs(freq - p) < 5 * math.sqrt(p * (1 - p) / n))


@pytest.mark.parametrize("method,pseudo", [("exact", "pilot"), ("subsampled", "pilot"),
                                           ("subsampled", "laplace")])
def test_select_order_runs_and_accounts(returns, method, pseudo):
    res = select_order(returns, orders=ORDERS, method=method, n_iterations=150, n_warmup=100,
                       n_chains=2, rng=5, check_every=3, grad_batch=200,
                       n_pilot=200, pseudo_prior=pseudo)
    D = len(ORDERS)
    assert res.posterior.shape == (D,) and res.posterior.sum() == pytest.approx(1.0)
    assert res.q_trace.shape == (2, 150) and set(np.unique(res.q_trace)) <= set(ORDERS)
    assert res.log_adjusted_prior_trace.shape == (2, 100, D)
    assert np.all(np.diff(res.n_evals_trace, axis=1) > 0)
    assert res.n_loglik_evals == res.n_evals_trace[:, -1].sum()
    assert sum(res.evals_by_component.values()) == res.n_loglik_evals_sampling
    assert np.all((res.acceptance_rate > 0.05) & (res.acceptance_rate < 0.95))
    n = res.n_data
    per_sweep = res.n_loglik_evals_sampling / 300
    if method == "exact":
        assert res.gibbs_error_rate is None
        # D N for Gibbs, N for the proposal, + N when q changed
        assert (D + 1) * n <= per_sweep <= (D + 2) * n
    else:
        assert res.gibbs_error_rate <= 0.1 and res.mh_error_rate <= 0.1
        assert per_sweep < 0.6 * (D + 1) * n
    # the truth is ARCH(2): ARCH(1) is far less likely
    assert res.posterior[0] < 0.05
    assert json.dumps(res.summary())


def test_python_twin_gives_identical_chain(returns):
    kw = dict(orders=ORDERS, method="subsampled", n_iterations=40, n_warmup=20, n_chains=1, rng=9,
              n_pilot=40)
    a = select_order(returns, **kw)
    b = select_order(returns, kernel=_loglik_py, **kw)
    np.testing.assert_array_equal(a.q_trace, b.q_trace)
    assert a.n_loglik_evals == b.n_loglik_evals


def test_checkpoint_resume_matches_uninterrupted(returns, tmp_path, monkeypatch):
    kw = dict(orders=ORDERS, method="subsampled", n_iterations=60, n_warmup=40, n_chains=2,
              rng=11, checkpoint_every=20, n_pilot=100)
    full = select_order(returns, **kw)
    ck = tmp_path / "ck.pkl"
    real = S.run_chain
    calls = {"n": 0}

    def flaky(*a, **k):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(S, "run_chain", flaky)
    with pytest.raises(KeyboardInterrupt):
        select_order(returns, checkpoint=str(ck), **kw)
    monkeypatch.setattr(S, "run_chain", real)
    with open(ck, "rb") as fh:
        assert pickle.load(fh)["phase"] == "sample"
    resumed = select_order(returns, checkpoint=str(ck), resume=True, **kw)
    np.testing.assert_array_equal(resumed.q_trace, full.q_trace)
    np.testing.assert_array_equal(resumed.posterior, full.posterior)
    with pytest.raises(ValueError, match="other settings"):
        select_order(returns, checkpoint=str(ck), resume=True, **{**kw, "n_iterations": 61})


def test_select_order_errors(returns):
    with pytest.raises(ReturnsDataError, match="NaN"):
        select_order(np.append(returns, np.nan), orders=ORDERS)
    with pytest.raises(ReturnsDataError, match="too few returns"):
        select_order(returns[:30], orders=ORDERS, name="x.csv")
    with pytest.raises(ReturnsDataError, match="constant"):
        select_order(np.ones(500), orders=ORDERS)
    with pytest.raises(ValueError, match="method parameter"):
        select_order(returns, orders=ORDERS, method="fast")
    with pytest.raises(ValueError, match="orders parameter"):
        select_order(returns, orders=(3,))
    with pytest.raises(ValueError, match="delta parameter"):
        select_order(returns, orders=ORDERS, delta=1.5)


def test_cli_writes_outputs(returns, tmp_path):
    from sampling.cli import main

    prices = 100 * np.exp(np.cumsum(np.append(0.0, returns)) / 100)
    f = tmp_path / "prices.csv"
    f.write_text("price\n" + "\n".join(f"{p:.6f}" for p in prices) + "\n")
    out = tmp_path / "out"
    rc = main(["arch", str(f), "--orders", "1,2,4", "--iterations", "60", "--warmup", "40",
               "--chains", "2", "--method", "both", "--out", str(out), "--no-progress",
               "--check-every", "5", "--pilot", "100"])
    assert rc == 0
    summ = json.loads((out / "summary.json").read_text())
    assert set(summ["results"]) == {"subsampled", "exact"}
    assert 0 <= summ["tv_posterior"] <= 1
    for name in ("posterior.csv", "q_trace.csv", "fig2b_log_posterior.png",
                 "fig2c_adjusted_posterior.png", "fig2d_autocorrelation.png"):
        assert (out / name).stat().st_size > 0
    # resume of a finished run reuses the checkpoints
    assert main(["arch", str(f), "--orders", "1,2,4", "--iterations", "60", "--warmup", "40",
                 "--chains", "2", "--method", "both", "--out", str(out), "--no-progress",
                 "--check-every", "5", "--resume", "--no-plots", "--pilot", "100"]) == 0


def test_cli_bad_file(tmp_path, capsys):
    from sampling.cli import main

    f = tmp_path / "broken.csv"
    f.write_text("Close\n1.0\nnan\n1.1\n")
    assert main(["arch", str(f), "--no-progress"]) == 1
    assert "broken.csv" in capsys.readouterr().err
    g = tmp_path / "short.csv"
    g.write_text("Close\n" + "\n".join(str(1 + 0.01 * i) for i in range(20)) + "\n")
    assert main(["arch", str(g), "--no-progress"]) == 1
    assert "too few returns" in capsys.readouterr().err


@pytest.mark.slow
def test_subsampled_posterior_matches_exact():
    """Same adjusted prior and pseudo-priors: posteriors over q agree within 5 SE (TV < 0.1)."""
    r = simulate_arch(6000, [0.3, 0.25, 0.15, 0.1], 6.0, rng=77)
    orders = (1, 2, 3, 5)
    wl = select_order(r, orders=orders, method="exact", n_iterations=50, n_warmup=1500,
                      n_chains=2, rng=1, n_pilot=600)
    res = {}
    for m, seed in (("subsampled", 2), ("exact", 3)):
        res[m] = select_order(r, orders=orders, method=m, n_iterations=3000, n_warmup=200,
                              n_chains=4, rng=seed, log_adjusted_prior=wl.log_adjusted_prior,
                              pseudo_priors=wl.pseudo_priors, check_every=10)
    a, b = res["subsampled"], res["exact"]
    se = np.sqrt(a.posterior_per_chain.var(axis=0, ddof=1) / 4
                 + b.posterior_per_chain.var(axis=0, ddof=1) / 4)
    assert np.all(np.abs(a.posterior - b.posterior) <= 5 * se + 0.01), (a.posterior, b.posterior, se)
    assert 0.5 * np.abs(a.posterior - b.posterior).sum() < 0.1
    assert a.evals_per_ess < b.evals_per_ess
    assert a.gibbs_error_rate < 0.05 and a.mh_error_rate < 0.05
