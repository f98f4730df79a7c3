"""Schema, load report and row collector shared by every mention format (private module).

The public names are re-exported by :mod:`coref.io`; import them from there.
"""
from __future__ import annotations

import ast
import contextlib
import gc
import io
import json
import tokenize
from dataclasses import dataclass

import numpy as np
import pandas as pd

from coref.exceptions import MentionFormatError

# --------------------------------------------------------------------------- schema
#: Required columns, in order (DESIGN.md section 5). Every loader fills all of them.
MENTION_COLUMNS = ("mention_id", "block", "name", "coauthors", "title", "venue", "year", "affiliation", "gold")
#: Optional columns, in order; always present in :func:`coref.io.load_mentions` output, after the required ones.
OPTIONAL_COLUMNS = ("abstract", "keywords", "affiliations", "paper_id", "orcid", "references")
#: Every column of :func:`coref.io.load_mentions` output, in order.
ALL_COLUMNS = MENTION_COLUMNS + OPTIONAL_COLUMNS
#: Columns holding ``list[str]`` per row (``[]`` = missing).
LIST_COLUMNS = ("coauthors", "keywords", "affiliations", "references")
#: Columns that identify records or carry the answer: features must never read them.
IDENTIFIER_COLUMNS = ("mention_id", "paper_id", "orcid", "gold")
#: Format names accepted by ``load_mentions(format=...)``.
FORMATS = ("aminer", "han", "s2and", "crossref", "csv", "parquet")

TEXT_COLUMNS = ("mention_id", "block", "name", "title", "venue", "affiliation")  # str, "" when missing
NA_TEXT_COLUMNS = ("abstract", "paper_id", "orcid")  # string dtype, NA when missing (never "")


# --------------------------------------------------------------------------- report
@dataclass(frozen=True)
class LoadReport:
    """What :func:`coref.io.load_mentions` read, repaired, skipped and ignored.

    Attributes
    ----------
    n_read : int
        Mentions returned (rows of the DataFrame).
    n_skipped : int
        Records that could not be read and were left out (records of skipped
        *files* are not counted here: they could not be counted; see
        ``files_skipped``).
    skipped : tuple of (str, int or str or None, str)
        ``(path, record, reason)`` per skipped record; ``record`` is a 1-based
        line number or a record id.
    notes : tuple of (str, int or str or None, str)
        Everything worth knowing that kept the record: the repairs below, plus
        e.g. a gold cluster naming unknown mentions, absent required columns
        filled with defaults, extra columns ignored.
    repairs : tuple of (str, int or str or None, str)
        The subset of ``notes`` where the input was changed to be readable
        (illegal XML control characters removed, stray ``&`` / ``<`` escaped,
        a year that is not a number set to NA); ``record`` is the first line
        concerned (or the record, e.g. ``"publication 3"``).
    files_read : tuple of str
        Files read, in order.
    files_skipped : tuple of (str, int or None, str)
        ``(path, line, reason)`` per file of a folder that could not be read even
        after the repairs; its records are not in the DataFrame.
    files_ignored : tuple of (str, str)
        ``(path, reason)`` per entry of the input folder that is not data of the
        format (``README.md``, ``.DS_Store``, a sub-folder, ...).
    format : str or None
        The format read (one of :data:`FORMATS`).
    """

    n_read: int
    n_skipped: int
    skipped: tuple = ()
    notes: tuple = ()
    repairs: tuple = ()
    files_read: tuple = ()
    files_skipped: tuple = ()
    files_ignored: tuple = ()
    format: str | None = None

    @property
    def files(self):
        """Alias of ``files_read`` (the files read, in order)."""
        return self.files_read

    @property
    def n_files_skipped(self):
        """Number of files that could not be read (``len(files_skipped)``)."""
        return len(self.files_skipped)

    @property
    def skipped_files(self):
        """Alias of ``files_skipped``."""
        return self.files_skipped

    @property
    def ignored(self):
        """Alias of ``files_ignored``."""
        return self.files_ignored

    @property
    def n_repaired(self):
        """Number of repairs (entries of ``repairs``, one per file and kind of repair)."""
        return len(self.repairs)

    def summary(self, limit=5):
        """Plain text: counts, then the skipped files, repairs, skipped records and ignored files.

        Parameters
        ----------
        limit : int, default 5
            At most this many entries of each list are spelled out.

        Returns
        -------
        str
            One line of counts, then one line per list that is not empty.
        """
        head = (f"read {self.n_read} mentions from {len(self.files_read)} file(s); skipped {self.n_skipped} "
                f"record(s)")
        if self.files_skipped:
            head += f" and {len(self.files_skipped)} file(s)"
        if self.repairs:
            head += f"; {len(self.repairs)} repair(s)"
        if self.files_ignored:
            head += f"; ignored {len(self.files_ignored)} other file(s)"
        lines = [head]

        def listing(title, items):
            shown = "; ".join(items[:limit])
            more = f"; ... ({len(items) - limit} more)" if len(items) > limit else ""
            lines.append(f"{title}: {shown}{more}")

        def where(p, r):
            return f"{p}:{r}" if r is not None else str(p)

        if self.files_skipped:
            listing("files skipped", [f"{where(p, r)}: {why}" for p, r, why in self.files_skipped])
        if self.repairs:
            listing("repaired", [f"{where(p, r)}: {why}" for p, r, why in self.repairs])
        if self.skipped:
            listing("records skipped", [f"{where(p, r)}: {why}" for p, r, why in self.skipped])
        if self.files_ignored:
            listing("ignored", [f"{p}: {why}" for p, why in self.files_ignored])
        return "\n".join(lines)

    def to_dict(self, limit=None):
        """JSON-able dict of the report (for ``metrics.json`` / ``summary.json``).

        Parameters
        ----------
        limit : int or None
            Keep at most this many entries of each list (the counts stay exact).

        Returns
        -------
        dict
            ``format``, ``n_read``, ``n_skipped``, ``n_files_read``,
            ``n_files_skipped``, ``n_files_ignored``, ``n_repaired``, and the lists
            ``skipped``, ``repairs``, ``notes``, ``files_skipped`` (entries
            ``{"path", "record", "reason"}``), ``files_ignored`` (``{"path",
            "reason"}``), ``files_read``.
        """
        def cut(items):
            return list(items if limit is None else items[:limit])

        def rec(items):
            return [{"path": p, "record": r if r is None or isinstance(r, int) else str(r), "reason": why}
                    for p, r, why in cut(items)]

        return {
            "format": self.format, "n_read": int(self.n_read), "n_skipped": int(self.n_skipped),
            "n_files_read": len(self.files_read), "n_files_skipped": len(self.files_skipped),
            "n_files_ignored": len(self.files_ignored), "n_repaired": len(self.repairs),
            "skipped": rec(self.skipped), "repairs": rec(self.repairs), "notes": rec(self.notes),
            "files_skipped": rec(self.files_skipped),
            "files_ignored": [{"path": p, "reason": why} for p, why in cut(self.files_ignored)],
            "files_read": cut(self.files_read),
        }


# --------------------------------------------------------------------------- collector
class Collector:
    """Mutable accumulation of rows, skips, notes and file outcomes while loading (private)."""

    def __init__(self, strict):
        self.strict = strict
        self.rows = {c: [] for c in ALL_COLUMNS}
        self.src = []  # (path, record) per row, for duplicate reports
        self.chunks = []  # (frame, [(path, record), ...]) built in bulk (CSV / Parquet)
        self.skipped = []
        self.notes = []
        self.repairs = []
        self.files_read = []
        self.files_skipped = []
        self.files_ignored = []

    # rows -----------------------------------------------------------------
    def add(self, path, record, *, mention_id, block, name, coauthors=(), title="", venue="", year=None,
            affiliation="", gold=None, abstract=None, keywords=(), affiliations=(), paper_id=None, orcid=None,
            references=()):
        r = self.rows
        r["mention_id"].append(str(mention_id))
        r["block"].append(text(block))
        r["name"].append(text(name))
        r["coauthors"].append(str_list(coauthors))
        r["title"].append(text(title))
        r["venue"].append(text(venue))
        r["year"].append(year)
        r["affiliation"].append(text(affiliation))
        r["gold"].append(None if gold is None else str(gold))
        r["abstract"].append(text(abstract) or None)
        r["keywords"].append(str_list(keywords))
        r["affiliations"].append(str_list(affiliations))
        r["paper_id"].append(text(paper_id) or None)
        r["orcid"].append(text(orcid) or None)
        r["references"].append(str_list(references))
        self.src.append((str(path), record))

    def add_frame(self, frame, path, records):
        """Append a whole frame of :data:`ALL_COLUMNS` (validated) read from ``path``."""
        self._flush()
        self.chunks.append((frame, [(str(path), r) for r in records]))

    def _flush(self):
        if self.src:
            self.chunks.append((frame_from_rows(self.rows), self.src))
            self.rows = {c: [] for c in ALL_COLUMNS}
            self.src = []

    # problems -------------------------------------------------------------
    def skip(self, path, record, reason):
        if self.strict:
            raise MentionFormatError(reason, path=path, record=record)
        self.skipped.append((str(path), record, reason))

    def note(self, path, record, message):
        self.notes.append((str(path), record, message))

    def repair(self, path, record, message):
        """A change to the input that made it readable: a note that is also a repair."""
        self.repairs.append((str(path), record, message))
        self.notes.append((str(path), record, message))

    # files ----------------------------------------------------------------
    def mark(self):
        """State to return to if the file being read turns out unreadable (see :meth:`rollback`).

        A loader uses either :meth:`add` (rows) or :meth:`add_frame` (whole
        frames), never both, so pending rows need flushing only in frame mode.
        """
        if self.chunks:
            self._flush()
        return (len(self.src), len(self.chunks), len(self.skipped), len(self.notes), len(self.repairs),
                len(self.files_read))

    def rollback(self, state):
        """Forget every row, skip and note added since :meth:`mark` (the file is skipped whole)."""
        n_rows, n_chunks, n_skipped, n_notes, n_repairs, n_files = state
        del self.chunks[n_chunks:]
        for values in self.rows.values():
            del values[n_rows:]
        del self.src[n_rows:]
        del self.skipped[n_skipped:], self.notes[n_notes:], self.repairs[n_repairs:], self.files_read[n_files:]

    def read_file(self, path):
        self.files_read.append(str(path))

    def skip_file(self, path, line, reason):
        self.files_skipped.append((str(path), line, reason))

    def ignore(self, path, reason):
        self.files_ignored.append((str(path), reason))

    # result ---------------------------------------------------------------
    def finish(self, fmt=None):
        self._flush()
        if not self.chunks:
            df, src = empty_mentions(), []
        elif len(self.chunks) == 1:
            df, src = self.chunks[0]
        else:
            df = pd.concat([c[0] for c in self.chunks], ignore_index=True)
            src = [x for c in self.chunks for x in c[1]]
        df = df.reset_index(drop=True)
        self.chunks = []
        dup = df["mention_id"].duplicated(keep="first").to_numpy()
        if dup.any():
            for i in np.flatnonzero(dup):
                p, rec = src[i]
                self.skip(p, rec, f"duplicate mention_id {df['mention_id'].iat[i]!r} (first occurrence kept)")
            df = df.loc[~dup].reset_index(drop=True)
        report = LoadReport(n_read=len(df), n_skipped=len(self.skipped), skipped=tuple(self.skipped),
                            notes=tuple(self.notes), repairs=tuple(self.repairs),
                            files_read=tuple(self.files_read), files_skipped=tuple(self.files_skipped),
                            files_ignored=tuple(self.files_ignored), format=fmt)
        return df, report


# --------------------------------------------------------------------------- values
@contextlib.contextmanager
def gc_paused():
    """Pause the cyclic garbage collector while millions of small lists are built.

    Loading creates no reference cycles, but every 700 allocations the collector
    would walk the growing heap of lists (measured: half the time of reading a
    100,000-mention Parquet file). Reference counting still frees everything.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def text(value):
    """``str(value).strip()``, with ``""`` for None / NA / NaN."""
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, float) and value != value:
        return ""
    return str(value).strip()


def str_list(values):
    """Non-empty stripped strings of an iterable (None / NA / NaN / "" dropped)."""
    if values is None:
        return []
    return [t for t in (text(v) for v in values) if t]


def _object_column(values):
    out = np.empty(len(values), dtype=object)
    out[:] = values if len(values) else []
    return out


def frame_from_rows(rows):
    """Build the schema DataFrame (:data:`ALL_COLUMNS`) from column lists (lists are consumed)."""
    data = {}
    for c in TEXT_COLUMNS:
        data[c] = pd.array(rows[c], dtype=str)
    for c in LIST_COLUMNS:
        data[c] = _object_column(rows[c])
    data["year"] = pd.array(rows["year"], dtype="Int64")
    data["gold"] = pd.array(rows["gold"], dtype="string")
    for c in NA_TEXT_COLUMNS:
        data[c] = pd.array(rows[c], dtype="string")
    return pd.DataFrame({c: data[c] for c in ALL_COLUMNS})


def empty_mentions():
    """An empty DataFrame with every column of the schema (:data:`ALL_COLUMNS`) and its dtypes.

    Returns
    -------
    pandas.DataFrame of shape (0, 15)
    """
    return frame_from_rows({c: [] for c in ALL_COLUMNS})


def add_optional_columns(df):
    """Return ``df`` with every optional column present, missing ones filled as missing.

    A DataFrame built in memory (e.g. by :func:`coref.synthesize_mentions`, or
    by a user) may hold only :data:`MENTION_COLUMNS`; this gives it the full
    schema of :func:`coref.io.load_mentions` so that later stages can rely on
    :data:`OPTIONAL_COLUMNS` existing. Absent text columns are filled with NA,
    absent list columns with ``[]``. Present optional columns are normalised:
    text columns to the ``string`` dtype with ``""`` turned into NA, list
    columns to Python lists of non-empty ``str``.

    Parameters
    ----------
    df : pandas.DataFrame of shape (n_mentions, k)
        Must hold :data:`MENTION_COLUMNS`.

    Returns
    -------
    pandas.DataFrame of shape (n_mentions, 15 + extra)
        A new frame: :data:`ALL_COLUMNS` in order, then any other columns of
        ``df`` unchanged.

    Raises
    ------
    ValueError
        If a required column is missing, or a list column holds a value that is
        neither a list-like of strings nor missing.
    """
    missing = [c for c in MENTION_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"add_optional_columns: the frame lacks the required column(s) {missing}")
    out = df.copy()
    n = len(out)
    for c in NA_TEXT_COLUMNS:
        if c in out.columns:
            s = out[c].astype("string").str.strip()
            out[c] = s.mask(s == "")
        else:
            out[c] = pd.array([None] * n, dtype="string")
    for c in ("keywords", "affiliations", "references"):
        if c in out.columns:
            vals, errors = list_column(out[c].tolist())
            if errors:
                i = min(errors)
                raise ValueError(f"add_optional_columns: column {c!r}, row {i}: {errors[i]}")
            out[c] = vals
        else:
            out[c] = _object_column([[] for _ in range(n)])
    extra = [c for c in out.columns if c not in ALL_COLUMNS]
    return out[list(ALL_COLUMNS) + extra]


# --------------------------------------------------------------------------- list cells
_MAX_LIST_CELL = 1_000_000  # characters; a longer cell is refused, never evaluated


def list_value(value):
    """``list[str]`` from one cell of a list column (a list-like, a string, or missing).

    A string is read by :func:`parse_list_text`. ``None`` / NA / NaN give ``[]``.

    Raises
    ------
    ValueError
        If a string cannot be parsed, or a list holds something else than
        strings / numbers / missing values.
    """
    if value is None or value is pd.NA:
        return []
    if isinstance(value, float) and value != value:
        return []
    if isinstance(value, str):
        return parse_list_text(value)
    if isinstance(value, (list, tuple, np.ndarray, pd.api.extensions.ExtensionArray)):
        items = []
        for v in value:
            if isinstance(v, (list, tuple, dict, np.ndarray)):
                raise ValueError(f"a nested {type(v).__name__} inside the list")
            items.append(v)
        return str_list(items)
    raise ValueError(f"expected a list of strings, got {type(value).__name__}")


def _clean(lst):
    """True if ``lst`` is a list of non-empty stripped ``str`` (nothing for :func:`str_list` to change)."""
    for x in lst:
        if type(x) is not str or not x or x[0].isspace() or x[-1].isspace():
            return False
    return True


def list_column(values):
    """Parse a whole list column; returns ``(object array of list[str], {row: error message})``.

    Equivalent to :func:`list_value` per cell (a failing cell gives ``[]`` and
    an entry in the error dict), with fast paths for a column of JSON arrays
    (CSV written by :func:`coref.io.write_mentions`) or of arrays of clean
    strings (Parquet).

    Parameters
    ----------
    values : sequence of shape (n_rows,)
        The cells.

    Returns
    -------
    ndarray of object, shape (n_rows,)
    dict of int -> str
    """
    n = len(values)
    out = np.empty(n, dtype=object)
    errors = {}
    if n and all(isinstance(v, str) for v in values):
        try:
            parsed = json.loads("[" + ",".join(v if v.strip() else "[]" for v in values) + "]")
        except (ValueError, RecursionError):
            parsed = None
        if parsed is not None and len(parsed) == n and all(isinstance(x, list) and _clean(x) for x in parsed):
            out[:] = parsed
            return out, errors
    for i, v in enumerate(values):
        if type(v) is list:
            if _clean(v):
                out[i] = v
                continue
        elif isinstance(v, np.ndarray) and v.dtype == object:
            lst = v.tolist()
            if _clean(lst):
                out[i] = lst
                continue
        try:
            out[i] = list_value(v)
        except ValueError as exc:
            out[i] = []
            errors[i] = str(exc)
    return out, errors


def parse_list_text(cell):
    """Parse one list cell read from text (CSV) into ``list[str]``; never evaluates code.

    Accepted forms: ``""`` -> ``[]``; a JSON array of strings ``["A", "B"]``
    (what :func:`coref.io.write_mentions` writes); a Python list literal
    ``['A', 'B']`` (what ``DataFrame.to_csv`` writes for a list column), read
    with :func:`ast.literal_eval`, which only builds literals; anything else is
    the legacy ``A|B`` form (``|``-separated).

    Raises
    ------
    ValueError
        If the cell starts with ``[`` and ends with ``]`` but is neither a JSON
        array nor a Python list literal of strings (e.g. the ``['A' 'B']``
        repr of a NumPy array, whose missing commas would silently glue names).
    """
    s = cell.strip()
    if not s:
        return []
    if not (s.startswith("[") and s.endswith("]")):
        return [p.strip() for p in s.split("|") if p.strip()]
    if len(s) > _MAX_LIST_CELL:
        raise ValueError(f"a list of {len(s)} characters is longer than the {_MAX_LIST_CELL} allowed")
    try:
        value = json.loads(s)
    except (ValueError, RecursionError):
        why = _python_list_problem(s)
        value = None
        if why is None:
            try:
                value = ast.literal_eval(s)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                why = "neither a JSON array nor a Python list literal"
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) or v is None for v in value):
        return str_list(value)
    if value is not None:
        why = "not a list of strings"
    shown = s if len(s) <= 60 else s[:57] + "..."
    raise ValueError(f"cannot read {shown!r} as a list: {why} (write lists with coref.io.write_mentions, "
                     "or as a JSON array [\"A\", \"B\"])")


def _python_list_problem(s):
    """Why ``s`` is not a flat Python list literal of strings, or None if it is one.

    Only the tokens ``[``, ``]``, ``,``, string literals and ``None`` are
    allowed, and two string literals may not follow each other: Python would
    glue them into one string (``['A' 'B']`` is ``['AB']``), which is how a
    NumPy array of names prints.
    """
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(s).readline)
                  if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.INDENT,
                                    tokenize.DEDENT, tokenize.COMMENT)]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return "neither a JSON array nor a Python list literal"
    previous = None
    for t in tokens:
        if t.type == tokenize.STRING:
            if previous == tokenize.STRING:
                return "two strings without a comma between them (a NumPy array repr?), which would be glued"
        elif not (t.type == tokenize.OP and t.string in ("[", "]", ",")) and not (t.type == tokenize.NAME and t.string == "None"):
            return "neither a JSON array nor a Python list literal"
        previous = t.type
    return None


def split_keywords(texts):
    """Keywords from element texts: one keyword each, or a ``;`` / ``,``-separated list each.

    ``;`` is preferred as the separator when a text holds one; otherwise ``,``.
    Empty pieces are dropped; order and case are kept.
    """
    out = []
    for t in texts:
        t = text(t)
        if not t:
            continue
        sep = ";" if ";" in t else ","
        out.extend(p.strip() for p in t.split(sep) if p.strip())
    return out


# --------------------------------------------------------------------------- years
_NO_YEAR = ("", "null", "None", "NA", "NaN", "nan", "<NA>")


def year_value(value):
    """int year, or None for unknown (0, "", None, NaN); raises ValueError for junk."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value) or None
    if isinstance(value, float):
        if value != value:
            return None
        if value.is_integer():
            return int(value) or None
        raise ValueError(f"year {value!r} is not an integer")
    s = str(value).strip()
    if s in _NO_YEAR:
        return None
    try:
        y = int(s)
    except ValueError:
        raise ValueError(f"year {s!r} is not an integer") from None
    return y or None


def set_year(col, path, record, value):
    """:func:`year_value`, with junk set to NA and recorded as a repair."""
    try:
        return year_value(value)
    except ValueError as exc:
        col.repair(path, record, f"{exc}; set to NA")
        return None
