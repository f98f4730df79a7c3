"""The mention DataFrame built from column lists, empty, or completed with the optional columns (private module)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from coref.io._cells import list_column
from coref.schema import ALL_COLUMNS, LIST_COLUMNS, MENTION_COLUMNS, NA_TEXT_COLUMNS, OPTIONAL_COLUMNS, TEXT_COLUMNS


def object_column(values):
    """A 1-D object array holding ``values`` (a list of lists stays a list per cell)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values if len(values) else []
    return out


def frame_from_rows(rows):
    """Build the schema DataFrame (:data:`ALL_COLUMNS`) from column lists (lists are consumed)."""
    data = {}
    for c in TEXT_COLUMNS:
        data[c] = pd.array(rows[c], dtype=str)
    for c in LIST_COLUMNS:
        data[c] = object_column(rows[c])
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
    for c in (c for c in LIST_COLUMNS if c in OPTIONAL_COLUMNS):    # keywords, affiliations, references
        if c in out.columns:
            vals, errors = list_column(out[c].tolist())
            if errors:
                i = min(errors)
                raise ValueError(f"add_optional_columns: column {c!r}, row {i}: {errors[i]}")
            out[c] = vals
        else:
            out[c] = object_column([[] for _ in range(n)])
    extra = [c for c in out.columns if c not in ALL_COLUMNS]
    return out[list(ALL_COLUMNS) + extra]

