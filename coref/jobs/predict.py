"""``coref predict`` as a function: cluster unlabeled mentions with a saved model.

A ``gold`` column in the input is never read: it is dropped before inference and
passed through to clusters.csv untouched. The output directory (locked while written,
manifest.json last, see :mod:`coref.outputs`) holds the files of
:mod:`coref.jobs.writing` and ``encodings.npz``, the per-mention encodings for the
model used (:func:`coref.outputs.write_encodings`), so that ``coref add`` encodes only
the new mentions.

References
----------
.. [1] Chen, Y. & Ghahramani, Z. (2016). Scalable discrete sampling as a multi-armed
   bandit problem. ICML. Sec. 5.3 and Appx. C.3.
"""
from __future__ import annotations

import time

from coref.inference import executor_context
from coref.inputs import input_paths, load_input, resolve_model, stream_source
from coref.io.stream import BATCH_ROWS, GROUP_MENTIONS, STREAM_MIN_MENTIONS, estimated_rows
from coref.jobs.clusters import predict_clusters, with_auto_budget
from coref.jobs.result import ClusteringResult
from coref.jobs.writing import write_confidence, write_outputs
from coref.outputs import ENCODINGS_FILE, OutputDir, mentions_checksum, write_encodings
from coref.settings import check_memory_mb, check_nonnegative, make_settings

__all__ = ["predict", "cache_params", "certify_budget", "clustering_summary", "MEMORY_FACTOR_CACHE_MB"]


#: Factor-matrix budget (MiB) of ``--sampler auto`` in a run that holds its corpus in memory
#: (not streamed) when no ``--factor-cache-mb`` is given: blocks of up to 11,585 mentions
#: are sampled from their cached n x n matrix. Measured with the model of 2026-11-27:
#: racing took 108 s of CPU on a 5,535-mention synthetic name block that the cached
#: matrix (234 MiB) samples in 7.4 s, and minutes on the 10,000-mention one-name block of
#: ``benchmarks/scripts/coref_auto_sampler.py`` (763 MiB) where cached exact takes seconds;
#: the matrix is small beside a corpus held in memory.
MEMORY_FACTOR_CACHE_MB = 1024.0


def cache_params(factor_cache_mb):
    """``gibbs_params`` of :func:`coref.settings.make_settings` for a factor-cache budget.

    ``None`` for 0, so that the settings (and the key of a run) are those of a run
    without the option.

    Raises
    ------
    ValueError
        If the budget is not a finite number >= 0.
    """
    v = check_memory_mb(factor_cache_mb, "--factor-cache-mb")
    return {"factor_cache_mb": v} if v > 0 else None


def clustering_summary(command, clusters, info):
    """The leading keys of summary.json: command, counts of mentions, blocks, clusters, then ``info``."""
    return {"command": command, "n_mentions": int(len(clusters)), "n_blocks": int(clusters["block"].nunique()),
            "n_clusters": int(clusters["cluster_id"].nunique()),
            "n_singletons": int((clusters["cluster_id"].value_counts() == 1).sum()),
            "gold_passed_through": "gold" in clusters.columns, **info}


def certify_budget(certify_seconds, clustering_s):
    """The DIS certification budget (s): ``certify_seconds``, or for None half of ``clustering_s``, within [0.5, 60].

    Half the clustering time keeps ``--confidence`` within 3x the wall of ``predict`` on small
    corpora, where start-up and the report weigh most (issue 27; on the 3,176 dev mentions
    0.5 s certified 14 rows, interval widths median 0.033, max 0.069); certification stops
    earlier when its intervals reach their target width.

    Raises
    ------
    ValueError
        If ``certify_seconds`` is not None and not a finite number >= 0.
    """
    if certify_seconds is None:
        return float(min(60.0, max(0.5, 0.5 * clustering_s)))
    return check_nonnegative(certify_seconds, "--certify-seconds")


def predict(data, *, model=None, out, sampler="auto", seed=0, delta=0.05, n_sweeps=None, format=None,
            strict=False, workers=None, scheduler=None, confidence=False, progress=True,
            factor_cache_mb=0.0, certify_seconds=None, stream=None, group_mentions=GROUP_MENTIONS):
    """Load mentions, cluster every block, write ``out``.

    One CSV / Parquet file is read in block groups (``stream``): memory is bounded by
    the largest group, not by the corpus (:mod:`coref.jobs.streaming`); same clusters.

    Parameters
    ----------
    data : None, str, os.PathLike or pandas.DataFrame
        Mentions to cluster (``None``: the shipped AMiner set). A DataFrame without
        blocks gets them as the loaders give them (:func:`coref.inputs.derive_blocks`).
    model : None, str or os.PathLike
        Model directory from ``coref fit``; ``None`` = the shipped default model.
    out : str or os.PathLike
        Output directory (locked while written, manifest last).
    sampler : {"auto", "racing", "exact"}, default "auto"
        Gibbs conditional sampler.  ``"auto"``: per block, exact Gibbs from the block's
        cached n x n factor matrix when it fits ``factor_cache_mb`` (when 0: 1 GiB,
        blocks of up to 11,585 mentions, in memory; 128 MiB, 4,096 mentions, streamed),
        racing for larger blocks and for blocks of 5,000 mentions or more (cheaper there);
        summary.json ``sampling`` and report.md say which
        block got which and why.  On the shipped data every block fits and ``"auto"``
        is the fastest (``benchmarks/scripts/coref_auto_sampler.py``).
    seed, delta, n_sweeps, format, strict, workers, scheduler
        As in :func:`coref.settings.make_settings`.
    confidence : bool
        Also write per-mention confidence (needs :mod:`coref.confidence`).
    certify_seconds : float >= 0 or None, default None
        With ``confidence``: wall-clock budget (s) of the DIS certification of the least
        certain assignments whose sub-models are too large to sum exactly (0 = off).
        ``None``: :func:`certify_budget` of the run so far (half the clustering time,
        0.5 to 60 s), so that ``--confidence`` stays within a small multiple of ``predict``.
    progress : bool
        Progress bars on stderr.
    factor_cache_mb : float >= 0
        Exact and auto samplers: sample each block whose n x n factor matrix fits this
        many MiB from the matrix (:class:`coref.gibbs.GibbsCoref` ``factor_cache_mb``;
        same clusters, factors evaluated once per block).  0 = off for exact; for
        auto :data:`MEMORY_FACTOR_CACHE_MB` (1 GiB, blocks of up to 11,585 mentions),
        128 MiB (blocks of up to 4,096 mentions) in a streamed run
        (:data:`coref.jobs.streaming.STREAM_FACTOR_CACHE_MB`, so that its peak memory
        does not grow with the corpus).

    Returns
    -------
    ClusteringResult
        ``out``, ``paths`` and ``summary`` (summary.json; its ``manifest`` key holds
        the manifest). ``result[key]`` reads the summary.

    Raises
    ------
    coref.outputs.OutputError
        Before any work, if ``out`` is not writable, is an input (or inside one) or is
        locked by another command. A finished run in ``out`` is replaced only once the
        new one is complete; on an error it is left as it was (the exception's note says
        what was changed).
    FileNotFoundError, ValueError, TypeError, coref.exceptions.MentionFormatError,
    coref.exceptions.ModelFormatError, ConnectionError
        For bad input, a bad model or an unreachable scheduler.
    """
    t0 = time.perf_counter()
    if confidence:
        certify_budget(certify_seconds, 0.0)     # validated before any work
    settings = make_settings("predict", sampler=sampler, seed=seed, delta=delta, n_sweeps=n_sweeps, format=format,
                             strict=strict, workers=workers, scheduler=scheduler,
                             gibbs_params=cache_params(factor_cache_mb))
    if isinstance(group_mentions, bool) or not isinstance(group_mentions, int) or group_mentions < 1:
        raise ValueError(f"--group-mentions must be an integer >= 1; got {group_mentions!r}")
    od = OutputDir(out, "predict", inputs=input_paths(data=data, model=model))
    source = stream_source(data, settings.format)
    if stream is None:
        stream = source is not None and not confidence and estimated_rows(*source) >= STREAM_MIN_MENTIONS
    if stream:
        if source is None or confidence:
            raise ValueError("stream=True needs one CSV or Parquet file as data and no confidence")
        return _predict_streamed(source, od, model, settings, progress=progress, group_mentions=group_mentions, t0=t0)
    settings = with_auto_budget(settings, MEMORY_FACTOR_CACHE_MB)
    with od.preparing():                 # every input is read before --out is touched
        fitted, _, model_info = resolve_model(model)
        df, desc = load_input(data, format=settings.format, strict=settings.strict, command="predict")
        log = desc.pop("log", [])
    with od:
        with executor_context(None, settings.workers, settings.scheduler) as (client, executor_desc):
            clusters, stats = predict_clusters(df, fitted, settings, client=client, progress=progress,
                                               return_encodings=True)
        margins = stats.pop("margins")
        # written first and released after confidence (which assembles blocks from them):
        # the encodings are the largest object of a big run
        encodings = stats.pop("encodings")
        write_encodings(od.path(ENCODINGS_FILE), encodings, model_sha256=model_info["model_json_sha256"])
        conf_md, certify, unscored = None, None, None
        if confidence:
            budget = certify_budget(certify_seconds, time.perf_counter() - t0)
            # clusters.csv is the clustering the confidences describe (the MAP, repaired where they contradict it)
            conf_md, certify, clusters, unscored = write_confidence(od, fitted, df, clusters, settings, encodings,
                                                                    certify_seconds=budget)
        del encodings
        summary = {
            **clustering_summary("predict", clusters, stats),
            "data": desc, "model": model_info, "executor": executor_desc, "settings": settings.to_dict(),
            "elapsed_s": time.perf_counter() - t0,
        }
        if certify is not None:
            summary["certify"] = certify
        if unscored is not None:
            summary["confidence_unscored"] = unscored
        summary = write_outputs(od, df, clusters, fitted, settings, summary=summary, margins=margins,
                                title="Author coreference: predicted clusters", confidence=conf_md, loader_log=log)
        summary["manifest"] = od.finish(settings=settings, model_info=model_info,
                                        input_info={"path": desc["path"], "format": desc["format"],
                                                    "mentions_sha256": mentions_checksum(df)})
    return ClusteringResult.from_summary(od.out, summary)


def _predict_streamed(source, od, model, settings, *, progress, group_mentions, t0):
    """:func:`predict` of one CSV / Parquet file, block group by block group."""
    from coref.jobs.streaming import predict_groups, remove_checkpoint, stream_settings, write_group_outputs
    from coref.outputs import sha256_file

    path, fmt = source
    settings = stream_settings(settings)     # a factor-matrix budget independent of the corpus
    with od.preparing():
        fitted, _, model_info = resolve_model(model)
    with od:
        with executor_context(None, settings.workers, settings.scheduler) as (client, executor_desc):
            summary, (largest, weakest, log, root) = predict_groups(
                path, fmt, od, fitted, model_info, settings, client=client, progress=progress,
                group_mentions=group_mentions, batch_rows=BATCH_ROWS)
        summary.update({"model": model_info, "executor": executor_desc, "settings": settings.to_dict(),
                        "elapsed_s": time.perf_counter() - t0})
        summary = write_group_outputs(od, summary, largest, weakest, log,
                                      title="Author coreference: predicted clusters")
        summary["manifest"] = od.finish(settings=settings, model_info=model_info,
                                        input_info={"path": str(path), "format": fmt,
                                                    "file_sha256": sha256_file(path)})
    remove_checkpoint(root, others=True)
    return ClusteringResult.from_summary(od.out, summary)
