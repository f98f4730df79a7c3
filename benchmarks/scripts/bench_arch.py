"""Subsampled vs exact Carlin-Chib ARCH order selection on the shipped SPY series, side by side.

Reproduces the comparison of Chen & Ghahramani (2016), Sec. 5.2 / Fig. 2, and
times it: both chains run the same compiled sweep (``sampling.arch._chain``), in
the same process, one after the other.

1. set-up: MAP + Laplace per order, pilot-chain pseudo-priors, Wang-Landau
   adaptation of the adjusted prior (subsampled chain, ``--wl-warmup`` sweeps);
2. with the adjusted prior and the pseudo-priors fixed (the same product-space
   target), ``--chains`` chains of each method (seeds from ``rng.spawn``), no
   exact-decision checks (they would add D N terms per sweep to the timing); the
   two runs advance in alternating blocks of ``--block`` sweeps, so that both meet
   the same load on a shared machine (wall and process CPU time are reported);
3. a separate subsampled run of ``--check-iterations`` sweeps with every racing
   decision checked against the exact one under the same random draws (error rates);
4. prints and saves (``--out``) the posterior over q of both methods, their total
   variation distance, wall time of the fixed-phase sweeps, ESS(q), wall time and
   likelihood terms per ESS, terms per sweep; writes the Fig. 2 (b-d) style plots.

``--wl-compare`` also runs Wang-Landau from a uniform adjusted prior with both
methods (Fig. 2(b): estimated log posterior vs likelihood terms evaluated).

Not run by the tests. Documented settings (the issue's "4 chains x 6000")::

    nice -n 10 python benchmarks/scripts/bench_arch.py --iterations 6000 --chains 4 --wl-warmup 3000 \
        --out bench_arch_out

Measured with that command (2026-11-23, shared 2-core machine, load 5-8; about 5
minutes in all): TV(posterior) 0.008, TV(adjusted posterior) 0.007; ESS(q)
subsampled 489, exact 464; wall of the fixed-phase sweeps 44.0 s vs 118.0 s
(CPU 14.2 s vs 38.0 s); wall per ESS(q) 90.0 ms vs 254.4 ms, ratio
exact/subsampled 2.83 (CPU 2.83); likelihood terms per sweep 1.86 N vs 6.30 N,
per ESS(q) ratio 3.57; racing errors in 1000 checked sweeps: Gibbs 0, MH 7e-3.
Under heavier load the ratio fell to 2.16 once (random-access racing suffers more
from cache contention than the streaming exact sums).

A quick smoke run of the same steps (too short for Wang-Landau to settle: ESS(q)
below 100, not for comparisons)::

    python benchmarks/scripts/bench_arch.py --iterations 2000 --chains 4 --wl-warmup 1000 --pilot 1000 \
        --check-iterations 500 --out bench_arch_short
"""
import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parents[1] / "results"  # git-ignored

from sampling.arch import load_returns, select_order
from sampling.arch.sampler import select_orders_interleaved
from sampling.arch.cli import write_outputs


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iterations", type=int, default=6000)
    p.add_argument("--warmup", type=int, default=300, help="step-size warm-up per chain")
    p.add_argument("--wl-warmup", type=int, default=3000, help="Wang-Landau sweeps per chain")
    p.add_argument("--wl-chains", type=int, default=2)
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--pilot", type=int, default=2000)
    p.add_argument("--pseudo-prior", default="pilot", choices=["pilot", "laplace"])
    p.add_argument("--block", type=int, default=250,
                   help="sweeps per turn when the two timed runs alternate")
    p.add_argument("--check-iterations", type=int, default=1000,
                   help="sweeps of the separate error-rate run (every decision checked)")
    p.add_argument("--control-variate", default="taylor", choices=["taylor", "binned"])
    p.add_argument("--outlier-fraction", type=float, default=0.2)
    p.add_argument("--grad-batch", type=int, default=1000)
    p.add_argument("--seed", type=int, default=20160619)
    p.add_argument("--wl-compare", action="store_true")
    p.add_argument("--out", default=str(RESULTS / "arch"))
    args = p.parse_args(argv)
    warnings.simplefilter("ignore")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    r = load_returns()
    gen = np.random.default_rng(args.seed)
    s_wl, s_sub, s_ex, s_cmp = gen.spawn(4)
    cv_kw = dict(control_variate=args.control_variate, outlier_fraction=args.outlier_fraction,
                 grad_batch=args.grad_batch)
    t0 = time.perf_counter()
    wl = select_order(r, method="subsampled", n_iterations=200, n_warmup=args.wl_warmup,
                      n_chains=args.wl_chains, rng=s_wl, n_pilot=args.pilot,
                      pseudo_prior=args.pseudo_prior, **cv_kw)
    print(f"set-up + Wang-Landau: {time.perf_counter() - t0:.0f} s; log pi~ = "
          f"{np.round(wl.log_adjusted_prior, 2).tolist()}; pilot terms = {wl.n_setup_evals:,}")
    # the two timed runs advance in alternating blocks of --block sweeps (one chain
    # at a time), so both meet the same machine load
    calls = [dict(returns=r, method=m, n_iterations=args.iterations, n_warmup=args.warmup,
                  n_chains=args.chains, rng=seed, log_adjusted_prior=wl.log_adjusted_prior,
                  pseudo_priors=wl.pseudo_priors, checkpoint_every=args.block, **cv_kw)
             for m, seed in (("subsampled", s_sub), ("exact", s_ex))]
    results = dict(zip(("subsampled", "exact"), select_orders_interleaved(calls)))
    for res in results.values():
        print(f"== {res.method}: p(q | r) {dict(zip(res.orders, np.round(res.posterior, 4).tolist()))}, "
              f"ESS(q) {res.ess:.1f}, {res.n_loglik_evals_sampling / max(res.q_trace.size, 1) / res.n_data:.2f} N terms per sweep")
    chk = None
    if args.check_iterations:
        chk = select_order(r, method="subsampled", n_iterations=args.check_iterations, n_warmup=0,
                           n_chains=1, rng=s_cmp, check_every=1,
                           log_adjusted_prior=wl.log_adjusted_prior,
                           pseudo_priors=wl.pseudo_priors, **cv_kw)
    summary = write_outputs(results, out, data_note="shipped SPY 1-min 2011-01")
    a, b = results["subsampled"], results["exact"]
    tv = 0.5 * np.abs(a.posterior - b.posterior).sum()
    tv_adj = 0.5 * np.abs(a.adjusted_posterior - b.adjusted_posterior).sum()
    # per-chain spread of the posterior: how much TV two exact runs would show
    se = lambda res: res.posterior_per_chain.std(axis=0, ddof=1) / np.sqrt(res.posterior_per_chain.shape[0])  # noqa: E731
    print("\n== comparison (same adjusted prior and pseudo-priors)")
    print(f"posterior subsampled {np.round(a.posterior, 4).tolist()} (+- {np.round(se(a), 4).tolist()})")
    print(f"posterior exact      {np.round(b.posterior, 4).tolist()} (+- {np.round(se(b), 4).tolist()})")
    print(f"TV(posterior) = {tv:.4f}   TV(adjusted posterior) = {tv_adj:.4f}")
    print(f"likelihood terms per ESS(q): subsampled {a.evals_per_ess:,.0f}, exact {b.evals_per_ess:,.0f},"
          f" ratio exact/subsampled = {b.evals_per_ess / a.evals_per_ess:.2f}")
    print(f"ESS(q): subsampled {a.ess:.0f}, exact {b.ess:.0f}; R-hat {a.r_hat:.3f} / {b.r_hat:.3f}")
    ind_ratio = (b.n_loglik_evals_sampling / b.ess_indicator) / (a.n_loglik_evals_sampling / a.ess_indicator)
    print(f"ESS of 1[q=k]: subsampled {np.round(a.ess_indicator, 0).tolist()}, exact "
          f"{np.round(b.ess_indicator, 0).tolist()}; terms-per-ESS ratio exact/subsampled per k: "
          f"{np.round(ind_ratio, 2).tolist()}")
    summary["evals_per_indicator_ess_ratio"] = ind_ratio.tolist()
    if chk is not None:
        print(f"racing error rates ({args.check_iterations} checked sweeps): Gibbs "
              f"{chk.gibbs_error_rate:.2e} ({chk.n_gibbs_checks} checks), MH {chk.mh_error_rate:.2e} "
              f"({chk.n_mh_checks} checks)")
        summary.update(gibbs_error_rate=chk.gibbs_error_rate, mh_error_rate=chk.mh_error_rate,
                       n_gibbs_checks=chk.n_gibbs_checks, n_mh_checks=chk.n_mh_checks)
    wr = b.wall_per_ess / a.wall_per_ess
    print(f"wall of the fixed-phase sweeps: subsampled {a.sampling_wall_time_s:.1f} s, exact "
          f"{b.sampling_wall_time_s:.1f} s (ratio exact/subsampled {b.sampling_wall_time_s / a.sampling_wall_time_s:.2f})")
    print(f"wall per ESS(q): subsampled {1e3 * a.wall_per_ess:.1f} ms, exact {1e3 * b.wall_per_ess:.1f} ms, "
          f"ratio exact/subsampled = {wr:.2f}")
    cr = (b.sampling_cpu_time_s / b.ess) / (a.sampling_cpu_time_s / a.ess)
    print(f"CPU time of the fixed-phase sweeps: subsampled {a.sampling_cpu_time_s:.1f} s, exact "
          f"{b.sampling_cpu_time_s:.1f} s; CPU per ESS(q) ratio exact/subsampled = {cr:.2f} "
          "(steadier than wall time on a shared machine)")
    summary["cpu_per_ess_ratio_exact_over_subsampled"] = cr
    summary.update(wall_per_ess_ratio_exact_over_subsampled=wr,
                   sampling_wall_s={"subsampled": a.sampling_wall_time_s, "exact": b.sampling_wall_time_s})
    for res in (a, b):
        n_sw = res.q_trace.size
        print(f"{res.method}: {1e3 * res.sampling_wall_time_s / n_sw:.3f} ms per sweep")
        comp = {k: v / n_sw / res.n_data for k, v in res.evals_by_component.items()}
        print(f"terms per sweep / N, {res.method}: total {res.n_loglik_evals_sampling / n_sw / res.n_data:.2f}"
              + "".join(f", {k} {v:.2f}" for k, v in comp.items())
              + f"; acceptance {np.round(res.acceptance_rate, 3).tolist()}")
    summary.update(tv_posterior=tv, tv_adjusted_posterior=tv_adj,
                   posterior_se_subsampled=se(a).tolist(), posterior_se_exact=se(b).tolist())
    if args.wl_compare:
        runs = {}
        for m in ("subsampled", "exact"):
            runs[m] = select_order(r, method=m, n_iterations=50, n_warmup=args.wl_warmup,
                                   n_chains=args.wl_chains, rng=s_cmp, prior_init="uniform",
                                   pseudo_priors=wl.pseudo_priors, progress=True, **cv_kw)
            final = runs[m].log_adjusted_prior_trace[:, -1]
            print(f"WL from uniform, {m}: {runs[m].n_loglik_evals:,} terms; final log pi~ "
                  f"(chain mean) {np.round(final.mean(axis=0), 2).tolist()}")
        _wl_plot(runs, out / "fig2b_wang_landau_uniform.png")
        summary["wl_compare"] = {m: {"n_loglik_evals": w.n_loglik_evals,
                                     "log_adjusted_prior_trace_final":
                                         w.log_adjusted_prior_trace[:, -1].tolist()}
                                 for m, w in runs.items()}
    (out / "bench_summary.json").write_text(json.dumps(summary, indent=2, default=float))
    return 0


def _wl_plot(runs, path):
    """Fig. 2(b): estimated log p(q | r) = -log pi~ (renormalised) vs likelihood terms."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy.special import logsumexp

    fig, ax = plt.subplots(figsize=(6, 4))
    for m, w in runs.items():
        tr = w.log_adjusted_prior_trace                      # (chains, sweeps, D)
        est = -tr - logsumexp(-tr, axis=2, keepdims=True)
        n_w = tr.shape[1]
        x = w.n_evals_trace[:, :n_w].mean(axis=0)
        for k, q in enumerate(w.orders):
            ax.plot(x, est[:, :, k].mean(axis=0), "-" if m == "exact" else "--", color=f"C{k}",
                    label=f"q={q}" if m == "exact" else None)
    ax.set_xscale("log")
    ax.set_ylim(-60, 5)
    ax.set_xlabel("likelihood terms evaluated")
    ax.set_ylabel("estimated log p(q | r)")
    ax.set_title("Wang-Landau from a uniform prior (solid: exact, dashed: subsampled)")
    ax.legend(fontsize=7)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
