"""The estimator of Eq. 13 and the Theorem 1 bounds of [1]_ over samples from changing
proposals, with the Markov lower bound of [2]_ while the Bernstein one is vacuous.

References
----------
.. [1] Lou, Dechter & Ihler (2017), "Dynamic Importance Sampling for Anytime Bounds of
   the Partition Function", NIPS. Eq. 13-14, Theorem 1.
.. [2] Gogate & Dechter (2011), "Sampling-based lower bounds for counting queries".
"""
from __future__ import annotations

import math
import warnings

import numpy as np

__all__ = ["ImportanceAccumulator"]

_NEG_INF = -math.inf
# relative slack allowed when checking f/q <= U (floating-point rounding of logs)
_BOUND_TOL = 1e-7


class ImportanceAccumulator:
    """Running Eq. 13 estimator and Theorem 1 bounds over samples with bounds U_i.

    Parameters
    ----------
    delta : float in (0, 1)
        Each of the lower and the upper bound fails with probability at most ``delta``.

    Notes
    -----
    With r_i = Zhat_i / U_i in [0, 1] the estimator is ``Zhat = sum r_i / sum 1/U_i``
    (Eq. 13) and the deviation term is
    ``Delta = HM(U) (sqrt(2 Var(r) ln(2/delta) / N) + 7 ln(2/delta) / (3 (N-1)))``
    (Eq. 14). Everything is stored in log space with a running scale so that weights
    like e^-200 do not underflow; the variance uses Welford/Chan updates.
    """

    def __init__(self, delta):
        delta = float(delta)
        if not (0.0 < delta < 1.0):
            raise ValueError(f"delta must be in (0, 1), got {delta!r}")
        self.delta = delta
        self.n = 0
        self._m = _NEG_INF  # log scale of the stored r values
        self._mean = 0.0  # mean of r / e^m
        self._m2 = 0.0  # sum of squared deviations of r / e^m
        self._log_sum_inv_u = _NEG_INF
        self.log_w_max = _NEG_INF
        self.n_bound_violations = 0
        self.lower_is_markov = True

    def add(self, log_w, log_U):
        """Add samples with log weights ``log_w`` (n,) and log weight bounds ``log_U``."""
        if np.ndim(log_w) == 0 or (np.size(log_w) == 1 and np.size(log_U) == 1):
            self._add_one(float(np.reshape(log_w, -1)[0]), float(np.reshape(log_U, -1)[0]))
            return
        log_w = np.atleast_1d(np.asarray(log_w, dtype=float))
        log_U = np.broadcast_to(np.asarray(log_U, dtype=float), log_w.shape)
        k = log_w.size
        if k == 0:
            return
        log_r = log_w - log_U
        bad = log_r > _BOUND_TOL * np.maximum(1.0, np.abs(log_U))
        if bad.any():
            self.n_bound_violations += int(bad.sum())
            warnings.warn(f"{int(bad.sum())} importance weight(s) exceed their bound U "
                          f"(max ln(w/U) = {float(log_r.max()):.3g}); the heuristic and the proposal "
                          "disagree", RuntimeWarning, stacklevel=2)
        log_r = np.minimum(log_r, 0.0)
        self.log_w_max = max(self.log_w_max, float(log_w.max()))
        self._log_sum_inv_u = float(np.logaddexp.reduce(np.append(-log_U, self._log_sum_inv_u)))
        new_m = max(self._m, float(log_r.max()))
        if new_m == _NEG_INF:  # all weights zero so far
            self.n += k
            return
        f = 0.0 if self._m == _NEG_INF else math.exp(self._m - new_m)
        mean_a, m2_a = self._mean * f, self._m2 * f * f
        y = np.exp(log_r - new_m)
        mean_b = float(y.mean())
        m2_b = float(((y - mean_b) ** 2).sum())
        n_a, n_tot = self.n, self.n + k
        d = mean_b - mean_a
        self._mean = mean_a + d * k / n_tot
        self._m2 = m2_a + m2_b + d * d * n_a * k / n_tot
        self._m = new_m
        self.n = n_tot

    def _add_one(self, log_w, log_U):
        """Scalar fast path of :meth:`add` (same arithmetic as a batch of one)."""
        log_r = log_w - log_U
        if log_r > _BOUND_TOL * max(1.0, abs(log_U)):
            self.n_bound_violations += 1
            warnings.warn(f"an importance weight exceeds its bound U (ln(w/U) = {log_r:.3g}); the "
                          "heuristic and the proposal disagree", RuntimeWarning, stacklevel=3)
        log_r = min(log_r, 0.0)
        if log_w > self.log_w_max:
            self.log_w_max = log_w
        a, b = self._log_sum_inv_u, -log_U
        if a == _NEG_INF:
            self._log_sum_inv_u = b
        else:
            hi, lo = (a, b) if a >= b else (b, a)
            self._log_sum_inv_u = hi + math.log1p(math.exp(lo - hi))
        new_m = max(self._m, log_r)
        if new_m == _NEG_INF:
            self.n += 1
            return
        f = 0.0 if self._m == _NEG_INF else math.exp(self._m - new_m)
        mean_a, m2_a = self._mean * f, self._m2 * f * f
        y = math.exp(log_r - new_m)
        n_a = self.n
        n_tot = n_a + 1
        d = y - mean_a
        self._mean = mean_a + d / n_tot
        self._m2 = m2_a + d * d * n_a / n_tot
        self._m = new_m
        self.n = n_tot

    _STATE = ("delta", "n", "_m", "_mean", "_m2", "_log_sum_inv_u", "log_w_max",
              "n_bound_violations", "lower_is_markov")

    def state_dict(self):
        """The running sums as a dict of Python numbers (JSON-safe with ``allow_nan``), for
        checkpoints; :meth:`from_state` restores an equal accumulator."""
        return {k: getattr(self, k) for k in self._STATE}

    @classmethod
    def from_state(cls, state):
        """Accumulator with the running sums of :meth:`state_dict`.

        Raises
        ------
        ValueError
            If a field is missing.
        """
        missing = [k for k in cls._STATE if k not in state]
        if missing:
            raise ValueError(f"accumulator state lacks {missing}")
        acc = cls(state["delta"])
        for k in cls._STATE[1:]:
            setattr(acc, k, type(getattr(acc, k))(state[k]))
        return acc

    @property
    def log_hm(self):
        """ln HM(U), the harmonic mean of the bounds (Eq. 13)."""
        return math.log(self.n) - self._log_sum_inv_u if self.n else math.inf

    @property
    def log_Z_hat(self):
        """ln Zhat of Eq. 13 (-inf before any positive weight)."""
        if self.n == 0 or self._m == _NEG_INF or self._mean <= 0:
            return _NEG_INF
        return self.log_hm + self._m + math.log(self._mean)

    def bounds(self, log_U_current=math.inf):
        """(ln lower, ln upper): Theorem 1 bounds, each holding with prob. >= 1 - delta.

        The lower bound is the Markov bound ``delta * Zhat`` while ``Zhat - Delta <= 0``;
        the upper bound is ``min(Zhat + Delta, U_current)``. Sets ``lower_is_markov``.
        """
        log_hat = self.log_Z_hat
        self.lower_is_markov = True
        if self.n < 2:
            lower = log_hat + math.log(self.delta) if log_hat > _NEG_INF else _NEG_INF
            return lower, float(log_U_current)
        L = math.log(2.0 / self.delta)
        n = self.n
        var_s = self._m2 / (n - 1)  # unbiased variance of r / e^m
        t1 = math.sqrt(max(2.0 * var_s * L / n, 0.0))
        t2 = 7.0 * L / (3.0 * (n - 1))
        log_dev = np.logaddexp(self._m + math.log(t1) if t1 > 0 else _NEG_INF, math.log(t2))
        A = self._m + math.log(self._mean) if self._mean > 0 and self._m > _NEG_INF else _NEG_INF
        upper = self.log_hm + float(np.logaddexp(A, log_dev))
        if A > log_dev:
            lower = self.log_hm + A + math.log1p(-math.exp(log_dev - A))
            self.lower_is_markov = False
        elif A > _NEG_INF:
            lower = self.log_hm + A + math.log(self.delta)  # Markov: P(Zhat >= Z/delta) <= delta
        else:
            lower = _NEG_INF
        return float(lower), float(min(upper, log_U_current))
