"""Carlin-Chib sampler: control variates, racing steps, select_order, checkpoints, CLI."""
import json
import math

import numpy as np
import pytest

from sampling.arch import _chain_py, _loglik_py, select_order
from sampling.arch import sampler as S
from sampling.arch.chain import new_stats, run_chain
from sampling.arch.model import ARCHModel
from sampling.arch.returns import standardise
from sampling.arch.model import simulate_arch
from sampling.exceptions import CheckpointError, ReturnsDataError


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
    ctx = S.ChainContext(ctx.models[0].r, ORDERS, ctx.laplaces, control_variate=kind)
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


def test_racing_decisions_match_exact_decisions(ctx):
    """With the same Gumbels / uniforms, racing Gibbs and MH pick the exact answer in >= 1 - 2 delta."""
    st = S.ChainState(ctx, np.random.default_rng(1), np.zeros(ctx.D), [0.3] * ctx.D)
    stats = new_stats()
    run_chain(ctx, st, 150, method="subsampled", grad_batch=200, delta=0.05, first_batch=50,
              check_every=1, target_accept=0.36, stats=stats)
    assert stats["gibbs_checks"] == 150 and stats["mh_checks"] <= 150
    assert stats["gibbs_errors"] <= 15  # binomial(150, <= 0.05): P(> 15) < 0.01
    assert stats["mh_errors"] <= 15
    assert 0 < stats["gibbs_evals"] < 150 * ctx.D * ctx.n_data
    assert stats["check_evals"] >= 150 * ctx.D * ctx.n_in


@pytest.mark.parametrize("method,cv", [("subsampled", "taylor"), ("exact", "taylor"),
                                       ("subsampled", "binned")])
def test_compiled_sweep_makes_the_reference_decisions(ctx, method, cv):
    """Compiled sweep vs the Python reference on the same random stream: same q, accepts, counts."""
    if cv != ctx.control_variate:
        ctx = S.ChainContext(ctx.models[0].r, ORDERS, ctx.laplaces, control_variate=cv)
    runs = []
    for engine in (None, _chain_py):
        st = S.ChainState(ctx, np.random.default_rng(42), np.zeros(ctx.D), [0.4] * ctx.D)
        stats = new_stats()
        qs, ev, lp = run_chain(ctx, st, 80, method=method, grad_batch=150, delta=0.05,
                               first_batch=20, check_every=3, target_accept=0.36, stats=stats,
                               adapt_step=True, adapt_pi=True, engine=engine)
        runs.append((qs, ev, lp, stats, st))
    (qa, ea, la, sa, sta), (qb, eb, lb, sb, stb) = runs
    np.testing.assert_array_equal(qa, qb)
    np.testing.assert_array_equal(ea, eb)
    for k in ("n_accept", "gibbs_errors", "mh_errors", "param_evals", "gibbs_evals"):
        assert sa[k] == sb[k], k
    np.testing.assert_allclose(la, lb, rtol=0, atol=1e-12)
    np.testing.assert_allclose(sta.xs_flat, stb.xs_flat, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(sta.perm, stb.perm)
    assert sta.rng.bit_generator.state == stb.rng.bit_generator.state
    assert len(set(qa.tolist())) > 1 and 0 < sa["n_accept"] < 80


def test_racing_engine_twin_is_bit_identical():
    """The compiled race (race_run) against the library's run_race with the same index stream."""
    from sampling import _racing
    from sampling._race_core import PermutationSampler, run_race
    from sampling.bounds_normal import b_normal

    rng = np.random.default_rng(8)
    for rep in range(40):
        D, N = int(rng.integers(2, 6)), int(rng.integers(60, 800))
        R = rng.normal(size=(D, N)) * rng.uniform(0.1, 2, size=(D, 1)) + rng.normal(0, 0.05, size=(D, 1))
        off = rng.normal(0, 0.01, size=D)
        b = b_normal(0.05 / (D - 1), 20 / N)
        p1, p2 = rng.permutation(N), None
        p2 = p1.copy()
        g1, g2 = np.random.default_rng(rep), np.random.default_rng(rep)
        state, n_ev = _racing.race_matrix_wrapper(R, off, 20, b, g1, p1)
        ref = run_race(lambda arms, idx: R[arms][:, idx], off, N, delta=0.05, bound="normal",
                       variance="pairwise", first_batch=20, c_range=np.zeros(D), gen=g2, func="t",
                       sampler=PermutationSampler(N, g2, p2), pairs="direct")
        assert (state, n_ev) == (ref[0], ref[1])
        np.testing.assert_array_equal(p1, p2)
        assert g1.bit_generator.state == g2.bit_generator.state


def test_exact_gibbs_frequencies(ctx):
    """The exact q-update draws from the Carlin-Chib conditional (Gumbel-max, Eq. 2)."""
    rng = np.random.default_rng(3)
    st = S.ChainState(ctx, rng, np.zeros(ctx.D), [0.5] * ctx.D)
    tot = np.array([ctx.models[k].loglik_terms(st.xs[k]).sum() for k in range(ctx.D)])
    lw = tot + np.array([ctx.log_joint_prior(k, st.xs[k]) for k in range(ctx.D)])
    st.log_pi[:] = -lw  # makes the conditional uniform
    kern = _chain_py.ChainKernel(ctx, st, {"method": "exact", "n_mh": 1, "target_accept": 0.36,
                                           "grad_batch": 10, "first_batch": 50, "delta": 0.05})
    n = 3000
    draws = [kern._gibbs(rng.gumbel(size=ctx.D), False) for _ in range(n)]
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
        # (D - 1) N for Gibbs (the current model's sum is cached), N for the proposal,
        # + N when q changed
        assert D * n <= per_sweep <= (D + 1) * n
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
    ck = tmp_path / "ck.npz"
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
    with np.load(ck, allow_pickle=False) as f:
        assert json.loads(str(f["meta"][()]))["phase"] == "sample"
    resumed = select_order(returns, checkpoint=str(ck), resume=True, **kw)
    np.testing.assert_array_equal(resumed.q_trace, full.q_trace)
    np.testing.assert_array_equal(resumed.posterior, full.posterior)
    np.testing.assert_array_equal(resumed.n_evals_trace, full.n_evals_trace)
    with pytest.raises(CheckpointError, match=f"{ck.name}.*other settings"):
        select_order(returns, checkpoint=str(ck), resume=True, **{**kw, "n_iterations": 61})
    with pytest.raises(CheckpointError, match=f"{ck.name}.*other returns data"):
        select_order(np.where(np.arange(returns.size) == 5, returns + 0.1, returns),
                     checkpoint=str(ck), resume=True, **kw)


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
               "--chains", "2", "--method", "both", "--out", str(out), "--quiet",
               "--check-every", "5", "--pilot", "100"])
    assert rc == 0
    summ = json.loads((out / "summary.json").read_text())
    assert set(summ["results"]) == {"subsampled", "exact"}
    assert 0 <= summ["tv_posterior"] <= 1
    for name in ("posterior.csv", "q_trace.csv", "fig2_posterior_q.png", "fig2b_log_posterior.png",
                 "fig2c_adjusted_posterior.png", "fig2d_autocorrelation.png"):
        assert (out / name).stat().st_size > 0
    # resume of a finished run reuses the checkpoints
    assert main(["arch", str(f), "--orders", "1,2,4", "--iterations", "60", "--warmup", "40",
                 "--chains", "2", "--method", "both", "--out", str(out), "--quiet",
                 "--check-every", "5", "--resume", "--no-plots", "--pilot", "100"]) == 0


def test_cli_bad_file(tmp_path, capsys):
    """Bad input exits 2, like ``sampling bounds``; the message names the file, not an option."""
    from sampling.cli import main

    f = tmp_path / "broken.csv"
    f.write_text("Close\n1.0\nnan\n1.1\n")
    assert main(["arch", str(f), "--no-progress"]) == 2
    assert "broken.csv: 1 missing/NaN price(s), first at data row 2" in capsys.readouterr().err
    g = tmp_path / "short.csv"
    g.write_text("Close\n" + "\n".join(str(1 + 0.01 * i) for i in range(20)) + "\n")
    assert main(["arch", str(g), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"error: {g}: too few returns: got 19" in err and "check_every" not in err
    h = tmp_path / "flat.csv"
    h.write_text("Close\n" + "\n".join(["5.0"] * 200) + "\n")
    assert main(["arch", str(h), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"error: {h}: constant returns series" in err and "check_every" not in err
    assert main(["arch", str(g), "--orders", "1,x"]) == 2
    assert "--orders must be comma-separated integers" in capsys.readouterr().err


def test_select_order_names_the_data_not_an_option(returns):
    """Before: the loop over the count parameters rebound ``name``, so a short or constant
    series was reported as ``check_every: too few returns``."""
    with pytest.raises(ReturnsDataError, match=r"^x\.csv: too few returns: got 30"):
        select_order(returns[:30], orders=ORDERS, name="x.csv")
    with pytest.raises(ReturnsDataError, match=r"^x\.csv: constant returns series"):
        select_order(np.ones(500), orders=ORDERS, name="x.csv")


def test_cli_no_plots_prints_only_what_it_wrote(returns, tmp_path, capsys):
    from sampling.cli import main

    prices = 100 * np.exp(np.cumsum(np.append(0.0, returns)) / 100)
    f = tmp_path / "prices.csv"
    f.write_text("price\n" + "\n".join(f"{p:.6f}" for p in prices) + "\n")
    out = tmp_path / "out"
    assert main(["arch", str(f), "--orders", "1,2", "--iterations", "20", "--warmup", "10",
                 "--chains", "1", "--pilot", "20", "--out", str(out), "--quiet", "--no-plots"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == f"wrote {out}/: summary.json, posterior.csv, q_trace.csv, warmup_log_prior.csv"
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith("checkpoint")) == sorted(
        ["summary.json", "posterior.csv", "q_trace.csv", "warmup_log_prior.csv"])


def test_cli_warns_about_an_extreme_return_with_its_date(tmp_path, capsys):
    """One price multiplied by 1e6: the two returns around it are named by their bar times."""
    from sampling.cli import main

    rng = np.random.default_rng(3)
    t = np.datetime64("2020-01-02T09:30") + np.arange(400) * np.timedelta64(1, "m")
    p = 100 * np.exp(np.cumsum(0.05 * rng.standard_normal(400)) / 100)
    p[200] *= 1e6
    f = tmp_path / "bars.csv"
    f.write_text("Date,Close\n" + "\n".join(f"{str(a).replace('T', ' ')},{b:.6f}" for a, b in zip(t, p)) + "\n")
    assert main(["arch", str(f), "--orders", "1,2", "--iterations", "10", "--warmup", "0", "--chains", "1",
                 "--pilot", "20", "--out", str(tmp_path / "out"), "--quiet", "--no-plots"]) == 0
    err = capsys.readouterr().err
    assert (f"sampling arch: warning: {f}: 2 extreme return(s), beyond 50 robust standard deviations"
            in err)
    assert "at 2020-01-02 12:50:00 (+1382%), 2020-01-02 12:51:00 (-1382%)" in err


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


def test_arch_proxies_are_the_library_control_variate(ctx):
    """The ARCH Taylor proxy is a sampling.ControlVariate that race() and mh_accept() take."""
    import sampling

    rng = np.random.default_rng(12)
    xs = [lap.sample(rng) for lap in ctx.laplaces]
    cvs = [ctx.control_variate_at(j, xs[j]) for j in range(ctx.D)]
    assert all(isinstance(cv, sampling.ControlVariate) for cv in cvs)
    allpos = np.arange(ctx.n_in)
    for j, cv in enumerate(cvs):  # exact population mean over the inliers
        assert cv.proxy(np.zeros(1, np.int64), allpos).mean() == pytest.approx(cv.mean[0], rel=1e-10)
    stacked = sampling.ControlVariate(
        lambda states, idx: np.vstack([cvs[int(s)].proxy(states[:1], idx) for s in states]),
        np.array([cv.mean[0] for cv in cvs]))

    def log_f(states, idx):
        return np.vstack([ctx.models[int(s)].loglik_terms(xs[int(s)], ctx.inliers[idx]) for s in states])

    tot = np.array([ctx.models[k].loglik_terms(xs[k], ctx.inliers).sum() for k in range(ctx.D)])
    errors, used = 0, 0
    for rep in range(40):
        g = rng.gumbel(size=ctx.D)
        res = sampling.race(log_f, np.zeros(ctx.D), ctx.n_in, gumbels=g, rng=rep, control_variate=stacked)
        errors += res.state != int(np.argmax(tot + g))
        used += res.n_evals
    assert errors <= 6  # each draw errs with probability <= delta = 0.05
    assert used < 40 * ctx.D * ctx.n_in / 2  # the proxy makes racing cheap
    j, x_new = 1, xs[1] + 0.01
    cv_new, cv_old = ctx.control_variate_at(j, x_new), ctx.control_variate_at(j, xs[j])
    diff_cv = sampling.ControlVariate(
        lambda s, idx: cv_new.proxy(s, idx) - cv_old.proxy(s, idx), cv_new.mean - cv_old.mean)
    l_diff = (ctx.models[j].loglik_terms(x_new, ctx.inliers) - ctx.models[j].loglik_terms(xs[j], ctx.inliers))
    res = sampling.mh_accept(lambda idx: l_diff[idx], ctx.n_in, 0.0, rng=3, control_variate=diff_cv)
    assert res.accept == (l_diff.mean() > 0)


def test_select_order_with_the_papers_binned_proxies(returns):
    """control_variate="binned" (paper Appx. C.2) runs compiled, with racing errors below 2 delta."""
    res = select_order(returns, orders=ORDERS, method="subsampled", n_iterations=150, n_warmup=100,
                       n_chains=2, rng=5, check_every=2, grad_batch=200, n_pilot=200,
                       control_variate="binned")
    assert res.gibbs_error_rate <= 0.1 and res.mh_error_rate <= 0.1
    assert res.n_gibbs_checks == 2 * 125
    assert res.posterior[0] < 0.05
    assert res.n_loglik_evals_sampling / 300 < 0.6 * (len(ORDERS) + 1) * res.n_data
