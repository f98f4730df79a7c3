"""Log-table operations shared by exact elimination and the weighted mini-bucket.

A table is a float64 array in log space with one axis per variable of its scope (in
scope order, C layout). Every function here is a thin layer over a compiled kernel of
``sampling.bounds._wmb`` (pure-Python twin ``_wmb_py``): it validates nothing beyond
what it documents, and is ``-inf`` safe (a slice of zeros gives ``-inf``, never NaN).
"""
from __future__ import annotations

import math

import numpy as np

from ..utils.kernels import load_kernel

__all__ = ["strides", "lookup", "broadcast_sum", "logsumexp0", "lse_all", "lse_axes", "cond_inplace",
           "backward_info", "match_stats"]

_kernels = load_kernel("sampling.bounds._wmb")
_EMPTY = np.empty(0)


def strides(shape):
    """C-order strides (in elements) of an array of ``shape``."""
    st = np.ones(len(shape), dtype=np.int64)
    for i in range(len(shape) - 2, -1, -1):
        st[i] = st[i + 1] * shape[i + 1]
    return st


def lookup(log_values, scope, x):
    """Values of a table at the rows of ``x`` (n, n_vars); no validation."""
    if len(scope) == 0:
        return np.full(x.shape[0], float(log_values))
    flat = log_values.reshape(-1)
    st = strides(log_values.shape)
    idx = x[:, list(scope)] @ st
    return flat[idx]


def broadcast_sum(out_scope, out_shape, tables, out=None):
    """Sum log tables ``[(scope, array), ...]`` into a new array over ``out_scope``.

    Every scope must be a subset of ``out_scope``. Returns a fresh C-contiguous
    float64 array of shape ``out_shape`` (zeros if ``tables`` is empty), or adds
    the tables into ``out`` (C-contiguous float64) in place and returns it. One
    compiled pass over the result (``_wmb.broadcast_sum``) adds the tables in the
    order given: the same sums, bit for bit, as NumPy's broadcasting ``+=`` one
    table after the other.
    """
    pos = {v: i for i, v in enumerate(out_scope)}
    if out is None:
        out = np.empty(out_shape, dtype=np.float64)
        add = False
    elif not (out.flags.c_contiguous and out.dtype == np.float64):
        raise ValueError("broadcast_sum needs a C-contiguous float64 out")
    else:
        add = True
    if not tables:
        if not add:
            out.fill(0.0)
        return out
    nd = len(out_scope)
    flats = []
    tstrides = np.zeros((len(tables), nd), dtype=np.intp)
    for t, (scope, arr) in enumerate(tables):
        arr = np.ascontiguousarray(arr, dtype=np.float64)
        flats.append(arr.reshape(-1))
        st = 1
        for i in range(len(scope) - 1, -1, -1):  # C-order strides (a Python loop: tiny tables)
            tstrides[t, pos[scope[i]]] = st
            st *= arr.shape[i]
    _kernels.broadcast_sum(out.reshape(-1), np.array(out.shape, dtype=np.intp), flats, tstrides, add)
    return out


def logsumexp0(a, weight=1.0):
    """``weight * log sum_{axis 0} exp(a / weight)``, safe for ``-inf`` (returns -inf, no NaN).

    Runs the compiled kernel ``_wmb.lse_axis0`` (no temporary the size of
    ``a``); ``a`` is not modified.
    """
    a = np.ascontiguousarray(a, dtype=np.float64)
    rest = a.shape[1:]
    n = int(np.prod(rest, dtype=np.int64))
    out = np.empty(n)
    _kernels.lse_axis0(a.reshape(a.shape[0], n), float(weight), out, np.empty(n))
    return out.reshape(rest)


def lse_all(a):
    """log-sum-exp of all entries of ``a`` (a Python float), -inf when all are -inf or ``a`` is empty."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    out = np.empty(1)
    _kernels.lse_axes(a.reshape(-1), np.array(a.shape, dtype=np.intp), np.ones(a.ndim, dtype=np.uint8),
                      1.0, out, np.empty(1))
    return float(out[0])


def lse_axes(a, axes):
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


def cond_inplace(F, lam, w, msg=None):
    """Turn a mini-bucket table into ``log b(x_k | rest) = (F - lam) / w`` (+ ``msg``) in place.

    Where ``lam`` is ``-inf`` (the whole slice is zero) the conditional is set
    uniform, so the proposal stays normalised there (f = 0 on such slices).
    ``msg`` (shape ``F.shape[1:]``), when given, is added to every ``x_k`` row
    (the backward pass's ``log b_parent``). ``F`` must be C-contiguous; one compiled
    pass (``_wmb.cond_add``).
    """
    if not F.flags.c_contiguous:
        raise ValueError("cond_inplace needs a C-contiguous table")
    card = F.shape[0]
    F2 = F.reshape(card, -1)  # a view: F is C-contiguous
    lam = np.ascontiguousarray(lam, dtype=np.float64).reshape(-1)
    m = _EMPTY if msg is None else np.ascontiguousarray(msg, dtype=np.float64).reshape(-1)
    _kernels.cond_add(F2, lam, float(w), m, math.log(card))
    return F



def backward_info(lm, lam, w):
    """The backward information ``nu = w * lm - lam`` of a mini-bucket (-inf where ``lm`` or
    ``lam`` is -inf), shape of ``lam``; one compiled pass (``_wmb.backward_info``)."""
    shape = np.shape(lam)  # (np.ascontiguousarray makes a 0-d array 1-d)
    out = np.empty(shape)
    _kernels.backward_info(np.ascontiguousarray(lm, dtype=np.float64).reshape(-1),
                           np.ascontiguousarray(lam, dtype=np.float64).reshape(-1), float(w), out.reshape(-1))
    return out


def match_stats(F, nu, lam, w, scope, common):
    """Marginal and entropy of a mini-bucket's belief for moment matching and the weight step.

    With ``log b = (F + nu) / w - z`` (``z`` normalises ``b`` over the whole table), returns
    ``(log_mu, H)``: ``log_mu`` the log marginal of ``b`` on the ``common`` variables (shape
    of those axes, in scope order; -inf where the slice is all zero) and ``H = -sum b * c``
    with ``c = (F - lam) / w`` the conditional ``log b(x_k | rest)``, over its finite entries
    (Liu & Ihler 2011, Sec. 4, Eq. 9). ``lam = None`` skips the entropy (``H = 0``). Returns ``None`` when
    ``b`` is zero everywhere. One compiled pair of passes (``_wmb.match_stats``): no
    temporary the size of ``F``.
    """
    card = F.shape[0]
    nd = F.ndim
    common = set(common)
    cax = [a for a in range(nd) if scope[a] in common]
    cshape = tuple(F.shape[a] for a in cax)
    cst = dict(zip(cax, strides(cshape).tolist()))
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
