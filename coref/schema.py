"""The mention schema: column names, their groups and the input formats, each defined once.

:mod:`coref.io` re-exports these names (``coref.io.MENTION_COLUMNS``); the
column dtypes and meanings are tabled in its module docstring.
"""
from __future__ import annotations

__all__ = ["MENTION_COLUMNS", "OPTIONAL_COLUMNS", "ALL_COLUMNS", "LIST_COLUMNS", "IDENTIFIER_COLUMNS", "FORMATS",
           "TEXT_COLUMNS", "NA_TEXT_COLUMNS"]

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
