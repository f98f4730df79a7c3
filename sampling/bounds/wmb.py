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

import numbers
import time
import warnings

import numpy as np

from ..exceptions import BuildInterrupted, ConvergenceWarning
from ..utils.rng import as_generator
from ._lookup import Lookup, LookupTables, build_lookup_tables, draw_proposal, log_q_rows, sample_order
from ._partition import choose_i_bound, memory_mib, partition
from ._reparam import MessagePasses
from .exact import check_memory, default_order
from .model import GraphicalModel
from .ordering import PseudoTree, check_order

__all__ = ["BuildInterrupted", "Lookup", "LookupTables", "WeightedMiniBucket"]


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
        Stop the passes after this many seconds of ``clock`` (no warning then).
    clock : callable, optional
        The clock of ``time_limit`` (default ``time.perf_counter``, wall seconds; e.g.
        ``time.process_time`` for this process's CPU seconds, as ``clock="cpu"`` of
        :func:`sampling.bounds.marginals`).

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
                 weight_step=1.0, match=True, tol=1e-2, time_limit=None, clock=None):
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
        self.memory_mb = check_memory(memory_mb)
        self._elim_order_param = elim_order
        self.n_iters = int(n_iters)
        self.weight_step = float(weight_step)
        self.match = bool(match)
        self.tol = float(tol)
        if time_limit is not None and not time_limit >= 0:
            raise ValueError(f"the time_limit parameter must be None or >= 0 seconds; got {time_limit!r} instead")
        self.time_limit = None if time_limit is None else float(time_limit)
        self.clock = time.perf_counter if clock is None else clock
        self._fitted = False


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
            order = check_order(model, self._elim_order_param)
        self.elim_order = order
        self.pseudo_tree = PseudoTree(model, order)
        self._prepared = True
        return self

    def memory_for(self, i_bound):
        """Estimated MiB of the tables at ``i_bound`` (see Notes of the class), without
        allocating them; needs :meth:`prepare`. A Python float (no overflow)."""
        self.prepare()
        return float(memory_mib(self.model.cards, partition(self.model, self.elim_order, self.pseudo_tree, int(i_bound))))

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
        self.prepare()
        model = self.model
        if self._i_bound_param is None:
            ib, st = choose_i_bound(model, self.elim_order, self.pseudo_tree, self.memory_mb)
        else:
            ib = self._i_bound_param
            st = partition(model, self.elim_order, self.pseudo_tree, ib)
            need = memory_mib(model.cards, st)
            if need > self.memory_mb:
                raise MemoryError(
                    f"weighted mini-bucket with i_bound={ib} needs about {need:.1f} MiB; "
                    f"the budget is memory_mb={self.memory_mb:g}"
                )
        self.i_bound = int(ib)
        self.memory_mb_ = memory_mib(model.cards, st)
        self.n_mini_buckets = len(st)
        passes = MessagePasses(model, st, self.elim_order, weight_step=self.weight_step, match=self.match,
                               stop=stop)
        self._run_passes(passes, on_pass)
        self._tables = build_lookup_tables(model, st, self.pseudo_tree, passes)
        self._fitted = True
        return self

    def _run_passes(self, passes, on_pass):
        """The uniform-weight pass, then up to ``n_iters`` backward/forward passes; keeps the
        best parameters and sets ``log_Z_upper``, ``bound_history_``, ``n_iters_``, ``converged_``."""
        t0 = self.clock()
        self.bound_history_ = [passes.forward(update=False)]
        if on_pass is not None:
            on_pass(self)
        best = self.bound_history_[0]
        best_params = passes.params()
        converged = self.n_iters == 0 or len(passes.st) == len(self.elim_order) or not np.isfinite(best)
        timed_out = False
        self.n_iters_ = 0
        last_change = np.inf
        if not converged:
            for _ in range(self.n_iters):
                if self.time_limit is not None and self.clock() - t0 > self.time_limit:
                    timed_out = True
                    break
                nu = passes.backward()
                b = passes.forward(update=True, nu=nu)
                del nu
                self.n_iters_ += 1
                self.bound_history_.append(b)
                if on_pass is not None:
                    on_pass(self)
                gain = best - b if np.isfinite(b) else -np.inf
                if gain >= 0:
                    best, best_params = b, passes.params()
                    last_change = gain
                    if gain <= self.tol:
                        converged = True
                        break
                    passes.step = min(passes.step * 1.25, 10.0 * self.weight_step)
                    continue
                # the pass made the bound worse: go back to the best parameters, smaller step
                passes.set_params(best_params)
                passes.forward(update=False)
                passes.step *= 0.5
                if passes.step < 1e-3 * self.weight_step or self.weight_step == 0:
                    converged = True
                    break
        if not converged and not timed_out:
            warnings.warn(
                f"weighted mini-bucket reparameterisation did not converge in n_iters={self.n_iters} passes "
                f"(last gain {last_change:.3g} nats > tol={self.tol:g}); the bound is valid but may be loose",
                ConvergenceWarning,
                stacklevel=3,
            )
        self.converged_ = bool(converged)
        if passes.params_differ(best_params):
            passes.set_params(best_params)
            best = passes.forward(update=False)
        self.log_Z_upper = float(best)

    @property
    def tables(self):
        """:class:`LookupTables` of the fitted WMB (views, not copies): what the AND/OR
        search (heuristic, arc weights) and the compiled proposal sampler read."""
        self._check_fitted()
        return self._tables

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
        out = self._tables.sum_rows("arc", var, x, int(self.model.cards[var]))
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
        out = self._tables.sum_rows("heuristic", var, x, int(self.model.cards[var]))
        return out[0] if one else out

    def log_proposal(self, var, assignment):
        """Normalised ``log q(var = x | ancestors)`` of the WMB-IS mixture ([3]_ Eq. 7).

        Returns
        -------
        ndarray of shape (card[var],) or (m, card[var])
        """
        var, x, one = self._rows(var, assignment)
        out = self._tables.log_proposal_rows(var, x, int(self.model.cards[var]))
        return out[0] if one else out

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
        order = sample_order(self.pseudo_tree, nv, start_vars)
        log_q = draw_proposal(self._tables, self.model.cards, order, X, gen)
        return X, log_q

    def log_q(self, samples, *, start_vars=None):
        """``log q`` of given samples (of the variables ``sample`` would draw).

        Returns
        -------
        ndarray of shape (n,)
        """
        self._check_fitted()
        X = np.atleast_2d(np.asarray(samples, dtype=np.int64))
        order = sample_order(self.pseudo_tree, self.model.n_vars, start_vars)
        return log_q_rows(self._tables, self.model.cards, order, X)

    def __repr__(self):
        if not self._fitted:
            return f"WeightedMiniBucket(i_bound={self._i_bound_param}, memory_mb={self.memory_mb:g})"
        return (f"WeightedMiniBucket(i_bound={self.i_bound}, n_mini_buckets={self.n_mini_buckets}, "
                f"log_Z_upper={self.log_Z_upper:.6g})")
