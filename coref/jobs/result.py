"""What the jobs return: frozen dataclasses, readable like the summary dicts they replace."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from coref.outputs import MANIFEST

__all__ = ["SummaryAccess", "ClusteringResult"]


class SummaryAccess:
    """``result[key]`` and ``key in result`` read ``result.summary`` (the dict jobs returned before)."""

    def __getitem__(self, key):
        return self.summary[key]

    def __contains__(self, key):
        return key in self.summary


@dataclass(frozen=True)
class ClusteringResult(SummaryAccess):
    """What ``coref predict`` / ``coref add`` wrote.

    Attributes
    ----------
    out : pathlib.Path
        The output directory.
    paths : dict of {str: pathlib.Path}
        Every file of the output listed in its manifest, by name (manifest.json included).
    summary : dict
        The content of summary.json, plus ``manifest`` (the manifest written last).
    """

    out: Path
    paths: dict
    summary: dict

    @classmethod
    def from_summary(cls, out, summary):
        """The result of the output directory ``out`` whose summary (with its manifest) is ``summary``."""
        out = Path(out)
        paths = {name: out / name for name in summary["manifest"].get("files", {})}
        paths["manifest"] = out / MANIFEST
        return cls(out=out, paths=paths, summary=summary)
