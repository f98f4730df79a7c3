"""Pure-Python reference twin of ``_wmb.pyx`` (used by the tests, never as a silent fallback).

Each function repeats the kernel's loops and floating-point operations in the same
order (``math.exp`` / ``math.log`` are the C library's), so the results are
bit-identical to the compiled kernels.
"""
import math

import numpy as np

_MAX_DIMS = 64


def lse_axis0(table, weight, out, work):
    """``out[j] = weight * log(sum_i exp(table[i, j] / weight))``; -inf where a column is all -inf."""
    card, n = table.shape
    if out.shape[0] != n or work.shape[0] != n:
        raise ValueError(f"out and work must have length {n}; got {out.shape[0]} and {work.shape[0]}")
    inv = 1.0 / weight
    if card in (2, 3):
        for j in range(n):
            a, b = float(table[0, j]), float(table[1, j])
            hi, lo = (a, b) if a > b else (b, a)
            if card == 3:
                c = float(table[2, j])
                hi, mid = (c, hi) if c > hi else (hi, c)
            if hi > -math.inf:
                e = math.exp((lo - hi) * inv)
                if card == 3:
                    e = e + math.exp((mid - hi) * inv)
                out[j] = hi + weight * math.log(1.0 + e)
                work[j] = e
            else:
                out[j] = -math.inf
                work[j] = 0.0
        return
    for j in range(n):
        col = [float(table[i, j]) for i in range(card)]
        m = -math.inf
        for v in col:
            if v > m:
                m = v
        s = 0.0
        if m > -math.inf:
            for v in col:
                s += math.exp((v - m) * inv)
        out[j] = m + weight * math.log(s) if m > -math.inf else -math.inf
        work[j] = s


def _merge_dims(shape, reduce):
    nd = len(shape)
    if len(reduce) != nd:
        raise ValueError(f"reduce must have one flag per axis ({nd}); got {len(reduce)}")
    if nd > _MAX_DIMS:
        raise ValueError(f"at most {_MAX_DIMS} axes are supported; got {nd}")
    total = 1
    lens, red = [], []
    for i in range(nd):
        if shape[i] < 0:
            raise ValueError(f"axis lengths must be >= 0; got {shape[i]} at axis {i}")
        total *= int(shape[i])
        if shape[i] == 1:
            continue
        r = bool(reduce[i])
        if lens and red[-1] == r:
            lens[-1] *= int(shape[i])
        else:
            lens.append(int(shape[i]))
            red.append(r)
    if not lens:
        lens, red = [1], [False]
    ostride = [0] * len(lens)
    s = 1
    for i in range(len(lens) - 1, -1, -1):
        if not red[i]:
            ostride[i] = s
            s *= lens[i]
    return lens, ostride, total, s


def _odometer(lens, strides):
    """Offsets (by the strides) of the outer multi-indices of ``lens[:-1]`` in C order."""
    d = len(lens)
    idx = [0] * d
    base = 0
    n_outer = math.prod(lens[:-1])
    for _ in range(n_outer):
        yield base
        k = d - 2
        while k >= 0:
            idx[k] += 1
            base += strides[k]
            if idx[k] < lens[k]:
                break
            base -= strides[k] * lens[k]
            idx[k] = 0
            k -= 1


def lse_axes(table, shape, reduce, weight, out, work):
    """``out = weight * log sum_{reduced axes} exp(table / weight)`` (kept axes in table order); -inf where all are -inf."""
    lens, ostride, total, nout = _merge_dims(list(shape), list(reduce))
    if table.shape[0] != total:
        raise ValueError(f"table must have {total} entries; got {table.shape[0]}")
    if out.shape[0] != nout or work.shape[0] != nout:
        raise ValueError(f"out and work must have length {nout}; got {out.shape[0]} and {work.shape[0]}")
    inv = 1.0 / weight
    t = [float(v) for v in table]
    o = [-math.inf] * nout
    w = [0.0] * nout
    if total:
        inner = lens[-1]
        inner_red = ostride[-1] == 0
        ib = 0
        for ob in _odometer(lens, ostride):
            if inner_red:
                o[ob] = max([o[ob]] + t[ib:ib + inner])
            else:
                for j in range(inner):
                    if t[ib + j] > o[ob + j]:
                        o[ob + j] = t[ib + j]
            ib += inner
        ib = 0
        for ob in _odometer(lens, ostride):
            if inner_red:
                m = o[ob]
                if m > -math.inf:
                    s = w[ob]
                    for j in range(inner):
                        s = s + math.exp((t[ib + j] - m) * inv)
                    w[ob] = s
            else:
                for j in range(inner):
                    m = o[ob + j]
                    if m > -math.inf:
                        w[ob + j] = w[ob + j] + math.exp((t[ib + j] - m) * inv)
            ib += inner
        for j in range(nout):
            if o[j] > -math.inf:
                o[j] = o[j] + weight * math.log(w[j])
    out[:] = o
    work[:] = w


def cond_add(table, lam, weight, msg, log_card):
    """``table[i, j] = (table[i, j] - lam[j]) / weight + msg[j]``, ``-log_card + msg[j]`` where ``lam[j]`` is -inf."""
    card, n = table.shape
    add = msg.shape[0] != 0
    if lam.shape[0] != n or (add and msg.shape[0] != n):
        raise ValueError(f"lam (and a non-empty msg) must have length {n}; got {lam.shape[0]} and {msg.shape[0]}")
    inv = 1.0 / weight
    for i in range(card):
        for j in range(n):
            if lam[j] > -math.inf:
                v = float(table[i, j]) - float(lam[j])
                if weight != 1.0:
                    v = v * inv
            else:
                v = -log_card
            if add:
                v = v + float(msg[j])
            table[i, j] = v


def match_stats(F, nu, lam, weight, omap, ostride0, mx, work, hw):
    """Moment-matching and entropy statistics of ``log b = (F + nu) / rho`` (see ``_wmb.match_stats``)."""
    card, n = F.shape
    nout = mx.shape[0]
    if nu.shape[0] != n or lam.shape[0] != n or omap.shape[0] != n:
        raise ValueError(f"nu, lam and omap must have length {n}; got {nu.shape[0]}, {lam.shape[0]} and {omap.shape[0]}")
    if work.shape[0] != nout or hw.shape[0] != nout:
        raise ValueError(f"mx, work and hw must have one length; got {nout}, {work.shape[0]} and {hw.shape[0]}")
    top = 0
    for j in range(n):
        if omap[j] < 0:
            raise ValueError(f"omap must be >= 0; got {omap[j]} at {j}")
        top = max(top, int(omap[j]))
    if card > 0 and n > 0 and (ostride0 < 0 or ostride0 * (card - 1) + top >= nout):
        raise ValueError(f"the marginal offsets reach {ostride0 * (card - 1) + top}; mx has {nout} entries")
    inv = 1.0 / weight
    m = [-math.inf] * nout
    w = [0.0] * nout
    h = [0.0] * nout
    for i in range(card):
        for j in range(n):
            v = (float(F[i, j]) + float(nu[j])) * inv
            o = i * ostride0 + int(omap[j])
            if v > m[o]:
                m[o] = v
    for i in range(card):
        for j in range(n):
            o = i * ostride0 + int(omap[j])
            mo = m[o]
            if mo > -math.inf:
                v = (float(F[i, j]) + float(nu[j])) * inv
                e = math.exp(v - mo)
                w[o] = w[o] + e
                c = (float(F[i, j]) - float(lam[j])) * inv
                if -math.inf < c < math.inf:
                    h[o] = h[o] + e * c
    mx[:] = m
    work[:] = w
    hw[:] = h


def broadcast_sum(out, shape, tables, tstrides, add):
    """``out[x] = (out[x] or 0.0) + tables[0][...] + tables[1][...] + ...`` in that order."""
    nd, nt = len(shape), len(tables)
    if nd > _MAX_DIMS:
        raise ValueError(f"at most {_MAX_DIMS} axes are supported; got {nd}")
    if tstrides.shape != (nt, nd):
        raise ValueError(f"tstrides must have shape ({nt}, {nd}); got ({tstrides.shape[0]}, {tstrides.shape[1]})")
    total = 1
    for i in range(nd):
        if shape[i] < 0:
            raise ValueError(f"axis lengths must be >= 0; got {shape[i]} at axis {i}")
        total *= int(shape[i])
    if out.shape[0] != total:
        raise ValueError(f"out must have {total} entries; got {out.shape[0]}")
    if total == 0:
        return
    for t in range(nt):
        span = 0
        for i in range(nd):
            if tstrides[t, i] < 0:
                raise ValueError(f"strides must be >= 0; got {tstrides[t, i]} for table {t} at axis {i}")
            span += (int(shape[i]) - 1) * int(tstrides[t, i])
        if span >= tables[t].shape[0]:
            raise ValueError(f"table {t} has {tables[t].shape[0]} entries; its strides reach entry {span}")
    idx = [0] * nd
    for o in range(total):
        v = float(out[o]) if add else 0.0
        for t in range(nt):
            v = v + float(tables[t][sum(idx[a] * int(tstrides[t, a]) for a in range(nd))])
        out[o] = v
        k = nd - 1
        while k >= 0:
            idx[k] += 1
            if idx[k] < shape[k]:
                break
            idx[k] = 0
            k -= 1


def backward_info(lm, lam, weight, out):
    """``out[j] = weight * lm[j] - lam[j]``, -inf where ``lm[j]`` or ``lam[j]`` is -inf."""
    n = lm.shape[0]
    if lam.shape[0] != n or out.shape[0] != n:
        raise ValueError(f"lam and out must have length {n}; got {lam.shape[0]} and {out.shape[0]}")
    for j in range(n):
        if lm[j] > -math.inf and lam[j] > -math.inf:
            out[j] = weight * float(lm[j]) - float(lam[j])
        else:
            out[j] = -math.inf
