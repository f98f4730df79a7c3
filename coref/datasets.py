"""The data shipped with the project, reachable from any working directory.

>>> from coref import datasets
>>> datasets.data_path("aminer_na").is_dir()          # doctest: +SKIP
True
>>> df = datasets.load_aminer()                       # 7,026 mentions, 108 blocks  # doctest: +SKIP
"""
from __future__ import annotations

from pathlib import Path

from coref.io import load_mentions
from sampling.utils.data import data_path as _shipped_path

__all__ = ["data_path", "load_aminer", "available", "default_model_path", "DEFAULT_MODEL"]

#: The shipped default model, trained on data/aminer_na (``python -m coref fit --data data/aminer_na
#: --model coref/models/default`` regenerates it).
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


def default_model_path():
    """Directory of the shipped default model (trained on ``aminer_na``)."""
    return DEFAULT_MODEL
