"""Pairwise coreference model f_theta(x_i, x_j) = theta . phi(x_i, x_j) + b.

theta and b are fitted with scikit-learn's logistic regression on labeled pairs of
mentions of the same block (Chen & Ghahramani 2016, Sec. 5.3; Singh et al. 2012),
so f_theta is the log-odds (natural log) that the two mentions co-refer.  The
phi features are listed in :mod:`coref.features`.

``objective="pseudolik"`` refits (theta, b), warm-started from the logistic fit, for the
clustering model the Gibbs sampler actually uses: maximum pseudo-likelihood (Besag 1975)
of the single-mention Gibbs conditionals on the gold clusterings of the training blocks,
optionally combined with the cluster-merge conditionals (composite likelihood) and the
pairwise logistic loss (:mod:`coref._pseudolik`); f stays theta . phi + b, a log-linear
factor fitted on labeled within-block data.  It is opt-in: measured under the grouped
k-fold protocol on the four shipped sets it did not beat the logistic theta
(benchmarks/measured/coref_accuracy_pseudolik_2026-11-24.txt).

A pure sum of pairwise log-odds over a big cluster can over- or under-merge, so
the fitted intercept may be shifted by ``bias_shift``; ``bias_shift="auto"``
chooses it on the TRAINING blocks only, by running short exact annealed Gibbs for
each value of ``shift_grid`` and keeping the one with the best training B3 F1
(factors computed from a theta cross-fitted over training-block folds, so that
the shift is tuned on blocks the theta did not see).

Each block also gets its own prior odds (``block_prior="pcc"``, the default).  The
logistic intercept is the log prior odds of a co-referent pair pooled over the training
blocks, but blocks differ: "Robert Schreiber" is one author, "Lei Wang" a hundred.  A block's
coreference rate is estimated from the model's own pair probabilities in that block (the
mean of sigmoid(f) over its pairs: probabilistic classify-and-count, Bella et al. 2010),
and f is shifted by the change of prior log-odds against the same mean over the training
blocks, the prior-shift correction of Saerens, Latinne & Decaestecker (2002, eq. 2.4; one
step of their EM, clipped to +-``block_prior_cap``)::

    f_b(x_i, x_j) = theta . phi + bias + d_b,   d_b = logit(r_b) - logit(r_train),
    r_b = mean over the block's pairs of sigmoid(theta . phi + bias).

Every factor of the block (Gibbs, margins, confidence, explanations) uses ``bias + d_b``
(:meth:`PairwiseModel.block_bias`), so the Gibbs model stays the paper's pairwise model,
with a block-constant intercept.  Measured under the grouped k-fold protocol:
benchmarks/measured/coref_block_prior_2026-11-24.txt.

Saved model format (:func:`save_model` / :func:`load_model`), a directory of three
files, none of them executable::

    model.json     {"format": "coref-pairwise-model", "version": 1, "coref_version": str,
                    "feature_names": [str, ...]        # the phi layout theta was fitted on
                    "params": {C, max_pairs_per_block, class_weight, bias_shift, shift_grid,
                               shift_tol, tune_sweeps, tune_max_blocks, rng,
                               objective, pl_C, pl_max_anchors, pl_alone, pl_pair_C,
                               pl_merge_C,    # the last six optional (absent: a logistic
                                              # theta, "logistic", 1.0, 400, false, 0, 0)
                               block_prior, block_prior_cap, block_prior_pairs},
                                              # optional (absent: "none", a model saved
                                              # before block priors)
                    "intercept": float, "shift": float, "bias": float, "n_pairs": int,
                    "pair_rate": float,               # r_train in (0, 1); with block_prior "pcc"
                    "shift_scores": {str(shift): float},
                    "vocabulary": {"n_docs": int, "tables": {"title"|"venue"|"affiliation": {word: int}}},
                    "extra": {...},                    # e.g. AuthorCoref settings, training data summary
                    "calibration": {...}}              # optional (``coref fit``): the confidence
                                                       # calibration maps, see below
    theta.npz      float64 array "theta" of shape (len(feature_names),), and the long numeric
                   lists of the vocabulary state (e.g. LSA components) as arrays "state_<k>",
                   referenced from model.json as {"$npz": "state_<k>"}
    manifest.json  {"format": "coref-model-manifest", "version": 1,
                    "files": {"model.json": sha256, "theta.npz": sha256}}

:func:`load_model` checks the manifest's format and version, the SHA-256 of every file,
The optional ``calibration`` field (written when ``model.calibration_`` is set, e.g.
by ``coref fit``) is :meth:`coref._calibration.ConfidenceCalibration.to_dict`:
``{"version": 1, "pair": MAP, "mention": MAP, "info": {str: scalar}}`` with MAP =
``{"method": "isotonic"|"temperature"|"identity", "temperature": float > 0,
"x": [float], "y": [float]}`` (isotonic knots, non-decreasing in [0, 1]); it is
validated field by field on load (a model without it loads with
``calibration_ = None``: the format version is unchanged).

:func:`load_model` checks the manifest's format and version, the SHA-256 of every file,
the model version, that ``feature_names`` equals this code's
``coref.features.FEATURE_NAMES``, the shape and finiteness of theta and every field's
type, and raises :class:`ModelFormatError` naming the file otherwise. The npz is read
with ``allow_pickle=False``.
"""
from __future__ import annotations

import hashlib
import json
import math
import numbers
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from coref.evaluate import b3
from coref.exceptions import ModelFormatError
from coref.features import FEATURE_NAMES, N_FEATURES, EncodedBlock, Vocabulary, encode_mentions
from sampling.utils.kernels import load_kernel
from sampling.utils.rng import as_generator

_factors = load_kernel("coref._factors")

__all__ = ["PairwiseModel", "labeled_pairs", "save_model", "load_model", "MODEL_FORMAT", "MODEL_VERSION"]

MODEL_FORMAT = "coref-pairwise-model"
MODEL_VERSION = 1
_MANIFEST_FORMAT = "coref-model-manifest"
_FILES = ("model.json", "theta.npz")


def labeled_pairs(enc: EncodedBlock, gold: np.ndarray, *, max_pairs: int, rng) -> tuple:
    """Pairs (i < j) of labeled mentions of one block and their same-entity flags.

    All pairs if there are at most ``max_pairs``, else a uniform sample of
    ``max_pairs`` distinct pairs.  ``gold`` is an object array with None for
    unlabeled mentions.

    Returns
    -------
    I, J : ndarray of int64, shape (m,)
    y : ndarray of int8, shape (m,)
    """
    lab = np.flatnonzero(np.array([g is not None for g in gold], dtype=bool))
    k = lab.shape[0]
    n_all = k * (k - 1) // 2
    if n_all == 0:
        e = np.zeros(0, np.int64)
        return e, e, np.zeros(0, np.int8)
    if n_all <= max_pairs:
        a, b = np.triu_indices(k, 1)
    else:
        a = np.empty(0, np.int64)
        b = np.empty(0, np.int64)
        while len(a) < max_pairs:
            x = rng.integers(0, k, size=2 * max_pairs)
            z = rng.integers(0, k, size=2 * max_pairs)
            keep = x != z
            lo, hi = np.minimum(x, z)[keep], np.maximum(x, z)[keep]
            code = np.concatenate([a * k + b, lo * k + hi])
            _, first = np.unique(code, return_index=True)
            first = np.sort(first)[:max_pairs]
            code = code[first]
            a, b = code // k, code % k
    I = lab[a].astype(np.int64)
    J = lab[b].astype(np.int64)
    g = np.asarray(gold, dtype=object)
    y = np.array([g[i] == g[j] for i, j in zip(I, J)], dtype=np.int8)
    return I, J, y


class PairwiseModel:
    """Logistic-regression pairwise factor for author coreference.

    Parameters
    ----------
    C : float, default 0.1
        Inverse L2 regularisation strength of ``LogisticRegression`` (on
        standardised features).
    max_pairs_per_block : int, default 3000
        Labeled pairs used per training block (uniform subsample of bigger blocks;
        keeps the block's share of co-referent pairs, so f stays a log-odds).
    class_weight : None or "balanced", default None
        Passed to ``LogisticRegression``; ``None`` keeps the log-odds calibrated.
    bias_shift : float or "auto", default "auto"
        Added to the fitted intercept. ``"auto"``: tuned on the training blocks
        (see module docstring).
    shift_grid : sequence of float
        Candidate shifts for ``bias_shift="auto"``.
    shift_tol : float, default 0.005
        With ``"auto"``, the smallest |shift| whose training B3 F1 is within
        ``shift_tol`` of the best is chosen.
    tune_sweeps : int, default 12
        Exact Gibbs sweeps per candidate shift when tuning.
    tune_max_blocks : int, default 40
        At most this many training blocks are used to tune the shift.
    rng : None, int or numpy.random.Generator, default 0
        Pair subsampling and tuning randomness.
    objective : {"logistic", "pseudolik"}, default "logistic"
        ``"logistic"``: theta and b by logistic regression on labeled pairs.
        ``"pseudolik"``: then refitted, warm-started from the logistic fit, by maximum
        pseudo-likelihood of the clustering model the Gibbs sampler uses, on the gold
        clusterings of the training blocks (:mod:`coref._pseudolik`; Besag 1975).
    pl_C : float > 0, default 1.0
        Inverse L2 strength of the pseudo-likelihood fit (standardised features).
    pl_max_anchors : int >= 1, default 400
        Pseudo-likelihood anchors per block (seeded uniform subsample of bigger blocks'
        labeled mentions; the candidate sums stay over every labeled member).
    pl_alone : bool, default False
        Also fit the conditional of each mention in its block without its gold cluster
        mates ("new cluster" against the other gold clusters).
    pl_pair_C : float >= 0, default 0
        Weight of the pairwise logistic loss added to the pseudo-likelihood objective
        (0: pure pseudo-likelihood).
    pl_merge_C : float >= 0, default 0
        Weight of the cluster-merge conditionals (two gold clusters stay apart, two
        halves of one merge; :func:`coref._pseudolik.block_candidates`).
    block_prior : {"pcc", "none"}, default "pcc"
        ``"pcc"``: each block's factors get the intercept ``bias_ + d_b`` (module
        docstring; :meth:`block_bias`). ``"none"``: ``bias_`` everywhere.
    block_prior_cap : float > 0, default 3.0
        |d_b| is clipped to this (natural-log odds).
    block_prior_pairs : int >= 1, default 20000
        At most this many pairs per block estimate its rate (:func:`rate_pairs`).

    Attributes
    ----------
    theta_ : ndarray of shape (N_FEATURES,)
    bias_ : float
        Intercept including the shift: f = theta_ . phi + bias_.
    intercept_ : float
        The logistic-regression intercept (without the shift).
    shift_ : float
    vocabulary_ : Vocabulary
    n_pairs_ : int
        Pairs the regression was fitted on.
    shift_scores_ : dict of float -> float
        Training B3 F1 per candidate shift (only with ``bias_shift="auto"``).
    feature_names_ : tuple of str
    pl_info_ : dict
        With ``objective="pseudolik"``: -PL before / after, anchors, candidates and
        L-BFGS iterations (:func:`coref._pseudolik.fit_pseudolik`); else empty.
    pair_rate_ : float in (0, 1)
        r_train: mean of sigmoid(theta_ . phi + bias_) over the pairs of the training
        blocks (all their mentions, labeled or not; pooled over pairs, big blocks
        subsampled and reweighted), the reference of the block prior.
    """

    def __init__(self, *, C=0.1, max_pairs_per_block=3000, class_weight=None,
                 bias_shift="auto", shift_grid=(0.0, 0.5, 1.0),
                 shift_tol=0.005, tune_sweeps=12, tune_max_blocks=40, rng=0,
                 objective="logistic", pl_C=1.0, pl_max_anchors=400, pl_alone=False, pl_pair_C=0.0,
                 pl_merge_C=0.0, block_prior="pcc", block_prior_cap=3.0, block_prior_pairs=20000):
        self.block_prior = block_prior
        self.block_prior_cap = block_prior_cap
        self.block_prior_pairs = block_prior_pairs
        self.objective = objective
        self.pl_merge_C = pl_merge_C
        self.pl_pair_C = pl_pair_C
        self.pl_alone = pl_alone
        self.pl_C = pl_C
        self.pl_max_anchors = pl_max_anchors
        self.C = C
        self.max_pairs_per_block = max_pairs_per_block
        self.class_weight = class_weight
        self.bias_shift = bias_shift
        self.shift_grid = shift_grid
        self.shift_tol = shift_tol
        self.tune_sweeps = tune_sweeps
        self.tune_max_blocks = tune_max_blocks
        self.rng = rng

    # ------------------------------------------------------------------ fitting
    def _check_df(self, df, *, need_gold):
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"df must be a pandas DataFrame; got {type(df).__name__} instead")
        from coref.io import MENTION_COLUMNS

        cols = [c for c in MENTION_COLUMNS if c != "gold" or need_gold]
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise ValueError(f"df is missing the mention column(s) {missing}")

    def _pairs(self, df, vocab, gen, encs=None):
        feats, ys = [], []
        for _, sub in df.groupby("block", sort=True):
            gold = np.array([None if pd.isna(g) else str(g) for g in sub["gold"]], dtype=object)
            enc = encode_mentions(sub, vocab)
            if encs is not None:
                encs.append(enc)
            I, J, y = labeled_pairs(enc, gold, max_pairs=int(self.max_pairs_per_block), rng=gen)
            if len(I) == 0:
                continue
            phi = np.empty((len(I), N_FEATURES))
            _factors.pair_features(enc, I, J, phi)
            feats.append(phi)
            ys.append(y)
        if not feats:
            raise ValueError("df has no block with two labeled mentions; cannot fit theta")
        return np.vstack(feats), np.concatenate(ys)

    def _regress(self, X, y):
        from sklearn.linear_model import LogisticRegression

        if np.unique(y).shape[0] < 2:
            raise ValueError("the labeled pairs are all of one class; cannot fit theta")
        mu = X.mean(axis=0)
        sd = X.std(axis=0)
        sd[sd < 1e-6] = 1.0  # (near-)constant features: no scaling, avoids huge theta
        lr = LogisticRegression(C=float(self.C), class_weight=self.class_weight, max_iter=2000)
        lr.fit((X - mu) / sd, y)
        theta = lr.coef_[0] / sd
        b = float(lr.intercept_[0] - np.sum(lr.coef_[0] * mu / sd))
        self._moments = (mu, sd)
        return np.ascontiguousarray(theta, dtype=np.float64), b

    def _pseudolik(self, df, gen, X, y):
        """Refit (theta_, intercept_) by maximum pseudo-likelihood on the gold clusterings."""
        from coref._pseudolik import fit_pseudolik, pl_data

        blocks = []
        for _, sub in df.groupby("block", sort=True):
            gold = np.array([None if pd.isna(g) else str(g) for g in sub["gold"]], dtype=object)
            if sum(g is not None for g in gold) >= 2:
                blocks.append((encode_mentions(sub, self.vocabulary_), gold))
        data = pl_data(blocks, lambda enc, I, J: self.pair_features(enc, I, J), N_FEATURES,
                       max_anchors=int(self.pl_max_anchors), rng=gen, alone=bool(self.pl_alone),
                       merges=float(self.pl_merge_C) > 0)
        mu, sd = self._moments
        theta, b, info = fit_pseudolik(data, theta0=self.theta_, b0=self.intercept_, C=float(self.pl_C),
                                       mu=mu, sd=sd, pairs=(X, y), C_pairs=float(self.pl_pair_C),
                                       C_merge=float(self.pl_merge_C))
        self.theta_, self.intercept_ = theta, b
        self.pl_info_ = info

    def fit(self, df: pd.DataFrame) -> "PairwiseModel":
        """Fit theta (and the shift) on the labeled mentions of ``df``.

        Parameters
        ----------
        df : pandas.DataFrame
            Mentions with gold labels (``gold``; NA = unlabeled, ignored), one or
            several blocks.

        Returns
        -------
        self

        Raises
        ------
        TypeError
            If ``df`` is not a DataFrame.
        ValueError
            If columns are missing, no block holds two labeled mentions, the pairs
            are all of one class, or ``bias_shift`` is neither a number nor "auto".
        """
        self._check_df(df, need_gold=True)
        if not (self.bias_shift == "auto" or isinstance(self.bias_shift, (int, float))):
            raise ValueError(f"bias_shift must be a number or 'auto'; got {self.bias_shift!r}")
        if self.objective not in ("logistic", "pseudolik"):
            raise ValueError(f"objective must be 'logistic' or 'pseudolik'; got {self.objective!r}")
        if not (isinstance(self.pl_C, numbers.Real) and float(self.pl_C) > 0):
            raise ValueError(f"pl_C must be a number > 0; got {self.pl_C!r}")
        if not (isinstance(self.pl_max_anchors, numbers.Integral) and int(self.pl_max_anchors) >= 1):
            raise ValueError(f"pl_max_anchors must be an integer >= 1; got {self.pl_max_anchors!r}")
        for k in ("pl_pair_C", "pl_merge_C"):
            v = getattr(self, k)
            if not (isinstance(v, numbers.Real) and not isinstance(v, bool) and float(v) >= 0):
                raise ValueError(f"{k} must be a number >= 0; got {v!r}")
        self._check_block_prior(ValueError)
        gen = as_generator(self.rng)
        self.vocabulary_ = Vocabulary.fit(df)
        encs = []
        X, y = self._pairs(df, self.vocabulary_, gen, encs)
        self.theta_, self.intercept_ = self._regress(X, y)
        self.pl_info_ = {}
        if self.objective == "pseudolik":
            self._pseudolik(df, gen, X, y)
        self.n_pairs_ = int(len(y))
        self.feature_names_ = FEATURE_NAMES
        self._rate_scores(encs)
        if self.bias_shift == "auto":
            self.shift_, self.shift_scores_ = self._tune_shift(df, gen)
        else:
            self.shift_ = float(self.bias_shift)
            self.shift_scores_ = {}
        self._set_bias(float(self.intercept_ + self.shift_))
        return self

    def _check_block_prior(self, error):
        if self.block_prior not in ("pcc", "none"):
            raise error(f"block_prior must be 'pcc' or 'none'; got {self.block_prior!r}")
        cap = self.block_prior_cap
        if not (isinstance(cap, numbers.Real) and not isinstance(cap, bool) and math.isfinite(cap) and cap > 0):
            raise error(f"block_prior_cap must be a finite number > 0; got {cap!r}")
        m = self.block_prior_pairs
        if not (isinstance(m, numbers.Integral) and not isinstance(m, bool) and m >= 1):
            raise error(f"block_prior_pairs must be an integer >= 1; got {m!r}")

    def _rate_scores(self, encs):
        """theta . phi (no intercept) and the weight of the rate pairs of the training blocks."""
        z, w = [], []
        for enc in encs:
            I, J, wt = rate_pairs(enc.n, int(self.block_prior_pairs))
            if len(I):
                out = np.empty(len(I))
                _factors.pair_factors(enc, self.theta_, 0.0, I, J, out)
                z.append(out)
                w.append(np.full(len(I), wt))
        self._rate_z = np.concatenate(z) if z else np.zeros(0)
        self._rate_w = np.concatenate(w) if w else np.zeros(0)

    def _set_bias(self, bias):
        """Set ``bias_`` and the reference rate ``pair_rate_`` it implies on the training pairs."""
        from scipy.special import expit

        self.bias_ = float(bias)
        if len(self._rate_z) == 0:
            self.pair_rate_ = 0.5
        else:
            r = float(np.sum(self._rate_w * expit(self._rate_z + self.bias_)) / np.sum(self._rate_w))
            self.pair_rate_ = min(max(r, 1e-12), 1.0 - 1e-12)

    def _tune_shift(self, df, gen):
        """Pick the shift with the best B3 F1 on (cross-fitted) training blocks."""
        from coref.gibbs import FACTOR_CACHE_MB, GibbsCoref
        from coref.inference import encode_blocks

        # only blocks with two labeled mentions can train a theta or score a shift: an
        # inner split over all blocks could leave a half with nothing to fit on
        n_lab = df["gold"].notna().groupby(df["block"]).sum()
        blocks = np.array(sorted(n_lab.index[n_lab.to_numpy() >= 2]))
        if len(blocks) < 4:
            return 0.0, {}
        perm = gen.permutation(len(blocks))
        n_fold = 2
        scores = {float(s): [] for s in self.shift_grid}
        chosen = set(blocks[perm[: int(self.tune_max_blocks)]])
        for k in range(n_fold):
            test_b = set(blocks[perm[k::n_fold]])
            train = df[df["block"].isin(set(blocks) - test_b)]
            test = df[df["block"].isin(test_b & chosen)]
            test = test[test["gold"].notna()]
            if len(test) == 0:
                continue
            sub = PairwiseModel(C=self.C, max_pairs_per_block=self.max_pairs_per_block,
                                class_weight=self.class_weight, bias_shift=0.0,
                                rng=gen, objective=self.objective, pl_C=self.pl_C,
                                pl_max_anchors=self.pl_max_anchors, pl_alone=self.pl_alone,
                                pl_pair_C=self.pl_pair_C, pl_merge_C=self.pl_merge_C,
                                block_prior=self.block_prior, block_prior_cap=self.block_prior_cap,
                                block_prior_pairs=self.block_prior_pairs)
            sub.fit(train)
            # each test block encoded once for all shifts (a shift moves the bias only)
            pre = encode_blocks(sub, test)
            for s in self.shift_grid:
                sub._set_bias(float(sub.intercept_ + s))
                sub.shift_ = float(s)
                g = GibbsCoref(pre, sampler="exact", n_sweeps=int(self.tune_sweeps),
                               rng=0, record_history=False,
                               factor_cache_mb=FACTOR_CACHE_MB).fit(test)
                f1 = b3(g.clusters_, test.set_index("mention_id")["gold"]).f1
                scores[float(s)].append((len(test), f1))
        avg = {s: (sum(n * f for n, f in v) / sum(n for n, _ in v) if v else 0.0)
               for s, v in scores.items()}
        top = max(avg.values())
        # the smallest |shift| whose score is within shift_tol of the best (the inner
        # B3 estimates are noisy; do not move the calibrated intercept for noise)
        near = [s for s in avg if avg[s] >= top - float(self.shift_tol)]
        best = min(near, key=lambda s: (abs(s), s))
        return float(best), avg

    # ------------------------------------------------------------------ factors
    def _check_fitted(self):
        if not hasattr(self, "theta_"):
            raise RuntimeError("this PairwiseModel is not fitted yet; call fit(df_train) first")

    def encode(self, df_block: pd.DataFrame) -> EncodedBlock:
        """Encode one block of mentions (row order kept) for the factor kernel."""
        self._check_fitted()
        self._check_df(df_block, need_gold=False)
        return encode_mentions(df_block, self.vocabulary_)

    def block_shift(self, enc: EncodedBlock) -> float:
        """d_b, the change of the prior log-odds of a co-referent pair in this block.

        ``logit(r_b) - logit(pair_rate_)``, clipped to +-``block_prior_cap``, with r_b
        the mean of sigmoid(theta_ . phi + bias_) over the block's :func:`rate_pairs`
        (Saerens et al. 2002, eq. 2.4, one EM step from the training prior).  0.0 with
        ``block_prior="none"``, for blocks of fewer than two mentions, and for models
        loaded from files saved before block priors.

        Returns
        -------
        float
            Natural-log odds.
        """
        self._check_fitted()
        if self.block_prior != "pcc" or enc.n < 2:
            return 0.0
        from scipy.special import logit

        cap = float(self.block_prior_cap)
        return float(np.clip(logit(self._block_rate(enc)) - logit(self.pair_rate_), -cap, cap))

    def _block_rate(self, enc):
        """r_b of :meth:`block_shift`, computed once per block and model state.

        Gibbs, the cluster margins, confidence and ``explain`` all need the intercept of
        the same block: the rate is kept on the encoding (outside its dataclass fields),
        keyed by what it depends on (theta_, bias_, block_prior_pairs), so a changed
        model never reads a stale value.
        """
        from scipy.special import expit

        key = (self.theta_.tobytes(), float(self.bias_), int(self.block_prior_pairs))
        memo = getattr(enc, "_rate_memo", None)
        if memo is not None and memo[0] == key:
            return memo[1]
        r = min(max(float(np.mean(expit(self.rate_factors(enc)))), 1e-12), 1.0 - 1e-12)
        object.__setattr__(enc, "_rate_memo", (key, r))     # frozen dataclass: not a field
        return r

    def rate_factors(self, enc: EncodedBlock) -> np.ndarray:
        """f at the pooled intercept ``bias_`` over the block's :func:`rate_pairs`, ndarray of shape (m,).

        The values the block's rate r_b is the mean sigmoid of (natural-log odds).
        """
        self._check_fitted()
        I, J, _ = rate_pairs(enc.n, int(self.block_prior_pairs))
        out = np.empty(len(I))
        _factors.pair_factors(enc, self.theta_, self.bias_, I, J, out)
        return out

    def block_shift_evals(self, n: int) -> int:
        """Pairwise factors :meth:`block_shift` evaluates for a block of ``n`` mentions."""
        if self.block_prior != "pcc" or n < 2:
            return 0
        return min(n * (n - 1) // 2, int(self.block_prior_pairs))

    def block_bias(self, enc: EncodedBlock) -> float:
        """The intercept of every factor within the block ``enc``: ``bias_ + block_shift(enc)``."""
        return float(self.bias_ + self.block_shift(enc))

    def pairwise_factor(self, enc: EncodedBlock, i: int, j: int) -> float:
        """f_theta(x_i, x_j), natural-log odds that mentions i and j co-refer.

        The intercept is the block's (:meth:`block_bias`): ``enc`` must be the whole block.

        Raises
        ------
        IndexError
            If ``i`` or ``j`` is outside ``[0, enc.n)``.
        """
        self._check_fitted()
        for name, v in (("i", i), ("j", j)):
            if not 0 <= int(v) < enc.n:
                raise IndexError(f"{name} must be in [0, {enc.n}); got {v}")
        out = np.empty(1)
        _factors.pair_factors(enc, self.theta_, self.block_bias(enc), np.array([int(i)], np.int64),
                              np.array([int(j)], np.int64), out)
        return float(out[0])

    def factor_matrix(self, enc: EncodedBlock) -> np.ndarray:
        """All factors of a block, ndarray of shape (n, n), symmetric, zero diagonal.

        Memory O(n^2): meant for small blocks and tests. The intercept is the block's
        (:meth:`block_bias`): ``enc`` must be the whole block.
        """
        self._check_fitted()
        out = np.zeros((enc.n, enc.n))
        _factors.factor_matrix(enc, self.theta_, self.block_bias(enc), out)
        return out

    def pair_features(self, enc: EncodedBlock, I, J) -> np.ndarray:
        """phi for pairs (I[k], J[k]), ndarray of shape (m, N_FEATURES)."""
        I = np.ascontiguousarray(I, dtype=np.int64)
        J = np.ascontiguousarray(J, dtype=np.int64)
        out = np.empty((len(I), N_FEATURES))
        _factors.pair_features(enc, I, J, out)
        return out


# --------------------------------------------------------------------------- persistence

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
        a, b = np.triu_indices(n, 1)
    else:
        gen = np.random.default_rng(n)
        x = gen.integers(0, n, size=max_pairs)
        z = gen.integers(0, n - 1, size=max_pairs)
        z = z + (z >= x)                   # uniform over j != i
        a, b = np.minimum(x, z), np.maximum(x, z)
    return a.astype(np.int64), b.astype(np.int64), total / len(a)


def block_bias_evals(model, enc) -> tuple:
    """The intercept of ``model``'s factors within the block ``enc``, and the factors its
    estimate evaluated: ``(bias_, 0)`` for models without :meth:`PairwiseModel.block_bias`
    (e.g. test stand-ins)."""
    f = getattr(model, "block_bias", None)
    if f is None:
        return float(model.bias_), 0
    return float(f(enc)), int(model.block_shift_evals(enc.n))


def _sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _params_state(model):
    rng = model.rng
    if rng is not None and not (isinstance(rng, numbers.Integral) and not isinstance(rng, bool)):
        rng = None  # a Generator is not data; the fitted state does not depend on it any more
    shift = model.bias_shift
    return {"C": float(model.C), "max_pairs_per_block": int(model.max_pairs_per_block),
            "class_weight": model.class_weight,
            "bias_shift": shift if shift == "auto" else float(shift),
            "shift_grid": [float(x) for x in model.shift_grid], "shift_tol": float(model.shift_tol),
            "tune_sweeps": int(model.tune_sweeps), "tune_max_blocks": int(model.tune_max_blocks),
            "rng": None if rng is None else int(rng), "objective": str(model.objective),
            "pl_C": float(model.pl_C), "pl_max_anchors": int(model.pl_max_anchors),
            "pl_alone": bool(model.pl_alone), "pl_pair_C": float(model.pl_pair_C),
            "pl_merge_C": float(model.pl_merge_C), "block_prior": str(model.block_prior),
            "block_prior_cap": float(model.block_prior_cap), "block_prior_pairs": int(model.block_prior_pairs)}


def save_model(model, path, *, extra=None):
    """Save a fitted :class:`PairwiseModel` to the directory ``path`` (JSON + npz + manifest).

    Parameters
    ----------
    model : PairwiseModel
        Fitted.
    path : str or os.PathLike
        Directory (created). Existing model files in it are replaced atomically, the
        manifest last.
    extra : dict or None
        JSON-able metadata stored under ``"extra"`` (read back by :func:`load_model`).

    Returns
    -------
    pathlib.Path
        The directory.

    Raises
    ------
    RuntimeError
        If the model is not fitted.
    """
    from sampling.utils.atomic import atomic_path, atomic_write_text

    from coref import __version__

    model._check_fitted()
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    arrays = {"theta": np.asarray(model.theta_, dtype=np.float64)}
    vocab = _externalize(model.vocabulary_.to_state(), arrays)
    doc = {"format": MODEL_FORMAT, "version": MODEL_VERSION, "coref_version": __version__,
           "feature_names": list(model.feature_names_), "params": _params_state(model),
           "intercept": float(model.intercept_), "shift": float(model.shift_), "bias": float(model.bias_),
           "n_pairs": int(model.n_pairs_), "pair_rate": float(getattr(model, "pair_rate_", 0.5)),
           "shift_scores": {repr(float(k)): float(v) for k, v in model.shift_scores_.items()},
           "vocabulary": vocab, "extra": extra or {}}
    cal = getattr(model, "calibration_", None)
    if cal is not None:
        doc["calibration"] = cal.to_dict()
    (path / "manifest.json").unlink(missing_ok=True)  # an interrupted save is not a model
    atomic_write_text(path / "model.json", json.dumps(doc, indent=1, sort_keys=True, allow_nan=False) + "\n")
    with atomic_path(path / "theta.npz") as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
    manifest = {"format": _MANIFEST_FORMAT, "version": MODEL_VERSION,
                "files": {name: _sha256(path / name) for name in _FILES}}
    atomic_write_text(path / "manifest.json", json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return path


_PL_PARAMS = ("objective", "pl_C", "pl_max_anchors", "pl_alone", "pl_pair_C", "pl_merge_C")
_BP_PARAMS = ("block_prior", "block_prior_cap", "block_prior_pairs")

_BIG = 256  # numeric lists longer than this go to the npz, referenced as {"$npz": name}


def _externalize(obj, arrays):
    """Copy of a JSON-able state with long numeric lists moved into ``arrays`` (npz)."""
    if isinstance(obj, dict):
        return {k: _externalize(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list) and len(obj) > _BIG:
        try:
            a = np.asarray(obj, dtype=np.float64)
        except (TypeError, ValueError):
            a = None
        if a is not None and a.ndim in (1, 2):
            name = f"state_{len(arrays)}"
            arrays[name] = a
            return {"$npz": name}
    if isinstance(obj, list):
        return [_externalize(v, arrays) for v in obj]
    return obj


def _internalize(obj, arrays, used, file):
    """Inverse of :func:`_externalize`; ``used`` collects the array names referenced."""
    if isinstance(obj, dict):
        if set(obj) == {"$npz"}:
            name = obj["$npz"]
            if not isinstance(name, str) or name not in arrays or name == "theta" or name in used:
                raise ModelFormatError(f"bad array reference {name!r}", path=file)
            used.add(name)
            a = arrays[name]
            if a.dtype != np.float64 or a.ndim not in (1, 2) or not np.all(np.isfinite(a)):
                raise ModelFormatError(f"array {name!r} must be finite float64 of 1 or 2 dimensions", path=file)
            return a.tolist()
        return {k: _internalize(v, arrays, used, file) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_internalize(v, arrays, used, file) for v in obj]
    return obj


def _field(doc, key, kind, file):
    v = doc.get(key) if isinstance(doc, dict) else None
    ok = {"float": isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
          "int": isinstance(v, int) and not isinstance(v, bool) and v >= 0,
          "dict": isinstance(v, dict), "list": isinstance(v, list), "str": isinstance(v, str)}[kind]
    if not ok:
        raise ModelFormatError(f"field {key!r} must be a {kind}; got {v!r:.60}", path=file)
    return v


def _feature_mismatch(saved, current):
    k = next((i for i, (a, b) in enumerate(zip(saved, current)) if a != b), min(len(saved), len(current)))
    a = saved[k] if k < len(saved) else "<end>"
    b = current[k] if k < len(current) else "<end>"
    return (f"the model was fitted on {len(saved)} features, this code computes {len(current)} "
            f"(first difference at feature {k}: {a!r} in the model, {b!r} here)")


def load_model(path):
    """Load a model saved by :func:`save_model`, verifying it first.

    Parameters
    ----------
    path : str or os.PathLike
        Model directory.

    Returns
    -------
    model : PairwiseModel
        Fitted, ready for ``encode`` / ``pairwise_factor`` / ``GibbsCoref``.
    extra : dict
        The ``extra`` metadata saved with it.

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a directory.
    coref.exceptions.ModelFormatError
        Naming the file: no manifest or model file (not a coref model), a checksum
        mismatch (tampered or corrupted), another format or version, a feature layout
        other than this code's (retrain with ``coref fit``), or a malformed field.
    """
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"model directory not found: {path}")
    mpath = path / "manifest.json"
    if not mpath.is_file():
        raise ModelFormatError("no manifest.json: not a coref model directory (or an interrupted save)",
                               path=mpath)
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFormatError(f"not valid JSON ({exc})", path=mpath) from None
    if not isinstance(manifest, dict) or manifest.get("format") != _MANIFEST_FORMAT:
        raise ModelFormatError("not a coref model manifest", path=mpath)
    if manifest.get("version") != MODEL_VERSION:
        raise ModelFormatError(f"model format version {manifest.get('version')!r}; this coref reads "
                               f"version {MODEL_VERSION}", path=mpath)
    files = manifest.get("files")
    if not isinstance(files, dict) or sorted(files) != sorted(_FILES):
        raise ModelFormatError(f"the manifest must list exactly {list(_FILES)}", path=mpath)
    for name in _FILES:
        f = path / name
        if not f.is_file():
            raise ModelFormatError("listed in manifest.json but missing", path=f)
        if _sha256(f) != files[name]:
            raise ModelFormatError("SHA-256 does not match manifest.json: the file was modified "
                                   "(tampered or corrupted); refusing to load it", path=f)
    jpath = path / "model.json"
    try:
        doc = json.loads(jpath.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFormatError(f"not valid JSON ({exc})", path=jpath) from None
    if not isinstance(doc, dict) or doc.get("format") != MODEL_FORMAT:
        raise ModelFormatError(f"format {doc.get('format') if isinstance(doc, dict) else None!r}, "
                               f"expected {MODEL_FORMAT!r}", path=jpath)
    if doc.get("version") != MODEL_VERSION:
        raise ModelFormatError(f"model version {doc.get('version')!r}; this coref reads version {MODEL_VERSION}",
                               path=jpath)
    names = _field(doc, "feature_names", "list", jpath)
    if names != list(FEATURE_NAMES):
        raise ModelFormatError(
            _feature_mismatch(names, list(FEATURE_NAMES)) + "; refit it with `coref fit --data LABELED "
            f"--model {path}` (the shipped default: `python -m coref fit --data data/aminer_na "
            "--model coref/models/default`)", path=jpath)
    try:
        with np.load(path / "theta.npz", allow_pickle=False) as z:
            if "theta" not in z.files:
                raise ModelFormatError(f"no array 'theta'; got {sorted(z.files)}", path=path / "theta.npz")
            arrays = {k: np.array(z[k]) for k in z.files}
            theta = arrays["theta"]
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        if isinstance(exc, ModelFormatError):
            raise
        raise ModelFormatError(f"unreadable npz ({exc})", path=path / "theta.npz") from None
    if theta.dtype != np.float64 or theta.shape != (len(FEATURE_NAMES),) or not np.all(np.isfinite(theta)):
        raise ModelFormatError(f"theta must be finite float64 of shape ({len(FEATURE_NAMES)},); got "
                               f"{theta.dtype} {theta.shape}", path=path / "theta.npz")
    p = _field(doc, "params", "dict", jpath)
    try:
        model = PairwiseModel(**{k: p[k] for k in ("C", "max_pairs_per_block", "class_weight", "bias_shift",
                                                    "shift_grid", "shift_tol", "tune_sweeps", "tune_max_blocks",
                                                    "rng")},
                              # absent in models saved before the pseudo-likelihood fit (logistic theta)
                              **{"objective": "logistic", **{k: p[k] for k in _PL_PARAMS if k in p}},
                              # absent in models saved before block priors: none
                              **{"block_prior": "none", **{k: p[k] for k in _BP_PARAMS if k in p}})
        model._check_block_prior(lambda msg: ModelFormatError("params." + msg, path=jpath))
        if model.objective not in ("logistic", "pseudolik"):
            raise ModelFormatError(f"params.objective must be 'logistic' or 'pseudolik'; got {model.objective!r}",
                                   path=jpath)
        if not (isinstance(model.pl_C, (int, float)) and not isinstance(model.pl_C, bool)
                and math.isfinite(model.pl_C) and model.pl_C > 0):
            raise ModelFormatError(f"params.pl_C must be a finite number > 0; got {model.pl_C!r}", path=jpath)
        if not (isinstance(model.pl_max_anchors, int) and not isinstance(model.pl_max_anchors, bool)
                and model.pl_max_anchors >= 1):
            raise ModelFormatError(f"params.pl_max_anchors must be an integer >= 1; got {model.pl_max_anchors!r}",
                                   path=jpath)
        if not isinstance(model.pl_alone, bool):
            raise ModelFormatError(f"params.pl_alone must be a boolean; got {model.pl_alone!r}", path=jpath)
        for k in ("pl_pair_C", "pl_merge_C"):
            v = getattr(model, k)
            if not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0):
                raise ModelFormatError(f"params.{k} must be a finite number >= 0; got {v!r}", path=jpath)
        used = set()
        vocab_state = _internalize(_field(doc, "vocabulary", "dict", jpath), arrays, used, jpath)
        if used != set(arrays) - {"theta"}:
            raise ModelFormatError(f"arrays not referenced by model.json: {sorted(set(arrays) - used - {'theta'})}",
                                   path=path / "theta.npz")
        vocab = Vocabulary.from_state(vocab_state)
    except ModelFormatError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFormatError(f"bad params or vocabulary ({exc})", path=jpath) from None
    model.theta_ = np.ascontiguousarray(theta)
    model.intercept_ = float(_field(doc, "intercept", "float", jpath))
    model.shift_ = float(_field(doc, "shift", "float", jpath))
    model.bias_ = float(_field(doc, "bias", "float", jpath))
    if abs(model.bias_ - (model.intercept_ + model.shift_)) > 1e-9 * max(1.0, abs(model.bias_)):
        raise ModelFormatError("bias must equal intercept + shift", path=jpath)
    model.n_pairs_ = int(_field(doc, "n_pairs", "int", jpath))
    model.pair_rate_ = 0.5
    if model.block_prior == "pcc":
        model.pair_rate_ = float(_field(doc, "pair_rate", "float", jpath))
        if not 0.0 < model.pair_rate_ < 1.0:
            raise ModelFormatError(f"field 'pair_rate' must be in (0, 1); got {model.pair_rate_!r}", path=jpath)
    scores = _field(doc, "shift_scores", "dict", jpath)
    try:
        model.shift_scores_ = {float(k): float(v) for k, v in scores.items()}
    except (TypeError, ValueError):
        raise ModelFormatError("shift_scores must map numbers to numbers", path=jpath) from None
    model.vocabulary_ = vocab
    model.feature_names_ = FEATURE_NAMES
    model.pl_info_ = {}
    model.calibration_ = None
    if "calibration" in doc:
        from coref._calibration import ConfidenceCalibration

        try:
            model.calibration_ = ConfidenceCalibration.from_dict(doc["calibration"], where="field 'calibration'")
        except ValueError as exc:
            raise ModelFormatError(str(exc), path=jpath) from None
    return model, _field(doc, "extra", "dict", jpath)
