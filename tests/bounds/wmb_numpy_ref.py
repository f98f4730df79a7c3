"""The NumPy versions of the WMB table helpers that the compiled kernels of
``sampling/bounds/_wmb.pyx`` replaced: the reference the tests compare the kernels with
(to 1e-12) and the baseline of ``benchmarks/bench_wmb_build.py``. Not part of the package.

Each ``X_numpy`` here computes what ``sampling.bounds._tables.X`` computes.
"""
import math

import numpy as np


def broadcast_sum_numpy(out_scope, out_shape, tables, out=None):
    """NumPy version of :func:`_broadcast_sum` (tests, benchmarks)."""
    pos = {v: i for i, v in enumerate(out_scope)}
    if out is None:
        out = np.zeros(out_shape, dtype=np.float64)
    nd = len(out_scope)
    for scope, arr in tables:
        if len(scope) == 0:
            out += float(arr)
            continue
        axes = [pos[v] for v in scope]
        perm = np.argsort(axes)
        a = np.transpose(arr, perm) if not np.all(perm[:-1] < perm[1:]) else arr
        sorted_axes = [axes[i] for i in perm]
        shp = [1] * nd
        for ax, ln in zip(sorted_axes, a.shape):
            shp[ax] = ln
        out += a.reshape(shp)
    return out

def logsumexp0_numpy(a, weight=1.0):
    """NumPy version of :func:`_logsumexp0` (one temporary the size of ``a``)."""
    m = a.max(axis=0)
    finite = np.isfinite(m)
    ms = np.where(finite, m, 0.0)
    t = np.subtract(a, ms)
    if weight != 1.0:
        t *= 1.0 / weight
    np.exp(t, out=t)
    s = t.sum(axis=0)
    del t
    with np.errstate(divide="ignore"):
        s = np.log(s)
    if weight != 1.0:
        s *= weight
    return np.where(finite, s + ms, -np.inf)

def lse_axes_numpy(a, axes):
    """NumPy version of :func:`_lse_axes` (several temporaries the size of ``a``; tests, benchmarks)."""
    if not axes:
        return a
    m = a.max(axis=axes, keepdims=True)
    ms = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        s = np.log(np.exp(a - ms).sum(axis=axes, keepdims=True))
    out = np.where(np.isfinite(m), s + ms, -np.inf)
    return np.squeeze(out, axis=axes)

def lse_all_numpy(a):
    """NumPy version of :func:`_lse_all` (tests, benchmarks)."""
    m = a.max() if a.size else -np.inf
    if not np.isfinite(m):
        return -np.inf
    return float(m + np.log(np.exp(a - m).sum()))

def cond_inplace_numpy(F, lam, w, msg=None):
    """NumPy version of :func:`_cond_inplace` (tests, benchmarks)."""
    with np.errstate(invalid="ignore"):
        F -= lam[None]
    if w != 1.0:
        F *= 1.0 / w
    bad = ~np.isfinite(np.ravel(lam))
    if bad.any():
        F2 = F.reshape(F.shape[0], -1)  # a view: F is C-contiguous
        F2[:, bad] = -math.log(F.shape[0])
    if msg is not None:
        F += msg[None]
    return F

def backward_info_numpy(lm, lam, w):
    """NumPy version of :func:`_backward_info` (tests, benchmarks)."""
    ok = np.isfinite(lm) & np.isfinite(lam)
    return np.where(ok, w * np.where(ok, lm, 0.0) - np.where(ok, lam, 0.0), -np.inf)

def match_stats_numpy(F, nu, lam, w, scope, common):
    """NumPy version of :func:`_match_stats` (the code it replaced; tests, benchmarks).

    As before, when no axis is summed out ``log_mu`` aliases the table that ``exp`` then
    overwrites; a WMB never gets there (no mini-bucket's scope lies inside all the others
    of its bucket: the partition would have merged it).
    """
    logb = np.add(F, nu[None])
    logb *= 1.0 / w
    z = lse_all_numpy(logb)
    if not np.isfinite(z):
        return None
    logb -= z
    common = set(common)
    logmu = lse_axes_numpy(logb, tuple(i for i, u in enumerate(scope) if u not in common))
    if lam is None:
        return logmu, 0.0
    with np.errstate(invalid="ignore"):
        cond = (F - lam[None]) / w
    b = np.exp(logb, out=logb)
    fin = np.isfinite(cond)
    return logmu, float(-np.sum(b[fin] * cond[fin]))
