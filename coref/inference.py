"""Gibbs over blocks, on an executor: this process or a Dask cluster.

Blocks are independent given theta, so inference maps blocks over an executor:
in-process ("local") or a Dask cluster (``workers=N`` starts a
``distributed.LocalCluster``, ``scheduler=ADDRESS`` connects to a running one). Each
block gets its own random generator ``coref.gibbs.block_rng(seed, block)`` and runs with
one BLAS / OpenMP thread, so the clusters do not depend on the executor, on the number
of workers or on the order in which blocks finish. The executors themselves (Dask
clusters, one thread per task, the progress bar) are :mod:`coref.executors`.

References
----------
.. [1] Chen, Y. & Ghahramani, Z. (2016). Scalable discrete sampling as a multi-armed
   bandit problem. ICML. Sec. 5.3 (author coreference) and Appx. C.3.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from coref.executors import chunks, executor_context, progress_bar, run_on_dask, single_thread
from coref.encoding.blocks import assemble_block, assemble_blocks
from coref.encoding.cache import EncodingCache
from coref.gibbs import GibbsCoref
from coref.margins import cluster_margins
from coref.model.block_prior import block_bias_evals, block_theta, shifted_bias

__all__ = ["BlockResult", "block_order", "TOGETHER_MENTIONS", "block_sampler", "encode_blocks", "execute",
           "executor_context", "infer_blocks", "pad", "single_thread"]

CHUNK_MENTIONS = 400  # Dask: group small blocks into tasks of about this many mentions


def _gibbs_cls():
    """The sampler class, looked up at call time (tests substitute a stand-in)."""
    return GibbsCoref


def _samples_many_blocks(cls):
    """True if ``cls`` (or the class a ``functools.partial`` wraps) is :class:`coref.gibbs.GibbsCoref`.

    Only it reports each block's labels and factor counts apart after one ``fit`` of
    several blocks (a test's stand-in sampler fits one block per call).
    """
    cls = getattr(cls, "func", cls)
    return isinstance(cls, type) and issubclass(cls, GibbsCoref)


@dataclass(frozen=True)
class BlockResult:
    """Gibbs output for one (sampler, fold, block).

    Attributes
    ----------
    sampler : str
    fold : int
    block : str
    mention_id : ndarray of shape (n_block,)
        Mention ids in the block's row order.
    cluster_id : ndarray of shape (n_block,)
        Final cluster id of each mention (``GibbsCoref.clusters_``).
    n_factor_evals : int
        Pairwise factors evaluated in the block (all sweeps).
    wall_s : float
        Seconds spent in ``GibbsCoref.fit`` for the block.
    evals_history : ndarray of shape (n_sweeps + 1,)
        Cumulative factor evaluations after each sweep (entry 0 = before sweep 1).
    labels_history : ndarray of shape (n_sweeps + 1, n_block) or None
        Cluster label of each mention after each sweep (row 0 = initial state).
    margin : ndarray of shape (n_block,) or None
        Sum of f_theta to the other members of the mention's final cluster (NaN for a
        singleton); only when asked for (``margins=True``).
    cached : bool or None
        True when the block was sampled by exact Gibbs from its cached factor matrix
        (``GibbsCoref.cached_blocks_``); None when the sampler does not say.
    prior_shift : float or None
        The block's prior shift d_b its factors used (natural-log odds,
        ``GibbsCoref.prior_shifts_``); None when the sampler does not say.
    """

    sampler: str
    fold: int
    block: str
    mention_id: np.ndarray
    cluster_id: np.ndarray
    n_factor_evals: int
    wall_s: float
    evals_history: np.ndarray
    labels_history: np.ndarray | None = field(default=None, repr=False)
    margin: np.ndarray | None = field(default=None, repr=False)
    cached: bool | None = None
    prior_shift: float | None = None

    @property
    def block_sampler(self):
        """What sampled the block: ``"exact-cached"``, ``"exact"`` or ``"racing"``."""
        return block_sampler(self.sampler, self.cached)


def block_sampler(sampler, cached):
    """The sampler a block actually got: ``"exact-cached"``, ``"exact"`` or ``"racing"``.

    ``sampler`` is the one asked for; ``cached`` whether the block read its cached factor
    matrix (None: unknown, taken as False).  ``"auto"`` is exact where cached, racing elsewhere.
    """
    if cached:
        return "exact-cached"
    return "racing" if sampler in ("racing", "auto") else "exact"


def _cached_set(g):
    """The blocks a fitted ``GibbsCoref`` sampled from their cached factor matrix (None: not said)."""
    cached = getattr(g, "cached_blocks_", None)
    return None if cached is None else set(cached)


def _was_cached(cached, block):
    """``block`` in ``cached`` (from :func:`_cached_set`), None when that is None."""
    return None if cached is None else str(block) in cached


def _shift_of(g, block):
    """The prior shift a fitted sampler used in ``block`` (``GibbsCoref.prior_shifts_``), None when not said."""
    shifts = getattr(g, "prior_shifts_", None)
    return None if shifts is None or str(block) not in shifts else float(shifts[str(block)])


def _block_bias(model, enc, shift):
    """The intercept of the block ``enc``: at the prior shift its sampler used, or the model's estimate."""
    return block_bias_evals(model, enc)[0] if shift is None else shifted_bias(model, enc, shift)




def _infer_block(block_df, model, *, sampler, fold, block, settings, record_history, initial=None, fixed=None,
                 margins=False, parts=None, prior_shift=None):
    """Run Gibbs on one block with its own generator; assumes validated input.

    ``initial`` / ``fixed`` (per row of ``block_df``) start Gibbs from given clusters and
    keep some mentions where they are (``coref add``). ``margins``: also return each
    mention's margin (:func:`coref.margins.cluster_margins`) from the same encoding.
    ``parts``: the per-mention encoding of the rows of ``block_df``
    (:class:`coref.encoding.MentionEncoding`); the block is then assembled from it
    (:func:`coref.encoding.assemble_block`) instead of encoded from the text, and
    ``block_df`` may be just the rows' mention ids (only its length is used).
    ``prior_shift``: the block's d_b (``GibbsCoref.fit(prior_shift=...)``; None = estimated).
    """
    Gibbs = _gibbs_cls()
    kwargs = settings.gibbs_kwargs(sampler)
    encodings = None
    mids = None
    if margins or parts is not None:
        # rows in mention-id order, the order GibbsCoref encodes them in: one encoding for both
        if parts is None:
            mids = block_df["mention_id"].astype(str).to_numpy(dtype=object)
        else:
            mids = np.asarray(parts.mention_id, dtype=object)    # the ids of block_df's rows (checked)
        order = np.argsort(mids, kind="stable")
        in_order = bool(np.array_equal(order, np.arange(len(order))))
        mids = mids[order]
        if parts is None:
            block_df = block_df.iloc[order].reset_index(drop=True)
        else:   # Gibbs reads only the ids and the block; the rest is in parts
            block_df = pd.DataFrame({"mention_id": mids, "block": np.full(len(mids), block, dtype=object)})
        initial = None if initial is None else np.asarray(initial, dtype=object)[order]
        fixed = None if fixed is None else np.asarray(fixed, dtype=bool)[order]
        if parts is None:
            enc = model.encode(block_df)
        else:
            enc = assemble_block(parts if in_order else parts.take(order))
        encodings = EncodingCache(model)
        encodings.put(block, mids, enc)
    # GibbsCoref samples block b with coref.gibbs.block_rng(seed, b): the result depends on
    # (model, block, seed) only, not on the executor or on which blocks share a task.
    kwargs.update(rng=settings.seed, record_history=record_history)
    t0 = time.perf_counter()
    g = Gibbs(model, **kwargs)
    fit_kw = {} if encodings is None else {"encodings": encodings}
    if initial is not None or fixed is not None:
        fit_kw.update(initial=initial, fixed=fixed)
    if prior_shift is not None:
        fit_kw.update(prior_shift={str(block): float(prior_shift)})
    g = g.fit(block_df, **fit_kw)
    shift = _shift_of(g, block)
    wall = float(getattr(g, "wall_s_", time.perf_counter() - t0))
    if mids is None:
        mids = block_df["mention_id"].astype(str).to_numpy(dtype=object)
    cluster_id = _clusters_of(g, mids)
    n_evals = int(g.n_factor_evals_)
    labels_history = None
    evals = np.array([0, n_evals], dtype=np.int64)
    per_sweep = getattr(g, "n_factor_evals_per_sweep_", None)
    if per_sweep is not None and len(per_sweep):
        evals = np.cumsum(np.asarray(per_sweep, dtype=np.int64))
    else:
        hist = getattr(g, "history_", None)
        if hist is not None and len(hist):
            evals = np.asarray(hist["n_factor_evals"], dtype=np.int64)
    lh = getattr(g, "labels_history_", None) if record_history else None
    if lh is not None:
        labels_history = np.asarray(lh, dtype=np.int32)
        n_rows = labels_history.shape[0]
        if len(evals) == n_rows - 1:
            evals = np.concatenate([[0], evals])
        elif len(evals) != n_rows:
            evals = pad(evals, n_rows)
    margin = None
    if margins:
        margin = cluster_margins(enc, block_theta(model, enc), _block_bias(model, enc, shift), cluster_id,
                                 rng=settings.seed, rows=None if fixed is None else ~fixed)
    return BlockResult(sampler, int(fold), str(block), mids, cluster_id, n_evals, wall, evals, labels_history,
                       margin, _was_cached(_cached_set(g), block), shift)


def _clusters_of(g, mids):
    """Cluster ids (object array of str) of the mention ids ``mids`` from a fitted sampler.

    Reads its ``cluster_ids_`` / ``mention_ids_`` arrays when it has them (no pandas
    objects built per block), else its ``clusters_`` Series.
    """
    mids = np.asarray(mids, dtype=object)
    raw = getattr(g, "cluster_ids_", None)
    if raw is not None:
        ids = np.asarray(g.mention_ids_, dtype=object)
        if len(ids) == len(mids) and np.array_equal(ids, mids):
            return np.asarray(raw, dtype=object)
        pos = pd.Index(ids).get_indexer(mids)
        if (pos >= 0).all():
            return np.asarray(raw, dtype=object)[pos]
    return g.clusters_.reindex(mids).astype(str).to_numpy(dtype=object)


def encode_blocks(model, df):
    """Every block of ``df`` encoded once, rows in the mention-id order ``GibbsCoref.fit`` uses.

    Returns
    -------
    coref.encoding.EncodingCache
        To pass as ``encodings=`` to ``GibbsCoref.fit`` and
        ``coref.confidence.assignment_confidence`` on these blocks, so that later fits
        (and any ``model.bias_`` set meanwhile) encode nothing again.
    """
    return EncodingCache.of_blocks(model, df)


#: blocks assembled from encodings are sampled together, in groups of about this many mentions
TOGETHER_MENTIONS = 2000


def _infer_together(items, model, settings, margins):
    """Gibbs over several blocks in ONE ``GibbsCoref.fit`` (its per-call overhead paid once).

    For items whose blocks are assembled from encodings (``extra["parts"]``, rows already
    in mention-id order) and no label history. ``GibbsCoref`` samples block b with
    ``block_rng(seed, b)`` whatever else it fits, so each block's clusters are those of a
    fit of that block alone. ``wall_s`` of a block is the call's time shared in
    proportion to the block's factor evaluations.
    """
    Gibbs = _gibbs_cls()
    sampler = items[0][0]
    encodings = EncodingCache(model)
    ids, names, inits, fixeds, shifts = [], [], [], [], {}
    # every block of the group assembled at once (its coauthor-graph components in three
    # scipy calls for the whole group)
    blocks = assemble_blocks([extra["parts"] for _, _, _, _, extra in items])
    for (s, f, b, bdf, extra), enc in zip(items, blocks):
        mids = np.asarray(extra["parts"].mention_id, dtype=object)
        encodings.put(b, mids, enc)
        ids.append(mids)
        names.append(np.full(len(mids), str(b), dtype=object))
        if extra.get("initial") is not None:
            inits.append(np.asarray(extra["initial"], dtype=object))
        if extra.get("fixed") is not None:
            fixeds.append(np.asarray(extra["fixed"], dtype=bool))
        if extra.get("prior_shift") is not None:
            shifts[str(b)] = float(extra["prior_shift"])
    all_ids = np.concatenate(ids)
    df = pd.DataFrame({"mention_id": all_ids, "block": np.concatenate(names)})
    initial = np.concatenate(inits) if len(inits) == len(items) else None
    fixed = np.concatenate(fixeds) if len(fixeds) == len(items) else None
    kwargs = settings.gibbs_kwargs(sampler)
    kwargs.update(rng=settings.seed, record_history=False)
    t0 = time.perf_counter()
    g = Gibbs(model, **kwargs)
    g = g.fit(df, initial=initial, fixed=fixed, encodings=encodings, **({"prior_shift": shifts} if shifts else {}))
    wall = float(getattr(g, "wall_s_", time.perf_counter() - t0))
    per_block = getattr(g, "n_factor_evals_per_block_", {})
    total = max(sum(per_block.values()), 1)
    cached = _cached_set(g)
    found = _clusters_of(g, all_ids)
    bounds = np.cumsum([0] + [len(x) for x in ids])
    out = []
    for k, ((s, f, b, bdf, extra), enc) in enumerate(zip(items, blocks)):
        mids = ids[k]
        cluster_id = found[bounds[k]:bounds[k + 1]]
        n_evals = int(per_block.get(str(b), 0))
        margin = None
        shift = _shift_of(g, b)
        if margins:
            fx = extra.get("fixed")
            margin = cluster_margins(enc, block_theta(model, enc), _block_bias(model, enc, shift), cluster_id,
                                     rng=settings.seed, rows=None if fx is None else ~np.asarray(fx, dtype=bool))
        out.append(BlockResult(s, int(f), str(b), mids, cluster_id, n_evals, wall * n_evals / total,
                               np.array([0, n_evals], dtype=np.int64), None, margin, _was_cached(cached, b), shift))
    return out


def _infer_frames_together(items, model, settings, record_history):
    """Gibbs over the blocks of several items (block DataFrames) in ONE ``GibbsCoref.fit``.

    For items without ``extra`` (``coref run``): the per-call work of ``fit`` (input
    checks, canonical order, outputs) is paid once for the group, not once per block.
    Each block's result is that of :func:`_infer_block` on it alone: ``GibbsCoref``
    samples block b with ``block_rng(seed, b)``, encodes it from its own rows, and
    reports its labels (``block_label_offsets_``) and factor counts per sweep
    (``n_factor_evals_per_block_sweep_``) apart. ``wall_s`` of a block is the call's time
    shared in proportion to the block's factor evaluations.
    """
    Gibbs = _gibbs_cls()
    sampler = items[0][0]
    df = pd.concat([bdf for _, _, _, bdf, _ in items], ignore_index=True)
    kwargs = settings.gibbs_kwargs(sampler)
    kwargs.update(rng=settings.seed, record_history=record_history)
    t0 = time.perf_counter()
    g = Gibbs(model, **kwargs).fit(df)
    wall = float(getattr(g, "wall_s_", time.perf_counter() - t0))
    per_block = g.n_factor_evals_per_block_
    total = max(sum(per_block.values()), 1)
    cached = _cached_set(g)
    hist = g.labels_history_ if record_history else None
    all_mids = df["mention_id"].astype(str).to_numpy(dtype=object)
    out, start = [], 0
    for s, f, b, bdf, _ in items:
        end = start + len(bdf)
        mids = all_mids[start:end]
        n_evals = int(per_block.get(str(b), 0))
        evals = np.cumsum(np.asarray(g.n_factor_evals_per_block_sweep_[str(b)], dtype=np.int64))
        labels_history = None
        if hist is not None:
            labels_history = np.asarray(hist[:, start:end] - g.block_label_offsets_[str(b)], dtype=np.int32)
        out.append(BlockResult(s, int(f), str(b), mids, _clusters_of(g, mids), n_evals, wall * n_evals / total,
                               evals, labels_history, None, _was_cached(cached, b), _shift_of(g, b)))
        start = end
    return out


def _n_rows(item):
    """Mentions of a work item ``(sampler, fold, block, rows, extra)``."""
    return len(item[3])


def _infer_chunk(items, model, settings, record_history, margins=False):
    """Dask task: ``items`` is a list of (sampler, fold, block, block_df, extra) sharing one model."""
    with single_thread():
        return [_infer_block(bdf, model, sampler=s, fold=f, block=b, settings=settings,
                             record_history=record_history, margins=margins, **(extra or {}))
                for s, f, b, bdf, extra in items]


def pad(a, n):
    """Repeat the last entry (or row) of ``a`` until it has ``n`` entries; truncate if longer."""
    a = np.asarray(a)
    if len(a) >= n:
        return a[:n]
    reps = np.repeat(a[-1:], n - len(a), axis=0)
    return np.concatenate([a, reps], axis=0)


def block_order(blocks, ids=None):
    """The rows of each block, blocks in order of first appearance.

    Parameters
    ----------
    blocks : ndarray of str (object), shape (n,)
        Block of each row.
    ids : ndarray of str (object), shape (n,), or None
        Mention id of each row: the rows of a block are then in increasing id order (the
        order an encoded block's mentions take); ``None`` keeps row order.

    Returns
    -------
    order : ndarray of int64, shape (n,)
        Row positions, block after block.
    names : ndarray of object, shape (n_blocks,)
        The blocks, in order of first appearance.
    bounds : ndarray of int64, shape (n_blocks + 1,)
        Block k's rows are ``order[bounds[k]:bounds[k + 1]]``.
    """
    codes, names = pd.factorize(np.asarray(blocks, dtype=object))
    if _in_block_order(codes, ids):
        order = np.arange(len(codes))          # (e.g. rows that coref add ordered so)
    elif ids is None:
        order = np.argsort(codes, kind="stable")
    else:
        rank = pd.factorize(np.asarray(ids, dtype=object), sort=True)[0]
        order = np.lexsort((rank, codes))
    bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
    return order.astype(np.int64), np.asarray(names, dtype=object), bounds.astype(np.int64)


def _in_block_order(codes, ids):
    """True when the rows already run block after block (``codes`` non-decreasing) with ``ids``
    strictly increasing inside each block (or ``ids`` None)."""
    if len(codes) < 2:
        return True
    if not bool(np.all(codes[1:] >= codes[:-1])):
        return False
    if ids is None:
        return True
    ids = np.asarray(ids, dtype=object)
    same = codes[1:] == codes[:-1]
    try:
        return bool(np.all(ids[1:][same] > ids[:-1][same]))
    except TypeError:                          # ids that do not compare: sorted the general way
        return False


def infer_blocks(df, model, settings, *, sampler=None, fold=0, record_history=True, client=None,
                 progress=False, on_result=None, skip=None, initial=None, fixed=None, margins=False,
                 encodings=None, prior_shift=None):
    """Gibbs over every block of ``df`` with one fitted model, locally or on Dask.

    Parameters
    ----------
    df : pandas.DataFrame
        Mentions (schema of :func:`coref.io.load_mentions`), any number of blocks.
    model : coref.model.PairwiseModel
        Fitted model (scattered once to the workers when ``client`` is given).
    settings : coref.settings.CorefSettings
        Seed, delta, sweeps and further Gibbs parameters (validated).
    sampler : {"racing", "exact", "auto"} or None
        ``None``: the first of ``settings.samplers``.
    fold : int
        Recorded in the results.
    record_history : bool
        Keep each block's label history (for convergence curves).
    client : distributed.Client or None
        ``None`` runs in this process.
    progress : bool
        Show a tqdm bar over mentions.
    on_result : callable or None
        Called with each :class:`BlockResult` as it arrives (e.g. to checkpoint).
    skip : set or None
        Blocks not to run.
    initial : array-like of shape (n_mentions,) or None
        Initial cluster key per row of ``df`` (None / NaN = a new singleton), passed to
        ``GibbsCoref.fit(initial=...)`` block by block.
    fixed : array-like of bool, shape (n_mentions,) or None
        Rows whose cluster Gibbs never changes (``GibbsCoref.fit(fixed=...)``).
    margins : bool
        Also compute each mention's margin in its final cluster (``BlockResult.margin``),
        reusing the block's encoding.
    encodings : coref.encoding.MentionEncoding or None
        Per-mention encoding of the rows of ``df`` (same order, same mention ids), from
        :func:`coref.encoding.encode_parts` with this model's vocabulary: each block is
        assembled from it instead of encoded again (the same arrays, bit for bit).
    prior_shift : mapping of str -> float, or None
        Block -> the prior shift d_b (natural-log odds) its factors use instead of the
        model's estimate (``GibbsCoref.fit(prior_shift=...)``); other blocks are estimated.

    Returns
    -------
    list of BlockResult
        In the order of ``df``'s blocks (whatever order they finished in).
    """
    sampler = settings.samplers[0] if sampler is None else sampler
    df = df.reset_index(drop=True)
    if encodings is not None and (len(encodings) != len(df) or not np.array_equal(
            encodings.mention_id.astype(str), df["mention_id"].astype(str).to_numpy(dtype=object).astype(str))):
        raise ValueError("encodings must cover the rows of df in order (same mention ids)")
    blocks = df["block"].astype(str).to_numpy(dtype=object)
    # the block is assembled from the encodings (rows in mention-id order, the order Gibbs
    # and the assembly use): an item carries the block's ids, not a copy of its rows
    ids = encodings.mention_id if encodings is not None else None
    order, names, bounds = block_order(blocks, ids)
    groups = [(b, order[lo:hi]) for b, lo, hi in zip(names.tolist(), bounds[:-1].tolist(), bounds[1:].tolist())
              if not (skip and b in skip)]
    parts = [None] * len(groups)
    if encodings is not None and groups:
        # one gather of every block's rows (none when the rows are in that order already), then a slice per block
        rows = np.concatenate([idx for _, idx in groups])
        ordered = encodings if np.array_equal(rows, np.arange(len(encodings))) else encodings.take(rows)
        parts = ordered.split(np.cumsum([0] + [len(idx) for _, idx in groups]))
    items = []
    for (b, idx), part in zip(groups, parts):
        extra = None
        if initial is not None or fixed is not None:
            extra = {"initial": None if initial is None else np.asarray(initial, dtype=object)[idx],
                     "fixed": None if fixed is None else np.asarray(fixed, dtype=bool)[idx]}
        if part is not None:
            # tables cut to what the block uses before they travel to a Dask worker
            extra = {**(extra or {}), "parts": part if client is None else part.compact()}
        if prior_shift is not None and b in prior_shift:
            extra = {**(extra or {}), "prior_shift": float(prior_shift[b])}
        rows = ids[idx] if encodings is not None else df.iloc[idx].reset_index(drop=True)
        items.append((sampler, fold, b, rows, extra))
    results = execute(items, {fold: model}, client, settings, record_history=record_history,
                      progress=progress, on_result=on_result, desc=f"gibbs {sampler}", margins=margins)
    order = {it[2]: i for i, it in enumerate(items)}
    return sorted(results, key=lambda r: order[r.block])


def execute(items, models, client, settings, *, record_history, progress, on_result, desc, margins=False):
    """Run work items on this process or a Dask client; ``models`` maps fold -> fitted model.

    Parameters
    ----------
    items : list of (str, int, str, pandas.DataFrame or ndarray, dict or None)
        ``(sampler, fold, block, rows, extra)`` per block: ``rows`` the block's mentions
        (or, with ``extra["parts"]``, their ids), ``extra`` the keyword arguments of
        :func:`_infer_block` for it (``initial``, ``fixed``, ``parts``).
    models : dict of int -> coref.model.PairwiseModel
    client : distributed.Client or None
    settings : coref.settings.CorefSettings
    record_history, margins : bool
        As in :func:`infer_blocks`.
    progress : bool
        Show a tqdm bar over mentions, labelled ``desc``.
    on_result : callable or None
        Called with each :class:`BlockResult` as it arrives.

    Returns
    -------
    list of BlockResult
        In the order they finished.
    """
    results = []
    with progress_bar(sum(len(it[3]) for it in items), desc, progress) as bar:
        def done(r):
            results.append(r)
            if on_result is not None:
                on_result(r)
            bar.update(len(r.mention_id))

        def done_chunk(rs):
            for r in rs:
                done(r)

        one_model = bool(items) and len({(it[0], it[1]) for it in items}) == 1
        together = (not record_history and one_model
                    and all(it[4] is not None and it[4].get("parts") is not None for it in items))
        # blocks given as DataFrames with nothing else (coref run): several per fit call too
        frames = (not together and not margins and one_model and all(it[4] is None for it in items)
                  and _samples_many_blocks(_gibbs_cls()))
        if client is None and (together or frames):
            with single_thread():
                for group in chunks(items, TOGETHER_MENTIONS, _n_rows):
                    model = models[group[0][1]]
                    done_chunk(_infer_together(group, model, settings, margins) if together
                               else _infer_frames_together(group, model, settings, record_history))
            return results
        if client is None:
            with single_thread():
                for s, f, b, bdf, extra in items:
                    bar.set_postfix_str(f"fold {f} block {b} ({len(bdf)})", refresh=False)
                    done(_infer_block(bdf, models[f], sampler=s, fold=f, block=b, settings=settings,
                                      record_history=record_history, margins=margins, **(extra or {})))
            return results
        scattered = {f: client.scatter(m, broadcast=True, hash=False) for f, m in models.items()}
        by_model = {}
        for it in sorted(items, key=lambda it: -len(it[3])):  # big blocks first: better load balance
            by_model.setdefault((it[0], it[1]), []).append(it)
        tasks = [(_infer_chunk, (chunk, scattered[f], settings, record_history, margins), sum(map(_n_rows, chunk)))
                 for (s, f), its in by_model.items() for chunk in chunks(its, CHUNK_MENTIONS, _n_rows)]
        run_on_dask(client, tasks, done_chunk)
    return results
