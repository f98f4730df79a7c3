"""Weighted mini-bucket (WMB) elimination: an upper bound on log Z, the search
heuristic and the WMB-IS mixture proposal.

Notation (Liu & Ihler 2011; Liu, Fisher & Ihler 2015; Lou, Dechter & Ihler 2017,
Sec. 2.3). Variables are eliminated along ``elim_order``. The bucket of ``k``
holds the original factors whose first-eliminated variable is ``k`` and the
messages sent to ``k``; it is split into mini-buckets ``j`` of at most
``i_bound + 1`` variables each. Mini-bucket ``(k, j)`` has

* ``theta_kj``: its original factors plus a cost-shifting term ``delta_kj(x_k)``
  (moment matching; ``sum_j delta_kj = 0`` so the model is unchanged),
* ``F_kj = theta_kj + incoming messages`` (log table over its scope),
* a weight ``rho_kj > 0`` with ``sum_j rho_kj = 1`` (paper: ``rho_kj``),
* the message ``lambda_kj = rho_kj * log sum_{x_k} exp(F_kj / rho_kj)`` (Hölder's
  inequality makes the product of messages an upper bound, [1]_ Eq. 5),
* the conditional belief ``b_kj(x_k | x_an_j(k)) = exp((F_kj - lambda_kj) / rho_kj)``.

The messages telescope: ``f(x) = U * prod_kj b_kj ** rho_kj`` with ``U =
exp(log_Z_upper)`` ([3]_ Eq. 6), and the proposal ``q(x) = prod_k sum_j rho_kj b_kj``
([3]_ Eq. 7) gives importance weights ``f / q <= U`` by the arithmetic-geometric
mean inequality ([2]_; [3]_ Eq. 8).

A message with an empty scope (its mini-bucket held only ``k``) goes to the
bucket of the pseudo-tree root above ``k`` (or, from a root, into the bound).

References
----------
.. [1] Q. Liu and A. Ihler, "Bounding the partition function using Hölder's
   inequality", ICML 2011.
.. [2] Q. Liu, J. W. Fisher III and A. Ihler, "Probabilistic variational bounds
   for graphical models", NIPS 2015.
.. [3] Q. Lou, R. Dechter and A. Ihler, "Dynamic importance sampling for anytime
   bounds of the partition function", NIPS 2017.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
import time
import warnings

import numpy as np

from ..utils.rng import as_generator
from ..exceptions import ConvergenceWarning
from .exact import _check_memory, default_order
from ..utils.kernels import load_kernel
from .model import GraphicalModel, _broadcast_sum, _logsumexp0, _strides
from .ordering import PseudoTree, _check_order

__all__ = ["BuildInterrupted", "Lookup", "LookupTables", "WeightedMiniBucket"]

_BYTES = 8
_kernels = load_kernel("sampling.bounds._wmb")


def _lse_all(a):
    """log-sum-exp of all entries of ``a`` (a Python float), -inf when all are -inf or ``a`` is empty."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    out = np.empty(1)
    _kernels.lse_axes(a.reshape(-1), np.array(a.shape, dtype=np.intp), np.ones(a.ndim, dtype=np.uint8),
                      1.0, out, np.empty(1))
    return float(out[0])


def _lse_axes(a, axes):
    """log-sum-exp over ``axes`` (tuple of non-negative ints), -inf safe (an all -inf slice gives -inf).

    Runs the compiled kernel ``_wmb.lse_axes``: two passes over ``a`` in memory order,
    no temporary the size of ``a``. Returns ``a`` itself when ``axes`` is empty.
    """
    if not axes:
        return a
    a = np.ascontiguousarray(a, dtype=np.float64)
    red = np.zeros(a.ndim, dtype=np.uint8)
    red[list(axes)] = 1
    kept = tuple(n for n, r in zip(a.shape, red) if not r)
    n = math.prod(kept)
    out = np.empty(n)
    _kernels.lse_axes(a.reshape(-1), np.array(a.shape, dtype=np.intp), red, 1.0, out, np.empty(n))
    return out.reshape(kept)


def _cond_inplace(F, lam, w, msg=None):
    """Turn a mini-bucket table into ``log b(x_k | rest) = (F - lam) / w`` (+ ``msg``) in place.

    Where ``lam`` is ``-inf`` (the whole slice is zero) the conditional is set
    uniform, so the proposal stays normalised there (f = 0 on such slices).
    ``msg`` (shape ``F.shape[1:]``), when given, is added to every ``x_k`` row
    (the backward pass's ``log b_parent``). ``F`` must be C-contiguous; one compiled
    pass (``_wmb.cond_add``).
    """
    if not F.flags.c_contiguous:
        raise ValueError("_cond_inplace needs a C-contiguous table")
    card = F.shape[0]
    F2 = F.reshape(card, -1)  # a view: F is C-contiguous
    lam = np.ascontiguousarray(lam, dtype=np.float64).reshape(-1)
    m = _EMPTY if msg is None else np.ascontiguousarray(msg, dtype=np.float64).reshape(-1)
    _kernels.cond_add(F2, lam, float(w), m, math.log(card))
    return F


_EMPTY = np.empty(0)


def _backward_info(lm, lam, w):
    """The backward information ``nu = w * lm - lam`` of a mini-bucket (-inf where ``lm`` or
    ``lam`` is -inf), shape of ``lam``; one compiled pass (``_wmb.backward_info``)."""
    shape = np.shape(lam)  # (np.ascontiguousarray makes a 0-d array 1-d)
    out = np.empty(shape)
    _kernels.backward_info(np.ascontiguousarray(lm, dtype=np.float64).reshape(-1),
                           np.ascontiguousarray(lam, dtype=np.float64).reshape(-1), float(w), out.reshape(-1))
    return out


def _match_stats(F, nu, lam, w, scope, common):
    """Marginal and entropy of a mini-bucket's belief for moment matching and the weight step.

    With ``log b = (F + nu) / w - z`` (``z`` normalises ``b`` over the whole table), returns
    ``(log_mu, H)``: ``log_mu`` the log marginal of ``b`` on the ``common`` variables (shape
    of those axes, in scope order; -inf where the slice is all zero) and ``H = -sum b * c``
    with ``c = (F - lam) / w`` the conditional ``log b(x_k | rest)``, over its finite entries
    ([1]_ Sec. 4, Eq. 9). ``lam = None`` skips the entropy (``H = 0``). Returns ``None`` when
    ``b`` is zero everywhere. One compiled pair of passes (``_wmb.match_stats``): no
    temporary the size of ``F``.
    """
    card = F.shape[0]
    nd = F.ndim
    common = set(common)
    cax = [a for a in range(nd) if scope[a] in common]
    cshape = tuple(F.shape[a] for a in cax)
    cst = dict(zip(cax, _strides(cshape).tolist()))
    rest = F.shape[1:]
    omap = np.zeros(rest, dtype=np.intp)
    for a in range(1, nd):
        if a in cst and F.shape[a] > 1:
            shp = [1] * (nd - 1)
            shp[a - 1] = F.shape[a]
            omap += (np.arange(F.shape[a], dtype=np.intp) * cst[a]).reshape(shp)
    n = omap.size
    nc = math.prod(cshape)
    mx, work, hw = np.empty(nc), np.empty(nc), np.empty(nc)
    lam = np.full(n, -np.inf) if lam is None else np.ascontiguousarray(lam, dtype=np.float64).reshape(-1)
    _kernels.match_stats(F.reshape(card, n), np.ascontiguousarray(nu, dtype=np.float64).reshape(-1), lam,
                         float(w), omap.reshape(-1), int(cst[0]), mx, work, hw)
    fin = mx > -np.inf
    if not fin.any():
        return None
    raw = np.full(nc, -np.inf)
    raw[fin] = mx[fin] + np.log(work[fin])
    zm = raw[fin].max()
    z = zm + math.log(float(np.exp(raw[fin] - zm).sum()))
    raw[fin] -= z
    H = -float(np.dot(np.exp(mx[fin] - z), hw[fin]))
    return raw.reshape(cshape), H


def _common_vars(st, mbs, k):
    """Variables shared by all mini-buckets of bucket ``k`` (just ``k`` for a single mini-bucket)."""
    if len(mbs) <= 1:
        return {k}
    return set.intersection(*[set(st["scope"][c]) for c in mbs])


@dataclasses.dataclass(frozen=True)
class LookupTables:
    """The per-variable tables of a fitted WMB that the search and the proposal read.

    Attributes
    ----------
    arc : list of list of Lookup, one list per variable
        Original factors of each variable's bucket (their sum is the arc weight ln w).
    heuristic : list of list of Lookup
        Messages whose sum is the WMB heuristic ln h+ of each variable's AND nodes (Eq. 6).
    proposal : list of list of (float, Lookup)
        Per variable, the mixture components of the WMB-IS proposal (Eq. 7): the log
        weight ln rho_kj and the conditional belief ln b_kj(x_k | ancestors).
    """

    arc: list
    heuristic: list
    proposal: list


class BuildInterrupted(Exception):
    """:meth:`WeightedMiniBucket.fit` was stopped by its ``stop`` callable."""


class Lookup:
    """A log table over ``vars`` read at assignments, with the axis of one variable kept.

    Attributes
    ----------
    vars : ndarray of int64, shape (m,)
        The table's variables other than the kept one.
    strides : ndarray of int64, shape (m,)
        C-order strides (in entries) of those variables in ``flat``.
    flat : ndarray of float64
        The log table, flattened in C order.
    kstride : int
        Stride of the kept variable (0 when the table does not depend on it).
    has_k : bool
        Whether the table depends on the kept variable.
    """

    __slots__ = ("vars", "strides", "flat", "kstride", "has_k")

    def __init__(self, scope, table, k):
        st = _strides(table.shape)
        self.flat = np.ascontiguousarray(table).reshape(-1)
        if k in scope:
            i = scope.index(k)
            self.has_k = True
            self.kstride = int(st[i])
            keep = [j for j in range(len(scope)) if j != i]
        else:
            self.has_k = False
            self.kstride = 0
            keep = list(range(len(scope)))
        self.vars = np.array([scope[j] for j in keep], dtype=np.int64)
        self.strides = st[keep].astype(np.int64)

    def rows(self, x, card):
        """(m, card) values at rows of ``x`` (m, n_vars) with the kept variable at 0..card-1."""
        base = x[:, self.vars] @ self.strides if self.vars.size else np.zeros(x.shape[0], dtype=np.int64)
        if self.has_k:
            return self.flat[base[:, None] + self.kstride * np.arange(card)[None, :]]
        return self.flat[base][:, None]


class WeightedMiniBucket:
    """Weighted mini-bucket bound on ln Z with moment matching and weight updates.

    Parameters
    ----------
    model : GraphicalModel
    i_bound : int or None, default None
        Each mini-bucket spans at most ``i_bound + 1`` variables (its message at
        most ``i_bound``). ``None`` picks the largest i-bound whose tables fit
        ``memory_mb`` (capped at the induced width, where WMB is exact).
    memory_mb : float, default 1024
        Memory budget in MiB for the mini-bucket tables, messages and
        work space (8 bytes per entry; see Notes).
    elim_order : array_like of int, optional
        Elimination order; default the best of min-fill, weighted min-fill and
        min-size (:func:`sampling.bounds.exact.default_order`).
    n_iters : int, default 10
        Forward-backward reparameterisation passes after the uniform-weight
        pass (0: plain WMB with uniform weights ``1/n_mini_buckets``).
    weight_step : float, default 1.0
        Initial exponentiated-gradient step on the weights (0: keep uniform
        weights). It grows by 1.25 after a pass that lowers the bound (up to
        10x) and halves after one that raises it (the pass is undone).
    match : bool, default True
        Moment-match the mini-buckets of each bucket on the variables they all
        share (the bucket variable at least).
    tol : float, default 1e-2
        Stop when a pass lowers the bound by less than ``tol`` nats.
    time_limit : float or None, default None
        Stop the passes after this many seconds (no warning then).

    Attributes
    ----------
    (set by :meth:`fit`)

    log_Z_upper : float
        Upper bound on ln Z (natural log).
    i_bound : int
    n_mini_buckets : int
    elim_order : ndarray of int64, shape (n_vars,)
    pseudo_tree : PseudoTree
        Pseudo tree of ``elim_order``; its ``search_order`` is the sampling order.
    model : GraphicalModel
        The model with cardinality-1 variables squeezed out of every scope.
    memory_mb_ : float
        Estimated peak memory of the tables while fitting (MiB; see Notes).
    bound_history_ : list of float
        The bound after each pass (first: uniform weights).
    n_iters_ : int
        Reparameterisation passes run.
    converged_ : bool
        Whether the last pass changed the bound by at most ``tol``.

    Raises
    ------
    MemoryError
        If an explicit ``i_bound`` needs more than ``memory_mb``, or (with
        ``i_bound=None``) even the smallest useful i-bound (largest factor
        scope minus one) does not fit.
    ValueError
        For a bad ``i_bound``, ``memory_mb``, ``elim_order``, ``n_iters``.

    Warns
    -----
    ConvergenceWarning
        If the bound still moved by more than ``tol`` in the last of
        ``n_iters`` passes.

    Notes
    -----
    Memory estimate: all mini-bucket tables, three times all messages (the
    messages, the backward information and the heuristic lookups share them),
    two copies of the cost-shifting tables and two copies of the largest
    mini-bucket table (work space), times 8 bytes.

    Reparameterisation follows the WMB message passing of [1]_ (pyGMs ``WMB``
    ``msgForward`` / ``msgBackward``): a backward pass computes each
    mini-bucket's belief ``b_c = b_parent(sep) * b_c(x_k | sep)`` root first; the
    next forward pass moment-matches the mini-buckets of each bucket on their
    shared variables (shifting ``delta_kj``, [1]_ Sec. 4) and moves the weights along
    the conditional entropies (gradient of the bound, [1]_ Eq. 9), then sends
    the messages. Every pass yields a valid bound; the best parameters are kept.

    References
    ----------
    See the module docstring.

    Examples
    --------
    >>> from sampling.bounds import WeightedMiniBucket, log_partition
    >>> from sampling.bounds.model import random_model
    >>> m = random_model(12, 20, max_scope=3, rng=0)
    >>> wmb = WeightedMiniBucket(m, i_bound=2, n_iters=5).fit()
    >>> bool(wmb.log_Z_upper >= log_partition(m))
    True
    >>> x, log_q = wmb.sample(4, rng=0)
    >>> bool((m.log_value(x) - log_q <= wmb.log_Z_upper + 1e-9).all())
    True
    """

    def __init__(self, model, *, i_bound=None, memory_mb=1024, elim_order=None, n_iters=10,
                 weight_step=1.0, match=True, tol=1e-2, time_limit=None):
        if not isinstance(model, GraphicalModel):
            raise TypeError(f"the model parameter must be a GraphicalModel; got {type(model).__name__} instead")
        if i_bound is not None and (not isinstance(i_bound, numbers.Integral) or isinstance(i_bound, bool) or i_bound < 0):
            raise ValueError(f"the i_bound parameter must be None or an int >= 0; got {i_bound!r} instead")
        if not isinstance(n_iters, numbers.Integral) or n_iters < 0:
            raise ValueError(f"the n_iters parameter must be an int >= 0; got {n_iters!r} instead")
        if not weight_step >= 0:
            raise ValueError(f"the weight_step parameter must be >= 0; got {weight_step!r} instead")
        self._model_in = model
        self._i_bound_param = None if i_bound is None else int(i_bound)
        self.memory_mb = _check_memory(memory_mb)
        self._elim_order_param = elim_order
        self.n_iters = int(n_iters)
        self.weight_step = float(weight_step)
        self.match = bool(match)
        self.tol = float(tol)
        if time_limit is not None and not time_limit >= 0:
            raise ValueError(f"the time_limit parameter must be None or >= 0 seconds; got {time_limit!r} instead")
        self.time_limit = None if time_limit is None else float(time_limit)
        self._fitted = False

    # ------------------------------------------------------------------ structure
    def _partition(self, ib):
        """Scope-only mini-bucket partition for i-bound ``ib``; returns the structure lists."""
        model, pos, pt = self.model, self._pos, self.pseudo_tree
        n = model.n_vars
        items = [[] for _ in range(n)]  # (kind, id, scope) ; kind 0 = factor, 1 = message
        const_factors = []
        last = int(self.elim_order[-1]) if n else -1
        for a, f in enumerate(model.factors):
            if not f.scope:
                if n:
                    items[last].append((0, a, ()))
                else:
                    const_factors.append(a)
                continue
            first = min(f.scope, key=lambda u: pos[u])
            items[first].append((0, a, tuple(f.scope)))
        mb_var, mb_scope, mb_factors, mb_msgs, mb_recv = [], [], [], [], []
        bucket_mbs = [[] for _ in range(n)]
        for k in self.elim_order.tolist():
            its = sorted(items[k], key=lambda t: (-len(t[2]), t[0], t[1]))
            groups = []  # [set(vars), factors, msgs]
            for kind, idx, sc in its:
                s = set(sc)
                s.add(k)
                placed = False
                for g in groups:
                    u = g[0] | s
                    if len(u) <= ib + 1:
                        g[0] = u
                        (g[1] if kind == 0 else g[2]).append(idx)
                        placed = True
                        break
                if not placed:
                    groups.append([s, [idx] if kind == 0 else [], [idx] if kind == 1 else []])
            if not groups:
                groups.append([{k}, [], []])
            for g in groups:
                c = len(mb_var)
                others = sorted((u for u in g[0] if u != k), key=lambda u: pos[u])
                scope = (k,) + tuple(others)
                mb_var.append(k)
                mb_scope.append(scope)
                mb_factors.append(g[1])
                mb_msgs.append(g[2])
                bucket_mbs[k].append(c)
                if others:
                    r = others[0]
                elif pt.parent[k] >= 0:
                    r = pt.root_of(k)
                else:
                    r = -1
                mb_recv.append(r)
                if r >= 0:
                    items[r].append((1, c, scope[1:]))
        return dict(var=mb_var, scope=mb_scope, factors=mb_factors, msgs=mb_msgs, recv=mb_recv,
                    bucket=bucket_mbs, const_factors=const_factors)

    def _memory(self, st):
        cards = self.model.cards
        tab = [math.prod(int(cards[u]) for u in sc) for sc in st["scope"]]
        msg = [t // int(cards[k]) for t, k in zip(tab, st["var"])]
        shift = 0
        for k, mbs in enumerate(st["bucket"]):
            if len(mbs) > 1:
                shift += len(mbs) * math.prod(int(cards[u]) for u in _common_vars(st, mbs, k))
        return _BYTES * (sum(tab) + 3 * sum(msg) + 2 * shift + 2 * max(tab, default=0)) / 2**20

    def _choose_i_bound(self):
        w = self.pseudo_tree.induced_width
        lo = max((len(f.scope) - 1 for f in self.model.factors), default=0)
        lo = max(0, min(lo, w))
        cache = {}

        def mem(i):
            if i not in cache:
                cache[i] = (self._memory(st := self._partition(i)), st)
            return cache[i]

        if mem(w)[0] <= self.memory_mb:
            return w, mem(w)[1]
        if mem(lo)[0] > self.memory_mb:
            raise MemoryError(
                f"weighted mini-bucket needs {mem(lo)[0]:.1f} MiB even at the smallest i-bound {lo}; "
                f"the budget is memory_mb={self.memory_mb:g}"
            )
        a, b = lo, w  # mem(a) fits, mem(b) does not
        while b - a > 1:
            mid = (a + b) // 2
            if mem(mid)[0] <= self.memory_mb:
                a = mid
            else:
                b = mid
        return a, mem(a)[1]

    # ------------------------------------------------------------------ fitting
    def prepare(self):
        """Squeeze the model and fix the elimination order and pseudo tree (no tables yet).

        Cheap next to :meth:`fit`; lets :meth:`memory_for` price i-bounds before any table
        is allocated. :meth:`fit` calls it. Returns self.
        """
        if getattr(self, "_prepared", False):
            return self
        model = self._model_in.squeeze()
        self.model = model
        if self._elim_order_param is None:
            order = default_order(model)
        else:
            order = _check_order(model, self._elim_order_param)
        self.elim_order = order
        self.pseudo_tree = PseudoTree(model, order)
        self._pos = self.pseudo_tree.position
        self._prepared = True
        return self

    def memory_for(self, i_bound):
        """Estimated MiB of the tables at ``i_bound`` (see Notes of the class), without
        allocating them; needs :meth:`prepare`. A Python float (no overflow)."""
        self.prepare()
        return float(self._memory(self._partition(int(i_bound))))

    def fit(self, stop=None, on_pass=None):
        """Build the mini-buckets, run the passes, and prepare heuristic/proposal tables.

        Parameters
        ----------
        stop : callable, optional
            Called between buckets; when it returns True the build is abandoned with
            :class:`BuildInterrupted` (the object is then unusable). Used by
            :func:`sampling.bounds.run` to keep its time budget during a long build.
        on_pass : callable, optional
            Called with ``self`` after the first forward pass and after each
            reparameterisation pass (the pass's bound, a valid upper bound on ln Z, is
            ``bound_history_[-1]``); :func:`sampling.bounds.run` records it and samples there.

        Returns
        -------
        self

        Raises
        ------
        BuildInterrupted
            If ``stop()`` returned True.
        """
        self._stop = stop
        self.prepare()
        model = self.model
        order = self.elim_order
        if self._i_bound_param is None:
            ib, st = self._choose_i_bound()
        else:
            ib = self._i_bound_param
            st = self._partition(ib)
            need = self._memory(st)
            if need > self.memory_mb:
                raise MemoryError(
                    f"weighted mini-bucket with i_bound={ib} needs about {need:.1f} MiB; "
                    f"the budget is memory_mb={self.memory_mb:g}"
                )
        self.i_bound = int(ib)
        self._st = st
        self.memory_mb_ = self._memory(st)
        nmb = len(st["var"])
        self.n_mini_buckets = nmb
        cards = model.cards
        self._shape = [tuple(int(cards[u]) for u in sc) for sc in st["scope"]]
        self._weight = np.ones(nmb)
        for k, mbs in enumerate(st["bucket"]):
            for c in mbs:
                self._weight[c] = 1.0 / len(mbs)
        # cost-shifting tables over the variables common to all mini-buckets of a bucket
        self._common = [None] * nmb
        for k, mbs in enumerate(st["bucket"]):
            common = _common_vars(st, mbs, k)
            for c in mbs:
                self._common[c] = tuple(u for u in st["scope"][c] if u in common)
        self._delta = [np.zeros(tuple(int(cards[u]) for u in self._common[c])) for c in range(nmb)]
        # parent mini-bucket of each message
        self._parent_mb = np.full(nmb, -1, dtype=np.int64)
        for c in range(nmb):
            for c2 in st["msgs"][c]:
                self._parent_mb[c2] = c
        self._const = sum(float(model.factors[a].log_values) for a in st["const_factors"])

        t0 = time.perf_counter()
        self.bound_history_ = [self._forward(update=False)]
        if on_pass is not None:
            on_pass(self)
        best = self.bound_history_[0]
        best_params = self._params()
        converged = self.n_iters == 0 or nmb == len(self.elim_order) or not np.isfinite(best)
        timed_out = False
        self.n_iters_ = 0
        self._step = self.weight_step
        last_change = np.inf
        if not converged:
            for _ in range(self.n_iters):
                if self.time_limit is not None and time.perf_counter() - t0 > self.time_limit:
                    timed_out = True
                    break
                nu = self._backward()
                b = self._forward(update=True, nu=nu)
                del nu
                self.n_iters_ += 1
                self.bound_history_.append(b)
                if on_pass is not None:
                    on_pass(self)
                gain = best - b if np.isfinite(b) else -np.inf
                if gain >= 0:
                    best, best_params = b, self._params()
                    last_change = gain
                    if gain <= self.tol:
                        converged = True
                        break
                    self._step = min(self._step * 1.25, 10.0 * self.weight_step)
                    continue
                # the pass made the bound worse: go back to the best parameters, smaller step
                self._set_params(best_params)
                self._forward(update=False)
                self._step *= 0.5
                if self._step < 1e-3 * self.weight_step or self.weight_step == 0:
                    converged = True
                    break
        if not converged and not timed_out:
            warnings.warn(
                f"weighted mini-bucket reparameterisation did not converge in n_iters={self.n_iters} passes "
                f"(last gain {last_change:.3g} nats > tol={self.tol:g}); the bound is valid but may be loose",
                ConvergenceWarning,
                stacklevel=2,
            )
        self.converged_ = bool(converged)
        if self._params_differ(best_params):
            self._set_params(best_params)
            best = self._forward(update=False)
        self.log_Z_upper = float(best)
        self._prepare_queries()
        self._stop = None
        self._fitted = True
        return self

    @property
    def tables(self):
        """:class:`LookupTables` of the fitted WMB (views, not copies): what the AND/OR
        search (heuristic, arc weights) and the compiled proposal sampler read."""
        self._check_fitted()
        return LookupTables(self._arc, self._heur, self._prop)

    @property
    def is_exact(self):
        """True when every bucket is one mini-bucket (i-bound >= induced width): the bound
        is then ln Z itself (plain bucket elimination) and the proposal is exact."""
        self._check_fitted()
        return self.n_mini_buckets == self.model.n_vars

    # trailing-underscore aliases (estimator convention)
    @property
    def log_Z_upper_(self):
        return self.log_Z_upper

    @property
    def i_bound_(self):
        return self.i_bound

    # The delta arrays are never modified in place (an update makes a new array),
    # so a snapshot of the parameters is a shallow copy of the list.
    def _params(self):
        return self._weight.copy(), list(self._delta)

    def _params_differ(self, p):
        w, d = p
        return not (np.array_equal(w, self._weight) and all(a is b for a, b in zip(d, self._delta)))

    def _set_params(self, p):
        self._weight = p[0].copy()
        self._delta = list(p[1])

    def _mb_table(self, c):
        st, model = self._st, self.model
        tabs = [(model.factors[a].scope, model.factors[a].log_values) for a in st["factors"][c]]
        tabs += [(st["scope"][c2][1:], self._lam[c2]) for c2 in st["msgs"][c]]
        if self._delta[c].any():
            tabs.append((self._common[c], self._delta[c]))
        return _broadcast_sum(st["scope"][c], self._shape[c], tabs)

    def _forward(self, update, nu=None):
        """One forward (elimination) pass; sets ``self._F``, ``self._lam``; returns the bound."""
        st = self._st
        nmb = len(st["var"])
        self._F = [None] * nmb
        self._lam = [None] * nmb
        bound = self._const
        stop = getattr(self, "_stop", None)
        for k in self.elim_order.tolist():
            if stop is not None and stop():
                raise BuildInterrupted("weighted mini-bucket build stopped (time budget)")
            mbs = st["bucket"][k]
            for c in mbs:
                self._F[c] = self._mb_table(c)
            if update and len(mbs) > 1:
                self._reparameterise(k, mbs, nu)
            for c in mbs:
                self._lam[c] = _logsumexp0(self._F[c], self._weight[c])
                if st["recv"][c] < 0:
                    bound += float(self._lam[c])
        return float(bound)

    def _reparameterise(self, k, mbs, nu):
        """Moment matching and weight update at bucket ``k`` (beliefs from the stale backward info ``nu``).

        The beliefs ``b_c`` of the mini-buckets are matched on the variables all of
        them share (``x_k`` at least): ``delta_c += rho_c (log mu_bar - log mu_c)``
        with ``log mu_bar = sum_c rho_c log mu_c``, which keeps ``sum_c delta_c = 0``.
        The weights take an exponentiated-gradient step along the conditional
        entropies ``H_c(x_k | rest)`` (the gradient of the bound in ``rho``, [1]_).
        """
        w = self._weight[mbs]
        logmu, H = [], []
        for c, wc in zip(mbs, w):
            F = self._F[c]
            lam = _logsumexp0(F, wc) if self.weight_step > 0 else None
            got = _match_stats(F, nu[c], lam, wc, self._st["scope"][c], self._common[c])
            if got is None:
                return
            logmu.append(got[0])
            H.append(got[1])
        if self.match:
            L = np.array(logmu)  # (m, *common shape)
            valid = np.all(np.isfinite(L), axis=0)
            if valid.any():
                bar = np.tensordot(w, np.where(valid, L, 0.0), axes=1)
                for j, c in enumerate(mbs):
                    shift = np.where(valid, w[j] * (bar - np.where(valid, L[j], 0.0)), 0.0)
                    self._delta[c] = self._delta[c] + shift
                    _broadcast_sum(self._st["scope"][c], self._shape[c], [(self._common[c], shift)], out=self._F[c])
        if self.weight_step > 0:
            H = np.array(H)
            Hbar = float(np.dot(w, H))
            lw = np.log(w) - self._step * (H - Hbar)
            lw -= lw.max()
            nw = np.exp(lw)
            nw = np.maximum(nw / nw.sum(), 1e-6)
            self._weight[mbs] = nw / nw.sum()

    def _backward(self):
        """Root-first pass: ``nu_c = rho_c * log b_parent(sep_c) - lambda_c`` for every mini-bucket."""
        st = self._st
        nmb = len(st["var"])
        nu = [None] * nmb
        logb = {}
        pending = np.zeros(nmb, dtype=np.int64)
        for c in range(nmb):
            p = self._parent_mb[c]
            if p >= 0:
                pending[p] += 1
        stop = getattr(self, "_stop", None)
        for k in self.elim_order[::-1].tolist():
            if stop is not None and stop():
                raise BuildInterrupted("weighted mini-bucket build stopped (time budget)")
            for c in st["bucket"][k]:
                p = self._parent_mb[c]
                sc = st["scope"][c]
                lam = self._lam[c]
                if p < 0:
                    lm = np.zeros(lam.shape)
                else:
                    psc = st["scope"][p]
                    keep = set(sc[1:])
                    axes = tuple(i for i, u in enumerate(psc) if u not in keep)
                    lm = _lse_axes(logb[p], axes)
                    pending[p] -= 1
                    if pending[p] == 0:
                        del logb[p]
                wc = self._weight[c]
                nu[c] = _backward_info(lm, lam, wc)
                if pending[c] > 0:
                    logb[c] = _cond_inplace(self._F[c], lam, wc, lm)
                self._F[c] = None  # consumed; the next forward pass rebuilds it
        return nu

    def _prepare_queries(self):
        """Per-variable lookups for arc weights, heuristics and the proposal; frees the F tables."""
        st, model, pt = self._st, self.model, self.pseudo_tree
        n = model.n_vars
        self._arc = [[] for _ in range(n)]
        for c, k in enumerate(st["var"]):
            for a in st["factors"][c]:
                f = model.factors[a]
                self._arc[k].append(Lookup(f.scope, f.log_values, k))
        self._heur = [[] for _ in range(n)]
        for c, k in enumerate(st["var"]):
            r = st["recv"][c]
            if r < 0:
                continue
            msg_scope = st["scope"][c][1:]
            v = int(pt.parent[k])
            while v >= 0:
                self._heur[v].append(Lookup(msg_scope, self._lam[c], v))
                if v == r:
                    break
                v = int(pt.parent[v])
        self._prop = [[] for _ in range(n)]
        for c, k in enumerate(st["var"]):
            cond = _cond_inplace(self._F[c], self._lam[c], self._weight[c])
            self._prop[k].append((math.log(self._weight[c]), Lookup(st["scope"][c], cond, k)))
            self._F[c] = None
        self._F = None

    # ------------------------------------------------------------------ queries
    def _check_fitted(self):
        if not self._fitted:
            raise RuntimeError("this WeightedMiniBucket is not fitted yet; call fit() first")

    def _rows(self, var, assignment):
        self._check_fitted()
        if not isinstance(var, numbers.Integral) or not 0 <= var < self.model.n_vars:
            raise ValueError(f"the var parameter must be a variable id in [0, {self.model.n_vars}); got {var!r}")
        x = np.asarray(assignment)
        if x.dtype.kind not in "iu":
            raise TypeError(f"the assignment parameter must hold ints; got dtype {x.dtype}")
        one = x.ndim == 1
        x = np.atleast_2d(x).astype(np.int64, copy=False)
        if x.ndim != 2 or x.shape[1] != self.model.n_vars:
            raise ValueError(f"the assignment parameter must have shape ({self.model.n_vars},) or (m, {self.model.n_vars}); got {np.shape(assignment)}")
        return int(var), x, one

    def _sum_rows(self, lookups, var, x):
        card = int(self.model.cards[var])
        out = np.zeros((x.shape[0], card))
        for t in lookups:
            out += t.rows(x, card)
        return out

    def log_arc_weight(self, var, assignment):
        """Sum of the log original factors in ``var``'s bucket, at ``var = 0..card-1``.

        Parameters
        ----------
        var : int
        assignment : ndarray of int, shape (n_vars,) or (m, n_vars)
            Only the values of the pseudo-tree ancestors of ``var`` are read.

        Returns
        -------
        ndarray of shape (card[var],) or (m, card[var])
            ``log w_c`` of the AND nodes ``var = x`` ([3]_ Sec. 2.1).
        """
        var, x, one = self._rows(var, assignment)
        out = self._sum_rows(self._arc[var], var, x)
        return out[0] if one else out

    def log_heuristic(self, var, assignment):
        """WMB heuristic ``log h+`` of the AND nodes ``var = x`` ([3]_ Eq. 6).

        The sum of the messages sent from the mini-buckets of ``var``'s
        pseudo-tree descendants into the buckets of ``var`` or its ancestors, so
        that ``exp(log_arc_weight + log_heuristic)`` bounds the arc weight times
        the value of the sub-problem below ``var = x``.

        Returns
        -------
        ndarray of shape (card[var],) or (m, card[var])
        """
        var, x, one = self._rows(var, assignment)
        out = self._sum_rows(self._heur[var], var, x)
        return out[0] if one else out

    def _log_prop_rows(self, var, x):
        card = int(self.model.cards[var])
        props = self._prop[var]
        if len(props) == 1:
            out = props[0][1].rows(x, card)
        else:
            parts = np.stack([lw + t.rows(x, card) for lw, t in props])
            out = _lse_axes(parts, (0,))
        z = out.max(axis=1, keepdims=True)
        z = z + np.log(np.exp(out - z).sum(axis=1, keepdims=True))
        return out - z

    def log_proposal(self, var, assignment):
        """Normalised ``log q(var = x | ancestors)`` of the WMB-IS mixture ([3]_ Eq. 7).

        Returns
        -------
        ndarray of shape (card[var],) or (m, card[var])
        """
        var, x, one = self._rows(var, assignment)
        out = self._log_prop_rows(var, x)
        return out[0] if one else out

    def _sample_vars(self, start_vars):
        pt = self.pseudo_tree
        if start_vars is None:
            return pt.search_order.tolist()
        vs = set()
        for s in np.atleast_1d(np.asarray(start_vars, dtype=np.int64)).tolist():
            if not 0 <= s < self.model.n_vars:
                raise ValueError(f"start_vars holds {s}, not a variable id")
            vs.update(pt.subtree(s))
        return sorted(vs, key=lambda u: -pt.position[u])

    def sample(self, n, rng=None, *, assignment=None, start_vars=None):
        """Draw ``n`` samples from the WMB-IS proposal, in search order.

        Parameters
        ----------
        n : int
        rng : None, int or numpy.random.Generator
        assignment : ndarray of int, shape (n_vars,), optional
            Values of the variables not sampled (required with ``start_vars``).
        start_vars : sequence of int, optional
            Sample only these variables and their pseudo-tree descendants (their
            ancestors must be set in ``assignment``).

        Returns
        -------
        samples : ndarray of int64, shape (n, n_vars)
        log_q : ndarray of shape (n,)
            ``log q`` of the sampled variables given the rest.
        """
        self._check_fitted()
        if not isinstance(n, numbers.Integral) or n < 0:
            raise ValueError(f"the n parameter must be an int >= 0; got {n!r} instead")
        gen = as_generator(rng)
        nv = self.model.n_vars
        if assignment is None:
            if start_vars is not None:
                raise ValueError("start_vars needs an assignment holding the values of their ancestors")
            X = np.zeros((n, nv), dtype=np.int64)
        else:
            a = np.asarray(assignment)
            if a.shape != (nv,) or a.dtype.kind not in "iu":
                raise ValueError(f"the assignment parameter must be an int array of shape ({nv},)")
            X = np.tile(a.astype(np.int64), (n, 1))
        log_q = np.zeros(n)
        cards = self.model.cards
        rows = np.arange(n)
        for k in self._sample_vars(start_vars):
            if cards[k] == 1:
                X[:, k] = 0
                continue
            lq = self._log_prop_rows(k, X)
            cum = np.cumsum(np.exp(lq), axis=1)
            u = gen.random(n) * cum[:, -1]
            xk = np.minimum((cum < u[:, None]).sum(axis=1), cards[k] - 1)
            X[:, k] = xk
            log_q += lq[rows, xk]
        return X, log_q

    def log_q(self, samples, *, start_vars=None):
        """``log q`` of given samples (of the variables ``sample`` would draw).

        Returns
        -------
        ndarray of shape (n,)
        """
        self._check_fitted()
        X = np.atleast_2d(np.asarray(samples, dtype=np.int64))
        out = np.zeros(X.shape[0])
        rows = np.arange(X.shape[0])
        for k in self._sample_vars(start_vars):
            if self.model.cards[k] == 1:
                continue
            out += self._log_prop_rows(k, X)[rows, X[:, k]]
        return out

    def __repr__(self):
        if not self._fitted:
            return f"WeightedMiniBucket(i_bound={self._i_bound_param}, memory_mb={self.memory_mb:g})"
        return (f"WeightedMiniBucket(i_bound={self.i_bound}, n_mini_buckets={self.n_mini_buckets}, "
                f"log_Z_upper={self.log_Z_upper:.6g})")
