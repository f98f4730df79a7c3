"""Running sums of importance weights masked by event indicators: the Eq. 13 sums of [1]_
for Z and any number of events Z_A at once, and the self-normalised bounds on P(A) = Z_A / Z.

References
----------
.. [1] Lou, Dechter & Ihler (2017), "Dynamic Importance Sampling for Anytime Bounds of the
   Partition Function", NIPS. Eq. 13-14, Theorem 1.
.. [2] Maurer & Pontil (2009), "Empirical Bernstein bounds and sample variance
   penalization", COLT, Theorem 4.
"""
from __future__ import annotations

import math

import numpy as np

from .estimator import ImportanceAccumulator

__all__ = ["WeightedColumnSums"]


class WeightedColumnSums:
    """Running Eq. 13 sums of the weights r = w / U masked by ``n_cols`` indicators at once
    (one scale for all), plus one more column (``z_col``) hit by every sample: Z itself.

    Parameters
    ----------
    n_cols : int
        Number of indicator columns (events).
    log_u : float
        ln U, the bound on every weight w = f / q (the WMB upper bound), unless a batch
        gives each sample its own bound U_i (``add(..., log_U=...)``: the bound U_S of the
        DIS search tree the sample was drawn from, Eq. 13); then r_i = w_i / U_i.

    Notes
    -----
    :meth:`accumulator` turns a column into an :class:`ImportanceAccumulator` state so that
    the Theorem 1 arithmetic on a single partition function is the accumulator's own;
    :meth:`self_normalised` bounds the ratio of a column to Z.
    """

    def __init__(self, n_cols, log_u):
        self.n_cols = int(n_cols)
        self.log_u = float(log_u)
        self.n, self.m = 0, -math.inf
        self.z_col = self.n_cols
        self.mean, self.m2 = np.zeros(self.n_cols + 1), np.zeros(self.n_cols + 1)
        self.log_sum_inv_u = -math.inf  # ln sum_i 1 / U_i (the harmonic mean of Eq. 13)
        self.log_u_min = self.log_u  # the tightest deterministic bound on ln Z known
        self.meta = {}

    def add(self, log_w, rows, cols, log_U=None):
        """Add a batch of samples.

        Parameters
        ----------
        log_w : ndarray of float, shape (k,)
            ln w of each sample.
        rows, cols : ndarray of int64, same shape
            Sample ``rows[t]`` hits column ``cols[t]`` (the non-zero entries of the
            batch's 0/1 indicator matrix; a pair may appear once only).
        log_U : ndarray of float, shape (k,), optional
            ln U_i, each sample's own bound (default: ``log_u`` for all).
        """
        k = int(log_w.shape[0])
        if k == 0:
            return
        log_U = np.full(k, self.log_u) if log_U is None else np.asarray(log_U, dtype=float)
        self.log_sum_inv_u = float(np.logaddexp.reduce(np.append(-log_U, self.log_sum_inv_u)))
        log_r = np.minimum(log_w - log_U, 0.0)  # a weight over U by rounding is clipped
        new_m = max(self.m, float(log_r.max(initial=-math.inf)))
        if new_m == -math.inf:
            self.n += k
            return
        f = 0.0 if self.m == -math.inf else math.exp(self.m - new_m)
        y = np.exp(log_r - new_m)
        yy = y[rows]
        s1 = np.append(np.bincount(cols, weights=yy, minlength=self.n_cols), y.sum())
        s2 = np.append(np.bincount(cols, weights=yy * yy, minlength=self.n_cols), (y * y).sum())
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
        ([2]_, Theorem 4; the one of Theorem 1 of [1]_) at ``delta`` on each side keeps p
        unless |mean(D)| > sqrt(2 V(p) ln(2/delta) / n) + 7 ln(2/delta) / (3 (n-1)), V(p)
        the sample variance of D; the kept p form the interval (test inversion: only the
        test at the true P_j must hold). Computed on a grid of p, refined by bisection.

        Returns
        -------
        (ndarray, ndarray, ndarray)
            Estimate (NaN before a positive weight), lower and upper bound per column.
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
        """The :class:`ImportanceAccumulator` of column ``j`` (``z_col``: Z itself)."""
        return ImportanceAccumulator.from_state({
            "delta": delta, "n": self.n, "_m": self.m, "_mean": float(self.mean[j]), "_m2": float(self.m2[j]),
            "_log_sum_inv_u": self.log_sum_inv_u,
            "log_w_max": -math.inf, "n_bound_violations": 0, "lower_is_markov": True})
