"""``coref add`` as a function: new mentions into an earlier clustering, without renumbering it.

Given a finished ``coref predict`` (or ``add``) output directory -- its clusters.csv and
mentions.parquet, verified against its manifest -- and new mentions, the clustering
is extended by :func:`coref.jobs.incremental.add_clusters`: blocks that already exist
start from their clusters with the old mentions fixed, new blocks are clustered from
scratch, blocks without new mentions are copied unchanged (not recomputed).

Only the new mentions are encoded from their text: the old mentions' per-mention
encodings come from the earlier output's ``encodings.npz`` (:func:`reuse_encodings`:
listed in its manifest, made with the same model, covering exactly its mentions, every
array checked), and each touched block is assembled from both
(:func:`coref.encoding.assemble_block`, the same arrays as encoding the block anew). A
missing or refused file is named in a warning and the old mentions are encoded again
(``strict``: a refused file is an error). The output has its own ``encodings.npz``, so
adds chain.

A new mention whose id is already clustered is skipped, named and counted (``strict``:
an error). ``gold`` is passed through from the old clusters.csv and the new data, never
read.
"""
from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from coref.inference import executor_context
from coref.exceptions import ModelChangeError
from coref.inputs import encoder_cells, input_paths, load_input, resolve_model
from coref.io import MENTION_COLUMNS
from coref.jobs.add_groups import add_onto_groups, is_group_output
from coref.jobs.incremental import ADD_SWEEPS, add_clusters
from coref.jobs.predict import cache_params, certify_budget, clustering_summary
from coref.jobs.result import ClusteringResult
from coref.jobs.writing import write_add_confidence, write_outputs
from coref.outputs import (ENCODINGS_FILE, EncodingsError, OutputDir, mentions_checksum, read_encodings,
                           read_manifest, write_encodings)
from coref.settings import make_settings

__all__ = ["add", "read_clustered", "reuse_encodings", "encoder_cells", "check_same_model", "ADD_SWEEPS"]


def read_clustered(directory, *, as_text=True):
    """The mentions and clusters of a finished ``coref predict`` / ``add`` output.

    Parameters
    ----------
    directory : str or os.PathLike
    as_text : bool, default True
        Give the mention table the encoder's cell types (text as Python ``str``, list
        cells as ``list``); ``False`` keeps the types Parquet gives (enough to write the
        table again, and faster when the old mentions need no encoding).

    Returns
    -------
    mentions : pandas.DataFrame
    clusters : pandas.DataFrame
        mention_id, block, cluster_id (+ gold as the exact strings of the file).
    manifest : dict

    Raises
    ------
    coref.outputs.OutputError
        If the directory is unfinished, locked, or a file differs from its manifest.
    ValueError
        If clusters.csv and mentions.parquet disagree.
    """
    d = Path(directory)
    manifest = read_manifest(d)
    for name in ("clusters.csv", "mentions.parquet"):
        if name not in manifest["files"]:
            raise ValueError(f"{d / name}: not in {d / 'manifest.json'}; --clusters must be a coref predict/add output")
    clusters = pd.read_csv(d / "clusters.csv", dtype=str, keep_default_na=False, na_values=[""])
    for c in ("mention_id", "block", "cluster_id"):
        if c not in clusters.columns:
            raise ValueError(f"{d / 'clusters.csv'}: no column {c!r}")
    # our own file, its SHA-256 checked against the manifest above: read it directly (the
    # general loader re-validates every list cell, which costs more than the whole add)
    mentions = pd.read_parquet(d / "mentions.parquet")
    missing = [c for c in MENTION_COLUMNS if c not in mentions.columns]
    if missing:
        raise ValueError(f"{d / 'mentions.parquet'}: missing mention column(s) {missing}")
    m_ids = mentions["mention_id"].astype(str).to_numpy(dtype=object)
    c_ids = clusters["mention_id"].astype(str).to_numpy(dtype=object)
    if not np.array_equal(m_ids, c_ids):
        if not (len(m_ids) == len(c_ids) and np.array_equal(np.sort(m_ids), np.sort(c_ids))):
            raise ValueError(f"{d}: clusters.csv and mentions.parquet cover different mentions")
        # the rows of both tables in the order of clusters.csv
        mentions = mentions.iloc[pd.Index(m_ids).get_indexer(c_ids)].reset_index(drop=True)
    return (encoder_cells(mentions) if as_text else mentions), clusters, manifest


def reuse_encodings(directory, manifest, clusters, model, model_info, *, strict=False):
    """The per-mention encodings saved in an earlier output, if they can be trusted.

    The file (``encodings.npz``) must be listed in the directory's manifest (its SHA-256
    was checked by :func:`coref.outputs.read_manifest`) and pass
    :func:`coref.outputs.read_encodings`: made with this model (its model.json SHA-256
    and vocabulary sizes), covering exactly the mentions of ``clusters``, every array of
    the expected name, dtype, shape and range.

    Returns
    -------
    encodings : coref.encoding.MentionEncoding or None
        Rows in the order of ``clusters``; ``None`` when they must be recomputed.
    note : str
        What happened ("reused <file>" or why not), for the summary.

    Raises
    ------
    coref.outputs.EncodingsError
        With ``strict``, if the file is listed but refused.

    Warns
    -----
    RuntimeWarning
        Naming the file and the reason, when it is missing or refused (then the old
        mentions are encoded again from their text).
    """
    path = Path(directory) / ENCODINGS_FILE
    if ENCODINGS_FILE not in manifest.get("files", {}):
        note = f"{path}: not in {Path(directory) / 'manifest.json'} (an older output); old mentions encoded again"
        warnings.warn(note, RuntimeWarning, stacklevel=2)
        return None, note
    try:
        enc = read_encodings(path, model_sha256=model_info["model_json_sha256"],
                             mention_ids=clusters["mention_id"].astype(str).to_numpy(), vocabulary=model.vocabulary_)
    except EncodingsError as exc:
        if strict:
            raise
        note = f"{exc}; old mentions encoded again"
        warnings.warn(note, RuntimeWarning, stacklevel=2)
        return None, note
    return enc, f"reused {path}"


def check_same_model(directory, manifest, model_info, allow_model_change=False):
    """Refuse to extend a clustering with another model than the one that made it, unless allowed.

    The model.json SHA-256 recorded in the manifest of ``directory`` (``model`` key) is
    compared with that of the model in use (``model_info`` of
    :func:`coref.inputs.resolve_model`).

    Returns
    -------
    dict or None
        ``None`` when the models are the same; else, with ``allow_model_change``, what
        changed (``from`` / ``to``: path and SHA-256), to record in the new manifest.

    Raises
    ------
    ModelChangeError
        If the models differ (or the clustering records none) and ``allow_model_change``
        is false; the message names both models.
    """
    old = manifest.get("model") if isinstance(manifest.get("model"), dict) else {}
    old_sha, new_sha = old.get("model_json_sha256"), model_info.get("model_json_sha256")
    if old_sha == new_sha:
        return None
    if not allow_model_change:
        raise ModelChangeError(
            f"{Path(directory) / 'manifest.json'}: the clusters were made with the model {old.get('path')!r} "
            f"(model.json SHA-256 {str(old_sha)[:12]}...), not with {model_info.get('path')!r} "
            f"({str(new_sha)[:12]}...); pass --model {old.get('path')} to use the same model, or "
            "--allow-model-change to add with this one (recorded in the new manifest)")
    return {"from": {"path": old.get("path"), "model_json_sha256": old_sha},
            "to": {"path": model_info.get("path"), "model_json_sha256": new_sha}}


def add(clusters_dir, data, *, model=None, out, revisit=False, sampler="auto", seed=0, delta=0.05,
        n_sweeps=None, format=None, strict=False, workers=None, scheduler=None, progress=True,
        factor_cache_mb=0.0, allow_model_change=False, confidence=False, certify_seconds=None):
    """Verify ``clusters_dir``, add the mentions of ``data`` to its clustering, write ``out``.

    Parameters
    ----------
    clusters_dir : str or os.PathLike
        Output of ``coref predict`` or ``coref add`` (checked against its manifest).
    data : str, os.PathLike or pandas.DataFrame
        The new mentions.
    model : None, str or os.PathLike
        Model directory; ``None`` = the shipped default.
    out : str or os.PathLike
        Output directory: the whole clustering (old and new), like ``coref predict``'s.
    revisit : bool
        Let Gibbs also move the old mentions of the blocks that received new ones.
    n_sweeps : int or None
        Gibbs sweeps per block; ``None``: :data:`ADD_SWEEPS`.
    sampler, seed, delta, format, strict, workers, scheduler, progress, factor_cache_mb
        As for :func:`coref.jobs.predict.predict`.
    allow_model_change : bool, default False
        Allow a model other than the one that made ``clusters_dir`` (recorded in the
        manifest as ``model_change``); otherwise that is an error.
    confidence : bool, default False
        Also write confidence.csv, pairs.csv and review.csv for every mention of the blocks
        this add sampled (those that received new mentions: old and new mentions, column
        ``new``), describing the clustering written (no id is repaired: an add changes no
        existing id); :func:`coref.jobs.writing.write_add_confidence`.
    certify_seconds : float >= 0 or None, default None
        With ``confidence``: the DIS certification budget (s), as for
        :func:`coref.jobs.predict.predict` (None: half the time of the add so far, 0.5 to 60 s).

    Returns
    -------
    ClusteringResult
        ``out``, ``paths`` and ``summary`` (summary.json, with the manifest).

    Raises
    ------
    coref.outputs.OutputError
        Before any work: ``out`` is unwritable, locked, an input or inside one
        (``clusters_dir`` included), or ``clusters_dir`` is unfinished, interrupted or
        was modified. A finished run in ``out`` is replaced only once the new one is
        complete.
    coref.exceptions.ModelChangeError
        If ``model`` is not the model that made ``clusters_dir`` and
        ``allow_model_change`` is false.
    FileNotFoundError, ValueError, TypeError, coref.exceptions.MentionFormatError,
    coref.exceptions.ModelFormatError, ConnectionError
        For bad input, a bad model or an unreachable scheduler.
    """
    t0 = time.perf_counter()
    if confidence:
        certify_budget(certify_seconds, 0.0)     # validated before any work
    if n_sweeps is None:
        n_sweeps = ADD_SWEEPS
    settings = make_settings("add", sampler=sampler, seed=seed, delta=delta, n_sweeps=n_sweeps, format=format,
                             strict=strict, workers=workers, scheduler=scheduler, revisit=revisit,
                             gibbs_params=cache_params(factor_cache_mb))
    od = OutputDir(out, "add", inputs=input_paths(data=data, model=model, clusters=clusters_dir))
    with od.preparing():                 # every input is read before --out is touched
        fitted, _, model_info = resolve_model(model)
        # the encodings files of a block-group output: hashed when read (touched blocks only),
        # the others linked into --out with the SHA-256 their manifest records
        old_manifest = read_manifest(clusters_dir, deferred=lambda name: name.startswith("encodings-g"))
        model_change = check_same_model(clusters_dir, old_manifest, model_info, allow_model_change)
        grouped = model_change is None and is_group_output(old_manifest)
        if grouped:    # read selectively below
            new, desc = load_input(data, format=settings.format, strict=settings.strict, command="add")
            old_summary = json.loads((Path(clusters_dir) / "summary.json").read_text(encoding="utf-8"))
    if grouped:
        return _add_onto_groups(clusters_dir, old_manifest, new, desc, old_summary, od, fitted, model_info, settings,
                                progress=progress, t0=t0, confidence=confidence, certify_seconds=certify_seconds)
    with od.preparing():
        old_mentions, old_clusters, old_manifest = read_clustered(clusters_dir, as_text=False)
        if model_change is None:
            old_encodings, enc_note = reuse_encodings(clusters_dir, old_manifest, old_clusters, fitted, model_info,
                                                      strict=settings.strict)
        else:                            # another model's encodings cannot be reused
            old_encodings, enc_note = None, "model changed (--allow-model-change): old mentions encoded again"
        if old_encodings is None:          # the old mentions are encoded again from their text
            old_mentions = encoder_cells(old_mentions)
        new, desc = load_input(data, format=settings.format, strict=settings.strict, command="add")
        log = desc.pop("log", [])
    with od:
        with executor_context(None, settings.workers, settings.scheduler) as (client, executor_desc):
            clusters, info = add_clusters(fitted, old_mentions, old_clusters, new, settings, client=client,
                                          progress=progress, old_encodings=old_encodings, return_encodings=True)
        margins = info.pop("margins")
        info.pop("prior_shifts")          # (per block: blocks.csv of a streamed output holds them)
        encodings = info.pop("encodings")
        info["old_encodings"] = enc_note
        # (a set: isin on pyarrow strings loops in Python)
        old_ids = set(old_clusters["mention_id"].astype(str).tolist())
        keep_new = new[np.fromiter((m not in old_ids for m in new["mention_id"].astype(str).tolist()), bool,
                                   len(new))]
        cols = list(dict.fromkeys(list(old_mentions.columns) + list(keep_new.columns)))
        allm = pd.concat([old_mentions.reindex(columns=cols), keep_new.reindex(columns=cols)], ignore_index=True)
        if "gold" in clusters.columns:
            allm["gold"] = pd.array(clusters["gold"].to_numpy(), dtype="string")
        conf_md, conf_info = None, {}
        if confidence:
            conf_md, conf_info = write_add_confidence(
                od, fitted, allm, clusters, encodings,
                set(keep_new["mention_id"].astype(str)), settings,
                certify_seconds=certify_budget(certify_seconds, time.perf_counter() - t0))
        summary = {
            **clustering_summary("add", clusters, info),
            "base": {"path": str(clusters_dir), "settings_key": old_manifest.get("settings_key")},
            "data": desc, "model": model_info, "executor": executor_desc, "settings": settings.to_dict(),
            "elapsed_s": time.perf_counter() - t0, **({"model_change": model_change} if model_change else {}),
            **conf_info,
        }
        summary = write_outputs(od, allm, clusters, fitted, settings, summary=summary,
                                title="Author coreference: new mentions added", margins=margins,
                                focus=set(keep_new["mention_id"].astype(str)), loader_log=log, confidence=conf_md)
        write_encodings(od.path(ENCODINGS_FILE), encodings, model_sha256=model_info["model_json_sha256"])
        summary["manifest"] = od.finish(settings=settings, model_info=model_info,
                                        input_info={"path": desc["path"], "format": desc["format"],
                                                    "mentions_sha256": mentions_checksum(new),
                                                    "base": str(clusters_dir)},
                                        extra={"model_change": model_change} if model_change else None)
    return ClusteringResult.from_summary(od.out, summary)


def _add_onto_groups(clusters_dir, old_manifest, new, desc, old_summary, od, fitted, model_info, settings, *,
                     progress, t0, confidence=False, certify_seconds=None):
    """:func:`add` onto a block-group output (:mod:`coref.jobs.add_groups`): reads what the new mentions touch."""
    log = desc.pop("log", [])
    with od:
        with executor_context(None, settings.workers, settings.scheduler) as (client, executor_desc):
            summary, kept = add_onto_groups(clusters_dir, old_manifest, new, desc, log, od, fitted, model_info,
                                            settings, client=client, progress=progress, t0=t0,
                                            executor_desc=executor_desc, old_summary=old_summary,
                                            confidence=confidence, certify_seconds=certify_seconds)
        summary["manifest"] = od.finish(settings=settings, model_info=model_info,
                                        input_info={"path": desc["path"], "format": desc["format"],
                                                    "mentions_sha256": mentions_checksum(kept),
                                                    "base": str(clusters_dir)})
    return ClusteringResult.from_summary(od.out, summary)
