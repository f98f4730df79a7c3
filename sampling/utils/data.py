"""Locate the real data shipped with the project (``data/`` at the repository top).

Search order: ``$RACING_INFERENCE_DATA``; ``data/`` beside the source tree (a
checkout or editable install); ``./data`` in the working directory; and
``<prefix>/share/racing-inference/data`` where ``pip install .`` puts it.
"""
import os
import sys
from pathlib import Path


def data_dirs():
    """Candidate data roots, most specific first."""
    dirs = []
    env = os.environ.get("RACING_INFERENCE_DATA")
    if env:
        dirs.append(Path(env))
    dirs.append(Path(__file__).resolve().parents[2] / "data")
    dirs.append(Path.cwd() / "data")
    for prefix in dict.fromkeys([sys.prefix, sys.base_prefix, getattr(sys, "exec_prefix", sys.prefix)]):
        dirs.append(Path(prefix) / "share" / "racing-inference" / "data")
    return dirs


def data_path(*parts):
    """Path of a shipped data file or folder, e.g. ``data_path("aminer_na")``.

    Raises
    ------
    FileNotFoundError
        If no data root holds it; the message lists every place searched.
    """
    tried = []
    for root in data_dirs():
        p = root.joinpath(*parts)
        if p.exists():
            return p
        tried.append(str(p))
    raise FileNotFoundError(
        f"shipped data {'/'.join(parts)!r} not found; looked in: " + ", ".join(tried)
        + " (set RACING_INFERENCE_DATA to the project's data/ folder)"
    )
