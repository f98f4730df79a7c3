"""Which files of an input path are read, as which format, and which are ignored (private module)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from coref.exceptions import MentionFormatError, MixedFormatsError
from coref.io.crossref import CROSSREF_GOLD
from coref.schema import FORMATS

# extension (lower case) -> format; ".json" belongs to S2AND / Crossref folders only
DATA_EXTENSIONS = {".xml": "aminer", ".txt": "han", ".jsonl": "crossref", ".csv": "csv", ".parquet": "parquet",
                   ".pq": "parquet", ".json": "json"}
_DOC_STEMS = {"readme", "license", "licence", "sources", "notice", "changelog", "changes", "citation", "authors",
              "copying", "manifest"}
_FORMAT_FILES = {"aminer": "*.xml", "han": "*.txt", "csv": "*.csv", "parquet": "*.parquet / *.pq",
                 "crossref": "*.jsonl (+ gold_clusters.json)", "s2and": "[prefix]signatures.json (+ clusters.json, "
                 "papers.json)"}


@dataclass
class Plan:
    """What to read: the format, the data files in order, and (path, reason) of every other entry."""

    format: str
    files: list
    ignored: list


def _shown(paths, limit=4):
    names = [p.name for p in paths]
    return ", ".join(names[:limit]) + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


def guess_file_format(path):
    """Format of a single file from its name (case-insensitive extension)."""
    path = Path(path)
    if path.name.lower().endswith("signatures.json"):
        return "s2and"
    fmt = DATA_EXTENSIONS.get(path.suffix.lower())
    if fmt is None or fmt == "json":
        raise MentionFormatError(f"cannot guess the format from the name {path.name!r}; pass format= one of "
                                 f"{FORMATS}", path=path)
    return fmt


def plan_folder(folder, format=None):
    """Classify every entry of ``folder``: data files of one format, or ignored with a reason.

    Raises
    ------
    MixedFormatsError
        If data files of more than one format are present, or ``format`` names
        another format than the folder holds (the message lists the files).
    MentionFormatError
        If the folder holds no data file at all.
    """
    folder = Path(folder)
    entries = sorted(folder.iterdir(), key=lambda p: p.name)
    ignored, data = [], {}
    for p in entries:
        name = p.name
        if p.is_dir():
            ignored.append((p, "a folder (sub-folders are not searched)"))
        elif name.startswith("."):
            ignored.append((p, "hidden file"))
        elif not p.is_file():
            ignored.append((p, "not a regular file"))
        elif p.stem.lower() in _DOC_STEMS or p.stem.lower().split(".")[0] in _DOC_STEMS:
            ignored.append((p, "documentation, not data"))
        elif p.suffix.lower() not in DATA_EXTENSIONS:
            ext = p.suffix or "(none)"
            ignored.append((p, f"extension {ext} is not a mention format (read: .xml, .txt, .csv, .parquet, .pq, "
                               f".jsonl, signatures.json)"))
        else:
            data.setdefault(DATA_EXTENSIONS[p.suffix.lower()], []).append(p)
    json_files = data.pop("json", [])
    sigs = [p for p in json_files if p.name.lower().endswith("signatures.json")]
    if sigs:
        fmt = "s2and"
        companions = set()
        for s in sigs:
            prefix = s.name[: -len("signatures.json")]
            companions |= {(prefix + "clusters.json").lower(), (prefix + "papers.json").lower()}
        files = sigs
        for p in json_files:
            if p in sigs:
                continue
            if p.name.lower() in companions:
                continue  # read by the S2AND loader beside its signatures file
            ignored.append((p, "not an S2AND file this loader reads ([prefix]signatures.json, clusters.json, "
                               "papers.json)"))
        others = data
    elif "crossref" in data:
        fmt = "crossref"
        files = data.pop("crossref")
        for p in json_files:
            if p.name.lower() == CROSSREF_GOLD:
                continue  # the gold, read by the Crossref loader
            why = "train/dev/test splits of the Crossref set; not read" if p.name.lower() == "splits.json" else \
                f"not a Crossref file this loader reads (*.jsonl, {CROSSREF_GOLD})"
            ignored.append((p, why))
        others = data
    else:
        if json_files:
            data["json"] = json_files
        if not data:
            listed = "; ".join(f"{p.name}: {why}" for p, why in ignored[:5])
            raise MentionFormatError(f"no mention files in this folder (expected {', '.join(_FORMAT_FILES.values())})"
                                     + (f"; ignored: {listed}" if listed else ""), path=folder)
        fmt = sorted(data)[0] if len(data) == 1 else None
        files = data.get(fmt, [])
        others = {k: v for k, v in data.items() if k != fmt}
    if others:
        groups = {fmt: files, **others} if fmt is not None else data
        listing = "; ".join(f"{k if k != 'json' else 'JSON (no signatures.json)'}: {_shown(v)}"
                            for k, v in sorted(groups.items()))
        raise MixedFormatsError(f"the folder mixes data formats ({listing}); reading one of them would leave the "
                                "others out silently: put each format in its own folder, or remove the extra files",
                                path=folder)
    if fmt == "json":
        raise MentionFormatError(f"JSON files without a signatures.json ({_shown(files)}): not an S2AND folder; "
                                 "a Crossref folder needs *.jsonl mention files", path=folder)
    if format is not None and format != fmt:
        raise MixedFormatsError(f"format={format!r} was asked, but this folder holds {fmt} files ({_shown(files)})",
                                path=folder)
    return Plan(fmt, files, ignored)
