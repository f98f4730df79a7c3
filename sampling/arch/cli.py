"""``sampling arch``: Bayesian ARCH order selection on a returns series (paper Sec. 5.2).

Default data: the shipped SPY 1-minute bars of January 2011
(``data/returns/spy_1min_2011-01_pyalgotrade.txt``; ~14,160 returns, the order of
the paper's 13,000 five-minute points). Returns are ``100 * diff(log close)``;
for intraday bars a return across a gap of more than 60 minutes (the overnight
break) is dropped and the sessions are concatenated (daily bars keep every
return); zero returns (1-cent tick) are kept; the series is demeaned and scaled
to unit standard deviation before fitting. Pass several files to concatenate
them (e.g. both shipped months). Returns beyond 50 robust standard deviations
(1.4826 MAD) of the median are reported with their dates on stderr
(:func:`sampling.arch.returns.extreme_returns`); the run goes on. Exit status: 0
done, 2 bad input, 4 an output could not be written.

Outputs in ``--out`` (written atomically): ``summary.json`` (posterior over q,
likelihood terms evaluated, acceptance rates, racing error rates, ESS, R-hat),
``posterior.csv``, ``q_trace.csv``, ``warmup_log_prior.csv`` and PNG plots like
the paper's Fig. 2: ``fig2_posterior_q.png`` (the answer, p(q | r), pooled and
per chain), ``fig2b_log_posterior.png``, ``fig2c_adjusted_posterior.png``,
``fig2d_autocorrelation.png``; legends name only the chains that ran. ``--resume``
continues from ``checkpoint_<method>.npz`` (no pickle; refused with a message
naming the file if it was written by another run, for other data, or modified).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from sampling.utils.atomic import atomic_path, atomic_write_text
from sampling.exceptions import CheckpointError, ReturnsDataError


def add_arguments(parser):
    """Register the ``sampling arch`` options on ``parser``."""
    parser.add_argument("files", nargs="*", metavar="FILE",
                        help="price file(s): NinjaTrader ';' minute bars or CSV with a "
                             "Close/Adj Close/price column (default: shipped SPY 2011-01)")
    parser.add_argument("--orders", default="5,10,15,20,25,30",
                        help="candidate ARCH orders, comma-separated (default: %(default)s)")
    parser.add_argument("--method", choices=["subsampled", "exact", "both"], default="subsampled",
                        help="subsampled (racing) chain, exact chain, or both on the same "
                             "adjusted prior (default: %(default)s)")
    parser.add_argument("--iterations", type=int, default=5000,
                        help="sweeps per chain after the adjusted prior is fixed (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=1000,
                        help="Wang-Landau / step-size adaptation sweeps per chain (default: %(default)s)")
    parser.add_argument("--chains", type=int, default=4, help="number of chains (default: %(default)s)")
    parser.add_argument("--delta", type=float, default=0.05,
                        help="racing error level (default: %(default)s)")
    parser.add_argument("--pseudo-prior", choices=["pilot", "laplace"], default="pilot",
                        help="Carlin-Chib pseudo-priors: Gaussians from within-model pilot "
                             "chains, or the Laplace fits of the paper (default: %(default)s)")
    parser.add_argument("--pilot", type=int, default=2000,
                        help="pilot MALA steps per model for --pseudo-prior pilot (default: %(default)s)")
    parser.add_argument("--grad-batch", type=int, default=1000,
                        help="SGLD mini-batch size (default: %(default)s)")
    parser.add_argument("--control-variate", choices=["taylor", "binned"], default="taylor",
                        help="racing control variate: per-term Taylor expansion at the MAP, or "
                             "the paper's 10x10 binned proxies (default: %(default)s)")
    parser.add_argument("--outlier-fraction", type=float, default=0.2,
                        help="share of terms always evaluated exactly (default: %(default)s)")
    parser.add_argument("--check-every", type=int, default=0,
                        help="measure racing error rates on every k-th sweep (0: off)")
    parser.add_argument("--seed", type=int, default=20160619, help="random seed (default: %(default)s)")
    parser.add_argument("--out", default="arch_results", help="output folder (default: %(default)s)")
    parser.add_argument("--resume", action="store_true", help="continue from the checkpoint in --out")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    # deprecated spelling of --quiet (coref and `sampling bounds` say --quiet)
    parser.add_argument("--no-progress", dest="quiet", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")


def _atomic_savefig(fig, path):
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, bbox_inches="tight")


def _parse_orders(text):
    try:
        orders = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise ValueError(f"--orders must be comma-separated integers; got {text!r}") from exc
    return orders


def write_outputs(results, out, *, plots=True, data_note=""):
    """Write summary.json, CSVs and Fig. 2-style plots for ``{method: ARCHSelection}``.

    Returns the summary (the content of summary.json); :func:`written_outputs` lists the
    files written.
    """
    import pandas as pd

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary = {"data": data_note, "results": {m: r.summary() for m, r in results.items()}}
    if len(results) == 2:
        a, b = results["subsampled"], results["exact"]
        summary["tv_posterior"] = 0.5 * float(np.abs(a.posterior - b.posterior).sum())
        summary["tv_adjusted_posterior"] = 0.5 * float(
            np.abs(a.adjusted_posterior - b.adjusted_posterior).sum())
        summary["evals_per_ess_ratio_exact_over_subsampled"] = b.evals_per_ess / a.evals_per_ess
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=2))
    rows = []
    for m, r in results.items():
        for q, p, pa, lp in zip(r.orders, r.posterior, r.adjusted_posterior, r.log_adjusted_prior):
            rows.append({"method": m, "q": q, "posterior": p, "adjusted_posterior": pa,
                         "log_adjusted_prior": lp})
    atomic_write_text(out / "posterior.csv", pd.DataFrame(rows).to_csv(index=False))
    rows = []
    for m, r in results.items():
        for c in range(r.q_trace.shape[0]):
            n_w = r.warmup_q_trace.shape[1]
            rows.append(pd.DataFrame({"method": m, "chain": c,
                                      "iteration": np.arange(r.q_trace.shape[1]),
                                      "q": r.q_trace[c],
                                      "n_loglik_evals": r.n_evals_trace[c, n_w:]}))
    atomic_write_text(out / "q_trace.csv", pd.concat(rows).to_csv(index=False))
    rows = []
    for m, r in results.items():
        for c in range(r.log_adjusted_prior_trace.shape[0]):
            n_w = r.log_adjusted_prior_trace.shape[1]
            df = pd.DataFrame(r.log_adjusted_prior_trace[c],
                              columns=[f"log_prior_q{q}" for q in r.orders])
            df.insert(0, "n_loglik_evals", r.n_evals_trace[c, :n_w])
            df.insert(0, "iteration", np.arange(n_w))
            df.insert(0, "chain", c)
            df.insert(0, "method", m)
            rows.append(df)
    if rows:
        atomic_write_text(out / "warmup_log_prior.csv", pd.concat(rows).to_csv(index=False))
    if plots:
        _plots(results, out)
    return summary


PLOTS = ("fig2_posterior_q.png", "fig2b_log_posterior.png", "fig2c_adjusted_posterior.png",
         "fig2d_autocorrelation.png")


def written_outputs(results, *, plots=True):
    """The names of the files :func:`write_outputs` writes for ``results``, in order."""
    names = ["summary.json", "posterior.csv", "q_trace.csv"]
    if any(r.log_adjusted_prior_trace.shape[0] for r in results.values()):
        names.append("warmup_log_prior.csv")
    return names + (list(PLOTS) if plots else [])


def _autocorr(x, max_lag):
    x = np.asarray(x, dtype=float) - np.mean(x)
    v = np.dot(x, x)
    if v == 0:
        return np.full(max_lag + 1, np.nan)
    return np.array([np.dot(x[: x.size - k], x[k:]) / v for k in range(max_lag + 1)])


def _plots(results, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {"exact": "-", "subsampled": "--"}
    ran = list(results)
    style_note = ", ".join(f"{'solid' if m == 'exact' else 'dashed'}: {m}" for m in ran)
    # the answer: p(q | r), pooled (bars) and per chain (dots), per method
    fig, ax = plt.subplots(figsize=(6, 4))
    width = 0.8 / len(ran)
    for i, (m, r) in enumerate(results.items()):
        xs = np.arange(len(r.orders)) + (i - (len(ran) - 1) / 2) * width
        ax.bar(xs, r.posterior, width=width, color=f"C{i}", alpha=0.6,
               label=f"{m}: p(q | r), {r.q_trace.shape[0]} chains pooled")
        for pc in r.posterior_per_chain:
            ax.plot(xs, pc, "o", color=f"C{i}", ms=3, alpha=0.8)
    ax.set_xticks(np.arange(len(results[ran[0]].orders)))
    ax.set_xticklabels([str(q) for q in results[ran[0]].orders])
    ax.set_xlabel("ARCH order q")
    ax.set_ylabel("posterior p(q | r)")
    ax.set_title("posterior over the ARCH order (dots: single chains)")
    ax.legend(fontsize=7)
    _atomic_savefig(fig, out / PLOTS[0])
    plt.close(fig)
    # (b) estimated log posterior of q vs likelihood evaluations during Wang-Landau
    fig, ax = plt.subplots(figsize=(6, 4))
    drawn = []
    for m, r in results.items():
        tr = r.log_adjusted_prior_trace
        if tr.shape[1] == 0 or np.ptp(tr) == 0:  # no Wang-Landau adaptation in this run
            continue
        drawn.append(m)
        est = -tr - np.log(np.exp(-tr - (-tr).max(axis=2, keepdims=True)).sum(axis=2, keepdims=True)) \
            - (-tr).max(axis=2, keepdims=True)
        n_w = tr.shape[1]
        x = r.n_evals_trace[:, :n_w].mean(axis=0)
        for k, q in enumerate(r.orders):
            ax.plot(x, est[:, :, k].mean(axis=0), styles[m], color=f"C{k}",
                    label=f"q={q}" if m == drawn[0] else None)
    ax.set_xscale("log")
    ax.set_xlabel("likelihood terms evaluated")
    ax.set_ylabel("estimated log p(q | r)")
    ax.set_ylim(bottom=-60, top=5)
    if drawn:
        ax.set_title("(b) Wang-Landau estimate (" + ", ".join(
            f"{'solid' if m == 'exact' else 'dashed'}: {m}" for m in drawn) + ")")
        ax.legend(fontsize=7)
    else:
        ax.set_title("(b) no Wang-Landau adaptation ran (adjusted prior given)")
    _atomic_savefig(fig, out / PLOTS[1])
    plt.close(fig)
    # (c) adjusted posterior per chain
    fig, ax = plt.subplots(figsize=(6, 4))
    for m, r in results.items():
        D = len(r.orders)
        for c in range(r.q_trace.shape[0]):
            freq = np.bincount(np.searchsorted(r.orders, r.q_trace[c]), minlength=D) / r.q_trace.shape[1]
            ax.plot(r.orders, freq, styles[m] + "o", color="C0" if m == "exact" else "C1",
                    alpha=0.6, label=m if c == 0 else None)
    ax.set_xlabel("q")
    ax.set_ylabel("adjusted posterior p~(q | r)")
    ax.set_title(f"(c) adjusted posterior, one line per chain ({style_note})")
    ax.legend()
    _atomic_savefig(fig, out / PLOTS[2])
    plt.close(fig)
    # (d) autocorrelation of q
    fig, ax = plt.subplots(figsize=(6, 4))
    for m, r in results.items():
        max_lag = min(300, r.q_trace.shape[1] - 1)
        ac = np.nanmean([_autocorr(c, max_lag) for c in r.q_trace], axis=0)
        ax.plot(np.arange(max_lag + 1), ac, styles[m], label=m)
    ax.set_xlabel("lag (sweeps)")
    ax.set_ylabel("autocorrelation of q")
    ax.set_title(f"(d) autocorrelation of sampled q ({style_note})")
    ax.legend()
    _atomic_savefig(fig, out / PLOTS[3])
    plt.close(fig)


def _print_result(r, file=sys.stdout):
    print(f"== method: {r.method}  ({r.q_trace.shape[0]} chains x {r.q_trace.shape[1]} sweeps, "
          f"{r.warmup_q_trace.shape[1]} warm-up; N = {r.n_data} terms, {r.n_outliers} outliers)",
          file=file)
    print("   q      p(q|r)   p~(q|r)   log pi~", file=file)
    for q, p, pa, lp in zip(r.orders, r.posterior, r.adjusted_posterior, r.log_adjusted_prior):
        print(f"  {q:3d}  {p:9.4f}  {pa:8.3f}  {lp:9.2f}", file=file)
    print(f"   likelihood terms evaluated: {r.n_loglik_evals:,} "
          f"({r.n_loglik_evals_sampling:,} after warm-up; {r.evals_per_ess:,.0f} per ESS)", file=file)
    print(f"   MH acceptance rate per chain: {np.round(r.acceptance_rate, 3).tolist()}", file=file)
    if r.gibbs_error_rate is not None:
        print(f"   racing error rates: Gibbs {r.gibbs_error_rate:.2e} ({r.n_gibbs_checks} checks), "
              f"MH {r.mh_error_rate:.2e} ({r.n_mh_checks} checks)", file=file)
    print(f"   ESS(q) = {r.ess:.1f}   R-hat(q) = {r.r_hat:.3f}   ESS of 1[q=k]: "
          f"{np.round(r.ess_indicator, 0).tolist()}   wall {r.wall_time_s:.1f} s", file=file)
    n_sw = max(r.q_trace.size, 1)
    print(f"   sweeps after warm-up: {r.sampling_wall_time_s:.1f} s wall, {r.sampling_cpu_time_s:.1f} s CPU "
          f"({1e3 * r.sampling_wall_time_s / n_sw:.2f} ms per sweep, {1e3 * r.wall_per_ess:.1f} ms per ESS); "
          f"{r.n_loglik_evals_sampling / n_sw / r.n_data:.2f} N likelihood terms per sweep", file=file)


def main(args):
    """Run the ``sampling arch`` sub-command; returns the exit status.

    0 done; 2 bad input (price files, options, a checkpoint of another run, an output
    folder that cannot be created), found before the chains run; 4 the results were
    printed but an output file could not be written. Data warnings (extreme returns)
    go to stderr as ``sampling arch: warning: ...``.
    """
    import warnings

    from sampling.arch.returns import DEFAULT_RETURNS_FILE, load_returns
    from sampling.arch.sampler import select_order
    from sampling.exceptions import DataWarning

    try:
        orders = _parse_orders(args.orders)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always", DataWarning)
            returns = load_returns(args.files or None)
        for w in seen:
            if issubclass(w.category, DataWarning):
                print(f"sampling arch: warning: {w.message}", file=sys.stderr)
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        note = ("files: " + ", ".join(str(f) for f in args.files)) if args.files else \
            f"shipped {DEFAULT_RETURNS_FILE}"
        note += (f"; {returns.size} percent log returns of close prices (returns across intraday "
                 "gaps > 60 min dropped, zeros kept), demeaned and scaled to unit sd")
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        methods = ["subsampled", "exact"] if args.method == "both" else [args.method]
        print(f"sampling arch: {note}")
        results = {}
        fixed = pseudo = None
        gen = np.random.default_rng(args.seed)
        seeds = gen.spawn(len(methods))
        for m, seed in zip(methods, seeds):
            t0 = time.perf_counter()
            res = select_order(
                returns, orders=orders, method=m, n_iterations=args.iterations,
                n_warmup=args.warmup, n_chains=args.chains, delta=args.delta, rng=seed,
                check_every=args.check_every, log_adjusted_prior=fixed,
                pseudo_prior=args.pseudo_prior, n_pilot=args.pilot, pseudo_priors=pseudo,
                grad_batch=args.grad_batch, control_variate=args.control_variate,
                outlier_fraction=args.outlier_fraction,
                progress=not args.quiet, checkpoint=str(out / f"checkpoint_{m}.npz"),
                resume=args.resume, name=", ".join(str(f) for f in args.files) or DEFAULT_RETURNS_FILE)
            if fixed is None:  # the second chain reuses the same product-space target
                fixed, pseudo = res.log_adjusted_prior, res.pseudo_priors
            results[m] = res
            _print_result(res)
            print(f"   ({time.perf_counter() - t0:.1f} s)")
    except (ReturnsDataError, CheckpointError, ValueError, OSError) as exc:
        print(f"sampling arch: error: {exc}", file=sys.stderr)
        return 2
    plots = not args.no_plots
    try:
        summary = write_outputs(results, out, plots=plots, data_note=note)
    except OSError as exc:
        print(f"sampling arch: cannot write the outputs to {out}: {exc}", file=sys.stderr)
        return 4
    if "tv_posterior" in summary:
        print(f"TV(subsampled, exact): posterior {summary['tv_posterior']:.4f}, adjusted "
              f"posterior {summary['tv_adjusted_posterior']:.4f}; likelihood terms per ESS "
              f"exact/subsampled = {summary['evals_per_ess_ratio_exact_over_subsampled']:.2f}")
    print(f"wrote {out}/: " + ", ".join(written_outputs(results, plots=plots)))
    return 0
