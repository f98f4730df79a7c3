"""Pure-Python (NumPy) reference twin of :mod:`sampling.arch._loglik`; used by tests only.

Same signatures and the same in-place outputs as the Cython kernels.
"""
import numpy as np


def _s(r2, alpha, idx):
    q = alpha.shape[0] - 1
    s = np.full(idx.shape[0], alpha[0], dtype=float)
    for i in range(1, q + 1):
        s += alpha[i] * r2[idx - i]
    return s


def variances(r2, alpha, idx, out):
    out[:] = _s(r2, alpha, idx)


def loglik_terms(r, r2, alpha, nu, c0, idx, out):
    a, k = nu - 2.0, 0.5 * (nu + 1.0)
    s = _s(r2, alpha, idx)
    g = a * s + r2[idx]
    out[:] = c0 + k * np.log(a) + (k - 0.5) * np.log(s) - k * np.log(g)


def loglik_grad(r, r2, alpha, nu, c0, dc0, idx, out, grad):
    q = alpha.shape[0] - 1
    a, k = nu - 2.0, 0.5 * (nu + 1.0)
    s = _s(r2, alpha, idx)
    g = a * s + r2[idx]
    out[:] = c0 + k * np.log(a) + (k - 0.5) * np.log(s) - k * np.log(g)
    fs = (k - 0.5) / s - k * a / g
    grad[0] = fs.sum()
    for i in range(1, q + 1):
        grad[i] = np.dot(fs, r2[idx - i])
    grad[q + 1] = np.sum(dc0 - 0.5 * np.log(g / (a * s)) + k * r2[idx] / (a * g))


def loglik_cv_terms(r, r2, alpha, nu, c0, idx, bin_of, ref_r, ref_s, coef, out, out_h):
    loglik_terms(r, r2, alpha, nu, c0, idx, out)
    s = _s(r2, alpha, idx)
    b = bin_of[idx]
    dr = r[idx] - ref_r[b]
    ds = s - ref_s[b]
    c = coef[b]
    out_h[:] = (c[:, 0] + c[:, 1] * dr + c[:, 2] * ds + 0.5 * c[:, 3] * dr * dr
                + c[:, 4] * dr * ds + 0.5 * c[:, 5] * ds * ds)
