"""The files of a ``coref predict`` / ``coref add`` output directory.

* ``clusters.csv``: mention_id, block, cluster_id (and gold when the input has it).
* ``mentions.parquet``: the mentions clustered (what ``coref add`` builds on).
* ``summary.json`` and ``report.md``: counts, the largest clusters and the weakest
  merges (the mentions whose cluster gains least over being alone).
* ``loader.log`` (when the loader skipped, repaired or ignored anything): every item, one
  line each (``kind: file:line: reason``); the console and report.md give counts and files.
* with ``--confidence``: ``confidence.csv`` and ``pairs.csv`` from
  :func:`coref.confidence.assignment_confidence`, ``review.csv`` (the curator's queue,
  :func:`coref.confidence.review_table`, columns documented in :mod:`coref.confidence.review`)
  and the report section.

(``encodings.npz`` is written by the jobs with :func:`coref.outputs.write_encodings`.)
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from coref.encoding.cache import EncodingCache
from coref.exceptions import UnscoredBlocksWarning
from coref.io import write_mentions
from coref.outputs.report import largest_clusters, render_predict_md, write_csv, write_json, write_loader_log
from coref.margins import weakest_merges
from sampling.utils.atomic import atomic_write_text

__all__ = ["write_outputs", "write_confidence", "write_add_confidence"]


def write_outputs(od, df, clusters, model, settings, *, summary, title, margins, confidence=None, focus=None,
                  loader_log=()):
    """Write clusters.csv, mentions.parquet, summary.json, report.md (and confidence files) into ``od``.

    ``margins``: Series mention_id -> margin (from the inference); ``focus``: the mentions
    the weakest merges are chosen among (None = all); ``loader_log``: every item the
    loader skipped, repaired or noted, one line each, written to loader.log when any.
    """
    write_loader_log(od, list(loader_log))
    write_csv(od.path("clusters.csv"), clusters)
    mentions = df if "gold" in df.columns else df.assign(gold=pd.array([pd.NA] * len(df), dtype="string"))
    write_mentions(mentions, od.path("mentions.parquet"))
    largest = largest_clusters(df, clusters)
    weakest = weakest_merges(clusters, margins, focus=focus)
    summary = {**summary, "largest_clusters": largest.to_dict("records"),
               "weakest_merges": None if weakest is None else weakest.to_dict("records")}
    extra_md = ""
    if confidence is not None:
        extra_md = confidence
    write_json(od.path("summary.json"), summary)
    atomic_write_text(od.path("report.md"), render_predict_md(summary, largest, weakest, title=title) + extra_md)
    return summary


def write_confidence(od, model, df, clusters, settings, encodings=None, certify_seconds=0.0,
                     point_estimate="repair", new_ids=None):
    """confidence.csv, pairs.csv, review.csv and the report section (coref.confidence, if present).

    ``point_estimate`` (:func:`coref.confidence.assignment_confidence`): ``"repair"`` (default)
    moves the mentions of the MAP clustering that the posterior pair probabilities contradict
    (P > 0.99 split, P < 0.01 joined), so that clusters.csv and pairs.csv agree; the returned
    clustering is the one to write to clusters.csv.

    ``encodings``: the run's per-mention encoding of ``df`` (rows of ``df``), so that
    blocks are assembled from it rather than encoded again. ``certify_seconds``: budget of
    the DIS certification pass of :func:`coref.confidence.assignment_confidence` (0 = off).
    Returns the report section, the pass's summary (``confidence_df.attrs["certify"]``),
    ``clusters`` with the reported ``cluster_id`` (a copy; the other columns as given) and
    the count of mentions left without a confidence (``confidence_df.attrs["unscored"]``:
    blocks above ``coref.confidence.assignment.DEFAULT_MAX_BLOCK`` mentions, warned of by
    :class:`coref.exceptions.UnscoredBlocksWarning`). ``new_ids`` (a set of mention ids, ``coref
    add``): confidence.csv and review.csv get a column ``new``, True for those mentions.
    """
    try:   # (an optional part: imported when asked for)
        from coref.confidence import (CONFIDENCE_COLUMNS, assignment_confidence, review_table,
                                      write_confidence_report)
    except ImportError as exc:
        raise RuntimeError(f"--confidence needs coref.confidence, which is not available here ({exc})") from None

    features = df.drop(columns=[c for c in ("gold",) if c in df.columns])
    cache = None if encodings is None else EncodingCache(model, parts=encodings, part_ids=df["mention_id"].to_numpy())
    conf, pairs = assignment_confidence(model, features, clusters[["mention_id", "block", "cluster_id"]],
                                        delta=settings.delta, rng=settings.seed, encodings=cache,
                                        certify_seconds=certify_seconds, point_estimate=point_estimate,
                                        keep_features=True)   # the structure columns, for review.csv
    unscored = dict(conf.attrs.get("unscored") or {})
    if unscored.get("n_mentions"):
        warnings.warn(f"--confidence: the {unscored['n_mentions']:,} mention(s) of {unscored['n_blocks']:,} block(s) "
                      f"of more than {unscored['max_block']:,} mentions get no confidence (method 'none', NaN "
                      "probabilities): their dense n x n matrices would not fit in memory", UnscoredBlocksWarning,
                      stacklevel=2)
    reported = conf.set_index(conf["mention_id"].astype(str))["cluster_id"]
    reported_ids = clusters["mention_id"].astype(str).map(reported).to_numpy()
    n_moved = int((reported_ids != clusters["cluster_id"].astype(str).to_numpy()).sum())
    clusters = clusters.assign(cluster_id=reported_ids)
    certify = dict(conf.attrs.get("certify") or {})
    review = review_table(model, features, conf, encodings=cache)
    table = conf[list(CONFIDENCE_COLUMNS)]
    if new_ids is not None:
        table = table.assign(new=table["mention_id"].astype(str).isin(new_ids).to_numpy())
        review = review.assign(new=review["mention_id"].astype(str).isin(new_ids).to_numpy())
    write_csv(od.path("confidence.csv"), table)
    write_csv(od.path("pairs.csv"), pairs)
    write_csv(od.path("review.csv"), review)
    before = {p.name for p in od.work.iterdir()}
    section = write_confidence_report(od.work, conf, pairs)
    for p in sorted(od.work.iterdir()):
        if p.name not in before and p.suffix == ".png":
            od.path(p.name)
    section = (section or "") + (
        f"\nclusters.csv is the clustering these confidences describe (`{point_estimate}`: the MAP clustering"
        + (f", {n_moved} mention(s) moved where the posterior pair probabilities contradicted it" if
           point_estimate != "map" else "") + "). review.csv lists every mention, the likeliest errors first "
        "(expected errors fixed = 1 - confidence), with its competing cluster and the evidence.\n")
    if certify:
        section = section + _certify_md(certify)
    if unscored.get("n_mentions"):
        section = section + (f"\nNo confidence for the {unscored['n_mentions']:,} mention(s) of {unscored['n_blocks']:,} "
                             f"block(s) of more than {unscored['max_block']:,} mentions (method `none`, NaN "
                             "probabilities, no pair rows): the dense n x n matrices of the confidence step grow as "
                             "n^2.\n")
    return "\n" + (section or ""), certify, clusters, unscored


def write_add_confidence(od, model, mentions, clusters, encodings, new_ids, settings, *, certify_seconds):
    """``coref add --confidence``: confidence.csv, pairs.csv and review.csv of the blocks the add sampled.

    The blocks that received new mentions (existing and new ones) are the blocks whose posterior
    changed; every mention of them, old and new, gets a row (column ``new``: added by this add). The
    rows describe the clustering the add wrote (``point_estimate="map"``): an add never changes an
    existing cluster id, so nothing is repaired; a contradiction the posterior sees shows as a low
    confidence and heads review.csv.

    Parameters
    ----------
    od : coref.outputs.OutputDir
    model : coref.model.PairwiseModel
    mentions : pandas.DataFrame
        Mention rows (mention_id, block and the feature columns) of at least the sampled blocks.
    clusters : pandas.DataFrame
        mention_id, block, cluster_id of the same rows (row for row).
    encodings : coref.encoding.MentionEncoding
        Their per-mention encodings (row for row), so that no block is encoded again.
    new_ids : set of str
        The mentions this add placed.
    settings : coref.settings.CorefSettings
    certify_seconds : float >= 0
        Budget of the DIS certification pass (0 = off).

    Returns
    -------
    section : str
        The report.md section.
    info : dict
        For summary.json: ``confidence_scope`` (mentions, blocks, new mentions scored), and
        ``certify`` / ``confidence_unscored`` as ``coref predict --confidence`` reports them.

    Raises
    ------
    ValueError
        If ``mentions``, ``clusters`` and ``encodings`` are not the same mentions row for row.
    """
    sampled = set(pd.Series(clusters["block"], dtype=object).loc[
        clusters["mention_id"].astype(str).isin(new_ids).to_numpy()].tolist())
    rows = np.flatnonzero(clusters["block"].isin(sampled).to_numpy())
    df = mentions.iloc[rows].reset_index(drop=True)
    cl = clusters.iloc[rows][["mention_id", "block", "cluster_id"]].reset_index(drop=True)
    enc = encodings.take(rows)
    ids = df["mention_id"].astype(str).to_numpy()
    if not (np.array_equal(ids, cl["mention_id"].astype(str).to_numpy())
            and np.array_equal(ids, np.asarray(enc.mention_id).astype(str))):
        raise ValueError("write_add_confidence: mentions, clusters and encodings are not row for row")
    section, certify, _, unscored = write_confidence(od, model, df, cl, settings, enc,
                                                     certify_seconds=certify_seconds, point_estimate="map",
                                                     new_ids=new_ids)
    scope = {"n_mentions": int(len(rows)), "n_blocks": len(sampled),
             "n_new_mentions": int(cl["mention_id"].astype(str).isin(new_ids).sum())}
    head = (f"\nConfidence of the {scope['n_mentions']:,} mentions of the {scope['n_blocks']:,} block(s) this add "
            f"sampled ({scope['n_new_mentions']:,} of them new, column `new` of confidence.csv and review.csv); "
            "the other blocks are unchanged since the clustering added to.\n")
    info = {"confidence_scope": scope}
    if certify:
        info["certify"] = certify
    if unscored is not None:
        info["confidence_unscored"] = unscored
    return head + section, info


def _certify_md(c):
    """The report.md lines of the DIS certification pass."""
    if not c.get("seconds"):
        return "\nDIS certification: off (`--certify-seconds 0`).\n"
    widths = "" if not c.get("n_certified") else \
        f"; interval width median {c['width_median']:.3f}, max {c['width_max']:.3f}"
    return (f"\nDIS certification (`--certify-seconds {c['seconds']:.3g}`, used {c.get('used_seconds', 0.0):.1f} s): "
            f"{c.get('n_submodels', 0)} sub-model(s), {c.get('n_certified', 0)} assignment(s) certified "
            f"(method `dis`, p_lower <= p <= p_upper){widths}.\n")
