"""Checkpoints of an anytime bounds run, so that a long :func:`sampling.bounds.run` can resume.

A checkpoint is one JSON file, written atomically, holding what cannot be recomputed
cheaply: the sampler state (the running sums of Eq. 13-14, the random generator state,
the trace so far, the elapsed time) and how to rebuild the rest. The weighted mini-bucket
is rebuilt from its elimination order, i-bound and number of tightening passes (the
passes are deterministic), and the AND/OR search tree by replaying the same number of
expansions (the upper-priority search does not depend on the samples; Alg. 1 of Lou,
Dechter & Ihler 2017). Both rebuilds are checked against the bounds saved in the file.
The rebuild time is not charged to the run.
"""
from __future__ import annotations

import hashlib
import json
import math

import numpy as np

from .._atomic import atomic_write_text

__all__ = ["FORMAT", "model_fingerprint", "save_checkpoint", "load_checkpoint"]

FORMAT = "sampling.bounds.checkpoint/1"


def model_fingerprint(model):
    """SHA-256 (hex) of the model's cardinalities, factor scopes and log tables."""
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(model.cards, dtype=np.int64).tobytes())
    for f in model.factors:
        h.update(np.asarray(f.scope, dtype=np.int64).tobytes())
        h.update(b"|")
        h.update(np.ascontiguousarray(f.log_values, dtype=np.float64).tobytes())
    return h.hexdigest()


def save_checkpoint(path, state):
    """Write ``state`` (a JSON-serialisable dict) to ``path`` atomically.

    Non-finite floats are written as ``Infinity`` / ``NaN`` (Python's JSON dialect).
    """
    atomic_write_text(path, json.dumps(dict(state, format=FORMAT), allow_nan=True))


def load_checkpoint(path, expected):
    """Read a checkpoint and check that it belongs to this run.

    Parameters
    ----------
    path : str or os.PathLike
    expected : dict
        Fields that must equal the file's: ``fingerprint`` (see :func:`model_fingerprint`),
        ``method`` and each key of ``settings``.

    Returns
    -------
    dict

    Raises
    ------
    ValueError
        If the file is not a checkpoint of this format, or was written for another model
        or with other settings (the message names the file and the field).
    """
    try:
        with open(path, encoding="utf-8") as fh:
            state = json.load(fh)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not a readable checkpoint (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        got = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"{path}: not a checkpoint of format {FORMAT!r} (got {got!r})")
    if state.get("fingerprint") != expected["fingerprint"]:
        raise ValueError(f"{path}: the checkpoint was written for another model "
                         "(cardinalities, scopes or tables differ)")
    if state.get("method") != expected["method"]:
        raise ValueError(f"{path}: the checkpoint is of method {state.get('method')!r}, "
                         f"not {expected['method']!r}")
    saved = state.get("settings", {})
    for key, value in expected["settings"].items():
        if not _same(saved.get(key), value):
            raise ValueError(f"{path}: the checkpoint has {key}={saved.get(key)!r}, this run "
                             f"{key}={value!r}; resume with the same setting or use another file")
    return state


def _same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        try:
            return float(a) == float(b) or (math.isnan(float(a)) and math.isnan(float(b)))
        except (TypeError, ValueError):
            return False
    return a == b
