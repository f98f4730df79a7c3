"""``coref predict``: cluster unlabeled mentions with a saved model.

Every block is clustered with annealed racing Gibbs (:class:`coref.gibbs.GibbsCoref`),
locally or on Dask; block ``b`` uses ``coref.gibbs.block_rng(seed, b)``, so the same
seed gives the same clusters on any executor. A ``gold`` column in the input is never
read: it is dropped before inference and passed through to clusters.csv untouched.

Outputs in ``--out`` (locked while written; manifest.json last, see :mod:`coref.outputs`):

* ``clusters.csv``: mention_id, block, cluster_id (and gold when the input has it).
  Cluster ids are ``"<block>/<k>"``, k = 0, 1, ... in the order of each cluster's
  smallest mention id: stable strings, unique across blocks.
* ``mentions.parquet``: the mentions clustered (what ``coref add`` builds on).
* ``encodings.npz``: their per-mention encodings for the model used
  (:func:`coref.outputs.write_encodings`), so ``coref add`` encodes only the new mentions.
* ``summary.json`` and ``report.md``: counts, the largest clusters and the weakest
  merges (the mentions whose cluster gains least over being alone).
* with ``--confidence``: ``confidence.csv`` and ``pairs.csv`` from
  :func:`coref.confidence.assignment_confidence`.

References
----------
.. [1] Chen, Y. & Ghahramani, Z. (2016). Scalable discrete sampling as a multi-armed
   bandit problem. ICML. Sec. 5.3 and Appx. C.3.
"""
from __future__ import annotations

import math
import numbers
import sys
import time

import numpy as np
import pandas as pd

__all__ = ["predict_clusters", "canonical_cluster_ids", "predict", "add_arguments", "main"]


def canonical_cluster_ids(blocks, mention_ids, keys):
    """Cluster ids ``"<block>/<k>"`` numbered by each cluster's smallest mention id.

    Parameters
    ----------
    blocks, mention_ids, keys : array-like of shape (n_mentions,)
        Block, mention id and any cluster key (same key = same cluster within a block).

    Returns
    -------
    ndarray of object, shape (n_mentions,)
        Depends only on the partition, not on the keys' values.
    """
    frame = pd.DataFrame({"b": np.asarray(blocks, dtype=object).astype(str),
                          "m": np.asarray(mention_ids, dtype=object).astype(str),
                          "k": np.asarray(keys, dtype=object).astype(str)})
    first = frame.groupby(["b", "k"], sort=False)["m"].transform("min")
    frame["first"] = first
    order = frame[["b", "first"]].drop_duplicates().sort_values(["b", "first"], kind="stable")
    order["n"] = order.groupby("b").cumcount()
    n = frame.merge(order, on=["b", "first"], how="left")["n"].to_numpy()
    return (frame["b"] + "/" + pd.Series(n).astype(str)).to_numpy(dtype=object)


def predict_clusters(df, model, settings, *, client=None, progress=False, return_encodings=False):
    """Cluster every block of ``df`` with a fitted model.

    Parameters
    ----------
    df : pandas.DataFrame
        Mentions (schema of :func:`coref.io.load_mentions`); a ``gold`` column is ignored.
    model : coref.model.PairwiseModel
        Fitted.
    settings : coref.settings.CorefSettings
        Seed, delta, sweeps (validated once by :func:`coref.settings.make_settings`).
    client : distributed.Client or None
        Dask client; ``None`` runs here.
    progress : bool
        Show a progress bar.
    return_encodings : bool
        Also return, under ``stats["encodings"]``, the per-mention encoding of ``df``
        (:class:`coref.features.MentionEncoding`, rows of ``df``), for ``encodings.npz``.

    Returns
    -------
    clusters : pandas.DataFrame
        mention_id, block, cluster_id (+ gold, passed through, when ``df`` has it), in
        the row order of ``df``.
    stats : dict
        ``n_factor_evals`` and ``gibbs_wall_s`` summed over blocks; ``margins``, a Series
        mention_id -> the sum of f_theta to the other members of its cluster (NaN for
        singletons; :func:`coref.report.cluster_margins`).
    """
    from coref.features import encode_parts
    from coref.inference import infer_blocks

    features = df.drop(columns=[c for c in ("gold",) if c in df.columns]).reset_index(drop=True)
    # the per-mention work once for all blocks (batched); each block is assembled from it
    encodings = encode_parts(features, model.vocabulary_)
    results = infer_blocks(features, model, settings, record_history=False, client=client, progress=progress,
                           margins=True, encodings=encodings)
    mids = np.concatenate([r.mention_id for r in results]) if results else np.array([], object)
    keys = np.concatenate([r.cluster_id for r in results]) if results else np.array([], object)
    blocks = np.concatenate([[r.block] * len(r.mention_id) for r in results]) if results else np.array([], object)
    cid = pd.Series(canonical_cluster_ids(blocks, mids, keys), index=pd.Index(mids.astype(str)))
    clusters = pd.DataFrame({"mention_id": df["mention_id"].astype(str).to_numpy(),
                             "block": df["block"].astype(str).to_numpy()})
    clusters["cluster_id"] = cid.reindex(clusters["mention_id"]).to_numpy()
    if "gold" in df.columns:
        clusters["gold"] = df["gold"].to_numpy()
    stats = {"n_factor_evals": int(sum(r.n_factor_evals for r in results)),
             "gibbs_wall_s": float(sum(r.wall_s for r in results)),
             "margins": _margins(results)}
    if return_encodings:
        stats["encodings"] = encodings
    return clusters, stats


def _margins(results):
    """Series mention_id -> margin in its final cluster (NaN for singletons)."""
    if not results:
        return pd.Series(dtype=float)
    return pd.Series(np.concatenate([r.margin for r in results]),
                     index=np.concatenate([r.mention_id for r in results]).astype(str))


def write_outputs(od, df, clusters, model, settings, *, summary, title, margins, confidence=None, focus=None):
    """Write clusters.csv, mentions.parquet, summary.json, report.md (and confidence files) into ``od``.

    ``margins``: Series mention_id -> margin (from the inference); ``focus``: the mentions
    the weakest merges are chosen among (None = all).
    """
    from coref.io import write_mentions
    from coref.report import largest_clusters, render_predict_md, weakest_merges, write_csv, write_json
    from sampling.utils.atomic import atomic_write_text

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


class _BlockEncodings:
    """The fitted model, encoding a block from the run's per-mention encoding.

    ``encode(df_block)`` assembles the block from the rows of ``encodings`` (one per
    mention of the run, aligned with ``mention_ids``) instead of encoding its text
    again: the same :class:`coref.features.EncodedBlock`, bit for bit
    (:func:`coref.features.assemble_block`).  A block with a mention the run did not
    encode falls back to ``model.encode``.  Every other attribute is the model's.
    """

    def __init__(self, model, encodings, mention_ids):
        self._model = model
        self._encodings = encodings
        self._pos = pd.Index(np.asarray(mention_ids, dtype=object).astype(str))

    def encode(self, df_block):
        from coref.features import assemble_block

        rows = self._pos.get_indexer(df_block["mention_id"].astype(str).to_numpy(dtype=object))
        if len(rows) == 0 or (rows < 0).any():
            return self._model.encode(df_block)
        return assemble_block(self._encodings.take(rows))

    def __getattr__(self, name):
        return getattr(self._model, name)


def _confidence(od, model, df, clusters, settings, encodings=None):
    """confidence.csv, pairs.csv and the report section (coref.confidence, if present).

    ``encodings``: the run's per-mention encoding of ``df`` (rows of ``df``), so that
    blocks are assembled from it rather than encoded again.
    """
    try:
        from coref.confidence import assignment_confidence, write_confidence_report
    except ImportError as exc:
        raise RuntimeError(f"--confidence needs coref.confidence, which is not available here ({exc})") from None
    from coref.report import write_csv

    features = df.drop(columns=[c for c in ("gold",) if c in df.columns])
    if encodings is not None:
        model = _BlockEncodings(model, encodings, df["mention_id"].to_numpy())
    conf, pairs = assignment_confidence(model, features, clusters[["mention_id", "block", "cluster_id"]],
                                        delta=settings.delta, rng=settings.seed)
    write_csv(od.path("confidence.csv"), conf)
    write_csv(od.path("pairs.csv"), pairs)
    before = {p.name for p in od.out.iterdir()}
    section = write_confidence_report(od.out, conf, pairs)
    for p in sorted(od.out.iterdir()):
        if p.name not in before and p.suffix == ".png":
            od.path(p.name)
    return "\n" + (section or "")


def predict(data, *, model=None, out, sampler="racing", seed=0, delta=0.05, n_sweeps=None, format=None,
            strict=False, workers=None, scheduler=None, confidence=False, progress=True,
            factor_cache_mb=0.0):
    """``coref predict`` as a function: load, cluster, write ``out`` (see the module docstring).

    Parameters
    ----------
    data : None, str, os.PathLike or pandas.DataFrame
        Mentions to cluster (``None``: the shipped AMiner set).
    model : None, str or os.PathLike
        Model directory from ``coref fit``; ``None`` = the shipped default model.
    out : str or os.PathLike
        Output directory (locked while written, manifest last).
    sampler, seed, delta, n_sweeps, format, strict, workers, scheduler
        As in :func:`coref.settings.make_settings`.
    confidence : bool
        Also write per-mention confidence (needs :mod:`coref.confidence`).
    progress : bool
        Progress bars on stderr.
    factor_cache_mb : float >= 0
        Exact sampler: sample each block whose n x n factor matrix fits this many MiB
        from the matrix (:class:`coref.gibbs.GibbsCoref` ``factor_cache_mb``; same
        clusters, factors evaluated once per block).  0 = off.

    Returns
    -------
    dict
        The summary written to summary.json (its ``manifest`` key holds the manifest).

    Raises
    ------
    coref.outputs.OutputError
        Before any work, if ``out`` is not writable or is locked by another command.
    FileNotFoundError, ValueError, TypeError, coref.exceptions.MentionFormatError,
    coref.exceptions.ModelFormatError, ConnectionError
        For bad input, a bad model or an unreachable scheduler.
    """
    from coref.inference import executor_context
    from coref.inputs import load_input, resolve_model
    from coref.outputs import ENCODINGS_FILE, OutputDir, mentions_checksum, write_encodings
    from coref.settings import make_settings

    t0 = time.perf_counter()
    settings = make_settings("predict", sampler=sampler, seed=seed, delta=delta, n_sweeps=n_sweeps, format=format,
                             strict=strict, workers=workers, scheduler=scheduler,
                             gibbs_params=cache_params(factor_cache_mb))
    with OutputDir(out, "predict") as od:
        fitted, _, model_info = resolve_model(model)
        df, desc = load_input(data, format=settings.format, strict=settings.strict, command="predict")
        with executor_context(None, settings.workers, settings.scheduler) as (client, executor_desc):
            clusters, stats = predict_clusters(df, fitted, settings, client=client, progress=progress,
                                               return_encodings=True)
        margins = stats.pop("margins")
        # written first and released after confidence (which assembles blocks from them):
        # the encodings are the largest object of a big run
        encodings = stats.pop("encodings")
        write_encodings(od.path(ENCODINGS_FILE), encodings, model_sha256=model_info["model_json_sha256"])
        conf_md = _confidence(od, fitted, df, clusters, settings, encodings) if confidence else None
        del encodings
        summary = {
            "command": "predict", "n_mentions": int(len(df)), "n_blocks": int(df["block"].nunique()),
            "n_clusters": int(clusters["cluster_id"].nunique()),
            "n_singletons": int((clusters["cluster_id"].value_counts() == 1).sum()),
            "gold_passed_through": "gold" in clusters.columns, **stats,
            "data": desc, "model": model_info, "executor": executor_desc, "settings": settings.to_dict(),
            "elapsed_s": time.perf_counter() - t0,
        }
        summary = write_outputs(od, df, clusters, fitted, settings, summary=summary, margins=margins,
                                title="Author coreference: predicted clusters", confidence=conf_md)
        summary["manifest"] = od.finish(settings=settings, model_info=model_info,
                                        input_info={"path": desc["path"], "format": desc["format"],
                                                    "mentions_sha256": mentions_checksum(df)})
    return summary


def add_arguments(parser):
    """Options of ``coref predict``."""
    from coref.io import FORMATS

    parser.add_argument("--data", metavar="PATH", default=None,
                        help="mention file or directory (default: the shipped AMiner set)")
    parser.add_argument("--format", choices=FORMATS, default=None, help="input format (default: detected)")
    parser.add_argument("--model", metavar="DIR", default=None,
                        help="model directory from `coref fit` (default: the shipped model)")
    parser.add_argument("--out", metavar="DIR", required=True, help="output directory")
    add_common_arguments(parser)
    parser.add_argument("--confidence", action="store_true",
                        help="also write confidence.csv and pairs.csv (per-mention assignment confidence)")


def add_common_arguments(parser):
    """Options shared by ``coref predict`` and ``coref add``."""
    from coref.settings import ALL_SAMPLERS

    parser.add_argument("--sampler", choices=ALL_SAMPLERS, default="racing",
                        help="Gibbs sampler (default racing); auto: exact Gibbs from the cached factor "
                             "matrix for each block whose matrix fits --factor-cache-mb (256 MiB when "
                             "not given), racing for larger blocks")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0); same seed, same clusters")
    parser.add_argument("--delta", type=float, default=0.05, help="racing error level (default 0.05)")
    parser.add_argument("--sweeps", dest="n_sweeps", type=int, default=None, metavar="N",
                        help="Gibbs sweeps per block (default: the sampler's default)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, metavar="N", default=None,
                       help="run blocks on a local Dask cluster of N worker processes")
    where.add_argument("--scheduler", metavar="ADDRESS", default=None, help="run blocks on this Dask scheduler")
    parser.add_argument("--factor-cache-mb", type=float, default=0.0, metavar="MB",
                        help="exact and auto samplers: sample each block whose n x n factor matrix fits "
                             "MB MiB from the matrix (same clusters, factors evaluated once; default 0: "
                             "off for exact, 256 for auto)")
    parser.add_argument("--strict", action="store_true", help="fail on the first bad record or file")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")


def cache_params(factor_cache_mb):
    """``gibbs_params`` of :func:`coref.settings.make_settings` for a factor-cache budget.

    ``None`` for 0, so that the settings (and the key of a run) are those of a run
    without the option.

    Raises
    ------
    ValueError
        If the budget is not a finite number >= 0.
    """
    v = factor_cache_mb
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or v < 0:
        raise ValueError(f"--factor-cache-mb must be a finite number >= 0; got {v!r}")
    return {"factor_cache_mb": float(v)} if v > 0 else None


def report_error(command, args, exc):
    """Print ``coref COMMAND: error: ...`` (or re-raise with --debug); return exit status 2."""
    if getattr(args, "debug", False):
        raise exc
    print(f"coref {command}: error: {exc}", file=sys.stderr)
    return 2


ERRORS = (FileNotFoundError, NotADirectoryError, ValueError, TypeError, ConnectionError, OSError, RuntimeError)


def print_summary(summary, out):
    """Short console summary of a predict / add run."""
    d = summary["data"]
    print(f"{summary['n_mentions']} mentions in {summary['n_blocks']} blocks -> {summary['n_clusters']} clusters "
          f"({summary['n_singletons']} singletons); {summary['n_factor_evals']:,} factor evaluations, "
          f"{summary['elapsed_s']:.1f} s")
    if d.get("n_skipped"):
        print(f"the loader skipped {d['n_skipped']} record(s): " + "; ".join(d.get("skipped", [])[:3]))
    for name in ("files_skipped", "files_ignored", "repairs"):
        if d.get(f"n_{name}"):
            print(f"{name.replace('_', ' ')}: {d[f'n_{name}']}: " + "; ".join(d.get(name, [])[:5]))
    from pathlib import Path

    written = sorted(p.name for p in Path(out).iterdir() if p.is_file() and not p.name.startswith("."))
    print(f"outputs: {out}/ ({', '.join(written)})")


def main(args):
    """Entry point of ``coref predict``; returns the exit status."""
    try:
        summary = predict(args.data, model=args.model, out=args.out, sampler=args.sampler, seed=args.seed,
                          delta=args.delta, n_sweeps=args.n_sweeps, format=args.format, strict=args.strict,
                          workers=args.workers, scheduler=args.scheduler, confidence=args.confidence,
                          progress=not args.quiet, factor_cache_mb=args.factor_cache_mb)
    except ERRORS as exc:
        return report_error("predict", args, exc)
    print_summary(summary, args.out)
    return 0
