"""Load author mentions from the labelled coreference data sets into one DataFrame.

Every loader returns the schema of DESIGN.md section 5, one row per mention:
the required columns :data:`MENTION_COLUMNS`, then the optional columns
:data:`OPTIONAL_COLUMNS`, which are always present (missing values stay missing:
NA or ``[]``, never ``""`` that two mentions could "share").

=============  ===============  ==================================================
column         dtype            meaning
=============  ===============  ==================================================
mention_id     str              unique id of the mention
block          str              blocking key (mentions that may co-refer)
name           str              the author name as printed on this paper
coauthors      object (list)    the other authors of the paper (own name removed)
title          str              paper title ("" if unknown)
venue          str              journal / conference ("" if unknown)
year           Int64            publication year, NA if unknown
affiliation    str              affiliation(s), ``"; "``-joined ("" if unknown)
gold           string           gold author id, NA for unlabelled mentions
-------------  ---------------  --------------------------------------------------
abstract       string           paper abstract, NA if unknown
keywords       object (list)    paper keywords; ``[]`` if unknown
affiliations   object (list)    this author's affiliations, one per entry; ``[]``
paper_id       string           paper id / DOI, NA if unknown (an identifier)
orcid          string           ORCID iD, NA if unknown (an identifier; see below)
references     object (list)    ids of the papers cited, ``[]`` if unknown
=============  ===============  ==================================================

Rules for the stages that read this frame:

* **Missing is missing.** ``[]`` in a list column and NA in a text column mean
  "unknown": a feature comparing two mentions must treat ``[]`` as missing
  (an indicator feature), never as an empty set the two mentions share.
* **Identifiers are not evidence.** :data:`IDENTIFIER_COLUMNS` (``mention_id``,
  ``paper_id``, ``orcid``, ``gold``) must never be read by a feature. In the
  Crossref set the gold IS the ORCID (they agree on every labelled mention),
  so a feature reading ``orcid`` would score a perfect, meaningless result.
  ``paper_id`` may be used only as a constraint (two mentions of one paper are
  two different authors).

Formats (``format=``, :data:`FORMATS`):

``"aminer"``
    Arnetminer name-disambiguation XML, one file per ambiguous name (Tang et al.
    2012), with ``<abstract>`` and keywords when present; see
    :mod:`coref.io.aminer` for the safe repairs (declared encoding honoured,
    illegal control characters removed, stray ``&`` escaped) and the hardened
    parser (:mod:`defusedxml`, no DTD, no entity expansion).
``"han"``
    Han / LBD DBLP ``;``-separated files (:mod:`coref.io.han`).
``"s2and"``
    S2AND ``[prefix]signatures.json`` + ``clusters.json`` (+ optional
    ``papers.json``) (:mod:`coref.io.s2and`).
``"crossref"``
    ``*.jsonl`` mentions + ``gold_clusters.json`` (ORCID-derived gold)
    (:mod:`coref.io.crossref`).
``"csv"`` / ``"parquet"``
    a table of the schema itself (:mod:`coref.io.table`); list columns are JSON
    arrays in CSV, native lists in Parquet; see :func:`write_mentions`. A list
    cell may also be a Python list literal, ``A|B`` or ``A; B`` (split, with an
    :class:`~coref.exceptions.InputWarning` counting the rows); coauthors
    ``A, B`` and columns that look like schema columns (``co_authors``) are
    errors; absent evidence columns and ``block`` are warnings.

Input that never stops a run, and never loses a record silently: a record that
cannot be read is skipped and counted; a file of a folder that cannot be read
even after the safe repairs is skipped and named (file:line and reason); every
other entry of the folder is listed as ignored with the reason; all of it in the
:class:`LoadReport`, with a :class:`~coref.exceptions.SkippedRecordsWarning`
(:class:`~coref.exceptions.SkippedFilesWarning` for files). ``strict=True`` makes
any skip an error. A folder mixing data formats is always an error
(:class:`~coref.exceptions.MixedFormatsError`).
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path

from coref.exceptions import InputWarning, MentionFormatError, SkippedFilesWarning, SkippedRecordsWarning
from coref.io._collect import Collector, LoadReport, gc_paused
from coref.io._frame import add_optional_columns, empty_mentions
from coref.io._scan import guess_file_format, plan_folder
from coref.io.aminer import load_aminer_file
from coref.io.crossref import load_crossref
from coref.io.han import han_blocks, load_han_file
from coref.io.s2and import load_s2and
from coref.io.table import load_table, write_mentions
from coref.schema import ALL_COLUMNS, FORMATS, IDENTIFIER_COLUMNS, LIST_COLUMNS, MENTION_COLUMNS, OPTIONAL_COLUMNS

__all__ = ["load_mentions", "warn_report", "guess_file_format", "write_mentions", "add_optional_columns", "empty_mentions", "LoadReport",
           "MENTION_COLUMNS", "OPTIONAL_COLUMNS", "ALL_COLUMNS", "LIST_COLUMNS", "IDENTIFIER_COLUMNS", "FORMATS"]


def _read_each(files, col, read_one, single):
    """Read files one by one; an unreadable file is skipped and named unless strict or alone."""
    for f in files:
        state = col.mark()
        try:
            read_one(f)
        except MentionFormatError as exc:
            if col.strict or single:
                raise
            col.rollback(state)
            col.skip_file(f, exc.record, exc.reason)
        except OSError as exc:
            if col.strict or single:
                raise MentionFormatError(f"cannot read the file: {exc.strerror or exc}", path=f) from None
            col.rollback(state)
            col.skip_file(f, None, f"cannot read the file: {exc.strerror or exc}")


def load_mentions(path, format=None, *, strict=False, return_report=False):
    """Load author mentions from ``path`` into the mention DataFrame.

    Parameters
    ----------
    path : str or os.PathLike
        A file, or a folder of files of ONE format: AMiner ``*.xml``, Han
        ``*.txt``, ``*.csv``, ``*.parquet`` / ``*.pq`` (extensions matched
        case-insensitively, files read in sorted order), or the folder of an
        S2AND ``[prefix]signatures.json`` / Crossref ``*.jsonl`` set. Every other
        entry of a folder (``README.md``, ``.DS_Store``, sub-folders, ...) is
        listed in ``LoadReport.files_ignored`` with the reason.
    format : {None, "aminer", "han", "s2and", "crossref", "csv", "parquet"}
        ``None`` guesses from the extension or the folder contents; a folder
        whose files are of another format than the one given is an error.
    strict : bool, default False
        Raise on the first record or file that cannot be read instead of
        skipping it.
    return_report : bool, default False
        Also return the :class:`LoadReport`.

    Returns
    -------
    pandas.DataFrame of shape (n_mentions, 15)
        Columns :data:`ALL_COLUMNS` = :data:`MENTION_COLUMNS` +
        :data:`OPTIONAL_COLUMNS` (dtypes in the module docstring).
    LoadReport
        Only if ``return_report``.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If ``format`` is not one of the names above.
    MixedFormatsError
        If a folder holds data files of several formats (a subclass of
        :class:`~coref.exceptions.MentionFormatError`).
    MentionFormatError
        If ``path`` is a single file that cannot be read (malformed or truncated
        XML/JSON/CSV even after the repairs, a DTD or entity declaration in XML,
        text invalid in its encoding, missing required columns, a column that
        looks like a misspelt schema column, coauthors that cannot be split
        safely), or a folder
        none of whose data files can be read, naming the file and line; with
        ``strict=True`` also for one unreadable file or record of a folder.

    Warns
    -----
    InputWarning
        One per line of ``LoadReport.warnings``: a list column split at ``;``,
        an evidence column absent, blocks derived from the names.
    SkippedFilesWarning
        If files of a folder were skipped (``strict=False``).
    SkippedRecordsWarning
        If records were skipped (``strict=False``); the message gives the counts
        and the first few ``file:record: reason``.

    Notes
    -----
    Per format: AMiner ``block`` = file stem (the ambiguous name), ``gold`` =
    ``"<stem>/<label>"`` (labels are per file), ``mention_id`` =
    ``"<stem>/<index>"``, organisation ``"null"`` -> ``""``, ``paper_id`` =
    ``<id>``. Han: one block per group (``dblp_agupta_{train,test}_f0.txt`` ->
    ``"a gupta"``), ``gold`` = ``"<group>/<cluster_id>"``, year 0 -> NA. S2AND:
    ``block`` = ``author_info.block``, gold from ``clusters.json``,
    ``affiliations`` = ``author_info.affiliations``, abstract and references
    from ``papers.json`` when present. Crossref: ``block`` = first initial +
    last name, coauthors rebuilt from the other mentions of the same DOI,
    ``paper_id`` = DOI, ``orcid`` kept (it is the gold key: never a feature),
    ``gold`` only for mentions listed in ``gold_clusters.json``.

    Examples
    --------
    >>> from sampling.utils.data import data_path
    >>> df, report = load_mentions(data_path("aminer_na"), return_report=True)
    >>> df.shape, df["block"].nunique(), report.files_ignored[0][1]
    ((7026, 15), 108, 'documentation, not data')
    """
    if format is not None and format not in FORMATS:
        raise ValueError(f"the format parameter of load_mentions must be None or one of {FORMATS}; "
                         f"got {format!r} instead")
    path = Path(os.fspath(path))
    if not path.exists():
        raise FileNotFoundError(f"mention data not found: {path}")
    with gc_paused():
        df, report = _load(path, format, strict)
    warn_report(report, stacklevel=3)
    return (df, report) if return_report else df


def warn_report(report, *, stacklevel=2):
    """The warnings of :func:`load_mentions` for a :class:`LoadReport` (skipped files or records, then one per line
    of ``report.warning_lines()``)."""
    if report.files_skipped:
        warnings.warn(report.summary().replace("\n", "; "), SkippedFilesWarning, stacklevel=stacklevel)
    elif report.n_skipped:
        warnings.warn(report.summary().replace("\n", "; "), SkippedRecordsWarning, stacklevel=stacklevel)
    for line in report.warning_lines():
        warnings.warn(line, InputWarning, stacklevel=stacklevel)


def _load(path, format, strict):
    col = Collector(strict)
    if path.is_dir():
        plan = plan_folder(path, format)
        fmt, files, single = plan.format, plan.files, False
        for p, why in plan.ignored:
            col.ignore(p, why)
    else:
        fmt = format or guess_file_format(path)
        files, single = [path], True
    if fmt == "aminer":
        _read_each(files, col, lambda f: load_aminer_file(f, col), single or len(files) == 1)
    elif fmt == "han":
        blocks = han_blocks(files)

        def read_han(f):
            load_han_file(f, col, blocks)
            col.read_file(f)

        _read_each(files, col, read_han, single or len(files) == 1)
    elif fmt == "s2and":
        _read_each(files, col, lambda f: load_s2and(f, col), single or len(files) == 1)
    elif fmt == "crossref":
        load_crossref(files, col)
    else:
        _read_each(files, col, lambda f: load_table(f, col, fmt), single or len(files) == 1)
    df, report = col.finish(fmt)
    if not report.files_read and report.files_skipped:
        listed = "; ".join(f"{p}" + (f":{r}" if r is not None else "") + f": {why}"
                           for p, r, why in report.files_skipped[:5])
        raise MentionFormatError(f"none of the {len(report.files_skipped)} {fmt} files could be read: {listed}",
                                 path=path)
    return df, report
