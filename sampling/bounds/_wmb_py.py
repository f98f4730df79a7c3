"""Pure-Python reference twin of ``_wmb.pyx`` (used by the tests, never as a silent fallback)."""
import numpy as np


def lse_axis0(table, weight, out, work):
    """``out[j] = weight * log(sum_i exp(table[i, j] / weight))``; -inf where a column is all -inf."""
    card, n = table.shape
    if out.shape[0] != n or work.shape[0] != n:
        raise ValueError(f"out and work must have length {n}; got {out.shape[0]} and {work.shape[0]}")
    for j in range(n):
        col = [table[i, j] for i in range(card)]
        m = max(col, default=-np.inf)
        if m == -np.inf:
            out[j] = -np.inf
            continue
        s = sum(np.exp((v - m) / weight) for v in col)
        out[j] = m + weight * np.log(s)
        work[j] = s
