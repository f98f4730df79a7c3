"""Gibbs on one encoded block: set up the kernel's arguments, run the sweeps, collect.

``fit_block`` runs every annealed sweep of one block through the compiled kernel
(``coref.gibbs._gibbs.anneal``), with merge proposals between sweeps when asked
(:mod:`coref.gibbs.merges`) and temperature-1 sweeps for marginals after them
(:mod:`coref.gibbs.marginals`).  The block's component memo tables are shared by
every kernel call on it (``coref.factors._factors.share_memo``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from sampling.utils.kernels import load_kernel

from coref.gibbs.arm_bound import component_bound
from coref.gibbs.partners import partner_index
from coref.gibbs.control import conflict_ranks, conflict_weight
from coref.gibbs.marginals import sample_marginals
from coref.gibbs.link_merges import link_merges
from coref.gibbs.merges import merge_moves
from coref.gibbs.schedule import EarlyStop, bound_table_ro, stop_mask, temperature_schedule
from coref.gibbs.seeding import block_rng, kernel_state
from coref.gibbs.start import coauthor_greedy, component_start
from coref.model.block_prior import block_shift_evals, block_theta, shifted_bias
from coref.model.shift_tree import take_factor_matrix
from coref.encoding.blocks import permute_block

_gibbs = load_kernel("coref.gibbs._gibbs")
_factors = load_kernel("coref.factors._factors")

__all__ = ["FACTOR_CACHE_MB", "EXACT_BOUND_MAX_N", "BOUND_PAIRS_PER_MENTION", "MEMO_PARTNERS",
           "MEMO_ROW_FRACTION", "STILL_FRACTION", "STILL_MIN_N", "START_MIN_N", "BIG_INIT",
           "still_moves", "start_labels", "block_temperatures", "KernelRun", "BlockRun", "fit_block"]

#: Factor-matrix budget (MiB) of ``sampler="auto"`` when ``factor_cache_mb`` is 0, and of
#: the package's own exact Gibbs runs (the intercept tuning of ``PairwiseModel``, the
#: clusterings that confidence calibration is fitted on): a block whose n x n matrix fits
#: (n <= 5,792) is sampled from it, with the same clusters as without it.
FACTOR_CACHE_MB = 256.0

#: Racing's small-arm bound fmax_i >= max_j f(i, j): blocks of up to this many mentions
#: get the exact row maxima (n (n - 1) / 2 factors before the first sweep); larger blocks a
#: bound from the factor's structure across coauthor components and the exact maxima
#: inside the small ones (``coref.gibbs.arm_bound.component_bound``), at most
#: ``BOUND_PAIRS_PER_MENTION`` * n factors.  0: with the partner memo the exact pass costs
#: more than it saves (measured: 3,000-mention one-name block 23.3M factors with it, 13.1M
#: without, same B3; shipped data 2.6M / 1.9M, same B3).
EXACT_BOUND_MAX_N = 0
#: Factor budget per mention of ``component_bound`` in blocks above ``EXACT_BOUND_MAX_N``.
BOUND_PAIRS_PER_MENTION = 200
#: Racing's partner memo (``coref.gibbs._gibbs.anneal``, ``memo_j``): partners kept per
#: mention (K; 16 K bytes per mention: 205 MB at n = 100,000), and the pending small-arm
#: members, as a fraction of the block, at which a step evaluates its mention's whole row
#: to build the memo.  Measured on a 3,000-mention one-name block: K = 32 22.2M factors,
#: 5.1 CPU-s; K = 128 13.1M, 4.0 CPU-s (same clusters); the fraction 1/16 or 1/64 or 0
#: changes little.
MEMO_PARTNERS = 128
MEMO_ROW_FRACTION = 1.0 / 16.0
#: Racing's memo in blocks of at least ``PARTNER_MIN_N`` mentions is built from each
#: mention's candidate partners (``coref.gibbs.partners``: those sharing a coauthor, group,
#: venue, affiliation or a key of few postings: ``PARTNER_LEVELS``) and a bound of the
#: others' factors, kept when that bound is at most max(the candidates' rest,
#: ``PARTNER_ACCEPT``), else from the whole row.
#: There every mention's memo is built at its first step, and keeps up to
#: ``PARTNER_MEMO_K`` partners (within ``PARTNER_MEMO_MB`` for the block's memo, never
#: fewer than ``MEMO_PARTNERS``): a mention of an author with hundreds of mentions has
#: that many partners above the bound.  Measured on the one-name 10,000-mention block
#: (racing, shipped model): whole rows, K = 128: 1.34e8 factors, 29.6 CPU-s; candidates,
#: K = 128: 8.6e7, 25.7 s; K = 512: 5.8e7, 17.4 s; K = 1,024: 5.3e7, 17.2 s (B3 F1
#: 0.916, 0.916, 0.915, 0.915); max_df 256: 9.1e7, 20.8 s; accept -1 / +2: 20.0 / 21.1 s.
PARTNER_MIN_N = 2000
#: The index's levels (``partner_index(max_df=...)``): keys of at most max(m, f n)
#: postings per (m, f); a mention whose bound is too loose at one level tries the next
#: before its whole row.
PARTNER_LEVELS = ((1024, 0.04), (4096, 0.33))
PARTNER_ACCEPT = 0.0
PARTNER_MEMO_K = 512
PARTNER_MEMO_MB = 512.0
#: The memo's second tier (``anneal(memo_ovf=...)``): the partners of a mention above its
#: bound beyond the K kept, listed within this many MB for the block (0: off).
PARTNER_TIER_MB = 512.0
#: Threads of a racing block's first sweep: one runs the steps, the others build the
#: candidate memos ahead of them (``coref.gibbs._pipe.pipelined_sweep``; labels and
#: factor counts do not depend on it): None = the cores this process may use, or
#: ``OMP_NUM_THREADS`` when set (Dask's workers set it to 1).
MEMO_THREADS = None
#: ``sampler="auto"`` races a block of at least this many mentions even when its factor
#: matrix fits the budget: with the candidate memo racing costs less there (one-name
#: blocks, shipped model, one process, 2026-11-27: 3,000 mentions racing 2.9 / exact from
#: the cached matrix 2.1 CPU-s; 5,000: 3.8 / 4.3; 10,000: 16.0 / 18.4).
AUTO_RACING_MIN_N = 5000
#: Early stop (``patience``) in blocks of at least ``STILL_MIN_N`` movable mentions: a
#: counting sweep is still when it moves at most ``STILL_FRACTION`` of them (rounded down);
#: in smaller blocks only a sweep without a move is.  Racing's tests err with probability up
#: to ``delta`` each, so a big block keeps moving a few mentions per sweep at any temperature
#: (one-name 10,000-mention block, shipped model: 1.8-2.3% of the mentions in every sweep
#: from temperature 0.4 to 0.05, B3 F1 flat from sweep 10 on) and would never stop otherwise.
STILL_FRACTION = 0.03
STILL_MIN_N = 5000
#: ``init="auto"``: a block of at least ``START_MIN_N`` mentions, all movable and without
#: initial labels, starts from the ``BIG_INIT`` clustering of ``coref.gibbs.start``
#: (any other block from singletons).  From singletons the first sweep of a block of n
#: mentions races each mention against up to n arms (~6e9 factors at n = 100,000).
START_MIN_N = STILL_MIN_N
BIG_INIT = "greedy"
#: Racing's control variate (``coref.gibbs.control``): first names ranked per block for
#: h(i, j) = w [ranks differ] (0: off).  Blocks with fewer than two full first names, and
#: models whose ``name_first_conflict`` weight is 0, run without it.
CONTROL_VARIATE_RANKS = 64
#: After annealing, a block of at least ``LINK_MERGE_MIN_N`` mentions (all movable) merges
#: linked clusters whose factors average above ``LINK_MERGE_MIN_MEAN`` per pair
#: (``coref.gibbs.link_merges``), within ``LINK_MERGE_EVALS_PER_MENTION`` * n factors, then
#: runs ``LINK_MERGE_SETTLE`` sweeps at the last temperature if anything merged.  Blocks
#: sampled from their cached factor matrix always (the sums cost no factor); racing blocks
#: only with ``LINK_MERGE_RACING``.  Measured (shipped model, seed 0, re-predicting the
#: grouped 5-fold CV of aminer_na + aminer_dblp_dev; and ``coref synth --mentions 100000``;
#: ``benchmarks/scripts/coref_link_merges.py``):
#: off: B3 F1 0.8897 (dev names 0.9010), synthetic 0.9231; margin 0: 0.8913 (0.9029),
#: 0.8932; 0.5: 0.8914 (0.9027), 0.9012; 1: 0.8929 (0.9049), 0.9070; 2: 0.8921 (0.9054),
#: 0.9146.  The synthetic corpus loses what the real names gain: its authors of one
#: coauthor community are drawn alike (``coref.synth``), so the model's own optimum merges
#: them.  Racing on one-name blocks of 10,000 / 30,000 mentions (margin 0): 0.9156 ->
#: 0.9163 / 0.8855 -> 0.8864 for 18% / 23% more wall time (their split authors'
#: sub-clusters have Delta < 0: the model, not the search, keeps them apart), hence off there.
LINK_MERGE_MIN_N = 2
LINK_MERGE_MIN_MEAN = 1.0
LINK_MERGE_EVALS_PER_MENTION = 1000
LINK_MERGE_SETTLE = 1
LINK_MERGE_RACING = False
#: A racing block of at least ``LOCALITY_MIN_N`` mentions, all movable and without initial
#: labels, is sampled with the mentions of each starting cluster next to each other in memory
#: (``coref.encoding.permute_block``; the labels are mapped back): the members a step draws
#: share cache lines. The same factors, another row order (so another, equally valid chain).
#: One-name block of 30,000 mentions, Gibbs wall 22.9 s in canonical (mention id) order,
#: 17.2 s with the mentions grouped by author (7.1e7 / 7.2e7 factors, B3 F1 0.8926 / 0.8920).
LOCALITY_MIN_N = 5000


def memo_threads():
    """Threads for the candidate memos' first builds (:data:`MEMO_THREADS`), >= 1."""
    if MEMO_THREADS is not None:
        return max(1, int(MEMO_THREADS))
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


@dataclass
class KernelRun:
    """The arguments of every kernel call on one block (the state arrays are updated in place).

    ``fmat_mode``: 1 until the call that computes the factor matrix (exact sampler,
    ``fmat`` given), 2 after it (later calls read the matrix); 0 without a matrix.
    ``memo_j``, ``memo_f``, ``memo_rest``, ``memo_row_min``: racing's partner memo (kept
    across the calls), or None.  ``cv_rank``, ``cv_weight``: racing's control variate
    (``coref.gibbs.control``), or None / 0.0.  ``partners``: the memo's candidate index
    (``coref.gibbs.partners.PartnerIndex``) with ``partner_accept``, or None.
    """

    enc: object
    theta: np.ndarray
    bias: float
    racing: int
    movable: np.ndarray
    first_batch: int = 3
    b_table: np.ndarray = None
    rng_state: np.ndarray = None
    fmax: np.ndarray = None
    fmat: np.ndarray = None
    fmat_mode: int = 0
    memo_j: np.ndarray = None
    memo_f: np.ndarray = None
    memo_rest: np.ndarray = None
    memo_row_min: int = 0
    still_moves: int = 0
    cv_rank: np.ndarray = None
    cv_weight: float = 0.0
    partners: object = None
    partner_accept: float = 0.0
    memo_ovf: np.ndarray = None
    memo_ovf_at: np.ndarray = None
    memo_tier: np.ndarray = None
    memo_threads: int = 1

    def anneal(self, labels, size, inv_temps, stop_mask, patience, bound_mode, lab_hist, evals):
        """One ``coref.gibbs._gibbs.anneal`` call; returns the number of sweeps run."""
        mode = self.fmat_mode
        if self.fmat is not None:
            self.fmat_mode = 2
        return _gibbs.anneal(self.enc, self.theta, self.bias, labels, size, self.movable, inv_temps,
                             stop_mask, patience, self.racing, self.first_batch, bound_mode, self.fmax,
                             self.b_table, self.rng_state, lab_hist, evals, self.fmat, mode,
                             self.memo_j, self.memo_f, self.memo_rest, self.memo_row_min,
                             self.still_moves, self.cv_rank, self.cv_weight, *self._index(),
                             memo_threads=self.memo_threads)

    def _index(self):
        """The candidate index arguments of the kernel (all None without one)."""
        p = self.partners
        tier = (self.memo_ovf, self.memo_ovf_at, self.memo_tier)
        if p is None:
            return (None,) * 5 + (float(self.partner_accept),) + tier
        return (p.q_ptr, p.q_key, p.k_ptr, p.k_men, p.rest, float(self.partner_accept)) + tier

    def sweep(self, labels, size, inv_temp, bound_mode):
        """One Gibbs sweep (fresh random order) in place; return the factors evaluated."""
        ev = np.zeros(1, np.int64)
        self.anneal(labels, size, np.array([inv_temp]), np.zeros(1, np.int8), 0, bound_mode,
                    np.zeros((0, self.enc.n), np.int64), ev)
        return int(ev[0])


@dataclass
class BlockRun:
    """What ``fit_block`` returns for one block.

    Attributes
    ----------
    labels : ndarray of int64, shape (n,)
        Final labels in [0, n).
    evals : ndarray of int64, shape (n_sweeps + 1,)
        Factors evaluated before the sweeps (entry 0: the block prior) and per sweep.
    lab_hist : ndarray of int64, shape (n_sweeps + 1, n), or None
        Labels per sweep (row 0: initial; rows after an early stop repeat the last).
    marginals : tuple or None
        ``sample_marginals``' ``(keys, counts, confidence, evals)`` when ``n_samples`` > 0.
    used : int
        Annealed sweeps run.
    cached : bool
        True when the sweeps read the block's factor matrix.
    prior_shift : float
        The block's prior shift d_b the factors used (natural-log odds; 0.0 for models
        without a block prior).
    """

    labels: np.ndarray
    evals: np.ndarray
    lab_hist: np.ndarray
    marginals: tuple
    used: int
    cached: bool
    prior_shift: float = 0.0


def fit_block(settings, model, enc, block, seed, temps, labels0=None, movable=None,
              record_history=True, prior_shift=None):
    """Run every sweep on one encoded block.

    Parameters
    ----------
    settings : coref.settings.GibbsSettings
    model : PairwiseModel
        Fitted (``theta_``, block prior through ``coref.model.block_bias_evals``).
    enc : EncodedBlock
        The block's mentions in canonical order.
    block : str
        Block name (seeds ``block_rng(seed, block)``).
    seed : int
        Run seed.
    temps : ndarray of float, shape (n_sweeps,)
        Temperature of each annealed sweep.
    labels0 : ndarray of int, shape (n,), optional
        Initial labels in [0, n) (None = ``settings.init``).
    movable : ndarray of int, optional
        Sorted positions of the mentions Gibbs may move (None = all).
    record_history : bool, default True
        Keep the labels of every sweep.
    prior_shift : float or None
        The block's prior shift d_b (natural-log odds) to use instead of estimating it
        (``coref add`` keeps an existing block's); None estimates it
        (``PairwiseModel.block_shift``).

    Returns
    -------
    BlockRun
    """
    # one set of component memo tables for the prior's pairs and every kernel call of
    # this block (they hold features only; coref.factors._factors.share_memo), dropped after
    _factors.share_memo(enc)
    try:
        return _fit_encoded(settings, model, enc, block, seed, temps, labels0, movable,
                            record_history, prior_shift)
    finally:
        _factors.unshare_memo(enc)


def still_moves(n_mov):
    """Moves a counting sweep may make and still count as still (``STILL_FRACTION``)."""
    return int(STILL_FRACTION * n_mov) if n_mov >= STILL_MIN_N else 0


def start_labels(init, enc, theta, bias, labels0=None, movable=None):
    """The starting labels of one block and the factors they cost.

    Parameters
    ----------
    init : {"auto", "singletons", "one", "greedy", "components"}
        ``GibbsSettings.init``.  "auto": ``BIG_INIT`` for a block of at least
        ``START_MIN_N`` mentions when every mention is movable, else "singletons";
        "greedy": :func:`coref.gibbs.start.coauthor_greedy`; "components":
        :func:`coref.gibbs.start.component_start`.
    enc : EncodedBlock
    theta : ndarray of float64
    bias : float
        The block's intercept.
    labels0 : ndarray of int, shape (n,), optional
        Given initial labels (``fit(initial=...)``): they take precedence over ``init``.
    movable : ndarray of int, optional
        The movable mentions (``fit(fixed=...)``; None = all).

    Returns
    -------
    labels : ndarray of int64, shape (n,)
    evals : int
        Factors evaluated (the greedy's; 0 otherwise).
    """
    n = int(enc.n)
    if labels0 is not None:
        return np.array(labels0, dtype=np.int64), 0
    if init == "auto":
        init = BIG_INIT if movable is None and n >= START_MIN_N else "singletons"
    if init == "greedy":
        return coauthor_greedy(enc, theta, bias)
    if init == "components":
        return component_start(enc), 0
    if init == "singletons":
        return np.arange(n, dtype=np.int64), 0
    return np.zeros(n, dtype=np.int64), 0


def block_temperatures(settings, temps, n_movable):
    """The temperatures of one block's annealed sweeps: ``temps``, or for a block of at least
    ``STILL_MIN_N`` movable mentions the geometric schedule of ``settings.big_block_sweeps``
    sweeps (at most ``len(temps)``) from ``settings.t_start`` to ``settings.t_end``."""
    k = settings.big_block_sweeps
    if k is None or n_movable < STILL_MIN_N or k >= len(temps):
        return temps
    return temperature_schedule(k, settings.t_start, settings.t_end)


def partner_levels(n):
    """The ``max_df`` levels of the candidate index of a block of n mentions (increasing)."""
    out = []
    for m, f in PARTNER_LEVELS:
        d = max(int(m), int(f * n))
        if not out or d > out[-1]:
            out.append(d)
    return tuple(out)


def _fit_encoded(settings, model, enc, block, seed, temps, labels0, movable, record_history, prior_shift=None):
    """``fit_block`` once the memo tables are shared."""
    n = enc.n
    gen = block_rng(seed, block)
    budget = settings.factor_cache_mb
    if settings.sampler == "auto" and budget == 0.0:
        budget = FACTOR_CACHE_MB
    fits = n > 1 and 8.0 * n * n <= budget * 2.0**20
    racing = 1 if settings.sampler == "racing" or (
        settings.sampler == "auto" and (not fits or (n >= AUTO_RACING_MIN_N and n >= PARTNER_MIN_N))) else 0
    theta = block_theta(model, enc)
    # bias_ + the block's prior shift (coref.model), whose estimate counts in sweep 0
    if prior_shift is None:
        shift, bias, prior_evals = block_shift_evals(model, enc)
    else:
        shift, bias, prior_evals = float(prior_shift), shifted_bias(model, enc, prior_shift), 0
    labels, start_evals = start_labels(settings.init, enc, theta, bias, labels0, movable)
    grouped = racing and n >= LOCALITY_MIN_N and labels0 is None and movable is None
    order = np.argsort(labels, kind="stable") if grouped else None   # each starting cluster's mentions together
    if not grouped or np.all(np.diff(order) == 1):
        return _sample(settings, model, enc, gen, temps, labels, movable, racing, fits, theta, bias,
                       prior_evals + start_evals, shift, record_history)
    local = permute_block(enc, order)
    _factors.share_memo(local)
    try:
        res = _sample(settings, model, local, gen, temps, labels[order], movable, racing, fits, theta, bias,
                      prior_evals + start_evals, shift, record_history)
    finally:
        _factors.unshare_memo(local)
    return _unpermute(res, order)


def _unpermute(res, order):
    """The BlockRun of a block sampled in the row order ``order`` (row k = mention order[k]), in its own order."""
    labels = np.empty_like(res.labels)
    labels[order] = res.labels
    hist = None
    if res.lab_hist is not None:
        hist = np.empty_like(res.lab_hist)
        hist[:, order] = res.lab_hist
    marg = res.marginals
    if marg is not None:
        keys, counts, conf, evals = marg
        n = len(order)
        a, b = order[keys // n], order[keys % n]
        keys = np.minimum(a, b) * n + np.maximum(a, b)
        sort = np.argsort(keys, kind="stable")
        c = np.empty_like(conf)
        c[order] = conf
        marg = (keys[sort], counts[sort], c, evals)
    return BlockRun(labels, res.evals, hist, marg, res.used, res.cached, res.prior_shift)


def _sample(settings, model, enc, gen, temps, labels, movable, racing, fits, theta, bias, evals0, shift,
            record_history):
    """``_fit_encoded`` from the starting labels on (``evals0``: the factors of the prior and the start)."""
    n = enc.n
    size = np.bincount(labels, minlength=n).astype(np.int64)
    ev = np.zeros(len(temps) + 1, np.int64)
    ev[0] = evals0                          # the prior's and the start's factors count in sweep 0
    lab_hist = np.zeros((len(temps) + 1, n), np.int64) if record_history else None
    if lab_hist is not None:
        lab_hist[0] = labels
    if movable is None:
        movable = np.arange(n, dtype=np.int64)
    # exact sampler: the block's factor matrix when it fits the budget (mode 1 on the
    # first kernel call computes the movable rows, later calls read them: mode 2)
    fmat = np.zeros((n, n)) if not racing and fits else None
    fmat_mode = 0 if fmat is None else 1
    if fmat is not None and hasattr(model, "base_bias"):
        # the block prior's statistics (coref.model.shift_tree) evaluated every factor of the block
        # at the intercept before the shift: the cache is that matrix, shifted (mode 2 reads it)
        base_bias = model.base_bias(enc)
        ready = take_factor_matrix(enc, theta, base_bias)
        if ready is not None:
            ready += bias - base_bias
            np.fill_diagonal(ready, 0.0)
            fmat, fmat_mode = ready, 2
    if fmat_mode == 1 and 2 * len(movable) > n:
        # most rows are needed: the symmetric matrix once (n (n - 1) / 2 factors, the
        # kernel's f(i, j) = f(j, i) bit for bit) instead of mode 1's n_mov (n - 1)
        _factors.factor_matrix(enc, theta, bias, fmat)
        fmat_mode = 2
        ev[0] += n * (n - 1) // 2
    run = KernelRun(enc=enc, theta=theta, bias=bias, racing=racing,
                    movable=np.ascontiguousarray(movable, dtype=np.int64),
                    first_batch=int(settings.first_batch),
                    b_table=bound_table_ro(float(settings.delta), n + 1),
                    rng_state=kernel_state(gen), fmax=np.full(n, -np.inf), fmat=fmat, fmat_mode=fmat_mode,
                    still_moves=still_moves(len(movable)))
    # a big block anneals in fewer sweeps (the rows and counts of the others: as after an early stop)
    temps = block_temperatures(settings, temps, len(movable))
    inv_temps = 1.0 / np.asarray(temps, dtype=np.float64)
    mask = stop_mask(temps, settings.early_stop_temp)
    kh = lab_hist[1:len(temps) + 1] if lab_hist is not None else np.zeros((0, n), np.int64)
    # small-arm bound: mode 1 computes the exact row maxima in the first kernel call,
    # mode 2 reads run.fmax (the structural bound of a big block, or mode 1's result)
    bound_mode = int(bool(settings.small_arm_bound)) if racing else 0
    bound_evals = 0
    if bound_mode and MEMO_PARTNERS > 0 and n > 1:
        k = min(MEMO_PARTNERS, n - 1)
        if n >= PARTNER_MIN_N:
            run.partners = partner_index(enc, theta, bias, partner_levels(n))
            run.partner_accept = PARTNER_ACCEPT
            if run.partners is not None:
                k = min(max(MEMO_PARTNERS, min(PARTNER_MEMO_K, int(PARTNER_MEMO_MB * 2**20) // (16 * n))), n - 1)
                if PARTNER_TIER_MB > 0:
                    run.memo_ovf = np.zeros(max(1, int(PARTNER_TIER_MB * 2**20) // 8), np.int64)
                    run.memo_ovf_at = np.zeros(2 * n + 1, np.int64)
                    run.memo_tier = np.zeros(n)
                run.memo_threads = memo_threads()
        run.memo_j = np.zeros((n, k), np.int64)
        run.memo_f = np.zeros((n, k))
        run.memo_rest = np.full(n, np.nan)
        run.memo_row_min = max(int(n * MEMO_ROW_FRACTION), 1)
    if racing and CONTROL_VARIATE_RANKS > 0 and n > 1:
        run.cv_rank = conflict_ranks(enc, CONTROL_VARIATE_RANKS)
        run.cv_weight = conflict_weight(theta) if run.cv_rank is not None else 0.0
    # (a one-mention block has no pair to bound: auto gives it racing, as no matrix is cached for it)
    if bound_mode and n > max(EXACT_BOUND_MAX_N, 1) and len(temps) > 0 and len(movable) > 0:
        res = component_bound(enc, theta, bias, BOUND_PAIRS_PER_MENTION * n)
        if res is not None:
            run.fmax[:], bound_evals = res
            bound_mode = 2
    if settings.merge_moves > 0 and n > 1 and len(movable) > 0:
        used = _anneal_with_merges(settings, labels, size, inv_temps, mask, run, gen, kh, ev,
                                   bound_mode)
    else:
        used = run.anneal(labels, size, inv_temps, mask, settings.patience, bound_mode, kh,
                          ev[1:len(temps) + 1])
    ev[1] += bound_evals            # the bound's factors count in sweep 1 (as mode 1's)
    if n >= LINK_MERGE_MIN_N and used > 0 and len(movable) == n and (fmat is not None or LINK_MERGE_RACING):
        merged, e = link_merges(labels, size, run, LINK_MERGE_EVALS_PER_MENTION * n, LINK_MERGE_MIN_MEAN)
        for _ in range(LINK_MERGE_SETTLE if merged else 0):
            e += run.sweep(labels, size, inv_temps[used - 1], 2 if bound_mode else 0)
        ev[used] += e
        if lab_hist is not None:
            lab_hist[used] = labels
    if lab_hist is not None:
        lab_hist[used + 1:] = labels
    marg = None
    if settings.n_samples > 0:
        marg = sample_marginals(
            lambda lab, sz, inv_temp: run.sweep(lab, sz, inv_temp, 2 if bound_mode else 0),
            labels, size, settings.n_samples)
    return BlockRun(labels, ev, lab_hist, marg, used, fmat is not None, shift)


def _anneal_with_merges(settings, labels, size, inv_temps, mask, run, gen, kh, ev, bound_mode):
    """Sweeps one at a time, each followed by ``merge_moves`` cluster-merge proposals.

    Same early-stop rule as the kernel; an accepted merge counts as a move.
    ``bound_mode``: the small-arm bound mode of the first sweep (later sweeps: 2 if set).
    Returns the number of sweeps run.
    """
    n = run.enc.n
    fixed = np.ones(n, bool)
    fixed[run.movable] = False
    stop = EarlyStop(settings.patience)
    used = 0
    for s, inv_temp in enumerate(inv_temps):
        before = labels.copy()
        e = run.sweep(labels, size, inv_temp, bound_mode if s == 0 else (2 if bound_mode else 0))
        if 1.0 / inv_temp <= float(settings.merge_max_temp):
            e += merge_moves(labels, size, float(inv_temp), run, gen, fixed, settings)
        ev[s + 1] = e
        if len(kh):
            kh[s] = labels
        used = s + 1
        if stop.update(bool(mask[s]), int((before != labels).sum()) > run.still_moves):
            break
    return used
