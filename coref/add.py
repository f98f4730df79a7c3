"""``coref add``: new mentions into existing clusters, without renumbering anyone.

Given a finished ``coref predict`` (or ``add``) output directory -- its clusters.csv and
mentions.parquet, verified against its manifest -- and new mentions:

* blocks that already exist: Gibbs starts from the existing clusters with every old
  mention fixed (``GibbsCoref.fit(initial=..., fixed=...)``), so each new mention joins
  an existing cluster or opens a new one, and no existing assignment changes. With
  ``revisit`` the old mentions of those blocks may move too; a final cluster then keeps
  the id held by most of its old mentions (larger clusters choose first) and the others
  get new ids.
* blocks that are new: clustered from scratch, as ``coref predict`` does.
* blocks without new mentions: copied unchanged (not recomputed).

Only the new mentions are encoded from their text: the old mentions' per-mention
encodings come from the earlier output's ``encodings.npz`` (:func:`reuse_encodings`:
listed in its manifest, made with the same model, covering exactly its mentions, every
array checked), and each touched block is assembled from both
(:func:`coref.features.assemble_block`, the same arrays as encoding the block anew). A
missing or refused file is named in a warning and the old mentions are encoded again
(``strict``: a refused file is an error). The output has its own ``encodings.npz``, so
adds chain.

New clusters in an existing block get ``"<block>/<k>"`` with k above every id of the
form ``"<block>/<int>"`` in use. A new mention whose id is already clustered is skipped,
named and counted (``strict``: an error). ``gold`` is passed through from the old
clusters.csv and the new data, never read.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["add_clusters", "read_clustered", "reuse_encodings", "add", "add_arguments", "main", "ADD_SWEEPS"]

#: Default Gibbs sweeps of ``coref add``: only the new mentions move, against fixed clusters.
#: On the shipped data (80% predicted, 20% added, the coref-add check's split), 2026-11-24:
#: 10 sweeps B3 F1 0.8827 with 856,854 factor evaluations, 5 sweeps 0.8828 with 651,488,
#: 4 sweeps 0.8824 (an earlier feature set: 10 sweeps 0.8795, 30 sweeps 0.8794).
ADD_SWEEPS = 5


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
    from coref.outputs import read_manifest

    d = Path(directory)
    manifest = read_manifest(d)
    for name in ("clusters.csv", "mentions.parquet"):
        if name not in manifest["files"]:
            raise ValueError(f"{d / name}: not in {d / 'manifest.json'}; --clusters must be a coref predict/add output")
    clusters = pd.read_csv(d / "clusters.csv", dtype=str, keep_default_na=False, na_values=[""])
    for c in ("mention_id", "block", "cluster_id"):
        if c not in clusters.columns:
            raise ValueError(f"{d / 'clusters.csv'}: no column {c!r}")
    from coref.io import MENTION_COLUMNS

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
    return (_encoder_cells(mentions) if as_text else mentions), clusters, manifest


def _encoder_cells(mentions):
    """``mentions`` (as read from our Parquet) with list cells as lists and text as ``str``."""
    from coref.inputs import as_object_text

    for c in mentions.columns:
        if mentions[c].dtype == object and len(mentions) and isinstance(mentions[c].iloc[0], np.ndarray):
            mentions[c] = [list(v) if v is not None else [] for v in mentions[c]]
    return as_object_text(mentions)


def reuse_encodings(directory, manifest, clusters, model, model_info, *, strict=False):
    """The per-mention encodings saved in an earlier output, if they can be trusted.

    The file (``encodings.npz``) must be listed in the directory's manifest (its SHA-256
    was checked by :func:`coref.outputs.read_manifest`) and pass
    :func:`coref.outputs.read_encodings`: made with this model (its model.json SHA-256
    and vocabulary sizes), covering exactly the mentions of ``clusters``, every array of
    the expected name, dtype, shape and range.

    Returns
    -------
    encodings : coref.features.MentionEncoding or None
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
    import warnings

    from coref.outputs import ENCODINGS_FILE, EncodingsError, read_encodings

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


def _next_k(ids, block):
    """1 + the largest k of the ids ``{block}/{k}`` (k decimal digits), 0 if there is none."""
    prefix = f"{block}/"
    cut = len(prefix)
    ks = [int(i[cut:]) for i in ids if i.startswith(prefix) and i[cut:].isdecimal()]
    return max(ks) + 1 if ks else 0


def add_clusters(model, old_mentions, old_clusters, new_mentions, settings, *, client=None, progress=False,
                 old_encodings=None, return_encodings=False):
    """Cluster ``new_mentions`` into an existing clustering.

    Parameters
    ----------
    model : coref.model.PairwiseModel
        Fitted.
    old_mentions : pandas.DataFrame
        The mentions already clustered (mention schema).
    old_clusters : pandas.DataFrame
        mention_id, block, cluster_id of ``old_mentions`` (optional gold passed through).
    new_mentions : pandas.DataFrame
        Mentions to add (mention schema; ``gold`` ignored and passed through).
    settings : coref.settings.CorefSettings
        Seed, delta, sweeps, ``revisit`` and ``strict``.
    client, progress
        As in :func:`coref.predict.predict_clusters`.
    old_encodings : coref.features.MentionEncoding or None
        Per-mention encodings of (at least) the old mentions, made with ``model``'s
        vocabulary (``encodings.npz`` of the earlier output, validated); ``None``
        encodes the old mentions that are needed again. Only the new mentions are
        encoded from their text; each touched block is assembled from both.
    return_encodings : bool
        Also return, under ``info["encodings"]``, the per-mention encoding of every
        mention of the result (old then new, the rows of ``clusters``).

    Returns
    -------
    clusters : pandas.DataFrame
        Old rows first (in their order), then the new ones: mention_id, block,
        cluster_id (+ gold when either side has it).
    info : dict
        Counts: new mentions, skipped duplicates, blocks touched / new, mentions that
        joined existing clusters, new clusters, old ids changed, factor evaluations; and
        ``margins`` (Series mention_id -> margin, for the blocks that were sampled).

    Raises
    ------
    ValueError
        If a new mention id is already clustered and ``settings.strict``; if the old
        tables disagree.
    RuntimeError
        If a fixed old mention was moved (a sampler that ignores ``fixed``).
    """
    from coref.features import MentionEncoding, encode_parts
    from coref.inference import infer_blocks
    from coref.predict import _margins, canonical_cluster_ids

    old_clusters = old_clusters.reset_index(drop=True)
    old_ids = pd.Index(old_clusters["mention_id"].astype(str).to_numpy(dtype=object))
    if old_ids.has_duplicates:
        raise ValueError("old clusters: duplicate mention ids, e.g. " + repr(old_ids[old_ids.duplicated()][:3].tolist()))
    new = new_mentions.reset_index(drop=True).copy()
    new["mention_id"] = new["mention_id"].astype(str).to_numpy(dtype=object)
    # (.tolist(): iterating pandas' pyarrow strings element by element is slow)
    old_set = set(old_ids.tolist())
    dup = np.fromiter((m in old_set for m in new["mention_id"].tolist()), bool, len(new))
    skipped = new.loc[dup, "mention_id"].tolist()
    if skipped and settings.strict:
        raise ValueError(f"{len(skipped)} new mention id(s) are already clustered, e.g. {skipped[:3]}")
    new = new[~dup].reset_index(drop=True)
    new["block"] = new["block"].astype(str).to_numpy(dtype=object)
    old_block_of = pd.Series(old_clusters["block"].astype(str).to_numpy(dtype=object), index=old_ids)
    old_cid = pd.Series(old_clusters["cluster_id"].astype(str).to_numpy(dtype=object), index=old_ids)
    old_blocks = set(old_block_of.tolist())
    new_blocks = set(new["block"].tolist())
    touched = sorted(new_blocks & old_blocks)
    fresh = sorted(new_blocks - old_blocks)

    feats = [c for c in new.columns if c != "gold"]
    # per-mention encodings: the new mentions' from their text, in one batch; the old ones'
    # from old_encodings (or, without them, from the text of the old mentions needed).
    # enc_all holds old_encodings' rows, then the new mentions' (tables merged once); every
    # block is assembled from a take of it, the same arrays as from a concat of takes
    new_enc = encode_parts(new[feats], model.vocabulary_)
    if old_encodings is not None:
        pos = pd.Index(old_encodings.mention_id.astype(str)).get_indexer(old_ids)
        if (pos < 0).any():
            raise ValueError(f"old_encodings lack {int((pos < 0).sum())} of the old mentions, e.g. "
                             f"{old_ids[pos < 0][:3].tolist()}")
        old_enc_of = pd.Series(pos, index=old_ids)
        enc_all = MentionEncoding.concat([old_encodings, new_enc])
        n_old_enc = len(old_encodings)
        om = None                         # the old mentions' text is not needed
    else:
        old_enc_of = None
        om = old_mentions.copy()
        om["mention_id"] = om["mention_id"].astype(str)
        om = om.set_index("mention_id")
    stats = {"n_factor_evals": 0, "gibbs_wall_s": 0.0}
    margin_parts = []
    final_old_of = {}   # old mention -> its final id (only where sampled)
    new_cid_of = {}     # new mention -> its id

    # existing blocks: start from the old clusters, old mentions fixed (unless revisit)
    if touched:
        touched_set = set(touched)      # (a set: isin on pyarrow strings loops in Python)
        in_touched = np.fromiter((b in touched_set for b in old_block_of.tolist()), bool, len(old_block_of))
        old_rows = old_block_of.index[in_touched]
        new_in = np.fromiter((b in touched_set for b in new["block"].tolist()), bool, len(new))
        if om is None:
            # the blocks are assembled from the encodings: infer_blocks reads only ids and blocks
            part = pd.DataFrame({"mention_id": np.r_[old_rows.to_numpy(dtype=object),
                                                     new.loc[new_in, "mention_id"].to_numpy(dtype=object)],
                                 "block": np.r_[old_block_of.to_numpy()[in_touched],
                                                new.loc[new_in, "block"].to_numpy(dtype=object)]})
            enc_part = enc_all.take(np.r_[old_enc_of.to_numpy()[in_touched], n_old_enc + np.flatnonzero(new_in)])
        else:
            part_old = om.loc[old_rows].reset_index()
            part_old["block"] = old_block_of.loc[old_rows].to_numpy()
            cols = [c for c in feats if c in part_old.columns]
            part = pd.concat([part_old[cols], new.loc[new_in, cols]], ignore_index=True)
            enc_old = encode_parts(part_old[cols], model.vocabulary_)
            enc_part = MentionEncoding.concat([enc_old, new_enc.take(np.flatnonzero(new_in))])
        n_part_old = len(old_rows)
        is_old = np.r_[np.ones(n_part_old, bool), np.zeros(len(part) - n_part_old, bool)]
        initial = np.r_[old_cid.to_numpy(dtype=object)[in_touched], np.full(len(part) - n_part_old, None, object)]
        fixed = is_old & (not settings.revisit)
        results = infer_blocks(part, model, settings, record_history=False, client=client, progress=progress,
                               initial=initial, fixed=fixed, margins=True, encodings=enc_part)
        margin_parts.extend(results)
        used = set(old_cid.tolist())
        ids_by_block = {b: g.tolist() for b, g in old_cid.groupby(old_block_of.to_numpy(), sort=False)}
        old_cid_of = dict(zip(old_ids.tolist(), old_cid.tolist()))
        for r in results:
            stats["n_factor_evals"] += r.n_factor_evals
            stats["gibbs_wall_s"] += r.wall_s
            mids = r.mention_id.astype(str)
            codes, _ = pd.factorize(r.cluster_id.astype(str))
            is_old = np.fromiter((m in old_set for m in mids), bool, len(mids))
            # votes[c] = {old id: how many of its mentions final cluster c holds}
            votes = {}
            for c, m in zip(codes[is_old].tolist(), mids[is_old].tolist()):
                cnt = votes.setdefault(c, {})
                o = old_cid_of[m]
                cnt[o] = cnt.get(o, 0) + 1
            sizes = np.bincount(codes)
            first = np.full(len(sizes), len(codes))
            np.minimum.at(first, codes, np.arange(len(codes)))
            k_next = _next_k(ids_by_block.get(r.block, []), r.block)
            name_of = {}
            taken = set()
            # larger final clusters choose their id first; an id goes to the cluster holding most of its mentions
            for c in np.lexsort((first, -sizes)):
                cnt = votes.get(c, {})
                choice = next((o for o, _ in sorted(cnt.items(), key=lambda kv: (-kv[1], kv[0])) if o not in taken),
                              None)
                if choice is None:
                    while f"{r.block}/{k_next}" in used:
                        k_next += 1
                    choice = f"{r.block}/{k_next}"
                    used.add(choice)
                    k_next += 1
                taken.add(choice)
                name_of[c] = choice
            names = np.array([name_of[c] for c in codes], dtype=object)
            final_old_of.update(zip(mids[is_old].tolist(), names[is_old].tolist()))
            new_cid_of.update(zip(mids[~is_old].tolist(), names[~is_old].tolist()))

    # new blocks: from scratch, ids as coref predict gives them
    if fresh:
        fresh_set = set(fresh)
        in_fresh = np.fromiter((b in fresh_set for b in new["block"]), bool, len(new))
        part = new.loc[in_fresh, feats].reset_index(drop=True)
        results = infer_blocks(part, model, settings, record_history=False, client=client, progress=progress,
                               margins=True, encodings=new_enc.take(np.flatnonzero(in_fresh)))
        margin_parts.extend(results)
        for r in results:
            stats["n_factor_evals"] += r.n_factor_evals
            stats["gibbs_wall_s"] += r.wall_s
        if results:   # ids as coref predict numbers them, all new blocks at once
            mids = np.concatenate([r.mention_id for r in results])
            ids = canonical_cluster_ids(np.concatenate([[r.block] * len(r.mention_id) for r in results]), mids,
                                        np.concatenate([r.cluster_id for r in results]))
            new_cid_of.update(zip(mids.astype(str).tolist(), list(ids)))

    final_old = pd.Series([final_old_of.get(m, c) for m, c in zip(old_ids.tolist(), old_cid.tolist())], index=old_ids,
                          dtype=object)
    new_cid = pd.Series([new_cid_of.get(m) for m in new["mention_id"].tolist()], index=pd.Index(new["mention_id"]),
                        dtype=object)
    changed = int((final_old != old_cid).sum())
    if changed and not settings.revisit:
        raise RuntimeError(f"the sampler moved {changed} fixed old mention(s); it must honour fixed=")
    out_old = pd.DataFrame({"mention_id": old_ids, "block": old_block_of.to_numpy(),
                            "cluster_id": final_old.to_numpy()})
    out_new = pd.DataFrame({"mention_id": new["mention_id"].to_numpy(), "block": new["block"].to_numpy(),
                            "cluster_id": new_cid.reindex(new["mention_id"]).to_numpy()})
    has_gold = "gold" in old_clusters.columns or "gold" in new.columns
    if has_gold:
        out_old["gold"] = old_clusters["gold"].to_numpy() if "gold" in old_clusters.columns else pd.NA
        out_new["gold"] = new["gold"].to_numpy() if "gold" in new.columns else pd.NA
    clusters = pd.concat([out_old, out_new], ignore_index=True)
    existing = set(old_cid.tolist())
    joined = np.fromiter((c in existing for c in out_new["cluster_id"].tolist()), bool, len(out_new))
    info = {"n_old_mentions": int(len(old_ids)), "n_new_mentions": int(len(new)),
            "n_skipped_duplicates": len(skipped), "skipped_duplicates": skipped[:20],
            "n_blocks_touched": len(touched), "n_blocks_new": len(fresh),
            "n_joined_existing": int(joined.sum()),
            "n_new_clusters": int(out_new.loc[~joined, "cluster_id"].nunique()),
            "n_old_ids_changed": changed, **stats, "margins": _margins(margin_parts)}
    if return_encodings:
        if old_enc_of is None:
            enc_all_old = encode_parts(om.loc[old_ids].reset_index(), model.vocabulary_)
            info["encodings"] = MentionEncoding.concat([enc_all_old, new_enc])
        else:
            info["encodings"] = enc_all.take(np.r_[old_enc_of.to_numpy(), n_old_enc + np.arange(len(new_enc))])
    return clusters, info


def add(clusters_dir, data, *, model=None, out, revisit=False, sampler="racing", seed=0, delta=0.05,
        n_sweeps=None, format=None, strict=False, workers=None, scheduler=None, progress=True,
        factor_cache_mb=0.0):
    """``coref add`` as a function: verify ``clusters_dir``, add ``data``, write ``out``.

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
        As for :func:`coref.predict.predict`.

    Returns
    -------
    dict
        The summary (summary.json).

    Raises
    ------
    coref.outputs.OutputError
        If ``out`` is unwritable or locked (before any work), or ``clusters_dir`` is
        unfinished or was modified.
    FileNotFoundError, ValueError, TypeError, coref.exceptions.MentionFormatError,
    coref.exceptions.ModelFormatError, ConnectionError
        For bad input, a bad model or an unreachable scheduler.
    """
    from coref.inference import executor_context
    from coref.inputs import load_input, resolve_model
    from coref.outputs import ENCODINGS_FILE, OutputDir, mentions_checksum, write_encodings
    from coref.predict import cache_params, write_outputs
    from coref.settings import make_settings

    t0 = time.perf_counter()
    if n_sweeps is None:
        n_sweeps = ADD_SWEEPS
    settings = make_settings("add", sampler=sampler, seed=seed, delta=delta, n_sweeps=n_sweeps, format=format,
                             strict=strict, workers=workers, scheduler=scheduler, revisit=revisit,
                             gibbs_params=cache_params(factor_cache_mb))
    if Path(out).expanduser().resolve() == Path(clusters_dir).expanduser().resolve():
        raise ValueError("--out must differ from --clusters (the existing clustering is read, never overwritten)")
    with OutputDir(out, "add") as od:
        fitted, _, model_info = resolve_model(model)
        old_mentions, old_clusters, old_manifest = read_clustered(clusters_dir, as_text=False)
        old_encodings, enc_note = reuse_encodings(clusters_dir, old_manifest, old_clusters, fitted, model_info,
                                                  strict=settings.strict)
        if old_encodings is None:          # the old mentions are encoded again from their text
            old_mentions = _encoder_cells(old_mentions)
        new, desc = load_input(data, format=settings.format, strict=settings.strict, command="add")
        with executor_context(None, settings.workers, settings.scheduler) as (client, executor_desc):
            clusters, info = add_clusters(fitted, old_mentions, old_clusters, new, settings, client=client,
                                          progress=progress, old_encodings=old_encodings, return_encodings=True)
        margins = info.pop("margins")
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
        summary = {
            "command": "add", "n_mentions": int(len(clusters)), "n_blocks": int(clusters["block"].nunique()),
            "n_clusters": int(clusters["cluster_id"].nunique()),
            "n_singletons": int((clusters["cluster_id"].value_counts() == 1).sum()),
            "gold_passed_through": "gold" in clusters.columns, **info,
            "base": {"path": str(clusters_dir), "settings_key": old_manifest.get("settings_key")},
            "data": desc, "model": model_info, "executor": executor_desc, "settings": settings.to_dict(),
            "elapsed_s": time.perf_counter() - t0,
        }
        summary = write_outputs(od, allm, clusters, fitted, settings, summary=summary,
                                title="Author coreference: new mentions added", margins=margins,
                                focus=set(keep_new["mention_id"].astype(str)))
        write_encodings(od.path(ENCODINGS_FILE), encodings, model_sha256=model_info["model_json_sha256"])
        summary["manifest"] = od.finish(settings=settings, model_info=model_info,
                                        input_info={"path": desc["path"], "format": desc["format"],
                                                    "mentions_sha256": mentions_checksum(new),
                                                    "base": str(clusters_dir)})
    return summary


def add_arguments(parser):
    """Options of ``coref add``."""
    from coref.io import FORMATS
    from coref.predict import add_common_arguments

    parser.add_argument("--clusters", metavar="DIR", required=True,
                        help="output directory of an earlier `coref predict` or `coref add`")
    parser.add_argument("--data", metavar="PATH", required=True, help="the new mentions (file or directory)")
    parser.add_argument("--format", choices=FORMATS, default=None, help="input format (default: detected)")
    parser.add_argument("--model", metavar="DIR", default=None, help="model directory (default: the shipped model)")
    parser.add_argument("--out", metavar="DIR", required=True, help="output directory (must differ from --clusters)")
    parser.add_argument("--revisit", action="store_true",
                        help="let Gibbs also move the old mentions of the blocks that receive new ones")
    add_common_arguments(parser)


def main(args):
    """Entry point of ``coref add``; returns the exit status."""
    from coref.predict import ERRORS, print_summary, report_error

    try:
        summary = add(args.clusters, args.data, model=args.model, out=args.out, revisit=args.revisit,
                      sampler=args.sampler, seed=args.seed, delta=args.delta, n_sweeps=args.n_sweeps,
                      format=args.format, strict=args.strict, workers=args.workers, scheduler=args.scheduler,
                      progress=not args.quiet, factor_cache_mb=args.factor_cache_mb)
    except ERRORS as exc:
        return report_error("add", args, exc)
    print(f"added {summary['n_new_mentions']} mentions: {summary['n_joined_existing']} joined existing clusters, "
          f"{summary['n_new_clusters']} new clusters; existing ids changed: {summary['n_old_ids_changed']}"
          + (f"; skipped {summary['n_skipped_duplicates']} already clustered" if summary['n_skipped_duplicates'] else ""))
    print_summary(summary, args.out)
    return 0
