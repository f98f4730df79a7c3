"""Certified single-variable marginals P(X_i = x | evidence) from bounded partition functions.

P(X_i = x) = Z_{i,x} / Z, where Z_{i,x} is the partition function of the model conditioned on
X_i = x (:meth:`GraphicalModel.condition`) and Z = sum_x Z_{i,x}. :func:`marginals` returns,
for every variable and value, an estimate and an interval; all the intervals hold jointly
with probability at least 1 - delta. They are points when variable elimination is affordable,
and otherwise come from the bounds of Theorem 1 of [1]_ on every Z_{i,x} at once, estimated
from one stream of importance samples.

References
----------
.. [1] Lou, Dechter & Ihler (2017), "Dynamic Importance Sampling for Anytime Bounds of the
   Partition Function", NIPS. Eq. 13-14, Theorem 1.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
import time

import numpy as np

from ..utils.rng import as_generator
from ._marginals_exact import exact_log_marginals, exact_marginal_entries
from .exact import check_memory, default_order
from .model import GraphicalModel
from .ratios import EventBounds, check_budget, check_delta, sample_columns

__all__ = ["MarginalBounds", "marginals", "ratio_intervals", "tighten_by_sum", "MARGINAL_METHODS",
           "MARGINAL_SAMPLERS", "DIS_WMB_SHARE", "COLUMNS"]

#: ``method`` values of :func:`marginals`.
MARGINAL_METHODS = ("auto", "exact", "dis")
#: ``sampler`` values of :func:`marginals`.
MARGINAL_SAMPLERS = ("dis", "wmb-is")
#: Share of ``time_limit`` for the WMB passes of ``sampler="dis"`` (passes until then or
#: convergence). Measured on pedigree20 (i-bound 18, 1 GB, the tree then filled): 2 / 4 / 8
#: passes (3.4 / 5.0 / 9.7 CPU-s) give a WMB bound of -66.36 / -66.78 / -66.91, a full-tree
#: U_S of -67.01 / -67.25 / -67.33 (ln Z = -68.23) and a weight CV of 1.29 / 1.05 / 0.99;
#: the interval width goes as sqrt((1 + CV^2) / n), so about 4 passes pay off at 30 s.
DIS_WMB_SHARE = 0.2
#: Columns of :meth:`MarginalBounds.to_frame` (and of the CSV).
COLUMNS = ("variable", "value", "p", "p_lower", "p_upper", "method")


@dataclasses.dataclass(frozen=True, kw_only=True)
class MarginalBounds(EventBounds):
    """Estimates and joint bounds of P(X_i = x | evidence), one row per (variable, value).

    The events X_i = x of an :class:`sampling.bounds.ratios.EventBounds` (its fields and
    ``width``), with their variables and values. Built with keywords.

    Attributes
    ----------
    variable, value : ndarray of int64, shape (n_rows,)
    p, p_lower, p_upper : ndarray of float64, shape (n_rows,)
        Estimate and bounds; ``p_lower <= p <= p_upper`` in [0, 1].
    row_method : ndarray of str, shape (n_rows,)
        "exact" (a point) or "dis" (a Theorem 1 interval) per row.
    method : str
        "exact" or "dis": how the result was computed.
    delta : float
        All the intervals hold jointly with probability at least 1 - delta (0 when exact).
    log_Z : float
        ln Z (exact) or its estimate.
    log_Z_lower, log_Z_upper : float
        Bounds on ln Z (holding jointly with the intervals).
    n_samples : int
        Importance samples drawn (0 when exact).
    n_bounds : int
        Partition functions bounded probabilistically; each of their 2 * n_bounds
        one-sided bounds was computed at ``delta / (2 * n_bounds)``.
    meta : dict
        ``i_bound``, ``log_Z_wmb``, ``time_s`` and the settings.
    """

    variable: np.ndarray
    value: np.ndarray
    row_method: np.ndarray
    method: str

    def to_frame(self):
        """A pandas DataFrame with the columns :data:`COLUMNS`."""
        import pandas as pd

        return pd.DataFrame({"variable": self.variable, "value": self.value, "p": self.p,
                             "p_lower": self.p_lower, "p_upper": self.p_upper, "method": self.row_method},
                            columns=list(COLUMNS))

    def to_csv(self, path):
        """Write :meth:`to_frame` as CSV (atomically, 12 significant digits)."""
        from ..utils.atomic import atomic_open

        with atomic_open(path, "w", newline="") as fh:
            self.to_frame().to_csv(fh, index=False, float_format="%.12g")


def marginals(model, variables=None, *, time_limit=60.0, delta=0.025, memory_mb=1024, method="auto",
              rng=None, i_bound=None, max_samples=None, clock="wall", sampler="dis"):
    """Estimates and certified bounds of every P(X_i = x | evidence), holding jointly.

    Parameters
    ----------
    model : GraphicalModel
        Evidence already applied (:meth:`GraphicalModel.condition` or ``read_uai(...,
        evidence=...)``); an observed variable has one state, of probability 1.
    variables : sequence of int, optional
        Variables to report (default: all).
    time_limit : float or None, default 60.0
        Seconds for the "dis" path: the weighted mini-bucket (WMB) takes at most
        ``sampling.bounds.ratios.WMB_TIME_SHARE`` of it, the sampling the rest. None: give ``max_samples``. The
        exact path is not timed (it is taken only when its tables fit ``memory_mb``).
    delta : float in (0, 0.5), default 0.025
        The intervals all hold together with probability at least 1 - delta.
    memory_mb : float, default 1024
        Budget (MiB) for the tables: exact propagation (all messages of both passes), or
        the WMB.
    method : {"auto", "exact", "dis"}, default "auto"
        "auto": exact when its tables fit ``memory_mb``, else "dis". "exact" raises
        MemoryError when they do not fit. "dis" always samples (also on a model that
        elimination solves; to check the intervals against the exact answer).
    rng : None, int or numpy.random.Generator
    i_bound : int, optional
        WMB i-bound (default: the largest that fits the memory and the time share).
    max_samples : int, optional
        Stop after this many samples (with ``time_limit=None``, the only stop rule).
    clock : {"wall", "cpu"}, default "wall"
        Clock of ``time_limit``: wall seconds, or this process's CPU seconds
        (``time.process_time``; fair on a shared, loaded machine), as in :func:`run`.
    sampler : {"dis", "wmb-is"}, default "dis"
        Samples of the "dis" path: DIS (Alg. 1 of [1]_; the AND/OR search tree grows in
        the memory the WMB leaves while sampling from it) or WMB-IS (the WMB proposal
        alone). See Notes.

    Returns
    -------
    MarginalBounds
        One row per (variable, value) of ``variables``; ``.to_frame()`` gives a DataFrame.

    Raises
    ------
    ValueError
        For a bad variable id (out of range or repeated), ``delta``, ``method``, ``sampler``, ``clock``,
        ``time_limit``/``max_samples`` (at least one must bound the "dis" run), or a model
        whose evidence has probability zero (exact path: Z = 0).
    TypeError
        If ``model`` is not a GraphicalModel.
    MemoryError
        For ``method="exact"`` over ``memory_mb``, or when not even the smallest WMB fits.

    Notes
    -----
    **Exact path.** Two-pass bucket-tree propagation (the forward pass is the bucket
    elimination of :func:`log_partition`) gives every ln Z_{i,x}; p = Z_{i,x} / Z.

    **Sampling path ("dis").** One WMB proposal q of [1]_ (Eq. 7-8) with bound U >= f/q;
    samples x^(j) ~ q with weights w_j = f(x^(j)) / q(x^(j)), r_j = w_j / U in [0, 1]. The
    mean of r estimates Z / U and Theorem 1 (Eq. 13-14) bounds Z. For each (i, x) and a trial
    p, D_j(p) = r_j (1[x_i^(j) = x] - p) lies in an interval of length 1 and has mean
    (Z_{i,x} - p Z) / U, zero at p = P(X_i = x); the empirical Bernstein bound of Theorem 1
    (at delta_k on each side) rejects p when |mean D(p)| exceeds its deviation term, and the
    interval is the set of p not rejected (test inversion: only the test at the true P must
    hold; :meth:`sampling.bounds.ratios.WeightedColumnSums.self_normalised`: the events X_i = x
    of :func:`sampling.bounds.ratios.event_probabilities`, from the same code). This self-normalised interval is much tighter
    than dividing separate bounds on Z_{i,x} and Z (:func:`ratio_intervals`, which is for
    partition functions bounded separately), because the fluctuations of w shared by
    numerator and denominator cancel. With m = 1 + sum_i m_i quantities (Z and every pair;
    variables of one state are exact and not counted; m_i = |X_i|, except m_i = 1 for a
    binary X_i, whose two tests are one: D_j(1 - p) of value 1 is -D_j(p) of value 0, so the
    test of P(X_i = 1) at 1 - p rejects exactly when that of P(X_i = 0) at p does), each of
    the 2 m one-sided tests runs
    at delta_k = delta / (2 m), so by the union bound all intervals and the Z bounds hold at
    once with probability >= 1 - delta. Last, :func:`tighten_by_sum` uses sum_x P_x = 1:
    ``upper_x <= 1 - sum_{y != x} lower_y`` and ``lower_x >= 1 - sum_{y != x} upper_y``.

    The estimate is the self-normalised ratio sum_j r_j 1[x_i^(j) = x] / sum_j r_j. With
    ``sampler="dis"`` the samples are those of DIS (Alg. 1 of [1]_, N_d = 10 expansions and
    N_l = 1 sample per round, as :func:`sampling.bounds.run`): the proposal q_S of the
    current AND/OR search tree S, r_j = w_j / U_{S_j} with U_{S_j} the tree's bound when
    sample j was drawn (Eq. 13). D_j(p) = r_j (1[x_i^(j) = x] - p) then still lies in an
    interval of length 1 with mean (Z_{i,x} - p Z) / U_{S_j}, zero at the true P, and the
    same test applies (as Theorem 1 applies Eq. 14 to samples of changing proposals). The
    search tree only tightens U_S, so r_j is less variable and the intervals narrower than
    WMB-IS (``sampler="wmb-is"``: DIS with N_d = 0). Below a node the search has solved,
    a sample's variables are drawn exactly from the sub-problem
    (:class:`sampling.bounds.dis_stream.DisStream`). The Z bounds use the harmonic mean
    of the U_{S_j} (Eq. 13) and are capped by the final U_S.
    The WMB is the top rung of :func:`sampling.bounds.schedule.plan_wmb` for ``time_limit``;
    with DIS its reparameterisation passes go on until :data:`DIS_WMB_SHARE` of the time or
    convergence (a tighter WMB tightens every U_S of the tree), with WMB-IS they are the
    plan's, stopped at ``ratios.WMB_TIME_SHARE`` of the time. The rest goes to sampling
    (and, with DIS, to the search in the memory the WMB leaves).

    References
    ----------
    .. [1] Lou, Dechter & Ihler (2017), NIPS, Eq. 7-8, 13-14, Theorem 1.

    Examples
    --------
    >>> from sampling.bounds import Factor, GraphicalModel
    >>> m = GraphicalModel([2, 2], [Factor.from_values((0, 1), [[1.0, 2.0], [3.0, 4.0]])])
    >>> r = marginals(m)
    >>> [round(float(v), 3) for v in r.p]
    [0.3, 0.7, 0.4, 0.6]
    >>> r.method
    'exact'
    """
    if not isinstance(model, GraphicalModel):
        raise TypeError(f"the model parameter must be a GraphicalModel; got {type(model).__name__} instead")
    vars_ = _check_variables(model, variables)
    delta = check_delta(delta)
    budget = check_memory(memory_mb)
    if method not in MARGINAL_METHODS:
        raise ValueError(f"the method parameter must be one of {MARGINAL_METHODS}; got {method!r} instead")
    if method != "exact":
        check_budget(time_limit, max_samples)
    if clock not in ("wall", "cpu"):
        raise ValueError(f"the clock parameter must be 'wall' or 'cpu'; got {clock!r} instead")
    if sampler not in MARGINAL_SAMPLERS:
        raise ValueError(f"the sampler parameter must be one of {MARGINAL_SAMPLERS}; got {sampler!r} instead")
    now = time.perf_counter if clock == "wall" else time.process_time
    t0 = now()
    if method in ("auto", "exact"):
        sq = model.squeeze()
        need_mb = exact_marginal_entries(sq, default_order(sq)) * 8 / 2**20
        if need_mb <= budget:
            return _exact(model, vars_, budget, t0, now)
        if method == "exact":
            raise MemoryError(f"exact marginals need {need_mb:.1f} MiB of tables; the budget is "
                              f"memory_mb={budget:g}")
    return _sampled(model, vars_, time_limit, delta, budget, as_generator(rng), i_bound, max_samples, t0, now,
                    sampler)


def _check_variables(model, variables):
    if variables is None:
        return list(range(model.n_vars))
    out = []
    for v in np.atleast_1d(np.asarray(variables, dtype=object)).tolist():
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise ValueError(f"the variables parameter must hold int variable ids; got {v!r}")
        if not 0 <= int(v) < model.n_vars:
            raise ValueError(f"variable {v} is out of range [0, {model.n_vars})")
        out.append(int(v))
    if len(set(out)) != len(out):
        dup = next(v for v in out if out.count(v) > 1)
        raise ValueError(f"variable {dup} is listed twice in the variables parameter")
    return out


def _rows(model, vars_):
    var = np.concatenate([np.full(int(model.cards[v]), v, dtype=np.int64) for v in vars_]) if vars_ else \
        np.zeros(0, dtype=np.int64)
    val = np.concatenate([np.arange(int(model.cards[v]), dtype=np.int64) for v in vars_]) if vars_ else \
        np.zeros(0, dtype=np.int64)
    return var, val


def _exact(model, vars_, budget, t0, now):
    log_z, lm = exact_log_marginals(model, memory_mb=budget)
    if log_z == -math.inf:
        raise ValueError("the model has Z = 0 (the evidence has probability zero): no marginal is defined")
    var, val = _rows(model, vars_)
    p = np.concatenate([np.exp(lm[v] - log_z) for v in vars_]) if vars_ else np.zeros(0)
    p = np.clip(p, 0.0, 1.0)
    return MarginalBounds(variable=var, value=val, p=p, p_lower=p.copy(), p_upper=p.copy(),
                          row_method=np.full(len(p), "exact", dtype=object), method="exact", delta=0.0,
                          log_Z=log_z, log_Z_lower=log_z, log_Z_upper=log_z, n_samples=0, n_bounds=0,
                          meta={"time_s": now() - t0})


def ratio_intervals(log_lower, log_upper, log_Z_lower=-math.inf, log_Z_upper=math.inf):
    """Bounds on P_x = Z_x / sum_y Z_y of one variable from bounds on each Z_x (and on Z).

    Parameters
    ----------
    log_lower, log_upper : array_like of float, shape (k,)
        ln L_x <= ln Z_x <= ln U_x for every value x.
    log_Z_lower, log_Z_upper : float, optional
        Bounds on ln Z = ln sum_x Z_x, if known separately.

    Returns
    -------
    (ndarray, ndarray)
        Lower and upper bounds on P_x in [0, 1], holding whenever the inputs do:
        ``P_x >= max(L_x / (L_x + sum_{y != x} U_y), L_x / U_Z)`` and
        ``P_x <= min(U_x / (U_x + sum_{y != x} L_y), U_x / L_Z)`` (Z = sum_y Z_y, and
        z / (z + s) grows with z and falls with s), then :func:`tighten_by_sum`. For two
        partition functions bounded separately (e.g. by :func:`sampling.bounds.run`).

    Examples
    --------
    >>> lo, hi = ratio_intervals([0.0, 0.0], [0.0, 0.0])   # Z_0 = Z_1 = 1 exactly
    >>> lo.tolist(), hi.tolist()
    ([0.5, 0.5], [0.5, 0.5])
    """
    ll = np.asarray(log_lower, dtype=float)
    lu = np.asarray(log_upper, dtype=float)
    c = float(np.max(lu, initial=-math.inf))
    if not math.isfinite(c):  # every Z_x <= 0 (or unbounded): nothing to say
        return np.zeros(ll.shape), np.ones(ll.shape)
    L, U = np.exp(ll - c), np.exp(lu - c)
    sum_l, sum_u = L.sum(), U.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = np.where(L > 0, L / (L + (sum_u - U)), 0.0)
        hi = np.where(U > 0, U / (U + (sum_l - L)), 0.0)
        if log_Z_upper < math.inf:
            lo = np.maximum(lo, L / math.exp(log_Z_upper - c))
        if log_Z_lower > -math.inf:
            hi = np.minimum(hi, U / math.exp(log_Z_lower - c))
    lo, hi = np.clip(np.nan_to_num(lo, nan=0.0), 0.0, 1.0), np.clip(np.nan_to_num(hi, nan=1.0), 0.0, 1.0)
    return tighten_by_sum(lo, hi)


def tighten_by_sum(lower, upper):
    """Tighten bounds on a distribution (p_x >= 0, sum_x p_x = 1) of one variable.

    ``upper_x <= 1 - sum_{y != x} lower_y`` and ``lower_x >= 1 - sum_{y != x} upper_y``:
    valid whenever all the inputs are.

    Examples
    --------
    >>> lo, hi = tighten_by_sum([0.7, 0.0], [1.0, 0.4])
    >>> [round(v, 12) for v in lo.tolist()], [round(v, 12) for v in hi.tolist()]
    ([0.7, 0.0], [1.0, 0.3])
    """
    lo = np.clip(np.asarray(lower, dtype=float), 0.0, 1.0)
    hi = np.clip(np.asarray(upper, dtype=float), 0.0, 1.0)
    hi = np.minimum(hi, np.clip(1.0 - (lo.sum() - lo), 0.0, 1.0))
    lo = np.maximum(lo, np.clip(1.0 - (hi.sum() - hi), 0.0, 1.0))
    return lo, np.maximum(hi, lo)


def _sampled(model, vars_, time_limit, delta, budget, gen, i_bound, max_samples, t0, now, sampler):
    sampled = [v for v in vars_ if model.cards[v] > 1]
    k = np.asarray([int(model.cards[v]) for v in sampled], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(k)[:-1]]).astype(np.int64)
    cols_of = np.asarray(sampled, dtype=np.int64)

    def hits(X):  # sample t hits column offsets[v] + x_v for every sampled variable v
        rows = np.repeat(np.arange(X.shape[0], dtype=np.int64), len(sampled))
        return rows, (X[:, cols_of] + offsets[None, :]).ravel()

    sums, wmb, _ = sample_columns(model, hits, int(k.sum()), time_limit=time_limit, memory_mb=budget, gen=gen,
                                  i_bound=i_bound, max_samples=max_samples, t0=t0, now=now, sampler=sampler,
                                  **({"wmb_share": DIS_WMB_SHARE, "timed_passes": True} if sampler == "dis" else {}))
    log_u = sums.log_u
    n_bounds = 1 + int(np.where(k == 2, 1, k).sum())  # a binary variable's two tests are one
    dk = delta / (2 * n_bounds)
    acc_z = sums.accumulator(sums.z_col, dk)
    z_lo, z_hi = acc_z.bounds(min(log_u, sums.log_u_min))
    col = {v: int(o) for v, o in zip(sampled, offsets)}
    var, val = _rows(model, vars_)
    p, lo, hi, how = [], [], [], []
    for v in vars_:
        kv = int(model.cards[v])
        if kv == 1:
            p.append([1.0]), lo.append([1.0]), hi.append([1.0]), how.append(["exact"])
            continue
        est, lov, hiv = sums.self_normalised(np.arange(col[v], col[v] + kv), dk)
        lov, hiv = tighten_by_sum(lov, hiv)
        if np.isnan(est).any():
            est = (lov + hiv) / 2
        p.append(np.clip(est, lov, hiv)), lo.append(lov), hi.append(hiv), how.append(["dis"] * kv)
    cat = (lambda parts: np.concatenate(parts).astype(float)) if vars_ else (lambda parts: np.zeros(0))
    meta = {"i_bound": int(wmb.i_bound), "log_Z_wmb": log_u, "time_s": now() - t0,
            "clock": "wall" if now is time.perf_counter else "cpu",
            "time_limit": time_limit, "memory_mb": budget, "delta_each": dk,
            "wmb_passes": int(getattr(wmb, "n_iters_", 0)), **sums.meta}
    return MarginalBounds(variable=var, value=val, p=cat(p), p_lower=cat(lo), p_upper=cat(hi),
                          row_method=np.array([h for hs in how for h in hs], dtype=object), method="dis",
                          delta=delta, log_Z=acc_z.log_Z_hat, log_Z_lower=z_lo, log_Z_upper=z_hi, n_samples=sums.n,
                          n_bounds=n_bounds, meta=meta)
