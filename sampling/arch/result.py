"""Result of :func:`sampling.arch.select_order`: the posterior over q and the diagnostics."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

__all__ = ["ARCHSelection", "q_diagnostics"]




@dataclass(frozen=True)
class ARCHSelection:
    """Result of :func:`select_order`.

    Attributes
    ----------
    orders : tuple of int
        Candidate orders ``Q``.
    method : {"subsampled", "exact"}
    posterior : ndarray of shape (D,)
        ``p(q | r)`` with a uniform model prior: the visit frequencies of the
        fixed-prior phase (all chains pooled) divided by the adjusted prior
        ``pi~`` and renormalised (Carlin & Chib 1995; paper Appx. C.2).
    posterior_per_chain : ndarray of shape (n_chains, D)
    adjusted_posterior : ndarray of shape (D,)
        Pooled visit frequencies ``p~(q | r)`` (close to uniform by design).
    log_adjusted_prior : ndarray of shape (D,)
        The fixed ``log pi~`` (normalised), natural log.
    q_trace : ndarray of int of shape (n_chains, n_iterations)
        Sampled order (values from ``orders``) in the fixed phase.
    warmup_q_trace : ndarray of int of shape (n_chains, n_warmup)
    log_adjusted_prior_trace : ndarray of shape (n_chains, n_warmup, D)
        ``log pi~`` after each warm-up sweep; ``-log pi~`` (renormalised) is the
        running estimate of ``log p(q | r)`` plotted in the paper's Fig. 2(b).
    n_evals_trace : ndarray of int of shape (n_chains, n_warmup + n_iterations)
        Cumulative per-datum likelihood terms evaluated by each chain.
    n_loglik_evals : int
        Per-datum log-likelihood terms evaluated, all chains and both phases
        (a term and its gradient at the same point count once; racing-error
        checks are not counted).
    n_loglik_evals_sampling : int
        Same, fixed phase only (the denominator-side of ``evals_per_ess``).
    acceptance_rate : ndarray of shape (n_chains,)
        MH acceptance rate of the parameter moves in the fixed phase.
    gibbs_error_rate, mh_error_rate : float or None
        Fraction of checked racing decisions that differ from the exact decision
        under the same Gumbel / uniform draws (``check_every > 0`` only).
    n_gibbs_checks, n_mh_checks : int
    ess : float
        ArviZ bulk ESS of the q trace (chains pooled).
    r_hat : float
        ArviZ rank-normalised R-hat of the q trace (NaN with one chain).
    ess_indicator : ndarray of shape (D,)
        ArviZ ESS (mean) of each indicator ``1[q = orders[k]]`` (NaN if never or
        always visited); less sensitive than ``ess`` to rare long excursions.
    step_sizes : ndarray of shape (n_chains, D)
        Adapted Langevin step sizes (whitened coordinates).
    laplace_log_evidence : ndarray of shape (D,)
    map_params : dict
        ``{q: (alpha (q+1,), nu)}`` at each model's MAP (standardised returns).
    n_data, n_outliers : int
        Likelihood terms per model and the always-evaluated outlier terms.
    n_setup_evals : int
        Terms evaluated by the pseudo-prior pilot chains (not in ``n_loglik_evals``;
        the MAP / Laplace fits are not counted either).
    pseudo_priors : list of LaplaceApprox
        The Carlin-Chib pseudo-priors used.
    returns_mean, returns_scale : float
        The standardisation applied (``z = (r - mean) / scale``).
    wall_time_s : float
        Whole call, set-up (MAP, Laplace, pilot chains) included.
    chain_wall_time_s : float
        Wall time of the sweeps only (warm-up and fixed phase, all chains): the
        number to compare between methods.
    sampling_wall_time_s : float
        Wall time of the fixed-phase sweeps (the denominator of ``wall_per_ess``).
    sampling_cpu_time_s : float
        Process CPU time of the same sweeps (steadier than wall time on a shared machine).
    evals_by_component : dict
        Fixed-phase likelihood terms split into ``"param"`` (Langevin-MH moves on
        the current model) and ``"gibbs"`` (the q update), all chains.
    """

    orders: tuple
    method: str
    posterior: np.ndarray
    posterior_per_chain: np.ndarray
    adjusted_posterior: np.ndarray
    log_adjusted_prior: np.ndarray
    q_trace: np.ndarray
    warmup_q_trace: np.ndarray
    log_adjusted_prior_trace: np.ndarray
    n_evals_trace: np.ndarray
    n_loglik_evals: int
    n_loglik_evals_sampling: int
    acceptance_rate: np.ndarray
    gibbs_error_rate: float | None
    mh_error_rate: float | None
    n_gibbs_checks: int
    n_mh_checks: int
    ess: float
    r_hat: float
    ess_indicator: np.ndarray
    step_sizes: np.ndarray
    laplace_log_evidence: np.ndarray
    map_params: dict = field(repr=False)
    n_data: int = 0
    n_outliers: int = 0
    n_setup_evals: int = 0
    pseudo_priors: list = field(default=None, repr=False)
    returns_mean: float = 0.0
    returns_scale: float = 1.0
    wall_time_s: float = 0.0
    evals_by_component: dict = field(default_factory=dict)
    chain_wall_time_s: float = 0.0
    sampling_wall_time_s: float = 0.0
    sampling_cpu_time_s: float = 0.0

    @property
    def wall_per_ess(self):
        """Fixed-phase sweep wall time (s) per effective sample of q."""
        return self.sampling_wall_time_s / self.ess if self.ess > 0 else float("inf")

    @property
    def posterior_by_order(self):
        """``p(q | r)`` as a pandas Series indexed by order ``q``."""
        import pandas as pd

        return pd.Series(self.posterior, index=pd.Index(self.orders, name="q"), name="p(q | r)")

    def to_inference_data(self):
        """The chains as ArviZ ``InferenceData``, q labelled by order.

        Groups: ``posterior`` with ``q`` (chain, draw; the sampled order) and
        ``q_indicator`` (chain, draw, order; ``1[q = order]``, whose means are the
        adjusted posterior ``p~(q | r)``); ``warmup_posterior`` with the warm-up
        ``q``; ``sample_stats`` with ``n_loglik_evals`` (cumulative per-datum terms);
        ``constant_data`` with, per ``order``, ``posterior`` (``p(q | r)``),
        ``adjusted_posterior`` and ``log_adjusted_prior``. Attributes hold the method,
        ESS, R-hat and the likelihood-term counts.

        Returns
        -------
        arviz.InferenceData
        """
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import arviz as az
            import xarray as xr

        orders = np.asarray(self.orders)
        q = np.asarray(self.q_trace)
        ind = (q[:, :, None] == orders[None, None, :]).astype(np.int8)
        n_w = self.warmup_q_trace.shape[1] if self.warmup_q_trace.ndim == 2 else 0
        coords = {"order": orders}
        idata = az.from_dict(
            posterior={"q": q, "q_indicator": ind},
            warmup_posterior={"q": self.warmup_q_trace} if n_w else None,
            sample_stats={"n_loglik_evals": np.asarray(self.n_evals_trace)[:, n_w:]},
            coords=coords, dims={"q_indicator": ["order"]}, save_warmup=bool(n_w),
            attrs={"method": self.method, "ess_q": float(self.ess), "r_hat_q": float(self.r_hat),
                   "n_loglik_evals": int(self.n_loglik_evals), "n_data": int(self.n_data),
                   "reference": "Chen & Ghahramani (2016), Sec. 5.2"},
        )
        const = xr.Dataset(
            {"posterior": ("order", np.asarray(self.posterior)),
             "adjusted_posterior": ("order", np.asarray(self.adjusted_posterior)),
             "log_adjusted_prior": ("order", np.asarray(self.log_adjusted_prior))},
            coords=coords)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata.add_groups({"constant_data": const})
        return idata

    @property
    def evals_per_ess(self):
        """Likelihood terms (fixed phase) per effective sample of q."""
        return self.n_loglik_evals_sampling / self.ess if self.ess > 0 else float("inf")

    @property
    def map_order(self):
        """The order with the largest posterior probability."""
        return self.orders[int(np.argmax(self.posterior))]

    def summary(self):
        """A JSON-friendly dict of the scalar results."""
        return {
            "method": self.method, "orders": list(self.orders),
            "posterior": self.posterior.tolist(),
            "adjusted_posterior": self.adjusted_posterior.tolist(),
            "log_adjusted_prior": self.log_adjusted_prior.tolist(),
            "n_chains": int(self.q_trace.shape[0]), "n_iterations": int(self.q_trace.shape[1]),
            "n_warmup": int(self.warmup_q_trace.shape[1]),
            "n_loglik_evals": int(self.n_loglik_evals),
            "n_loglik_evals_sampling": int(self.n_loglik_evals_sampling),
            "evals_per_ess": float(self.evals_per_ess),
            "acceptance_rate": self.acceptance_rate.tolist(),
            "gibbs_error_rate": self.gibbs_error_rate, "mh_error_rate": self.mh_error_rate,
            "n_gibbs_checks": self.n_gibbs_checks, "n_mh_checks": self.n_mh_checks,
            "ess": float(self.ess), "r_hat": float(self.r_hat),
            "ess_indicator": self.ess_indicator.tolist(),
            "laplace_log_evidence": self.laplace_log_evidence.tolist(),
            "n_data": self.n_data, "n_outliers": self.n_outliers,
            "n_setup_evals": self.n_setup_evals,
            "evals_by_component": dict(self.evals_by_component),
            "returns_mean": self.returns_mean, "returns_scale": self.returns_scale,
            "wall_time_s": self.wall_time_s,
            "chain_wall_time_s": self.chain_wall_time_s,
            "sampling_wall_time_s": self.sampling_wall_time_s,
            "sampling_cpu_time_s": self.sampling_cpu_time_s,
            "wall_per_ess": float(self.wall_per_ess),
            "map_params": {str(q): {"alpha": a.tolist(), "nu": nu}
                           for q, (a, nu) in self.map_params.items()},
        }


def q_diagnostics(q_trace, orders=()):
    """Bulk ESS and R-hat of q (ArviZ), and the ESS of each indicator ``1[q = order]``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import arviz as az

        x = np.asarray(q_trace, dtype=float)
        ind = np.full(len(orders), np.nan)
        if x.shape[1] < 4 or np.all(x == x.flat[0]):
            return float("nan"), float("nan"), ind
        ess = float(az.ess(x, method="bulk"))
        rhat = float(az.rhat(x)) if x.shape[0] > 1 else float("nan")
        for k, q in enumerate(orders):
            i = (x == q).astype(float)
            if 0 < i.mean() < 1:
                ind[k] = float(az.ess(i, method="mean"))
    return ess, rhat, ind
