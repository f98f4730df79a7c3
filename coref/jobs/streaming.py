"""``coref predict`` over block groups: memory bounded by the largest group, not by the corpus.

For one CSV / Parquet file (:func:`coref.inputs.stream_source`) :func:`predict_groups`
reads the table in batches into block groups (:func:`coref.inputs.partition_input`),
then clusters one group at a time (:func:`cluster_group`: encoding, Gibbs and the
group's pieces of every output), in this process or as Dask tasks (costliest groups
first), and joins each finished group's pieces into the output files at once
(:class:`coref.jobs.stream_assembly.GroupAssembly`: on Dask while the workers sample
the next groups; clusters.csv once all are in). Every block is clustered as by the in-memory path (block
``b`` with ``coref.gibbs.block_rng(seed, b)``, its mentions encoded one by one), so
clusters.csv is the same file, rows in input order.

Resuming: the groups and each finished group's pieces live in
``OUT/.checkpoint/stream-KEY/`` (KEY: the settings, the model, the input file's path,
size and modification time, the group size); a run interrupted after some groups
continues from them when run again with the same arguments. The folder is removed once
the new output is in place (manifest last, :class:`coref.outputs.OutputDir`).

Outputs beyond the in-memory path's: ``blocks.csv`` (block, n_mentions, group, sampler,
why, prior_shift: the per-block detail that summary.json only counts) and one
``encodings-gNNNNN.npz`` per group instead of ``encodings.npz`` (each the
:func:`coref.outputs.write_encodings` file of the group's mentions).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from coref.executors import progress_bar, run_on_dask
from coref.inputs import as_object_text, partition_input
from coref.io import gc_paused
from coref.io.stream import BATCH_ROWS, GROUP_MENTIONS, mention_schema, read_group
from coref.jobs.clusters import add_tallies, predict_clusters, sampling_summary, sampling_tally, with_auto_budget
from coref.jobs.stream_assembly import BLOCK_COLUMNS, BLOCKS_FILE, PARTS, GroupAssembly, encodings_file, piece
from coref.margins import weakest_merges
from coref.outputs import CHECKPOINT_DIR, write_encodings
from coref.outputs.directory import write_npz
from coref.outputs.report import largest_clusters, render_predict_md, write_json, write_loader_log
from sampling.utils.atomic import atomic_open, atomic_write_text

__all__ = ["predict_groups", "cluster_group", "stream_key", "encodings_file", "write_group_outputs", "stream_settings",
           "BLOCKS_FILE", "N_SHOWN", "STREAM_FACTOR_CACHE_MB"]

#: Rows of the largest clusters and weakest merges shown in the summary and report.
N_SHOWN = 10
#: Mentions of a block that cost as much as one pair of it, about (encoding vs Gibbs, the
#: 200k synthetic profile): the work of a group is sum n_b + n_b^2 / this, which orders the
#: groups on Dask (costliest first), never their clusters.
PAIRS_PER_MENTION_COST = 256.0

#: Factor-matrix budget (MiB) of ``--sampler auto`` in a streamed run when no
#: ``--factor-cache-mb`` is given: blocks of up to 4,096 mentions are sampled from their
#: cached n x n matrix, larger ones by racing. A fixed budget makes the peak memory of a
#: streamed run independent of the corpus size: the matrix of the largest cached block is
#: at most this much however large the largest block grows with the corpus (1M synthetic
#: mentions: largest block 4,081 = 127 MiB; 2M: 7,769, whose matrix would be 460 MiB and
#: under the in-memory budget of 256 MiB the next largest, 5,535, 234 MiB).
STREAM_FACTOR_CACHE_MB = 128.0


def stream_settings(settings):
    """``settings`` of a streamed run: ``auto`` without a factor-matrix budget gets :data:`STREAM_FACTOR_CACHE_MB`.

    Other samplers and an explicit ``factor_cache_mb`` are kept as they are
    (:func:`coref.jobs.clusters.with_auto_budget`).
    """
    return with_auto_budget(settings, STREAM_FACTOR_CACHE_MB)


#: The layout of a group's pieces (2: blocks.csv with prior_shift); a checkpoint of another layout is not resumed.
PIECES_FORMAT = 2


def stream_key(path, fmt, settings, model_sha256, group_mentions):
    """What a checkpoint of block groups was made for: settings, model, the input file (path, size, mtime), groups,
    and the layout of the pieces (:data:`PIECES_FORMAT`)."""
    st = Path(path).stat()
    body = json.dumps([settings.key(), model_sha256, str(Path(path).resolve()), fmt, st.st_size, st.st_mtime_ns,
                       int(group_mentions), PIECES_FORMAT])
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]


def _json_default(o):
    return o.item() if hasattr(o, "item") else str(o)


@gc_paused()
def cluster_group(root, g, model, settings, drop_rows, model_sha256):
    """Cluster block group ``g`` of the partition in ``root`` and write its pieces there.

    Pieces: ``gNNNNN.rows.npz`` (input row and cluster number k of each mention:
    cluster id ``"<block>/<k>"``), ``.mentions.parquet``, ``.enc.npz``
    (:func:`coref.outputs.write_encodings`), ``.blocks.csv`` and, last, ``.json`` (its
    counts, largest clusters, weakest merges, sampler tally): a group with its ``.json``
    is finished.

    Returns
    -------
    dict
        The content of the ``.json`` piece.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = Path(root)
    df = read_group(root / PARTS, g, drop_rows=drop_rows)
    rows = df.pop("row").to_numpy(dtype=np.int64)
    df = as_object_text(df)
    info = {"group": int(g), "n_mentions": int(len(df)), "n_blocks": 0, "n_clusters": 0, "n_singletons": 0,
            "n_factor_evals": 0, "gibbs_wall_s": 0.0, "largest": [], "weakest": [],
            "tally": sampling_tally([])}
    k = np.zeros(0, np.int32)
    blocks = pd.DataFrame(columns=BLOCK_COLUMNS)
    if len(df):
        clusters, stats = predict_clusters(df, model, settings, return_encodings=True)
        cid = clusters["cluster_id"].to_numpy(dtype=object).astype(str)
        k = np.char.rpartition(cid, "/")[:, 2].astype(np.int32)
        write_encodings(piece(root, g, "enc.npz"), stats["encodings"], model_sha256=model_sha256)
        sizes = clusters["cluster_id"].value_counts()
        largest = largest_clusters(df, clusters, n_largest=N_SHOWN)
        first = pd.Series(rows).groupby(clusters["cluster_id"].to_numpy()).min()
        largest["first_row"] = first.reindex(largest["cluster_id"]).to_numpy()
        weakest = weakest_merges(clusters, stats["margins"], n_weakest=N_SHOWN)
        sampling = stats["sampling"]
        blocks = pd.DataFrame(sampling["blocks"]).assign(group=int(g))
        # the prior shift each block's factors used: coref add keeps it (coref.jobs.incremental)
        blocks["prior_shift"] = blocks["block"].map(stats["prior_shifts"]).astype(float)
        blocks = blocks[BLOCK_COLUMNS]
        info.update(n_blocks=int(clusters["block"].nunique()), n_clusters=int(len(sizes)),
                    n_singletons=int((sizes == 1).sum()), n_factor_evals=int(stats["n_factor_evals"]),
                    gibbs_wall_s=float(stats["gibbs_wall_s"]), largest=largest.to_dict("records"),
                    weakest=weakest.to_dict("records"), tally=sampling_tally(sampling["blocks"]))
    write_npz(piece(root, g, "rows.npz"), {"row": rows, "k": k})
    out = df.copy()
    out["year"] = out["year"].astype("Int64")
    table = pa.Table.from_pandas(out, schema=mention_schema(), preserve_index=False)
    with atomic_open(piece(root, g, "mentions.parquet"), "wb") as fh:
        pq.write_table(table, fh)
    with atomic_open(piece(root, g, "blocks.csv"), "w", newline="") as fh:
        blocks.to_csv(fh, index=False)
    atomic_write_text(piece(root, g, "json"), json.dumps(info, default=_json_default, allow_nan=False))
    return info


def _finished(root, g):
    """The ``.json`` piece of a finished group, or None."""
    p = piece(root, g, "json")
    if not p.is_file():
        return None
    with contextlib.suppress(OSError, ValueError):
        info = json.loads(p.read_text(encoding="utf-8"))
        need = ("rows.npz", "mentions.parquet", "blocks.csv") + (("enc.npz",) if info.get("n_mentions") else ())
        if all(piece(root, g, w).is_file() for w in need):
            return info
    return None


def _prepare(root, path, fmt, settings, group_mentions, batch_rows):
    """The partition of the input in ``root`` (made now, or by an interrupted run): plan dict."""
    done = root / "plan.json"
    if done.is_file():
        with contextlib.suppress(OSError, ValueError):
            return json.loads(done.read_text(encoding="utf-8")), True
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    try:
        with gc_paused():
            plan, part, desc = partition_input(path, fmt, root / PARTS, strict=settings.strict,
                                               group_mentions=group_mentions, batch_rows=batch_rows,
                                               given_format=settings.format)
    except BaseException:          # a partition cut short cannot be resumed: nothing is kept
        remove_checkpoint(root)
        raise
    sizes = plan.sizes.astype(np.float64)
    work = np.bincount(plan.group, weights=sizes + sizes**2 / PAIRS_PER_MENTION_COST, minlength=plan.n_groups)
    state = {"n_rows": plan.n_rows, "n_groups": plan.n_groups, "n_kept": part.n_kept,
             "group_sizes": plan.group_sizes().tolist(), "group_work": work.tolist(), "duplicates": part.duplicates.tolist(), "desc": desc}
    atomic_write_text(done, json.dumps(state, default=_json_default))
    return state, False


def predict_groups(path, fmt, od, model, model_info, settings, *, client=None, progress=False,
                   group_mentions=GROUP_MENTIONS, batch_rows=BATCH_ROWS):
    """Cluster a CSV / Parquet file group by group and write the output files into ``od``.

    Parameters
    ----------
    path : pathlib.Path
    fmt : {"csv", "parquet"}
    od : coref.outputs.OutputDir
        Entered; its files are written here (not finished).
    model : coref.model.PairwiseModel
    model_info : dict
        From :func:`coref.inputs.resolve_model`.
    settings : coref.settings.CorefSettings
    client : distributed.Client or None
        Groups run as Dask tasks (workers read and write the checkpoint folder: a file
        system they share with this process).
    progress : bool
    group_mentions : int >= 1
        Mentions per block group, about (a larger block is a group of its own).
    batch_rows : int >= 1
        Rows per batch of the passes over the input.

    Returns
    -------
    summary : dict
        The streamed part of summary.json (counts, ``sampling``, ``largest_clusters``,
        ``weakest_merges``, ``data``, ``streaming``), to complete and write with
        :func:`write_group_outputs`.
    parts : tuple
        ``(largest, weakest, log, root)`` for :func:`write_group_outputs`.

    Raises
    ------
    ValueError, coref.exceptions.MentionFormatError
        For bad input (as :func:`coref.inputs.load_input`).
    """
    key = stream_key(path, fmt, settings, model_info["model_json_sha256"], group_mentions)
    root = od.out / CHECKPOINT_DIR / f"stream-{key}"
    state, resumed = _prepare(root, Path(path), fmt, settings, group_mentions, batch_rows)
    n_groups = state["n_groups"]
    drop = np.asarray(state["duplicates"], dtype=np.int64)
    infos = {g: info for g in range(n_groups) if (info := _finished(root, g)) is not None}
    n_reused = len(infos)
    work = state.get("group_work", state["group_sizes"])
    # costliest first (on Dask: the last groups to finish are small ones)
    todo = sorted((g for g in range(n_groups) if g not in infos), key=lambda g: -work[g])
    sha = model_info["model_json_sha256"]
    # the output files are joined from each group as it finishes (on Dask: while the
    # workers sample the next ones), clusters.csv once all are in
    with GroupAssembly(od, root, state["n_rows"], n_groups) as joined, \
            progress_bar(sum(state["group_sizes"][g] for g in todo), "gibbs (block groups)", progress) as bar:
        for g in sorted(infos):
            joined.add(g)

        def done(info):
            infos[info["group"]] = info
            joined.add(info["group"])
            bar.update(state["group_sizes"][info["group"]])

        if client is None:
            for g in todo:
                done(cluster_group(root, g, model, settings, drop, sha))
        elif todo:
            remote = client.scatter(model, broadcast=True, hash=False)
            run_on_dask(client, [(cluster_group, (str(root), g, remote, settings, drop, sha),
                                  int(work[g])) for g in todo], done)
        joined.finish()
    groups = [infos[g] for g in range(n_groups)]
    tally = sampling_tally([])
    for info in groups:
        tally = add_tallies(tally, info["tally"])
    largest = pd.DataFrame([r for i in groups for r in i["largest"]])
    if len(largest):
        largest = largest.sort_values(["n_mentions", "first_row"], ascending=[False, True], kind="stable")
        largest = largest.head(N_SHOWN).drop(columns="first_row").reset_index(drop=True)
    weakest = pd.DataFrame([r for i in groups for r in i["weakest"]])
    if len(weakest):
        weakest = weakest.sort_values(["margin", "mention_id"], kind="stable").head(N_SHOWN).reset_index(drop=True)
    desc = dict(state["desc"])
    log = desc.pop("log", [])
    summary = {"command": "predict", "n_mentions": int(sum(i["n_mentions"] for i in groups)),
               "n_blocks": int(sum(i["n_blocks"] for i in groups)),
               "n_clusters": int(sum(i["n_clusters"] for i in groups)),
               "n_singletons": int(sum(i["n_singletons"] for i in groups)), "gold_passed_through": True,
               "n_factor_evals": int(sum(i["n_factor_evals"] for i in groups)),
               "gibbs_wall_s": float(sum(i["gibbs_wall_s"] for i in groups)),
               "sampling": {**sampling_summary(settings, tally), "blocks_file": BLOCKS_FILE},
               "data": desc,
               "streaming": {"n_groups": n_groups, "group_mentions": int(group_mentions),
                             "groups_resumed": n_reused, "partition_resumed": bool(resumed),
                             "n_duplicates": int(len(drop))}}
    return summary, (largest, weakest if len(weakest) else None, log, root)


def write_group_outputs(od, summary, largest, weakest, log, *, title, extra_md=""):
    """summary.json, report.md (``extra_md`` appended) and loader.log of a streamed run; returns the summary."""
    write_loader_log(od, list(log))
    summary = {**summary, "largest_clusters": largest.to_dict("records"),
               "weakest_merges": None if weakest is None else weakest.to_dict("records")}
    write_json(od.path("summary.json"), summary)
    md = render_predict_md(summary, largest, weakest, title=title) + (extra_md or "")
    atomic_write_text(od.path("report.md"), md)
    return summary


def remove_checkpoint(root, *, others=False):
    """Remove a block-group folder (``others``: also those of earlier runs in the same output, made
    with other settings or input), and ``.checkpoint`` when it is left empty."""
    shutil.rmtree(root, ignore_errors=True)
    for other in Path(root).parent.glob("stream-*") if others else ():
        shutil.rmtree(other, ignore_errors=True)
    with contextlib.suppress(OSError):
        Path(root).parent.rmdir()
