"""Pairwise coreference model f_theta(x_i, x_j) = theta . phi(x_i, x_j) + b, and its block prior.

theta and b are fitted with scikit-learn's logistic regression on labeled pairs of
mentions of the same block (Chen & Ghahramani 2016, Sec. 5.3; Singh et al. 2012),
so f_theta is the log-odds (natural log) that the two mentions co-refer.  The
phi features are listed in :mod:`coref.encoding`.

``objective="pseudolik"`` refits (theta, b), warm-started from the logistic fit, for the
clustering model the Gibbs sampler actually uses: maximum pseudo-likelihood (Besag 1975)
of the single-mention Gibbs conditionals on the gold clusterings of the training blocks,
optionally combined with the cluster-merge conditionals (composite likelihood) and the
pairwise logistic loss (:mod:`coref.model._pseudolik`); f stays theta . phi + b, a
log-linear factor fitted on labeled within-block data.  It is opt-in: measured under the
grouped k-fold protocol on the four shipped sets it did not beat the logistic theta
(benchmarks/measured/coref_accuracy_pseudolik_2026-11-24.txt).

A pure sum of pairwise log-odds over a big cluster can over- or under-merge, so
the fitted intercept may be shifted by ``bias_shift``; ``bias_shift="auto"``
chooses it on the TRAINING blocks only, by running short exact annealed Gibbs for
each value of ``shift_grid`` and keeping the one with the best training B3 F1
(factors computed from a theta cross-fitted over training-block folds, so that
the shift is tuned on blocks the theta did not see): :func:`coref.training.tune_shift`,
or any tuner passed as ``PairwiseModel.fit(df, shift_tuner=...)``.

Each block also gets its own prior odds (``block_prior="pcc"``, the default;
:mod:`coref.model.block_prior`): every factor of a block uses the intercept
``bias_ + d_b`` (:meth:`PairwiseModel.block_bias`).

Blocks larger than any labeled one (``big_block_min_n`` mentions and more) can get weights
of their own, fitted on labeled big blocks (``big_blocks``; simulated by default in
``coref fit``): :mod:`coref.model.big_blocks`. :meth:`PairwiseModel.block_theta` and
:meth:`PairwiseModel.block_bias` give the weights and intercept of a block.

Saving and loading: :mod:`coref.model.persist`.
"""
from __future__ import annotations

import copy
import numbers

import numpy as np
import pandas as pd

from coref.factors.names import FEATURE_NAMES, N_FEATURES
from coref.encoding.blocks import EncodedBlock, encode_mentions
from coref.encoding.vocabulary import Vocabulary
from coref.io import MENTION_COLUMNS
from coref.model._pseudolik import fit_pseudolik, pl_data
from coref.model.big_blocks import (BIG_BLOCK_MIN_N, SYNTHETIC_BLOCKS, SYNTHETIC_SEED, BigBlockWeights,
                                    block_level_features, check_big_blocks, synthetic_training_blocks)
from coref.model.name_priors import apply_name_priors
from coref.model.pairs import gold_labels, labeled_pairs
from coref.model.shift_tree import block_statistics, peek_factor_matrix, statistics_evals
from coref.model.block_prior import (BIG_BLOCK_EM, cached_block_rate, check_block_prior, pooled_rate, prior_shift,
                                     rate_pairs, rate_scores, shift_evals)
from coref.training import tune_shift
from sampling.utils.kernels import load_kernel
from sampling.utils.rng import as_generator

_factors = load_kernel("coref.factors._factors")

__all__ = ["PairwiseModel", "labeled_pairs"]


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
        Added to the fitted intercept. ``"auto"``: tuned on the training blocks by the
        ``shift_tuner`` of :meth:`fit` (default :func:`coref.training.tune_shift`).
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
        clusterings of the training blocks (:mod:`coref.model._pseudolik`; Besag 1975).
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
        halves of one merge; :func:`coref.model._pseudolik.block_candidates`).
    block_prior : {"pcc", "none"}, default "pcc"
        ``"pcc"``: each block's factors get the intercept ``bias_ + d_b`` (module
        docstring; :meth:`block_bias`). ``"none"``: ``bias_`` everywhere.
    block_prior_cap : float > 0, default 3.0
        |d_b| is clipped to this (natural-log odds).
    block_prior_pairs : int >= 1, default 20000
        At most this many pairs per block estimate its rate (:func:`rate_pairs`).
    name_priors : bool, default True
        Give the name-conflict features the training pairs never varied (different full
        first names, different middle initials: data blocked by full name) the prior weights
        of :data:`coref.model.name_priors.NAME_CONFLICT_PRIORS` instead of 0, so that
        first-initial blocks ("j guo") keep Jing and John apart.
    big_blocks : None, "synthetic" or pandas.DataFrame, default None
        Labeled mentions of big blocks to fit the weights of blocks of at least
        ``big_block_min_n`` mentions on (:mod:`coref.model.big_blocks`); "synthetic": the
        simulated set :func:`coref.model.big_blocks.synthetic_training_blocks` (81,000
        mentions, about 10 s); None: every block uses ``theta_``.
    big_block_min_n : int >= 2, default 1000
        Blocks of at least this many mentions use the big-block weights (when fitted).

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
        L-BFGS iterations (:func:`coref.model._pseudolik.fit_pseudolik`); else empty.
    feature_varied_ : ndarray of bool, shape (N_FEATURES,), or None
        Whether each feature took more than one value on the training pairs. A feature that
        never varied has ``theta_`` 0: its contribution is folded into the intercept at fit
        (:meth:`fold_constant_features`), except the name-conflict features of
        ``prior_weights_``. ``None`` for a model saved before this record.
    prior_weights_ : dict of str -> float
        The name-conflict features given a prior weight (``name_priors``), and the weight.
    pair_rate_ : float in (0, 1)
        r_train: mean of sigmoid(theta_ . phi + bias_) over the pairs of the training
        blocks (all their mentions, labeled or not; pooled over pairs, big blocks
        subsampled and reweighted), the reference of the block prior.
    big_ : coref.model.big_blocks.BigBlockWeights or None
        The weights of blocks of at least ``big_.min_n`` mentions; None: ``theta_`` everywhere.
    """

    def __init__(self, *, C=0.1, max_pairs_per_block=3000, class_weight=None,
                 bias_shift="auto", shift_grid=(0.0, 0.5, 1.0),
                 shift_tol=0.005, tune_sweeps=12, tune_max_blocks=40, rng=0,
                 objective="logistic", pl_C=1.0, pl_max_anchors=400, pl_alone=False, pl_pair_C=0.0,
                 pl_merge_C=0.0, block_prior="pcc", block_prior_cap=3.0, block_prior_pairs=20000,
                 name_priors=True, big_blocks=None, big_block_min_n=BIG_BLOCK_MIN_N):
        self.big_blocks = big_blocks
        self.big_block_min_n = big_block_min_n
        self.name_priors = name_priors
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
        cols = [c for c in MENTION_COLUMNS if c != "gold" or need_gold]
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise ValueError(f"df is missing the mention column(s) {missing}")

    def _check_params(self):
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
        self.check_block_prior(ValueError)
        check_big_blocks(self.big_blocks, self.big_block_min_n, ValueError)

    def _pairs(self, df, vocab, gen, encs=None):
        """phi and the same-entity flags of the labeled pairs of every block of ``df``.

        Parameters
        ----------
        df : pandas.DataFrame
            Mentions with ``gold``, one or several blocks (taken in sorted order).
        vocab : Vocabulary
        gen : numpy.random.Generator
            Subsamples the pairs of big blocks (:func:`labeled_pairs`).
        encs : list, optional
            Receives the encoding of every block.

        Returns
        -------
        X : ndarray of shape (m, N_FEATURES)
        y : ndarray of int8, shape (m,)

        Raises
        ------
        ValueError
            If no block holds two labeled mentions.
        """
        feats, ys = [], []
        for _, sub in df.groupby("block", sort=True):
            enc = encode_mentions(sub, vocab)
            if encs is not None:
                encs.append(enc)
            I, J, y = labeled_pairs(enc, gold_labels(sub), max_pairs=int(self.max_pairs_per_block), rng=gen)
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
        blocks = []
        for _, sub in df.groupby("block", sort=True):
            gold = gold_labels(sub)
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

    def fit(self, df: pd.DataFrame, *, shift_tuner=None) -> "PairwiseModel":
        """Fit theta (and the shift) on the labeled mentions of ``df``.

        Parameters
        ----------
        df : pandas.DataFrame
            Mentions with gold labels (``gold``; NA = unlabeled, ignored), one or
            several blocks.
        shift_tuner : callable, optional
            ``shift_tuner(model, df, rng) -> (shift, {shift: score})``, called with this
            model once theta is fitted and the generator the fit drew from, when
            ``bias_shift="auto"``; default :func:`coref.training.tune_shift`, which runs
            short annealed Gibbs on cross-fitted training blocks.  Unused otherwise.

        Returns
        -------
        PairwiseModel
            This model, fitted (``theta_``, ``bias_``, ``pair_rate_``, ...).

        Raises
        ------
        TypeError
            If ``df`` is not a pandas DataFrame.
        ValueError
            If columns are missing, no block holds two labeled mentions, the pairs
            are all of one class, or a parameter is out of its domain (e.g.
            ``bias_shift`` neither a number nor "auto").
        """
        self._check_df(df, need_gold=True)
        self._check_params()
        if shift_tuner is None:
            shift_tuner = tune_shift
        gen = as_generator(self.rng)
        self.vocabulary_ = Vocabulary.fit(df)
        encs = []
        X, y = self._pairs(df, self.vocabulary_, gen, encs)
        self.theta_, self.intercept_ = self._regress(X, y)
        self.pl_info_ = {}
        if self.objective == "pseudolik":
            self._pseudolik(df, gen, X, y)
        self.fold_constant_features(X)
        self.prior_weights_ = {}
        if self.name_priors:
            self.theta_, self.prior_weights_ = apply_name_priors(self.theta_, self.feature_varied_)
        self.n_pairs_ = int(len(y))
        self.feature_names_ = FEATURE_NAMES
        self._rate_z, self._rate_w = rate_scores(encs, self.theta_, int(self.block_prior_pairs))
        if self.bias_shift == "auto":
            shift, self.shift_scores_ = shift_tuner(self, df, gen)
        else:
            shift, self.shift_scores_ = float(self.bias_shift), {}
        self.set_shift(shift)
        self.big_ = None
        if self.big_blocks is not None:
            if isinstance(self.big_blocks, str):
                big = synthetic_training_blocks()
                source = {"kind": "synthetic", "generator": "coref.synth_block.synthesize_block",
                          "blocks": [list(b) for b in SYNTHETIC_BLOCKS], "seed": SYNTHETIC_SEED}
            else:
                self._check_df(self.big_blocks, need_gold=True)
                big, source = self.big_blocks, {"kind": "data"}
            self.big_ = self._fit_big_blocks(big, gen, int(self.big_block_min_n), source)
        return self

    def _fit_big_blocks(self, df, gen, min_n, source):
        """:class:`BigBlockWeights` fitted on the labeled big blocks of ``df`` (:mod:`coref.model.big_blocks`).

        The steps of :meth:`fit` with this model's vocabulary (the one every block is encoded
        with at prediction) and parameters: labeled pairs, logistic regression, constant
        features folded into the intercept, name-conflict priors, then the block-prior
        reference rate; block-level features left out
        (:func:`coref.model.big_blocks.block_level_features`), shift 0. This model is not changed.

        Raises
        ------
        ValueError
            If ``df`` has no block with two labeled mentions or its pairs are all of one class.
        """
        sub = copy.copy(self)           # this model's parameters and vocabulary; its own theta
        sub.big_ = None
        encs = []
        X, y = sub._pairs(df, self.vocabulary_, gen, encs)
        X[:, block_level_features()] = 0.0
        sub.theta_, sub.intercept_ = sub._regress(X, y)
        sub.fold_constant_features(X)
        prior = {}
        if self.name_priors:
            sub.theta_, prior = apply_name_priors(sub.theta_, sub.feature_varied_)
        sub._rate_z, sub._rate_w = rate_scores(encs, sub.theta_, int(self.block_prior_pairs))
        sub.set_shift(0.0)
        return BigBlockWeights(min_n=int(min_n), theta=np.ascontiguousarray(sub.theta_, dtype=np.float64),
                               intercept=float(sub.intercept_), shift=0.0, bias=float(sub.bias_),
                               pair_rate=float(sub.pair_rate_), n_pairs=int(len(y)),
                               feature_varied=np.asarray(sub.feature_varied_, dtype=bool),
                               source={**source, "n_mentions": int(len(df)), "n_blocks": int(df["block"].nunique()),
                                       "prior_weights": {k: float(v) for k, v in prior.items()}})

    def fold_constant_features(self, X):
        """Give every feature that never varied on the training pairs ``X`` the weight 0, exactly.

        A feature constant at c on every training pair adds ``theta_k * c`` to every training
        factor, which is an intercept: it goes into ``intercept_`` and ``theta_k`` becomes 0.
        A product feature ``a*b`` whose factor ``a`` is constant at c equals ``c * b`` on every
        training pair: its weight times c goes to ``b`` (checked on ``X`` before moving it), so
        the weight it got for copying ``b`` (L2 spreads a weight over exact copies) is not
        applied to data where ``a`` varies. Both moves leave the factor of every training pair
        unchanged (up to float rounding), so the fit, its shift and its block prior are the
        same model; a feature the training data could not inform contributes nothing at
        prediction. Sets ``feature_varied_``.

        Parameters
        ----------
        X : ndarray of shape (m, N_FEATURES)
            The training pairs' features.
        """
        X = np.asarray(X, dtype=np.float64)
        const = np.all(X == X[:1], axis=0) if len(X) else np.ones(X.shape[1], dtype=bool)
        theta = np.array(self.theta_, dtype=np.float64)
        pos = {n: k for k, n in enumerate(FEATURE_NAMES)}
        for k, name in enumerate(FEATURE_NAMES):
            parts = name.split("*")
            if len(parts) != 2 or const[k] or theta[k] == 0.0:
                continue
            a, b = pos.get(parts[0]), pos.get(parts[1])
            for fixed, other in ((a, b), (b, a)):
                if fixed is None or other is None or not const[fixed] or const[other]:
                    continue
                c = X[0, fixed]
                if np.allclose(X[:, k], c * X[:, other], rtol=1e-12, atol=1e-12):
                    theta[other] += theta[k] * c
                    theta[k] = 0.0
                    break
        c = X[0] if len(X) else np.zeros(X.shape[1])
        self.intercept_ = float(self.intercept_ + np.dot(theta[const], c[const]))
        theta[const] = 0.0
        self.theta_ = np.ascontiguousarray(theta)
        self.feature_varied_ = ~const

    def ignored_fields(self, df: pd.DataFrame) -> dict:
        """The input fields of ``df`` this model ignores, and why (field -> reason).

        A field that fewer than two training mentions held is blanked before encoding
        (:meth:`coref.encoding.Vocabulary.ignored_fields`): its own features and the topic
        vectors are computed as if it were missing, as they were in training. Encoding such
        mentions issues one :class:`coref.exceptions.IgnoredFieldsWarning` per field.
        """
        self.check_fitted()
        return self.vocabulary_.ignored_fields(df)

    def check_block_prior(self, error):
        """Raise ``error(message)`` if ``block_prior``, ``block_prior_cap`` or
        ``block_prior_pairs`` is out of its domain (class docstring)."""
        check_block_prior(self.block_prior, self.block_prior_cap, self.block_prior_pairs, error)

    def set_shift(self, shift):
        """Set ``shift_``, ``bias_ = intercept_ + shift`` and the reference rate ``pair_rate_``
        that bias implies on the training pairs (a model fitted in this process only).

        Parameters
        ----------
        shift : float
            Natural-log odds added to the fitted intercept.
        """
        self.shift_ = float(shift)
        self.bias_ = float(self.intercept_ + self.shift_)
        self.pair_rate_ = pooled_rate(self._rate_z, self._rate_w, self.bias_)

    # ------------------------------------------------------------------ factors
    def check_fitted(self):
        """Raise RuntimeError if the model is not fitted (no ``theta_``)."""
        if not hasattr(self, "theta_"):
            raise RuntimeError("this PairwiseModel is not fitted yet; call fit(df_train) first")

    def encode(self, df_block: pd.DataFrame) -> EncodedBlock:
        """Encode one block of mentions (row order kept) for the factor kernel."""
        self.check_fitted()
        self._check_df(df_block, need_gold=False)
        return encode_mentions(df_block, self.vocabulary_)

    def block_shift(self, enc: EncodedBlock) -> float:
        """d_b, the change of the prior log-odds of a co-referent pair in this block.

        ``logit(r_b) - logit(pair_rate_)``, clipped to +-``block_prior_cap``, with r_b
        the mean of sigmoid(theta_ . phi + bias_) over the block's :func:`rate_pairs`
        (``big_.theta``, ``big_.bias`` and ``big_.pair_rate`` in a big block)
        (Saerens et al. 2002, eq. 2.4, one EM step from the training prior; run on to the
        EM's fixed point when that step lowers the prior:
        :func:`coref.model.block_prior.em_block_rate`; in a big block the first step only,
        :data:`coref.model.block_prior.BIG_BLOCK_EM`).  0.0 with
        ``block_prior="none"``, for blocks of fewer than two mentions, and for models
        loaded from files saved before block priors.  With a ``shift_tree_``
        (:class:`coref.model.shift_tree.ShiftTree`, fitted by ``coref fit``), a block of
        small-block weights and 3 to :data:`coref.model.shift_tree.SHIFT_TREE_MAX_N` mentions
        adds the tree's correction of its statistics
        (:func:`coref.model.shift_tree.block_statistics`).

        Returns
        -------
        float
            Natural-log odds.
        """
        self.check_fitted()
        if self.block_prior != "pcc" or enc.n < 2:
            return 0.0
        theta, bias, rate = self._weights(enc.n)
        key = (theta.tobytes(), float(bias), int(self.block_prior_pairs))  # what r_b depends on
        # a big block: one step (classify-and-count), no EM (coref.model.block_prior.BIG_BLOCK_EM)
        em = not self.is_big_block(enc.n) or BIG_BLOCK_EM
        # the tree's statistics first: their factor matrix then holds every pair the rate averages
        tree = self._shift_tree_applies(enc.n)
        stats = block_statistics(enc, theta, bias) if tree else None
        r_b = cached_block_rate(enc, key, self.rate_factors, rate if em else None, self.block_prior_cap)
        d = prior_shift(r_b, rate, self.block_prior_cap)
        if tree:
            d += self.shift_tree_.predict(stats)
        return d

    def _shift_tree_applies(self, n):
        """True when the block prior of a block of ``n`` mentions adds ``shift_tree_``'s correction."""
        return (getattr(self, "shift_tree_", None) is not None and not self.is_big_block(n)
                and statistics_evals(n) > 0)

    def is_big_block(self, n: int) -> bool:
        """True when a block of ``n`` mentions uses the big-block weights ``big_`` (fitted, and n >= ``big_.min_n``)."""
        big = getattr(self, "big_", None)
        return big is not None and n >= big.min_n

    def _weights(self, n):
        """(theta, bias, pair_rate) of a block of ``n`` mentions: the big-block ones from ``big_.min_n`` on."""
        if self.is_big_block(n):
            return self.big_.theta, self.big_.bias, self.big_.pair_rate
        return self.theta_, self.bias_, self.pair_rate_

    def block_theta(self, enc: EncodedBlock) -> np.ndarray:
        """theta of the factors within the block ``enc``, ndarray of shape (N_FEATURES,).

        ``big_.theta`` for a block of at least ``big_.min_n`` mentions, else ``theta_``.
        """
        self.check_fitted()
        return self._weights(enc.n)[0]

    def base_bias(self, enc: EncodedBlock) -> float:
        """The intercept of the block ``enc`` before its prior shift: ``big_.bias`` or ``bias_``."""
        self.check_fitted()
        return float(self._weights(enc.n)[1])

    def rate_factors(self, enc: EncodedBlock) -> np.ndarray:
        """f at the pooled intercept (``bias_``, or ``big_.bias`` for a big block) over the block's
        :func:`rate_pairs`, ndarray of shape (m,).

        The values the block's rate r_b is the mean sigmoid of (natural-log odds).  Read from
        the block's factor matrix when :func:`coref.model.shift_tree.block_statistics` has just
        computed it (:func:`coref.model.shift_tree.peek_factor_matrix`: the same values).
        """
        self.check_fitted()
        theta, bias, _ = self._weights(enc.n)
        I, J, _ = rate_pairs(enc.n, int(self.block_prior_pairs))
        f = peek_factor_matrix(enc, theta, bias)
        if f is not None:
            return f[I, J]
        out = np.empty(len(I))
        _factors.pair_factors(enc, theta, bias, I, J, out)
        return out

    def block_shift_evals(self, n: int) -> int:
        """Pairwise factors :meth:`block_shift` evaluates for a block of ``n`` mentions."""
        if self.block_prior != "pcc":
            return 0
        if self._shift_tree_applies(n):      # the rate reads its pairs from the statistics' matrix
            return statistics_evals(n)
        return shift_evals(n, int(self.block_prior_pairs))

    def block_bias(self, enc: EncodedBlock) -> float:
        """The intercept of every factor within the block ``enc``: ``base_bias(enc) + block_shift(enc)``."""
        return float(self.base_bias(enc) + self.block_shift(enc))

    def pairwise_factor(self, enc: EncodedBlock, i: int, j: int) -> float:
        """f_theta(x_i, x_j), natural-log odds that mentions i and j co-refer.

        The intercept is the block's (:meth:`block_bias`): ``enc`` must be the whole block.

        Raises
        ------
        IndexError
            If ``i`` or ``j`` is outside ``[0, enc.n)``.
        """
        self.check_fitted()
        for name, v in (("i", i), ("j", j)):
            if not 0 <= int(v) < enc.n:
                raise IndexError(f"{name} must be in [0, {enc.n}); got {v}")
        out = np.empty(1)
        _factors.pair_factors(enc, self.block_theta(enc), self.block_bias(enc), np.array([int(i)], np.int64),
                              np.array([int(j)], np.int64), out)
        return float(out[0])

    def factor_matrix(self, enc: EncodedBlock) -> np.ndarray:
        """All factors of a block, ndarray of shape (n, n), symmetric, zero diagonal.

        Memory O(n^2): meant for small blocks and tests. The intercept is the block's
        (:meth:`block_bias`): ``enc`` must be the whole block.
        """
        self.check_fitted()
        out = np.zeros((enc.n, enc.n))
        _factors.factor_matrix(enc, self.block_theta(enc), self.block_bias(enc), out)
        return out

    def pair_features(self, enc: EncodedBlock, I, J) -> np.ndarray:
        """phi for pairs (I[k], J[k]), ndarray of shape (m, N_FEATURES)."""
        I = np.ascontiguousarray(I, dtype=np.int64)
        J = np.ascontiguousarray(J, dtype=np.int64)
        out = np.empty((len(I), N_FEATURES))
        _factors.pair_features(enc, I, J, out)
        return out
