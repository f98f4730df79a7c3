import numpy as np
import pytest
from scipy import stats

from sampling import RaceResult, race
from sampling import _racing, _racing_py
from sampling.synthetic import MatrixLogF, exact_state, make_rewards

KERNELS = [_racing, _racing_py]


# ------------------------------------------------------------------ kernels
def _merge_all(kern, blocks, n_states, arms_per_block, pairs):
    mean, m2 = np.zeros(n_states), np.zeros(n_states)
    pm2, work = np.zeros((n_states, n_states)), np.empty(n_states)
    n = 0
    for r, arms in zip(blocks, arms_per_block):
        kern.merge_block(np.ascontiguousarray(r), arms, n, mean, m2, pm2, pairs, work)
        n += r.shape[1]
    return mean, m2, pm2


@pytest.mark.parametrize("kern", KERNELS, ids=["cython", "python"])
def test_merge_block_equals_direct_moments(kern):
    rng = np.random.default_rng(0)
    full = rng.normal(3.0, 2.0, size=(5, 700))
    cuts = [0, 50, 100, 200, 400, 700]
    arms = np.arange(5, dtype=np.int64)
    blocks = [full[:, a:b] for a, b in zip(cuts[:-1], cuts[1:])]
    mean, m2, pm2 = _merge_all(kern, blocks, 5, [arms] * 5, True)
    np.testing.assert_allclose(mean, full.mean(axis=1), rtol=1e-12)
    np.testing.assert_allclose(m2 / 700, full.var(axis=1), rtol=1e-10)
    diff = full[:, None, :] - full[None, :, :]
    np.testing.assert_allclose(pm2 / 700, diff.var(axis=2), rtol=1e-10, atol=1e-12)


def test_merge_block_is_stable_for_tiny_spread():
    # std 1e-9 around a mean of 1e3: naive sum-of-squares would lose everything
    rng = np.random.default_rng(1)
    full = 1e3 + 1e-9 * rng.standard_normal((2, 400))
    arms = np.arange(2, dtype=np.int64)
    mean, m2, pm2 = _merge_all(_racing, [full[:, :100], full[:, 100:]], 2, [arms] * 2, True)
    np.testing.assert_allclose(m2 / 400, full.var(axis=1), rtol=1e-4)
    np.testing.assert_allclose(pm2[0, 1] / 400, (full[0] - full[1]).var(), rtol=1e-4)


@pytest.mark.parametrize("pairs", [True, False])
def test_cython_kernels_match_python_twin(pairs):
    rng = np.random.default_rng(2)
    arms1 = np.array([0, 2, 3, 5], dtype=np.int64)
    arms2 = np.array([2, 5], dtype=np.int64)  # a subset survives
    blocks = [rng.standard_normal((4, 30)), rng.standard_normal((4, 30)), rng.standard_normal((2, 60))]
    arms = [arms1, arms1, arms2]
    res = [_merge_all(k, blocks, 6, arms, pairs) for k in KERNELS]
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    mean, m2, pm2 = res[0]
    c_range = rng.random(6)
    for pairwise in (True, False):
        for coef_sd, coef_c in [(0.1, 0.0), (0.5, 0.01), (0.0, 0.0)]:
            out = []
            for k in KERNELS:
                alive = np.empty(4, dtype=np.uint8)
                lead = k.eliminate(mean, m2, pm2, arms1, 60, coef_sd, coef_c, c_range, pairwise, alive)
                out.append((int(lead), alive.tolist()))
            assert out[0] == out[1]


def test_eliminate_keeps_leader_and_close_arms():
    mean = np.array([1.0, 0.99, 0.0])
    m2 = np.full(3, 10.0)
    pm2 = np.full((3, 3), 10.0)
    alive = np.empty(3, dtype=np.uint8)
    lead = _racing.eliminate(mean, m2, pm2, np.arange(3, dtype=np.int64), 10, 0.1, 0.0, np.zeros(3), True, alive)
    assert lead == 0 and alive.tolist() == [1, 1, 0]


# ------------------------------------------------------------------ race
def _problem(dist, sigma, n_states=10, n_data=10_000, seed=0):
    rewards = make_rewards(dist, n_states, n_data, sigma, rng=seed)
    return rewards, MatrixLogF(rewards)


def test_race_is_exact_when_first_batch_is_n():
    rewards, log_f = _problem("normal", 0.01, n_states=6, n_data=500)
    rng = np.random.default_rng(3)
    for _ in range(20):
        g = rng.gumbel(size=6)
        res = race(log_f, np.zeros(6), 500, first_batch=500, gumbels=g, rng=rng)
        assert res.exact and res.n_evals == 6 * 500 and res.n_rounds == 1
        assert res.state == exact_state(rewards, np.zeros(6), g)


def test_race_full_schedule_hits_exact_answer():
    # a tiny delta and huge noise: every race must run to T = N and be exact
    rewards, log_f = _problem("normal", 1.0, n_states=4, n_data=1000)
    g = np.random.default_rng(4).gumbel(size=4)
    res = race(log_f, np.zeros(4), 1000, delta=1e-6, first_batch=10, gumbels=g, rng=0)
    assert res.exact and res.n_seen == 1000
    assert res.survivors_per_round[0] == 4 and res.n_rounds == 8  # 10,20,...,640,1000
    assert res.state == exact_state(rewards, np.zeros(4), g)
    np.testing.assert_allclose(res.mean_estimates, rewards.mean(axis=1) + g / 1000, rtol=1e-10, atol=1e-15)
    res_m = race(log_f, np.zeros(4), 1000, delta=1e-6, first_batch=10, gumbels=g, rng=0, variance="marginal")
    np.testing.assert_allclose(res_m.mean_estimates, res.mean_estimates, rtol=1e-10, atol=1e-15)


def _error_rate(rewards, log_f, n_races, delta, seed, **kw):
    rng = np.random.default_rng(seed)
    d = rewards.shape[0]
    errors, frac = 0, 0.0
    for _ in range(n_races):
        g = rng.gumbel(size=d)
        res = race(log_f, np.zeros(d), rewards.shape[1], delta=delta, gumbels=g, rng=rng, **kw)
        errors += res.state != exact_state(rewards, np.zeros(d), g)
        frac += res.fraction_evaluated
    return errors / n_races, frac / n_races


@pytest.mark.parametrize("dist", ["normal", "lognormal"])
def test_racing_normal_error_within_delta_on_hard_problem(dist):
    # sigma = 1e-2 at N = 1e4: most races run deep into the schedule (about 80% of the rewards)
    # and the error (about 0.03 for Normal rewards at delta = 0.1) is close to its bound
    rewards, log_f = _problem(dist, 1e-2, seed=5)
    delta, n = 0.1, 1000
    err, frac = _error_rate(rewards, log_f, n, delta, seed=6)
    assert err <= delta + 3 * np.sqrt(delta * (1 - delta) / n)
    assert frac < 0.9  # it does subsample


def test_racing_normal_touches_few_rewards_with_clear_gap():
    rewards, log_f = _problem("normal", 1e-7, seed=7)
    err, frac = _error_rate(rewards, log_f, 200, 0.05, seed=8)
    assert err == 0.0
    assert frac < 0.02


@pytest.mark.parametrize("variance", ["pairwise", "marginal"])
@pytest.mark.parametrize("bound", ["normal", "ebs"])
def test_race_variants_meet_delta(bound, variance):
    rewards, log_f = _problem("uniform", 3e-4, n_states=5, seed=9)
    c = rewards.max(axis=1) - rewards.min(axis=1)
    kw = dict(bound=bound, variance=variance, reward_range=c if bound == "ebs" else None)
    delta, n = 0.1, 300
    err, frac = _error_rate(rewards, log_f, n, delta, seed=10, **kw)
    assert err <= delta + 3 * np.sqrt(delta * (1 - delta) / n)
    assert 0 < frac <= 1.0


def test_ebs_is_more_conservative_than_normal():
    rewards, log_f = _problem("uniform", 3e-4, n_states=5, seed=11)
    c = rewards.max(axis=1) - rewards.min(axis=1)
    _, f_normal = _error_rate(rewards, log_f, 100, 0.05, seed=12)
    _, f_ebs = _error_rate(rewards, log_f, 100, 0.05, seed=12, bound="ebs", reward_range=c)
    assert f_ebs > f_normal


def _race_draw_counts(noise, delta, seed, n=4000):
    """Counts of ``n`` racing draws on a D = 4 problem with p = (0.4, 0.3, 0.2, 0.1), and
    the expected counts ``n * p``."""
    n_data, d = 2000, 4
    log_p = np.log([0.4, 0.3, 0.2, 0.1])
    rewards = make_rewards("normal", d, n_data, noise, log_p=log_p, rng=13)
    log_f = MatrixLogF(rewards)
    rng = np.random.default_rng(seed)
    draws = np.array([race(log_f, np.zeros(d), n_data, delta=delta, first_batch=20, rng=rng).state
                      for _ in range(n)])
    return np.bincount(draws, minlength=d), n * np.exp(log_p)


def test_racing_samples_follow_p():
    # D = 4, moderate noise; chi-square of 4000 fresh racing draws against p
    counts, expected = _race_draw_counts(2e-3, 1e-3, seed=14)
    assert stats.chisquare(counts, expected).pvalue > 1e-3
    assert 0.5 * np.abs(counts - expected).sum() / 4000 < 1e-3 + 0.03


def test_chi_square_check_catches_a_biased_sampler():
    # the same check fails when the race uses a far too small bound (injected bias)
    counts, expected = _race_draw_counts(2e-2, 0.999, seed=15)
    assert stats.chisquare(counts, expected).pvalue < 1e-3


def test_race_log_f0_minus_inf_and_dead_rewards():
    rewards, log_f = _problem("normal", 1e-4, n_states=4, n_data=400)
    f0 = np.array([0.0, -np.inf, 0.0, 0.0])
    states = {race(log_f, f0, 400, rng=s).state for s in range(40)}
    assert 1 not in states
    r2 = rewards.copy()
    r2[0, :] = -np.inf  # f_n(0) = 0 everywhere
    res = race(MatrixLogF(r2), np.zeros(4), 400, rng=0)
    assert res.state != 0 and res.mean_estimates[0] == -np.inf
    only = race(log_f, np.array([-np.inf, 0.0, -np.inf, -np.inf]), 400, rng=0)
    assert only.state == 1 and only.exact and only.n_evals == 0


def test_race_control_variate_reduces_work():
    # rewards = big smooth part h + small residual: the proxy removes the smooth part
    rng = np.random.default_rng(16)
    n_data, d = 20_000, 5
    x = rng.standard_normal(n_data)
    theta = np.linspace(-0.02, 0.02, d)
    base = -0.5 * (x[None, :] - theta[:, None]) ** 2
    h = lambda s, idx: base[np.asarray(s)[:, None], np.asarray(idx)[None, :]]
    resid = 1e-4 * rng.standard_normal((d, n_data))
    log_f = MatrixLogF(base + resid)
    g = rng.gumbel(size=d)
    plain = race(log_f, np.zeros(d), n_data, gumbels=g, rng=1)
    cv = race(log_f, np.zeros(d), n_data, gumbels=g, rng=1, control_variate=(h, base.mean(axis=1)))
    assert cv.n_evals < plain.n_evals / 5
    assert cv.state == exact_state(base + resid, np.zeros(d), g)


def test_race_result_is_frozen():
    rewards, log_f = _problem("normal", 1e-4, n_states=3, n_data=300)
    res = race(log_f, np.zeros(3), 300, rng=0)
    assert isinstance(res, RaceResult)
    with pytest.raises(AttributeError):
        res.state = 2
    assert sum(res.survivors_per_round) > 0 and len(res.survivors_per_round) == res.n_rounds


# ------------------------------------------------------------------ errors
def _lf(s, idx):
    return np.zeros((len(s), len(idx)))


@pytest.mark.parametrize(
    "kw, exc, match",
    [
        (dict(delta=0.0), ValueError, "delta parameter of race must be in \\(0, 1\\)"),
        (dict(delta=1.5), ValueError, "delta parameter of race must be in \\(0, 1\\)"),
        (dict(first_batch=200), ValueError, "first_batch parameter of race must be <= n_data=100"),
        (dict(first_batch=1), ValueError, "first_batch parameter of race must be >= 2"),
        (dict(bound="t"), ValueError, "bound parameter of race must be one of"),
        (dict(variance="x"), ValueError, "variance parameter of race must be one of"),
        (dict(bound="ebs"), ValueError, "reward_range parameter of race is required"),
        (dict(gumbels=np.zeros(4)), ValueError, "gumbels parameter of race must have shape \\(3,\\)"),
        (dict(reward_range=np.ones(2), bound="ebs"), ValueError, "reward_range parameter of race must be"),
        (dict(control_variate=(_lf, np.zeros(2))), ValueError, "control_variate mean of race must have shape"),
        (dict(control_variate=5), TypeError, "control_variate parameter of race"),
    ],
    ids=["delta0", "delta>1", "fb>N", "fb<2", "bound", "variance", "ebs-no-range", "gumbels", "range-shape",
         "cv-shape", "cv-type"],
)
def test_race_rejects_bad_arguments(kw, exc, match):
    with pytest.raises(exc, match=match):
        race(_lf, np.zeros(3), 100, **kw)


def test_race_rejects_bad_log_f_output():
    with pytest.raises(ValueError, match="must return shape \\(len\\(states\\), len\\(idx\\)\\)"):
        race(lambda s, idx: np.zeros((len(idx), len(s))), np.zeros(3), 100)
    with pytest.raises(ValueError, match="NaN or \\+inf"):
        race(lambda s, idx: np.full((len(s), len(idx)), np.nan), np.zeros(3), 100)
    with pytest.raises(TypeError, match="log_f parameter of race must be callable"):
        race(np.zeros((3, 100)), np.zeros(3), 100)
    with pytest.raises(ValueError, match="log_f0 parameter of race must be a non-empty 1-D"):
        race(_lf, np.zeros((3, 1)), 100)
    with pytest.raises(ValueError, match="log_f0 parameter of race is all -inf"):
        race(_lf, np.full(3, -np.inf), 100)


# ------------------------------------------------------------------ full size (slow)
@pytest.mark.slow
@pytest.mark.parametrize("dist", ["normal", "lognormal"])
def test_racing_normal_error_full_size_very_hard(dist):
    # Sec. 5.1 at full size: D = 10, N = 1e5, sigma = 0.1 (very hard), delta = 0.1
    rewards, log_f = _problem(dist, 0.1, n_data=100_000, seed=21)
    delta, n = 0.1, 600
    err, _ = _error_rate(rewards, log_f, n, delta, seed=22)
    assert err <= delta + 3 * np.sqrt(delta * (1 - delta) / n)


@pytest.mark.slow
def test_racing_normal_full_size_clear_gap_fraction():
    rewards, log_f = _problem("normal", 1e-5, n_data=100_000, seed=23)
    err, frac = _error_rate(rewards, log_f, 300, 0.01, seed=24)
    assert err == 0.0 and frac < 0.02


@pytest.mark.parametrize("kern", KERNELS, ids=["cython", "python"])
def test_merge_pairs_from_gram_matches_direct_loop(kern):
    # includes a nearly identical pair (forces the direct fallback) and a huge-offset, tiny-spread row
    rng = np.random.default_rng(30)
    base = rng.normal(size=300)
    rewards = np.ascontiguousarray(np.vstack([base + 1e-5 * rng.normal(size=300), base, rng.normal(size=300),
                                              1e3 + 1e-9 * rng.normal(size=300)]))
    arms = np.array([0, 1, 3, 4], dtype=np.int64)
    mean = rng.normal(size=5)
    bm = rewards.mean(axis=1)
    centred = rewards - bm[:, None]
    got = np.zeros((5, 5))
    kern.merge_pairs(rewards, arms, 100, mean, bm, np.ascontiguousarray(centred @ centred.T), got, 1e-6)
    ref = np.zeros((5, 5))
    _racing.merge_block(rewards, arms, 100, mean.copy(), np.zeros(5), ref, True, np.empty(5))
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=0)
