"""The mention schema: column names, their groups and the input formats, each defined once.

:mod:`coref.io` re-exports these names (``coref.io.MENTION_COLUMNS``); the
column dtypes and meanings are tabled in its module docstring.
"""
from __future__ import annotations

__all__ = ["MENTION_COLUMNS", "OPTIONAL_COLUMNS", "ALL_COLUMNS", "LIST_COLUMNS", "IDENTIFIER_COLUMNS", "FORMATS",
           "TEXT_COLUMNS", "NA_TEXT_COLUMNS", "REQUIRED_INPUT_COLUMNS", "EVIDENCE_COLUMNS", "schema_column_like"]

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
#: Text columns of dtype ``str``, ``""`` when missing.
TEXT_COLUMNS = ("mention_id", "block", "name", "title", "venue", "affiliation")
#: Text columns of the ``string`` dtype, NA when missing (never ``""``).
NA_TEXT_COLUMNS = ("abstract", "paper_id", "orcid")
#: Columns a CSV / Parquet table must have (every other one is filled as unknown when absent).
REQUIRED_INPUT_COLUMNS = ("mention_id", "name")
#: Columns the features read: a table without one of them gets a warning (every row reads as unknown).
EVIDENCE_COLUMNS = ("coauthors", "title", "venue", "year", "affiliation")


def _edit_distance(a, b):
    """Levenshtein distance of two strings (insertions, deletions, substitutions)."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def _squeezed(name):
    return "".join(ch for ch in str(name).lower() if ch not in " _-.")


def schema_column_like(name):
    """The schema column ``name`` looks like a misspelling of, or None.

    A match differs only in case, ``_`` / ``-`` / ``.`` / spaces
    (``Co_Authors``, ``co-authors``, ``Mention ID``), or by at most 2 edits (1 for
    schema names of 4 letters or fewer, so ``date`` is not taken for ``name``);
    the closest schema column wins. A schema column itself gives None.

    Parameters
    ----------
    name : str
        A column name of an input table.

    Returns
    -------
    str or None
        One of :data:`ALL_COLUMNS`.

    Examples
    --------
    >>> schema_column_like("co_authors"), schema_column_like("Coauthor"), schema_column_like("date")
    ('coauthors', 'coauthors', None)
    """
    if name in ALL_COLUMNS:
        return None
    key = _squeezed(name)
    best, best_d = None, None
    for c in ALL_COLUMNS:
        if key == _squeezed(c):
            return c
        d = min(_edit_distance(str(name).lower(), c), _edit_distance(key, _squeezed(c)))
        if d <= (2 if len(c) > 4 else 1) and (best_d is None or d < best_d):
            best, best_d = c, d
    return best
