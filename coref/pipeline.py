"""The ``coref run`` evaluation: load -> block -> fit theta -> Gibbs -> score -> report.

Grouped k-fold cross-validation by block: the pairwise model (theta) of fold k is
fitted on the labeled blocks of the other folds and used to infer the blocks of fold
k, so B3 is never reported on blocks whose labels trained theta. It is built on the
same pieces as ``coref predict``: :mod:`coref.settings` (one validated settings
object), :mod:`coref.inputs` (loading), :mod:`coref.inference` (blocks over an
executor, local or Dask, same clusters on both), :mod:`coref.outputs` (lock, manifest,
checkpoints) and :mod:`coref.report`.

Checkpoints (``--resume``) are npz files per (sampler, fold, block) and saved fold
models (:func:`coref.model.save_model`) under ``OUT/.checkpoint/KEY``, KEY being the
hash of the settings and of the data; each is validated against the block's mention
ids, the block name and KEY before reuse and recomputed otherwise. Nothing is unpickled.

References
----------
.. [1] Chen, Y. & Ghahramani, Z. (2016). Scalable discrete sampling as a multi-armed
   bandit problem. ICML. Sec. 5.3 (author coreference) and Appx. C.3.
.. [2] Singh, S., Wick, M. & McCallum, A. (2012). Monte Carlo MCMC: efficient
   inference by approximate sampling. EMNLP.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from coref.inference import BlockResult, execute, executor_context, infer_blocks, pad, single_thread

__all__ = ["run", "RunResult", "BlockResult", "assign_folds", "infer_blocks", "heldout_confidence", "add_arguments",
           "main"]




def _model_cls():
    """The pairwise model class, looked up at call time (tests substitute a stand-in)."""
    from coref.model import PairwiseModel

    return PairwiseModel


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
    refused : tuple of str
        Checkpoints found but refused (why), then recomputed.
    """

    metrics: dict
    clusters: pd.DataFrame
    curves: pd.DataFrame
    out: Path
    paths: dict
    n_reused: int
    n_computed: int
    refused: tuple = ()

    def summary(self):
        """Short plain-text table of the per-sampler results."""
        from coref.report import format_summary

        return format_summary(self.metrics)


# --------------------------------------------------------------------------- folds

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
            evals += pad(r.evals_history, n_rows)
            h = pad(r.labels_history, n_rows).astype(np.int64)
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


def _within_block_b3(scored):
    """B3 with each gold author cut at block boundaries (S2AND's within-block protocol).

    ``scored``: the scored rows of clusters.csv (``block``, ``mention_id``, ``cluster_id``,
    ``gold``). Predicted clusters never span blocks, so this differs from the pooled B3
    only in recall, and only where a gold author's mentions fall into several blocks (24 gold
    clusters of the S2AND Qian fixture); those cross-block pairs are not counted as missed.
    Returns ``b3_within_block_precision`` / ``_recall`` / ``_f1`` (None without a label).
    """
    from coref.evaluate import b3

    keys = ("b3_within_block_precision", "b3_within_block_recall", "b3_within_block_f1")
    if len(scored) == 0 or scored["gold"].notna().sum() == 0:
        return dict.fromkeys(keys)
    ids = scored["mention_id"].to_numpy()
    gold = scored["block"].astype(str) + "\x1f" + scored["gold"].astype(str)
    r = b3(pd.Series(scored["cluster_id"].to_numpy(), index=ids), pd.Series(gold.to_numpy(), index=ids))
    return dict(zip(keys, (float(r.precision), float(r.recall), float(r.f1))))


# --------------------------------------------------------------------------- run

def _fit_fold_model(df, labeled, fold, model_kw=None):
    """Fit theta on the labeled blocks outside ``fold``; returns (model, seconds).

    ``model_kw``: keyword arguments of the model class (``None``: its defaults).

    Runs with one BLAS / OpenMP thread: the solver's floating-point sums then do not
    depend on how many threads the process (driver or Dask worker) would use, so
    theta -- and every cluster downstream -- is the same on every executor.
    """
    t0 = time.perf_counter()
    train = df[(df["_fold"] != fold) & df["block"].isin(labeled)].drop(columns="_fold").reset_index(drop=True)
    with single_thread():
        model = _model_cls()(**(model_kw or {})).fit(train)
    return model, time.perf_counter() - t0


def _save_fold_model(store, fold, model, fit_s):
    from coref.model import PairwiseModel, save_model

    if isinstance(model, PairwiseModel):  # stand-ins in tests are not saved
        save_model(model, store.model_dir(fold), extra={"settings_key": store.key, "fold": int(fold),
                                                         "fit_s": float(fit_s)})


def _load_fold_model(store, fold):
    """(model, fit seconds) from the checkpoint, or (None, None) (refusal recorded)."""
    from coref.exceptions import ModelFormatError
    from coref.model import load_model

    d = store.model_dir(fold)
    if not d.exists():
        return None, None
    try:
        model, extra = load_model(d)
    except (ModelFormatError, OSError) as exc:
        store.refused.append(f"{d}: {exc}")
        return None, None
    if extra.get("settings_key") != store.key or extra.get("fold") != int(fold):
        store.refused.append(f"{d}: saved for settings {extra.get('settings_key')!r} fold {extra.get('fold')!r}")
        return None, None
    return model, float(extra.get("fit_s", 0.0))


def _fit_models(df, labeled, need_folds, store, *, resume, client, progress, model_kw=None):
    """Fitted model per fold in ``need_folds`` (from checkpoints with ``resume``); fits run on ``client`` if given."""
    from tqdm import tqdm

    models, fit_s = {}, {}
    todo = []
    for f in need_folds:
        m, secs = _load_fold_model(store, f) if resume else (None, None)
        if m is None:
            todo.append(f)
        else:
            models[f], fit_s[f] = m, secs
    with tqdm(total=len(todo), desc="fit theta", unit="fold", disable=not progress or not todo,
              file=sys.stderr, leave=False) as bar:
        if client is None:
            for f in todo:
                models[f], fit_s[f] = _fit_fold_model(df, labeled, f, model_kw)
                _save_fold_model(store, f, models[f], fit_s[f])
                bar.update(1)
        elif todo:
            from distributed import as_completed

            df_future = client.scatter(df, hash=False)
            futures = {client.submit(_fit_fold_model, df_future, labeled, f, model_kw, pure=False): f for f in todo}
            try:
                for fut in as_completed(list(futures)):
                    f = futures[fut]
                    models[f], fit_s[f] = fut.result()
                    _save_fold_model(store, f, models[f], fit_s[f])
                    bar.update(1)
            except BaseException:
                client.cancel(list(futures))
                raise
    return models, fit_s


def run(data=None, *, format=None, sampler="both", folds=5, out="results/", executor=None, workers=None,
        scheduler=None, seed=0, delta=0.05, n_sweeps=None, resume=False, strict=False, progress=True,
        plots=True, confidence=True, calibration="isotonic", block_prior="pcc"):
    """Author coreference end to end with grouped k-fold cross-validation by block.

    Parameters
    ----------
    data : None, str, os.PathLike or pandas.DataFrame
        Mention file or directory (read with :func:`coref.io.load_mentions`), or an
        already loaded mention table. ``None``: the shipped AMiner set ``aminer_na``.
    format : {None, "aminer", "han", "s2and", "crossref", "csv", "parquet"}
        Loader format; ``None`` lets the loader detect it.
    sampler : {"both", "racing", "exact", "auto"}
        Gibbs conditional sampler(s): Racing-Normal subsampling, exact, ``"auto"`` (exact
        from the cached factor matrix where a block's matrix fits, racing elsewhere), or
        ``"both"`` (racing and exact).
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
    confidence : bool, default True
        Score the confidence of the held-out assignments (:func:`heldout_confidence`):
        metrics.json key ``confidence`` (ECE, Brier raw / calibrated / sigmoid(f),
        coverage and correctness at confidence >= 0.95, per fold and pooled), a report
        section and ``reliability.png``.
    calibration : {"isotonic", "temperature", "none"}, default "isotonic"
        Calibration map fitted on each fold's training folds only.
    block_prior : {"pcc", "none"}, default "pcc"
        Per-block prior odds of the fold models (:class:`coref.model.PairwiseModel`);
        ``"none"`` fits them with the pooled intercept only, to compare the two.

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

    from coref.inputs import load_input
    from coref.outputs import CheckpointStore, OutputDir, mentions_checksum
    from coref.report import CLUSTER_COLUMNS, write_report
    from coref.settings import make_settings

    t_start = time.perf_counter()
    if block_prior not in ("pcc", "none"):
        raise ValueError(f"the block_prior parameter must be 'pcc' or 'none'; got {block_prior!r}")
    # the default model is PairwiseModel() as it always was (stand-ins in tests take no keywords)
    model_kw = {} if block_prior == "pcc" else {"block_prior": block_prior}
    settings = make_settings("run", sampler=sampler, seed=seed, delta=delta, n_sweeps=n_sweeps, folds=folds,
                             workers=workers, scheduler=scheduler, format=format, strict=strict)
    samplers, folds = list(settings.samplers), settings.folds
    seed, delta, n_sweeps = settings.seed, settings.delta, settings.n_sweeps
    if executor is not None and (workers is not None or scheduler is not None):
        raise ValueError("give either executor or workers / scheduler, not both")
    od = OutputDir(out, "run")
    with od:  # locked while written; unwritable or locked --out is reported before any work
        out = od.out
        df, data_desc = load_input(data, format=settings.format, strict=settings.strict, command="run",
                                   need_gold=True)
        fold_of, labeled = assign_folds(df, folds)
        df["_fold"] = df["block"].map(fold_of).astype(int)
        data_sha = mentions_checksum(df.drop(columns="_fold"))
        # another block prior = other fold models and clusters: its own checkpoints (the
        # default keeps the key it always had)
        settings_key = settings.key(data_sha, "checkpoint-v2", *([] if block_prior == "pcc" else [block_prior]))
        store = CheckpointStore(out, settings_key)

        # reuse checkpoints (validated against block, mention ids and settings key)
        blocks_by_fold = {k: [] for k in range(folds)}
        for b, f in sorted(fold_of.items()):
            blocks_by_fold[f].append(b)
        groups = {b: g.drop(columns="_fold").reset_index(drop=True) for b, g in df.groupby("block", sort=False)}
        results = {}
        n_reused = 0
        if resume:
            for s in samplers:
                for f, bs in blocks_by_fold.items():
                    for b in bs:
                        r = store.load_block(s, f, b, groups[b]["mention_id"].to_numpy())
                        if r is not None:
                            results[(s, f, b)] = r
                            n_reused += 1

        with executor_context(executor, settings.workers, settings.scheduler) as (client, executor_desc):
            # fit theta for each fold that still has work (on the other folds' labeled blocks only)
            need_folds = sorted({f for s in samplers for f, bs in blocks_by_fold.items() for b in bs
                                 if (s, f, b) not in results})
            models, fit_s = _fit_models(df, labeled, need_folds, store, resume=resume, client=client,
                                        progress=progress, model_kw=model_kw)
            if resume:
                for f in range(folds):
                    if f not in fit_s:
                        fit_s[f] = _load_fold_model(store, f)[1]

            # fold by fold, every sampler on the fold before the next fold: the samplers'
            # wall times (metrics.json) then see the same machine load, not one the first
            # half of the run and another the second
            items = []
            for f in range(folds):
                for s in samplers:
                    for b in blocks_by_fold[f]:
                        if (s, f, b) not in results:
                            items.append((s, f, b, groups[b], None))

            def _on_result(r):
                store.save_block(r)
                results[(r.sampler, r.fold, r.block)] = r

            if client is None:
                # local: one bar per (sampler, fold), blocks inside
                by_sf = {}
                for it in items:
                    by_sf.setdefault((it[0], it[1]), []).append(it)
                for (s, f), its in tqdm(list(by_sf.items()), desc="folds", unit="fold", disable=not progress,
                                        file=sys.stderr, leave=False):
                    execute(its, models, None, settings, record_history=True, progress=progress,
                            on_result=_on_result, desc=f"{s} fold {f}")
            elif items:
                execute(items, models, client, settings, record_history=True, progress=progress,
                        on_result=_on_result, desc="gibbs (dask)")
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
            m.update(_within_block_b3(sc))
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
                "settings_key": settings.key(), "block_prior": block_prior,
            },
            "n_checkpoints_refused": len(store.refused),
            "checkpoints_refused": store.refused[:20],
            "n_block_results_reused": n_reused,
            "n_block_results_computed": n_computed,
            "elapsed_s": time.perf_counter() - t_start,
        }
        if confidence:
            t_conf = time.perf_counter()
            for f in range(folds):
                if f not in models and hasattr(_model_cls(), "factor_matrix"):  # stand-ins: no confidence
                    m_f = _load_fold_model(store, f)[0]
                    models[f] = m_f if m_f is not None else _fit_fold_model(df, labeled, f, model_kw)[0]
            metrics["confidence"] = heldout_confidence(
                df.drop(columns="_fold"), {b: int(f) for b, f in fold_of.items()}, labeled, models, clusters,
                sampler=samplers[0], calibration=calibration, seed=seed, progress=progress)
            metrics["confidence"]["seconds"] = time.perf_counter() - t_conf
            metrics["elapsed_s"] = time.perf_counter() - t_start
        paths = write_report(out, clusters=clusters, metrics=metrics, curves=curves, plots=plots, files=od)
        paths["manifest"] = out / "manifest.json"
        od.finish(settings=settings, input_info={"path": data_desc["path"], "format": data_desc["format"],
                                                 "mentions_sha256": data_sha},
                  extra={"checkpoint_key": settings_key})
    return RunResult(metrics=metrics, clusters=clusters, curves=curves, out=out, paths=paths,
                     n_reused=n_reused, n_computed=n_computed, refused=tuple(store.refused))


# --------------------------------------------------------------------------- confidence

def heldout_confidence(df, fold_of, labeled, models, clusters, *, sampler, calibration="isotonic", seed=0,
                       threshold=0.95, progress=False, confidence_kw=None):
    """Calibration of the confidences on held-out folds (issue 13, items 4-5).

    The held-out clusters of each fold k (``sampler``) get their confidences from fold
    k's model (:func:`coref.confidence.assignment_confidence`, every pair within a
    block, Rao-Blackwellised Gibbs marginals at temperature 1). Fold k's calibration
    maps (pair and mention, :func:`coref.confidence.calibration_from_scores`) are then
    fitted on the held-out scores of the OTHER folds, each from its own fold model
    (cross-fitting): no label of fold k enters its map, and every map learns from
    scores of mentions their model was not fitted on, as the maps of ``coref fit``
    do. Figures per fold and pooled: :func:`coref.confidence.confidence_figures`.

    Parameters
    ----------
    df : pandas.DataFrame
        Mentions with ``gold``.
    fold_of : dict
        Block -> fold.
    labeled : collection
        Blocks with gold labels.
    models : dict
        Fold -> fitted model (theta of the other folds).
    clusters : pandas.DataFrame
        ``sampler``, ``fold``, ``block``, ``mention_id``, ``cluster_id`` (held-out).
    sampler : str
        Which sampler's clusters are scored.
    calibration : {"isotonic", "temperature", "none"}
    seed : int
    threshold : float, default 0.95
    progress : bool
    confidence_kw : dict, optional
        Passed to :func:`coref.confidence.assignment_confidence` (e.g. ``n_samples``,
        ``max_submodel``), for the training and the held-out mentions alike.

    Returns
    -------
    dict
        ``sampler``, ``calibration``, ``threshold``, ``folds`` (per-fold figures),
        ``pooled`` (figures over every held-out pair and mention, with the
        ``reliability`` tables), or ``skipped`` (why) when the models cannot produce
        factor matrices (e.g. a stand-in).
    """
    import hashlib
    import json

    from tqdm import tqdm

    from coref.confidence import (assignment_confidence, calibration_from_scores, confidence_figures,
                                  with_calibration)

    if calibration not in ("isotonic", "temperature", "none"):
        raise ValueError(f"the calibration parameter must be 'isotonic', 'temperature' or 'none'; got {calibration!r}")
    if not all(hasattr(m, "factor_matrix") and hasattr(m, "encode") for m in models.values()):
        return {"skipped": "the fold models have no factor_matrix / encode", "sampler": sampler,
                "calibration": calibration}
    kw = dict(confidence_kw or {})
    gold = df.set_index(df["mention_id"].astype(str))["gold"]
    fold = df["block"].map(fold_of)
    lab = df["block"].isin(labeled)
    scored = {}                                      # fold -> (confidences, pairs, clusters), uncalibrated
    for k in tqdm(sorted(models), desc="confidence", unit="fold", disable=not progress, file=sys.stderr,
                  leave=False):
        test = df[(fold == k) & lab].reset_index(drop=True)
        if test.empty:
            continue
        cl = clusters[(clusters["sampler"] == sampler) & (clusters["fold"] == k)
                      & clusters["block"].isin(test["block"].unique())]
        cl = cl[["mention_id", "block", "cluster_id"]].astype({"mention_id": str, "cluster_id": str})
        conf, pairs = assignment_confidence(models[k], test.drop(columns="gold"), cl, calibration=None,
                                            pair_min_p=0.0, pair_factors=True, rng=seed, **kw)
        scored[k] = (conf, pairs, cl)
    per_fold, confs, pairs_all, cls = [], [], [], []
    for k, (conf, pairs, cl) in scored.items():
        others = [v for j, v in scored.items() if j != k]
        cal = None
        if calibration != "none" and others:
            with single_thread():
                cal = calibration_from_scores(*(pd.concat([o[i] for o in others], ignore_index=True)
                                                for i in range(3)), gold, method=calibration,
                                              info={"source": "held-out scores of the other folds, each from "
                                                              "its own fold model",
                                                    "folds": sorted(int(j) for j in scored if j != k)})
        conf, pairs = with_calibration(conf, pairs, cal)
        fig = confidence_figures(conf, pairs, gold, cl, threshold=threshold)
        fig.pop("reliability", None)
        per_fold.append({"fold": int(k), **fig,
                         "calibration_info": None if cal is None else dict(cal.info),
                         "calibration_sha256": None if cal is None else hashlib.sha256(
                             json.dumps(cal.to_dict(), sort_keys=True).encode()).hexdigest()})
        confs.append(conf)
        pairs_all.append(pairs)
        cls.append(cl)
    if not confs:
        return {"skipped": "no labeled held-out block", "sampler": sampler, "calibration": calibration}
    pooled = confidence_figures(pd.concat(confs, ignore_index=True), pd.concat(pairs_all, ignore_index=True), gold,
                                pd.concat(cls, ignore_index=True), threshold=threshold)
    return {"sampler": sampler, "calibration": calibration, "threshold": float(threshold), "folds": per_fold,
            "pooled": pooled}


# --------------------------------------------------------------------------- command line

def add_arguments(parser):
    """Options of ``coref run``."""
    parser.add_argument("--data", metavar="PATH", default=None,
                        help="mention file or directory (default: the shipped AMiner set data/aminer_na)")
    from coref.io import FORMATS
    from coref.settings import ALL_SAMPLERS

    parser.add_argument("--format", choices=FORMATS, default=None,
                        help="input format (default: detected from the path)")
    parser.add_argument("--sampler", choices=ALL_SAMPLERS + ("both",), default="both",
                        help="Gibbs conditional sampler: Racing-Normal, exact, auto (exact from cached "
                             "factors where a block's matrix fits, racing otherwise), or both (racing "
                             "and exact; default)")
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
    parser.add_argument("--no-confidence", dest="confidence", action="store_false",
                        help="skip the held-out confidence calibration figures")
    parser.add_argument("--calibration", choices=("isotonic", "temperature", "none"), default="isotonic",
                        help="confidence calibration map, fitted on each fold's training folds (default isotonic)")
    parser.add_argument("--block-prior", dest="block_prior", choices=("pcc", "none"), default="pcc",
                        help="per-block prior odds of coreference in the fold models (default pcc; none: "
                             "the pooled intercept only)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")


def main(args):
    """Entry point of ``coref run``; returns the exit status."""
    from coref.exceptions import MentionFormatError
    from coref.outputs import OutputError

    try:
        result = run(args.data, format=args.format, sampler=args.sampler, folds=args.folds, out=args.out,
                     workers=args.workers, scheduler=args.scheduler, seed=args.seed, delta=args.delta,
                     n_sweeps=args.n_sweeps, resume=args.resume, strict=args.strict, progress=not args.quiet,
                     confidence=getattr(args, "confidence", True), calibration=getattr(args, "calibration", "isotonic"),
                     block_prior=getattr(args, "block_prior", "pcc"))
    except (FileNotFoundError, NotADirectoryError, MentionFormatError, ValueError, TypeError, ConnectionError,
            OutputError) as exc:
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
    if result.refused:
        print(f"refused {len(result.refused)} checkpoint(s) and recomputed them, e.g. {result.refused[0]}")
    print(f"outputs: {result.out}/ (report.md, metrics.json, clusters.csv, curves.csv, plots)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="coref run")
    add_arguments(parser)
    sys.exit(main(parser.parse_args()))
