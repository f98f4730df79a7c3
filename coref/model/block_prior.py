"""Per-block prior odds of coreference: the block prior of :class:`coref.model.pairwise.PairwiseModel`.

Each block gets its own prior odds (``PairwiseModel(block_prior="pcc")``, the default).  The
logistic intercept is the log prior odds of a co-referent pair pooled over the training
blocks, but blocks differ: "Robert Schreiber" is one author, "Lei Wang" a hundred.  A block's
coreference rate is estimated from the model's own pair probabilities in that block (the
mean of sigmoid(f) over its pairs: probabilistic classify-and-count, Bella et al. 2010),
and f is shifted by the change of prior log-odds against the same mean over the training
blocks, the prior-shift correction of Saerens, Latinne & Decaestecker (2002, eq. 2.4; one
step of their EM, clipped to +-``block_prior_cap``)::

    f_b(x_i, x_j) = theta . phi + bias + d_b,   d_b = logit(r_b) - logit(r_train),
    r_b = mean over the block's pairs of sigmoid(theta . phi + bias).

When that first step lowers the prior (d_b < 0), the EM is run on to its fixed point
(:func:`em_block_rate`, at most :data:`PRIOR_EM_STEPS` steps, never below ``-cap``): in a
big block of many authors the coreference rate is tiny and the mean sigmoid is dominated by
the classifier's false positives, so one step stops far above the true rate (synthetic
blocks of 100-400 mentions: one step d_b = -1.2, the true logit change -4.2, the fixed point
-3.9), and the factors then merge strangers (B3 precision 0.79).  A first step that raises
the prior is kept as it is: iterated upwards, the EM runs away to the cap on blocks whose
pairs the model over-scores (a one-name block of many authors), the collapse this guards
against.  Measured: benchmarks/scripts/coref_no_collapse.py.

In a big block (the big-block weights of :mod:`coref.model.big_blocks`) the first step is
kept whichever way it goes (:data:`BIG_BLOCK_EM` False): there the rate is carried by a few
authors of hundreds to thousands of mentions, whose pairs the weights score lower than the
pairs of their training blocks (mean sigmoid over the same-author pairs: 0.85 on the
simulated training blocks, 0.76 / 0.68 / 0.71 on one-name blocks of 10,000 / 30,000 /
100,000 mentions), so the EM's further steps overshoot: the true log-odds change on those
blocks is -0.20 / -0.28 / -1.14, one step gives -0.24 / -0.42 / -0.97, the EM's fixed point
-0.30 / -0.56 / -1.45.  With one step, B3 F1 (racing, shipped model, seed 0) 0.9156 ->
0.9168 at 10,000, 0.8855 -> 0.8919 at 30,000 and 0.819 -> 0.852 at 100,000 mentions.

Every factor of the block (Gibbs, margins, confidence, explanations) uses ``bias + d_b``
(:meth:`PairwiseModel.block_bias`), so the Gibbs model stays the paper's pairwise model,
with a block-constant intercept.  Measured under the grouped k-fold protocol:
benchmarks/measured/coref_block_prior_2026-11-24.txt.

The rate r_b of a block is computed once per encoding and model state
(:func:`cached_block_rate`): Gibbs, the cluster margins, confidence and ``explain`` all
need the intercept of the same block.
"""
from __future__ import annotations

import functools
import math
import numbers
import weakref

import numpy as np
from scipy.special import expit, logit

from sampling.utils.kernels import load_kernel

_factors = load_kernel("coref.factors._factors")

__all__ = ["BIG_BLOCK_EM", "rate_pairs", "upper_pairs", "rate_scores", "pooled_rate", "cached_block_rate",
           "em_block_rate", "prior_shift", "shift_evals", "block_bias_evals", "block_shift_evals", "shifted_bias", "block_theta",
           "check_block_prior", "PRIOR_EM_STEPS"]

#: Run the EM on in big blocks too (False: their rate is the first step's, see the module docstring).
BIG_BLOCK_EM = False
#: Most EM steps of :func:`em_block_rate` after the first (each is one mean of sigmoids over
#: at most ``block_prior_pairs`` stored factors: no factor is evaluated again).
PRIOR_EM_STEPS = 100
#: The EM stops when the shift moves by less than this (natural-log odds).
PRIOR_EM_TOL = 1e-6

#: r_b of each live encoding, with the model state it was computed for: weak keys, so an
#: entry goes with its encoding and nothing rides along on the encoding itself.
_BLOCK_RATES = weakref.WeakKeyDictionary()


def check_block_prior(block_prior, cap, max_pairs, error):
    """Raise ``error(message)`` unless ``block_prior`` is "pcc" or "none", ``cap`` a finite
    number > 0 and ``max_pairs`` an integer >= 1."""
    if block_prior not in ("pcc", "none"):
        raise error(f"block_prior must be 'pcc' or 'none'; got {block_prior!r}")
    if not (isinstance(cap, numbers.Real) and not isinstance(cap, bool) and math.isfinite(cap) and cap > 0):
        raise error(f"block_prior_cap must be a finite number > 0; got {cap!r}")
    if not (isinstance(max_pairs, numbers.Integral) and not isinstance(max_pairs, bool) and max_pairs >= 1):
        raise error(f"block_prior_pairs must be an integer >= 1; got {max_pairs!r}")


def rate_pairs(n: int, max_pairs: int) -> tuple:
    """Pairs (i < j) over which a block's coreference rate is averaged, and their weight.

    All ``n (n - 1) / 2`` pairs when there are at most ``max_pairs``; otherwise
    ``max_pairs`` pairs drawn uniformly with replacement from a generator seeded by
    ``n`` (the same block gives the same pairs in every run and process).

    Returns
    -------
    I, J : ndarray of int64, shape (m,)
    weight : float
        Pairs of the block per pair returned (``n (n - 1) / 2 / m``; 0.0 when m = 0).
    """
    n = int(n)
    total = n * (n - 1) // 2
    if total == 0:
        e = np.zeros(0, np.int64)
        return e, e, 0.0
    if total <= max_pairs:
        a, b = upper_pairs(n)              # (read-only; the astype below returns copies)
    else:
        gen = np.random.default_rng(n)
        x = gen.integers(0, n, size=max_pairs)
        z = gen.integers(0, n - 1, size=max_pairs)
        z = z + (z >= x)                   # uniform over j != i
        a, b = np.minimum(x, z), np.maximum(x, z)
    return a.astype(np.int64), b.astype(np.int64), total / len(a)


#: Largest block size whose pair indices :func:`upper_pairs` keeps (all sizes up to it: 5.6 MB).
UPPER_PAIRS_CACHE_MAX_N = 128


def upper_pairs(n: int) -> tuple:
    """``numpy.triu_indices(n, 1)`` as int64 arrays; read-only (copy to change).

    Kept once per n up to :data:`UPPER_PAIRS_CACHE_MAX_N`: most blocks are that small, and
    there building the n x n mask of ``triu_indices`` for each block cost more than its pairs'
    factors (a tenth of the block prior's time on 1M synthetic mentions).
    """
    n = int(n)
    return _upper_pairs(n) if n <= UPPER_PAIRS_CACHE_MAX_N else _triu(n)


@functools.lru_cache(maxsize=None)
def _upper_pairs(n):
    return _triu(n)


def _triu(n):
    out = tuple(x.astype(np.int64) for x in np.triu_indices(n, 1))
    for x in out:
        x.flags.writeable = False
    return out


def rate_scores(encs, theta, max_pairs):
    """theta . phi (no intercept) over the :func:`rate_pairs` of the training blocks, and their weights.

    Parameters
    ----------
    encs : sequence of EncodedBlock
    theta : ndarray of shape (N_FEATURES,)
    max_pairs : int

    Returns
    -------
    z, w : ndarray of shape (m,)
        Scores (natural-log odds without the intercept) and the weight of each pair
        (pairs of its block per pair drawn).
    """
    z, w = [], []
    for enc in encs:
        I, J, wt = rate_pairs(enc.n, max_pairs)
        if len(I):
            out = np.empty(len(I))
            _factors.pair_factors(enc, theta, 0.0, I, J, out)
            z.append(out)
            w.append(np.full(len(I), wt))
    return (np.concatenate(z) if z else np.zeros(0)), (np.concatenate(w) if w else np.zeros(0))


def pooled_rate(z, w, bias):
    """r_train: the weighted mean of sigmoid(z + bias), clipped to [1e-12, 1 - 1e-12]; 0.5 without pairs."""
    if len(z) == 0:
        return 0.5
    r = float(np.sum(w * expit(z + bias)) / np.sum(w))
    return min(max(r, 1e-12), 1.0 - 1e-12)


def _clip_rate(r):
    return min(max(float(r), 1e-12), 1.0 - 1e-12)


def em_block_rate(f, r_train, cap, max_steps=PRIOR_EM_STEPS, tol=PRIOR_EM_TOL):
    """A block's coreference rate by the prior-shift EM of Saerens et al. (2002), run downwards only.

    Step 1 is probabilistic classify-and-count, r_1 = mean sigmoid(f), d_1 = logit(r_1) -
    logit(r_train).  If d_1 < 0, the steps d_{t+1} = logit(mean sigmoid(f + d_t)) -
    logit(r_train) follow (each lower than the last, since the map is increasing and
    d_1 < d_0 = 0) until the shift moves by less than ``tol``, reaches ``-cap`` or
    ``max_steps`` steps are done.  If d_1 >= 0 the first step is returned as is.

    Parameters
    ----------
    f : ndarray of float, shape (m,)
        The block's factors at the pooled intercept (natural-log odds).
    r_train : float in (0, 1)
        The pooled training rate.
    cap : float > 0
        ``block_prior_cap``: the EM stops at a shift of ``-cap``.
    max_steps : int >= 0, default :data:`PRIOR_EM_STEPS`
        Steps after the first (0 = classify-and-count only).
    tol : float >= 0, default :data:`PRIOR_EM_TOL`

    Returns
    -------
    float
        The rate r_b, clipped to [1e-12, 1 - 1e-12]; 0.5 without pairs.
    """
    f = np.asarray(f, dtype=np.float64)
    if len(f) == 0:
        return 0.5
    r = _clip_rate(np.mean(expit(f)))
    lr = float(logit(_clip_rate(r_train)))
    d = float(logit(r)) - lr
    if d >= 0.0:
        return r
    for _ in range(int(max_steps)):
        if d <= -cap:
            break
        r = _clip_rate(np.mean(expit(f + d)))
        d_new = float(logit(r)) - lr
        if abs(d_new - d) < tol:
            break
        d = d_new
    return r


def cached_block_rate(enc, key, rate_factors, r_train=None, cap=np.inf):
    """r_b of the block ``enc``, computed once per encoding and ``key`` (what the factors
    depend on: the model's theta, bias and pair budget), so a changed model never reads a
    stale value.

    Without ``r_train``: the mean of sigmoid(``rate_factors(enc)``), clipped to
    [1e-12, 1 - 1e-12] (one EM step).  With it: :func:`em_block_rate` of those factors.
    """
    full_key = (key, r_train, float(cap))
    memo = _BLOCK_RATES.get(enc)
    if memo is not None and memo[0] == full_key:
        return memo[1]
    f = rate_factors(enc)
    if r_train is None:
        r = _clip_rate(np.mean(expit(f)))
    else:
        r = em_block_rate(f, float(r_train), float(cap))
    _BLOCK_RATES[enc] = (full_key, r)
    return r


def prior_shift(r_block, r_train, cap):
    """d_b = logit(r_b) - logit(r_train), clipped to +-``cap`` (natural-log odds)."""
    cap = float(cap)
    return float(np.clip(logit(r_block) - logit(r_train), -cap, cap))


def shift_evals(n, max_pairs):
    """Pairwise factors the rate of a block of ``n`` mentions evaluates (0 below two mentions)."""
    if n < 2:
        return 0
    return min(n * (n - 1) // 2, int(max_pairs))


def block_bias_evals(model, enc) -> tuple:
    """The intercept of ``model``'s factors within the block ``enc``, and the factors its
    estimate evaluated (:func:`block_shift_evals` without the shift): ``(bias_, 0)`` for models
    without a block prior (e.g. test stand-ins)."""
    _, bias, evals = block_shift_evals(model, enc)
    return bias, evals


def block_shift_evals(model, enc) -> tuple:
    """The prior shift d_b of ``model``'s factors within the block ``enc`` (natural-log odds), the
    intercept it gives and the factors its estimate evaluated: ``(d_b, base + d_b, evals)``
    (``PairwiseModel.block_bias`` is that intercept); ``(0.0, bias_, 0)`` for models without
    :meth:`PairwiseModel.block_shift` (e.g. test stand-ins)."""
    f = getattr(model, "block_shift", None)
    if f is None:
        return 0.0, float(model.bias_), 0
    shift = float(f(enc))
    return shift, float(model.base_bias(enc) + shift), int(model.block_shift_evals(enc.n))


def shifted_bias(model, enc, shift) -> float:
    """The intercept of ``model``'s factors within the block ``enc`` at the prior shift ``shift``
    (natural-log odds): ``base_bias(enc) + shift`` (``bias_ + shift`` for models without it)."""
    f = getattr(model, "base_bias", None)
    return float((model.bias_ if f is None else f(enc)) + float(shift))


def block_theta(model, enc):
    """theta of ``model``'s factors within the block ``enc`` (``PairwiseModel.block_theta``: the
    big-block weights in a big block), float64 C-contiguous; ``theta_`` for models without it."""
    f = getattr(model, "block_theta", None)
    return np.ascontiguousarray(model.theta_ if f is None else f(enc), dtype=np.float64)
