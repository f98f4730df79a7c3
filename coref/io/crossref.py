"""Crossref mentions with ORCID-derived gold: ``mentions.jsonl`` + ``gold_clusters.json``.

``mentions.jsonl`` holds one JSON object per line: ``{mention_id, doi, raw_name,
lastname, firstname, orcid, affiliation, venue, year, coauthors, ...}`` (and,
when present, ``abstract``, ``keywords`` / ``subject``, ``references``);
``gold_clusters.json`` is ``{metadata, clusters: {ORCID: [mention_id, ...]}}``.

The ``orcid`` field is kept in the ``orcid`` column, but the gold of this data
set IS the ORCID (they agree on every labelled mention): features must never
read it (:data:`coref.io.IDENTIFIER_COLUMNS`), or the evaluation is void.
"""
from __future__ import annotations

import json
from pathlib import Path

from coref.blocking import name_key
from coref.exceptions import MentionFormatError
from coref.io._cells import read_utf8, set_year, split_keywords, str_list, text
from coref.io.s2and import read_json

__all__ = ["load_crossref", "CROSSREF_GOLD"]

CROSSREF_GOLD = "gold_clusters.json"


def _read_lines(path, col):
    data = read_utf8(path)
    records = []
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            col.skip(path, lineno, f"malformed JSON line ({exc.msg} at column {exc.colno})")
            continue
        except RecursionError:
            col.skip(path, lineno, "malformed JSON line (nested too deeply)")
            continue
        if not isinstance(rec, dict) or not text(rec.get("mention_id")):
            col.skip(path, lineno, "not a JSON object with a mention_id")
            continue
        records.append((lineno, rec))
    return records


def _gold(gpath, col):
    gold = {}
    if not gpath.is_file():
        return gold
    try:
        g = read_json(gpath)
        clusters = g.get("clusters") if isinstance(g, dict) else None
        if not isinstance(clusters, dict):
            raise MentionFormatError("expected an object with a 'clusters' object {orcid: [mention_id, ...]}",
                                     path=gpath)
    except MentionFormatError as exc:
        if col.strict:
            raise
        col.skip_file(gpath, exc.record, exc.reason + "; no gold read")
        return gold
    col.read_file(gpath)
    for key, ids in clusters.items():
        for mid in ids if isinstance(ids, list) else []:
            mid = str(mid)
            if mid in gold and gold[mid] != key:
                col.note(gpath, key, f"mention {mid} is in clusters {gold[mid]} and {key}; kept {gold[mid]}")
                continue
            gold[mid] = str(key)
    return gold


def _ref(value):
    if isinstance(value, dict):  # a Crossref "reference" entry
        for key in ("DOI", "doi", "key", "unstructured"):
            if text(value.get(key)):
                return text(value.get(key))
        return ""
    return text(value)


def _listish(value):
    if isinstance(value, list):
        return value
    return [] if value is None else [value]


def load_crossref(files, col):
    """Read Crossref ``*.jsonl`` files (and ``gold_clusters.json`` beside the first) into ``col``.

    A file that cannot be read is skipped and named (fatal if ``col.strict``);
    coauthors are rebuilt from the other mentions of the same DOI across all
    files read.
    """
    files = [Path(f) for f in files]
    records = []  # (path, lineno, rec)
    n_read = 0
    for path in files:
        if len(files) == 1:
            got = _read_lines(path, col)
        else:
            state = col.mark()
            try:
                got = _read_lines(path, col)
            except MentionFormatError as exc:
                if col.strict:
                    raise
                col.rollback(state)
                col.skip_file(path, exc.record, exc.reason)
                continue
        col.read_file(path)
        n_read += 1
        records.extend((path, lineno, rec) for lineno, rec in got)
    if not n_read:
        return
    gpath = files[0].with_name(CROSSREF_GOLD)
    gold = _gold(gpath, col)

    def person(rec):
        raw = text(rec.get("raw_name"))
        return raw or " ".join(x for x in (text(rec.get("firstname")), text(rec.get("lastname"))) if x)

    names = [person(rec) for _, _, rec in records]
    by_doi = {}
    for k, (_, _, rec) in enumerate(records):
        doi = text(rec.get("doi")).lower()
        if doi:
            by_doi.setdefault(doi, []).append(k)
    for k, (path, lineno, rec) in enumerate(records):
        name = names[k]
        if not name:
            col.skip(path, lineno, "mention has neither raw_name nor firstname/lastname")
            continue
        first, last = text(rec.get("firstname")), text(rec.get("lastname"))
        block = name_key(f"{first} {last}") if last else name_key(name)
        doi = text(rec.get("doi"))
        coauthors = [names[j] for j in by_doi.get(doi.lower(), ()) if j != k] if doi else []
        given = rec.get("coauthors")
        if not coauthors and isinstance(given, list):
            coauthors = [text(c) for c in given]
        affs = str_list(_listish(rec.get("affiliation")))
        kws = rec.get("keywords", rec.get("subject"))
        refs = rec.get("references")
        mid = text(rec["mention_id"])
        col.add(path, lineno, mention_id=mid, block=block, name=name, coauthors=coauthors,
                title=text(rec.get("title")), venue=text(rec.get("venue")),
                year=set_year(col, path, lineno, rec.get("year")), affiliation="; ".join(affs), gold=gold.get(mid),
                abstract=text(rec.get("abstract")), keywords=split_keywords(_listish(kws)), affiliations=affs,
                paper_id=doi, orcid=text(rec.get("orcid")),
                references=[_ref(r) for r in refs] if isinstance(refs, list) else [])
    loaded = {text(rec.get("mention_id")) for _, _, rec in records}
    unknown = set(gold) - loaded
    if unknown:
        first = min(unknown)
        col.note(gpath, f"mention {first}", f"{len(unknown)} mention id(s) in {CROSSREF_GOLD} are not in the mention "
                                            f"file(s) (e.g. {first!r})")
