"""Discrete graphical models with factors stored in log space.

A :class:`GraphicalModel` over ``n_vars`` discrete variables (integer ids
``0 .. n_vars - 1``, variable ``v`` taking values ``0 .. cards[v] - 1``) is a
list of :class:`Factor` objects. It defines the unnormalised measure

    f(x) = prod_a f_a(x_a),   log f(x) = sum_a log f_a(x_a),

and the partition function Z = sum_x f(x) (Lou, Dechter & Ihler 2017, Sec. 2).

Axis convention
---------------
``Factor(scope, log_values)`` has one axis per variable of ``scope``, **in scope
order**: ``log_values[i0, i1, ...]`` is log f(x_{scope[0]} = i0, x_{scope[1]} = i1,
...). Flattened in C order this is the UAI table order (the last variable of the
scope changes fastest). A zero of f is ``-inf``; ``NaN`` and ``+inf`` are invalid.

Variables of cardinality 1 carry no information. :meth:`GraphicalModel.condition`
clamps observed variables to cardinality 1 and removes them from every scope
(their ids stay valid, so assignments keep shape ``(n_vars,)`` and hold 0 there);
:meth:`GraphicalModel.squeeze` does the same for every variable of cardinality 1.
"""
from __future__ import annotations

import numbers

import numpy as np

from ._tables import lookup


__all__ = ["Factor", "GraphicalModel"]


class Factor:
    """A non-negative function of a few discrete variables, stored as its log.

    Parameters
    ----------
    scope : sequence of int
        Distinct variable ids; axis ``i`` of ``log_values`` belongs to ``scope[i]``.
    log_values : array_like of shape ``tuple(card[v] for v in scope)``
        Natural log of the factor values; ``-inf`` encodes a zero. A scope of
        length 0 gives a constant factor (a 0-d array).

    Raises
    ------
    ValueError
        If ``scope`` repeats a variable or holds a negative id, if the number of
        axes differs from ``len(scope)``, or if ``log_values`` holds ``NaN`` or
        ``+inf``.
    TypeError
        If ``scope`` holds non-integers.

    Examples
    --------
    >>> import numpy as np
    >>> f = Factor.from_values((0, 2), [[1.0, 2.0, 0.5], [0.0, 1.0, 1.0]])
    >>> f.scope, f.shape
    ((0, 2), (2, 3))
    """

    __slots__ = ("scope", "log_values")

    def __init__(self, scope, log_values):
        scope = tuple(scope)
        for v in scope:
            if not isinstance(v, numbers.Integral) or isinstance(v, bool):
                raise TypeError(f"the scope of a Factor must hold ints; got {v!r} ({type(v).__name__})")
        scope = tuple(int(v) for v in scope)
        if len(set(scope)) != len(scope):
            raise ValueError(f"the scope of a Factor must not repeat a variable; got {scope}")
        if any(v < 0 for v in scope):
            raise ValueError(f"the scope of a Factor must hold non-negative ids; got {scope}")
        lv = np.array(log_values, dtype=np.float64, order="C", copy=True)
        if lv.ndim != len(scope):
            raise ValueError(
                f"log_values of a Factor must have one axis per scope variable ({len(scope)}); "
                f"got shape {lv.shape}"
            )
        if np.isnan(lv).any() or np.isposinf(lv).any():
            raise ValueError("log_values of a Factor must not contain NaN or +inf (a zero is -inf)")
        lv.setflags(write=False)
        self.scope = scope
        self.log_values = lv

    @classmethod
    def from_values(cls, scope, values):
        """Build a factor from non-negative (linear-scale) values.

        Raises
        ------
        ValueError
            If a value is negative, NaN or infinite.
        """
        vals = np.asarray(values, dtype=np.float64)
        if not np.all(np.isfinite(vals)) or (vals < 0).any():
            raise ValueError("factor values must be finite and non-negative")
        with np.errstate(divide="ignore"):
            return cls(scope, np.log(vals))

    @property
    def shape(self):
        """Tuple of axis lengths (the cardinalities of the scope variables)."""
        return self.log_values.shape

    def __repr__(self):
        return f"Factor(scope={self.scope}, shape={self.shape})"


def _as_int_array(x, name):
    a = np.asarray(x)
    if a.dtype.kind not in "iub":
        if a.dtype.kind == "f" and a.size and np.all(np.isfinite(a)) and np.all(a == np.round(a)):
            a = a.astype(np.int64)
        elif a.size == 0:
            a = a.astype(np.int64)
        else:
            raise TypeError(f"the {name} parameter must hold integers; got dtype {a.dtype}")
    return a.astype(np.int64, copy=False)


class GraphicalModel:
    """A discrete graphical model: variable cardinalities and log-space factors.

    Parameters
    ----------
    cards : sequence of int of length n_vars
        Cardinality (number of states, >= 1) of each variable.
    factors : iterable of Factor
        Factors; each scope variable must be ``< n_vars`` and each axis length
        must equal the cardinality of its variable.

    Attributes
    ----------
    n_vars : int
    cards : ndarray of int64, shape (n_vars,)   (read-only)
    factors : tuple of Factor

    Raises
    ------
    ValueError
        If a cardinality is < 1, a scope variable is out of range, or a factor's
        shape disagrees with ``cards``.
    TypeError
        If ``factors`` holds something other than :class:`Factor`.
    """

    def __init__(self, cards, factors):
        cards = _as_int_array(cards, "cards").ravel().copy()
        if (cards < 1).any():
            bad = int(np.flatnonzero(cards < 1)[0])
            raise ValueError(f"the cards parameter must be >= 1 for every variable; variable {bad} has {cards[bad]}")
        cards.setflags(write=False)
        factors = tuple(factors)
        n = cards.shape[0]
        for i, f in enumerate(factors):
            if not isinstance(f, Factor):
                raise TypeError(f"factor {i} must be a Factor; got {type(f).__name__}")
            for v in f.scope:
                if v >= n:
                    raise ValueError(f"factor {i} has variable {v} but the model has only {n} variables")
            expect = tuple(int(cards[v]) for v in f.scope)
            if f.shape != expect:
                raise ValueError(f"factor {i} over {f.scope} has shape {f.shape}; the cards say {expect}")
        self.cards = cards
        self.factors = factors

    @property
    def n_vars(self):
        """Number of variables."""
        return int(self.cards.shape[0])

    @property
    def n_factors(self):
        """Number of factors."""
        return len(self.factors)

    def __repr__(self):
        return f"GraphicalModel(n_vars={self.n_vars}, n_factors={self.n_factors}, max_card={int(self.cards.max(initial=0))})"

    def log_value(self, assignments):
        """log f(x) = sum of the log factors at complete assignments.

        Parameters
        ----------
        assignments : array_like of int, shape (n, n_vars) or (n_vars,)
            One complete assignment per row; ``0 <= x[v] < cards[v]``.

        Returns
        -------
        ndarray of shape (n,), or float for a 1-d input
            Natural log of the unnormalised probability (``-inf`` for a zero).

        Raises
        ------
        ValueError
            If the shape is wrong or a value is out of range.
        """
        x = _as_int_array(assignments, "assignments")
        one = x.ndim == 1
        x = np.atleast_2d(x)
        if x.ndim != 2 or x.shape[1] != self.n_vars:
            raise ValueError(f"assignments must have shape (n, {self.n_vars}); got {np.shape(assignments)}")
        if x.size and ((x < 0).any() or (x >= self.cards[None, :]).any()):
            rows, cols = np.nonzero((x < 0) | (x >= self.cards[None, :]))
            raise ValueError(
                f"assignments[{rows[0]}, {cols[0]}] = {x[rows[0], cols[0]]} is out of range "
                f"for variable {cols[0]} of cardinality {self.cards[cols[0]]}"
            )
        out = np.zeros(x.shape[0])
        for f in self.factors:
            out += lookup(f.log_values, f.scope, x)
        return float(out[0]) if one else out

    def condition(self, evidence):
        """Clamp observed variables; return a new model.

        Parameters
        ----------
        evidence : dict of {int: int}
            Observed value of each observed variable.

        Returns
        -------
        GraphicalModel
            Same variable ids; each observed variable gets cardinality 1 and is
            removed from every factor scope (the factor is sliced at the observed
            value). A factor whose scope becomes empty is kept as a constant.
            Its partition function is f summed over the unobserved variables,
            i.e. Z(evidence) = P(evidence) * Z.

        Raises
        ------
        ValueError
            If a variable id or value is out of range.
        """
        ev = {}
        for k, val in dict(evidence).items():
            if not isinstance(k, numbers.Integral) or not isinstance(val, numbers.Integral):
                raise TypeError(f"evidence must map int variable ids to int values; got {k!r}: {val!r}")
            k, val = int(k), int(val)
            if not 0 <= k < self.n_vars:
                raise ValueError(f"evidence variable {k} is out of range [0, {self.n_vars})")
            if not 0 <= val < self.cards[k]:
                raise ValueError(f"evidence value {val} of variable {k} is out of range [0, {self.cards[k]})")
            ev[k] = val
        cards = self.cards.copy()
        for k in ev:
            cards[k] = 1
        return GraphicalModel(cards, [_clamp(f, ev, drop_unit=None) for f in self.factors])

    def squeeze(self):
        """Return an equivalent model with every cardinality-1 variable removed from every scope."""
        unit = {v for v in range(self.n_vars) if self.cards[v] == 1}
        if not unit:
            return self
        return GraphicalModel(self.cards, [_clamp(f, {}, drop_unit=unit) for f in self.factors])


def _clamp(f, ev, drop_unit):
    """Slice ``f`` at the observed values of ``ev`` and drop those axes (and axes in ``drop_unit``)."""
    idx = []
    keep = []
    for ax, v in enumerate(f.scope):
        if v in ev:
            idx.append(ev[v])
        elif drop_unit is not None and v in drop_unit:
            idx.append(0)
        else:
            idx.append(slice(None))
            keep.append(v)
    if len(keep) == len(f.scope):
        return f
    return Factor(tuple(keep), f.log_values[tuple(idx)])


def random_model(n_vars, n_factors, *, max_scope=3, max_card=3, zero_prob=0.0, scale=1.0, rng=None):
    """A random model for tests and benchmarks.

    Parameters
    ----------
    n_vars, n_factors : int
    max_scope : int, default 3
        Scope sizes are drawn uniformly from ``0 .. max_scope``.
    max_card : int, default 3
        Cardinalities are drawn uniformly from ``1 .. max_card``.
    zero_prob : float in [0, 1), default 0
        Probability that a table entry is a zero (``-inf``).
    scale : float, default 1
        Standard deviation of the normal log-values.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    GraphicalModel
    """
    from ..utils.rng import as_generator

    gen = as_generator(rng)
    cards = gen.integers(1, max_card + 1, n_vars)
    factors = []
    for _ in range(n_factors):
        k = int(gen.integers(0, min(max_scope, n_vars) + 1))
        scope = tuple(int(v) for v in gen.choice(n_vars, k, replace=False))
        lv = scale * gen.normal(size=tuple(int(cards[v]) for v in scope))
        if zero_prob > 0:
            lv = np.where(gen.random(lv.shape) < zero_prob, -np.inf, lv)
        factors.append(Factor(scope, lv))
    return GraphicalModel(cards, factors)
