"""AMiner (Arnetminer) name-disambiguation XML: one file per ambiguous name (Tang et al. 2012).

A file is ``<person><FullName/>...`` then one ``<publication>`` per mention with
``<title>``, ``<year>``, ``<authors>`` (comma-separated, including the ambiguous
name itself), ``<jconf>`` (venue), ``<id>`` (paper id), ``<label>`` (gold author
index within this file), ``<organization>`` (affiliation or ``null``) and, in
newer dumps, ``<abstract>`` and keywords, written either as one ``<keyword>``
element per keyword, or as one ``<keyword>`` / ``<keywords>`` element holding a
``;`` or ``,``-separated list, or as ``<keywords><keyword/>...</keywords>``.

The files in the wild are not well-formed XML. Before parsing, in this order:

1. the bytes are decoded with the encoding of the byte-order mark, else the one
   the XML declaration names (``<?xml ... encoding="ISO-8859-1"?>``), else UTF-8;
2. characters XML 1.0 forbids (C0 controls other than tab, LF and CR, such as
   the form feed ``\\x0c`` found in abstracts; U+FFFE, U+FFFF) and character
   references to them (``&#12;``) are removed;
3. stray ``&`` are escaped and HTML / ISO 8879 named entities replaced by their
   characters;
4. a stray ``<`` that cannot start markup (followed by a space, a digit, ``=``
   ..., as in ``p < 0.05`` or ``n<=10`` in an abstract) is escaped;

each change counted as a repair naming the file and line. The result is parsed
with :mod:`defusedxml` with DTDs forbidden (no entity expansion, no external
entities); a file declaring a DTD or entities is refused.
"""
from __future__ import annotations

import codecs
import functools
import html.entities
import re
from pathlib import Path

from coref.blocking import name_key, normalize_name
from coref.exceptions import MentionFormatError
from coref.io._cells import set_year, split_keywords, text

__all__ = ["read_xml", "load_aminer_file"]

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
_DTD = re.compile(r"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)
# XML 1.0 Char production: everything except these (surrogates cannot survive a strict decode)
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_STRAY_LT = re.compile(r"<(?![A-Za-z_:/!?\u00C0-\U0010FFFF])")
_DECL = re.compile(rb"\A\s*<\?xml\b[^>]*?\bencoding\s*=\s*[\"']([A-Za-z][A-Za-z0-9._:-]*)[\"']")
_DECL_TEXT = re.compile(r"\A\s*<\?xml\b.*?\?>", re.DOTALL)
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def _illegal_code_point(code):
    return (code < 0x20 and code not in (0x9, 0xA, 0xD)) or code in (0xFFFE, 0xFFFF) or 0xD800 <= code <= 0xDFFF \
        or code > 0x10FFFF


def _decode(raw, path):
    """Text of an XML file: BOM, else the declared encoding, else UTF-8 (XML 1.0, 4.3.3)."""
    for bom, codec in _BOMS:
        if raw.startswith(bom):
            name, declared = codec, "its byte-order mark"
            break
    else:
        m = _DECL.match(raw)
        if m is None:
            name, declared = "utf-8", None
        else:
            name, declared = m.group(1).decode("ascii"), "its XML declaration"
    try:
        codecs.lookup(name)
    except LookupError:
        raise MentionFormatError(f"the XML declaration names an unknown encoding {name!r}", path=path,
                                 record=1) from None
    try:
        return raw.decode(name)
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        label = "UTF-8" if codecs.lookup(name).name == "utf-8" else name
        origin = f" (the encoding {declared} names)" if declared else " (no encoding declared, so UTF-8)"
        hint = "; if the file is Latin-1, declare it: <?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>" \
            if declared is None else ""
        raise MentionFormatError(f"not valid {label}{origin} at byte {exc.start}: {exc.reason}{hint}",
                                 path=path, record=line) from None


def _lines_of(text_, positions):
    """1-based line numbers of sorted character offsets."""
    lines, line, last = [], 1, 0
    for pos in positions:
        line += text_.count("\n", last, pos)
        last = pos
        lines.append(line)
    return lines


def _remove_illegal(text_):
    """Remove XML-illegal characters; returns (text, {line: [code points]})."""
    found = [(m.start(), ord(m.group(0))) for m in _ILLEGAL.finditer(text_)]
    if not found:
        return text_, {}
    by_line = {}
    for line, (_, code) in zip(_lines_of(text_, [p for p, _ in found]), found):
        by_line.setdefault(line, []).append(code)
    return _ILLEGAL.sub("", text_), by_line


def _repair_references(text_):
    """Escape stray ``&``; replace HTML/ISO named entities; drop references to illegal characters.

    Returns the repaired text, the lines with stray ``&`` escaped, and
    ``{line: [code points]}`` of the character references dropped.
    """
    stray, dropped = [], []

    def fix(m):
        ref = m.group(1)
        if ref is None:
            stray.append(m.start())
            return "&amp;"
        if ref.startswith("#"):
            try:
                code = int(ref[2:-1], 16) if ref[1] in "xX" else int(ref[1:-1])
            except ValueError:
                code = -1
            if code < 0 or code > 0x10FFFF:
                stray.append(m.start())
                return "&amp;" + ref
            if _illegal_code_point(code):
                dropped.append((m.start(), code))
                return ""
            return m.group(0)
        if ref in _XML_PREDEFINED:
            return m.group(0)
        char = html.entities.html5.get(ref) or _ISO_GREEK.get(ref[:-1])
        if char is not None:
            return "".join(_XML_ESCAPE.get(ch, ch) for ch in char)
        stray.append(m.start())
        return "&amp;" + ref

    out = _AMP.sub(fix, text_)
    stray_lines = _lines_of(text_, stray)
    by_line = {}
    for line, (_, code) in zip(_lines_of(text_, [p for p, _ in dropped]), dropped):
        by_line.setdefault(line, []).append(code)
    return out, stray_lines, by_line


def _describe_removed(by_line, limit=10):
    codes = {}
    for cs in by_line.values():
        for c in cs:
            codes[c] = codes.get(c, 0) + 1
    n = sum(codes.values())
    kinds = ", ".join(f"U+{c:04X} x{k}" for c, k in sorted(codes.items()))
    lines = sorted(by_line)
    shown = ", ".join(map(str, lines[:limit])) + (f", ... ({len(lines) - limit} more lines)" if len(lines) > limit
                                                   else "")
    return n, kinds, f"line{'s' if len(lines) > 1 else ''} {shown}"


def read_xml(path, col=None):
    """Parse one AMiner XML file hardened, after the safe repairs; returns the root element.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    col : Collector or None
        Where the repairs are recorded (``None``: not recorded).

    Returns
    -------
    xml.etree.ElementTree.Element
        The root element.

    Raises
    ------
    MentionFormatError
        If the file declares a DTD or entities, is not valid in its encoding,
        or is still not well-formed after the repairs (``record`` is the line).
    """
    import defusedxml.ElementTree as DET
    from defusedxml import DefusedXmlException
    from xml.etree.ElementTree import ParseError

    raw = Path(path).read_bytes()
    text_ = _decode(raw, path)
    m = _DTD.search(text_)
    if m is not None:
        line = text_.count("\n", 0, m.start()) + 1
        raise MentionFormatError(
            "refused: the file declares a DTD or entities (<!DOCTYPE / <!ENTITY); entity expansion and external "
            "entities are not allowed (possible 'billion laughs' or XXE attack)", path=path, record=line)
    text_, removed = _remove_illegal(text_)
    text_, stray_lines, dropped = _repair_references(text_)
    lt = [m.start() for m in _STRAY_LT.finditer(text_)]
    if lt:
        lt_lines = _lines_of(text_, lt)
        text_ = _STRAY_LT.sub("&lt;", text_)
    for line, codes in dropped.items():
        removed.setdefault(line, []).extend(codes)
    if col is not None:
        if removed:
            n, kinds, where = _describe_removed(removed)
            col.repair(path, min(removed), f"removed {n} illegal XML control character(s) ({kinds}) on {where}")
        if stray_lines:
            col.repair(path, stray_lines[0], f"escaped {len(stray_lines)} stray '&'")
        if lt:
            col.repair(path, lt_lines[0], f"escaped {len(lt)} stray '<'")
    # the text is decoded already: drop the declaration (its encoding no longer applies), keep the line count
    text_ = _DECL_TEXT.sub(lambda d: "\n" * d.group(0).count("\n"), text_, count=1)
    try:
        return DET.fromstring(text_, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as exc:
        raise MentionFormatError(f"refused by the hardened XML parser: {exc!r}", path=path) from None
    except ParseError as exc:
        line = exc.position[0] if getattr(exc, "position", None) else None
        hint = " (the file looks truncated)" if "no element found" in str(exc) or "unclosed token" in str(exc) else ""
        raise MentionFormatError(f"malformed XML: {exc}{hint}", path=path, record=line) from None


_normalize = functools.lru_cache(maxsize=1 << 16)(normalize_name)  # author names repeat across files
_key = functools.lru_cache(maxsize=1 << 16)(name_key)


def _remove_own_name(authors, full_name):
    """Split the author list into (own name as printed, coauthors), own name removed once."""
    target = _normalize(full_name)
    norm = [_normalize(a) for a in authors]
    for i, a in enumerate(norm):
        if a == target:
            return authors[i], authors[:i] + authors[i + 1:]
    key = _key(full_name)
    for i, a in enumerate(authors):
        if _key(a) == key:
            return authors[i], authors[:i] + authors[i + 1:]
    tokens = target.replace("-", " ").split()
    squash = "".join(tokens)
    for i, a in enumerate(norm):  # "Jie Tang" vs "Tang Jie" / "Jie-Tang"
        t = a.replace("-", " ").split()
        if sorted(t) == sorted(tokens) or "".join(t) == squash:
            return authors[i], authors[:i] + authors[i + 1:]
    return None, list(authors)


def _all_text(elem):
    return " ".join("".join(elem.itertext()).split())


def _missing_if_null(value):
    return "" if value.lower() == "null" else value


def _fields(pub):
    """{lower-case tag: [text, ...]} of a publication's children; <keywords><keyword/></keywords> flattened."""
    out = {}
    for child in pub:
        if not isinstance(child.tag, str):
            continue
        tag = child.tag.lower()
        if tag == "keywords" and len(child):
            for kw in child:
                out.setdefault("keyword", []).append(_all_text(kw))
            continue
        out.setdefault(tag, []).append(_all_text(child))
    return out


def load_aminer_file(path, col):
    """Read one AMiner file into ``col`` (rows, repairs, notes); raises MentionFormatError if unreadable."""
    root = read_xml(path, col)
    stem = Path(path).stem
    full = root.find("FullName")
    full_name = (_all_text(full) if full is not None else "") or stem.replace("_", " ")
    n_unmatched, first_unmatched = 0, None
    for index, pub in enumerate(root.iter("publication")):
        record = f"publication {index + 1}"
        f = _fields(pub)

        def one(tag):
            return f[tag][0] if tag in f else ""

        authors = [a.strip() for a in one("authors").split(",") if a.strip()]
        _, coauthors = _remove_own_name(authors, full_name)
        if len(coauthors) == len(authors):
            n_unmatched += 1
            first_unmatched = first_unmatched or record
        label = one("label")
        org = _missing_if_null(one("organization"))
        keywords = split_keywords(_missing_if_null(t) for t in f.get("keyword", []) + f.get("keywords", []))
        col.add(path, record, mention_id=f"{stem}/{index}", block=stem, name=full_name, coauthors=coauthors,
                title=one("title"), venue=_missing_if_null(one("jconf")),
                year=set_year(col, path, record, one("year")), affiliation=org,
                gold=f"{stem}/{label}" if label else None,
                abstract=_missing_if_null(one("abstract")), keywords=keywords,
                affiliations=[org] if text(org) else [], paper_id=one("id"))
    if n_unmatched:
        col.note(path, first_unmatched, f"{n_unmatched} publication(s) do not list {full_name!r} among the authors; "
                             "all authors kept as coauthors")
    col.read_file(path)
