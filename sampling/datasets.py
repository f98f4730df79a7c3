"""The data shipped with the project, by name, from any working directory.

Two collections live under the data root that :func:`sampling.utils.data.data_path`
finds (``$RACING_INFERENCE_DATA``, the checkout's ``data/``, ``./data`` or
``<prefix>/share/racing-inference/data`` after ``pip install .``):

* ``uai/``: graphical models in the UAI format (pedigrees, a Bayesian network with
  evidence), named by file stem: ``uai_path("pedigree1")``;
* ``returns/``: real price series for ``sampling arch``, named by file name without its
  extensions: ``returns_path("sp500_daily_arch")``.

Examples
--------
>>> from sampling import datasets
>>> "pedigree1" in datasets.list_uai()
True
>>> datasets.uai_path("pedigree1").name
'pedigree1.uai'
>>> from sampling.bounds import read_uai
>>> read_uai(datasets.uai_path("pedigree1")).n_vars > 0
True
"""
from __future__ import annotations

import os
from pathlib import Path

from sampling.utils.data import data_path

__all__ = ["list_uai", "uai_path", "uai_evidence_path", "resolve_uai", "list_returns", "returns_path"]

_RETURNS_SUFFIXES = (".csv.gz", ".csv", ".txt")


def _by_name(files, name, suffixes, what):
    """``files[name]`` with one of ``suffixes`` stripped from ``name``; FileNotFoundError
    listing the names of ``what`` otherwise."""
    key = str(name)
    for suf in suffixes:
        if key.endswith(suf):
            key = key[:-len(suf)]
            break
    if key in files:
        return files[key]
    raise FileNotFoundError(f"no shipped {what} named {name!r}; shipped: {', '.join(sorted(files))}")


def _uai_files():
    """``{name: path}`` of the shipped ``.uai`` files, ``name`` the file stem."""
    root = data_path("uai")
    return {p.name[:-len(".uai")]: p for p in sorted(root.rglob("*.uai"))}


def list_uai():
    """Names of the shipped UAI models, sorted (e.g. ``["BN_0", "pedigree1", ...]``).

    Raises
    ------
    FileNotFoundError
        If no data root holds ``uai/`` (the message lists where it looked).
    """
    return sorted(_uai_files())


def uai_path(name):
    """Path of the shipped UAI model ``name`` (``"pedigree1"``; a ``.uai`` suffix is allowed).

    Parameters
    ----------
    name : str

    Returns
    -------
    pathlib.Path
        The ``.uai`` file (its evidence, if any: :func:`uai_evidence_path`).

    Raises
    ------
    FileNotFoundError
        If no shipped model has that name; the message lists the shipped names.
    """
    return _by_name(_uai_files(), name, (".uai",), "UAI model")


def uai_evidence_path(name):
    """Path of the evidence file (``.uai.evid``) shipped with model ``name``, or None.

    Raises
    ------
    FileNotFoundError
        If no shipped model has that name.
    """
    p = uai_path(name)
    evid = p.with_name(p.name + ".evid")
    return evid if evid.exists() else None


def resolve_uai(path_or_name):
    """A UAI model file given as a path, else as the name of a shipped model.

    Parameters
    ----------
    path_or_name : str or os.PathLike
        An existing file, or a name of :func:`list_uai` (``"pedigree1"``).

    Returns
    -------
    pathlib.Path
        ``path_or_name`` itself when that file exists, else the shipped model's file.

    Raises
    ------
    FileNotFoundError
        If it is neither an existing file nor a shipped name; the message says both and
        lists the shipped names.
    """
    p = Path(os.fspath(path_or_name))
    if p.exists():
        return p
    try:
        shipped = ", ".join(list_uai())
    except FileNotFoundError:
        shipped = "none found (set RACING_INFERENCE_DATA to the project's data/ folder)"
    if p.parent == Path("."):  # a bare name: a shipped model?
        try:
            return uai_path(p.name)
        except FileNotFoundError:
            pass
    raise FileNotFoundError(f"{os.fspath(path_or_name)!r} is neither a file nor the name of a shipped UAI "
                            f"model; shipped: {shipped}")


def _returns_files():
    out = {}
    for p in sorted(data_path("returns").iterdir()):
        for suf in _RETURNS_SUFFIXES:
            if p.name.endswith(suf):
                out[p.name[:-len(suf)]] = p
                break
    return out


def list_returns():
    """Names of the shipped price series (file names without their extensions), sorted."""
    return sorted(_returns_files())


def returns_path(name):
    """Path of the shipped price series ``name`` (with or without its extensions).

    Raises
    ------
    FileNotFoundError
        If no shipped series has that name; the message lists the shipped names.
    """
    return _by_name(_returns_files(), name, _RETURNS_SUFFIXES, "price series")
