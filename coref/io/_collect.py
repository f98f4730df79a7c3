"""The load report and the row collector every mention loader fills (private module).

:class:`LoadReport` is public, re-exported by :mod:`coref.io`.
"""
from __future__ import annotations

import contextlib
import gc
from dataclasses import dataclass

import numpy as np
import pandas as pd

from coref.exceptions import MentionFormatError
from coref.io._cells import str_list, text
from coref.io._frame import empty_mentions, frame_from_rows
from coref.schema import ALL_COLUMNS


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
    warnings : tuple of (str, int or str, str)
        ``(path, record, message)``: what was read, but maybe not as the user
        meant (a list column split at ``;``, a schema column absent, blocks
        derived from the names); one entry per file and kind, with the number
        of rows concerned, ``record`` the first line concerned (also in
        ``notes``). :meth:`warning_lines` gives them as one line each.
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
    warnings: tuple = ()

    files = property(lambda self: self.files_read, doc="Alias of ``files_read`` (the files read, in order).")
    skipped_files = property(lambda self: self.files_skipped, doc="Alias of ``files_skipped``.")
    ignored = property(lambda self: self.files_ignored, doc="Alias of ``files_ignored``.")
    n_files_skipped = property(lambda self: len(self.files_skipped),
                               doc="Number of files that could not be read (``len(files_skipped)``).")
    n_repaired = property(lambda self: len(self.repairs),
                          doc="Number of repairs (entries of ``repairs``, one per file and kind of repair).")

    @property
    def repaired_files(self):
        """Files changed to be readable, in order, once each (the details are in ``repairs``)."""
        return tuple(dict.fromkeys(p for p, _, _ in self.repairs))

    def warning_lines(self):
        """``warnings`` as one line each: ``path:record: message``.

        Returns
        -------
        list of str
        """
        return [_where(p, r) + f": {why}" for p, r, why in self.warnings]

    def repair_details(self):
        """Every repair, one ``path:record: what`` line each (for a log file; the summary counts them).

        Returns
        -------
        str
        """
        return "\n".join(_where(p, r) + f": {why}" for p, r, why in self.repairs)

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
            head += f"; {len(self.repairs)} repair(s) in {len(self.repaired_files)} file(s)"
        if self.files_ignored:
            head += f"; ignored {len(self.files_ignored)} other file(s)"
        lines = [head]

        def listing(title, items):
            shown = "; ".join(items[:limit])
            more = f"; ... ({len(items) - limit} more)" if len(items) > limit else ""
            lines.append(f"{title}: {shown}{more}")

        if self.files_skipped:
            listing("files skipped", [f"{_where(p, r)}: {why}" for p, r, why in self.files_skipped])
        if self.warnings:
            listing("warnings", self.warning_lines())
        if self.repairs:  # the files only: one per line of a file would bury the rest (details: repair_details)
            listing("repaired files", list(self.repaired_files))
        if self.skipped:
            listing("records skipped", [f"{_where(p, r)}: {why}" for p, r, why in self.skipped])
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
            ``n_files_skipped``, ``n_files_ignored``, ``n_repaired``,
            ``n_warnings``, and the lists ``skipped``, ``repairs``, ``notes``,
            ``warnings``, ``files_skipped`` (entries ``{"path", "record",
            "reason"}``), ``files_ignored`` (``{"path", "reason"}``),
            ``files_read``, ``repaired_files``.
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
            "n_warnings": len(self.warnings), "skipped": rec(self.skipped), "repairs": rec(self.repairs),
            "notes": rec(self.notes), "warnings": rec(self.warnings), "repaired_files": cut(self.repaired_files),
            "files_skipped": rec(self.files_skipped),
            "files_ignored": [{"path": p, "reason": why} for p, why in cut(self.files_ignored)],
            "files_read": cut(self.files_read),
        }


def _where(path, record):
    return f"{path}:{record}" if record is not None else str(path)


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
        self.warnings = []  # (path, record, message, group)
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

    def warn(self, path, record, message, *, group=None):
        """Read, but maybe not as meant: a note that is also a warning (one line, ``record`` its first line).

        Warnings of one ``group`` from several files are said once, naming the files
        (e.g. the ``block`` column absent from every file of a folder).
        """
        self.warnings.append((str(path), record, message, group))
        self.notes.append((str(path), record, message))

    def _merged_warnings(self):
        out, seen = [], {}
        for p, r, why, group in self.warnings:
            if group is None:
                out.append((p, r, why))
            elif group in seen:
                seen[group][1].append(p)
            else:
                seen[group] = (len(out), [p], r, why)
                out.append(None)
        for k, paths, r, why in seen.values():
            if len(paths) == 1:
                out[k] = (paths[0], r, why)
            else:
                shown = ", ".join(paths[:3]) + (f", ... ({len(paths) - 3} more)" if len(paths) > 3 else "")
                out[k] = (paths[0], r, f"{why} (the same in {len(paths)} files: {shown})")
        return tuple(out)

    # files ----------------------------------------------------------------
    def mark(self):
        """State to return to if the file being read turns out unreadable (see :meth:`rollback`).

        A loader uses either :meth:`add` (rows) or :meth:`add_frame` (whole
        frames), never both, so pending rows need flushing only in frame mode.
        """
        if self.chunks:
            self._flush()
        return (len(self.src), len(self.chunks), len(self.skipped), len(self.notes), len(self.repairs),
                len(self.files_read), len(self.warnings))

    def rollback(self, state):
        """Forget every row, skip and note added since :meth:`mark` (the file is skipped whole)."""
        n_rows, n_chunks, n_skipped, n_notes, n_repairs, n_files, n_warnings = state
        del self.chunks[n_chunks:]
        for values in self.rows.values():
            del values[n_rows:]
        del self.src[n_rows:]
        del self.skipped[n_skipped:], self.notes[n_notes:], self.repairs[n_repairs:], self.files_read[n_files:]
        del self.warnings[n_warnings:]

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
                            files_ignored=tuple(self.files_ignored), format=fmt,
                            warnings=self._merged_warnings())
        return df, report



@contextlib.contextmanager
def gc_paused():
    """Pause the cyclic garbage collector while millions of small lists are built.

    Loading creates no reference cycles, but every 700 allocations the collector
    would walk the growing heap of lists (measured: half the time of reading a
    100,000-mention Parquet file). Reference counting still frees everything.
    The jobs run each block group (encoding, sampling, writing) under it too
    (:func:`coref.jobs.clusters.predict_clusters`, :func:`coref.jobs.streaming.cluster_group`):
    ``coref predict`` of 1M synthetic mentions 260.5 s -> 207.0 s, same clusters. A cycle made
    meanwhile is collected by the first collection after the pause, so memory stays
    bounded by one group's objects.

    Usable as a decorator (``@gc_paused()``); nested pauses re-enable at the outermost.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
