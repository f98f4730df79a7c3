"""A CSV / Parquet mention table read in block groups, in memory bounded by the largest group.

``coref predict`` on a corpus of millions of mentions never holds the corpus: it reads
the table twice in batches of :data:`BATCH_ROWS` rows and then one block group at a
time.

1. :func:`plan_block_groups` reads only the ``block`` and ``name`` columns, counts the
   mentions of each block (a missing or blank block is the name key, as
   :func:`coref.io.load_mentions` derives it) and packs the blocks, in the order they
   first appear, into groups of about ``group_mentions`` mentions (a larger block is
   a group of its own).
2. :func:`partition_groups` reads every column batch by batch, checks each batch as
   :func:`coref.io.load_mentions` checks a whole table (the same records skipped, with
   their lines), and appends its rows to one Parquet file per group (``gNNNNN.parquet``,
   with the input row of each mention in column ``row``) and their ids, blocks and gold
   labels to ``rows.parquet`` in input order.  Duplicate mention ids (the first kept,
   as the loader does) are found from 64-bit hashes of the ids, confirmed on the ids.
3. :func:`read_group` gives one group's mentions as the loader would (rows in input
   order, the dtypes of :func:`coref.io.load_mentions`).

What the input needs: nothing; the table need not be sorted by block (a Parquet file
sorted or partitioned by block makes each group's rows contiguous, which only makes
step 2 write fewer, larger row groups). Memory: one batch, the per-block counts and
8 + 4 bytes per mention for the duplicate check.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from coref.blocking import name_key
from coref.exceptions import MentionFormatError
from coref.io._collect import Collector
from coref.io.table import check_columns, csv_records, validate_table
from coref.schema import ALL_COLUMNS, LIST_COLUMNS, NA_TEXT_COLUMNS, TEXT_COLUMNS

__all__ = ["STREAM_FORMATS", "BATCH_ROWS", "GROUP_MENTIONS", "BlockGroups", "Partition", "table_batches",
           "plan_block_groups", "partition_groups", "read_group", "mention_schema", "group_file", "ROWS_FILE",
           "new_collector", "estimated_rows", "STREAM_MIN_MENTIONS"]

#: Formats that can be read in batches.
STREAM_FORMATS = ("csv", "parquet")
#: Rows per batch of the two passes over the input.
BATCH_ROWS = 50_000
#: Default mentions per block group.
GROUP_MENTIONS = 50_000
#: Inputs of at least this many mentions are streamed by default (``coref predict --stream``);
#: smaller ones are read whole (one pass, and the in-memory outputs: ``encodings.npz``).
STREAM_MIN_MENTIONS = 200_000
#: Bytes per CSV record assumed to estimate the mentions of a CSV file from its size.
CSV_BYTES_PER_ROW = 256
#: The mentions' ids, blocks and gold labels in input order (with their ``row``).
ROWS_FILE = "rows.parquet"


def estimated_rows(path, fmt):
    """Mentions of a CSV / Parquet file, about (Parquet: its metadata; CSV: size / :data:`CSV_BYTES_PER_ROW`)."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            return int(pq.ParquetFile(path).metadata.num_rows)
        except Exception:  # a broken file: the loader names the problem later
            return 0
    return int(Path(path).stat().st_size // CSV_BYTES_PER_ROW)


def group_file(g):
    """File name of block group ``g``'s mentions in a partition folder."""
    return f"g{int(g):05d}.parquet"


def mention_schema(with_row=False):
    """The Arrow schema of a mention table of :data:`~coref.schema.ALL_COLUMNS` (+ ``row``: int64)."""
    import pyarrow as pa

    types = {c: pa.list_(pa.string()) for c in LIST_COLUMNS}
    types["year"] = pa.int64()
    fields = [pa.field(c, types.get(c, pa.string())) for c in ALL_COLUMNS]
    if with_row:
        fields.append(pa.field("row", pa.int64()))
    return pa.schema(fields)


def table_batches(path, fmt, *, columns=None, batch_rows=BATCH_ROWS):
    """The rows of a CSV / Parquet table in batches, as :func:`coref.io.load_mentions` reads them.

    Parameters
    ----------
    path : pathlib.Path
    fmt : {"csv", "parquet"}
    columns : list of str or None
        Read only these (those the file has); None = all.
    batch_rows : int

    Yields
    ------
    table : pandas.DataFrame
        The cells of the batch (CSV: every cell str).
    start : int
        0-based data row of the batch's first row.
    line_of : ndarray of int64
        Line (CSV, 1-based, where the record starts) or row (Parquet, 0-based) of each row.
    nfields : ndarray of int64 or None
        CSV: fields of each record (a truncated record has fewer than the header).

    Raises
    ------
    MentionFormatError
        If the file cannot be read, naming it (and the line where known).
    """
    if fmt == "parquet":
        yield from _parquet_batches(path, columns, batch_rows)
    elif fmt == "csv":
        yield from _csv_batches(path, columns, batch_rows)
    else:
        raise ValueError(f"{path}: format {fmt!r} cannot be read in batches (only {STREAM_FORMATS})")


def _parquet_batches(path, columns, batch_rows):
    import pyarrow.parquet as pq

    try:
        # buffered reads: a column chunk is read page by page, not whole (a row group may hold millions of rows)
        pf = pq.ParquetFile(path, buffer_size=1 << 20, pre_buffer=False)
        names = pf.schema_arrow.names
        cols = None if columns is None else [c for c in columns if c in names]
        start = 0
        for batch in pf.iter_batches(batch_size=batch_rows, columns=cols):
            table = batch.to_pandas()
            n = len(table)
            yield table, start, np.arange(start, start + n, dtype=np.int64), None
            start += n
        if start == 0:   # a table without rows still has its columns
            yield pf.schema_arrow.empty_table().to_pandas()[cols or names], 0, np.zeros(0, np.int64), None
    except MentionFormatError:
        raise
    except Exception as exc:  # pyarrow raises several unrelated types for a broken file
        raise MentionFormatError(f"cannot read Parquet: {type(exc).__name__}: {exc}", path=path) from None


def _csv_batches(path, columns, batch_rows):
    try:
        header = pd.read_csv(path, dtype=str, nrows=0, encoding="utf-8-sig").columns
        usecols = None if columns is None else [c for c in columns if c in header]
        reader = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[], on_bad_lines="error",
                             encoding="utf-8-sig", chunksize=batch_rows, usecols=usecols)
        records = csv_records(path) if columns is None else None
        start = 0
        for table in reader:
            n = len(table)
            nfields, lines = None, np.arange(start, start + n, dtype=np.int64) + 2
            if records is not None:
                got = [r for _, r in zip(range(n), records)]
                if len(got) == n:
                    pairs = np.asarray(got, dtype=np.int64).reshape(-1, 2)
                    nfields, lines = pairs[:, 0], pairs[:, 1]
                else:          # the csv module and pandas disagree on the records: no field check
                    records = None
            yield table, start, lines, nfields
            start += n
    except MentionFormatError:
        raise
    except UnicodeDecodeError as exc:
        raise MentionFormatError(f"cannot read CSV: {exc}", path=path, record=1) from None
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
        raise MentionFormatError(f"cannot read CSV: {exc}", path=path) from None


def _blocks_of(table):
    """The block of each row as the loader gives it: the stripped ``block``, else the name key."""
    n = len(table)
    block = (table["block"].astype("string").fillna("").str.strip().astype(str).to_numpy(dtype=object)
             if "block" in table.columns else np.full(n, "", dtype=object))
    empty = block == ""
    if empty.any():
        names = (table["name"].astype("string").fillna("").str.strip().astype(str).to_numpy(dtype=object)
                 if "name" in table.columns else np.full(n, "", dtype=object))
        block[empty] = [name_key(x) for x in names[empty]]
    return block


@dataclass(frozen=True)
class BlockGroups:
    """The block groups of a table (:func:`plan_block_groups`).

    Attributes
    ----------
    n_rows : int
        Data rows of the table.
    blocks : ndarray of object, shape (n_blocks,)
        Every block, in the order it first appears.
    sizes : ndarray of int64, shape (n_blocks,)
        Rows of each block (before any record is skipped).
    group : ndarray of int32, shape (n_blocks,)
        The group of each block, 0 .. n_groups - 1.
    """

    n_rows: int
    blocks: np.ndarray
    sizes: np.ndarray
    group: np.ndarray

    @property
    def n_groups(self):
        """Number of groups."""
        return int(self.group.max()) + 1 if len(self.group) else 0

    def group_sizes(self):
        """Rows of each group, shape (n_groups,)."""
        return np.bincount(self.group, weights=self.sizes, minlength=self.n_groups).astype(np.int64)


def plan_block_groups(path, fmt, *, group_mentions=GROUP_MENTIONS, batch_rows=BATCH_ROWS):
    """Read the blocks of a table (two columns, in batches) and pack them into groups.

    Parameters
    ----------
    path : pathlib.Path
    fmt : {"csv", "parquet"}
    group_mentions : int >= 1
        Mentions per group, about: blocks are added to a group, in the order they first
        appear, until it holds at least this many.

    Returns
    -------
    BlockGroups

    Raises
    ------
    ValueError
        If ``group_mentions`` < 1.
    MentionFormatError
        If the table cannot be read.
    """
    if int(group_mentions) < 1:
        raise ValueError(f"group_mentions must be >= 1; got {group_mentions!r}")
    counts = {}
    n = 0
    for table, _, _, _ in table_batches(path, fmt, columns=["block", "name"], batch_rows=batch_rows):
        n += len(table)
        codes, uniq = pd.factorize(_blocks_of(table))
        for b, c in zip(uniq.tolist(), np.bincount(codes, minlength=len(uniq)).tolist()):
            counts[b] = counts.get(b, 0) + c
    blocks = np.array(list(counts), dtype=object)
    sizes = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
    # group k holds the blocks whose cumulative size (before them) falls in [k*G, (k+1)*G), with a
    # group boundary after every block that fills a group: a greedy packing in one pass
    group = np.zeros(len(sizes), dtype=np.int32)
    g, filled = 0, 0
    for i, s in enumerate(sizes.tolist()):
        if filled >= group_mentions:
            g, filled = g + 1, 0
        group[i] = g
        filled += s
    return BlockGroups(n, blocks, sizes, group)


@dataclass(frozen=True)
class Partition:
    """What :func:`partition_groups` wrote and found.

    Attributes
    ----------
    folder : pathlib.Path
        Holds ``gNNNNN.parquet`` per group (:func:`group_file`) and :data:`ROWS_FILE`.
    n_kept : int
        Mentions kept (records skipped and duplicates left out).
    duplicates : ndarray of int64
        Input rows of mentions whose id occurred in an earlier kept row (left out of
        every output; named in the collector's skipped records).
    """

    folder: Path
    n_kept: int
    duplicates: np.ndarray


def partition_groups(path, fmt, plan, folder, col, *, batch_rows=BATCH_ROWS):
    """Check the table batch by batch and write each group's mentions to its own Parquet file.

    Parameters
    ----------
    path : pathlib.Path
    fmt : {"csv", "parquet"}
    plan : BlockGroups
        From :func:`plan_block_groups` on the same file.
    folder : pathlib.Path
        Where the group files and :data:`ROWS_FILE` go (created).
    col : coref.io._collect.Collector
        Receives the records skipped, notes and warnings (``strict``: the first bad record raises).

    Returns
    -------
    Partition

    Raises
    ------
    MentionFormatError
        As :func:`coref.io.load_mentions` for the same file; also if the file changed
        since ``plan`` (a block it does not know).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    schema = mention_schema(with_row=True)
    rows_schema = pa.schema([schema.field("mention_id"), schema.field("block"), schema.field("gold"),
                             pa.field("row", pa.int64()), pa.field("line", pa.int64())])
    index = pd.Index(plan.blocks)
    writers = {}
    rows_writer = pq.ParquetWriter(folder / ROWS_FILE, rows_schema)
    hashes, kept_rows = [], []
    try:
        for table, start, line_of, nfields in table_batches(path, fmt, batch_rows=batch_rows):
            if start == 0:
                check_columns(path, table, col, 1 if fmt == "csv" else "schema", n=plan.n_rows)
            table.index = pd.RangeIndex(start, start + len(table))
            frame, lines = validate_table(path, table, col, line_of, nfields)
            row = np.searchsorted(line_of, lines).astype(np.int64) + start
            frame["row"] = row
            codes = index.get_indexer(frame["block"].to_numpy(dtype=object))
            if (codes < 0).any():
                raise MentionFormatError("the file changed while it was read (a block not seen before); run again",
                                         path=path)
            hashes.append(pd.util.hash_array(frame["mention_id"].to_numpy(dtype=object)).view(np.int64))
            kept_rows.append(row)
            rows_writer.write_table(pa.Table.from_pandas(
                frame[["mention_id", "block", "gold", "row"]].assign(line=lines), schema=rows_schema,
                preserve_index=False))
            groups = plan.group[codes]
            order = np.argsort(groups, kind="stable")
            cuts = np.flatnonzero(np.diff(groups[order])) + 1
            for part in np.split(order, cuts):
                if not len(part):
                    continue
                g = int(groups[part[0]])
                if g not in writers:
                    writers[g] = pq.ParquetWriter(folder / group_file(g), schema)
                writers[g].write_table(_arrow(frame.iloc[part], schema))
        for g in range(plan.n_groups):   # a group all of whose records were skipped: an empty file
            if g not in writers:
                writers[g] = pq.ParquetWriter(folder / group_file(g), schema)
    finally:
        for w in writers.values():
            w.close()
        rows_writer.close()
    hashes = np.concatenate(hashes) if hashes else np.zeros(0, np.int64)
    kept_rows = np.concatenate(kept_rows) if kept_rows else np.zeros(0, np.int64)
    dups = _duplicates(folder / ROWS_FILE, hashes, kept_rows, col, path)
    return Partition(folder, int(len(kept_rows) - len(dups)), dups)


def _arrow(frame, schema):
    """``frame`` (checked mention rows) as an Arrow table of ``schema``."""
    import pyarrow as pa

    out = frame.copy()
    out["year"] = out["year"].astype("Int64")
    return pa.Table.from_pandas(out, schema=schema, preserve_index=False)


def _duplicates(rows_file, hashes, kept_rows, col, path):
    """Rows whose mention id occurred in an earlier kept row (recorded in ``col``, in input order)."""
    import pyarrow.parquet as pq

    order = np.argsort(hashes, kind="stable")
    h = hashes[order]
    same = np.flatnonzero(h[1:] == h[:-1]) + 1
    if not len(same):
        return np.zeros(0, np.int64)
    cand = np.unique(np.concatenate([order[same], order[same - 1]]))
    cand_rows = set(kept_rows[cand].tolist())
    ids, lines = {}, {}
    for batch in pq.ParquetFile(rows_file).iter_batches(columns=["mention_id", "row", "line"]):
        r = batch.column("row").to_numpy()
        pick = np.flatnonzero(np.isin(r, list(cand_rows)))
        if len(pick):
            m = batch.column("mention_id").to_pylist()
            li = batch.column("line").to_numpy()
            for i in pick.tolist():
                ids[int(r[i])], lines[int(r[i])] = m[i], int(li[i])
    seen, dups = set(), []
    for row in sorted(ids):
        if ids[row] in seen:
            dups.append(row)
            col.skip(path, lines[row], f"duplicate mention_id {ids[row]!r} (first occurrence kept)")
        seen.add(ids[row])
    return np.asarray(dups, dtype=np.int64)


def read_group(folder, g, *, drop_rows=()):
    """The mentions of group ``g`` as :func:`coref.io.load_mentions` gives them, rows in input order.

    Parameters
    ----------
    folder : pathlib.Path
        A partition folder (:func:`partition_groups`).
    g : int
    drop_rows : collection of int
        Input rows to leave out (the duplicates).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`~coref.schema.ALL_COLUMNS` and ``row`` (the input row), fresh index.
    """
    import pyarrow.parquet as pq

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = pq.read_table(Path(folder) / group_file(g))
    df = t.to_pandas()
    if len(drop_rows):
        df = df[~df["row"].isin(np.asarray(list(drop_rows), dtype=np.int64))]
    df = df.sort_values("row", kind="stable").reset_index(drop=True)
    for c in LIST_COLUMNS:
        df[c] = [list(v) if v is not None else [] for v in df[c]]
    for c in TEXT_COLUMNS:
        df[c] = df[c].fillna("").astype(str).to_numpy(dtype=object)
    for c in NA_TEXT_COLUMNS + ("gold",):
        df[c] = pd.array(df[c].to_numpy(dtype=object), dtype="string")
    df["year"] = df["year"].astype("Int64")
    return df[list(ALL_COLUMNS) + ["row"]]


def new_collector(strict):
    """A collector for :func:`partition_groups` (its report by ``collector.finish(fmt)``)."""
    return Collector(strict)
