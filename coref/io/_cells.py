"""Cell values of the mention table: text, list and year cells, read and repaired; UTF-8 files (private module).

The loaders of :mod:`coref.io` turn raw cells into the schema's values with these;
none of them evaluates code (list cells are JSON, a Python list literal read by
:func:`ast.literal_eval` after a token check, or ``|``-separated text).
"""
from __future__ import annotations

import ast
import io
import json
import tokenize

from pathlib import Path

import numpy as np
import pandas as pd

from coref.exceptions import MentionFormatError

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
    out, errors, _ = read_list_column(values)
    return out, errors


def read_list_column(values, column=None):
    """:func:`list_column`, also telling which rows were text lists split at an undocumented separator.

    Parameters
    ----------
    values : sequence of shape (n_rows,)
        The cells.
    column : str or None
        The schema column (``"coauthors"`` enables the check for ``,``-separated
        names, which cannot be split safely: ``"Smith, J."`` is one name).

    Returns
    -------
    ndarray of object, shape (n_rows,)
    dict of int -> str
        Rows that could not be read, with the reason.
    dict of str -> list of int
        ``";"`` / ``","``: rows split at that separator; ``"mixed"`` (``|`` and
        ``;`` both) and ``"names,"`` (coauthors ``Ann Lee, Bo Li``): rows that
        look like a list but cannot be split safely (kept as read).
    """
    n = len(values)
    out = np.empty(n, dtype=object)
    errors, forms = {}, {}
    if n and all(isinstance(v, str) for v in values):
        try:
            parsed = json.loads("[" + ",".join(v if v.strip() else "[]" for v in values) + "]")
        except (ValueError, RecursionError):
            parsed = None
        if parsed is not None and len(parsed) == n and all(isinstance(x, list) and _clean(x) for x in parsed):
            out[:] = parsed
            return out, errors, forms
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
            if isinstance(v, str):
                out[i], how = read_list_text(v, column)
                if how in (";", ",", "mixed", "names,"):
                    forms.setdefault(how, []).append(i)
            else:
                out[i] = list_value(v)
        except ValueError as exc:
            out[i] = []
            errors[i] = str(exc)
    return out, errors, forms


def parse_list_text(cell):
    """Parse one list cell read from text (CSV) into ``list[str]``; never evaluates code.

    Accepted forms: ``""`` -> ``[]``; a JSON array of strings ``["A", "B"]``
    (what :func:`coref.io.write_mentions` writes); a Python list literal
    ``['A', 'B']`` (what ``DataFrame.to_csv`` writes for a column of lists), read
    with :func:`ast.literal_eval`, which only builds literals; ``A|B``
    (``|``-separated); ``A; B`` (``;``-separated: no name, keyword or id holds a
    ``;``); anything else is one item.

    Raises
    ------
    ValueError
        If the cell starts with ``[`` and ends with ``]`` but is neither a JSON
        array nor a Python list literal of strings (e.g. the ``['A' 'B']``
        repr of a NumPy array, whose missing commas would silently glue names).
    """
    return read_list_text(cell)[0]


# list columns whose items never hold a ",": a ","-separated cell is split (and the split reported)
_COMMA_SPLIT = ("keywords", "references")


def _looks_like_names(parts):
    """True if ``,``-separated ``parts`` are several names (``"Ann Lee, Bo Li"``), not one ``"Lee, Ann"``."""
    return len(parts) >= 3 or (len(parts) == 2 and all(len(p.split()) >= 2 for p in parts))


def read_list_text(cell, column=None):
    """:func:`parse_list_text`, returning ``(items, how)``.

    ``how`` is ``""`` (empty, or one item), ``"json"``, ``"python"``, ``"|"``,
    ``";"`` or ``","`` (the separator split at), or, for a cell that looks like a
    list that cannot be split safely and is returned as read, ``"mixed"`` (``|``
    and ``;`` both: ``|``-split) or ``"names,"`` (a coauthors cell of
    ``,``-separated names: one item).
    """
    s = cell.strip()
    if not s:
        return [], ""
    if not (s.startswith("[") and s.endswith("]")):
        if "|" in s:
            items = [p.strip() for p in s.split("|") if p.strip()]
            return items, "mixed" if ";" in s else "|"
        if ";" in s:
            return [p.strip() for p in s.split(";") if p.strip()], ";"
        if "," in s and column is not None:
            parts = [p.strip() for p in s.split(",") if p.strip()]
            if column in _COMMA_SPLIT and len(parts) > 1:
                return parts, ","
            if column == "coauthors" and _looks_like_names(parts):
                return [s], "names,"
        return [s], ""
    if len(s) > _MAX_LIST_CELL:
        raise ValueError(f"a list of {len(s)} characters is longer than the {_MAX_LIST_CELL} allowed")
    how = "json"
    try:
        value = json.loads(s)
    except (ValueError, RecursionError):
        why = _python_list_problem(s)
        value, how = None, "python"
        if why is None:
            try:
                value = ast.literal_eval(s)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                why = "neither a JSON array nor a Python list literal"
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) or v is None for v in value):
        return str_list(value), how
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
        elif not (t.type == tokenize.OP and t.string in ("[", "]", ",")) and not (t.type == tokenize.NAME
                                                                               and t.string == "None"):
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


# --------------------------------------------------------------------------- text files
def read_utf8(path):
    """The text of a UTF-8 file (a leading BOM dropped).

    Raises
    ------
    MentionFormatError
        If the file is not UTF-8, naming the line and byte of the first bad byte.
    """
    raw = Path(path).read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise MentionFormatError(f"not valid UTF-8 (byte {exc.start}: {exc.reason}); save the file as UTF-8",
                                 path=path, record=line) from None
