"""``coref add`` onto a block-group output: the cost of the touched blocks, not of the corpus.

An output of the streamed ``coref predict`` (:mod:`coref.jobs.streaming`: ``blocks.csv``
and one ``encodings-gNNNNN.npz`` per group, no ``encodings.npz``) is extended reading
only what the new mentions touch:

* the old clustering's ids and blocks (three columns of clusters.csv, read by Arrow) to
  skip new mentions already clustered and to find the touched blocks;
* the old encodings of the touched blocks (from the files ``blocks.csv`` names for them)
  and the names and years of their mentions (for the largest clusters);
* Gibbs on the touched blocks (old mentions fixed, :func:`coref.jobs.incremental.add_clusters`)
  and on the new blocks.

The rest is copied, not recomputed: clusters.csv is the old file with the new rows
appended (old ids never change without ``revisit``; with it, the changed ids are
rewritten batch by batch), mentions.parquet the old row groups then the new mentions,
the old encodings files are linked, and the new mentions' encodings go to one new file
``encodings-gNNNNN.npz`` (the next group number), named in ``blocks.csv`` beside the
old file(s) of each touched block (column ``group``: the space-separated encodings
files of the block's mentions). The output is again a block-group output, so adds chain.
"""
from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from coref.encoding.mentions import MentionEncoding
from coref.inputs import encoder_cells
from coref.io import gc_paused
from coref.io.stream import mention_schema
from coref.jobs.clusters import sampling_summary, sampling_tally
from coref.jobs.incremental import add_clusters
from coref.jobs.predict import certify_budget
from coref.jobs.stream_assembly import BLOCK_COLUMNS
from coref.jobs.streaming import BLOCKS_FILE, N_SHOWN, encodings_file, write_group_outputs
from coref.jobs.writing import write_add_confidence
from coref.margins import weakest_merges
from coref.outputs import EncodingsError, read_encodings, verify_listed, write_encodings
from coref.outputs.report import largest_clusters
from sampling.utils.atomic import atomic_open

__all__ = ["is_group_output", "add_onto_groups"]

_CLUSTER_COLUMNS = ["mention_id", "block", "cluster_id"]
#: Threads that read the encodings files of the touched blocks (:func:`_old_encodings`).
READ_THREADS = 2


def is_group_output(manifest):
    """True for the manifest of a block-group output (``blocks.csv``, per-group encodings files)."""
    files = manifest.get("files", {})
    return BLOCKS_FILE in files and any(f.startswith("encodings-g") for f in files)


def _groups_of(cell):
    return [int(x) for x in str(cell).split()]


def _read_old(d, touched):
    """Old ids (Arrow array), and clusters.csv rows of the ``touched`` blocks (pandas, str)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv as pacsv

    opts = pacsv.ConvertOptions(column_types={c: pa.string() for c in _CLUSTER_COLUMNS + ["gold"]},
                                strings_can_be_null=False, include_columns=_CLUSTER_COLUMNS + ["gold"],
                                include_missing_columns=True)
    t = pacsv.read_csv(d / "clusters.csv", convert_options=opts)
    part = t.filter(pc.is_in(t["block"], value_set=pa.array(sorted(touched), pa.string()))).to_pandas()
    for c in part.columns:   # plain str objects (pyarrow-backed strings make isin and lookups slow)
        part[c] = part[c].to_numpy(dtype=object)
    if "gold" in part.columns:
        part["gold"] = part["gold"].replace("", None)
    return t["mention_id"], t.column_names, part


def _old_text(d, ids):
    """name and year of the old mentions ``ids`` (from mentions.parquet, filtered by Arrow)."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    t = ds.dataset(d / "mentions.parquet").to_table(
        columns=["mention_id", "name", "year"], filter=ds.field("mention_id").isin(pa.array(list(ids), pa.string())))
    return t.to_pandas()


def _old_encodings(d, manifest, blocks, touched, ids, model_info, vocabulary):
    """The encodings of the old mentions ``ids`` of the ``touched`` blocks: one part per file that holds some.

    Each file read is hashed against the manifest first (:func:`coref.outputs.verify_listed`:
    :func:`coref.jobs.add.add` defers the encodings files), so its content digest is not
    computed again; header, model and arrays are checked.
    """
    touched = set(touched)
    groups = sorted({g for b, cell in zip(blocks["block"].tolist(), blocks["group"].tolist()) if b in touched
                     for g in _groups_of(cell)})
    # one hash table of the wanted ids, probed by each file (object strings: pandas' hashing
    # of Arrow-backed strings loops in Python; Arrow's is_in would hash the wanted set per file)
    want = pd.Index(pd.unique(np.asarray(ids, dtype=object)), dtype=object)
    want.get_indexer(want[:1])           # (its hash table built once, before the threads share it)

    def part_of(g):
        verify_listed(d, manifest, encodings_file(g))
        enc = read_encodings(d / encodings_file(g), model_sha256=model_info["model_json_sha256"], mention_ids=None,
                             vocabulary=vocabulary, check_digest=False)
        keep = np.flatnonzero(want.get_indexer(enc.mention_id) >= 0)     # (str objects, as read)
        return enc.take(keep) if len(keep) else None

    # files in READ_THREADS threads (hashing, reading and gathering release the GIL for most of
    # their time); the parts in the order of the groups, whatever order the threads finish in
    with ThreadPoolExecutor(max_workers=max(1, min(READ_THREADS, len(groups)))) as pool:
        parts = [p for p in pool.map(part_of, groups) if p is not None]
    n = sum(len(p) for p in parts)
    if n != len(want):
        raise EncodingsError(f"{d}: the encodings files of the touched blocks cover {n} of their {len(want)} old "
                             "mentions")
    return parts


def _shifts(path, blocks):
    """The ``prior_shift`` column of ``blocks.csv`` as float64 (Python's correctly rounded parse, so a
    shift written back is the same text); NaN where empty or in a file written before the column.

    Raises
    ------
    ValueError
        If a cell is not a number (the message names the file and the block).
    """
    out = np.full(len(blocks), np.nan)
    cells = blocks["prior_shift"].tolist() if "prior_shift" in blocks.columns else [""] * len(blocks)
    for i, (b, x) in enumerate(zip(blocks["block"].tolist(), cells)):
        if x:
            try:
                out[i] = float(x)
            except ValueError:
                raise ValueError(f"{path}: block {b!r}: prior_shift {x!r} is not a number") from None
    return out


@gc_paused()
def add_onto_groups(d, manifest, new, desc, log, od, model, model_info, settings, *, client, progress, t0,
                    executor_desc, old_summary, confidence=False, certify_seconds=None):
    """``coref add`` of ``new`` onto the block-group output ``d``; writes ``od``'s files (not finished).

    ``confidence``: also the confidence files of the blocks sampled
    (:func:`coref.jobs.writing.write_add_confidence`; the old mentions of those blocks are read
    from mentions.parquet), with a DIS budget of ``certify_seconds`` (None: half the add so far).

    Returns
    -------
    summary : dict
        summary.json as written.
    new_kept : pandas.DataFrame
        The new mentions added (those already clustered left out).

    Raises
    ------
    coref.outputs.EncodingsError
        If an encodings file of a touched block is refused (another model, edited...).
    ValueError
        With ``strict``, if a new mention is already clustered.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    import time

    d = Path(d)
    blocks = pd.read_csv(d / BLOCKS_FILE, dtype={c: str for c in BLOCK_COLUMNS if c != "n_mentions"},
                         keep_default_na=False)
    for c in ("block", "group", "sampler", "why"):
        blocks[c] = blocks[c].to_numpy(dtype=object)
    blocks["prior_shift"] = _shifts(d / BLOCKS_FILE, blocks)
    new = new.reset_index(drop=True)
    new["mention_id"] = new["mention_id"].astype(str)
    new["block"] = new["block"].astype(str)
    touched = sorted(set(new["block"].tolist()) & set(blocks["block"].tolist()))
    old_ids, old_cols, old_part = _read_old(d, touched)
    dup = pc.is_in(pa.array(new["mention_id"].tolist(), pa.string()), value_set=old_ids).to_numpy(
        zero_copy_only=False)
    skipped = new.loc[dup, "mention_id"].tolist()
    if skipped and settings.strict:
        raise ValueError(f"{len(skipped)} new mention id(s) are already clustered, e.g. {skipped[:3]}")
    new = new[~dup].reset_index(drop=True)
    n_old = len(old_ids)
    del old_ids
    touched = sorted(set(new["block"].tolist()) & set(touched))
    touched_set = set(touched)
    old_part = old_part[np.fromiter((b in touched_set for b in old_part["block"].tolist()), bool,
                                    len(old_part))].reset_index(drop=True)
    enc_old = _old_encodings(d, manifest, blocks, touched, old_part["mention_id"], model_info, model.vocabulary_) \
        if len(old_part) else None
    old_mentions = pd.DataFrame({"mention_id": old_part["mention_id"], "block": old_part["block"]})
    known = blocks[blocks["block"].isin(touched_set) & np.isfinite(blocks["prior_shift"].to_numpy())]
    clusters, info = add_clusters(model, old_mentions, old_part, new, settings, client=client, progress=progress,
                                  old_encodings=enc_old, return_encodings="new",
                                  old_prior_shifts=dict(zip(known["block"].tolist(), known["prior_shift"].tolist())))
    shifts = info.pop("prior_shifts")
    margins = info.pop("margins")
    enc_new = info.pop("encodings")
    is_new = np.r_[np.zeros(len(old_part), bool), np.ones(len(new), bool)]
    sampling = info.pop("sampling")
    g_new = 1 + max(g for cell in blocks["group"] for g in _groups_of(cell)) if len(blocks) else 0
    # -- clusters.csv: the old file, its changed ids rewritten (revisit only), the new rows appended
    now = clusters["cluster_id"].to_numpy(dtype=object)[:len(old_part)]
    moved = now != old_part["cluster_id"].to_numpy(dtype=object)
    changed = dict(zip(old_part["mention_id"].to_numpy(dtype=object)[moved].tolist(), now[moved].tolist()))
    out_cols = list(old_cols) + (["gold"] if "gold" not in old_cols and "gold" in clusters.columns else [])
    new_rows = clusters.loc[is_new].reindex(columns=out_cols)
    _write_clusters(d / "clusters.csv", od.path("clusters.csv"), old_cols, out_cols, changed, new_rows)
    # -- mentions.parquet: the old row groups, then the new mentions
    schema = mention_schema()
    with pq.ParquetWriter(od.path("mentions.parquet"), schema) as w:
        pf = pq.ParquetFile(d / "mentions.parquet")
        for i in range(pf.num_row_groups):
            w.write_table(pf.read_row_group(i).cast(schema))
        nm = new.reindex(columns=[f.name for f in schema]).copy()
        nm["year"] = nm["year"].astype("Int64")
        for c in ("coauthors", "keywords", "affiliations", "references"):
            nm[c] = [list(v) if isinstance(v, (list, tuple, np.ndarray)) else [] for v in nm[c]]
        w.write_table(pa.Table.from_pandas(nm, schema=schema, preserve_index=False))
    # -- encodings: the old files linked, the new mentions' in a new one
    for name, meta in manifest["files"].items():
        if name.startswith("encodings-g"):
            od.link(d / name, name, meta["sha256"])
    if len(new):
        write_encodings(od.path(encodings_file(g_new)), enc_new, model_sha256=model_info["model_json_sha256"])
    # -- blocks.csv: touched blocks updated, new blocks appended
    detail = pd.DataFrame(sampling["blocks"]) if sampling.get("blocks") else pd.DataFrame(
        columns=["block", "n_mentions", "sampler", "why"])
    detail = detail.set_index("block")
    detail["prior_shift"] = detail.index.map(shifts).astype(float)
    blocks = blocks.set_index("block")
    in_old = detail.index.isin(blocks.index)
    upd = detail.index[in_old]
    for c in ("n_mentions", "sampler", "why", "prior_shift"):
        blocks.loc[upd, c] = detail.loc[upd, c].to_numpy()
    blocks.loc[upd, "group"] = [f"{g} {g_new}" for g in blocks.loc[upd, "group"]]
    fresh = detail.loc[~in_old].assign(group=str(g_new))
    blocks = pd.concat([blocks.reset_index()[BLOCK_COLUMNS], fresh.reset_index()[BLOCK_COLUMNS]], ignore_index=True)
    with atomic_open(od.path(BLOCKS_FILE), "w", newline="") as fh:
        blocks.to_csv(fh, index=False)
    # -- summary: the old counts, updated by the blocks sampled
    sampled_part = clusters
    before = old_part["cluster_id"].value_counts()
    after = sampled_part["cluster_id"].value_counts()
    text = _old_text(d, old_part["mention_id"].tolist()) if len(old_part) else pd.DataFrame(
        columns=["mention_id", "name", "year"])
    frame = pd.concat([text, new[["mention_id", "name", "year"]]], ignore_index=True)
    frame = frame.set_index("mention_id").reindex(sampled_part["mention_id"]).reset_index()
    largest = _largest(old_summary, frame, sampled_part)
    weakest = weakest_merges(sampled_part, margins, focus=set(new["mention_id"]), n_weakest=N_SHOWN)
    conf_md, conf_info = "", {}
    if confidence:
        conf_md, conf_info = _confidence(d, od, model, old_part, new, clusters, enc_old, enc_new, settings,
                                         certify_budget(certify_seconds, time.perf_counter() - t0))
    summary = {"command": "add", "n_mentions": int(n_old + len(new)),
               "n_blocks": int(len(blocks)),
               "n_clusters": int(old_summary["n_clusters"] - len(before) + len(after)),
               "n_singletons": int(old_summary["n_singletons"] - (before == 1).sum() + (after == 1).sum()),
               "gold_passed_through": "gold" in out_cols, **info,
               "n_skipped_duplicates": len(skipped), "skipped_duplicates": skipped[:20],
               # (the blocks sampled by this add, as coref add says; every block's in blocks.csv)
               "sampling": {**sampling_summary(settings, sampling_tally(sampling["blocks"])),
                            "blocks_file": BLOCKS_FILE},
               "base": {"path": str(d), "settings_key": manifest.get("settings_key")},
               "data": desc, "model": model_info, "executor": executor_desc, "settings": settings.to_dict(),
               "elapsed_s": time.perf_counter() - t0,
               "read_selectively": {"n_old_mentions_read": int(len(old_part)), "n_blocks_touched": len(touched),
                                    "encodings_file_new": encodings_file(g_new) if len(new) else None},
               **conf_info}
    summary = write_group_outputs(od, summary, largest, weakest, log, title="Author coreference: new mentions added",
                                  extra_md=conf_md)
    return summary, new


def _confidence(d, od, model, old_part, new, clusters, enc_old, enc_new, settings, budget):
    """:func:`coref.jobs.writing.write_add_confidence` of an add onto a block-group output: the old mentions
    of the sampled blocks (``old_part``'s rows) read from mentions.parquet, their encodings from ``enc_old``."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    ids = old_part["mention_id"].astype(str).tolist()
    old = ds.dataset(d / "mentions.parquet").to_table(
        filter=ds.field("mention_id").isin(pa.array(ids, pa.string()))).to_pandas()
    old = encoder_cells(old.drop(columns=[c for c in ("gold",) if c in old.columns]))
    old = old.set_index(old["mention_id"].astype(str)).loc[ids].reset_index(drop=True)
    cols = [c for c in old.columns if c in new.columns or c in ("mention_id", "block")]
    mentions = pd.concat([old[cols], new.reindex(columns=cols)], ignore_index=True)
    parts = (list(enc_old) if enc_old is not None else []) + [enc_new]
    enc = MentionEncoding.concat(parts)
    enc = enc.take(pd.Index(enc.mention_id.astype(str)).get_indexer(mentions["mention_id"].astype(str)))
    return write_add_confidence(od, model, mentions, clusters[["mention_id", "block", "cluster_id"]], enc,
                                set(new["mention_id"].astype(str)), settings, certify_seconds=budget)


def _write_clusters(src, dst, old_cols, out_cols, changed, new_rows):
    """The old clusters.csv (ids in ``changed`` replaced, columns ``out_cols``), then ``new_rows``, to ``dst``."""
    with atomic_open(dst, "w", newline="") as fh:
        if not changed and list(old_cols) == list(out_cols):
            with open(src, newline="", encoding="utf-8") as old:
                shutil.copyfileobj(old, fh, 1 << 22)
        else:
            header = True
            for chunk in pd.read_csv(src, dtype=str, keep_default_na=False, na_values=[""], chunksize=200_000):
                if changed:
                    chunk["cluster_id"] = [changed.get(m, c) for m, c in zip(chunk["mention_id"], chunk["cluster_id"])]
                chunk.reindex(columns=out_cols).to_csv(fh, index=False, header=header)
                header = False
        new_rows.to_csv(fh, index=False, header=False)


def _largest(old_summary, frame, sampled):
    """The largest clusters after the add: the old list (sampled clusters updated) and the sampled blocks'."""
    fresh = largest_clusters(frame, sampled, n_largest=N_SHOWN)
    old = pd.DataFrame(old_summary.get("largest_clusters") or [])
    if len(old):
        old = old[~old["cluster_id"].isin(set(sampled["cluster_id"].tolist()))]
    both = pd.concat([old, fresh], ignore_index=True) if len(old) else fresh
    return both.sort_values("n_mentions", ascending=False, kind="stable").head(N_SHOWN).reset_index(drop=True)
