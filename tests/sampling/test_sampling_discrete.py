import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from sampling import lil_ucb, sample_discrete
from sampling import _racing, _racing_py
from sampling.synthetic import MatrixLogF, exact_state, make_rewards, run_study


def _problem(dist, sigma, n_states=6, n_data=5000, seed=0):
    rewards = make_rewards(dist, n_states, n_data, sigma, rng=seed)
    return rewards, MatrixLogF(rewards), rewards.max(axis=1) - rewards.min(axis=1)


def test_make_rewards_has_fixed_p_and_sigma():
    log_p = np.log([0.5, 0.25, 0.25])
    for dist in ("normal", "uniform", "lognormal"):
        r = make_rewards(dist, 3, 1000, 1e-3, log_p=log_p, rng=1)
        np.testing.assert_allclose(r.sum(axis=1), log_p, atol=1e-9)
        np.testing.assert_allclose(r.std(axis=1), 1e-3, rtol=1e-9)


# ------------------------------------------------------------------ lil'UCB
def test_lil_ucb_kernel_matches_twin():
    rng = np.random.default_rng(0)
    d, n_data = 4, 1000
    out = []
    for kern in (_racing, _racing_py):
        buf = np.ascontiguousarray(rng.normal(size=(d, 50)) * 0 + np.arange(d)[:, None] * 0.01
                                   + np.random.default_rng(1).normal(size=(d, 50)))
        state = dict(buf_len=np.full(d, 50, dtype=np.int64), buf_pos=np.ones(d, dtype=np.int64),
                     pulls=np.ones(d, dtype=np.int64), sums=buf[:, 0].copy())
        res = kern.lil_ucb_run(buf, state["buf_len"], state["buf_pos"], state["pulls"], state["sums"],
                               np.ones(d, dtype=np.uint8), np.full(d, 0.5), n_data, 0.0, 0.5, 1 + 10 / d, 0.05)
        out.append((tuple(int(x) for x in res), state["pulls"].tolist(), state["sums"].round(12).tolist()))
    assert out[0] == out[1]


def test_lil_ucb_clear_gap_stops_early_and_is_right():
    rewards, log_f, c = _problem("uniform", 1e-6, n_data=20_000)
    rng = np.random.default_rng(2)
    for _ in range(20):
        g = rng.gumbel(size=6)
        res = lil_ucb(log_f, np.zeros(6), 20_000, reward_range=c, gumbels=g, rng=rng)
        assert res.state == exact_state(rewards, np.zeros(6), g)
        assert res.fraction_evaluated < 0.01
        assert res.n_evals == res.pulls_per_arm.sum()


def test_lil_ucb_hard_problem_uses_exact_stop_and_never_exceeds_n():
    rewards, log_f, c = _problem("normal", 0.1, n_states=3, n_data=2000)
    g = np.random.default_rng(3).gumbel(size=3)
    res = lil_ucb(log_f, np.zeros(3), 2000, reward_range=c, gumbels=g, rng=0)
    assert res.pulls_per_arm.max() <= 2000 and res.n_evals <= 3 * 2000
    assert res.exact and res.state == exact_state(rewards, np.zeros(3), g)


def test_lil_ucb_error_within_delta():
    rewards, log_f, c = _problem("normal", 3e-4, n_states=5, n_data=5000, seed=4)
    rng = np.random.default_rng(5)
    n, delta, errors = 150, 0.1, 0
    for _ in range(n):
        g = rng.gumbel(size=5)
        errors += lil_ucb(log_f, np.zeros(5), 5000, delta=delta, reward_range=c, gumbels=g,
                          rng=rng).state != exact_state(rewards, np.zeros(5), g)
    assert errors / n <= delta + 3 * np.sqrt(delta * (1 - delta) / n)


def test_lil_ucb_rejects_bad_arguments():
    lf = lambda s, idx: np.zeros((len(s), len(idx)))
    with pytest.raises(ValueError, match="reward_range \\(or sigma\\) parameter of lil_ucb is required"):
        lil_ucb(lf, np.zeros(3), 100)
    with pytest.raises(ValueError, match="delta parameter of lil_ucb must be in \\(0, 1\\)"):
        lil_ucb(lf, np.zeros(3), 100, delta=2.0, sigma=1.0)
    with pytest.raises(ValueError, match="sigma parameter of lil_ucb must be"):
        lil_ucb(lf, np.zeros(3), 100, sigma=np.ones(2))


# ------------------------------------------------------------------ front door
@pytest.mark.parametrize("method", ["racing-normal", "racing-ebs", "lil-ucb", "exact"])
def test_sample_discrete_methods_agree_on_easy_problem(method):
    rewards, log_f, c = _problem("normal", 1e-6, n_data=3000, seed=6)
    g = np.random.default_rng(7).gumbel(size=6)
    kw = {} if method in ("racing-normal", "exact") else {"reward_range": c}
    res = sample_discrete(log_f, np.zeros(6), 3000, method=method, gumbels=g, rng=0, **kw)
    assert res.state == exact_state(rewards, np.zeros(6), g)
    if method == "exact":
        assert res.exact and res.n_evals == 6 * 3000


def test_exact_method_in_chunks_and_with_prior():
    rewards, log_f, _ = _problem("uniform", 1e-2, n_data=1001, seed=8)
    f0 = np.log([0.1, 0.2, 0.3, 0.1, 0.2, 0.1])
    f0[2] = -np.inf
    rng = np.random.default_rng(9)
    for _ in range(10):
        g = rng.gumbel(size=6)
        res = sample_discrete(log_f, f0, 1001, method="exact", gumbels=g, chunk_size=100)
        with np.errstate(invalid="ignore"):
            assert res.state == exact_state(rewards, f0, g)
        assert res.state != 2 and res.n_evals == 5 * 1001


def test_exact_sampler_matches_probabilities():
    log_p = np.log([0.1, 0.2, 0.3, 0.4])
    rewards = make_rewards("normal", 4, 100, 0.01, log_p=log_p, rng=10)
    rng = np.random.default_rng(11)
    n = 4000
    draws = np.array([sample_discrete(MatrixLogF(rewards), np.zeros(4), 100, method="exact", rng=rng).state
                      for _ in range(n)])
    freq = np.bincount(draws, minlength=4) / n
    p = np.exp(log_p)
    assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / n))


def test_sample_discrete_rejects_unknown_method():
    with pytest.raises(ValueError, match="method parameter of sample_discrete must be one of"):
        sample_discrete(lambda s, i: None, np.zeros(2), 10, method="gibbs")


# ------------------------------------------------------------------ study + CLI
def test_run_study_small_shapes_and_sanity():
    df = run_study(dists=("normal",), sigmas=(1e-6,), deltas=(0.05,), algorithms=("racing-normal", "lil-ucb"),
                   n_states=4, n_data=2000, n_draws=10, progress=False)
    assert isinstance(df, pd.DataFrame) and len(df) == 2
    assert (df["n_errors"] == 0).all() and (df["mean_fraction"] < 0.2).all()


def _run_cli(module, argv):
    import argparse
    import importlib

    mod = importlib.import_module(module)
    parser = argparse.ArgumentParser()
    mod.add_arguments(parser)
    return mod.main(parser.parse_args(argv))


def test_cli_synthetic_and_bnormal(tmp_path, capsys):
    out = tmp_path / "syn"
    argv = ["--arms", "3", "--n-data", "500", "--draws", "3", "--sigma", "1e-3", "--dist", "normal",
            "--deltas", "0.1", "--algorithms", "racing-normal", "--out", str(out), "--quiet"]
    assert _run_cli("sampling.synthetic", argv) == 0
    assert (out / "synthetic.csv").exists() and (out / "synthetic.png").exists()
    assert not list(out.glob(".*"))  # no temporary files left behind
    assert len(pd.read_csv(out / "synthetic.csv")) == 1
    assert _run_cli("sampling.synthetic", argv[:-3] + ["--dist", "cauchy", "--out", str(out)]) == 2
    capsys.readouterr()
    assert _run_cli("sampling.bounds_normal", ["--delta", "0.05", "--pi1", "0.001"]) == 0
    text = capsys.readouterr().out
    assert "2.469" in text and "4.9e-01" in text
    assert _run_cli("sampling.bounds_normal", ["--delta", "1.5"]) == 2
    assert "delta parameter of b_normal must be in (0, 1)" in capsys.readouterr().out


def test_console_script_routes_bnormal(tmp_path):
    r = subprocess.run([sys.executable, "-m", "sampling", "bnormal", "--delta", "0.1", "--pi1", "0.01", "--no-table"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0 and "2.045" in r.stdout
