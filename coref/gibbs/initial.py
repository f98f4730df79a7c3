"""The starting state of ``GibbsCoref.fit``: initial cluster keys and fixed mentions.

``fit(initial=..., fixed=...)`` starts each block from given cluster keys and never
moves the fixed mentions (``coref add``).  These helpers validate the two arrays and
turn one block's keys into labels.
"""
from __future__ import annotations

import numbers
from collections.abc import Mapping

import numpy as np
import pandas as pd

__all__ = ["check_initial", "check_fixed", "check_prior_shift", "initial_labels", "is_missing"]


def check_initial(initial, n_total):
    """Validate ``fit(initial=...)``: a 1-D object array of length n_total, or None.

    Raises
    ------
    TypeError
        If ``initial`` is not array-like or a key is unhashable.
    ValueError
        If it does not have ``n_total`` entries.
    """
    if initial is None:
        return None
    if isinstance(initial, (str, bytes)) or not hasattr(initial, "__len__"):
        raise TypeError("initial must be an array-like of cluster keys (one per row of df); "
                        f"got {type(initial).__name__}")
    arr = np.empty(len(initial), dtype=object)
    arr[:] = list(initial.to_numpy() if isinstance(initial, (pd.Series, pd.Index)) else initial)
    if len(arr) != n_total:
        raise ValueError(f"initial must have one key per row of df ({n_total}); "
                         f"got {len(arr)}")
    for k, v in enumerate(arr):
        try:
            hash(v)
        except TypeError:
            raise TypeError(f"initial[{k}] = {v!r} is not hashable; cluster keys must be "
                            "hashable (str, int, ...)") from None
    return arr


def check_fixed(fixed, n_total):
    """Validate ``fit(fixed=...)``: a 1-D bool array of length n_total, or None.

    Raises
    ------
    TypeError
        If the array is not boolean.
    ValueError
        If it is not 1-D or does not have ``n_total`` entries.
    """
    if fixed is None:
        return None
    arr = np.asarray(fixed.to_numpy() if isinstance(fixed, (pd.Series, pd.Index)) else fixed)
    if arr.ndim != 1:
        raise ValueError(f"fixed must be 1-D (one flag per row of df); got shape {arr.shape}")
    if arr.dtype != np.bool_:
        raise TypeError(f"fixed must be an array of bool (one flag per row of df); got dtype "
                        f"{arr.dtype}")
    if len(arr) != n_total:
        raise ValueError(f"fixed must have one flag per row of df ({n_total}); got {len(arr)}")
    return arr


def check_prior_shift(prior_shift):
    """Validate ``fit(prior_shift=...)``: a mapping of block name -> finite float, or None.

    Returns
    -------
    dict of str -> float or None

    Raises
    ------
    TypeError
        If it is not a mapping, or a value is not a real number.
    ValueError
        If a value is not finite (the message names the block).
    """
    if prior_shift is None:
        return None
    if not isinstance(prior_shift, Mapping):
        raise TypeError(f"prior_shift must be a mapping of block -> shift (natural-log odds); got "
                        f"{type(prior_shift).__name__}")
    out = {}
    for b, d in prior_shift.items():
        if isinstance(d, bool) or not isinstance(d, numbers.Real):
            raise TypeError(f"prior_shift[{b!r}] must be a real number; got {d!r}")
        if not np.isfinite(d):
            raise ValueError(f"prior_shift[{b!r}] must be finite; got {d!r}")
        out[str(b)] = float(d)
    return out


def initial_labels(keys):
    """Labels in [0, n) from the initial keys of one block (canonical order).

    Distinct keys get labels 0, 1, ... in order of first appearance; each missing
    key (None / NaN / pd.NA) gets a label of its own after them.
    """
    keys = np.asarray(keys, dtype=object)
    n = len(keys)
    labels = np.empty(n, np.int64)
    if pd.api.types.infer_dtype(keys, skipna=True) in ("string", "empty"):
        # str keys (and missing ones): hashed in one call, codes in order of first appearance
        missing = pd.isna(keys)
        codes, uniq = pd.factorize(keys[~missing])
        labels[~missing] = codes
        labels[missing] = len(uniq) + np.arange(int(missing.sum()))
        return labels
    missing = np.fromiter((is_missing(v) for v in keys), dtype=bool, count=n)
    codes = {}
    for k in np.flatnonzero(~missing):
        labels[k] = codes.setdefault(keys[k], len(codes))
    labels[missing] = len(codes) + np.arange(int(missing.sum()))
    return labels


def is_missing(v):
    """True for None, pd.NA, pd.NaT and float NaN."""
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    return isinstance(v, (float, np.floating)) and v != v
