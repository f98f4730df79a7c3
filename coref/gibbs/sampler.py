"""Annealed Gibbs sampling over coreference cluster labels: exact or racing.

Model (Chen & Ghahramani 2016, Sec. 5.3; Singh et al. 2012): within a block,

    p(y | x) ∝ exp( sum_{i < j, y_i = y_j} f_theta(x_i, x_j) ),

and the Gibbs conditional of mention i is p(y_i = y | y_-i, x) ∝ exp(S_y / tau)
with S_y = sum_{j in C_y \\ {i}} f_theta(x_i, x_j) over every non-empty cluster y
of the block plus one new empty cluster (S = 0).  The temperature tau decreases
geometrically from ``t_start`` to ``t_end`` over the sweeps (annealing for MAP,
Finkel et al. 2005).  ``sampler="exact"`` sums every factor;
``sampler="racing"`` subsamples each C_y and stops with the unequal-population
Racing-Normal test of Appx. C.3 (Eq. 26-27) -- see ``coref._gibbs``.

Blocks are independent: each is sampled with its own generator
:func:`block_rng`\\ (seed, block), which seeds the kernel's xoshiro256**
generator, so results do not depend on the order of the blocks or on the
executor.
"""
from __future__ import annotations

import functools
from statistics import NormalDist
import numbers
import time
import zlib

import numpy as np
import pandas as pd

from sampling.utils.kernels import load_kernel

from coref.model import block_bias_evals

_gibbs = load_kernel("coref.gibbs._gibbs")
_factors = load_kernel("coref.factors._factors")

__all__ = ["GibbsCoref", "block_rng", "bound_table", "temperature_schedule"]

_SAMPLERS = ("racing", "exact", "auto")

#: Factor-matrix budget (MiB) of ``sampler="auto"`` when ``factor_cache_mb`` is 0, and of
#: the package's own exact Gibbs runs (the intercept tuning of ``PairwiseModel``, the
#: clusterings that confidence calibration is fitted on): a block whose n x n matrix fits
#: (n <= 5,792) is sampled from it, with the same clusters as without it.
FACTOR_CACHE_MB = 256.0


def _fmat_args(fmat, mode):
    """``(fmat, fmat_mode)`` of the next kernel call of a block: 1 once (compute), then 2.

    ``mode`` is the block's one-element list, so that the call that computes the matrix
    switches every later call of the block to reading it.
    """
    if fmat is None:
        return None, 0
    m, mode[0] = mode[0], 2
    return fmat, m


_INITS = ("singletons", "one")


def block_rng(seed: int, block: str) -> np.random.Generator:
    """The generator used for one block: ``default_rng(SeedSequence([seed, crc32(block)]))``.

    Parameters
    ----------
    seed : int
        Non-negative run seed.
    block : str
        Block name (UTF-8 encoded for the CRC-32).
    """
    return np.random.default_rng(np.random.SeedSequence([int(seed), zlib.crc32(str(block).encode())]))


def bound_table(delta: float, n_arms_max: int, n_rounds_max: int = 64) -> np.ndarray:
    """Racing bounds ``B[D, t*] = Phi^-1(1 - delta / ((D - 1)(t* - 1)))`` (Eq. 27).

    Returns
    -------
    ndarray of shape (n_arms_max + 1, n_rounds_max)
        ``inf`` where D < 2 or t* < 2 (no test needed there).
    """
    # the standard library's normal quantile (Wichura's AS241, |error| ~1e-15 against scipy's
    # ndtri): importing scipy.special costs ~0.3 s per process, which `coref add` would pay
    inv_cdf = NormalDist().inv_cdf
    D = np.arange(n_arms_max + 1, dtype=float)[:, None]
    t = np.arange(n_rounds_max, dtype=float)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        q = delta / ((D - 1.0) * (t - 1.0))
    B = np.full(q.shape, np.inf)
    ok = (q > 0.0) & (q < 1.0)
    # q depends on (D - 1)(t* - 1) only: one quantile per distinct product
    uq, inverse = np.unique(q[ok], return_inverse=True)
    B[ok] = np.array([inv_cdf(1.0 - x) for x in uq.tolist()], dtype=float)[inverse.ravel()]
    B[(D < 2).ravel(), :] = np.inf
    B[:, (t < 2).ravel()] = np.inf
    return np.ascontiguousarray(B)


@functools.lru_cache(maxsize=32)
def _bound_table_pow2(delta: float, size: int) -> np.ndarray:
    B = bound_table(delta, size)
    B.flags.writeable = False
    return B


def _bound_table_ro(delta: float, n_arms_max: int) -> np.ndarray:
    """:func:`bound_table` rows ``0 .. n_arms_max``, read-only.

    Row D does not depend on ``n_arms_max``, so one table per delta and power of two (at least
    64) serves every block: a C-contiguous row slice of it.
    """
    size = max(64, 1 << int(max(n_arms_max, 1) - 1).bit_length())
    return _bound_table_pow2(delta, size)[: n_arms_max + 1]


def temperature_schedule(n_sweeps: int, t_start: float, t_end: float) -> np.ndarray:
    """Geometric temperatures of sweeps 1..n_sweeps, from t_start to t_end."""
    if n_sweeps == 1:
        return np.array([float(t_end)])
    return t_start * (t_end / t_start) ** (np.arange(n_sweeps) / (n_sweeps - 1.0))


class GibbsCoref:
    """Annealed Gibbs MAP clustering of mentions, exact or with racing.

    Parameters
    ----------
    model : PairwiseModel
        Fitted pairwise factor (``model.encode``, ``theta_``, ``bias_``).
    sampler : {"racing", "exact", "auto"}, default "racing"
        ``"auto"``: per block, exact Gibbs from the cached factor matrix when the
        block's matrix fits ``factor_cache_mb`` (:data:`FACTOR_CACHE_MB` when it
        is 0), racing for larger blocks.  On blocked citation data most blocks fit,
        and the exact sampler over cached factors is then the fastest (README,
        "Which sampler is fastest"); racing is for blocks too large for a matrix.
    delta : float in (0, 1), default 0.05
        Allowed failure probability of each racing test.
    n_sweeps : int >= 1, default 30
        Sweeps over all mentions of each block (each in a fresh random order).
    t_start, t_end : float > 0, default 1.0 and 0.05
        Temperature of the first and of the last sweep (geometric in between).
    first_batch : int >= 2, default 3
        First mini-batch of every racing arm; arms with at most this many members
        are summed exactly (Appx. C.3).
    init : {"singletons", "one"}, default "singletons"
        Initial state: one cluster per mention, or one cluster per block.
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
        final labels, their factor counts are 0).  Deterministic: the rule only
        reads the sampled states.  0 or None = always run ``n_sweeps``.
    early_stop_temp : float > 0, default 0.2
        Temperature at or below which a sweep without a move counts towards
        ``patience``.
    small_arm_bound : bool, default True
        Racing only.  Once per block compute fmax_j = max_{k != j} f_theta(x_j, x_k)
        (n (n - 1) / 2 factors, counted in ``n_factor_evals_`` and in sweep 1 of
        ``history_``); then in each step an arm with N_y <= ``first_batch``, which
        Appx. C.3 sums exactly, is first given the upper bound
        g_y + sum_{j in C_y} min(fmax_i, fmax_j) / tau >= its exact score, and is
        eliminated without evaluating a factor when the leader after the first
        mini-batch round is ahead of that bound by more than B se_leader (by any
        margin when the leader is exact).  When no arm is subsampled this changes
        nothing but the cost: the eliminated arms could not win.  Measured on the
        shipped data (grouped 5-fold): identical B3, factor evaluations of racing
        cut from 10.7M to 7.0M (exact/racing ratio 1.97 -> 3.01).
    merge_moves : int >= 0, default 0
        Cluster-merge proposals after each annealed sweep of each block (see
        ``_merge_moves``: annealed Metropolis test of merging two whole clusters,
        exact sums up to ``merge_exact_max`` pairs, Racing-Normal MH test above
        for the racing sampler), so that two clusters of one author can merge in
        one step.  Sweeps then run one kernel call each.  0 = off.
    merge_exact_max : int >= 0, default 64
        Largest |A| |B| summed exactly by a racing merge test.
    merge_max_temp : float > 0, default 0.2
        Merge proposals follow only sweeps at this temperature or colder (early
        merges at high temperature are hard to undo: there is no split move).
    factor_cache_mb : float >= 0, default 0
        Exact and auto samplers (racing does not read it: subsampling exists to avoid
        evaluating factors).  When a block's n x n float64 factor matrix takes at most
        this many MiB (8 n^2 bytes), every f_theta(x_i, x_j) the block's steps need is
        evaluated once, n_mov (n - 1) factors for n_mov movable mentions (both orders
        f(x_i, x_j) and f(x_j, x_i): symmetry is not assumed; counted in
        ``n_factor_evals_`` and in sweep 1 of ``history_``), and every sweep,
        annealed or at temperature 1 (``n_samples``), reads the matrix.  The clusters, the random stream and every
        sum are those of the uncached exact sampler; only the cost changes (one matrix
        per block in memory while it is sampled).  Merge proposals (``merge_moves``)
        still evaluate their factors.  0 = off.
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
    whose n_mov (n - 1) factors count once), the sum of T_y for racing
    (plus the n (n - 1) / 2 factors of ``small_arm_bound`` and those of merge tests).
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

    def __init__(self, model, *, sampler="racing", delta=0.05, n_sweeps=30, t_start=1.0,
                 t_end=0.05, first_batch=3, init="singletons", rng=None,
                 record_history=True, buffer_size=None, n_samples=0, patience=3,
                 early_stop_temp=0.2, small_arm_bound=True, merge_moves=0,
                 merge_exact_max=64, merge_max_temp=0.2, factor_cache_mb=0.0):
        self.model = model
        self.sampler = sampler
        self.delta = delta
        self.n_sweeps = n_sweeps
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

    # ------------------------------------------------------------------ checks
    def _validate(self):
        if self.sampler not in _SAMPLERS:
            raise ValueError(f"sampler must be one of {_SAMPLERS}; got {self.sampler!r}")
        if self.init not in _INITS:
            raise ValueError(f"init must be one of {_INITS}; got {self.init!r}")
        if not (isinstance(self.delta, numbers.Real) and 0.0 < float(self.delta) < 1.0):
            raise ValueError(f"delta must be a number in (0, 1); got {self.delta!r}")
        if self.buffer_size is not None:
            import warnings

            warnings.warn("GibbsCoref(buffer_size=...) is ignored (random numbers are drawn in "
                          "the kernel) and will be removed", DeprecationWarning, stacklevel=3)
        for name in ("n_sweeps", "first_batch", "n_samples", "merge_moves", "merge_exact_max"):
            v = getattr(self, name)
            if not isinstance(v, numbers.Integral) or isinstance(v, bool):
                raise TypeError(f"{name} must be an int; got {type(v).__name__}")
        if self.n_sweeps < 1:
            raise ValueError(f"n_sweeps must be >= 1; got {self.n_sweeps}")
        if self.patience is not None and (not isinstance(self.patience, numbers.Integral)
                                          or isinstance(self.patience, bool)
                                          or self.patience < 0):
            raise ValueError(f"patience must be None or an int >= 0; got {self.patience!r}")
        v = self.merge_max_temp
        if not (isinstance(v, numbers.Real) and np.isfinite(v) and v > 0):
            raise ValueError(f"merge_max_temp must be a finite number > 0; got {v!r}")
        v = self.factor_cache_mb
        if isinstance(v, bool) or not (isinstance(v, numbers.Real) and np.isfinite(v) and v >= 0):
            raise ValueError(f"factor_cache_mb must be a finite number >= 0; got {v!r}")
        v = self.early_stop_temp
        if not (isinstance(v, numbers.Real) and np.isfinite(v) and v > 0):
            raise ValueError(f"early_stop_temp must be a finite number > 0; got {v!r}")
        if self.merge_moves < 0 or self.merge_exact_max < 0:
            raise ValueError("merge_moves and merge_exact_max must be >= 0; got "
                             f"{self.merge_moves} and {self.merge_exact_max}")
        if self.n_samples < 0:
            raise ValueError(f"n_samples must be >= 0; got {self.n_samples}")
        if self.first_batch < 2:
            raise ValueError(f"first_batch must be >= 2; got {self.first_batch}")
        for name in ("t_start", "t_end"):
            v = getattr(self, name)
            if not (isinstance(v, numbers.Real) and np.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a finite number > 0; got {v!r}")
        if not hasattr(self.model, "theta_"):
            raise RuntimeError("the model is not fitted; call model.fit(df_train) first")
        rng = self.rng
        if rng is None:
            return int(np.random.SeedSequence().generate_state(2, np.uint32).view(np.uint64)[0] >> 1)
        if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
            if rng < 0:
                raise ValueError(f"rng must be a non-negative int seed; got {rng}")
            return int(rng)
        if isinstance(rng, np.random.SeedSequence):
            return int(rng.generate_state(2, np.uint32).view(np.uint64)[0] >> 1)
        if isinstance(rng, np.random.Generator):
            return int(rng.integers(2**63))
        raise TypeError("rng must be None, an int, a SeedSequence or a numpy.random.Generator; "
                        f"got {type(rng).__name__} instead")

    # ------------------------------------------------------------------ fit
    def fit(self, df: pd.DataFrame, *, initial=None, fixed=None) -> "GibbsCoref":
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

        Returns
        -------
        self

        Raises
        ------
        TypeError
            If ``df`` is not a DataFrame, ``fixed`` is not boolean, an ``initial`` key is
            unhashable, or an argument has the wrong type.
        ValueError
            If a column is missing, mention ids repeat, ``initial`` / ``fixed`` do not
            have ``len(df)`` entries (or are not 1-D), or an argument is out of range.
        RuntimeError
            If the model is not fitted.
        """
        t0 = time.perf_counter()
        c0 = time.thread_time()
        self._encode_s = 0.0
        self._encode_cpu = 0.0
        seed = self._validate()
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
        init_keys = _check_initial(initial, n_total)
        fixed_arr = _check_fixed(fixed, n_total)
        self.seed_ = seed
        temps = temperature_schedule(int(self.n_sweeps), float(self.t_start), float(self.t_end))
        hist = np.zeros((self.n_sweeps + 1, n_total), np.int64) if self.record_history else None
        evals_per_sweep = np.zeros(self.n_sweeps + 1, np.int64)
        cluster_ids = np.empty(n_total, dtype=object)
        all_labels = np.empty(n_total, np.int64)
        per_block = {}
        per_block_sweep = {}
        label_offsets = {}
        sweeps_used = {}
        cached_blocks = []
        active = np.zeros(self.n_sweeps + 1, np.int64)
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
        # a model wrapper holding ready encodings (coref.inference) hands a block's
        # encoding over by block name and mention ids, without the block's DataFrame
        pre_encoded = getattr(self.model, "_encoded_block", None)
        for k_block, block in enumerate(block_names):
            pos = order[bounds[k_block]:bounds[k_block + 1]]
            t_enc = time.perf_counter()    # the block's rows in canonical order: encoder input
            c_enc = time.thread_time()
            enc = None if pre_encoded is None else pre_encoded(str(block), mids_all[pos])
            sub = df.iloc[pos] if enc is None else None
            self._encode_cpu += time.thread_time() - c_enc
            self._encode_s += time.perf_counter() - t_enc
            labels0 = None if init_keys is None else _initial_labels(init_keys[pos])
            movable = None if fixed_arr is None else np.flatnonzero(~fixed_arr[pos])
            labels, ev, lab_hist, marg, used = self._fit_block(sub, str(block), seed, temps,
                                                               labels0, movable, enc=enc)
            sweeps_used[str(block)] = used
            if self._block_cached:
                cached_blocks.append(str(block))
            active[1:used + 1] += 1
            per_block[str(block)] = int(ev.sum())
            per_block_sweep[str(block)] = ev
            label_offsets[str(block)] = offset
            if marg is not None:
                keys, counts, conf, ev_s = marg
                per_block[str(block)] += ev_s
                sample_evals += ev_s
                n_b = len(pos)
                a, b = keys // n_b, keys % n_b
                p = counts / float(self.n_samples)
                keep = (p >= 0.01) | (labels[a] == labels[b])
                mids = mids_all[pos]
                pair_frames.append(pd.DataFrame({
                    "block": str(block), "mention_a": mids[a[keep]],
                    "mention_b": mids[b[keep]], "p": p[keep]}))
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
        if self.n_samples > 0:
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

    def _fit_block(self, sub, block, seed, temps, labels0=None, movable=None, enc=None):
        """Run every sweep on one block; return labels, evals per sweep, label history.

        ``labels0``: initial labels in [0, n) (None = ``init``); ``movable``: sorted
        positions of the mentions Gibbs may move (None = all); ``enc``: the block's
        encoding when it is already known (then ``sub`` is not read).
        """
        model = self.model
        if enc is None:
            t_enc = time.perf_counter()
            c_enc = time.thread_time()
            enc = model.encode(sub)
            self._encode_cpu += time.thread_time() - c_enc
            self._encode_s += time.perf_counter() - t_enc
        # one set of component memo tables for the prior's pairs and every kernel call of
        # this block (they hold features only; coref._factors.share_memo), dropped after
        _factors.share_memo(enc)
        try:
            return self._fit_encoded(enc, block, seed, temps, labels0, movable, sub)
        finally:
            _factors.unshare_memo(enc)

    def _fit_encoded(self, enc, block, seed, temps, labels0, movable, sub):
        """``_fit_block`` once the block is encoded."""
        model = self.model
        n = enc.n
        gen = block_rng(seed, block)
        budget = float(self.factor_cache_mb)
        if self.sampler == "auto" and budget == 0.0:
            budget = FACTOR_CACHE_MB
        fits = n > 1 and 8.0 * n * n <= budget * 2.0**20
        racing = 1 if self.sampler == "racing" or (self.sampler == "auto" and not fits) else 0
        if labels0 is not None:
            labels = np.array(labels0, dtype=np.int64)
        elif self.init == "singletons":
            labels = np.arange(n, dtype=np.int64)
        else:
            labels = np.zeros(n, dtype=np.int64)
        size = np.bincount(labels, minlength=n).astype(np.int64)
        theta = np.ascontiguousarray(model.theta_, dtype=np.float64)
        # bias_ + the block's prior shift (coref.model), whose estimate counts in sweep 0
        bias, prior_evals = block_bias_evals(model, enc)
        b_table = _bound_table_ro(float(self.delta), n + 1)
        ev = np.zeros(len(temps) + 1, np.int64)
        ev[0] = prior_evals
        lab_hist = np.zeros((len(temps) + 1, n), np.int64) if self.record_history else None
        if lab_hist is not None:
            lab_hist[0] = labels
        if movable is None:
            movable = np.arange(n, dtype=np.int64)
        rng_state = gen.integers(0, 2**64, size=4, dtype=np.uint64, endpoint=False)
        if not rng_state.any():            # the one state xoshiro256** cannot leave
            rng_state[0] = 1
        fmax = np.full(n, -np.inf)
        # exact sampler: the block's factor matrix when it fits the budget (mode 1 on the
        # first kernel call computes the movable rows, later calls read them: mode 2)
        fmat = np.zeros((n, n)) if not racing and fits else None
        self._block_cached = fmat is not None
        run = dict(enc=enc, theta=theta, bias=bias, racing=racing, b_table=b_table,
                   movable=np.ascontiguousarray(movable, dtype=np.int64), rng_state=rng_state,
                   fmax=fmax, fmat=fmat, fmat_mode=[0 if fmat is None else 1])
        patience = int(self.patience or 0)
        inv_temps = 1.0 / np.asarray(temps, dtype=np.float64)
        stop_mask = (np.asarray(temps) <= float(self.early_stop_temp)).astype(np.int8)
        kh = lab_hist[1:] if lab_hist is not None else np.zeros((0, n), np.int64)
        if int(self.merge_moves) > 0 and n > 1 and len(movable) > 0:
            used = self._anneal_with_merges(labels, size, inv_temps, stop_mask, patience, run,
                                            gen, sub, kh, ev)
        else:
            used = _gibbs.anneal(enc, theta, bias, labels, size, run["movable"], inv_temps,
                                 stop_mask, patience, racing, int(self.first_batch),
                                 int(bool(self.small_arm_bound)), fmax, b_table, rng_state,
                                 kh, ev[1:], *_fmat_args(run["fmat"], run["fmat_mode"]))
        if lab_hist is not None:
            lab_hist[used + 1:] = labels
        marg = None
        if self.n_samples > 0:
            marg = self._sample_marginals(labels, size, run)
        return labels, ev, lab_hist, marg, used

    def _anneal_with_merges(self, labels, size, inv_temps, stop_mask, patience, run, gen,
                            sub, kh, ev):
        """Sweeps one at a time, each followed by ``merge_moves`` cluster-merge proposals.

        Same early-stop rule as the kernel; an accepted merge counts as a move.
        Returns the number of sweeps run.
        """
        n = run["enc"].n
        fixed = np.ones(n, bool)
        fixed[run["movable"]] = False
        still = 0
        used = 0
        bound_mode = int(bool(self.small_arm_bound))
        for s, inv_temp in enumerate(inv_temps):
            before = labels.copy()
            e = np.zeros(1, np.int64)
            _gibbs.anneal(run["enc"], run["theta"], run["bias"], labels, size, run["movable"],
                          np.array([inv_temp]), np.zeros(1, np.int8), 0, run["racing"],
                          int(self.first_batch), bound_mode if s == 0 else 2 * bound_mode,
                          run["fmax"], run["b_table"], run["rng_state"],
                          np.zeros((0, n), np.int64), e, *_fmat_args(run["fmat"], run["fmat_mode"]))
            if 1.0 / inv_temp <= float(self.merge_max_temp):
                e[0] += self._merge_moves(labels, size, float(inv_temp), run, gen, fixed)
            ev[s + 1] = e[0]
            if len(kh):
                kh[s] = labels
            used = s + 1
            if patience > 0 and stop_mask[s]:
                still = still + 1 if np.array_equal(before, labels) else 0
                if still >= patience:
                    break
        return used

    def _merge_moves(self, labels, size, inv_temp, run, gen, fixed):
        """``merge_moves`` annealed Metropolis proposals to merge two whole clusters.

        Proposal: a random movable mention i and a random other mention j in another
        cluster; A = C(i), B = C(j).  Never merges two clusters that both hold fixed
        mentions; moves the cluster without fixed mentions (else the smaller) into
        the other.  Accept when log u < Delta / tau, Delta = sum_{a in A, b in B}
        f_theta(x_a, x_b) (the change of log p(y | x) / tau; Singh et al. 2012 merge
        proposals, annealed).  Delta is summed exactly for the exact sampler or when
        |A| |B| <= ``merge_exact_max``; otherwise the racing sampler decides with the
        Racing-Normal MH test :func:`sampling.mh.mh_accept` (error level ``delta``).
        Returns the factors evaluated.
        """
        from sampling.mh import mh_accept

        pair_factors = load_kernel("coref.factors._factors").pair_factors

        enc, theta, bias = run["enc"], run["theta"], run["bias"]
        movable = run["movable"]
        n = len(labels)
        evals = 0
        for _ in range(int(self.merge_moves)):
            i = int(movable[gen.integers(len(movable))])
            j = int(gen.integers(n - 1))
            j += j >= i
            log_u = float(np.log(gen.random()))
            la, lb = int(labels[i]), int(labels[j])
            if la == lb:
                continue
            A = np.flatnonzero(labels == la)
            B = np.flatnonzero(labels == lb)
            fa, fb = bool(fixed[A].any()), bool(fixed[B].any())
            if fa and fb:
                continue
            N = len(A) * len(B)

            def diffs(idx, A=A, B=B):
                idx = np.asarray(idx, np.int64)
                out = np.empty(len(idx))
                pair_factors(enc, theta, bias, A[idx // len(B)], B[idx % len(B)], out)
                return out * inv_temp

            if run["racing"] and N > int(self.merge_exact_max):
                res = mh_accept(diffs, N, log_u / N, delta=float(self.delta),
                                first_batch=min(50, N), rng=gen)
                accept, evals = bool(res.accept), evals + int(res.n_evals)
            else:
                accept = float(diffs(np.arange(N)).sum()) > log_u
                evals += N
            if not accept:
                continue
            if fa or (not fb and len(A) > len(B)) or (not fb and len(A) == len(B)):
                src, dst = B, la          # B joins A
            else:
                src, dst = A, lb
            size[labels[src[0]]] = 0
            labels[src] = dst
            size[dst] += len(src)
        return evals

    def _sweep(self, labels, size, inv_temp, *, enc, theta, bias, racing, b_table, movable,
               rng_state, fmax, fmat, fmat_mode):
        """One Gibbs sweep (fresh random order) in place; return the factors evaluated."""
        ev = np.zeros(1, np.int64)
        _gibbs.anneal(enc, theta, bias, labels, size, movable, np.array([inv_temp]),
                      np.zeros(1, np.int8), 0, racing, int(self.first_batch),
                      2 * int(bool(self.small_arm_bound)), fmax, b_table, rng_state,
                      np.zeros((0, enc.n), np.int64), ev,
                      *_fmat_args(fmat, fmat_mode))
        return int(ev[0])

    def _sample_marginals(self, map_labels, map_size, run):
        """``n_samples`` sweeps at temperature 1 from a copy of the MAP state.

        Returns (pair_keys, pair_counts, confidence, evals): co-occurrence counts of
        the pairs (a < b, key a * n + b) that shared a cluster in at least one sample,
        plus every pair inside a predicted cluster (count possibly 0); the mean
        Jaccard confidence of each mention (see ``GibbsCoref``); factors evaluated.
        """
        n = len(map_labels)
        labels = map_labels.copy()
        size = map_size.copy()
        pred_size = np.bincount(map_labels, minlength=n)[map_labels]
        conf = np.zeros(n)
        keys, counts = _within_pairs(map_labels), None
        counts = np.zeros(len(keys), np.int64)
        pending = []
        n_pending = 0
        evals = 0
        for _ in range(int(self.n_samples)):
            evals += self._sweep(labels, size, 1.0, **run)
            samp_size = size[labels]
            joint = np.unique(map_labels * n + labels, return_inverse=True,
                              return_counts=True)
            inter = joint[2][joint[1].ravel()] - 1
            union = (pred_size - 1) + (samp_size - 1) - inter
            conf += np.where(union > 0, inter / np.maximum(union, 1), 1.0)
            pk = _within_pairs(labels)
            pending.append(pk)
            n_pending += len(pk)
            if n_pending > 2_000_000:
                keys, counts = _merge_counts(keys, counts, pending)
                pending, n_pending = [], 0
        keys, counts = _merge_counts(keys, counts, pending)
        return keys, counts, conf / int(self.n_samples), evals


def _check_initial(initial, n_total):
    """Validate ``fit(initial=...)``: a 1-D object array of length n_total, or None."""
    if initial is None:
        return None
    if isinstance(initial, (str, bytes)) or not hasattr(initial, "__len__"):
        raise TypeError("initial must be an array-like of cluster keys (one per row of df); "
                        f"got {type(initial).__name__}")
    arr = np.empty(len(initial), dtype=object)
    arr[:] = list(initial.to_numpy() if isinstance(initial, (pd.Series, pd.Index)) else initial)
    if len(arr) != n_total:
        raise ValueError(f"initial must have one key per row of df ({n_total}); "
                         f"got {len(arr)}")
    for k, v in enumerate(arr):
        try:
            hash(v)
        except TypeError:
            raise TypeError(f"initial[{k}] = {v!r} is not hashable; cluster keys must be "
                            "hashable (str, int, ...)") from None
    return arr


def _check_fixed(fixed, n_total):
    """Validate ``fit(fixed=...)``: a 1-D bool array of length n_total, or None."""
    if fixed is None:
        return None
    arr = np.asarray(fixed.to_numpy() if isinstance(fixed, (pd.Series, pd.Index)) else fixed)
    if arr.ndim != 1:
        raise ValueError(f"fixed must be 1-D (one flag per row of df); got shape {arr.shape}")
    if arr.dtype != np.bool_:
        raise TypeError(f"fixed must be an array of bool (one flag per row of df); got dtype "
                        f"{arr.dtype}")
    if len(arr) != n_total:
        raise ValueError(f"fixed must have one flag per row of df ({n_total}); got {len(arr)}")
    return arr


def _initial_labels(keys):
    """Labels in [0, n) from the initial keys of one block (canonical order).

    Distinct keys get labels 0, 1, ... in order of first appearance; each missing
    key (None / NaN / pd.NA) gets a label of its own after them.
    """
    n = len(keys)
    missing = np.fromiter((_is_missing(v) for v in keys), dtype=bool, count=n)
    labels = np.empty(n, np.int64)
    codes = {}
    for k in np.flatnonzero(~missing):
        labels[k] = codes.setdefault(keys[k], len(codes))
    labels[missing] = len(codes) + np.arange(int(missing.sum()))
    return labels


def _is_missing(v):
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    return isinstance(v, (float, np.floating)) and v != v


def _within_pairs(labels):
    """Keys a * n + b (a < b) of every pair of positions sharing a label, sorted.

    Vectorised; memory is the number of such pairs (sum of m (m - 1) / 2 over
    clusters of size m), never n^2 for a block of singletons.
    """
    labels = np.asarray(labels, np.int64)
    n = len(labels)
    order = np.lexsort((np.arange(n), labels))
    lab_sorted = labels[order]
    # end (exclusive) of the group of each sorted position
    bounds = np.flatnonzero(np.diff(lab_sorted)) + 1
    ends = np.repeat(np.append(bounds, n), np.diff(np.concatenate([[0], bounds, [n]])))
    c = ends - np.arange(n) - 1                       # partners after each position
    total = int(c.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    first = np.repeat(np.arange(n), c)
    step = np.arange(total) - np.repeat(np.cumsum(c) - c, c) + 1
    a, b = order[first], order[first + step]
    return np.sort(a * n + b)


def _merge_counts(keys, counts, pending):
    """Add the occurrences of the key arrays in ``pending`` to (keys, counts)."""
    if not pending:
        return keys, counts
    allk = np.concatenate([keys] + pending)
    allc = np.concatenate([counts, np.ones(len(allk) - len(keys), np.int64)])
    uk, inv = np.unique(allk, return_inverse=True)
    return uk, np.bincount(inv.ravel(), weights=allc, minlength=len(uk)).astype(np.int64)
