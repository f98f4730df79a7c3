"""Han / LBD DBLP collections: ``;``-separated ``rec_id;cluster_id;author_name;coauthors;title;venue;year``.

Han et al. (JCDL 2004); Cota et al. (JASIST 2010). No header, no quoting; year
0 = unknown; the files of one group (``dblp_agupta_train_f0.txt``,
``dblp_agupta_test_f0.txt``) form one block (``"a gupta"``). The format carries
no abstract, keywords or identifiers: those columns stay missing.
"""
from __future__ import annotations

import re
from pathlib import Path

from coref.exceptions import MentionFormatError
from coref.io._cells import read_utf8, year_value

__all__ = ["han_blocks", "load_han_file"]

_HAN_FILE = re.compile(r"^(?P<group>.+?)_(?:train|test)(?:_f\d+)?$")
_HAN_GROUP = re.compile(r"^(?:[A-Za-z0-9]+_)?(?P<initial>[a-z])(?P<last>[a-z]+)$")


def han_group(path):
    """Group of a file: its stem without ``_train`` / ``_test`` / ``_fN``."""
    stem = Path(path).stem
    m = _HAN_FILE.match(stem)
    return m.group("group") if m else stem


def _han_block(group):
    m = _HAN_GROUP.match(group)
    return f"{m.group('initial')} {m.group('last')}" if m else group


def han_blocks(files):
    """{group: block} for the files read together; two collections with one ambiguous name stay apart."""
    groups = {han_group(f) for f in files}
    blocks = {g: _han_block(g) for g in groups}
    values = list(blocks.values())
    clash = {b for b in values if values.count(b) > 1}
    for g in groups:
        if blocks[g] in clash:
            blocks[g] = g
    return blocks


def load_han_file(path, col, blocks):
    """Read one Han file into ``col``; raises MentionFormatError if the file is unreadable."""
    group, stem = han_group(path), Path(path).stem
    lines = read_utf8(path).splitlines()
    block = blocks.get(group, _han_block(group))
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
            y = year_value(year)
        except ValueError as exc:
            col.skip(path, lineno, f"{exc} (7th field)")
            continue
        if len(parts) > 7:
            col.note(path, lineno, f"{len(parts)} fields; the extra ';' were kept in the title")
        col.add(path, lineno, mention_id=f"{stem}/{rec_id}", block=block, name=name,
                coauthors=coauthors.split(","), title=title, venue=venue, year=y,
                gold=f"{group}/{cluster_id}" if cluster_id else None)
