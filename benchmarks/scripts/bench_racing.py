"""Speed of one racing draw vs one exact Gumbel-max draw (N = 1e5, D = 10), and of b_normal.

The pytest-benchmark version of the first three problems is ``benchmarks/scripts/bench_racing.py``. ::

    nice -n 10 python benchmarks/scripts/bench_racing.py [--draws 30] [--n-data 100000]

Problems, all with D = 10 states and N = 1e5 factors:

* the Sec. 5.1 synthetic populations (Normal rewards, sigma = 1e-5 very easy, 1e-4 easy,
  0.1 very hard) stored in a (D, N) matrix, ``log_f`` a gather;
* a posterior over a grid of 10 means of N(theta, 1) data where ``log_f`` computes the
  log likelihoods on demand (what user factor code does); grid spacing 0.02 (6 posterior
  sd) and 0.002 (0.6 sd: several states carry mass, the race needs nearly all data);
* the same with Student-t (nu = 5) data, a costlier factor (log1p per datum), spacing
  0.05 and 0.02.

The exact sampler evaluates all D N factors in vectorised chunks; timings are process CPU
times (``time.process_time``) of interleaved draws, reported as median and minimum, because
the benchmark machine is shared (wall time there mostly measures other people's jobs).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from sampling import race, sample_discrete
from sampling.bounds_normal import b_normal
from sampling.synthetic import MatrixLogF


def make_gauss_problem(n_data=100_000, n_states=10, spacing=2e-3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n_data)
    theta = x.mean() + spacing * (np.arange(n_states) - (n_states - 1) / 2)

    def log_f(states, idx):
        d = x[np.asarray(idx)][None, :] - theta[np.asarray(states)][:, None]
        return -0.5 * d * d - 0.9189385332046727

    return log_f, theta, x


def make_student_problem(n_data=100_000, n_states=10, spacing=0.05, nu=5.0, seed=0):
    """Location posterior of Student-t (nu = 5) data: a costlier factor (log1p, power) per datum."""
    from scipy.special import gammaln

    rng = np.random.default_rng(seed)
    x = rng.standard_t(nu, size=n_data)
    theta = spacing * (np.arange(n_states) - (n_states - 1) / 2)
    const = gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * np.log(nu * np.pi)

    def log_f(states, idx):
        d = x[np.asarray(idx)][None, :] - theta[np.asarray(states)][:, None]
        return const - (nu + 1) / 2 * np.log1p(d * d / nu)

    return log_f


def _time_draws(fn, n):
    fn()  # warm-up (b_normal cache, page faults)
    t0 = time.perf_counter()
    out = [fn() for _ in range(n)]
    return (time.perf_counter() - t0) / n, out


def _problems(args):
    """(name, log_f, fast-exact flag) for every benchmark problem, all with D = args.arms, N = args.n_data."""
    from sampling.synthetic import make_rewards

    out = []
    for sigma in (1e-5, 1e-4, 0.1):
        rewards = make_rewards("normal", args.arms, args.n_data, sigma, rng=3)
        out.append((f"synthetic normal sigma={sigma:g} (matrix)", MatrixLogF(rewards)))
    for spacing in (0.02, 0.002):
        log_f, _, _ = make_gauss_problem(args.n_data, args.arms, spacing)
        out.append((f"gaussian grid spacing={spacing:g} (computed)", log_f))
    for spacing in (0.05, 0.02):
        out.append((f"student-t grid spacing={spacing:g} (computed)",
                    make_student_problem(args.n_data, args.arms, spacing)))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=30)
    p.add_argument("--n-data", type=int, default=100_000)
    p.add_argument("--arms", type=int, default=10)
    p.add_argument("--delta", type=float, default=0.05)
    args = p.parse_args(argv)
    f0 = np.zeros(args.arms)
    print(f"N = {args.n_data}, D = {args.arms}, delta = {args.delta}, {args.draws} interleaved draws per sampler; "
          "CPU time of this process per draw (median and min; the ratio is exact time / racing time)")
    print(f"{'problem':<44}{'sampler':<26}{'median ms':>10}{'min ms':>8}{'fraction':>10}"
          f"{'ratio(median)':>14}{'ratio(min)':>11}")
    for name, lf in _problems(args):
        rng = np.random.default_rng(2)
        samplers = {
            "exact": lambda: sample_discrete(lf, f0, args.n_data, method="exact", rng=rng),
            "racing-normal (pairwise)": lambda: race(lf, f0, args.n_data, delta=args.delta, rng=rng),
            "racing-normal (marginal)": lambda: race(lf, f0, args.n_data, delta=args.delta, rng=rng,
                                                     variance="marginal"),
        }
        for fn in samplers.values():
            fn()  # warm-up (b_normal cache, page faults)
        times = {k: [] for k in samplers}
        fracs = {k: [] for k in samplers}
        for _ in range(args.draws):  # interleaved, so machine load hits all samplers alike
            for k, fn in samplers.items():
                t0 = time.process_time()  # CPU time: robust to other processes on a shared machine
                res = fn()
                times[k].append(time.process_time() - t0)
                fracs[k].append(res.fraction_evaluated)
        t_exact, t_exact_min = np.median(times["exact"]), np.min(times["exact"])
        for k in samplers:
            t, t_min = np.median(times[k]), np.min(times[k])
            print(f"{name:<44}{k:<26}{1e3 * t:>10.2f}{1e3 * t_min:>8.2f}{np.mean(fracs[k]):>10.4f}"
                  f"{t_exact / t:>14.1f}{t_exact_min / t_min:>11.1f}")
    # b_normal: cold (fresh computation: a (delta, pi1) not asked before) and cached call times
    cold = []
    for d, pi in [(0.05, 1e-3), (1e-3 / 9, 5e-4), (0.49, 1e-2), (1e-6, 1e-4)]:
        d *= 1 + 1e-9  # a value no racing draw above has used: b_normal caches per (delta, pi1)
        t0 = time.perf_counter()
        b_normal(d, pi)
        cold.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    for _ in range(1000):
        b_normal(0.05, 1e-3)
    print(f"b_normal: cold call max {max(cold) * 1e3:.1f} ms, cached call {(time.perf_counter() - t0):.3f} ms")


if __name__ == "__main__":
    main()
