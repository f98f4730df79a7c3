"""Checkpoints of an anytime bounds run, so that a long :func:`sampling.bounds.run` can resume.

A checkpoint is one JSON file, written atomically, holding what cannot be recomputed
cheaply: the sampler state (the running sums of Eq. 13-14, the random generator state,
the trace so far, the elapsed time) and how to rebuild the rest. The weighted mini-bucket
is rebuilt from its elimination order, i-bound and number of tightening passes (the
passes are deterministic), and the AND/OR search tree by replaying the same number of
expansions (the upper-priority search does not depend on the samples; Alg. 1 of Lou,
Dechter & Ihler 2017). Both rebuilds are checked against the bounds saved in the file.
The rebuild time is not charged to the run.

The run hands a state to the writer only after a whole step, once the fields that
summarise it agree (``loop.u_min`` at most the search bound, ``ln sum 1/U_i`` inside
``[ln n - u_max, ln n - u_min]``); the validation checks those relations with the
tolerance their arithmetic needs (see the comment above ``_sum_tol``), not a blanket one.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile

import numpy as np

from ..utils.atomic import atomic_write_text

__all__ = ["FORMAT", "model_fingerprint", "save_checkpoint", "load_checkpoint", "validate_state",
           "check_writable", "check_rebuilt", "same_float"]

FORMAT = "sampling.bounds.checkpoint/2"


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
        ``method`` and each key of ``settings``; ``n_vars`` (optional) is passed to
        :func:`validate_state`.

    Returns
    -------
    dict

    Raises
    ------
    ValueError
        If the file is not a checkpoint of this format, was written for another model or
        with other settings, or fails :func:`validate_state` (the message names the file
        and the field).
    """
    try:
        with open(path, encoding="utf-8") as fh:
            state = json.load(fh)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not a readable checkpoint (line {exc.lineno}: {exc.msg})") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the checkpoint ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a readable checkpoint (not UTF-8 text: {exc.reason})") from None
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
    if not isinstance(saved, dict):
        raise ValueError(f"{path}: field 'settings' must be an object; got {type(saved).__name__}")
    for key, value in expected["settings"].items():
        if not _same(saved.get(key), value):
            raise ValueError(f"{path}: the checkpoint has {key}={saved.get(key)!r}, this run "
                             f"{key}={value!r}; resume with the same setting or use another file")
    validate_state(path, state, n_vars=expected.get("n_vars"))
    return state


# --------------------------------------------------------------------------- validation
# Tolerances of the consistency checks, from the arithmetic that produced the fields.
# * Copies are checked exactly. JSON holds each float as its shortest repr, which reads back
#   to the same double, and the loops keep ``loop.u_min`` as a running ``min`` over a set
#   that holds ``meta.log_Z_wmb`` and the saved search bound ``log_Z_search`` (the state is
#   committed only after the step that updates it; see ``sampling.bounds._loops``), so
#   ``u_min <= log_Z_search`` and ``u_min <= log_Z_wmb`` hold bit for bit.
# * Running sums of n terms are checked with ``_sum_tol(n, scale)`` = 4 (n + 2) eps scale.
#   ``ln sum 1/U_i`` is accumulated by n log-add-exp steps ``hi + log1p(exp(lo - hi))``;
#   each rounds by at most 3 eps max(1, |result|) (1 ulp in exp and log1p, half an ulp in
#   the addition), and an earlier error passes through with a factor <= 1, so after n
#   steps it is at most 3 n eps scale, with scale the largest magnitude among the partial
#   sums and the bounds; ln n and ``ln n - u`` add 2 eps scale. The same rule bounds the
#   Welford mean and sum of squares of the ratios r_i in [0, 1].
# * Trace rows keep the relative slack _LOG_TOL of the estimator's own bound check.
_LOG_TOL = 1e-6
_EPS = 2.0 ** -52


def _sum_tol(n, scale):
    """Rounding bound of a running sum of ``n`` terms of magnitude up to ``scale`` (see above)."""
    return 4.0 * (n + 2) * _EPS * max(1.0, scale)


def _field(path, state, key, kind, *, lo=None, hi=None, allow=(), where=""):
    """``state[key]`` checked for its type and range; raises ValueError naming file and field.

    kind: "int" (a JSON integer, not a bool), "float" (a JSON number; ``allow`` may hold
    "nan", "-inf", "+inf", "none"), "bool", "str", "dict", "list".
    """
    name = f"{where}{key}"
    if not isinstance(state, dict) or key not in state:
        raise ValueError(f"{path}: checkpoint field {name!r} is missing")
    v = state[key]
    if v is None and "none" in allow:
        return None
    if kind == "int":
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"{path}: checkpoint field {name!r} must be an integer; got {v!r}")
    elif kind == "float":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"{path}: checkpoint field {name!r} must be a number; got {v!r}")
        v = float(v)
        if math.isnan(v) and "nan" not in allow:
            raise ValueError(f"{path}: checkpoint field {name!r} is NaN")
        if v == math.inf and "+inf" not in allow:
            raise ValueError(f"{path}: checkpoint field {name!r} is +Infinity")
        if v == -math.inf and "-inf" not in allow:
            raise ValueError(f"{path}: checkpoint field {name!r} is -Infinity")
    elif kind == "bool":
        if not isinstance(v, bool):
            raise ValueError(f"{path}: checkpoint field {name!r} must be true or false; got {v!r}")
    else:
        typ = {"str": str, "dict": dict, "list": list}[kind]
        if not isinstance(v, typ):
            raise ValueError(f"{path}: checkpoint field {name!r} must be a {kind}; got {type(v).__name__}")
    if kind in ("int", "float") and not (isinstance(v, float) and math.isnan(v)):
        if lo is not None and v < lo:
            raise ValueError(f"{path}: checkpoint field {name!r} must be >= {lo}; got {v!r}")
        if hi is not None and v > hi:
            raise ValueError(f"{path}: checkpoint field {name!r} must be <= {hi}; got {v!r}")
    return v


def validate_state(path, state, *, n_vars=None):
    """Check every field of a checkpoint (types, ranges, consistency) before it is used.

    Parameters
    ----------
    path : str or os.PathLike
        Named in the messages.
    state : dict
        The parsed JSON.
    n_vars : int, optional
        Number of variables of the model (checks the elimination order).

    Raises
    ------
    ValueError
        Naming the file and the first bad field: a missing field, a wrong type, a value out
        of range (a negative or non-finite time or count, a probability outside [0, 1]),
        or sums and counts that disagree (more samples in the trace than in the running
        sums; a sum of 1/U_i that ``n`` samples with bounds between the search bound and
        the WMB bound cannot give; trace rows out of time order; a lower bound above an
        upper bound).
    """
    big = 2 ** 62
    _field(path, state, "method", "str")
    i_bound = _field(path, state, "i_bound", "int", lo=-1, hi=10**6)
    del i_bound
    _field(path, state, "wmb_passes", "int", lo=0, hi=10**6)
    order = _field(path, state, "elim_order", "list")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in order):
        raise ValueError(f"{path}: checkpoint field 'elim_order' must hold integers")
    if n_vars is not None and order and sorted(order) != list(range(int(n_vars))):
        raise ValueError(f"{path}: checkpoint field 'elim_order' is not a permutation of the "
                         f"model's {n_vars} variables")
    elapsed = _field(path, state, "elapsed_s", "float", lo=0.0)
    n_exp = _field(path, state, "n_expansions", "int", lo=0, hi=big)
    log_search = _field(path, state, "log_Z_search", "float", allow=("-inf", "+inf", "none"))
    rec_iter = _field(path, state, "rec_iter", "int", lo=0, hi=big)
    _field(path, state, "rec_next_t", "float", lo=0.0)
    rng = _field(path, state, "rng", "dict")
    if not isinstance(rng.get("bit_generator"), str) or not isinstance(rng.get("state"), dict):
        raise ValueError(f"{path}: checkpoint field 'rng' is not a numpy bit-generator state")

    meta = _field(path, state, "meta", "dict")
    log_wmb = _field(path, meta, "log_Z_wmb", "float", allow=("-inf",), where="meta.")
    _field(path, meta, "t_wmb_s", "float", lo=0.0, hi=elapsed * (1 + 1e-9) + 1e-9, where="meta.")

    loop = _field(path, state, "loop", "dict")
    n_done = _field(path, loop, "n_done", "int", lo=0, hi=big, where="loop.")
    rounds = _field(path, loop, "rounds_done", "int", lo=0, hi=big, where="loop.")
    stage = _field(path, loop, "stage", "str", where="loop.")
    if stage not in ("search", "sample"):
        raise ValueError(f"{path}: checkpoint field 'loop.stage' must be 'search' or 'sample'; got {stage!r}")
    u_min = _field(path, loop, "u_min", "float", allow=("-inf",), where="loop.")
    u_max = _field(path, loop, "u_max", "float", allow=("-inf",), where="loop.")
    if u_min > log_wmb:
        raise ValueError(f"{path}: checkpoint field 'loop.u_min' ({u_min}) is above the WMB bound "
                         f"meta.log_Z_wmb ({log_wmb})")
    if log_search is not None and u_min > log_search:
        raise ValueError(f"{path}: checkpoint field 'loop.u_min' ({u_min}) is above the search "
                         f"bound log_Z_search ({log_search})")

    acc = _field(path, state, "accumulator", "dict")
    w = "accumulator."
    _field(path, acc, "delta", "float", lo=0.0, hi=1.0, where=w)
    n = _field(path, acc, "n", "int", lo=0, hi=big, where=w)
    m = _field(path, acc, "_m", "float", allow=("-inf",), hi=0.0, where=w)  # ln r <= 0 is clipped
    mean = _field(path, acc, "_mean", "float", lo=0.0, hi=1.0 + _sum_tol(n, 1.0), where=w)
    m2 = _field(path, acc, "_m2", "float", lo=0.0, hi=0.25 * n + _sum_tol(n, 0.25 * n), where=w)
    lsu = _field(path, acc, "_log_sum_inv_u", "float", allow=("-inf",), where=w)
    _field(path, acc, "log_w_max", "float", allow=("-inf",), where=w)
    _field(path, acc, "n_bound_violations", "int", lo=0, hi=n, where=w)
    _field(path, acc, "lower_is_markov", "bool", where=w)
    del m2
    if (n == 0) != (lsu == -math.inf):
        raise ValueError(f"{path}: checkpoint fields 'accumulator.n' ({n}) and "
                         f"'accumulator._log_sum_inv_u' ({lsu}) disagree")
    if n and m == -math.inf and mean != 0.0:
        raise ValueError(f"{path}: checkpoint field 'accumulator._mean' must be 0 while no weight is positive")
    if n:
        # each sample's bound U_i lies between the smallest deterministic bound and the
        # largest bound used (a cheaper WMB of the ladder), so ln sum 1/U_i lies in
        # [ln n - u_max, ln n - u_min]
        if u_max < u_min:
            raise ValueError(f"{path}: checkpoint field 'loop.u_max' ({u_max}) is below 'loop.u_min' ({u_min})")
        lo_s, hi_s = math.log(n) - u_max, math.log(n) - u_min
        tol = _sum_tol(n, max(abs(lo_s), abs(hi_s), abs(u_min), abs(u_max)))
        if not (lo_s - tol <= lsu <= hi_s + tol):
            raise ValueError(f"{path}: checkpoint fields 'accumulator.n' ({n}) and "
                             f"'accumulator._log_sum_inv_u' ({lsu}) are inconsistent with the bounds "
                             f"(expected within [{lo_s:.6g}, {hi_s:.6g}])")
    if state["method"] == "wmb-is" and n != n_done:
        raise ValueError(f"{path}: checkpoint fields 'accumulator.n' ({n}) and 'loop.n_done' ({n_done}) differ")
    del rounds

    rows = _field(path, state, "rows", "list")
    if len(rows) > rec_iter + 1:
        raise ValueError(f"{path}: checkpoint has {len(rows)} trace rows but 'rec_iter' is {rec_iter}")
    from .trace import COLUMNS

    prev_t, prev_n, prev_e = 0.0, 0, 0
    for i, r in enumerate(rows):
        where = f"rows[{i}]."
        t = _field(path, r, "time_s", "float", lo=prev_t, hi=elapsed * (1 + 1e-9) + 1e-9, where=where)
        up = _field(path, r, "log_Z_upper", "float", allow=("-inf", "+inf"), where=where)
        lo = _field(path, r, "log_Z_lower", "float", allow=("-inf",), where=where)
        _field(path, r, "log_Z_hat", "float", allow=("-inf", "nan"), where=where)
        _field(path, r, "log_Z_upper_det", "float", allow=("-inf", "+inf"), where=where)
        k = _field(path, r, "n_samples", "int", lo=prev_n, hi=n, where=where)
        _field(path, r, "n_nodes", "int", lo=0, hi=big, where=where)
        e = _field(path, r, "n_expansions", "int", lo=prev_e, hi=n_exp, where=where)
        _field(path, r, "lower_is_markov", "bool", where=where)
        extra = set(r) - set(COLUMNS)
        if extra:
            raise ValueError(f"{path}: checkpoint trace row {i} has unknown field(s) {sorted(extra)}")
        if lo > up + _LOG_TOL * max(1.0, abs(up)):
            raise ValueError(f"{path}: checkpoint trace row {i} has a lower bound ({lo}) above its "
                             f"upper bound ({up})")
        prev_t, prev_n, prev_e = t, k, e
    return state


def _same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        try:
            return float(a) == float(b) or (math.isnan(float(a)) and math.isnan(float(b)))
        except (TypeError, ValueError):
            return False
    return a == b


def same_float(a, b):
    """Whether ``a`` and ``b`` are the same float (False when either is not a number)."""
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return False


def check_writable(path, what):
    """Raise ValueError (naming ``what`` and ``path``) unless a file can be written at ``path``.

    The check creates and removes a temporary file in the target directory (the atomic
    writers of :mod:`sampling.utils.atomic` write there and rename), so that an unwritable output
    is found before a long run, not after it.

    Parameters
    ----------
    path : str or os.PathLike
        The output file (it may exist; it is not touched).
    what : str
        What the file is, for the message ("trace (--out)", "checkpoint", ...).

    Raises
    ------
    ValueError
        If ``path`` is a directory, its directory does not exist, or a file cannot be
        created there (permissions, read-only file system, a file where a directory is
        expected).
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise ValueError(f"cannot write the {what} to {path}: it is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ValueError(f"cannot write the {what} to {path}: directory {parent} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=".write-check-")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise ValueError(f"cannot write the {what} to {path}: {exc.strerror or exc}") from None


def check_rebuilt(path, what, got, saved):
    """ValueError (naming the checkpoint ``path`` and ``what``) unless a value rebuilt on resume
    equals the saved one up to a relative 1e-9."""
    if not (got == saved or abs(got - saved) <= 1e-9 * max(1.0, abs(saved))):
        raise ValueError(f"{path}: the rebuilt {what} is {got!r}, the checkpoint's {saved!r}; "
                         "the model, the code or the memory budget changed since it was written")
