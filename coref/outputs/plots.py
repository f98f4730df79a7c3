"""The figures of ``coref run``: B3 F1 convergence curves and the reliability diagram, as PNG.

The two curve plots reproduce Fig. 3 of Chen & Ghahramani (2016), Sec. 5.3: B3 F1 on the
labeled mentions against (a) the cumulative number of pairwise factor evaluations and
(b) the Gibbs sweep, one line per sampler (Racing-Normal "racing" vs. "exact").
matplotlib is imported only when a figure is drawn; every PNG is written atomically.

References
----------
.. [1] Chen, Y. & Ghahramani, Z. (2016). Scalable discrete sampling as a multi-armed
   bandit problem. ICML. Sec. 5.3, Fig. 3(a) and 3(b).
"""
from __future__ import annotations

from sampling.utils.atomic import atomic_path

__all__ = ["FIGURES", "plot_curves", "plot_reliability"]

#: file name of each figure of ``coref run``
FIGURES = {
    "evals": "b3_f1_vs_factor_evals.png",
    "sweeps": "b3_f1_vs_sweeps.png",
    "reliability": "reliability.png",
}
_COLORS = {"racing": "tab:blue", "exact": "tab:orange"}
_LABELS = {"racing": "Racing-Normal Gibbs (sub)", "exact": "exact Gibbs"}


def plot_curves(curves, path, *, x="n_factor_evals"):
    """Plot B3 F1 against ``x`` for each sampler and save a PNG atomically.

    Parameters
    ----------
    curves : pandas.DataFrame
        Columns as in ``CURVE_COLUMNS``: one row per (sampler, sweep).
    path : str or os.PathLike
        PNG file to write.
    x : {"n_factor_evals", "sweep"}
        Horizontal axis: cumulative pairwise factor evaluations (Fig. 3a, log scale)
        or Gibbs sweep (Fig. 3b).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 4.0), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for sampler, cur in curves.groupby("sampler", sort=True):
        xs = cur[x].to_numpy(dtype=float)
        ys = cur["b3_f1"].to_numpy(dtype=float)
        if x == "n_factor_evals":
            keep = xs > 0
            xs, ys = xs[keep], ys[keep]
        ax.plot(xs, ys, marker=".", color=_COLORS.get(sampler), label=_LABELS.get(sampler, sampler))
    if x == "n_factor_evals":
        ax.set_xscale("log")
        ax.set_xlabel("cumulative pairwise factor evaluations")
        ax.set_title("B3 F1 vs #factor evaluations (cf. Fig. 3a)")
    else:
        ax.set_xlabel("Gibbs sweep")
        ax.set_title("B3 F1 vs sweep (cf. Fig. 3b)")
    ax.set_ylabel("B3 F1 (labeled mentions)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    fig.subplots_adjust(left=0.14, right=0.97, bottom=0.13, top=0.91)  # tight_layout costs ~0.4 s a figure
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")



def plot_reliability(reliability, path):
    """Reliability diagram (observed frequency against mean predicted p per bin).

    Parameters
    ----------
    reliability : dict
        ``{"raw" | "calibrated" | "sigmoid_f": {"n": [...], "mean_p": [...], "freq": [...]}}``
        as in ``metrics["confidence"]["pooled"]["reliability"]``.
    path : str or os.PathLike
        PNG written atomically.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = {"raw": "posterior marginal (T = 1)", "calibrated": "calibrated: map of (p + sigmoid(f)) / 2, training folds",
              "sigmoid_f": "sigmoid(f) (pairwise logistic)"}
    fig, ax = plt.subplots(figsize=(4.8, 4.4))
    ax.plot([0, 1], [0, 1], color="grey", lw=1)
    for key in ("raw", "calibrated", "sigmoid_f"):
        t = reliability.get(key)
        if not t:
            continue
        pts = [(m, f) for n, m, f in zip(t["n"], t["mean_p"], t["freq"]) if n and m is not None and f is not None]
        if pts:
            ax.plot([a for a, _ in pts], [b for _, b in pts], "o-", ms=4, label=labels[key])
    ax.set_xlabel("predicted P(same author)")
    ax.set_ylabel("observed frequency")
    ax.set_title("held-out pairs, 10 equal-width bins")
    ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)
