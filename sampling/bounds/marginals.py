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

__all__ = ["MarginalBounds", "marginals", "ratio_intervals", "tighten_by_sum", "MARGINAL_METHODS", "COLUMNS"]

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
              rng=None, i_bound=None, max_samples=None, clock="wall"):
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
    clock : {"wall", "cpu"}, default "wall"
        Clock of ``time_limit``: wall seconds, or this process's CPU seconds
        (``time.process_time``; fair on a shared, loaded machine), as in :func:`run`.

    Returns
    -------
    MarginalBounds
        One row per (variable, value) of ``variables``; ``.to_frame()`` gives a DataFrame.

    Raises
    ------
    ValueError
        For a bad variable id (out of range or repeated), ``delta``, ``method``, ``clock``,
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
    hold; :meth:`_PairSums.self_normalised`). This self-normalised interval is much tighter
    than dividing separate bounds on Z_{i,x} and Z (:func:`ratio_intervals`, which is for
    partition functions bounded separately), because the fluctuations of w shared by
    numerator and denominator cancel. With m = 1 + sum_i |X_i| quantities (Z and every pair;
    variables of one state are exact and not counted), each of the 2 m one-sided tests runs
    at delta_k = delta / (2 m), so by the union bound all intervals and the Z bounds hold at
    once with probability >= 1 - delta. Last, :func:`tighten_by_sum` uses sum_x P_x = 1:
    ``upper_x <= 1 - sum_{y != x} lower_y`` and ``lower_x >= 1 - sum_{y != x} upper_y``.

    The estimate is the self-normalised ratio sum_j w_j 1[x_i^(j) = x] / sum_j w_j. The
    samples come from the WMB proposal without the search tree of DIS (DIS with N_d = 0,
    i.e. WMB-IS): the compiled DIS rounds of ``run`` return weights, not configurations.
    The WMB is the top rung of :func:`sampling.bounds.schedule.plan_wmb` for ``time_limit``,
    its passes stopped at ``WMB_TIME_SHARE`` of the time; the rest goes to sampling.

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
    if clock not in ("wall", "cpu"):
        raise ValueError(f"the clock parameter must be 'wall' or 'cpu'; got {clock!r} instead")
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
    return _sampled(model, vars_, time_limit, delta, budget, as_generator(rng), i_bound, max_samples, t0, now)


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


def _exact(model, vars_, budget, t0, now):
    log_z, lm = exact_log_marginals(model, memory_mb=budget)
    if log_z == -math.inf:
        raise ValueError("the model has Z = 0 (the evidence has probability zero): no marginal is defined")
    var, val = _rows(model, vars_)
    p = np.concatenate([np.exp(lm[v] - log_z) for v in vars_]) if vars_ else np.zeros(0)
    p = np.clip(p, 0.0, 1.0)
    return MarginalBounds(var, val, p, p.copy(), p.copy(), np.full(len(p), "exact", dtype=object), "exact",
                          0.0, log_z, log_z, log_z, 0, 0, {"time_s": now() - t0})


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


def _build_wmb(model, time_limit, budget, i_bound, t0, now):
    """The WMB the sampler draws from: the top rung of :func:`plan_wmb` for the time, its
    passes stopped at ``WMB_TIME_SHARE`` of it; if even its first pass runs past twice that
    share, the cheapest rung without passes."""
    share = math.inf if time_limit is None else WMB_TIME_SHARE * time_limit
    probe = WeightedMiniBucket(model, i_bound=i_bound, memory_mb=budget).prepare()
    rungs = plan_wmb(probe, memory_mb=budget, time_limit=math.inf if time_limit is None else time_limit,
                     i_bound=i_bound)
    top = rungs[-1]

    def stop():
        return now() - t0 > 2 * share

    try:
        return WeightedMiniBucket(model, i_bound=top.i_bound, memory_mb=budget, elim_order=probe.elim_order,
                                  n_iters=top.n_iters, time_limit=max(share - (now() - t0), 0.0)
                                  if math.isfinite(share) else None).fit(stop=stop)
    except BuildInterrupted:
        return WeightedMiniBucket(model, i_bound=rungs[0].i_bound, memory_mb=budget,
                                  elim_order=probe.elim_order, n_iters=0).fit()


class _PairSums:
    """Running Eq. 13 sums of the weights w 1[x_v = x] for every (v, x) of ``variables`` at
    once (one scale for all), turned into :class:`ImportanceAccumulator` states at the end
    so that the Theorem 1 arithmetic is the accumulator's own. The bound U is constant."""

    def __init__(self, cards, variables, log_u):
        self.vars = np.asarray(variables, dtype=np.int64)
        k = np.asarray([int(cards[v]) for v in variables], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(k)[:-1]]).astype(np.int64)
        self.n_cols = int(k.sum())
        self.log_u = float(log_u)
        self.n, self.m = 0, -math.inf
        self.z_col = self.n_cols  # one more column, hit by every sample: Z itself
        self.mean, self.m2 = np.zeros(self.n_cols + 1), np.zeros(self.n_cols + 1)

    def add(self, X, log_w):
        k = int(log_w.shape[0])
        log_r = np.minimum(log_w - self.log_u, 0.0)  # a weight over U by rounding is clipped
        new_m = max(self.m, float(log_r.max(initial=-math.inf)))
        if new_m == -math.inf:
            self.n += k
            return
        f = 0.0 if self.m == -math.inf else math.exp(self.m - new_m)
        y = np.exp(log_r - new_m)
        idx = (X[:, self.vars] + self.offsets[None, :]).ravel()
        yy = np.repeat(y, len(self.vars))
        s1 = np.append(np.bincount(idx, weights=yy, minlength=self.n_cols), y.sum())
        s2 = np.append(np.bincount(idx, weights=yy * yy, minlength=self.n_cols), (y * y).sum())
        mean_b = s1 / k
        m2_b = np.maximum(s2 - k * mean_b * mean_b, 0.0)
        mean_a, m2_a = self.mean * f, self.m2 * f * f
        n_a, n_t = self.n, self.n + k
        d = mean_b - mean_a
        self.mean = mean_a + d * k / n_t
        self.m2 = m2_a + m2_b + d * d * n_a * k / n_t
        self.m, self.n = new_m, n_t

    def self_normalised(self, cols, delta):
        """Self-normalised estimates and bounds of P_j = Z_j / Z for the columns ``cols``.

        For a trial p, D = r (1[x in j] - p) with r = w / U in [0, 1] has range 1 and
        mean (Z_j - p Z) / U, which is 0 at p = P_j. The empirical Bernstein bound
        (Maurer & Pontil 2009, Thm 4; the one of Theorem 1 of [1]_) at ``delta`` on each
        side keeps p unless |mean(D)| > sqrt(2 V(p) ln(2/delta) / n) + 7 ln(2/delta) / (3 (n-1)),
        V(p) the sample variance of D; the kept p form the interval (test inversion: only
        the test at the true P_j must hold). Computed on a grid of p, refined by bisection.
        """
        cols = np.asarray(cols, dtype=np.int64)
        n = self.n
        if n < 2 or self.m == -math.inf:
            return np.full(cols.shape, np.nan), np.zeros(cols.shape), np.ones(cols.shape)
        z = self.z_col
        a_j, a_z = self.mean[cols], self.mean[z]
        b_j = self.m2[cols] / n + a_j * a_j
        b_z = self.m2[z] / n + a_z * a_z
        L = math.log(2.0 / delta)
        t2 = math.exp(-self.m) * 7.0 * L / (3.0 * (n - 1))

        def h(p, sign):  # >= 0 while p is kept on that side (p, a_j, b_j broadcast together)
            d = a_j[:, None] - p * a_z if np.ndim(p) == 2 else a_j - p * a_z
            bj = b_j[:, None] if np.ndim(p) == 2 else b_j
            var = np.maximum(bj * (1.0 - 2.0 * p) + p * p * b_z - d * d, 0.0) * n / (n - 1)
            return sign * d + np.sqrt(2.0 * var * L / n) + t2

        hat = np.clip(a_j / a_z, 0.0, 1.0) if a_z > 0 else np.full(cols.shape, np.nan)
        grid = np.linspace(0.0, 1.0, 2049)[None, :]
        out = []
        for sign in (1.0, -1.0):  # upper bound (d = a_j - p a_z falls), then lower
            ok = h(np.broadcast_to(grid, (len(cols), grid.shape[1])), sign) >= 0
            if sign > 0:
                i = ok.shape[1] - 1 - np.argmax(ok[:, ::-1], axis=1)  # last kept grid point
                lo_p, hi_p = grid[0, i], grid[0, np.minimum(i + 1, grid.shape[1] - 1)]
            else:
                i = np.argmax(ok, axis=1)  # first kept grid point
                lo_p, hi_p = grid[0, np.maximum(i - 1, 0)], grid[0, i]
            none = ~ok.any(axis=1)
            for _ in range(40):  # the kept end moves towards the boundary
                mid = (lo_p + hi_p) / 2
                keep = h(mid, sign) >= 0
                if sign > 0:
                    lo_p = np.where(keep, mid, lo_p)
                    hi_p = np.where(keep, hi_p, mid)
                else:
                    hi_p = np.where(keep, mid, hi_p)
                    lo_p = np.where(keep, lo_p, mid)
            end = hi_p if sign > 0 else lo_p  # the outer end: conservative
            if sign > 0:
                end = np.where(ok[:, -1], 1.0, end)
            else:
                end = np.where(ok[:, 0], 0.0, end)
            out.append(np.where(none, 1.0 if sign > 0 else 0.0, end))
        upper, lower = out
        return hat, np.clip(lower, 0.0, 1.0), np.clip(upper, 0.0, 1.0)

    def accumulator(self, j, delta):
        """The :class:`ImportanceAccumulator` of column ``j`` (pair offsets[v] + x)."""
        return ImportanceAccumulator.from_state({
            "delta": delta, "n": self.n, "_m": self.m, "_mean": float(self.mean[j]), "_m2": float(self.m2[j]),
            "_log_sum_inv_u": math.log(self.n) - self.log_u if self.n else -math.inf,
            "log_w_max": -math.inf, "n_bound_violations": 0, "lower_is_markov": True})


def _sampler(wmb, model):
    """``draw(k, gen) -> (X, log_w)``: k samples of the WMB proposal and ln f/q (the compiled
    sampler when the WMB exposes its tables)."""
    from ._ladder import wmb_evaluator
    from .proposal import make_fast_proposal

    fast = make_fast_proposal(wmb, wmb_evaluator(wmb, model)) if getattr(wmb, "tables", None) is not None \
        else None
    if fast is None:
        def draw(k, gen):
            X, log_q = wmb.sample(k, gen)
            return X, model.log_value(X) - np.asarray(log_q, dtype=float)
        return draw
    zeros, roots, c = np.zeros(model.n_vars, dtype=np.int64), fast.roots, float(fast.log_constant)

    def draw_fast(k, gen):
        X = np.empty((k, model.n_vars), dtype=np.int64)
        log_w = np.empty(k)
        for i in range(k):
            x, log_q, log_g = fast.sample(gen, zeros, roots)
            X[i] = x
            log_w[i] = log_g + c - log_q
        return X, log_w
    return draw_fast


def _sampled(model, vars_, time_limit, delta, budget, gen, i_bound, max_samples, t0, now):
    import warnings

    from ..exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        wmb = _build_wmb(model, time_limit, budget, i_bound, t0, now)
    log_u = float(wmb.log_Z_upper)
    sampled = [v for v in vars_ if model.cards[v] > 1]
    n_bounds = 1 + sum(int(model.cards[v]) for v in sampled)
    dk = delta / (2 * n_bounds)
    sums = _PairSums(model.cards, sampled, log_u)
    col = {v: int(o) for v, o in zip(sampled, sums.offsets)}
    draw = _sampler(wmb, model)
    n, batch = 0, 256
    deadline = math.inf if time_limit is None else t0 + time_limit
    while (max_samples is None or n < max_samples) and (n < 2 or now() < deadline):
        k = batch if max_samples is None else min(batch, max_samples - n)
        X, log_w = draw(k, gen)
        sums.add(X, log_w)
        n += k
        batch = min(2 * batch, 4096)
    acc_z = sums.accumulator(sums.z_col, dk)
    z_lo, z_hi = acc_z.bounds(log_u)
    var, val = _rows(model, vars_)
    p, lo, hi, how = [], [], [], []
    for v in vars_:
        k = int(model.cards[v])
        if k == 1:
            p.append([1.0]), lo.append([1.0]), hi.append([1.0]), how.append(["exact"])
            continue
        est, lov, hiv = sums.self_normalised(np.arange(col[v], col[v] + k), dk)
        lov, hiv = tighten_by_sum(lov, hiv)
        if np.isnan(est).any():
            est = (lov + hiv) / 2
        p.append(np.clip(est, lov, hiv)), lo.append(lov), hi.append(hiv), how.append(["dis"] * k)
    cat = (lambda parts: np.concatenate(parts).astype(float)) if vars_ else (lambda parts: np.zeros(0))
    meta = {"i_bound": int(wmb.i_bound), "log_Z_wmb": log_u, "time_s": now() - t0,
            "clock": "wall" if now is time.perf_counter else "cpu",
            "time_limit": time_limit, "memory_mb": budget, "delta_each": dk}
    return MarginalBounds(var, val, cat(p), cat(lo), cat(hi),
                          np.array([h for hs in how for h in hs], dtype=object), "dis", delta,
                          acc_z.log_Z_hat, z_lo, z_hi, n, n_bounds, meta)
