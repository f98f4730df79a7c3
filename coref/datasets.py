"""The data shipped with the project, reachable from any working directory.

>>> from coref import datasets
>>> datasets.data_path("aminer_na").is_dir()          # doctest: +SKIP
True
>>> df = datasets.load_aminer()                       # 7,026 mentions, 108 blocks  # doctest: +SKIP
>>> df = datasets.load_labeled()     # + aminer_dblp_dev: 10,202 mentions, 439 blocks  # doctest: +SKIP
"""
from __future__ import annotations

from pathlib import Path

from coref.io import load_mentions
from sampling.utils.data import data_path as _shipped_path

__all__ = ["data_path", "load_aminer", "load_labeled", "available", "default_model_path", "DEFAULT_MODEL",
           "LABELED_SETS"]

#: The shipped labeled sets, in the order :func:`load_labeled` joins them.
LABELED_SETS = ("aminer_na", "aminer_dblp_dev")

#: The shipped default model, trained on every shipped labeled set (:func:`load_labeled`);
#: ``python -m coref fit --model coref/models/default`` (no ``--data``) regenerates it.
DEFAULT_MODEL = Path(__file__).resolve().parent / "models" / "default"


def data_path(*parts):
    """Path of a shipped data file or folder, e.g. ``data_path("aminer_na")``.

    Looks in ``$RACING_INFERENCE_DATA``, ``data/`` beside the source tree, ``./data`` and
    ``<prefix>/share/racing-inference/data`` (where ``pip install .`` puts it).

    Raises
    ------
    FileNotFoundError
        If no data root holds it; the message lists every place searched.
    """
    return _shipped_path(*parts)


def available():
    """Names of the shipped coref data sets (folders found under the data root)."""
    try:
        return ["aminer_na"] if data_path("aminer_na").is_dir() else []
    except FileNotFoundError:
        return []


def load_aminer(*, return_report=False):
    """The shipped AMiner name-disambiguation set (108 ambiguous names, 7,026 mentions, gold labels).

    Returns
    -------
    pandas.DataFrame
        The mention schema of :func:`coref.load_mentions`; ``block`` = the ambiguous name.
    LoadReport
        Only with ``return_report``.
    """
    return load_mentions(data_path("aminer_na"), format="aminer", return_report=return_report)


def load_labeled(*, return_report=False):
    """Every shipped labeled set, joined: ``aminer_na`` and ``aminer_dblp_dev``.

    ``aminer_dblp_dev`` (338 names, 3,176 mentions with abstracts and keywords; its
    SOURCES.md) shares six names with ``aminer_na`` (e.g. ``Bing_Liu``) but not their
    people, so its ``mention_id``, ``block`` and ``gold`` are prefixed with
    ``aminer_dblp_dev:`` (every name stays its own block, every gold author its own).

    Returns
    -------
    pandas.DataFrame
        The mention schema of :func:`coref.load_mentions`, ``aminer_na`` rows first.
    list of LoadReport
        Only with ``return_report``: one per set.
    """
    import pandas as pd

    frames, reports = [], []
    for name in LABELED_SETS:
        df, rep = load_mentions(data_path(name), format="aminer", return_report=True)
        if name != LABELED_SETS[0]:
            for c in ("mention_id", "block", "gold"):
                df[c] = (name + ":" + df[c].astype("string")).astype(df[c].dtype)
        frames.append(df)
        reports.append(rep)
    df = pd.concat(frames, ignore_index=True)
    return (df, reports) if return_report else df


def default_model_path():
    """Directory of the shipped default model (trained on :func:`load_labeled`)."""
    return DEFAULT_MODEL
