"""``coref run`` as a function: load -> block -> fit theta -> Gibbs -> score -> report.

Grouped k-fold cross-validation by block: the pairwise model (theta) of fold k is
fitted on the labeled blocks of the other folds and used to infer the blocks of fold
k, so B3 is never reported on blocks whose labels trained theta. It is built on the
same pieces as ``coref predict``: :mod:`coref.settings` (one validated settings
object), :mod:`coref.inputs` (loading), :mod:`coref.inference` (blocks over an
executor, local or Dask, same clusters on both), :mod:`coref.outputs` (lock, manifest,
checkpoints) and :mod:`coref.outputs.report`; the folds are :mod:`coref.jobs.folds`, the
scores :mod:`coref.jobs.scoring`, the held-out confidence :mod:`coref.jobs.heldout`.

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

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from tqdm import tqdm

from coref.inference import execute, executor_context
from coref.inputs import input_paths, load_input
from coref.jobs import folds as fold_models
from coref.jobs import scoring
from coref.jobs.folds import assign_folds
from coref.jobs.heldout import check_calibration, heldout_confidence
from coref.outputs import CheckpointStore, OutputDir, mentions_checksum
from coref.outputs.report import CLUSTER_COLUMNS, format_summary, write_loader_log, write_report
from coref.settings import make_settings

__all__ = ["run", "RunResult"]


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
        return format_summary(self.metrics)


@dataclass(frozen=True)
class _Folds:
    """The data of a run split into folds (what every step below reads)."""

    df: pd.DataFrame          # mentions, with the fold of each in ``_fold``
    desc: dict                # what the loader read (coref.inputs.load_input)
    fold_of: dict             # block -> fold
    labeled: set              # blocks with gold labels
    blocks_by_fold: dict      # fold -> its blocks, sorted
    groups: dict              # block -> its mentions
    data_sha: str             # checksum of the mentions


def _split(df, desc, n_folds):
    """Assign folds and group the mentions by block."""
    fold_of, labeled = assign_folds(df, n_folds)
    df["_fold"] = df["block"].map(fold_of).astype(int)
    data_sha = mentions_checksum(df.drop(columns="_fold"))
    blocks_by_fold = {k: [] for k in range(n_folds)}
    for b, f in sorted(fold_of.items()):
        blocks_by_fold[f].append(b)
    groups = {b: g.drop(columns="_fold").reset_index(drop=True) for b, g in df.groupby("block", sort=False)}
    return _Folds(df, desc, fold_of, labeled, blocks_by_fold, groups, data_sha)


def _reuse_blocks(store, samplers, fd):
    """Block results checkpointed by an earlier run (validated against block, mention ids and key)."""
    results = {}
    for s in samplers:
        for f, bs in fd.blocks_by_fold.items():
            for b in bs:
                r = store.load_block(s, f, b, fd.groups[b]["mention_id"].to_numpy())
                if r is not None:
                    results[(s, f, b)] = r
    return results


def _infer(fd, settings, store, results, *, executor, resume, progress, model_kw):
    """Fit the fold models that still have work and infer every block not checkpointed.

    Adds the block results to ``results`` (checkpointing each); returns
    (models, fit seconds per fold, number of blocks computed, executor description).
    """
    samplers, n_folds = list(settings.samplers), settings.folds
    with executor_context(executor, settings.workers, settings.scheduler) as (client, executor_desc):
        # fit theta for each fold that still has work (on the other folds' labeled blocks only)
        need_folds = sorted({f for s in samplers for f, bs in fd.blocks_by_fold.items() for b in bs
                             if (s, f, b) not in results})
        models, fit_s = fold_models.fit_models(fd.df, fd.labeled, need_folds, store, resume=resume, client=client,
                                               progress=progress, model_kw=model_kw)
        if resume:
            for f in range(n_folds):
                if f not in fit_s:
                    fit_s[f] = fold_models.load_fold_model(store, f)[1]

        # fold by fold, every sampler on the fold before the next fold: the samplers'
        # wall times (metrics.json) then see the same machine load, not one the first
        # half of the run and another the second
        items = [(s, f, b, fd.groups[b], None) for f in range(n_folds) for s in samplers
                 for b in fd.blocks_by_fold[f] if (s, f, b) not in results]

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
    return models, fit_s, len(items), executor_desc


def _assemble(fd, results, samplers):
    """clusters.csv of the run (every sampler, fold and block) and the block results in its order."""
    gold = fd.df.set_index("mention_id")["gold"]
    all_results = [results[(s, f, b)] for s in samplers for f in range(len(fd.blocks_by_fold))
                   for b in fd.blocks_by_fold[f]]
    frames = [pd.DataFrame({"sampler": r.sampler, "fold": r.fold, "block": r.block,
                            "mention_id": r.mention_id, "cluster_id": r.cluster_id}) for r in all_results]
    clusters = pd.concat(frames, ignore_index=True)
    clusters["gold"] = gold.reindex(clusters["mention_id"]).to_numpy()
    clusters["scored"] = clusters["block"].isin(fd.labeled).to_numpy() & clusters["gold"].notna().to_numpy()
    return clusters[CLUSTER_COLUMNS], all_results


def _data_metrics(fd, n_scored_ids, clusters):
    """metrics.json ``data``: what was read and how much of it is scored."""
    df = fd.df
    lab_mask = df["block"].isin(fd.labeled)
    return {
        **fd.desc,
        "n_mentions": int(len(df)),
        "n_blocks": int(df["block"].nunique()),
        "n_labeled_mentions": int(df["gold"].notna().sum()),
        "n_scored_mentions": int(n_scored_ids),
        "n_scored_blocks": int(clusters.loc[clusters["scored"], "block"].nunique()),
        "n_unlabeled_blocks": int(df["block"].nunique() - len(fd.labeled)),
        "n_unlabeled_mentions_in_scored_blocks": int((lab_mask & df["gold"].isna()).sum()),
        "n_gold_entities": int(df["gold"].dropna().nunique()),
        "largest_block": int(df["block"].value_counts().max()),
    }


def _factor_ratio(per_sampler):
    """Factor evaluations of exact Gibbs over those of racing Gibbs (None unless both ran)."""
    if {"exact", "racing"} <= set(per_sampler) and per_sampler["racing"]["n_factor_evals"] > 0:
        return per_sampler["exact"]["n_factor_evals"] / per_sampler["racing"]["n_factor_evals"]
    return None


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
    t_start = time.perf_counter()
    if block_prior not in ("pcc", "none"):
        raise ValueError(f"the block_prior parameter must be 'pcc' or 'none'; got {block_prior!r}")
    check_calibration(calibration)
    # the default model is PairwiseModel() as it always was (stand-ins in tests take no keywords)
    model_kw = {} if block_prior == "pcc" else {"block_prior": block_prior}
    settings = make_settings("run", sampler=sampler, seed=seed, delta=delta, n_sweeps=n_sweeps, folds=folds,
                             workers=workers, scheduler=scheduler, format=format, strict=strict)
    samplers, folds = list(settings.samplers), settings.folds
    if executor is not None and (workers is not None or scheduler is not None):
        raise ValueError("give either executor or workers / scheduler, not both")
    od = OutputDir(out, "run", inputs=input_paths(data=data))   # an unusable --out is reported before any work
    with od.preparing():                 # the data is read before --out is touched
        df, data_desc = load_input(data, format=settings.format, strict=settings.strict, command="run",
                                   need_gold=True)
        loader_log = data_desc.pop("log", [])
        fd = _split(df, data_desc, folds)
    with od:  # locked while written; the new files go beside a finished run and are swapped in at the end
        out = od.out
        # another block prior = other fold models and clusters: its own checkpoints (the
        # default keeps the key it always had)
        settings_key = settings.key(fd.data_sha, "checkpoint-v2", *([] if block_prior == "pcc" else [block_prior]))
        store = CheckpointStore(out, settings_key)
        results = _reuse_blocks(store, samplers, fd) if resume else {}
        n_reused = len(results)
        models, fit_s, n_computed, executor_desc = _infer(fd, settings, store, results, executor=executor,
                                                          resume=resume, progress=progress, model_kw=model_kw)
        clusters, all_results = _assemble(fd, results, samplers)
        scored_ids = pd.Index(clusters.loc[clusters["scored"], "mention_id"].unique())
        per_sampler = {s: scoring.sampler_metrics(clusters, [r for r in all_results if r.sampler == s], sampler=s,
                                                  folds=folds, fold_of=fd.fold_of, labeled=fd.labeled, fit_s=fit_s)
                       for s in samplers}
        curves = scoring.sweep_curves(all_results, fd.df.set_index("mention_id")["gold"], scored_ids)
        metrics = {
            "n_mentions": int(len(fd.df)),
            "n_blocks": int(fd.df["block"].nunique()),
            "n_skipped": int(data_desc.get("n_skipped", 0)),
            **per_sampler,  # one top-level key per sampler: "racing", "exact"
            "factor_eval_ratio_exact_over_racing": _factor_ratio(per_sampler),
            "data": _data_metrics(fd, len(scored_ids), clusters),
            "settings": {
                "sampler": sampler, "samplers": samplers, "folds": folds, "seed": settings.seed,
                "delta": settings.delta, "n_sweeps": settings.n_sweeps,
                "n_sweeps_used": int(curves["sweep"].max()) if len(curves) else settings.n_sweeps,
                "executor": executor_desc, "resume": bool(resume), "strict": bool(strict),
                "checkpoint_key": settings_key, "settings_key": settings.key(), "block_prior": block_prior,
            },
            "n_checkpoints_refused": len(store.refused),
            "checkpoints_refused": store.refused[:20],
            "n_block_results_reused": n_reused,
            "n_block_results_computed": n_computed,
            "elapsed_s": time.perf_counter() - t_start,
        }
        if confidence:
            t_conf = time.perf_counter()
            models = fold_models.complete_fold_models(fd.df, fd.labeled, models, store, folds, model_kw)
            metrics["confidence"] = heldout_confidence(
                fd.df.drop(columns="_fold"), {b: int(f) for b, f in fd.fold_of.items()}, fd.labeled, models,
                clusters, sampler=samplers[0], calibration=calibration, seed=settings.seed, progress=progress)
            metrics["confidence"]["seconds"] = time.perf_counter() - t_conf
            metrics["elapsed_s"] = time.perf_counter() - t_start
        write_loader_log(od, loader_log)
        paths = write_report(od.work, clusters=clusters, metrics=metrics, curves=curves, plots=plots, files=od)
        od.finish(settings=settings, input_info={"path": data_desc["path"], "format": data_desc["format"],
                                                 "mentions_sha256": fd.data_sha},
                  extra={"checkpoint_key": settings_key})
    paths = {k: out / p.name for k, p in paths.items()}
    paths["manifest"] = out / "manifest.json"
    return RunResult(metrics=metrics, clusters=clusters, curves=curves, out=out, paths=paths,
                     n_reused=n_reused, n_computed=n_computed, refused=tuple(store.refused))
