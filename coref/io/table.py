"""CSV / Parquet tables of the mention schema itself, read and written.

Parquet keeps list columns (:data:`coref.io.LIST_COLUMNS`) natively. CSV holds
them as JSON arrays (``["Ann Lee", "Bo Li"]``, what :func:`write_mentions`
writes); a list cell may also be a Python list literal (``['Ann Lee', 'Bo Li']``,
what ``DataFrame.to_csv`` writes for a column of lists; read with
:func:`ast.literal_eval`, never ``eval``) or ``Ann Lee|Bo Li``. A cell
that looks like a list but is neither (e.g. the ``['A' 'B']`` repr of a NumPy
array) skips its record with the file, line and column named; it is never
turned into one string.

Nothing changes meaning silently: ``Ann Lee; Bo Li`` is split at ``;`` with an
:class:`~coref.exceptions.InputWarning` counting the rows (``,`` likewise in
``keywords`` / ``references``); coauthors written ``Ann Lee, Bo Li`` (``,`` is
inside names: ``Lee, Ann``) or ``|`` and ``;`` mixed are an error naming the
file, the first line and the rows concerned. A column that looks like a schema
column (``co_authors``) is an error naming both; an absent evidence column a
warning. CSV fields of any length are read (the ``csv`` module's 128 kB field
limit is lifted while counting fields).
"""
from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from coref.blocking import name_key
from coref.exceptions import MentionFormatError
from coref.io._cells import list_column, read_list_column, read_utf8
from coref.io._collect import gc_paused
from coref.schema import (ALL_COLUMNS, EVIDENCE_COLUMNS, LIST_COLUMNS, MENTION_COLUMNS, NA_TEXT_COLUMNS,
                          OPTIONAL_COLUMNS, REQUIRED_INPUT_COLUMNS, TEXT_COLUMNS, schema_column_like)
from sampling.utils.atomic import atomic_path

__all__ = ["load_table", "validate_table", "check_columns", "csv_records", "csv_field_counts", "write_mentions"]


# the csv module refuses fields over 131,072 characters by default; a C long bounds the limit
_FIELD_LIMIT = min(sys.maxsize, 2**31 - 1)


def csv_records(path):
    """``(fields, line)`` of every non-blank CSV record after the header, one at a time.

    ``line`` is the 1-based line where the record starts (a quoted field may span lines).

    Raises
    ------
    MentionFormatError
        If the csv module cannot parse the file (naming the line).
    """
    old = csv.field_size_limit()
    csv.field_size_limit(_FIELD_LIMIT)  # process-wide setting: restored below
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            start = 1
            try:
                for k, row in enumerate(reader):
                    if k > 0 and row:
                        yield len(row), start
                    start = reader.line_num + 1
            except csv.Error as exc:
                raise MentionFormatError(f"cannot read CSV: {exc}", path=path, record=start) from None
    finally:
        csv.field_size_limit(old)


def csv_field_counts(path):
    """Fields and starting line number of every non-blank CSV record after the header."""
    pairs = np.asarray(list(csv_records(path)), dtype=np.int64).reshape(-1, 2)
    return pairs[:, 0].copy(), pairs[:, 1].copy()


def _read(path, fmt):
    if fmt == "csv":
        try:
            table = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[], on_bad_lines="error",
                                encoding="utf-8-sig")
        except UnicodeDecodeError as exc:
            read_utf8(path)  # raises, naming the line of the first bad byte
            raise MentionFormatError(f"cannot read CSV: {exc}", path=path, record=1) from None
        except pd.errors.EmptyDataError as exc:
            raise MentionFormatError(f"cannot read CSV: {exc}", path=path, record=1) from None
        except pd.errors.ParserError as exc:
            raise MentionFormatError(f"cannot read CSV: {exc}", path=path) from None
        return table, 2  # header is line 1; records are 1-based line numbers
    try:
        table = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several unrelated types for a broken file
        raise MentionFormatError(f"cannot read Parquet: {type(exc).__name__}: {exc}", path=path) from None
    return table, 0  # records are 0-based row numbers


def load_table(path, col, fmt):
    """CSV / Parquet of the schema, validated column-wise (fast for millions of rows) into ``col``."""
    table, offset = _read(path, fmt)
    header = 1 if fmt == "csv" else "schema"  # where the column names are
    check_columns(path, table, col, header)
    n = len(table)
    line_of, nfields = np.arange(n) + offset, None
    if fmt == "csv":  # pandas pads a short (truncated) row silently: count the fields ourselves
        counts, lines = csv_field_counts(path)
        if len(counts) == n:
            line_of, nfields = lines, counts
    frame, lines = validate_table(path, table, col, line_of, nfields)
    col.read_file(path)
    col.add_frame(frame, path, lines.tolist())


def validate_table(path, table, col, line_of, nfields=None):
    """Rows of a schema table (or of one batch of it) checked column-wise: the kept rows as mentions.

    Parameters
    ----------
    path : str or os.PathLike
        Named in the records skipped.
    table : pandas.DataFrame
        The cells as read (CSV: all str); its columns checked before (:func:`check_columns`).
    col : Collector
        Receives every record skipped (``strict``: the first one raises).
    line_of : ndarray of int, shape (n_rows,)
        Line (CSV, 1-based) or row (Parquet, 0-based) of each row, for the messages.
    nfields : ndarray of int or None
        CSV: fields of each record (fewer than the header: the row is truncated).

    Returns
    -------
    frame : pandas.DataFrame
        The kept rows, columns :data:`~coref.schema.ALL_COLUMNS`.
    lines : ndarray of int
        ``line_of`` of the kept rows.

    Raises
    ------
    MentionFormatError
        For list cells that cannot be split safely; with ``strict``, for any bad record.
    """
    n = len(table)
    table = table.reset_index(drop=True)
    line_of = np.asarray(line_of)
    bad = np.zeros(n, dtype=bool)
    reasons = np.full(n, None, dtype=object)

    def reject(mask, reason):
        mask = np.asarray(mask, dtype=bool) & ~bad
        reasons[mask] = reason
        bad[mask] = True

    if nfields is not None:
        reject(np.asarray(nfields) < table.shape[1],
               f"too few fields (expected {table.shape[1]}); the row looks truncated")

    def text(c):
        if c not in table.columns:
            return pd.Series([""] * n, dtype=str)
        return table[c].astype("string").fillna("").str.strip().astype(str)

    mention_id, name = text("mention_id"), text("name")
    reject((mention_id == "").to_numpy() | (name == "").to_numpy(), "empty mention_id or name")
    if "year" in table.columns:
        raw = table["year"]
        if pd.api.types.is_numeric_dtype(raw):
            num = pd.to_numeric(raw, errors="coerce").astype("Float64")
            given = raw.notna().to_numpy()
        else:
            raw_s = raw.astype("string").str.strip()
            given = ~(raw_s.isna() | raw_s.isin(["", "null", "None", "NA", "NaN", "nan", "<NA>"])).to_numpy()
            num = pd.to_numeric(raw_s.where(pd.Series(given, index=raw_s.index)), errors="coerce").astype("Float64")
        numf = num.to_numpy(dtype=np.float64, na_value=np.nan)
        junk = given & ~(np.isfinite(numf) & (np.mod(numf, 1.0) == 0))
        for i in np.flatnonzero(junk & ~bad):
            reasons[i] = f"year {str(table['year'].iat[i]).strip()!r} is not an integer"
        bad |= junk
        yv = np.where(np.isfinite(numf) & ~junk, numf, 0).astype(np.int64)
        year = pd.array(yv, dtype="Int64")
        year[(yv == 0)] = pd.NA
    else:
        year = pd.array([pd.NA] * n, dtype="Int64")
    lists = {}
    for c in LIST_COLUMNS:
        if c not in table.columns:
            continue
        lists[c], errors, forms = read_list_column(table[c].to_numpy(), c)
        _check_list_forms(path, col, c, table[c], forms, line_of, n)
        for i, why in sorted(errors.items()):
            if not bad[i]:
                bad[i], reasons[i] = True, f"column {c!r}: {why}"
    for i in np.flatnonzero(bad):
        col.skip(path, int(line_of[i]), reasons[i])
    keep = ~bad
    n_keep = int(keep.sum())

    def list_values(c):
        if c in lists:
            return lists[c][keep]
        out = np.empty(n_keep, dtype=object)
        for i in range(n_keep):
            out[i] = []
        return out

    block = text("block")[keep]
    name_k = name[keep]
    empty_block = (block == "").to_numpy()
    if empty_block.any():
        block = block.mask(pd.Series(empty_block, index=block.index), name_k[empty_block].map(name_key))

    def na_text(c):
        s = text(c)[keep].astype("string")
        return pd.array(s.mask(s == "").to_numpy(), dtype="string")

    frame = pd.DataFrame({
        "mention_id": mention_id[keep].to_numpy(), "block": block.astype(str).to_numpy(),
        "name": name_k.to_numpy(), "coauthors": list_values("coauthors"), "title": text("title")[keep].to_numpy(),
        "venue": text("venue")[keep].to_numpy(), "year": year[keep],
        "affiliation": text("affiliation")[keep].to_numpy(), "gold": na_text("gold"),
        "abstract": na_text("abstract"), "keywords": list_values("keywords"),
        "affiliations": list_values("affiliations"), "paper_id": na_text("paper_id"), "orcid": na_text("orcid"),
        "references": list_values("references"),
    })
    for c in TEXT_COLUMNS:
        frame[c] = frame[c].astype(str)
    return frame[list(ALL_COLUMNS)], line_of[keep]


def check_columns(path, table, col, header, n=None):
    """Refuse look-alike and missing required columns; warn about absent evidence columns and ``block``.

    ``n``: the rows of the whole table (default ``len(table)``; a batch of it is enough to check).
    """
    columns = [str(c) for c in table.columns]
    for c in columns:
        like = schema_column_like(c)
        if like is not None and like not in columns:
            raise MentionFormatError(f"column {c!r} looks like the schema column {like!r}: rename it (otherwise it "
                                     f"is ignored and every row reads as if {like!r} were unknown)", path=path,
                                     record=header)
    missing = [c for c in REQUIRED_INPUT_COLUMNS if c not in columns]
    if missing:
        raise MentionFormatError(f"missing required column(s) {missing}; got {columns}", path=path, record=header)
    n = len(table) if n is None else n
    absent = [c for c in EVIDENCE_COLUMNS if c not in columns]
    if absent:
        them = "them" if len(absent) > 1 else "it"
        col.warn(path, header, f"no column{'s' if len(absent) > 1 else ''} {', '.join(map(repr, absent))}: unknown "
                               f"for all {n} rows, so the features that read {them} see nothing")
    if "block" not in columns:
        col.warn(path, header, "no column 'block': blocks derived from the names ('J. Tang' -> 'j tang')",
                 group="no block")
    quiet = [c for c in ALL_COLUMNS if c not in columns and c not in EVIDENCE_COLUMNS and c != "block"]
    if quiet:
        col.note(path, header, f"optional column(s) {quiet} absent; read as unknown")
    extra = [c for c in columns if c not in ALL_COLUMNS]
    if extra:
        col.note(path, header, f"extra column(s) {extra} ignored")


def _check_list_forms(path, col, c, cells, forms, line_of, n):
    """Warn about list cells split at ``;`` / ``,``; refuse those that cannot be split safely."""
    def example(rows):
        i = rows[0]
        v = str(cells.iat[i]).strip()
        return int(line_of[i]), (v if len(v) <= 60 else v[:57] + "...")

    why = {"names,": "',' is also inside names ('Lee, Ann')", "mixed": "'|' and ';' both"}
    for how, reason in why.items():
        if how in forms:
            rows = forms[how]
            line, v = example(rows)
            raise MentionFormatError(
                f"column {c!r}: {len(rows)} of {n} rows look like lists that cannot be split safely (e.g. {v!r}: "
                f"{reason}): write each list as a JSON array [\"Ann Lee\", \"Bo Li\"] (coref.io.write_mentions "
                "does), or separate the items with one of '|' or ';'", path=path, record=line)
    for sep in (";", ","):
        if sep in forms:
            rows = forms[sep]
            line, v = example(rows)
            col.warn(path, line, f"column {c!r}: {len(rows)} of {n} rows split at {sep!r} (e.g. {v!r}); write "
                                 "JSON arrays [\"A\", \"B\"] to say so explicitly")


def _encode_lists(out, suffix):
    """Validate the list columns of ``out`` in place; JSON-encode them for CSV."""
    for c in LIST_COLUMNS:
        if c not in out.columns:
            continue
        values, errors = list_column(out[c].tolist())
        if errors:
            i = min(errors)
            raise ValueError(f"write_mentions: column {c!r}, row {i}: {errors[i]}")
        if suffix == ".csv":
            values = np.array([json.dumps(v, ensure_ascii=False) if v else "[]" for v in values], dtype=object)
        out[c] = values


def write_mentions(df, path):
    """Write a mention DataFrame to ``path`` (``.csv`` or ``.parquet``) atomically.

    The data go to a temporary file in the same folder, which is then renamed
    over ``path``, so a crash never leaves a half-written file. The required
    columns (:data:`~coref.io.MENTION_COLUMNS`) are written, then those of
    :data:`~coref.io.OPTIONAL_COLUMNS` that ``df`` holds; other columns are not.
    List columns (:data:`~coref.io.LIST_COLUMNS`) stay lists in Parquet and are
    JSON arrays in CSV, so :func:`~coref.io.load_mentions` reads both back
    unchanged.

    Parameters
    ----------
    df : pandas.DataFrame of shape (n_mentions, k)
        Mentions; must hold :data:`~coref.io.MENTION_COLUMNS`.
    path : str or os.PathLike
        Destination ending in ``.csv``, ``.parquet`` or ``.pq``.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ValueError
        If the extension is not one of those above, a required column is
        missing, or a list column holds something else than lists of strings
        (the message names the column and row).
    """
    path = Path(path)
    missing = [c for c in MENTION_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"write_mentions: the frame lacks column(s) {missing}")
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise ValueError(f"write_mentions: the path must end in .csv or .parquet; got {path.name!r}")
    columns = list(MENTION_COLUMNS) + [c for c in OPTIONAL_COLUMNS if c in df.columns]
    out = df.loc[:, columns].reset_index(drop=True)
    with gc_paused():
        _encode_lists(out, suffix)
    for c in NA_TEXT_COLUMNS:
        if c in out.columns:
            out[c] = out[c].astype("string")
    with atomic_path(path) as tmp:
        if suffix == ".csv":
            out.to_csv(tmp, index=False)
        else:
            out.to_parquet(tmp, index=False)
    return path
