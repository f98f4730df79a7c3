"""Load author mentions from the labelled coreference data sets into one DataFrame.

Every loader returns the schema of DESIGN.md section 5 (:data:`MENTION_COLUMNS`),
one row per mention:

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
affiliation    str              affiliation ("" if unknown)
gold           string           gold author id, NA for unlabelled mentions
=============  ===============  ==================================================

Formats (``format=``):

``"aminer"``
    Arnetminer name-disambiguation XML, one file per ambiguous name (Tang et al.
    2012). The files are not well-formed (raw ``&``); stray ``&`` are escaped,
    HTML / ISO named entities are replaced by their characters, and the result is
    parsed with :mod:`defusedxml` with DTDs forbidden (no entity expansion, no
    external entities).
``"han"``
    Han / LBD DBLP ``;``-separated files ``rec_id;cluster_id;author_name;
    coauthors;title;venue;year`` (Han et al. 2004; Cota et al. 2010).
``"s2and"``
    S2AND ``signatures.json`` + ``clusters.json`` (+ optional ``papers.json``).
``"crossref"``
    ``mentions.jsonl`` + ``gold_clusters.json`` (ORCID-derived gold).
``"csv"`` / ``"parquet"``
    a table of the schema itself (CSV: ``coauthors`` as a ``|``-separated string).

Records that cannot be read are skipped and counted in a :class:`LoadReport`
(with a :class:`~coref.exceptions.SkippedRecordsWarning`), or raise
:class:`~coref.exceptions.MentionFormatError` with ``strict=True``. A file that
cannot be parsed at all (malformed or truncated XML / JSON, a DTD) always raises
:class:`~coref.exceptions.MentionFormatError` naming the file: its records cannot
be counted, so skipping it would drop them silently.
"""
from __future__ import annotations

import html.entities
import json
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from coref.blocking import name_key, normalize_name
from sampling._atomic import atomic_path
from coref.exceptions import MentionFormatError, SkippedRecordsWarning

__all__ = ["load_mentions", "write_mentions", "MENTION_COLUMNS", "FORMATS", "LoadReport", "empty_mentions"]

MENTION_COLUMNS = ("mention_id", "block", "name", "coauthors", "title", "venue", "year", "affiliation", "gold")
FORMATS = ("aminer", "han", "s2and", "crossref", "csv", "parquet")
_TEXT_COLUMNS = ("mention_id", "block", "name", "title", "venue", "affiliation")


# --------------------------------------------------------------------------- report
@dataclass(frozen=True)
class LoadReport:
    """What :func:`load_mentions` read and what it could not.

    Attributes
    ----------
    n_read : int
        Mentions returned (rows of the DataFrame).
    n_skipped : int
        Records that could not be read and were left out.
    skipped : tuple of (str, int or str or None, str)
        ``(path, record, reason)`` per skipped record; ``record`` is a 1-based
        line number or a record id.
    notes : tuple of (str, int or str or None, str)
        Repairs that kept the record (a year that is not a number set to NA,
        stray ``&`` escaped, a gold cluster naming unknown mentions, ...).
    files : tuple of str
        The files read, in order.
    """

    n_read: int
    n_skipped: int
    skipped: tuple = ()
    notes: tuple = ()
    files: tuple = ()

    def summary(self, limit=5):
        """One-paragraph text: counts and the first ``limit`` skipped records."""
        text = f"read {self.n_read} mentions from {len(self.files)} file(s); skipped {self.n_skipped}"
        if self.skipped:
            text += ": " + "; ".join(f"{p}:{r}: {why}" for p, r, why in self.skipped[:limit])
            if len(self.skipped) > limit:
                text += f"; ... ({len(self.skipped) - limit} more)"
        return text


class _Collector:
    """Mutable accumulation of rows, skips and notes while loading (private)."""

    def __init__(self, strict):
        self.strict = strict
        self.rows = {c: [] for c in MENTION_COLUMNS}
        self.src = []  # (path, record) per row, for duplicate reports
        self.chunks = []  # (frame, [(path, record), ...]) built in bulk (CSV / Parquet)
        self.skipped = []
        self.notes = []
        self.files = []

    def add(self, path, record, *, mention_id, block, name, coauthors=(), title="", venue="", year=None,
            affiliation="", gold=None):
        r = self.rows
        r["mention_id"].append(str(mention_id))
        r["block"].append(_text(block))
        r["name"].append(_text(name))
        r["coauthors"].append([_text(c) for c in coauthors if _text(c)])
        r["title"].append(_text(title))
        r["venue"].append(_text(venue))
        r["year"].append(year)
        r["affiliation"].append(_text(affiliation))
        r["gold"].append(None if gold is None else str(gold))
        self.src.append((str(path), record))

    def skip(self, path, record, reason):
        if self.strict:
            raise MentionFormatError(reason, path=path, record=record)
        self.skipped.append((str(path), record, reason))

    def note(self, path, record, message):
        self.notes.append((str(path), record, message))

    def _flush(self):
        if self.src:
            self.chunks.append((_frame(self.rows), self.src))
            self.rows = {c: [] for c in MENTION_COLUMNS}
            self.src = []

    def add_frame(self, frame, path, records):
        """Append a whole frame of the schema (validated) read from ``path``."""
        self._flush()
        self.chunks.append((frame, [(str(path), r) for r in records]))

    def finish(self):
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
                            notes=tuple(self.notes), files=tuple(self.files))
        return df, report


def _text(value):
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, float) and value != value:
        return ""
    return str(value).strip()


def _frame(rows):
    """Build the schema DataFrame from column lists (private; lists are consumed)."""
    n = len(rows["mention_id"])
    data = {}
    for c in _TEXT_COLUMNS:
        data[c] = pd.array(rows[c], dtype=str) if n else pd.array([], dtype=str)
    co = np.empty(n, dtype=object)
    co[:] = rows["coauthors"] if n else []
    data["coauthors"] = co
    data["year"] = pd.array(rows["year"], dtype="Int64")
    data["gold"] = pd.array(rows["gold"], dtype="string")
    return pd.DataFrame({c: data[c] for c in MENTION_COLUMNS})


def empty_mentions():
    """An empty DataFrame with the mention schema and dtypes."""
    return _frame({c: [] for c in MENTION_COLUMNS})


def _year(value):
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
    text = str(value).strip()
    if text in ("", "null", "None", "NA", "NaN", "nan", "<NA>"):
        return None
    try:
        y = int(text)
    except ValueError:
        raise ValueError(f"year {text!r} is not an integer") from None
    return y or None


def _set_year(col, path, record, value):
    try:
        return _year(value)
    except ValueError as exc:
        col.note(path, record, f"{exc}; set to NA")
        return None


# --------------------------------------------------------------------------- AMiner XML
_AMP = re.compile(r"&(#[0-9]+;|#[xX][0-9a-fA-F]+;|[A-Za-z][A-Za-z0-9]*;)?")
_XML_PREDEFINED = {"amp;", "lt;", "gt;", "quot;", "apos;"}
# ISO 8879 Greek entities (isogrk1) seen in the AMiner titles; not in HTML5.
_ISO_GREEK = dict(zip(
    "agr bgr ggr dgr egr zgr eegr thgr igr kgr lgr mgr ngr xgr ogr pgr rgr sgr sfgr tgr ugr phgr khgr psgr ohgr".split(),
    "αβγδεζηθικλμνξοπρσςτυφχψω"))
_ISO_GREEK.update({k[0].upper() + k[1:] if k != "eegr" else "EEgr": v.upper() for k, v in list(_ISO_GREEK.items())
                   if k != "sfgr"})
_ISO_GREEK.update({"THgr": "Θ", "PHgr": "Φ", "KHgr": "Χ", "PSgr": "Ψ", "OHgr": "Ω"})
_XML_ESCAPE = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_DTD = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)


def _repair_ampersands(text):
    """Escape stray ``&``; replace HTML/ISO named entities by their characters.

    Returns the repaired text and the number of stray ``&`` escaped.
    """
    n_stray = 0

    def fix(m):
        nonlocal n_stray
        ref = m.group(1)
        if ref is None:
            n_stray += 1
            return "&amp;"
        if ref.startswith("#"):
            try:
                code = int(ref[2:-1], 16) if ref[1] in "xX" else int(ref[1:-1])
                chr(code)
            except (ValueError, OverflowError):
                n_stray += 1
                return "&amp;" + ref
            return m.group(0)
        if ref in _XML_PREDEFINED:
            return m.group(0)
        char = html.entities.html5.get(ref) or _ISO_GREEK.get(ref[:-1])
        if char is not None:
            return "".join(_XML_ESCAPE.get(ch, ch) for ch in char)
        n_stray += 1
        return "&amp;" + ref

    return _AMP.sub(fix, text), n_stray


def _parse_xml(path):
    """Parse one AMiner file hardened: no DTD, no entities; clear errors naming it."""
    import defusedxml.ElementTree as DET
    from defusedxml import DefusedXmlException
    from xml.etree.ElementTree import ParseError

    raw = Path(path).read_bytes()
    m = _DTD.search(raw)
    if m is not None:
        line = raw.count(b"\n", 0, m.start()) + 1
        raise MentionFormatError(
            "refused: the file declares a DTD or entities (<!DOCTYPE / <!ENTITY); entity expansion and external "
            "entities are not allowed (possible 'billion laughs' or XXE attack)", path=path, record=line)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise MentionFormatError(f"not valid UTF-8 at byte {exc.start}: {exc.reason}", path=path, record=line) from None
    text, n_stray = _repair_ampersands(text)
    if text.startswith("<?xml"):
        # the declaration names an encoding; we parse the decoded text
        end = text.find("?>")
        text = text[end + 2:] if end >= 0 else text
    try:
        root = DET.fromstring(text, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as exc:
        raise MentionFormatError(f"refused by the hardened XML parser: {exc!r}", path=path) from None
    except ParseError as exc:
        line = exc.position[0] if getattr(exc, "position", None) else None
        hint = " (the file looks truncated)" if "no element found" in str(exc) or "unclosed token" in str(exc) else ""
        raise MentionFormatError(f"malformed XML: {exc}{hint}", path=path, record=line) from None
    return root, n_stray


def _child_text(elem, tag):
    child = elem.find(tag)
    return "" if child is None or child.text is None else child.text.strip()


def _remove_own_name(authors, full_name):
    """Split the author list into (own name as printed, coauthors), own name removed once."""
    target = normalize_name(full_name)
    norm = [normalize_name(a) for a in authors]
    for i, a in enumerate(norm):
        if a == target:
            return authors[i], authors[:i] + authors[i + 1:]
    key = name_key(full_name)
    for i, a in enumerate(authors):
        if name_key(a) == key:
            return authors[i], authors[:i] + authors[i + 1:]
    tokens = target.replace("-", " ").split()
    squash = "".join(tokens)
    for i, a in enumerate(norm):  # "Jie Tang" vs "Tang Jie" / "Jie-Tang"
        t = a.replace("-", " ").split()
        if sorted(t) == sorted(tokens) or "".join(t) == squash:
            return authors[i], authors[:i] + authors[i + 1:]
    return None, list(authors)


def _load_aminer_file(path, col):
    root, n_stray = _parse_xml(path)
    stem = Path(path).stem
    if n_stray:
        col.note(path, None, f"escaped {n_stray} stray '&'")
    full_name = _child_text(root, "FullName") or stem.replace("_", " ")
    n_unmatched = 0
    for index, pub in enumerate(root.iter("publication")):
        record = f"publication {index + 1}"
        authors = [a.strip() for a in _child_text(pub, "authors").split(",") if a.strip()]
        _, coauthors = _remove_own_name(authors, full_name)
        if len(coauthors) == len(authors):
            n_unmatched += 1
        label = _child_text(pub, "label")
        org = _child_text(pub, "organization")
        col.add(path, record, mention_id=f"{stem}/{index}", block=stem, name=full_name, coauthors=coauthors,
                title=_child_text(pub, "title"), venue=_child_text(pub, "jconf"),
                year=_set_year(col, path, record, _child_text(pub, "year")),
                affiliation="" if org.lower() == "null" else org,
                gold=f"{stem}/{label}" if label else None)
    if n_unmatched:
        col.note(path, None, f"{n_unmatched} publication(s) do not list {full_name!r} among the authors; "
                             "all authors kept as coauthors")


# --------------------------------------------------------------------------- Han / LBD
_HAN_FILE = re.compile(r"^(?P<group>.+?)_(?:train|test)(?:_f\d+)?$")
_HAN_GROUP = re.compile(r"^(?:[A-Za-z0-9]+_)?(?P<initial>[a-z])(?P<last>[a-z]+)$")


def _han_group(path):
    stem = Path(path).stem
    m = _HAN_FILE.match(stem)
    return m.group("group") if m else stem


def _han_block(group):
    m = _HAN_GROUP.match(group)
    return f"{m.group('initial')} {m.group('last')}" if m else group


def _load_han(files, col):
    groups = {_han_group(f) for f in files}
    blocks = {g: _han_block(g) for g in groups}
    clash = {b for b in blocks.values() if list(blocks.values()).count(b) > 1}
    for g in groups:  # two collections with the same ambiguous name stay apart
        if blocks[g] in clash:
            blocks[g] = g
    for path in files:
        group, stem = _han_group(path), Path(path).stem
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise MentionFormatError(f"not valid UTF-8: {exc.reason}", path=path) from None
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            parts = line.split(";")
            if len(parts) < 7:
                col.skip(path, lineno, f"expected 7 ';'-separated fields (rec_id;cluster_id;author_name;coauthors;"
                                       f"title;venue;year), got {len(parts)}")
                continue
            rec_id, cluster_id, name, coauthors = (p.strip() for p in parts[:4])
            venue, year = parts[-2], parts[-1].strip()
            title = ";".join(parts[4:-2])
            if not rec_id or not name:
                col.skip(path, lineno, "empty rec_id or author_name")
                continue
            try:
                y = _year(year)
            except ValueError as exc:
                col.skip(path, lineno, f"{exc} (7th field)")
                continue
            if len(parts) > 7:
                col.note(path, lineno, f"{len(parts)} fields; the extra ';' were kept in the title")
            col.add(path, lineno, mention_id=f"{stem}/{rec_id}", block=blocks[group], name=name,
                    coauthors=coauthors.split(","), title=title, venue=venue, year=y,
                    gold=f"{group}/{cluster_id}" if cluster_id else None)


# --------------------------------------------------------------------------- JSON helpers
def _read_json(path):
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise MentionFormatError(f"not valid UTF-8: {exc.reason}", path=path) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        truncated = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
        hint = " (the file looks truncated)" if truncated else ""
        raise MentionFormatError(f"malformed JSON: {exc.msg} at column {exc.colno}{hint}",
                                 path=path, record=exc.lineno) from None


# --------------------------------------------------------------------------- S2AND
def _load_s2and(sig_path, col):
    folder = Path(sig_path).parent
    sigs = _read_json(sig_path)
    if not isinstance(sigs, dict):
        raise MentionFormatError(f"expected a JSON object {{signature_id: signature}}, got {type(sigs).__name__}",
                                 path=sig_path)
    gold = {}
    cl_path = folder / "clusters.json"
    if cl_path.exists():
        col.files.append(str(cl_path))
        clusters = _read_json(cl_path)
        if not isinstance(clusters, dict):
            raise MentionFormatError("expected a JSON object {cluster_id: cluster}", path=cl_path)
        for key, cl in clusters.items():
            ids = cl.get("signature_ids") if isinstance(cl, dict) else None
            if not isinstance(ids, list):
                col.note(cl_path, key, "cluster without a signature_ids list ignored")
                continue
            cid = str(cl.get("cluster_id", key))
            for sid in ids:
                sid = str(sid)
                if sid in gold and gold[sid] != cid:
                    col.note(cl_path, key, f"signature {sid} is in clusters {gold[sid]} and {cid}; kept {gold[sid]}")
                    continue
                gold[sid] = cid
    papers = {}
    pa_path = folder / "papers.json"
    if pa_path.exists():
        col.files.append(str(pa_path))
        papers = _read_json(pa_path)
        papers = papers if isinstance(papers, dict) else {}
    # coauthors from papers.json if present, else from the other signatures of the same paper
    by_paper = {}
    for sid, sig in sigs.items():
        if isinstance(sig, dict) and isinstance(sig.get("author_info"), dict):
            by_paper.setdefault(str(sig.get("paper_id")), []).append(sid)
    seen = set()
    for sid, sig in sigs.items():
        if not isinstance(sig, dict) or not isinstance(sig.get("author_info"), dict):
            col.skip(sig_path, sid, "signature is not an object with an author_info object")
            continue
        info = sig["author_info"]
        name = " ".join(_text(info.get(k)) for k in ("first", "middle", "last", "suffix") if _text(info.get(k)))
        if not _text(info.get("last")) and not name:
            col.skip(sig_path, sid, "author_info has no name (first/middle/last all empty)")
            continue
        block = _text(info.get("block")) or name_key(name)
        affs = info.get("affiliations") or []
        affs = [affs] if isinstance(affs, str) else affs
        paper_id = str(sig.get("paper_id"))
        paper = papers.get(paper_id) if papers else None
        title = venue = ""
        year = None
        if isinstance(paper, dict):
            title, venue = _text(paper.get("title")), _text(paper.get("venue") or paper.get("journal_name"))
            year = _set_year(col, pa_path, paper_id, paper.get("year"))
            pos = info.get("position")
            coauthors = [a.get("author_name", "") for a in paper.get("authors", [])
                         if isinstance(a, dict) and a.get("position") != pos]
        else:
            coauthors = []
            for other in by_paper.get(paper_id, []):
                if other != sid:
                    oi = sigs[other]["author_info"]
                    coauthors.append(" ".join(_text(oi.get(k)) for k in ("first", "middle", "last") if _text(oi.get(k))))
        seen.add(str(sid))
        col.add(sig_path, sid, mention_id=str(sig.get("signature_id", sid)), block=block, name=name,
                coauthors=coauthors, title=title, venue=venue, year=year,
                affiliation="; ".join(_text(a) for a in affs if _text(a)), gold=gold.get(str(sid)))
    unknown = set(gold) - set(map(str, sigs))
    if unknown:
        col.note(cl_path, None, f"{len(unknown)} signature id(s) in clusters.json are not in signatures.json")


# --------------------------------------------------------------------------- Crossref / ORCID
def _load_crossref(path, col):
    folder = Path(path).parent
    records = []
    with open(path, encoding="utf-8", errors="strict") as fh:
        try:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as exc:
                    col.skip(path, lineno, f"malformed JSON line ({exc.msg} at column {exc.colno})")
                    continue
                if not isinstance(rec, dict) or not _text(rec.get("mention_id")):
                    col.skip(path, lineno, "not a JSON object with a mention_id")
                    continue
                records.append((lineno, rec))
        except UnicodeDecodeError as exc:
            raise MentionFormatError(f"not valid UTF-8: {exc.reason}", path=path) from None
    gold = {}
    gpath = folder / "gold_clusters.json"
    if gpath.exists():
        col.files.append(str(gpath))
        g = _read_json(gpath)
        clusters = g.get("clusters") if isinstance(g, dict) else None
        if not isinstance(clusters, dict):
            raise MentionFormatError("expected an object with a 'clusters' object {orcid: [mention_id, ...]}",
                                     path=gpath)
        for key, ids in clusters.items():
            for mid in ids if isinstance(ids, list) else []:
                mid = str(mid)
                if mid in gold and gold[mid] != key:
                    col.note(gpath, key, f"mention {mid} is in clusters {gold[mid]} and {key}; kept {gold[mid]}")
                    continue
                gold[mid] = str(key)
    by_doi = {}
    for k, (_, rec) in enumerate(records):
        doi = _text(rec.get("doi"))
        if doi:
            by_doi.setdefault(doi.lower(), []).append(k)

    def person(rec):
        raw = _text(rec.get("raw_name"))
        return raw or " ".join(x for x in (_text(rec.get("firstname")), _text(rec.get("lastname"))) if x)

    for k, (lineno, rec) in enumerate(records):
        name = person(rec)
        if not name:
            col.skip(path, lineno, "mention has neither raw_name nor firstname/lastname")
            continue
        first, last = _text(rec.get("firstname")), _text(rec.get("lastname"))
        block = name_key(f"{first} {last}") if last else name_key(name)
        doi = _text(rec.get("doi")).lower()
        coauthors = [person(records[j][1]) for j in by_doi.get(doi, []) if j != k] if doi else []
        given = rec.get("coauthors")
        if not coauthors and isinstance(given, list):
            coauthors = [_text(c) for c in given]
        aff = rec.get("affiliation")
        aff = "; ".join(_text(a) for a in aff) if isinstance(aff, list) else _text(aff)
        mid = _text(rec["mention_id"])
        # the ORCID field is the gold key itself: it is deliberately not carried over
        col.add(path, lineno, mention_id=mid, block=block, name=name, coauthors=coauthors,
                title=_text(rec.get("title")), venue=_text(rec.get("venue")),
                year=_set_year(col, path, lineno, rec.get("year")), affiliation=aff, gold=gold.get(mid))
    loaded = {_text(r.get("mention_id")) for _, r in records}
    unknown = set(gold) - loaded
    if unknown:
        col.note(gpath, None, f"{len(unknown)} mention id(s) in gold_clusters.json are not in {Path(path).name}")


# --------------------------------------------------------------------------- CSV / Parquet
def _coauthor_list(value):
    if value is None or value is pd.NA:
        return []
    if isinstance(value, float) and value != value:
        return []
    if isinstance(value, str):
        return [c.strip() for c in value.split("|") if c.strip()]
    return [str(c) for c in value]


def _csv_field_counts(path):
    """Fields and starting line number of every non-blank CSV record after the header."""
    import csv

    counts, lines = [], []
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        start = 1
        for k, row in enumerate(reader):
            if k > 0 and row:
                counts.append(len(row))
                lines.append(start)
            start = reader.line_num + 1
    return np.asarray(counts, dtype=np.int64), np.asarray(lines, dtype=np.int64)


def _load_table(path, col, fmt):
    """CSV / Parquet of the schema, validated column-wise (fast for millions of rows)."""
    if fmt == "csv":
        try:
            table = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[], on_bad_lines="error",
                                encoding="utf-8")
        except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
            raise MentionFormatError(f"cannot read CSV: {exc}", path=path) from None
        offset = 2  # header is line 1; records are 1-based line numbers
    else:
        try:
            table = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several unrelated types for a broken file
            raise MentionFormatError(f"cannot read Parquet: {exc}", path=path) from None
        offset = 0  # records are 0-based row numbers
    missing = [c for c in ("mention_id", "name") if c not in table.columns]
    if missing:
        raise MentionFormatError(f"missing required column(s) {missing}; got {list(table.columns)}", path=path)
    absent = [c for c in MENTION_COLUMNS if c not in table.columns]
    if absent:
        col.note(path, None, f"column(s) {absent} absent; filled with defaults")
    extra = [c for c in table.columns if c not in MENTION_COLUMNS]
    if extra:
        col.note(path, None, f"extra column(s) {extra} ignored")
    n = len(table)
    table = table.reset_index(drop=True)
    bad = np.zeros(n, dtype=bool)
    reasons = np.full(n, None, dtype=object)

    def reject(mask, reason):
        mask = np.asarray(mask, dtype=bool) & ~bad
        reasons[mask] = reason
        bad[mask] = True

    line_of = np.arange(n) + offset
    if fmt == "csv":  # pandas pads a short (truncated) row silently: count the fields ourselves
        nfields, lines = _csv_field_counts(path)
        if len(nfields) == n:
            line_of = lines
            reject(nfields < table.shape[1], f"too few fields (expected {table.shape[1]}); the row looks truncated")

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
    for i in np.flatnonzero(bad):
        col.skip(path, int(line_of[i]), reasons[i])
    keep = ~bad
    if "coauthors" in table.columns:
        co = [_coauthor_list(v) for v in table["coauthors"].to_numpy()[keep]]
    else:
        co = [[] for _ in range(int(keep.sum()))]
    block = text("block")[keep]
    name_k = name[keep]
    empty_block = (block == "").to_numpy()
    if empty_block.any():
        block = block.mask(pd.Series(empty_block, index=block.index), name_k[empty_block].map(name_key))
    gold = text("gold")[keep].astype("string")
    gold = gold.mask(gold == "")
    coauthors = np.empty(len(co), dtype=object)
    coauthors[:] = co
    frame = pd.DataFrame({
        "mention_id": mention_id[keep].to_numpy(), "block": block.astype(str).to_numpy(),
        "name": name_k.to_numpy(), "coauthors": coauthors, "title": text("title")[keep].to_numpy(),
        "venue": text("venue")[keep].to_numpy(), "year": year[keep],
        "affiliation": text("affiliation")[keep].to_numpy(), "gold": pd.array(gold.to_numpy(), dtype="string"),
    })
    for c in _TEXT_COLUMNS:
        frame[c] = frame[c].astype(str)
    col.add_frame(frame, path, line_of[keep].tolist())


# --------------------------------------------------------------------------- dispatch
_EXT = {".xml": "aminer", ".txt": "han", ".jsonl": "crossref", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def _guess_format(path):
    path = Path(path)
    if path.is_dir():
        if (path / "signatures.json").exists():
            return "s2and"
        if (path / "mentions.jsonl").exists():
            return "crossref"
        exts = {p.suffix.lower() for p in path.iterdir() if p.is_file()}
        for ext in (".xml", ".parquet", ".csv", ".txt"):
            if ext in exts:
                return _EXT[ext]
        raise MentionFormatError("cannot guess the format of this folder (no signatures.json, mentions.jsonl, "
                                 "*.xml, *.parquet, *.csv or *.txt); pass format=", path=path)
    if path.name == "signatures.json":
        return "s2and"
    fmt = _EXT.get(path.suffix.lower())
    if fmt is None:
        raise MentionFormatError(f"cannot guess the format from the extension {path.suffix!r}; pass format= one of "
                                 f"{FORMATS}", path=path)
    return fmt


def _files(path, fmt):
    path = Path(path)
    if not path.is_dir():
        return [path]
    if fmt == "s2and":
        found = [path / "signatures.json"]
    elif fmt == "crossref":
        found = [path / "mentions.jsonl"]
    else:
        pattern = {"aminer": "*.xml", "han": "*.txt", "csv": "*.csv", "parquet": "*.parquet"}[fmt]
        found = sorted(path.glob(pattern))
    found = [f for f in found if f.is_file()]
    if not found:
        raise MentionFormatError(f"no {fmt} files found in this folder", path=path)
    return found


def load_mentions(path, format=None, *, strict=False, return_report=False):
    """Load author mentions from ``path`` into the mention DataFrame.

    Parameters
    ----------
    path : str or os.PathLike
        A file, or a folder: every file of the format in it is read in sorted
        order (AMiner ``*.xml``, Han ``*.txt``, ``*.csv``, ``*.parquet``), or
        the folder holding ``signatures.json`` (S2AND) / ``mentions.jsonl``
        (Crossref).
    format : {None, "aminer", "han", "s2and", "crossref", "csv", "parquet"}
        ``None`` guesses from the extension or the folder contents.
    strict : bool, default False
        Raise on the first record that cannot be read instead of skipping it.
    return_report : bool, default False
        Also return the :class:`LoadReport`.

    Returns
    -------
    pandas.DataFrame of shape (n_mentions, 9)
        Columns :data:`MENTION_COLUMNS` (see the module docstring for dtypes).
    LoadReport
        Only if ``return_report``.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If ``format`` is not one of the names above.
    MentionFormatError
        If a file cannot be parsed (malformed or truncated XML/JSON/CSV, a DTD
        or entity declaration in XML, invalid UTF-8, missing required columns),
        naming the file and line; with ``strict=True`` also for a single
        unreadable record.

    Warns
    -----
    SkippedRecordsWarning
        If records were skipped (``strict=False``); the message gives the count
        and the first few ``file:record: reason``.

    Notes
    -----
    Per format: AMiner ``block`` = file stem (the ambiguous name), ``gold`` =
    ``"<stem>/<label>"`` (labels are per file), ``mention_id`` =
    ``"<stem>/<index>"``, organisation ``"null"`` -> ``""``. Han: one block per
    group (``dblp_agupta_{train,test}_f0.txt`` -> ``"a gupta"``), ``gold`` =
    ``"<group>/<cluster_id>"``, year 0 -> NA. S2AND: ``block`` =
    ``author_info.block``, gold from ``clusters.json``. Crossref: ``block`` =
    first initial + last name, coauthors rebuilt from the other mentions of the
    same DOI, the ``orcid`` field dropped (it is the gold key), ``gold`` only
    for mentions listed in ``gold_clusters.json``.

    Examples
    --------
    >>> from sampling._data import data_path
    >>> df = load_mentions(data_path("aminer_na"), format="aminer")
    >>> df.shape, df["block"].nunique()
    ((7026, 9), 108)
    """
    if format is not None and format not in FORMATS:
        raise ValueError(f"the format parameter of load_mentions must be None or one of {FORMATS}; "
                         f"got {format!r} instead")
    path = Path(os.fspath(path))
    if not path.exists():
        raise FileNotFoundError(f"mention data not found: {path}")
    fmt = format or _guess_format(path)
    files = _files(path, fmt)
    col = _Collector(strict)
    col.files.extend(str(f) for f in files)
    if fmt == "aminer":
        for f in files:
            _load_aminer_file(f, col)
    elif fmt == "han":
        _load_han(files, col)
    elif fmt == "s2and":
        _load_s2and(files[0], col)
    elif fmt == "crossref":
        _load_crossref(files[0], col)
    else:
        for f in files:
            _load_table(f, col, fmt)
    df, report = col.finish()
    if report.n_skipped:
        warnings.warn(report.summary(), SkippedRecordsWarning, stacklevel=2)
    return (df, report) if return_report else df


def write_mentions(df, path):
    """Write a mention DataFrame to ``path`` (``.csv`` or ``.parquet``) atomically.

    The data go to a temporary file in the same folder, which is then renamed
    over ``path``, so a crash never leaves a half-written file. In CSV the
    ``coauthors`` lists are joined with ``|``.

    Raises
    ------
    ValueError
        If the extension is neither ``.csv`` nor ``.parquet`` or a column of
        :data:`MENTION_COLUMNS` is missing.
    """
    path = Path(path)
    missing = [c for c in MENTION_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"write_mentions: the frame lacks column(s) {missing}")
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise ValueError(f"write_mentions: the path must end in .csv or .parquet; got {path.name!r}")
    out = df.loc[:, list(MENTION_COLUMNS)]
    with atomic_path(path) as tmp:
        if suffix == ".csv":
            out = out.assign(coauthors=out["coauthors"].map(lambda c: "|".join(c)))
            out.to_csv(tmp, index=False)
        else:
            out.to_parquet(tmp, index=False)
    return path
