"""Pairwise coreference model f_theta(x_i, x_j) = theta . phi(x_i, x_j) + b.

theta and b are fitted with scikit-learn's logistic regression on labeled pairs of
mentions of the same block (Chen & Ghahramani 2016, Sec. 5.3; Singh et al. 2012),
so f_theta is the log-odds (natural log) that the two mentions co-refer.  The
phi features are listed in :mod:`coref.features`.

A pure sum of pairwise log-odds over a big cluster can over- or under-merge, so
the fitted intercept may be shifted by ``bias_shift``; ``bias_shift="auto"``
chooses it on the TRAINING blocks only, by running short exact annealed Gibbs for
each value of ``shift_grid`` and keeping the one with the best training B3 F1
(factors computed from a theta cross-fitted over training-block folds, so that
the shift is tuned on blocks the theta did not see).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from coref import _factors
from coref.evaluate import b3
from coref.features import FEATURE_NAMES, N_FEATURES, EncodedBlock, Vocabulary, encode_mentions
from sampling._rng import as_generator

__all__ = ["PairwiseModel", "labeled_pairs"]


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
    random_state : None, int or numpy.random.Generator, default 0
        Pair subsampling and tuning randomness.

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
    """

    def __init__(self, *, C=0.1, max_pairs_per_block=3000, class_weight=None,
                 bias_shift="auto", shift_grid=(0.0, 0.5, 1.0),
                 shift_tol=0.005, tune_sweeps=12, tune_max_blocks=40, random_state=0):
        self.C = C
        self.max_pairs_per_block = max_pairs_per_block
        self.class_weight = class_weight
        self.bias_shift = bias_shift
        self.shift_grid = shift_grid
        self.shift_tol = shift_tol
        self.tune_sweeps = tune_sweeps
        self.tune_max_blocks = tune_max_blocks
        self.random_state = random_state

    # ------------------------------------------------------------------ fitting
    def _check_df(self, df, *, need_gold):
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"df must be a pandas DataFrame; got {type(df).__name__} instead")
        cols = ["mention_id", "block", "name", "coauthors", "title", "venue", "year",
                "affiliation"] + (["gold"] if need_gold else [])
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise ValueError(f"df is missing the mention column(s) {missing}")

    def _pairs(self, df, vocab, gen):
        feats, ys = [], []
        for _, sub in df.groupby("block", sort=True):
            gold = np.array([None if pd.isna(g) else str(g) for g in sub["gold"]], dtype=object)
            enc = encode_mentions(sub, vocab)
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
        return np.ascontiguousarray(theta, dtype=np.float64), b

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
        gen = as_generator(self.random_state)
        self.vocabulary_ = Vocabulary.fit(df)
        X, y = self._pairs(df, self.vocabulary_, gen)
        self.theta_, self.intercept_ = self._regress(X, y)
        self.n_pairs_ = int(len(y))
        self.feature_names_ = FEATURE_NAMES
        if self.bias_shift == "auto":
            self.shift_, self.shift_scores_ = self._tune_shift(df, gen)
        else:
            self.shift_ = float(self.bias_shift)
            self.shift_scores_ = {}
        self.bias_ = float(self.intercept_ + self.shift_)
        return self

    def _tune_shift(self, df, gen):
        """Pick the shift with the best B3 F1 on (cross-fitted) training blocks."""
        from coref.gibbs import GibbsCoref

        blocks = np.array(sorted(df["block"].unique()))
        if len(blocks) < 4:
            return 0.0, {}
        perm = gen.permutation(len(blocks))
        n_fold = 2
        scores = {float(s): [] for s in self.shift_grid}
        chosen = set(blocks[perm[: int(self.tune_max_blocks)]])
        for k in range(n_fold):
            test_b = set(blocks[perm[k::n_fold]])
            train = df[~df["block"].isin(test_b)]
            test = df[df["block"].isin(test_b & chosen)]
            test = test[test["gold"].notna()]
            if len(test) == 0:
                continue
            sub = PairwiseModel(C=self.C, max_pairs_per_block=self.max_pairs_per_block,
                                class_weight=self.class_weight, bias_shift=0.0,
                                random_state=gen)
            sub.fit(train)
            for s in self.shift_grid:
                sub.bias_ = float(sub.intercept_ + s)
                sub.shift_ = float(s)
                g = GibbsCoref(sub, sampler="exact", n_sweeps=int(self.tune_sweeps),
                               rng=0, record_history=False).fit(test)
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

    def pairwise_factor(self, enc: EncodedBlock, i: int, j: int) -> float:
        """f_theta(x_i, x_j), natural-log odds that mentions i and j co-refer.

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
        _factors.pair_factors(enc, self.theta_, self.bias_, np.array([int(i)], np.int64),
                              np.array([int(j)], np.int64), out)
        return float(out[0])

    def factor_matrix(self, enc: EncodedBlock) -> np.ndarray:
        """All factors of a block, ndarray of shape (n, n), symmetric, zero diagonal.

        Memory O(n^2): meant for small blocks and tests.
        """
        self._check_fitted()
        out = np.zeros((enc.n, enc.n))
        _factors.factor_matrix(enc, self.theta_, self.bias_, out)
        return out

    def pair_features(self, enc: EncodedBlock, I, J) -> np.ndarray:
        """phi for pairs (I[k], J[k]), ndarray of shape (m, N_FEATURES)."""
        I = np.ascontiguousarray(I, dtype=np.int64)
        J = np.ascontiguousarray(J, dtype=np.int64)
        out = np.empty((len(I), N_FEATURES))
        _factors.pair_features(enc, I, J, out)
        return out
