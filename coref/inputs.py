"""Reading a command's input: mention data (path or DataFrame) and the model to use.

One place for what every command does before inference: load the mentions with
:func:`coref.io.load_mentions` (or check a DataFrame against the schema), refuse
duplicate mention ids, block mentions without a block, and describe what the loader
read, repaired, skipped and ignored (for the summary, metrics and manifest).
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pandas as pd

from coref.blocking import assign_blocks
from coref.datasets import DEFAULT_MODEL, LABELED_SETS, data_path, load_labeled
from coref.io import MENTION_COLUMNS, guess_file_format, load_mentions, warn_report
from coref.io.stream import STREAM_FORMATS, new_collector, partition_groups, plan_block_groups
from coref.model import load_model
from coref.outputs import sha256_file

__all__ = ["load_input", "stream_source", "partition_input", "resolve_model", "as_object_text", "encoder_cells", "derive_blocks", "input_paths", "DEFAULT_MODEL",
           "REQUIRED_FRAME_COLUMNS"]

#: Columns a mention DataFrame must have: the schema's, less ``gold`` (optional) and ``block``
#: (derived from ``name`` when absent, as the loaders of the command line do).
REQUIRED_FRAME_COLUMNS = tuple(c for c in MENTION_COLUMNS if c not in ("gold", "block"))


def derive_blocks(df, *, blank=True):
    """``df`` with a block for every mention, derived from its name where it has none.

    The derivation of the command line's loaders: a missing ``block`` column, or a
    missing (or, with ``blank``, empty) block of a mention, becomes the name key
    ``"<first initial> <last name>"`` (:func:`coref.blocking.name_key`, through
    :func:`coref.blocking.assign_blocks` ``method="given"``).

    Parameters
    ----------
    df : pandas.DataFrame
        Mentions with a ``name`` column; modified in place only by adding ``block``.
    blank : bool, default True
        Treat empty / whitespace-only blocks as missing.

    Returns
    -------
    pandas.DataFrame
        ``df`` itself when every mention has a block, else a copy with the derived ones.

    Raises
    ------
    ValueError
        If a block must be derived and there is no ``name`` column.
    """
    if "block" not in df.columns:
        df["block"] = pd.array([pd.NA] * len(df), dtype="string")
    missing = df["block"].isna()
    if blank and not missing.all():
        missing = missing | (df["block"].astype("string").str.strip() == "").fillna(True)
    return assign_blocks(df) if missing.any() else df


def input_paths(*, data=None, model=None, clusters=None):
    """``(option, path)`` of a command's inputs, for :func:`coref.outputs.check_out_location`.

    ``data=None`` is the shipped AMiner set and ``model=None`` the shipped model (both
    read, so both protected); a DataFrame ``data`` has no path and is left out.
    """
    pairs = [("--data", data_path("aminer_na") if data is None else data),
             ("--model", DEFAULT_MODEL if model is None else model)]
    if clusters is not None:
        pairs.append(("--clusters", clusters))
    return [(k, v) for k, v in pairs if isinstance(v, (str, os.PathLike))]


def _fmt(x):
    """``path:line: reason`` of a loader item ``(path, line or None, reason)`` (no "None" for a missing line)."""
    if not isinstance(x, (tuple, list)):
        return str(x)
    parts = [str(v) for v in x if v is not None and str(v) != ""]
    if len(parts) >= 3 and isinstance(x[1], int):
        return f"{parts[0]}:{parts[1]}: " + ": ".join(parts[2:])
    return ": ".join(parts)


def _report_desc(report, df):
    """Counts, (at most 50) examples and the files of what the loader read, repaired, skipped and ignored.

    ``log`` holds every item as one line (``kind: path:line: reason``), for the log file of
    the output (the caller pops it before writing the summary).
    """
    desc = {"n_read": int(getattr(report, "n_read", len(df))), "n_skipped": int(getattr(report, "n_skipped", 0))}
    log = []
    for name in ("skipped", "notes", "warnings", "files_read", "files_skipped", "files_ignored", "repairs"):
        v = getattr(report, name, None)
        if v is None:
            continue
        if isinstance(v, (int, float)):
            desc[f"n_{name}"] = int(v)
            continue
        v = list(v)
        desc[f"n_{name}"] = len(v)
        desc[name] = [_fmt(x) for x in v[:50]]
        if name != "files_read":
            desc[f"{name}_files"] = sorted({str(x[0]) if isinstance(x, (tuple, list)) and x else str(x) for x in v})
            if name != "repairs":   # repairs are also notes: logged once
                log += [f"{name}: {_fmt(x)}" for x in v]
    desc["log"] = log
    return desc


def load_input(data, *, format=None, strict=False, command="run", need_gold=False):
    """The mention table of a command and a description of what was read.

    Parameters
    ----------
    data : None, str, os.PathLike or pandas.DataFrame
        Mention file or directory, a loaded table, or ``None`` for the shipped AMiner set
        (``coref fit``: every shipped labeled set, :func:`coref.datasets.load_labeled`).
    format : str or None
        Loader format (validated by the caller's settings).
    strict : bool
        Make the loader fail on a bad record or file.
    command : str
        Named in error messages.
    need_gold : bool
        The table must have a ``gold`` column (``coref run`` / ``fit``).

    Returns
    -------
    df : pandas.DataFrame
        Fresh index, ``block`` as str, unique ``mention_id``.
    desc : dict
        ``path``, ``format``, ``n_read``, ``n_skipped`` and, as the loader reports them,
        ``skipped`` (file:line: reason), ``notes``, ``repairs``, ``files_read``,
        ``files_skipped``, ``files_ignored``, each with its count ``n_<name>``.

    Raises
    ------
    FileNotFoundError
        If ``data`` does not exist.
    TypeError
        For a ``data`` of another type.
    ValueError
        For an empty directory, missing columns, no mentions or duplicate mention ids.
    coref.exceptions.MentionFormatError
        From the loader.
    """
    if isinstance(data, pd.DataFrame):
        need = REQUIRED_FRAME_COLUMNS + (("gold",) if need_gold else ())
        missing = [c for c in need if c not in data.columns]
        if missing:
            raise ValueError(f"the data DataFrame lacks the mention columns {missing}; see coref.io.load_mentions")
        df = derive_blocks(data.reset_index(drop=True).copy())
        desc = {"path": "<DataFrame>", "format": "dataframe", "n_read": len(df), "n_skipped": 0}
    else:
        if data is None and command == "fit" and format in (None, "aminer"):
            # what the shipped default model is trained on: every shipped labeled set
            df, reports = load_labeled(return_report=True)
            descs = [_report_desc(r, df) for r in reports]
            desc = {"path": "the shipped labeled sets (" + " + ".join(LABELED_SETS) + ")", "format": "aminer",
                    "n_read": len(df), "n_skipped": sum(d["n_skipped"] for d in descs),
                    "log": [line for d in descs for line in d["log"]]}
            df = df.reset_index(drop=True)
        else:
            if data is None:
                path = data_path("aminer_na")
                format = format or "aminer"
            else:
                if not isinstance(data, (str, os.PathLike)):
                    raise TypeError(f"the data parameter of coref.{command} must be None, a path or a DataFrame; "
                                    f"got {type(data).__name__} instead")
                path = Path(data).expanduser()
                if not path.exists():
                    raise FileNotFoundError(f"--data {str(data)!r}: no such file or directory")
                if path.is_dir() and not any(path.iterdir()):
                    raise ValueError(f"--data {str(data)!r}: the directory is empty "
                                     "(expected mention files, e.g. AMiner XML)")
            df, report = load_mentions(path, format=format, strict=strict, return_report=True)
            desc = {"path": str(path), "format": format or "auto", **_report_desc(report, df)}
            df = df.reset_index(drop=True)
            if need_gold and "gold" not in df.columns:
                raise ValueError(f"{path}: coref {command} needs gold labels (a 'gold' column)")
    if len(df) == 0:
        raise ValueError(f"no mentions were loaded from {desc['path']!r}")
    df["mention_id"] = df["mention_id"].astype(str)
    if df["mention_id"].duplicated().any():
        dup = df.loc[df["mention_id"].duplicated(), "mention_id"].iloc[0]
        raise ValueError(f"mention ids must be unique; {dup!r} occurs more than once in {desc['path']!r}")
    df = derive_blocks(df, blank=False)
    df["block"] = df["block"].astype(str)
    return as_object_text(df), desc


def stream_source(data, format=None):
    """``(path, format)`` when ``data`` is one CSV / Parquet file (read in block groups), else None.

    A folder, another format, a DataFrame or ``None`` (the shipped set) is read whole
    by :func:`load_input`.
    """
    if not isinstance(data, (str, os.PathLike)):
        return None
    path = Path(data).expanduser()
    if not path.is_file():
        return None
    try:
        fmt = format or guess_file_format(path)
    except (ValueError, OSError):
        return None
    return (path, fmt) if fmt in STREAM_FORMATS else None


def partition_input(path, fmt, folder, *, strict=False, group_mentions, batch_rows, given_format=None):
    """Plan the block groups of a CSV / Parquet file and write each group's mentions to ``folder``.

    The same records are skipped (with their lines), the same warnings given, the same
    blocks derived as by :func:`load_input` on the file (:mod:`coref.io.stream`).

    Returns
    -------
    plan : coref.io.stream.BlockGroups
    part : coref.io.stream.Partition
    desc : dict
        As :func:`load_input`'s (``format``: ``given_format`` or ``"auto"``; ``log``: every
        loader item, one line each).

    Raises
    ------
    ValueError
        If no mention is left.
    coref.exceptions.MentionFormatError
        From the checks (``strict``: the first bad record).
    """
    plan = plan_block_groups(path, fmt, group_mentions=group_mentions, batch_rows=batch_rows)
    col = new_collector(strict)
    part = partition_groups(path, fmt, plan, folder, col, batch_rows=batch_rows)
    col.read_file(path)
    empty, report = col.finish(fmt)
    report = dataclasses.replace(report, n_read=part.n_kept)
    warn_report(report)
    desc = {"path": str(path), "format": given_format or "auto", **_report_desc(report, empty)}
    if part.n_kept == 0:
        raise ValueError(f"no mentions were loaded from {str(path)!r}")
    return plan, part, desc


def as_object_text(df):
    """``df`` with its text columns as NumPy object arrays of str (missing -> "").

    The feature encoder reads cells one by one; arrow-backed string columns make each
    access a pyarrow call, several times slower than plain Python strings.
    """
    for c in df.columns:
        if c == "gold" or not isinstance(df[c].dtype, pd.StringDtype):
            continue
        col = df[c]
        if c in ("mention_id", "block", "name", "title", "venue", "affiliation"):
            df[c] = pd.Series(col.fillna("").astype(str).to_numpy(dtype=object), index=df.index, dtype=object)
        else:  # optional text (abstract, paper_id, orcid): keep missing as None
            df[c] = pd.Series([None if v is pd.NA or v is None or v != v else str(v) for v in col],
                              index=df.index, dtype=object)
    return df


def encoder_cells(mentions):
    """``mentions`` (as read from our Parquet) with list cells as lists and text as ``str``."""
    for c in mentions.columns:
        if mentions[c].dtype == object and len(mentions) and isinstance(mentions[c].iloc[0], np.ndarray):
            mentions[c] = [list(v) if v is not None else [] for v in mentions[c]]
    return as_object_text(mentions)


def resolve_model(model_dir):
    """Load the model of ``--model DIR`` (``None``: the shipped default).

    Returns
    -------
    model : coref.model.PairwiseModel
    extra : dict
        Metadata saved with it (estimator settings).
    info : dict
        ``path``, ``default``, the SHA-256 of its model.json (for manifests) and
        ``big_block_min_n`` (blocks of at least that many mentions use the model's big-block
        weights; None without them).

    Raises
    ------
    FileNotFoundError
        If the directory (or the shipped default) is missing.
    coref.exceptions.ModelFormatError
        If the model is tampered, foreign or of another version / feature layout.
    """
    if model_dir is None:
        path = DEFAULT_MODEL
        if not (path / "manifest.json").is_file():
            raise FileNotFoundError(
                f"the shipped default model is missing ({path}); train one with "
                "`python -m coref fit --data data/aminer_na --model coref/models/default` or pass --model DIR")
    else:
        path = Path(model_dir).expanduser()
    model, extra = load_model(path)
    big = getattr(model, "big_", None)
    return model, extra, {"path": str(path), "default": model_dir is None,
                          "model_json_sha256": sha256_file(path / "model.json"),
                          # blocks of at least this many mentions use the big-block weights (None: no such weights)
                          "big_block_min_n": None if big is None else int(big.min_n)}
