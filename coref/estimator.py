"""``AuthorCoref``: author coreference in the scikit-learn idiom.

``fit`` learns theta (and the tuned intercept shift) on labeled mentions, ``predict``
clusters any mentions with annealed racing Gibbs, ``add`` puts new mentions into an
existing clustering without renumbering it, ``save`` / ``load`` keep the model as JSON
+ npz (see :mod:`coref.model`), ``explain`` breaks a pairwise factor down by feature.
DataFrames in (the schema of :func:`coref.load_mentions`), DataFrames out.

References
----------
.. [1] Chen, Y. & Ghahramani, Z. (2016). Scalable discrete sampling as a multi-armed
   bandit problem. ICML. Sec. 5.3 and Appx. C.3.
"""
from __future__ import annotations

import numbers
import time

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError

from coref.confidence import assignment_confidence, fit_confidence_calibration
from coref.exceptions import ModelFormatError
from coref.explain import explain_pair
from coref.inference import single_thread
from coref.inputs import REQUIRED_FRAME_COLUMNS, load_input
from coref.jobs.clusters import predict_clusters
from coref.jobs.incremental import ADD_SWEEPS, add_clusters
from coref.model import PairwiseModel, load_model, save_model
from coref.prior_fit import fit_block_shift_tree
from coref.settings import check_calibration, make_settings

__all__ = ["AuthorCoref"]


class AuthorCoref(BaseEstimator):
    """Train once on labeled mentions, cluster unlabeled ones, add new ones later.

    Parameters
    ----------
    sampler : {"auto", "racing", "exact"}, default "auto"
        Gibbs conditional sampler of ``predict`` / ``add``: ``"auto"`` is exact Gibbs from
        the cached factor matrix for each block whose matrix fits 256 MiB (up to 5,792
        mentions) and holds fewer than 5,000, racing otherwise (see :class:`coref.gibbs.GibbsCoref`);
        ``sampling_`` says which block got which after ``predict`` / ``add``.
    delta : float in (0, 1), default 0.05
        Allowed failure probability of each racing test.
    n_sweeps : int >= 1 or None, default None
        Gibbs sweeps per block (``None``: the ``GibbsCoref`` default for ``predict``,
        :data:`coref.jobs.incremental.ADD_SWEEPS` for ``add``, as ``coref predict`` / ``coref add``).
    C : float > 0, default 0.1
        Inverse L2 strength of the logistic regression that fits theta.
    bias_shift : float or "auto", default "auto"
        Shift of the fitted intercept (``"auto"``: tuned on the training blocks).
    max_pairs_per_block : int, default 3000
        Labeled pairs per training block.
    block_prior : {"pcc", "none"}, default "pcc"
        Per-block prior odds of coreference (:class:`coref.model.PairwiseModel`).
    big_blocks : {"synthetic", None}, default "synthetic"
        "synthetic": also fit the weights of blocks larger than any labeled one (1,000
        mentions and more) on simulated labeled big blocks (:mod:`coref.model.big_blocks`;
        about 7 s more), as ``coref fit`` does; without them such blocks are scored with
        weights fitted on blocks of at most a few hundred mentions and merge strangers (a
        one-name block of 10,000 synthetic mentions: B3 F1 0.65 against 0.92). None: one
        theta for every block.
    calibration : {"isotonic", "temperature", "none"}, default "isotonic"
        Fit the confidence calibration (pair and mention maps and the mention model,
        :func:`coref.confidence.fit_confidence_calibration`) on cross-fitted scores of the
        labeled blocks, as ``coref fit`` does: :meth:`confidence` then reports in
        ``confidence`` / ``p_calibrated`` the estimated probability that an assignment is
        right, on names the model never saw (the posterior ``p`` alone is over-confident
        there: ECE 0.06-0.10). ``"none"``: no calibration (``confidence`` = ``p``).
    calibration_folds : int >= 0, default 5
        Groups of labeled blocks for the cross-fitting (each scored by a model fitted on
        the others, without big-block weights); capped at the number of labeled blocks;
        below 2: the final model scores its own training mentions (in-sample, over-confident).
    shift_tree : bool, default True
        Also fit the block prior's learned correction (:mod:`coref.model.shift_tree`) on the
        same cross-fitted groups (each held-out block clustered at 13 prior shifts by the
        model of the other groups), as ``coref fit`` does; needs ``calibration_folds >= 2``
        and at least 40 labeled blocks of 3 to 999 mentions (otherwise none is fitted).
    rng : None or int >= 0, default 0
        Seed of pair sampling, tuning and Gibbs (block ``b`` uses
        ``coref.gibbs.block_rng(seed, b)``); ``None`` draws one at ``fit``.

    Attributes
    ----------
    model_ : coref.model.PairwiseModel
        The fitted pairwise factor f = theta . phi + b (natural-log odds), with its
        confidence calibration ``calibration_`` (None with ``calibration="none"``).
    seed_ : int
        The seed used.
    fit_times_ : dict
        Wall seconds of the last ``fit``: ``fit_s`` (theta, shift, big-block weights),
        ``shift_tree_s`` and ``calibration_s``.
    n_factor_evals_ : int
        Pairwise factors evaluated by the last ``predict`` / ``add``.
    sampling_ : dict
        Which sampler each block of the last ``predict`` / ``add`` used and why
        (:func:`coref.jobs.clusters.sampler_choices`).

    Examples
    --------
    >>> import coref
    >>> df = coref.datasets.load_aminer()                          # doctest: +SKIP
    >>> est = coref.AuthorCoref(rng=0).fit(df)                      # doctest: +SKIP
    >>> clusters = est.predict(df.drop(columns="gold"))             # doctest: +SKIP
    """

    def __init__(self, *, sampler="auto", delta=0.05, n_sweeps=None, C=0.1, bias_shift="auto",
                 max_pairs_per_block=3000, rng=0, block_prior="pcc", big_blocks="synthetic", calibration="isotonic",
                 calibration_folds=5, shift_tree=True):
        self.shift_tree = shift_tree
        self.calibration = calibration
        self.calibration_folds = calibration_folds
        self.big_blocks = big_blocks
        self.block_prior = block_prior
        self.sampler = sampler
        self.delta = delta
        self.n_sweeps = n_sweeps
        self.C = C
        self.bias_shift = bias_shift
        self.max_pairs_per_block = max_pairs_per_block
        self.rng = rng

    # ------------------------------------------------------------------ helpers
    def _settings(self, command, *, revisit=False, strict=False, default_sweeps=None):
        """The command's settings; ``default_sweeps``: the sweeps when ``n_sweeps`` is None (None: GibbsCoref's)."""
        n_sweeps = default_sweeps if self.n_sweeps is None else self.n_sweeps
        return make_settings(command, sampler=self.sampler, seed=self.seed_, delta=self.delta, n_sweeps=n_sweeps,
                             revisit=revisit, strict=strict)

    def _seed(self):
        rng = self.rng
        if rng is None:
            return int(np.random.SeedSequence().generate_state(2, np.uint32).view(np.uint64)[0] >> 1)
        if isinstance(rng, numbers.Integral) and not isinstance(rng, bool) and rng >= 0:
            return int(rng)
        raise ValueError(f"the rng parameter of AuthorCoref must be None or an int >= 0; got {rng!r} instead")

    def _check_fitted(self):
        if not hasattr(self, "model_"):
            raise NotFittedError("this AuthorCoref is not fitted yet; call fit(df_labeled) or AuthorCoref.load(dir)")

    @staticmethod
    def _frame(df, name):
        """``df`` checked and prepared as the command line prepares its input (:func:`coref.inputs.load_input`).

        Blocks missing from ``df`` are derived from the names exactly as the loaders of
        ``coref predict`` derive them (:func:`coref.inputs.derive_blocks`).
        """
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"the {name} parameter must be a pandas DataFrame; got {type(df).__name__} instead")
        return load_input(df, command="AuthorCoref")[0]

    # ------------------------------------------------------------------ API
    def fit(self, df, y=None):
        """Fit theta on the labeled mentions of ``df`` (``gold``; NA = unlabeled, ignored).

        Parameters
        ----------
        df : pandas.DataFrame
            Mentions with a ``gold`` column, several blocks.
        y : None
            Ignored (labels are the ``gold`` column).

        Returns
        -------
        AuthorCoref
            This estimator, fitted (``model_``, ``seed_``).

        Raises
        ------
        TypeError
            For a ``df`` of another type than DataFrame.
        ValueError
            For missing columns, no block with two labeled mentions, or bad parameters.
        """
        make_settings("AuthorCoref", sampler=self.sampler, delta=self.delta, n_sweeps=self.n_sweeps)
        if not (self.big_blocks is None or (isinstance(self.big_blocks, str) and self.big_blocks == "synthetic")):
            raise ValueError(f"the big_blocks parameter of AuthorCoref must be None or 'synthetic'; got "
                             f"{self.big_blocks!r} instead")
        check_calibration(self.calibration)
        if not isinstance(self.shift_tree, (bool, np.bool_)):
            raise ValueError(f"the shift_tree parameter of AuthorCoref must be True or False; got {self.shift_tree!r}")
        folds = self.calibration_folds
        if not (isinstance(folds, numbers.Integral) and not isinstance(folds, bool) and folds >= 0):
            raise ValueError(f"calibration_folds must be an integer >= 0; got {folds!r}")
        seed = self._seed()
        df = self._frame(df, "df")
        if "gold" not in df.columns:
            raise ValueError("AuthorCoref.fit needs a 'gold' column (gold author per mention; NA = unlabeled)")
        t0 = time.perf_counter()
        with single_thread():  # theta must not depend on the BLAS thread count
            self.model_ = PairwiseModel(C=self.C, bias_shift=self.bias_shift,
                                        max_pairs_per_block=self.max_pairs_per_block, rng=seed,
                                        block_prior=self.block_prior, big_blocks=self.big_blocks).fit(df)
        self.seed_ = seed
        t1 = time.perf_counter()
        self.model_.calibration_ = None
        self.model_.shift_tree_ = None
        lab = df[df["gold"].notna()].reset_index(drop=True)
        folds = min(int(self.calibration_folds), int(lab["block"].nunique()))
        folds = folds if folds >= 2 else 0
        fold_models = {}

        def refit(train):            # the same parameters, on the other groups only; without the
            # big-block weights (the maps are fitted on the labeled blocks, which are small), a
            # calibration or a shift tree of their own; one model per group, for the tree and the maps
            key = tuple(train["mention_id"].astype(str))
            if key not in fold_models:
                fold_models[key] = clone(self).set_params(big_blocks=None, calibration="none",
                                                          shift_tree=False).fit(train).model_
            return fold_models[key]

        if self.shift_tree and folds:
            self._fit_shift_tree(lab, folds, refit)
        t2 = time.perf_counter()
        if self.calibration != "none":
            # the maps learn the confidence of the clusterings made with the tree (the final tree: it was
            # fitted on these held-out blocks too, a mild optimism that a tree per group would avoid)
            for m in fold_models.values():
                m.shift_tree_ = self.model_.shift_tree_
            self.model_.calibration_ = fit_confidence_calibration(self.model_, lab, method=self.calibration,
                                                                  rng=int(self.seed_), folds=folds,
                                                                  refit=refit if folds else None)
        self.fit_times_ = {"fit_s": t1 - t0, "shift_tree_s": t2 - t1, "calibration_s": time.perf_counter() - t2}
        return self

    def _fit_shift_tree(self, lab, folds, refit):
        """Fit ``model_.shift_tree_`` on the held-out blocks of ``folds`` groups of ``lab`` (those of the calibration)."""
        from sklearn.model_selection import GroupKFold

        blocks = lab["block"].astype(str).to_numpy()
        parts = [(refit(lab.iloc[tr].reset_index(drop=True)), lab.iloc[te].reset_index(drop=True))
                 for tr, te in GroupKFold(n_splits=int(folds)).split(np.zeros(len(lab)), groups=blocks)]
        self.model_.shift_tree_ = fit_block_shift_tree(parts, rng=int(self.seed_))

    def predict(self, df, *, client=None, progress=False):
        """Cluster every block of ``df``.

        Parameters
        ----------
        df : pandas.DataFrame
            Mentions (a ``gold`` column is ignored and passed through).
        client : distributed.Client or None
            Run the blocks on Dask (same clusters as locally).
        progress : bool
            Progress bar on stderr.

        Returns
        -------
        pandas.DataFrame
            mention_id, block, cluster_id (``"<block>/<k>"``) [, gold], rows in the order of ``df``.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit`` / ``load``.
        """
        self._check_fitted()
        df = self._frame(df, "df")
        clusters, stats = predict_clusters(df, self.model_, self._settings("predict"), client=client,
                                           progress=progress)
        self.n_factor_evals_ = stats["n_factor_evals"]
        self.sampling_ = stats["sampling"]
        return clusters

    def add(self, clusters, df_new, *, mentions=None, revisit=False, strict=False, client=None, progress=False):
        """Put new mentions into an existing clustering; no existing cluster id changes.

        Parameters
        ----------
        clusters : pandas.DataFrame
            mention_id, block, cluster_id of the mentions already clustered (as returned
            by :meth:`predict` / :meth:`add`); it may also hold their mention columns.
        df_new : pandas.DataFrame
            The new mentions.
        mentions : pandas.DataFrame or None
            The old mentions' columns (name, coauthors, ...), if ``clusters`` lacks them.
        revisit : bool
            Let Gibbs also move the old mentions of the blocks that get new ones.
        strict : bool
            A new mention id that is already clustered is an error (default: skipped, counted).

        Returns
        -------
        pandas.DataFrame
            The whole clustering: the old rows (same ids unless ``revisit``), then the new ones.

        Raises
        ------
        ValueError
            If the old mentions' columns are not available or the tables disagree.
        """
        self._check_fitted()
        if not isinstance(clusters, pd.DataFrame):
            raise TypeError(f"the clusters parameter must be a pandas DataFrame; got {type(clusters).__name__} instead")
        old = clusters if mentions is None else mentions
        # (the old mentions' blocks are those of ``clusters``)
        missing = [c for c in REQUIRED_FRAME_COLUMNS if c not in old.columns]
        if missing:
            raise ValueError("AuthorCoref.add needs the old mentions' columns: pass mentions=<the DataFrame given "
                             f"to predict> or clusters merged with it (missing {missing})")
        new = self._frame(df_new, "df_new")
        settings = self._settings("add", revisit=revisit, strict=strict, default_sweeps=ADD_SWEEPS)
        out, info = add_clusters(self.model_, old, clusters, new, settings, client=client, progress=progress)
        info.pop("margins")
        self.n_factor_evals_ = info["n_factor_evals"]
        self.sampling_ = info["sampling"]
        self.add_info_ = info
        return out

    def explain(self, df, mention_a, mention_b):
        """The pairwise factor f = theta . phi + b of two mentions, by feature and by group.

        ``df`` is prepared as :meth:`predict` prepares it (blocks derived from the names
        where missing, as ``coref explain`` does).

        Returns
        -------
        coref.explain.Explanation
        """
        self._check_fitted()
        return explain_pair(self.model_, self._frame(df, "df"), mention_a, mention_b)

    def confidence(self, df, clusters, **kwargs):
        """Per-mention assignment confidence (:func:`coref.confidence.assignment_confidence`).

        ``df`` is prepared as :meth:`predict` prepares it (blocks derived from the names
        where missing, as ``coref predict --confidence`` does).

        Returns
        -------
        confidence_df, pairs_df : pandas.DataFrame
        """
        self._check_fitted()
        kwargs.setdefault("delta", self.delta)
        kwargs.setdefault("rng", self.seed_)
        return assignment_confidence(self.model_, self._frame(df, "df"), clusters, **kwargs)

    # ------------------------------------------------------------------ persistence
    def save(self, path):
        """Save the fitted model and these parameters to the directory ``path`` (JSON + npz).

        Returns
        -------
        pathlib.Path
        """
        self._check_fitted()
        return save_model(self.model_, path, extra={"estimator": "AuthorCoref", "params": self.get_params(),
                                                   "seed": self.seed_})

    @classmethod
    def load(cls, path):
        """An estimator from a directory written by :meth:`save` or ``coref fit``.

        Raises
        ------
        coref.exceptions.ModelFormatError
            For a tampered, foreign or incompatible model (names the file).
        """
        model, extra = load_model(path)
        params = extra.get("params", {}) if isinstance(extra.get("params", {}), dict) else None
        if params is None or set(params) - set(cls().get_params()):
            raise ModelFormatError("extra.params must hold AuthorCoref parameters", path=f"{path}/model.json")
        # saved before block priors: the parameter is absent and the model has none
        est = cls(**{"block_prior": getattr(model, "block_prior", "none"), **params})
        try:
            est.seed_ = est._seed() if est.rng is not None else int(extra.get("seed", 0))
            est._settings("load")
        except (TypeError, ValueError) as exc:
            raise ModelFormatError(f"bad AuthorCoref parameters ({exc})", path=f"{path}/model.json") from None
        est.model_ = model
        return est
