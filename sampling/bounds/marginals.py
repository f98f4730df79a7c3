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

from ..exceptions import BuildInterrupted
from ..utils.rng import as_generator
from ._marginals_exact import exact_log_marginals, exact_marginal_entries
from .estimator import ImportanceAccumulator
from .exact import check_memory, default_order
from .model import GraphicalModel
from .schedule import plan_wmb
from .wmb import WeightedMiniBucket

__all__ = ["MarginalBounds", "marginals", "ratio_intervals", "MARGINAL_METHODS", "COLUMNS"]

#: ``method`` values of :func:`marginals`.
MARGINAL_METHODS = ("auto", "exact", "dis")
#: Columns of :meth:`MarginalBounds.to_frame` (and of the CSV).
COLUMNS = ("variable", "value", "p", "p_lower", "p_upper", "method")
#: Share of ``time_limit`` the weighted mini-bucket may take before the sampling starts.
WMB_TIME_SHARE = 0.35


@dataclasses.dataclass(frozen=True)
class MarginalBounds:
    """Estimates and joint bounds of P(X_i = x | evidence), one row per (variable, value).

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
    p: np.ndarray
    p_lower: np.ndarray
    p_upper: np.ndarray
    row_method: np.ndarray
    method: str
    delta: float
    log_Z: float
    log_Z_lower: float
    log_Z_upper: float
    n_samples: int
    n_bounds: int
    meta: dict = dataclasses.field(default_factory=dict)

    def __len__(self):
        return int(self.variable.shape[0])

    @property
    def width(self):
        """``p_upper - p_lower`` per row."""
        return self.p_upper - self.p_lower

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
              rng=None, i_bound=None, max_samples=None):
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
        ``WMB_TIME_SHARE`` of it, the sampling the rest. None: give ``max_samples``. The
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

    Returns
    -------
    MarginalBounds
        One row per (variable, value) of ``variables``; ``.to_frame()`` gives a DataFrame.

    Raises
    ------
    ValueError
        For a bad variable id (out of range or repeated), ``delta``, ``method``,
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
    samples x^(j) ~ q with weights w_j = f(x^(j)) / q(x^(j)). For every (i, x) the
    variables w_j 1[x_i^(j) = x] lie in [0, U] and have mean Z_{i,x}, so Eq. 13 estimates
    Z_{i,x} and Theorem 1 (Eq. 14) bounds it; the unrestricted weights bound Z. With
    m = 1 + sum_i |X_i| partition functions (Z and each Z_{i,x}; variables of one state
    are exact and not counted), each of the 2 m one-sided bounds is computed at
    delta / (2 m), so by the union bound all hold at once with probability >= 1 - delta,
    and so does every interval derived from them (:func:`ratio_intervals`):

    * ``P_x >= max(L_x / (L_x + sum_{y != x} U_y), L_x / U_Z)``,
      ``P_x <= min(U_x / (U_x + sum_{y != x} L_y), U_x / L_Z)`` (Z = sum_y Z_{i,y}, and
      z / (z + s) grows with z and falls with s);
    * then ``P_x <= 1 - sum_{y != x} lower_y`` and ``P_x >= 1 - sum_{y != x} upper_y``.

    The estimate is the self-normalised ratio Zhat_{i,x} / sum_y Zhat_{i,y}, clipped to the
    interval. The samples come from the WMB proposal without the search tree of DIS
    (DIS with N_d = 0, i.e. WMB-IS): the compiled DIS rounds of ``run`` return weights,
    not configurations.

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
    delta = _check_delta(delta)
    budget = check_memory(memory_mb)
    if method not in MARGINAL_METHODS:
        raise ValueError(f"the method parameter must be one of {MARGINAL_METHODS}; got {method!r} instead")
    if method != "exact":
        _check_budget(time_limit, max_samples)
    t0 = time.perf_counter()
    if method in ("auto", "exact"):
        sq = model.squeeze()
        need_mb = exact_marginal_entries(sq, default_order(sq)) * 8 / 2**20
        if need_mb <= budget:
            return _exact(model, vars_, budget, t0)
        if method == "exact":
            raise MemoryError(f"exact marginals need {need_mb:.1f} MiB of tables; the budget is "
                              f"memory_mb={budget:g}")
    return _sampled(model, vars_, time_limit, delta, budget, as_generator(rng), i_bound, max_samples, t0)


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


def _check_delta(delta):
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not 0.0 < float(delta) < 0.5:
        raise ValueError(f"the delta parameter must be a number in (0, 0.5); got {delta!r} instead")
    return float(delta)


def _check_budget(time_limit, max_samples):
    if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(time_limit, numbers.Real)
                                   or not time_limit > 0):
        raise ValueError(f"the time_limit parameter must be None or > 0 seconds; got {time_limit!r} instead")
    if max_samples is not None and (isinstance(max_samples, bool) or not isinstance(max_samples, numbers.Integral)
                                    or max_samples < 2):
        raise ValueError(f"the max_samples parameter must be None or an int >= 2; got {max_samples!r} instead")
    if time_limit is None and max_samples is None:
        raise ValueError("the sampling path needs a budget: give time_limit or max_samples")


def _rows(model, vars_):
    var = np.concatenate([np.full(int(model.cards[v]), v, dtype=np.int64) for v in vars_]) if vars_ else \
        np.zeros(0, dtype=np.int64)
    val = np.concatenate([np.arange(int(model.cards[v]), dtype=np.int64) for v in vars_]) if vars_ else \
        np.zeros(0, dtype=np.int64)
    return var, val


def _exact(model, vars_, budget, t0):
    log_z, lm = exact_log_marginals(model, memory_mb=budget)
    if log_z == -math.inf:
        raise ValueError("the model has Z = 0 (the evidence has probability zero): no marginal is defined")
    var, val = _rows(model, vars_)
    p = np.concatenate([np.exp(lm[v] - log_z) for v in vars_]) if vars_ else np.zeros(0)
    p = np.clip(p, 0.0, 1.0)
    return MarginalBounds(var, val, p, p.copy(), p.copy(), np.full(len(p), "exact", dtype=object), "exact",
                          0.0, log_z, log_z, log_z, 0, 0, {"time_s": time.perf_counter() - t0})


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
        Lower and upper bounds on P_x in [0, 1], holding whenever the inputs do (see
        the Notes of :func:`marginals` for the rules).

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
    hi = np.minimum(hi, np.clip(1.0 - (lo.sum() - lo), 0.0, 1.0))
    lo = np.maximum(lo, np.clip(1.0 - (hi.sum() - hi), 0.0, 1.0))
    return lo, np.maximum(hi, lo)


def _build_wmb(model, time_limit, budget, i_bound, t0):
    """The WMB the sampler draws from: the top rung of :func:`plan_wmb` for the WMB share of
    the time, built under a deadline (if it runs over, the cheapest rung without passes)."""
    share = math.inf if time_limit is None else WMB_TIME_SHARE * time_limit
    probe = WeightedMiniBucket(model, i_bound=i_bound, memory_mb=budget).prepare()
    rungs = plan_wmb(probe, memory_mb=budget, time_limit=math.inf if time_limit is None else time_limit,
                     i_bound=i_bound)
    top = rungs[-1]

    def stop():
        return time.perf_counter() - t0 > share

    try:
        return WeightedMiniBucket(model, i_bound=top.i_bound, memory_mb=budget, elim_order=probe.elim_order,
                                  n_iters=top.n_iters, time_limit=share).fit(stop=stop)
    except BuildInterrupted:
        return WeightedMiniBucket(model, i_bound=rungs[0].i_bound, memory_mb=budget,
                                  elim_order=probe.elim_order, n_iters=0).fit()


def _sampled(model, vars_, time_limit, delta, budget, gen, i_bound, max_samples, t0):
    import warnings

    from ..exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        wmb = _build_wmb(model, time_limit, budget, i_bound, t0)
    log_u = float(wmb.log_Z_upper)
    sampled = [v for v in vars_ if model.cards[v] > 1]
    n_bounds = 1 + sum(int(model.cards[v]) for v in sampled)
    dk = delta / (2 * n_bounds)
    acc_z = ImportanceAccumulator(dk)
    accs = {v: [ImportanceAccumulator(dk) for _ in range(int(model.cards[v]))] for v in sampled}
    n, batch = 0, 256
    deadline = math.inf if time_limit is None else t0 + time_limit
    while (max_samples is None or n < max_samples) and (n < 2 or time.perf_counter() < deadline):
        k = batch if max_samples is None else min(batch, max_samples - n)
        X, log_q = wmb.sample(k, gen)
        log_w = model.log_value(X) - np.asarray(log_q, dtype=float)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a weight over U by rounding is clipped
            acc_z.add(log_w, log_u)
            for v in sampled:
                col = X[:, v]
                for x, acc in enumerate(accs[v]):
                    acc.add(np.where(col == x, log_w, -math.inf), log_u)
        n += k
        batch = min(2 * batch, 8192)
    z_lo, z_hi = acc_z.bounds(log_u)
    var, val = _rows(model, vars_)
    p, lo, hi, how = [], [], [], []
    for v in vars_:
        k = int(model.cards[v])
        if k == 1:
            p.append([1.0]), lo.append([1.0]), hi.append([1.0]), how.append(["exact"])
            continue
        b = np.array([a.bounds(log_u) for a in accs[v]])
        lov, hiv = ratio_intervals(b[:, 0], b[:, 1], z_lo, z_hi)
        hat = np.array([a.log_Z_hat for a in accs[v]])
        m = float(np.max(hat))
        est = np.exp(hat - m) / np.exp(hat - m).sum() if math.isfinite(m) else (lov + hiv) / 2
        p.append(np.clip(est, lov, hiv)), lo.append(lov), hi.append(hiv), how.append(["dis"] * k)
    cat = (lambda parts: np.concatenate(parts).astype(float)) if vars_ else (lambda parts: np.zeros(0))
    meta = {"i_bound": int(wmb.i_bound), "log_Z_wmb": log_u, "time_s": time.perf_counter() - t0,
            "time_limit": time_limit, "memory_mb": budget, "delta_each": dk}
    return MarginalBounds(var, val, cat(p), cat(lo), cat(hi),
                          np.array([h for hs in how for h in hs], dtype=object), "dis", delta,
                          acc_z.log_Z_hat, z_lo, z_hi, n, n_bounds, meta)
