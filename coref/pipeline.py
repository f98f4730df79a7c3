"""The ``coref run`` pipeline: load -> block -> fit theta -> Gibbs -> score -> report.

Grouped k-fold cross-validation by block: the pairwise model (theta) of fold k is
fitted on the labeled blocks of the other folds and used to infer the blocks of fold
k, so B3 is never reported on blocks whose labels trained theta. Blocks are
independent given theta, so inference maps blocks over an executor: in-process
("local") or a Dask cluster (``workers=N`` starts a ``distributed.LocalCluster``,
``scheduler=ADDRESS`` connects to a running one). Each block gets its own random
generator ``coref.gibbs.block_rng(seed, block)``, so the clusters do not depend on the
executor, on the number of workers or on the order in which blocks finish.

References
----------
.. [1] Chen, Y. & Ghahramani, Z. (2016). Scalable discrete sampling as a multi-armed
   bandit problem. ICML. Sec. 5.3 (author coreference) and Appx. C.3.
.. [2] Singh, S., Wick, M. & McCallum, A. (2012). Monte Carlo MCMC: efficient
   inference by approximate sampling. EMNLP.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import pickle
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from coref.report import SAMPLERS  # ("racing", "exact")
from sampling._atomic import atomic_open

__all__ = ["run", "RunResult", "BlockResult", "assign_folds", "infer_blocks", "add_arguments", "main"]

FORMATS = ("aminer", "han", "s2and", "crossref", "csv", "parquet")
_REQUIRED_COLUMNS = ("mention_id", "block", "name", "coauthors", "title", "venue", "year", "affiliation", "gold")
_CHECKPOINT_DIR = ".checkpoint"
_CHECKPOINT_VERSION = 1
_CONNECT_TIMEOUT = "20s"  # --scheduler: give up connecting after this long
_CHUNK_MENTIONS = 400  # Dask: group small blocks into tasks of about this many mentions


# --------------------------------------------------------------------------- plumbing
# The model / sampler classes are looked up at call time (lazy imports: importing
# coref.pipeline must not import scikit-learn, Dask or the Gibbs kernels).

def _model_cls():
    from coref.model import PairwiseModel

    return PairwiseModel


def _gibbs_cls():
    from coref.gibbs import GibbsCoref

    return GibbsCoref


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


@dataclass(frozen=True)
class RunResult:
    """What :func:`run` produced (also written to ``out``).

    Attributes
    ----------
    metrics : dict
        Content of metrics.json.
    clusters : pandas.DataFrame
        Content of clusters.csv: sampler, fold, block, mention_id, cluster_id, gold, scored.
    curves : pandas.DataFrame
        B3 after each sweep: sampler, sweep, n_factor_evals, b3_precision, b3_recall, b3_f1.
    out : pathlib.Path
        Output directory.
    paths : dict
        Output name -> file path.
    n_reused : int
        Block results taken from checkpoints (``resume=True``).
    n_computed : int
        Block results computed in this call.
    """

    metrics: dict
    clusters: pd.DataFrame
    curves: pd.DataFrame
    out: Path
    paths: dict
    n_reused: int
    n_computed: int

    def summary(self):
        """Short plain-text table of the per-sampler results."""
        from coref.report import format_summary

        return format_summary(self.metrics)


# --------------------------------------------------------------------------- one block

def _infer_block(block_df, model, *, sampler, fold, block, seed, delta, n_sweeps, record_history,
                 gibbs_params=None):
    """Run Gibbs on one block with its own generator; assumes validated input."""
    Gibbs = _gibbs_cls()
    # GibbsCoref samples block b with coref.gibbs.block_rng(seed, b): the result depends on
    # (model, block, seed) only, not on the executor or on which blocks share a task.
    kwargs = dict(gibbs_params or {})
    kwargs.update(sampler=sampler, delta=delta, rng=seed, record_history=record_history)
    if n_sweeps is not None:
        kwargs["n_sweeps"] = n_sweeps
    t0 = time.perf_counter()
    g = Gibbs(model, **kwargs).fit(block_df)
    wall = float(getattr(g, "wall_s_", time.perf_counter() - t0))
    mids = block_df["mention_id"].to_numpy(dtype=object)
    clusters = g.clusters_
    cluster_id = clusters.reindex(mids).to_numpy(dtype=object)
    n_evals = int(g.n_factor_evals_)
    labels_history = None
    evals = np.array([0, n_evals], dtype=np.int64)
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
            evals = _pad(evals, n_rows)
    return BlockResult(sampler, int(fold), str(block), mids, cluster_id, n_evals, wall, evals, labels_history)


def _infer_chunk(items, model, settings):
    """Dask task: ``items`` is a list of (sampler, fold, block, block_df) sharing one model."""
    with _single_thread():
        return [
            _infer_block(bdf, model, sampler=s, fold=f, block=b, **settings)
            for s, f, b, bdf in items
        ]


def _single_thread():
    """Context limiting BLAS and OpenMP to one thread (same arithmetic on every executor)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def _pad(a, n):
    """Repeat the last entry (or row) of ``a`` until it has ``n`` entries; truncate if longer."""
    a = np.asarray(a)
    if len(a) >= n:
        return a[:n]
    reps = np.repeat(a[-1:], n - len(a), axis=0)
    return np.concatenate([a, reps], axis=0)


# --------------------------------------------------------------------------- data

def _load(data, format, strict):
    """Return (mentions DataFrame, data description dict)."""
    if isinstance(data, pd.DataFrame):
        missing = [c for c in _REQUIRED_COLUMNS if c not in data.columns]
        if missing:
            raise ValueError(f"the data DataFrame lacks the mention columns {missing}; see coref.io.load_mentions")
        df = data.reset_index(drop=True)
        desc = {"path": "<DataFrame>", "format": "dataframe", "n_read": len(df), "n_skipped": 0}
    else:
        from coref.io import load_mentions

        if data is None:
            from sampling._data import data_path

            path = data_path("aminer_na")
            if format is None:
                format = "aminer"
        else:
            if not isinstance(data, (str, os.PathLike)):
                raise TypeError(f"the data parameter of coref.run must be None, a path or a DataFrame; got {type(data).__name__} instead")
            path = Path(data).expanduser()
            if not path.exists():
                raise FileNotFoundError(f"--data {str(data)!r}: no such file or directory")
            if path.is_dir() and not any(path.iterdir()):
                raise ValueError(f"--data {str(data)!r}: the directory is empty (expected mention files, e.g. AMiner XML)")
        df, report = load_mentions(path, format=format, strict=strict, return_report=True)
        desc = {"path": str(path), "format": format or "auto", "n_read": int(getattr(report, "n_read", len(df))),
                "n_skipped": int(getattr(report, "n_skipped", 0))}
        skipped = tuple(getattr(report, "skipped", ()) or ())
        if skipped:
            desc["skipped_examples"] = [f"{p}:{r}: {why}" for p, r, why in skipped[:10]]
        desc["n_repaired"] = len(tuple(getattr(report, "notes", ()) or ()))
        df = df.reset_index(drop=True)
    if len(df) == 0:
        raise ValueError(f"no mentions were loaded from {desc['path']!r}")
    if df["mention_id"].duplicated().any():
        dup = df.loc[df["mention_id"].duplicated(), "mention_id"].iloc[0]
        raise ValueError(f"mention ids must be unique; {dup!r} occurs more than once in {desc['path']!r}")
    if df["block"].isna().any():
        from coref.blocking import assign_blocks

        df = assign_blocks(df)
    df["block"] = df["block"].astype(str)
    return df, desc


def assign_folds(df, folds):
    """Fold of each block: grouped k-fold over labeled blocks, round-robin for the rest.

    Parameters
    ----------
    df : pandas.DataFrame
        Mentions with columns ``block`` and ``gold``.
    folds : int
        Number of folds, at least 2 and at most the number of labeled blocks.

    Returns
    -------
    fold_of : dict
        Block -> fold index in ``range(folds)``.
    labeled : set
        Blocks with at least one gold label (the ones that are scored and train theta).

    Raises
    ------
    ValueError
        If there are fewer labeled blocks than folds.

    Notes
    -----
    Labeled blocks are split with :class:`sklearn.model_selection.GroupKFold`
    (deterministic, balanced by number of mentions). Blocks without any gold label
    cannot train theta and cannot be scored; they are spread over the folds in sorted
    order so that they are still inferred.
    """
    from sklearn.model_selection import GroupKFold

    has_gold = df["gold"].notna().groupby(df["block"], sort=True).any()
    labeled_blocks = has_gold.index[has_gold.to_numpy()]
    unlabeled_blocks = has_gold.index[~has_gold.to_numpy()]
    if len(labeled_blocks) < folds:
        raise ValueError(
            f"folds={folds} needs at least {folds} blocks with gold labels; the data has "
            f"{len(labeled_blocks)} (grouped k-fold by block: theta is never trained on the blocks it scores)"
        )
    lab = df[df["block"].isin(set(labeled_blocks))]
    fold_of = {}
    for k, (_, test_idx) in enumerate(GroupKFold(n_splits=folds).split(np.zeros(len(lab)), groups=lab["block"].to_numpy())):
        for b in pd.unique(lab["block"].to_numpy()[test_idx]):
            fold_of[b] = k
    for i, b in enumerate(sorted(unlabeled_blocks)):
        fold_of[b] = i % folds
    return fold_of, set(labeled_blocks)


def _fingerprint(df):
    cols = ["mention_id", "block", "name", "title", "venue", "year", "affiliation", "gold"]
    frame = df[cols].astype(str)
    frame["coauthors"] = df["coauthors"].map(lambda c: "|".join(c) if isinstance(c, (list, tuple, np.ndarray)) else str(c))
    h = hashlib.sha1(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return h.hexdigest()


# --------------------------------------------------------------------------- checkpoints

class _Checkpoints:
    """Per (sampler, fold, block) results and per-fold models under ``out/.checkpoint/<key>``."""

    def __init__(self, out, key):
        self.root = Path(out) / _CHECKPOINT_DIR / key

    def _block_path(self, sampler, fold, block):
        h = hashlib.sha1(str(block).encode("utf-8")).hexdigest()[:20]
        return self.root / sampler / f"fold{fold}" / f"{h}.pkl"

    def _model_path(self, fold):
        return self.root / f"model_fold{fold}.pkl"

    @staticmethod
    def _read(path):
        try:
            with open(path, "rb") as fh:
                return pickle.load(fh)
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
            return None

    def _write(self, path, obj):
        with atomic_open(path, "wb") as fh:
            pickle.dump(obj, fh, protocol=pickle.HIGHEST_PROTOCOL)

    def load_block(self, sampler, fold, block):
        r = self._read(self._block_path(sampler, fold, block))
        if isinstance(r, BlockResult) and r.block == str(block) and r.sampler == sampler and r.fold == fold:
            return r
        return None

    def save_block(self, result):
        self._write(self._block_path(result.sampler, result.fold, result.block), result)

    def load_model(self, fold):
        """(model, fit seconds) or (None, None)."""
        r = self._read(self._model_path(fold))
        if isinstance(r, dict) and "model" in r:
            return r["model"], r.get("fit_s")
        return None, None

    def save_model(self, fold, model, fit_s):
        self._write(self._model_path(fold), {"model": model, "fit_s": fit_s})


# --------------------------------------------------------------------------- executors

def _local_cluster(n_workers):
    """A ``distributed.LocalCluster``: worker processes with one thread each, loopback only.

    The dashboard is off; the scheduler's small HTTP server (health checks only) gets a
    free loopback port instead of 8787, so several clusters can run side by side.
    """
    import logging

    from distributed import LocalCluster

    return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                        dashboard_address=None, silence_logs=logging.ERROR,
                        scheduler_kwargs={"dashboard_address": "127.0.0.1:0", "dashboard": False})


@contextlib.contextmanager
def _executor_context(executor, workers, scheduler):
    """Yield (client or None, description). Closes only what it started."""
    if executor is not None and (workers is not None or scheduler is not None):
        raise ValueError("give either executor or workers / scheduler, not both")
    if workers is not None and scheduler is not None:
        raise ValueError("give either workers (start a local Dask cluster) or scheduler (connect to one), not both")
    if workers is not None:
        from distributed import Client

        cluster = _local_cluster(workers)
        try:
            with Client(cluster) as client:
                yield client, f"dask LocalCluster ({workers} workers x 1 thread, loopback)"
        finally:
            cluster.close()
        return
    if scheduler is not None:
        from distributed import Client

        try:
            client = Client(scheduler, timeout=_CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError) as exc:
            raise ConnectionError(f"--scheduler {scheduler!r}: could not connect to a Dask scheduler ({exc})") from exc
        try:
            yield client, f"dask scheduler {scheduler}"
        finally:
            client.close()
        return
    if executor is None or (isinstance(executor, str) and executor == "local"):
        yield None, "local"
        return
    if hasattr(executor, "submit") and hasattr(executor, "scatter"):
        yield executor, f"dask client {getattr(executor, 'scheduler', '')}"
        return
    raise TypeError(
        "the executor parameter of coref.run must be None, 'local' or a distributed.Client; "
        f"got {executor!r} instead"
    )


def _chunks(items, target):
    """Group (sampler, fold, block, df) items of one model into lists of about ``target`` mentions."""
    chunk, size = [], 0
    for it in items:
        chunk.append(it)
        size += len(it[3])
        if size >= target:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def infer_blocks(df, model, *, sampler="racing", fold=0, seed=0, delta=0.05, n_sweeps=None,
                 record_history=True, client=None, progress=False, on_result=None, skip=None,
                 gibbs_params=None):
    """Gibbs over every block of ``df`` with one fitted model, locally or on Dask.

    Parameters
    ----------
    df : pandas.DataFrame
        Mentions (schema of :func:`coref.io.load_mentions`), any number of blocks.
    model : coref.model.PairwiseModel
        Fitted model (scattered once to the workers when ``client`` is given).
    sampler : {"racing", "exact"}
    fold : int
        Recorded in the results.
    seed : int
        Block ``b`` uses ``coref.gibbs.block_rng(seed, b)``.
    delta, n_sweeps, record_history
        Passed to :class:`coref.gibbs.GibbsCoref` (``n_sweeps=None``: its default).
    client : distributed.Client or None
        ``None`` runs in this process.
    progress : bool
        Show a tqdm bar over blocks.
    on_result : callable or None
        Called with each :class:`BlockResult` as it arrives (e.g. to checkpoint).
    skip : set or None
        Blocks not to run.
    gibbs_params : dict or None
        Further :class:`coref.gibbs.GibbsCoref` hyperparameters (e.g. ``t_end``).

    Returns
    -------
    list of BlockResult
        In the order of ``df``'s blocks (whatever order they finished in).
    """
    groups = [(b, g.reset_index(drop=True)) for b, g in df.groupby("block", sort=False) if not skip or b not in skip]
    items = [(sampler, fold, b, g) for b, g in groups]
    settings = dict(seed=seed, delta=delta, n_sweeps=n_sweeps, record_history=record_history,
                    gibbs_params=gibbs_params)
    results = _execute(items, {fold: model}, client, settings, progress=progress, on_result=on_result,
                       desc=f"gibbs {sampler}")
    order = {b: i for i, (b, _) in enumerate(groups)}
    return sorted(results, key=lambda r: order[r.block])


def _execute(items, models, client, settings, *, progress, on_result, desc):
    """Run (sampler, fold, block, df) items; ``models`` maps fold -> fitted model."""
    from tqdm import tqdm

    results = []
    n_mentions = sum(len(it[3]) for it in items)
    with tqdm(total=n_mentions, desc=desc, unit="mention", disable=not progress, leave=False,
              file=sys.stderr, dynamic_ncols=True) as bar:
        if client is None:
            with _single_thread():
                for s, f, b, bdf in items:
                    bar.set_postfix_str(f"fold {f} block {b} ({len(bdf)})", refresh=False)
                    r = _infer_block(bdf, models[f], sampler=s, fold=f, block=b, **settings)
                    results.append(r)
                    if on_result is not None:
                        on_result(r)
                    bar.update(len(bdf))
            return results
        from distributed import as_completed

        scattered = {f: client.scatter(m, broadcast=True, hash=False) for f, m in models.items()}
        by_model = {}
        for it in sorted(items, key=lambda it: -len(it[3])):  # big blocks first: better load balance
            by_model.setdefault((it[0], it[1]), []).append(it)
        futures = []
        for (s, f), its in by_model.items():
            for chunk in _chunks(its, _CHUNK_MENTIONS):
                futures.append(client.submit(_infer_chunk, chunk, scattered[f], settings, pure=False,
                                             priority=sum(len(c[3]) for c in chunk)))
        try:
            for fut in as_completed(futures):
                chunk_results = fut.result()
                for r in chunk_results:
                    results.append(r)
                    if on_result is not None:
                        on_result(r)
                    bar.update(len(r.mention_id))
                fut.release()
        except BaseException:
            client.cancel(futures)
            raise
    return results


# --------------------------------------------------------------------------- scoring

def _sweep_curves(results, gold, scored_ids):
    """B3 after each sweep, pooled over blocks (all folds) of one sampler.

    ``gold``: Series mention_id -> gold (NA = unlabeled); only ``scored_ids`` count.
    """
    from coref.evaluate import b3

    rows = []
    for sampler in sorted({r.sampler for r in results}):
        rs = [r for r in results if r.sampler == sampler and r.labels_history is not None]
        if not rs:
            continue
        n_rows = max(r.labels_history.shape[0] for r in rs)
        evals = np.zeros(n_rows, dtype=np.int64)
        parts_ids, parts_hist = [], []
        offset = 0
        for r in rs:
            evals += _pad(r.evals_history, n_rows)
            h = _pad(r.labels_history, n_rows).astype(np.int64)
            h = h - h.min(initial=0)
            parts_hist.append(h + offset)
            offset += int(h.max(initial=0)) + 1
            parts_ids.append(r.mention_id)
        ids = np.concatenate(parts_ids)
        hist = np.concatenate(parts_hist, axis=1)
        keep = pd.Index(ids).isin(scored_ids) & gold.reindex(ids).notna().to_numpy()
        ids_k = ids[keep]
        gold_k = gold.reindex(ids_k)
        for t in range(n_rows):
            res = b3(pd.Series(hist[t, keep], index=ids_k), gold_k)
            rows.append((sampler, t, int(evals[t]), float(res.precision), float(res.recall), float(res.f1)))
    from coref.report import CURVE_COLUMNS

    return pd.DataFrame(rows, columns=CURVE_COLUMNS)


def _scores(pred, gold):
    from coref.evaluate import evaluate_clusters

    keys = ("b3_precision", "b3_recall", "b3_f1", "pairwise_precision", "pairwise_recall", "pairwise_f1")
    if gold.notna().sum() == 0:
        return {k: None for k in keys}
    m = evaluate_clusters(pred, gold)
    return {k: float(m[k]) for k in keys}


# --------------------------------------------------------------------------- run

def _fit_fold_model(df, labeled, fold):
    """Fit theta on the labeled blocks outside ``fold``; returns (model, seconds).

    Runs with one BLAS / OpenMP thread: the solver's floating-point sums then do not
    depend on how many threads the process (driver or Dask worker) would use, so
    theta -- and every cluster downstream -- is the same on every executor.
    """
    t0 = time.perf_counter()
    train = df[(df["_fold"] != fold) & df["block"].isin(labeled)].drop(columns="_fold").reset_index(drop=True)
    with _single_thread():
        model = _model_cls()().fit(train)
    return model, time.perf_counter() - t0


def _fit_models(df, labeled, need_folds, ckpt, *, resume, client, progress):
    """Fitted model per fold in ``need_folds`` (from checkpoints with ``resume``); fits run on ``client`` if given.

    Returns
    -------
    models : dict fold -> model
    fit_s : dict fold -> seconds the fit took
    """
    from tqdm import tqdm

    models, fit_s = {}, {}
    todo = []
    for f in need_folds:
        m, secs = ckpt.load_model(f) if resume else (None, None)
        if m is None:
            todo.append(f)
        else:
            models[f], fit_s[f] = m, secs
    with tqdm(total=len(todo), desc="fit theta", unit="fold", disable=not progress or not todo,
              file=sys.stderr, leave=False) as bar:
        if client is None:
            for f in todo:
                models[f], fit_s[f] = _fit_fold_model(df, labeled, f)
                ckpt.save_model(f, models[f], fit_s[f])
                bar.update(1)
        elif todo:
            from distributed import as_completed

            df_future = client.scatter(df, hash=False)
            futures = {client.submit(_fit_fold_model, df_future, labeled, f, pure=False): f for f in todo}
            try:
                for fut in as_completed(list(futures)):
                    f = futures[fut]
                    models[f], fit_s[f] = fut.result()
                    ckpt.save_model(f, models[f], fit_s[f])
                    bar.update(1)
            except BaseException:
                client.cancel(list(futures))
                raise
    return models, fit_s


def _run_iv(sampler, folds, seed, delta, n_sweeps, workers):
    if sampler == "both":
        samplers = list(SAMPLERS)
    elif sampler in SAMPLERS:
        samplers = [sampler]
    else:
        raise ValueError(f"the sampler parameter of coref.run must be 'racing', 'exact' or 'both'; got {sampler!r} instead")
    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 2:
        raise ValueError(f"the folds parameter of coref.run must be an int >= 2; got {folds!r} instead")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"the seed parameter of coref.run must be a non-negative int; got {seed!r} instead")
    if not (isinstance(delta, (int, float, np.floating)) and 0.0 < float(delta) < 1.0):
        raise ValueError(f"the delta parameter of coref.run must be in (0, 1); got {delta!r} instead")
    if n_sweeps is not None and (isinstance(n_sweeps, bool) or not isinstance(n_sweeps, (int, np.integer)) or n_sweeps < 1):
        raise ValueError(f"the n_sweeps parameter of coref.run must be None or an int >= 1; got {n_sweeps!r} instead")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1):
        raise ValueError(f"the workers parameter of coref.run must be None or an int >= 1; got {workers!r} instead")
    return samplers, int(folds), int(seed), float(delta), None if n_sweeps is None else int(n_sweeps)


def run(data=None, *, format=None, sampler="both", folds=5, out="results/", executor=None, workers=None,
        scheduler=None, seed=0, delta=0.05, n_sweeps=None, resume=False, strict=False, progress=True,
        plots=True):
    """Author coreference end to end with grouped k-fold cross-validation by block.

    Parameters
    ----------
    data : None, str, os.PathLike or pandas.DataFrame
        Mention file or directory (read with :func:`coref.io.load_mentions`), or an
        already loaded mention table. ``None``: the shipped AMiner set ``aminer_na``.
    format : {None, "aminer", "han", "s2and", "crossref", "csv", "parquet"}
        Loader format; ``None`` lets the loader detect it.
    sampler : {"both", "racing", "exact"}
        Gibbs conditional sampler(s): Racing-Normal subsampling or exact.
    folds : int
        Number of folds (>= 2) of the grouped k-fold by block.
    out : str or os.PathLike
        Output directory (created): clusters.csv, curves.csv, metrics.json, report.md,
        two PNG plots, and ``.checkpoint/`` with per-block results.
    executor : None, "local" or distributed.Client
        Where blocks run; ``None``/"local" = this process.
    workers : int or None
        Start a Dask ``LocalCluster`` with this many single-threaded worker processes
        on the loopback interface (dashboard off) and run blocks there.
    scheduler : str or None
        Address of a running Dask scheduler to connect to.
    seed : int
        Block ``b`` is sampled with ``coref.gibbs.block_rng(seed, b)``.
    delta : float
        Racing error level in (0, 1).
    n_sweeps : int or None
        Gibbs sweeps per block; ``None`` = the ``GibbsCoref`` default.
    resume : bool
        Reuse the per-(sampler, fold, block) results (and fitted fold models) saved
        by an earlier run with the same data and settings in ``out/.checkpoint``.
    strict : bool
        Make the loader raise on a bad record instead of skipping (and counting) it.
    progress : bool
        Show tqdm progress bars on stderr.
    plots : bool
        Write the two PNG plots (B3 F1 against factor evaluations and against sweeps).

    Returns
    -------
    RunResult

    Raises
    ------
    FileNotFoundError
        If ``data`` does not exist (or the shipped data cannot be found).
    coref.exceptions.MentionFormatError
        If the data cannot be read (or, with ``strict``, a record is bad).
    ValueError
        For bad parameter values, no mentions, or fewer labeled blocks than folds.
    TypeError
        For a bad ``data`` or ``executor`` type.
    ConnectionError
        If ``scheduler`` cannot be reached.

    Notes
    -----
    Each mention is inferred exactly once per sampler (in the fold holding its block)
    and scores are pooled over folds. Blocks without any gold label are inferred (so
    they appear in clusters.csv) but are not scored; unlabeled mentions inside labeled
    blocks are clustered but excluded from the scores, as in [1]_ where B3 is
    monitored on the labeled subset.

    References
    ----------
    .. [1] Chen & Ghahramani (2016), Sec. 5.3, Fig. 3.
    """
    from tqdm import tqdm

    from coref.report import CLUSTER_COLUMNS, write_report

    t_start = time.perf_counter()
    samplers, folds, seed, delta, n_sweeps = _run_iv(sampler, folds, seed, delta, n_sweeps, workers)
    out = Path(out).expanduser()
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {str(out)!r} exists and is not a directory")
    df, data_desc = _load(data, format, strict)
    fold_of, labeled = assign_folds(df, folds)
    df["_fold"] = df["block"].map(fold_of).astype(int)
    settings_key = hashlib.sha1(json.dumps(
        [_CHECKPOINT_VERSION, _fingerprint(df), folds, seed, delta, n_sweeps], sort_keys=True
    ).encode()).hexdigest()[:16]
    out.mkdir(parents=True, exist_ok=True)
    ckpt = _Checkpoints(out, settings_key)

    # reuse checkpoints
    blocks_by_fold = {k: [] for k in range(folds)}
    for b, f in sorted(fold_of.items()):
        blocks_by_fold[f].append(b)
    results = {}
    n_reused = 0
    if resume:
        for s in samplers:
            for f, bs in blocks_by_fold.items():
                for b in bs:
                    r = ckpt.load_block(s, f, b)
                    if r is not None:
                        results[(s, f, b)] = r
                        n_reused += 1

    with _executor_context(executor, workers, scheduler) as (client, executor_desc):
        # fit theta for each fold that still has work (on the other folds' labeled blocks only)
        need_folds = sorted({f for s in samplers for f, bs in blocks_by_fold.items() for b in bs
                             if (s, f, b) not in results})
        models, fit_s = _fit_models(df, labeled, need_folds, ckpt, resume=resume, client=client, progress=progress)
        if resume:
            for f in range(folds):
                if f not in fit_s:
                    fit_s[f] = ckpt.load_model(f)[1]

        items = []
        groups = {b: g.drop(columns="_fold").reset_index(drop=True) for b, g in df.groupby("block", sort=False)}
        for s in samplers:
            for f in range(folds):
                for b in blocks_by_fold[f]:
                    if (s, f, b) not in results:
                        items.append((s, f, b, groups[b]))
        gibbs_settings = dict(seed=seed, delta=delta, n_sweeps=n_sweeps, record_history=True)

        def _on_result(r):
            ckpt.save_block(r)
            results[(r.sampler, r.fold, r.block)] = r

        if client is None:
            # local: one bar per (sampler, fold), blocks inside
            by_sf = {}
            for it in items:
                by_sf.setdefault((it[0], it[1]), []).append(it)
            for (s, f), its in tqdm(list(by_sf.items()), desc="folds", unit="fold", disable=not progress,
                                    file=sys.stderr, leave=False):
                _execute(its, models, None, gibbs_settings, progress=progress, on_result=_on_result,
                         desc=f"{s} fold {f}")
        elif items:
            _execute(items, models, client, gibbs_settings, progress=progress, on_result=_on_result,
                     desc="gibbs (dask)")
    n_computed = len(items)

    # assemble
    gold = df.set_index("mention_id")["gold"]
    scored_blocks = labeled
    all_results = [results[(s, f, b)] for s in samplers for f in range(folds) for b in blocks_by_fold[f]]
    frames = []
    for r in all_results:
        frames.append(pd.DataFrame({"sampler": r.sampler, "fold": r.fold, "block": r.block,
                                    "mention_id": r.mention_id, "cluster_id": r.cluster_id}))
    clusters = pd.concat(frames, ignore_index=True)
    clusters["gold"] = gold.reindex(clusters["mention_id"]).to_numpy()
    clusters["scored"] = clusters["block"].isin(scored_blocks).to_numpy() & clusters["gold"].notna().to_numpy()
    clusters = clusters[CLUSTER_COLUMNS]
    scored_ids = pd.Index(clusters.loc[clusters["scored"], "mention_id"].unique())

    sampler_metrics = {}
    for s in samplers:
        cs = clusters[clusters["sampler"] == s]
        rs = [r for r in all_results if r.sampler == s]
        sc = cs[cs["scored"]]
        m = _scores(pd.Series(sc["cluster_id"].to_numpy(), index=sc["mention_id"].to_numpy()),
                    pd.Series(sc["gold"].to_numpy(), index=sc["mention_id"].to_numpy()))
        m["n_factor_evals"] = int(sum(r.n_factor_evals for r in rs))
        m["n_factor_evals_scored_blocks"] = int(sum(r.n_factor_evals for r in rs if r.block in scored_blocks))
        m["wall_s"] = float(sum(r.wall_s for r in rs))
        fold_rows = []
        for f in range(folds):
            fr = [r for r in rs if r.fold == f]
            fsc = sc[sc["fold"] == f]
            fm = _scores(pd.Series(fsc["cluster_id"].to_numpy(), index=fsc["mention_id"].to_numpy()),
                         pd.Series(fsc["gold"].to_numpy(), index=fsc["mention_id"].to_numpy()))
            fold_rows.append({
                "fold": f,
                "n_blocks": len(fr),
                "n_train_blocks": int(sum(1 for b in labeled if fold_of[b] != f)),
                "n_mentions": int(sum(len(r.mention_id) for r in fr)),
                "n_scored_mentions": int(len(fsc)),
                **fm,
                "n_factor_evals": int(sum(r.n_factor_evals for r in fr)),
                "wall_s": float(sum(r.wall_s for r in fr)),
                "fit_s": fit_s.get(f),
            })
        m["folds"] = fold_rows
        sampler_metrics[s] = m

    curves = _sweep_curves(all_results, gold, scored_ids)
    n_sweeps_used = int(curves["sweep"].max()) if len(curves) else n_sweeps
    n_scored_blocks = int(clusters.loc[clusters["scored"], "block"].nunique())
    lab_mask = df["block"].isin(labeled)
    metrics = {
        "n_mentions": int(len(df)),
        "n_blocks": int(df["block"].nunique()),
        "n_skipped": int(data_desc.get("n_skipped", 0)),
        **sampler_metrics,  # one top-level key per sampler: "racing", "exact"
        "factor_eval_ratio_exact_over_racing": (
            sampler_metrics["exact"]["n_factor_evals"] / sampler_metrics["racing"]["n_factor_evals"]
            if {"exact", "racing"} <= set(sampler_metrics) and sampler_metrics["racing"]["n_factor_evals"] > 0
            else None
        ),
        "data": {
            **data_desc,
            "n_mentions": int(len(df)),
            "n_blocks": int(df["block"].nunique()),
            "n_labeled_mentions": int(df["gold"].notna().sum()),
            "n_scored_mentions": int(len(scored_ids)),
            "n_scored_blocks": n_scored_blocks,
            "n_unlabeled_blocks": int(df["block"].nunique() - len(labeled)),
            "n_unlabeled_mentions_in_scored_blocks": int((lab_mask & df["gold"].isna()).sum()),
            "n_gold_entities": int(df["gold"].dropna().nunique()),
            "largest_block": int(df["block"].value_counts().max()),
        },
        "settings": {
            "sampler": sampler, "samplers": samplers, "folds": folds, "seed": seed, "delta": delta,
            "n_sweeps": n_sweeps, "n_sweeps_used": n_sweeps_used, "executor": executor_desc,
            "resume": bool(resume), "strict": bool(strict), "checkpoint_key": settings_key,
        },
        "n_block_results_reused": n_reused,
        "n_block_results_computed": n_computed,
        "elapsed_s": time.perf_counter() - t_start,
    }
    paths = write_report(out, clusters=clusters, metrics=metrics, curves=curves, plots=plots)
    return RunResult(metrics=metrics, clusters=clusters, curves=curves, out=out, paths=paths,
                     n_reused=n_reused, n_computed=n_computed)


# --------------------------------------------------------------------------- command line

def add_arguments(parser):
    """Options of ``coref run``."""
    parser.add_argument("--data", metavar="PATH", default=None,
                        help="mention file or directory (default: the shipped AMiner set data/aminer_na)")
    parser.add_argument("--format", choices=FORMATS, default=None,
                        help="input format (default: detected from the path)")
    parser.add_argument("--sampler", choices=("racing", "exact", "both"), default="both",
                        help="Gibbs conditional sampler: Racing-Normal, exact, or both (default)")
    parser.add_argument("--folds", type=int, default=5, help="grouped k-fold by block (default 5)")
    parser.add_argument("--out", metavar="DIR", default="results/", help="output directory (default results/)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, metavar="N", default=None,
                       help="run blocks on a local Dask cluster of N worker processes")
    where.add_argument("--scheduler", metavar="ADDRESS", default=None,
                       help="run blocks on the Dask scheduler at ADDRESS (e.g. tcp://10.0.0.5:8786)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0); same seed, same clusters")
    parser.add_argument("--delta", type=float, default=0.05, help="racing error level (default 0.05)")
    parser.add_argument("--sweeps", dest="n_sweeps", type=int, default=None, metavar="N",
                        help="Gibbs sweeps per block (default: the sampler's default)")
    parser.add_argument("--resume", action="store_true",
                        help="reuse per-block results checkpointed in DIR/.checkpoint by an earlier run")
    parser.add_argument("--strict", action="store_true", help="fail on the first bad record instead of skipping it")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")


def main(args):
    """Entry point of ``coref run``; returns the exit status."""
    from coref.exceptions import MentionFormatError

    try:
        result = run(args.data, format=args.format, sampler=args.sampler, folds=args.folds, out=args.out,
                     workers=args.workers, scheduler=args.scheduler, seed=args.seed, delta=args.delta,
                     n_sweeps=args.n_sweeps, resume=args.resume, strict=args.strict, progress=not args.quiet)
    except (FileNotFoundError, NotADirectoryError, MentionFormatError, ValueError, TypeError, ConnectionError) as exc:
        if getattr(args, "debug", False):
            raise
        print(f"coref run: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"coref run: interrupted; finished blocks are checkpointed in {args.out}/.checkpoint "
              "(rerun with --resume to reuse them)", file=sys.stderr)
        return 130
    print(result.summary())
    if result.n_reused:
        print(f"reused {result.n_reused} block results from checkpoints, computed {result.n_computed}")
    print(f"outputs: {result.out}/ (report.md, metrics.json, clusters.csv, curves.csv, plots)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="coref run")
    add_arguments(parser)
    sys.exit(main(parser.parse_args()))
