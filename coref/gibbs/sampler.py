"""Annealed Gibbs sampling over coreference cluster labels: exact or racing.

Model (Chen & Ghahramani 2016, Sec. 5.3; Singh et al. 2012): within a block,

    p(y | x) ∝ exp( sum_{i < j, y_i = y_j} f_theta(x_i, x_j) ),

and the Gibbs conditional of mention i is p(y_i = y | y_-i, x) ∝ exp(S_y / tau)
with S_y = sum_{j in C_y \\ {i}} f_theta(x_i, x_j) over every non-empty cluster y
of the block plus one new empty cluster (S = 0).  The temperature tau decreases
geometrically from ``t_start`` to ``t_end`` over the sweeps (annealing for MAP,
Finkel et al. 2005).  ``sampler="exact"`` sums every factor;
``sampler="racing"`` subsamples each C_y and stops with the unequal-population
Racing-Normal test of Appx. C.3 (Eq. 26-27) -- see ``coref.gibbs._gibbs`` -- on
the residuals of a control variate (Sec. 3.4): the first-name conflicts of a
cluster, whose sum is kept exactly (``coref.gibbs.control``).

Blocks are independent: each is sampled with its own generator
:func:`block_rng`\\ (seed, block), which seeds the kernel's xoshiro256**
generator, so results do not depend on the order of the blocks or on the
executor.
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from coref.gibbs.block import FACTOR_CACHE_MB, fit_block
from coref.gibbs.initial import check_fixed, check_initial, check_prior_shift, initial_labels
from coref.gibbs.marginals import pair_frame
from coref.gibbs.schedule import bound_table, temperature_schedule
from coref.gibbs.seeding import block_rng, resolve_seed
from coref.settings import BIG_BLOCK_SWEEPS, GIBBS_PARAMS, make_gibbs_settings

__all__ = ["GibbsCoref", "block_rng", "bound_table", "temperature_schedule", "FACTOR_CACHE_MB"]


class GibbsCoref:
    """Annealed Gibbs MAP clustering of mentions, exact or with racing.

    Parameters
    ----------
    model : PairwiseModel
        Fitted pairwise factor (``model.encode``, ``theta_``, ``bias_``).
    sampler : {"racing", "exact", "auto"}, default "racing"
        ``"auto"``: per block, exact Gibbs from the cached factor matrix when the
        block's matrix fits ``factor_cache_mb`` (:data:`FACTOR_CACHE_MB` when it
        is 0) and the block has fewer than ``coref.gibbs.block.AUTO_RACING_MIN_N`` (5,000) mentions,
        racing otherwise.  On blocked citation data most blocks fit,
        and the exact sampler over cached factors is then the fastest (README,
        "Which sampler is fastest"); racing is for blocks too large for a matrix.
    delta : float in (0, 1), default 0.05
        Allowed failure probability of each racing test.
    n_sweeps : int >= 1, default 30
        Sweeps over all mentions of each block (each in a fresh random order).
    big_block_sweeps : int >= 1 or None, default 2
        Sweeps of a block of at least ``coref.gibbs.block.STILL_MIN_N`` (5,000) movable
        mentions, on the same temperature range (``coref.settings.BIG_BLOCK_SWEEPS``: such
        a block starts from a greedy clustering and its B3 F1 is flat after the first);
        at most ``n_sweeps``; None = ``n_sweeps`` for every block.
    t_start, t_end : float > 0, default 1.0 and 0.05
        Temperature of the first and of the last sweep (geometric in between).
    first_batch : int >= 2, default 3
        First mini-batch of every racing arm; arms with at most this many members
        are summed exactly (Appx. C.3).
    init : {"auto", "singletons", "one", "greedy", "components"}, default "auto"
        Initial state: one cluster per mention, one per block, or a cheap first clustering
        (:mod:`coref.gibbs.start`: "greedy" over coauthor ids, coauthor "components");
        "auto": ``coref.gibbs.block.BIG_INIT`` for blocks of at least ``START_MIN_N``
        mentions, all movable, singletons for the others.  ``fit(initial=...)`` overrides it.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Run seed. An int is used as is; a SeedSequence contributes its first
        generated 63-bit word; a Generator contributes one draw
        ``integers(2**63)``; ``None`` draws it from OS entropy.  The seed is
        stored in ``seed_`` and block ``b`` is sampled with
        ``block_rng(seed_, b)``, whatever the order of the blocks.
    record_history : bool, default True
        Keep ``labels_history_``.
    buffer_size : None
        Deprecated and ignored: random numbers are now drawn inside the compiled
        kernel (one xoshiro256** generator per block, seeded from
        ``block_rng(seed_, block)``); passing a value warns.
    patience : int >= 0 or None, default 3
        Early stop: a block stops annealing after ``patience`` consecutive sweeps
        that changed no label, counting only sweeps whose temperature is at most
        ``early_stop_temp`` (a sweep above it resets nothing and counts nothing;
        a sweep that moves any mention resets the count).  At such temperatures a
        full sweep without a move means every mention's current cluster wins its
        conditional by a clear margin, and later sweeps are colder still.  The
        remaining sweeps are skipped (their ``labels_history_`` rows repeat the
        final labels, their factor counts are 0).  In a block of at least
        ``coref.gibbs.block.STILL_MIN_N`` (5,000) movable mentions a sweep moving at
        most ``coref.gibbs.block.STILL_FRACTION`` (3%) of them counts as one without
        a move: racing's tests err with probability up to ``delta`` each, so such a
        block keeps moving ~2% of its mentions per sweep at any temperature.
        Deterministic: the rule only reads the sampled states.  0 or None = always
        run ``n_sweeps``.
    early_stop_temp : float > 0, default 0.2
        Temperature at or below which a sweep without a move counts towards
        ``patience``.
    small_arm_bound : bool, default True
        Racing only.  Once per block compute a bound fmax_j >= max_{k != j} f_theta(x_j, x_k)
        from the factor's structure, :func:`coref.gibbs.arm_bound.component_bound`, of at most
        200 n factors (the exact maxima, n (n - 1) / 2 factors, in blocks of up to
        ``coref.gibbs.block.EXACT_BOUND_MAX_N`` mentions, 0 by default), counted in
        ``n_factor_evals_`` and in sweep 1 of
        ``history_``); then in each step an arm with N_y <= ``first_batch``, which
        Appx. C.3 sums exactly, is first given the upper bound
        g_y + sum_{j in C_y} b(i, j) / tau >= its exact score, b(i, j) = min(fmax_i, fmax_j),
        and is eliminated without evaluating a factor once the leader of a mini-batch
        round is ahead of that bound by more than B se_leader (by any margin when the
        leader is exact); it is summed only when the race of the subsampled arms is
        over.  A step about to sum small arms holding n / 16 members or more evaluates
        its mention's whole row once instead and keeps a partner memo (the
        ``coref.gibbs.block.MEMO_PARTNERS`` best partners and the best other factor):
        later steps of that mention bound every arm by it (the partners exactly, any
        other member by the best other factor), in O(K) per step for the subsampled
        arms, which are dropped before their first draw when the bound is behind the
        new cluster.  When no arm is subsampled this changes nothing but the cost: the
        eliminated arms could not win.  Measured on one 3,000-mention one-name
        synthetic block: 13M factors against 153M without memo and pending arms,
        same B3 F1 (0.68); shipped data 1.9M against 6.0M, same B3.
    merge_moves : int >= 0, default 0
        Cluster-merge proposals after each annealed sweep of each block (see
        ``coref.gibbs.merges.merge_moves``: annealed Metropolis test of merging two whole clusters,
        exact sums up to ``merge_exact_max`` pairs, Racing-Normal MH test above
        for the racing sampler), so that two clusters of one author can merge in
        one step.  Sweeps then run one kernel call each.  0 = off.
    merge_exact_max : int >= 0, default 64
        Largest |A| |B| summed exactly by a racing merge test.
    merge_max_temp : float > 0, default 0.2
        Merge proposals follow only sweeps at this temperature or colder (early
        merges at high temperature are hard to undo unless ``split_moves`` is on).
    factor_cache_mb : float >= 0, default 0
        Exact and auto samplers (racing does not read it: subsampling exists to avoid
        evaluating factors).  When a block's n x n float64 factor matrix takes at most
        this many MiB (8 n^2 bytes), every f_theta(x_i, x_j) the block's steps need is
        evaluated once, n (n - 1) / 2 factors when more than half of the mentions are
        movable (the kernel gives f(x_i, x_j) and f(x_j, x_i) bit for bit alike:
        ``coref.factors._factors.factor_matrix``), else n_mov (n - 1) for the n_mov
        movable rows (counted in ``n_factor_evals_`` and in sweep 1 of ``history_``), and every sweep,
        annealed or at temperature 1 (``n_samples``), reads the matrix.  The clusters, the random stream and every
        sum are those of the uncached exact sampler; only the cost changes (one matrix
        per block in memory while it is sampled).  Merge proposals (``merge_moves``)
        still evaluate their factors.  0 = off.
    split_moves : int >= 0, default 0
        Split-merge proposals after the merge proposals of each such sweep (needs
        ``merge_moves`` >= 1): the sequentially-allocated split-merge move of Dahl (2003),
        see ``coref.gibbs.splits``, accepted by its exact Metropolis-Hastings ratio at the
        sweep's temperature, so that a cluster holding two authors can come apart in one
        step.  Every factor of the clusters involved is summed (racing too).  0 = off.
    split_max_size : int >= 2, default 1000
        Split-merge proposals involving more mentions than this are skipped (each costs
        m (m - 1) / 2 factors for its m mentions).
    n_samples : int >= 0, default 0
        Sweeps at temperature 1 run after the annealed ones, from a copy of the
        annealed (MAP) state, to estimate posterior marginals (``pair_probs_``,
        ``mention_confidence_``); same ``sampler``, same generator (continued), so
        ``clusters_`` does not depend on ``n_samples``.  0 = no marginals.

    Attributes
    ----------
    clusters_ : pandas.Series of str, indexed by mention_id
        ``f"{block}/{k}"``, unique across blocks (built on first access).
    cluster_ids_ : ndarray of object (str), shape (n_mentions,)
        The same ids aligned with the rows of the input df (``mention_ids_``).
    mention_ids_ : ndarray of object (str), shape (n_mentions,)
        The input df's mention ids, in its row order.
    labels_ : ndarray of int64, shape (n_mentions,)
        Final labels aligned with the rows of the input df: two rows share a label
        iff they end in the same cluster; unique across blocks (block offset added).
    n_factor_evals_ : int
        Exact number of pairwise factors f_theta evaluated (all blocks, sweeps).
    history_ : pandas.DataFrame
        Columns ``sweep`` (0 = initial state), ``n_factor_evals`` (cumulative),
        ``temperature`` (NaN for sweep 0), ``n_blocks_active`` (blocks that ran
        this sweep: fewer once blocks stop early; 0 for sweep 0). Built on first access.
    n_factor_evals_per_sweep_ : ndarray of int64, shape (n_sweeps + 1,)
        Factors evaluated in each sweep, not cumulative. Entry 0: before the first sweep,
        the factors of each block's prior estimate (``PairwiseModel.block_shift_evals``;
        0 for a model without block prior).
    n_factor_evals_per_block_sweep_ : dict of str -> ndarray of int64, shape (n_sweeps + 1,)
        The same per block (the small-arm bound's factors count in sweep 1).
    block_label_offsets_ : dict of str -> int
        Offset added to a block's labels in ``labels_`` and ``labels_history_`` (its
        labels minus it are the block's own, in [0, n_block)).
    labels_history_ : ndarray of int64, shape (n_sweeps + 1, n_mentions)
        Labels per sweep, aligned with the rows of the input df, unique across
        blocks (only if ``record_history``).
    n_factor_evals_per_block_ : dict of str -> int
    n_sweeps_used_ : dict of str -> int
        Annealed sweeps run per block (``n_sweeps`` unless stopped early).
    cached_blocks_ : list of str
        The blocks sampled by exact Gibbs from their cached factor matrix
        (``factor_cache_mb``, ``sampler="auto"``), in the order sampled.
    prior_shifts_ : dict of str -> float
        Each block's prior shift d_b (natural-log odds) its factors used: estimated
        (``PairwiseModel.block_shift``) or given to ``fit(prior_shift=...)``.
    pair_probs_ : pandas.DataFrame (only if ``n_samples > 0``)
        Columns ``block``, ``mention_a``, ``mention_b`` (mention ids, a < b in the
        block's canonical order), ``p``: the fraction of the ``n_samples``
        temperature-1 samples in which a and b share a cluster, a Monte Carlo
        estimate of P(y_a = y_b | x) within the block.  Sparse: only pairs with
        p >= 0.01, plus every pair inside one predicted cluster (even at p = 0).
    mention_confidence_ : pandas.Series of float (only if ``n_samples > 0``)
        Indexed by mention_id: the mean over samples of the Jaccard similarity
        |A ∩ B_s| / |A ∪ B_s| between A = the predicted cluster of i minus i and
        B_s = i's cluster in sample s minus i (1 when both are empty).  It is 1
        only if every sample puts i with exactly its predicted partners; it drops
        both when i leaves them (a missed link) and when strangers join i (a
        false link), in proportion to the share of the cluster concerned, so one
        wandering member of a large cluster costs its partners little while a
        mention that often moves elsewhere scores low: a curator can accept
        assignments above a threshold and review the rest.  A fixed mention is
        never moved, but its cluster can gain or lose members.
    n_factor_evals_sample_ : int (only if ``n_samples > 0``)
        Factors evaluated by the temperature-1 sweeps (included in
        ``n_factor_evals_`` and ``n_factor_evals_per_block_``, not in ``history_``).
    seed_ : int
    wall_s_ : float
        Wall-clock seconds of Gibbs sampling in ``fit``: everything ``fit`` does except
        encoding the mentions (selecting each block's rows and ``model.encode``, the
        same work for both samplers; in ``encode_s_``).  This is the time racing is
        meant to save.
    encode_s_ : float
        Wall-clock seconds ``fit`` spent encoding (all blocks).
    cpu_s_ : float
        CPU seconds of the calling thread over the same scope as ``wall_s_``
        (``time.thread_time``, encoding excluded): unlike wall time it does not grow
        when other processes share the cores, so ratios of samplers measured on a
        busy machine read better from it.

    Notes
    -----
    Paper symbols: arm y = candidate cluster, N_y = |C_y minus {i}|, T_y = rewards drawn,
    D = number of candidate clusters + 1 (new cluster), t* = the largest number of
    mini-batch rounds any arm needs to exhaust its population.  Rewards are
    f_theta(x_i, x_j) / tau; the Gumbel g_y is not scaled (Gumbel-max over S_y / tau).
    The second mini-batch is (N_y - 3) // 10 but at least 1 (Appx. C.3 writes
    ``(|C_y| - 3)/10 ∧ 1``); Eq. 26 is used as the standard error of the difference of
    two independent totals, (se_x^2 + se_y^2)^(1/2).  ``n_factor_evals_`` counts every
    f_theta evaluated: n - 1 per step for the exact sampler (none from a cached factor matrix,
    whose factors count once), the sum of T_y for racing
    (plus the factors of ``small_arm_bound`` and those of merge tests).
    Both samplers use the same random-number streams (one xoshiro256** generator per
    block inside the compiled kernel), so with ``first_batch`` at least the block size
    they give identical clusters.  The small-arm bound is this package's addition to
    Appx. C.3 (which sums arms with N_y <= 3 exactly): on the shipped data those
    arms took 57% of racing's factor evaluations.

    Examples
    --------
    Add new mentions to an existing clustering without moving the old ones
    (``old_keys`` = their cluster ids, None for the new rows):

    >>> g = GibbsCoref(model, rng=0).fit(df, initial=old_keys,
    ...                                  fixed=old_keys.notna())   # doctest: +SKIP
    >>> g.labels_                                                  # doctest: +SKIP

    References
    ----------
    .. [1] Chen & Ghahramani (2016), "Scalable discrete sampling as a multi-armed
       bandit problem", Sec. 5.3, Appx. C.3 (Eq. 26, 27).
    .. [2] Singh, Subramanya, Pereira & McCallum (2012), "Large-scale cross-document
       coreference using distributed inference and hierarchical models".
    """

    def __init__(self, model, *, sampler="racing", delta=0.05, n_sweeps=30, big_block_sweeps=BIG_BLOCK_SWEEPS,
                 t_start=1.0, t_end=0.05, first_batch=3, init="auto", rng=None,
                 record_history=True, buffer_size=None, n_samples=0, patience=3,
                 early_stop_temp=0.2, small_arm_bound=True, merge_moves=0,
                 merge_exact_max=64, merge_max_temp=0.2, factor_cache_mb=0.0, split_moves=0,
                 split_max_size=1000):
        self.model = model
        self.sampler = sampler
        self.delta = delta
        self.n_sweeps = n_sweeps
        self.big_block_sweeps = big_block_sweeps
        self.t_start = t_start
        self.t_end = t_end
        self.first_batch = first_batch
        self.init = init
        self.rng = rng
        self.record_history = record_history
        self.buffer_size = buffer_size
        self.n_samples = n_samples
        self.patience = patience
        self.early_stop_temp = early_stop_temp
        self.small_arm_bound = small_arm_bound
        self.merge_moves = merge_moves
        self.merge_exact_max = merge_exact_max
        self.merge_max_temp = merge_max_temp
        self.factor_cache_mb = factor_cache_mb
        self.split_moves = split_moves
        self.split_max_size = split_max_size

    # ------------------------------------------------------------------ checks
    def _settings(self):
        """The hyperparameters validated into a ``coref.settings.GibbsSettings`` (and the seed).

        Hyperparameters are checked at ``fit`` (scikit-learn's convention), so that
        attributes set after construction are checked too.
        """
        settings = make_gibbs_settings(**{k: getattr(self, k) for k in GIBBS_PARAMS})
        if not hasattr(self.model, "theta_"):
            raise RuntimeError("the model is not fitted; call model.fit(df_train) first")
        return settings, resolve_seed(self.rng)

    # ------------------------------------------------------------------ fit
    def fit(self, df: pd.DataFrame, *, initial=None, fixed=None, encodings=None, prior_shift=None) -> "GibbsCoref":
        """Cluster the mentions of ``df`` (one or several blocks).

        Parameters
        ----------
        df : pandas.DataFrame
            Mentions (schema of ``coref.load_mentions``); ``gold`` is not used.
        initial : array-like of length ``len(df)``, optional
            Initial cluster key of each row (any hashable; keys are compared within a
            block only).  Rows sharing a key in a block start in one cluster; a missing
            key (None / NaN / pd.NA) starts as its own new singleton.  Rows are aligned
            by position with ``df``.  When given it replaces ``init`` for every block.
        fixed : array-like of bool of length ``len(df)``, optional
            Rows that never move: Gibbs visits only the other mentions (``fixed``
            clusters can still receive them).  Hence two fixed mentions end in the same
            cluster iff they start in the same one: with every old mention fixed, each
            final cluster holds old mentions of at most one initial key and the old
            grouping is kept exactly.  ``None`` = nothing fixed.
        encodings : coref.encoding.EncodingCache, optional
            Blocks already encoded (rows in mention-id order); a block it holds is not
            encoded again, and its rows of ``df`` need only ``mention_id`` and ``block``.
        prior_shift : mapping of str -> float, optional
            Block -> its prior shift d_b (natural-log odds), used instead of the model's
            estimate (``coref add`` keeps an existing block's, Saerens et al. 2002 as in
            ``PairwiseModel.block_shift``); blocks not in it are estimated.

        Returns
        -------
        self

        Raises
        ------
        TypeError
            If ``df`` is not a DataFrame, ``fixed`` is not boolean, an ``initial`` key is
            unhashable, ``prior_shift`` is not a mapping of numbers, or an argument has
            the wrong type.
        ValueError
            If a column is missing, mention ids repeat, ``initial`` / ``fixed`` do not
            have ``len(df)`` entries (or are not 1-D), a ``prior_shift`` is not finite,
            or an argument is out of range.
        RuntimeError
            If the model is not fitted.
        """
        t0 = time.perf_counter()
        c0 = time.thread_time()
        self._encode_s = 0.0
        self._encode_cpu = 0.0
        settings, seed = self._settings()
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"df must be a pandas DataFrame; got {type(df).__name__} instead")
        for col in ("mention_id", "block"):
            if col not in df.columns:
                raise ValueError(f"df is missing the mention column {col!r}")
        if not df["mention_id"].is_unique:
            dup = df["mention_id"][df["mention_id"].duplicated()].iloc[0]
            raise ValueError(f"mention_id values must be unique; {dup!r} repeats")
        n_total = len(df)
        mids_all = np.asarray(df["mention_id"].astype(str).to_numpy(dtype=object))
        init_keys = check_initial(initial, n_total)
        prior_shift = check_prior_shift(prior_shift)
        fixed_arr = check_fixed(fixed, n_total)
        self.seed_ = seed
        temps = temperature_schedule(settings.n_sweeps, settings.t_start, settings.t_end)
        hist = np.zeros((settings.n_sweeps + 1, n_total), np.int64) if self.record_history else None
        evals_per_sweep = np.zeros(settings.n_sweeps + 1, np.int64)
        cluster_ids = np.empty(n_total, dtype=object)
        all_labels = np.empty(n_total, np.int64)
        per_block = {}
        per_block_sweep = {}
        label_offsets = {}
        sweeps_used = {}
        cached_blocks = []
        shifts = {}
        active = np.zeros(settings.n_sweeps + 1, np.int64)
        sample_evals = 0
        pair_frames = []
        confidence = np.full(n_total, np.nan)
        codes, block_names = pd.factorize(df["block"].astype(str).to_numpy(dtype=object),
                                          sort=True)
        # canonical order: by block name, then by mention_id inside a block, so results
        # do not depend on row order
        order = np.argsort(mids_all, kind="stable")
        order = order[np.argsort(codes[order], kind="stable")]
        bounds = np.searchsorted(codes[order], np.arange(len(block_names) + 1))
        offset = 0
        # ready encodings are looked up by block name and mention ids, without the block's DataFrame
        pre_encoded = None if encodings is None else encodings.lookup
        for k_block, block in enumerate(block_names):
            pos = order[bounds[k_block]:bounds[k_block + 1]]
            t_enc = time.perf_counter()    # the block's rows in canonical order: encoder input
            c_enc = time.thread_time()
            enc = None if pre_encoded is None else pre_encoded(str(block), mids_all[pos])
            sub = df.iloc[pos] if enc is None else None
            self._encode_cpu += time.thread_time() - c_enc
            self._encode_s += time.perf_counter() - t_enc
            labels0 = None if init_keys is None else initial_labels(init_keys[pos])
            movable = None if fixed_arr is None else np.flatnonzero(~fixed_arr[pos])
            res = self._fit_block(settings, sub, str(block), seed, temps, labels0, movable, enc=enc,
                                  prior_shift=None if prior_shift is None else prior_shift.get(str(block)))
            shifts[str(block)] = res.prior_shift
            labels, ev, lab_hist, marg, used = res.labels, res.evals, res.lab_hist, res.marginals, res.used
            sweeps_used[str(block)] = used
            if res.cached:
                cached_blocks.append(str(block))
            active[1:used + 1] += 1
            per_block[str(block)] = int(ev.sum())
            per_block_sweep[str(block)] = ev
            label_offsets[str(block)] = offset
            if marg is not None:
                keys, counts, conf, ev_s = marg
                per_block[str(block)] += ev_s
                sample_evals += ev_s
                pair_frames.append(pair_frame(block, mids_all[pos], labels, keys, counts,
                                              settings.n_samples))
                confidence[pos] = conf
            evals_per_sweep += ev
            cluster_ids[pos] = [f"{block}/{k}" for k in labels.tolist()]
            all_labels[pos] = labels + offset
            if hist is not None:
                hist[:, pos] = lab_hist + offset
            offset += len(pos)
        # the pandas views (clusters_, history_) are built from these on first access:
        # callers that read the arrays (coref.inference) do not pay for them per call
        self.__dict__.pop("_pandas_cache", None)
        self.mention_ids_ = mids_all
        self.cluster_ids_ = cluster_ids
        self.labels_ = all_labels
        self.n_factor_evals_ = int(evals_per_sweep.sum()) + sample_evals
        self.n_factor_evals_per_block_ = per_block
        self.n_factor_evals_per_sweep_ = evals_per_sweep
        self.n_factor_evals_per_block_sweep_ = per_block_sweep
        self.block_label_offsets_ = label_offsets
        self._active = active
        self.n_sweeps_used_ = sweeps_used
        self.cached_blocks_ = cached_blocks
        self.prior_shifts_ = shifts
        if settings.n_samples > 0:
            self.n_factor_evals_sample_ = sample_evals
            cols = {"block": "string", "mention_a": "string", "mention_b": "string",
                    "p": "float64"}
            pairs = (pd.concat(pair_frames, ignore_index=True) if pair_frames
                     else pd.DataFrame({c: [] for c in cols}))
            self.pair_probs_ = pairs.astype(cols)
            mid_index = pd.Index(mids_all, name="mention_id")
            self.mention_confidence_ = pd.Series(
                confidence, index=mid_index, name="confidence")
        if hist is not None:
            self.labels_history_ = hist
        self.temperatures_ = temps
        self.encode_s_ = self._encode_s
        self.wall_s_ = time.perf_counter() - t0 - self._encode_s
        self.cpu_s_ = time.thread_time() - c0 - self._encode_cpu
        return self

    def _fitted(self, name):
        if "cluster_ids_" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}.{name} exists after fit")
        return self.__dict__.setdefault("_pandas_cache", {})

    @property
    def clusters_(self) -> pd.Series:
        """Final cluster id of each mention (str ``"<block>/<k>"``), indexed by mention_id.

        Built on first access from ``cluster_ids_`` and ``mention_ids_`` (arrays aligned
        with the rows of the fitted df).
        """
        cache = self._fitted("clusters_")
        if "clusters_" not in cache:
            cache["clusters_"] = pd.Series(self.cluster_ids_, index=pd.Index(self.mention_ids_, name="mention_id"),
                                           name="cluster_id", dtype="string")
        return cache["clusters_"]

    @property
    def history_(self) -> pd.DataFrame:
        """Per sweep: ``sweep``, cumulative ``n_factor_evals``, ``temperature``, ``n_blocks_active``.

        Built on first access from ``n_factor_evals_per_sweep_``.
        """
        cache = self._fitted("history_")
        if "history_" not in cache:
            cache["history_"] = pd.DataFrame({
                "sweep": np.arange(len(self.n_factor_evals_per_sweep_)),
                "n_factor_evals": np.cumsum(self.n_factor_evals_per_sweep_),
                "temperature": np.concatenate([[np.nan], self.temperatures_]),
                "n_blocks_active": self._active,
            })
        return cache["history_"]

    def _fit_block(self, settings, sub, block, seed, temps, labels0=None, movable=None, enc=None, prior_shift=None):
        """Encode one block (unless ``enc`` is given; encoding time kept apart) and run Gibbs on it.

        ``labels0``: initial labels in [0, n) (None = ``init``); ``movable``: sorted
        positions of the mentions Gibbs may move (None = all); ``prior_shift``: the block's
        d_b (None = estimated).  Returns a ``coref.gibbs.block.BlockRun``.
        """
        if enc is None:
            t_enc = time.perf_counter()
            c_enc = time.thread_time()
            enc = self.model.encode(sub)
            self._encode_cpu += time.thread_time() - c_enc
            self._encode_s += time.perf_counter() - t_enc
        return fit_block(settings, self.model, enc, block, seed, temps, labels0, movable,
                         record_history=bool(self.record_history), prior_shift=prior_shift)
