# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled kernels of the weighted mini-bucket elimination (see ``wmb.py``).

``lse_axis0`` is the power-sum elimination of a mini-bucket variable,
``lambda = rho * log sum_{x_k} exp(F / rho)`` ([1] Eq. 5), over a table viewed
as ``(card_k, n_rest)``. Inputs are validated by the caller; the pure-Python
twin is ``_wmb_py.lse_axis0``.

[1] Q. Liu and A. Ihler, "Bounding the partition function using Hölder's
    inequality", ICML 2011.
"""
from libc.math cimport exp, log, INFINITY


def lse_axis0(const double[:, ::1] table,   # IN  (card, n): log values, -inf allowed
              double weight,                # IN  rho > 0
              double[::1] out,              # OUT (n,): rho * log sum_i exp(table[i, j] / rho)
              double[::1] work):            # INOUT (n,): scratch
    """``out[j] = weight * log(sum_i exp(table[i, j] / weight))``; -inf where a column is all -inf."""
    cdef Py_ssize_t card = table.shape[0], n = table.shape[1], i, j
    cdef double inv = 1.0 / weight, v, m
    if out.shape[0] != n or work.shape[0] != n:
        raise ValueError(f"out and work must have length {n}; got {out.shape[0]} and {work.shape[0]}")
    with nogil:
        for j in range(n):
            out[j] = -INFINITY
            work[j] = 0.0
        for i in range(card):
            for j in range(n):
                v = table[i, j]
                if v > out[j]:
                    out[j] = v
        for i in range(card):
            for j in range(n):
                m = out[j]
                if m > -INFINITY:
                    work[j] += exp((table[i, j] - m) * inv)
        for j in range(n):
            if out[j] > -INFINITY:
                out[j] = out[j] + weight * log(work[j])
