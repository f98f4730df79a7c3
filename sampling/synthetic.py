"""Synthetic study of Chen & Ghahramani (2016), Sec. 5.1 (Fig. 1): `sampling synthetic`.

Reward populations with a fixed p(X) and a chosen reward standard deviation, the
exact Gumbel-max answer for given Gumbels, and the study comparing Racing-Normal,
Racing-EBS (pairwise / marginal variance) and adapted lil'UCB on the same Gumbels.
"""
from __future__ import annotations

import argparse

import numpy as np

from sampling.utils.atomic import atomic_path
from sampling.utils.rng import as_generator

__all__ = ["DEFAULT_LOG_P", "make_rewards", "MatrixLogF", "exact_state", "run_study", "plot_study", "ALGORITHMS"]

_DISTS = ("normal", "uniform", "lognormal")


def DEFAULT_LOG_P(n_states):
    """A fixed, non-uniform target ``log p(X)`` over ``n_states`` (a discretised bump)."""
    x = np.linspace(-2.0, 2.0, n_states)
    w = np.exp(-0.5 * (x - 0.3) ** 2) + 0.2
    return np.log(w / w.sum())


def make_rewards(dist, n_states, n_data, sigma, *, log_p=None, rng=None):
    """Reward population ``log f_n(i)`` with fixed ``p(X)`` and reward std ``sigma``.

    Draws ``r_{i,n}`` from N(0, 1), Uniform[0, 1] or LogNormal(0, 2), standardises
    each row to mean 0 and std 1 and returns ``sigma * z_{i,n} + log p(i) / N`` so that
    ``sum_n log f_n(i) = log p(i)`` exactly (up to rounding) and the rewards of each
    arm have population standard deviation ``sigma`` (Sec. 5.1).

    Parameters
    ----------
    dist : {"normal", "uniform", "lognormal"}
    n_states, n_data : int
        ``D`` and ``N``.
    sigma : float > 0
        Reward standard deviation (difficulty: 0.1 very hard, 1e-5 very easy at N=1e5).
    log_p : array_like of shape (n_states,), optional
        Target log probabilities; :func:`DEFAULT_LOG_P` if omitted.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    ndarray of shape (n_states, n_data)

    Raises
    ------
    ValueError
        On an unknown ``dist``, non-positive ``sigma`` or a ``log_p`` of the wrong shape.
    """
    if dist not in _DISTS:
        raise ValueError(f"the dist parameter of make_rewards must be one of {_DISTS}; got {dist!r} instead")
    if not sigma > 0:
        raise ValueError(f"the sigma parameter of make_rewards must be > 0; got {sigma!r} instead")
    gen = as_generator(rng)
    log_p = DEFAULT_LOG_P(n_states) if log_p is None else np.asarray(log_p, dtype=np.float64)
    if log_p.shape != (n_states,):
        raise ValueError(f"log_p must have shape ({n_states},); got {log_p.shape}")
    if dist == "normal":
        raw = gen.standard_normal((n_states, n_data))
    elif dist == "uniform":
        raw = gen.random((n_states, n_data))
    else:
        raw = gen.lognormal(0.0, 2.0, size=(n_states, n_data))
    z = raw - raw.mean(axis=1, keepdims=True)
    z /= np.sqrt((z * z).mean(axis=1, keepdims=True))
    z -= z.mean(axis=1, keepdims=True)  # re-centre after scaling (rounding)
    return sigma * z + (log_p / n_data)[:, None]


class MatrixLogF:
    """``log_f(states, idx)`` backed by a precomputed (n_states, n_data) matrix."""

    def __init__(self, rewards):
        self.rewards = np.ascontiguousarray(rewards, dtype=np.float64)

    def __call__(self, states, idx):
        states, idx = np.asarray(states), np.asarray(idx)
        out = np.empty((states.shape[0], idx.shape[0]))
        for k, i in enumerate(states):
            np.take(self.rewards[i], idx, out=out[k])
        return out


def exact_state(rewards, log_f0, gumbels):
    """The exact Gumbel-max answer ``argmax_i sum_n log f_n(i) + log f0(i) + eps_i`` (Eq. 3)."""
    n_data = rewards.shape[1]
    offset = (np.asarray(log_f0, dtype=np.float64) + np.asarray(gumbels)) / n_data
    return int(np.argmax((rewards + offset[:, None]).sum(axis=1)))



# --------------------------------------------------------------------- the study
#: algorithm label -> (sample_discrete method, extra keyword arguments)
ALGORITHMS = {
    "racing-normal": ("racing-normal", {"variance": "pairwise"}),
    "racing-normal-marginal": ("racing-normal", {"variance": "marginal"}),
    "racing-ebs": ("racing-ebs", {"variance": "pairwise"}),
    "racing-ebs-marginal": ("racing-ebs", {"variance": "marginal"}),
    "lil-ucb": ("lil-ucb", {}),
}

CSV_COLUMNS = ["dist", "sigma", "algorithm", "delta", "n_draws", "n_errors", "error_rate", "error_ci_low",
               "error_ci_high", "mean_fraction", "sd_fraction", "seconds_per_draw", "n_states", "n_data"]


def _wilson(k, n, z=1.959964):
    if n == 0:
        return float("nan"), float("nan")
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == n else min(1.0, centre + half)
    return lo, hi


def run_study(*, dists=("normal", "uniform", "lognormal"), sigmas=(0.1, 1e-4, 1e-5),
              deltas=(1e-3, 1e-2, 1e-1), algorithms=tuple(ALGORITHMS), n_states=10, n_data=100_000,
              n_draws=200, first_batch=50, rng=0, progress=True):
    """The Sec. 5.1 study: empirical error and proportion of rewards per algorithm.

    For each reward distribution and ``sigma`` a reward population is built with
    :func:`make_rewards` (fixed ``p(X)``); every draw uses one Gumbel vector shared
    by all algorithms and deltas, and the error is ``state != exact Gumbel-max
    answer`` for those Gumbels. Racing-EBS uses the tight range
    ``C_i = max_n l_{i,n} - min_n l_{i,n}`` and lil'UCB the scale ``C_i / 2``.

    Returns
    -------
    pandas.DataFrame
        One row per (dist, sigma, algorithm, delta) with columns ``CSV_COLUMNS``;
        ``error_ci_*`` is a 95% Wilson interval, ``mean_fraction`` the mean of
        ``n_evals / (D N)``.
    """
    import time

    import pandas as pd
    from tqdm.auto import tqdm

    from sampling.discrete import sample_discrete

    for a in algorithms:
        if a not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {a!r}; choose from {tuple(ALGORITHMS)}")
    gen = as_generator(rng)
    rows = []
    total = len(dists) * len(sigmas) * len(algorithms) * len(deltas) * n_draws
    bar = tqdm(total=total, disable=not progress, desc="synthetic study", unit="draw")
    f0 = np.zeros(n_states)
    for dist in dists:
        for sigma in sigmas:
            rewards = make_rewards(dist, n_states, n_data, sigma, rng=gen)
            log_f = MatrixLogF(rewards)
            c_range = rewards.max(axis=1) - rewards.min(axis=1)
            gumbels = gen.gumbel(size=(n_draws, n_states))
            exact = np.argmax(rewards.sum(axis=1)[None, :] + gumbels, axis=1)
            for algo in algorithms:
                method, extra = ALGORITHMS[algo]
                kw = dict(extra)
                if method != "racing-normal":
                    kw["reward_range"] = c_range
                if method.startswith("racing"):
                    kw["first_batch"] = first_batch
                for delta in deltas:
                    errors, fracs = 0, np.empty(n_draws)
                    t0 = time.perf_counter()
                    for j in range(n_draws):
                        res = sample_discrete(log_f, f0, n_data, method=method, delta=delta,
                                              gumbels=gumbels[j], rng=gen, **kw)
                        errors += res.state != exact[j]
                        fracs[j] = res.fraction_evaluated
                        bar.update(1)
                    lo, hi = _wilson(errors, n_draws)
                    rows.append(dict(dist=dist, sigma=sigma, algorithm=algo, delta=delta, n_draws=n_draws,
                                     n_errors=int(errors), error_rate=errors / n_draws, error_ci_low=lo,
                                     error_ci_high=hi, mean_fraction=float(fracs.mean()),
                                     sd_fraction=float(fracs.std()),
                                     seconds_per_draw=(time.perf_counter() - t0) / n_draws,
                                     n_states=n_states, n_data=n_data))
    bar.close()
    return pd.DataFrame(rows, columns=CSV_COLUMNS)


def plot_study(df, path):
    """Figure-1 style plots: error vs delta (top row) and proportion of rewards (bottom), one column per sigma."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sigmas = sorted(df["sigma"].unique(), reverse=True)
    fig, axes = plt.subplots(2, len(sigmas), figsize=(4.4 * len(sigmas), 8), squeeze=False)
    markers = {"normal": "x", "uniform": "o", "lognormal": "s"}
    colours = dict(zip(ALGORITHMS, ["C3", "C1", "C0", "C9", "C2"]))
    for col, sigma in enumerate(sigmas):
        ax_e, ax_f = axes[0, col], axes[1, col]
        sub = df[df["sigma"] == sigma]
        for (algo, dist), g in sub.groupby(["algorithm", "dist"], sort=False):
            g = g.sort_values("delta")
            style = dict(color=colours.get(algo, "k"), marker=markers.get(dist, "."), mfc="none")
            has_err = g["n_errors"] > 0
            if has_err.any():
                gg = g[has_err]
                ax_e.errorbar(gg["delta"], gg["error_rate"],
                              yerr=[gg["error_rate"] - gg["error_ci_low"], gg["error_ci_high"] - gg["error_rate"]],
                              label=f"{algo} / {dist}", capsize=2, **style)
            ax_f.plot(g["delta"], g["mean_fraction"], label=f"{algo} / {dist}", **style)
        lim = np.array([sub["delta"].min(), sub["delta"].max()])
        ax_e.plot(lim, lim, "k--", lw=1, label="error = delta")
        ax_e.set(xscale="log", yscale="log", xlabel="delta", ylabel="empirical error",
                 title=f"sigma = {sigma:g}: error")
        ax_f.set(xscale="log", yscale="log", xlabel="delta", ylabel="proportion of rewards used",
                 title=f"sigma = {sigma:g}: proportion of rewards")
    handles, labels = axes[1, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=7, frameon=False)
    n_states, n_data = int(df["n_states"].iloc[0]), int(df["n_data"].iloc[0])
    fig.suptitle(f"D = {n_states}, N = {n_data}, {int(df['n_draws'].iloc[0])} draws per point; "
                 "error with 95% Wilson CI, settings without any error are not drawn", fontsize=9)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)


def _floats(text):
    return tuple(float(x) for x in text.split(",") if x.strip())


def add_arguments(parser):
    """Arguments of ``sampling synthetic``.

    Defaults are a few-minute run. The paper's full setting (Sec. 5.1, Fig. 1) is
    ``--n-data 100000 --draws 10000 --deltas 0.001,0.002,0.005,0.01,0.02,0.05,0.1``
    (hours on one core; lil'UCB and the hard sigma = 0.1 dominate).
    """
    parser.add_argument("--arms", type=int, default=10, help="number of states D [10]")
    parser.add_argument("--n-data", type=int, default=100_000, help="population size N [100000]")
    parser.add_argument("--sigma", type=_floats, default=(0.1, 1e-4, 1e-5),
                        help="comma-separated reward standard deviations [0.1,1e-4,1e-5]")
    parser.add_argument("--dist", default="normal,uniform,lognormal",
                        help="comma-separated reward distributions among normal,uniform,lognormal [all]")
    parser.add_argument("--deltas", type=_floats, default=(1e-3, 1e-2, 1e-1),
                        help="comma-separated delta values [0.001,0.01,0.1]")
    parser.add_argument("--algorithms", default="racing-normal,racing-normal-marginal,racing-ebs,lil-ucb",
                        help=f"comma-separated among {','.join(ALGORITHMS)}")
    parser.add_argument("--draws", type=int, default=40, help="draws of X per setting [40]")
    parser.add_argument("--first-batch", type=int, default=50, help="racing m(1) [50]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/synthetic", help="output folder (CSV + PNG)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    # deprecated spelling of --quiet (coref and `sampling bounds` say --quiet)
    parser.add_argument("--no-progress", dest="quiet", action="store_true", help=argparse.SUPPRESS)


def main(args) -> int:
    """Run the study, write ``synthetic.csv`` and ``synthetic.png`` atomically, print a summary."""
    from pathlib import Path

    dists = tuple(d.strip() for d in args.dist.split(",") if d.strip())
    algos = tuple(a.strip() for a in args.algorithms.split(",") if a.strip())
    for d in dists:
        if d not in _DISTS:
            print(f"sampling synthetic: error: unknown --dist {d!r}; choose from {_DISTS}")
            return 2
    try:
        df = run_study(dists=dists, sigmas=args.sigma, deltas=args.deltas, algorithms=algos,
                       n_states=args.arms, n_data=args.n_data, n_draws=args.draws,
                       first_batch=args.first_batch, rng=args.seed, progress=not args.quiet)
    except ValueError as exc:
        print(f"sampling synthetic: error: {exc}")
        return 2
    out = Path(args.out)
    with atomic_path(out / "synthetic.csv") as tmp:
        df.to_csv(tmp, index=False)
    plot_study(df, out / "synthetic.png")
    with np.printoptions(precision=4):
        print(df[["dist", "sigma", "algorithm", "delta", "error_rate", "error_ci_high", "mean_fraction",
                  "seconds_per_draw"]].to_string(index=False))
    print(f"wrote {out / 'synthetic.csv'} and {out / 'synthetic.png'}")
    return 0
