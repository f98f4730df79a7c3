"""S2AND unified format (Subramanian et al. 2021): ``signatures.json`` + ``clusters.json`` (+ ``papers.json``).

``signatures.json`` is ``{signature_id: {signature_id, paper_id, author_info:
{position, block, first, middle, last, suffix, email, affiliations[], ...}}}``;
``clusters.json`` is ``{cluster_id: {cluster_id, signature_ids[]}}``;
``papers.json`` (optional) is ``{paper_id: {title, abstract, venue /
journal_name, year, references[], authors[{position, author_name}]}}``. The
files may carry a dataset prefix (``qian_signatures.json``, ``qian_clusters.json``).
"""
from __future__ import annotations

import json
from pathlib import Path

from coref.blocking import name_key
from coref.exceptions import MentionFormatError
from coref.io._cells import read_utf8, set_year, split_keywords, text

__all__ = ["read_json", "s2and_companions", "load_s2and"]


def read_json(path):
    """Parse a whole JSON file; MentionFormatError naming file, line and column if it is malformed."""
    data = read_utf8(path)
    try:
        return json.loads(data)
    except json.JSONDecodeError as exc:
        truncated = exc.pos >= len(data.rstrip()) or exc.msg.startswith("Unterminated string")
        hint = " (the file looks truncated)" if truncated else ""
        raise MentionFormatError(f"malformed JSON: {exc.msg} at column {exc.colno}{hint}",
                                 path=path, record=exc.lineno) from None
    except RecursionError:
        raise MentionFormatError("malformed JSON: nested too deeply", path=path) from None


def s2and_companions(sig_path):
    """``(clusters.json, papers.json)`` paths beside a ``[prefix]signatures.json``."""
    sig_path = Path(sig_path)
    prefix = sig_path.name[: -len("signatures.json")]
    return sig_path.with_name(prefix + "clusters.json"), sig_path.with_name(prefix + "papers.json")


def _companion(path, col):
    """Read an optional companion file; a broken one is skipped and named (fatal if strict)."""
    if not path.is_file():
        return None
    try:
        data = read_json(path)
    except MentionFormatError as exc:
        if col.strict:
            raise
        col.skip_file(path, exc.record, exc.reason)
        return None
    col.read_file(path)
    return data


def _gold(cl_path, clusters, col):
    gold = {}
    if clusters is None:
        return gold
    if not isinstance(clusters, dict):
        col.skip_file(cl_path, 1, "expected a JSON object {cluster_id: cluster}; no gold read")
        return gold
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
    return gold


def _person(info, keys=("first", "middle", "last", "suffix")):
    return " ".join(text(info.get(k)) for k in keys if text(info.get(k)))


def load_s2and(sig_path, col):
    """Read an S2AND signatures file and its companions into ``col``."""
    sigs = read_json(sig_path)
    if not isinstance(sigs, dict):
        raise MentionFormatError(f"expected a JSON object {{signature_id: signature}}, got {type(sigs).__name__}",
                                 path=sig_path)
    col.read_file(sig_path)
    cl_path, pa_path = s2and_companions(sig_path)
    gold = _gold(cl_path, _companion(cl_path, col), col)
    papers = _companion(pa_path, col)
    if papers is not None and not isinstance(papers, dict):
        col.skip_file(pa_path, 1, "expected a JSON object {paper_id: paper}; papers ignored")
        papers = None
    papers = papers or {}
    # coauthors from papers.json if present, else from the other signatures of the same paper
    by_paper = {}
    for sid, sig in sigs.items():
        if isinstance(sig, dict) and isinstance(sig.get("author_info"), dict) and text(sig.get("paper_id")):
            by_paper.setdefault(text(sig.get("paper_id")), []).append(sid)
    for sid, sig in sigs.items():
        if not isinstance(sig, dict) or not isinstance(sig.get("author_info"), dict):
            col.skip(sig_path, sid, "signature is not an object with an author_info object")
            continue
        info = sig["author_info"]
        name = _person(info)
        if not text(info.get("last")) and not name:
            col.skip(sig_path, sid, "author_info has no name (first/middle/last all empty)")
            continue
        block = text(info.get("block")) or name_key(name)
        affs = info.get("affiliations") or []
        affs = [affs] if isinstance(affs, str) else affs if isinstance(affs, list) else []
        affs = [text(a) for a in affs if text(a)]
        paper_id = text(sig.get("paper_id"))
        paper = papers.get(paper_id)
        title = venue = abstract = ""
        year, references, keywords = None, [], []
        if isinstance(paper, dict):
            title, venue = text(paper.get("title")), text(paper.get("venue") or paper.get("journal_name"))
            abstract = text(paper.get("abstract"))
            year = set_year(col, pa_path, paper_id, paper.get("year"))
            refs = paper.get("references")
            references = [text(r) for r in refs] if isinstance(refs, list) else []
            kws = paper.get("keywords")
            keywords = split_keywords(kws if isinstance(kws, list) else [kws])
            pos = info.get("position")
            authors = paper.get("authors") if isinstance(paper.get("authors"), list) else []
            coauthors = [a.get("author_name", "") for a in authors if isinstance(a, dict) and a.get("position") != pos]
        else:
            coauthors = [_person(sigs[o]["author_info"], ("first", "middle", "last"))
                         for o in by_paper.get(paper_id, []) if o != sid]
        col.add(sig_path, sid, mention_id=str(sig.get("signature_id", sid)), block=block, name=name,
                coauthors=coauthors, title=title, venue=venue, year=year, affiliation="; ".join(affs),
                gold=gold.get(str(sid)), abstract=abstract, keywords=keywords, affiliations=affs,
                paper_id=paper_id, references=references)
    unknown = set(gold) - set(map(str, sigs))
    if unknown:
        first = min(unknown)
        col.note(cl_path, f"signature {first}", f"{len(unknown)} signature id(s) in {cl_path.name} are not in "
                                                f"{Path(sig_path).name} (e.g. {first!r})")
