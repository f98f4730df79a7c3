"""Read and write models in the UAI competition format, and ``.evid`` evidence files.

Model file (``MARKOV`` or ``BAYES``; tokens separated by any whitespace)::

    MARKOV
    n_vars
    card_0 card_1 ... card_{n-1}
    n_factors
    k  v_1 ... v_k          (one scope per factor)
    ...
    n_entries  value ...    (one table per factor, in the scope order above;
                             the LAST scope variable changes fastest)

Evidence file: the UAI-2014 one-line form ``n_obs v_1 x_1 ... v_n x_n``, or the
older form with a leading number of evidence samples followed by one such
record per sample.

Files are read by streaming whitespace-separated tokens once (with their line
numbers, for error messages), as pyGMs ``readFileByTokens`` does.
"""
from __future__ import annotations

import math
import os

import numpy as np

from ..utils.atomic import atomic_write_text
from ..exceptions import UAIFormatError
from .model import Factor, GraphicalModel

__all__ = ["read_uai", "write_uai", "read_evidence", "write_evidence"]


class _Tokens:
    """All whitespace-separated tokens of a text, with 1-based line numbers."""

    def __init__(self, text, path):
        self.path = path
        toks = []
        lines = []
        for ln, line in enumerate(text.splitlines(), start=1):
            parts = line.split()
            if parts:
                toks.extend(parts)
                lines.append(np.full(len(parts), ln, dtype=np.int64))
        self.toks = toks
        self.lines = np.concatenate(lines) if lines else np.zeros(0, dtype=np.int64)
        self.n_lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        self.pos = 0

    def line_of(self, i):
        if i < len(self.toks):
            return int(self.lines[i])
        return max(self.n_lines, 1)

    def error(self, msg, i=None):
        i = self.pos if i is None else i
        return UAIFormatError(msg, path=self.path, line=self.line_of(i))

    def next(self, what):
        if self.pos >= len(self.toks):
            raise self.error(f"unexpected end of file: expected {what}")
        t = self.toks[self.pos]
        self.pos += 1
        return t

    def int(self, what, lo=None, hi=None):
        i = self.pos
        t = self.next(what)
        try:
            val = int(t)
        except ValueError:
            raise self.error(f"expected an integer ({what}); got {t!r}", i) from None
        if lo is not None and val < lo:
            raise self.error(f"{what} must be >= {lo}; got {val}", i)
        if hi is not None and val > hi:
            raise self.error(f"{what} must be <= {hi}; got {val}", i)
        return val

    def floats(self, count, what):
        i = self.pos
        if i + count > len(self.toks):
            raise self.error(
                f"unexpected end of file: {what} needs {count} values, only {len(self.toks) - i} left",
                len(self.toks),
            )
        chunk = self.toks[i:i + count]
        try:
            vals = np.array(chunk, dtype=np.float64)
        except ValueError:
            for j, t in enumerate(chunk):
                try:
                    float(t)
                except ValueError:
                    raise self.error(f"expected a number in {what}; got {t!r}", i + j) from None
            raise
        bad = np.flatnonzero(~np.isfinite(vals) | (vals < 0))
        if bad.size:
            j = int(bad[0])
            raise self.error(f"{what} entry {j} is {chunk[j]!r}; table entries must be finite and >= 0", i + j)
        self.pos += count
        return vals


def _read_text(path):
    try:
        with open(path, "r", encoding="utf-8") as fh:
            return fh.read()
    except UnicodeDecodeError as exc:
        raise UAIFormatError(f"not a text file ({exc.reason})", path=path) from None


def read_uai(path, evidence=None):
    """Read a ``.uai`` model file (``MARKOV`` or ``BAYES``).

    Parameters
    ----------
    path : str or os.PathLike
        The model file.
    evidence : None, str, os.PathLike or dict of {int: int}, optional
        An evidence file (see :func:`read_evidence`) or a mapping; if given, the
        returned model is conditioned on it (:meth:`GraphicalModel.condition`), so
        its partition function is Z * P(evidence).

    Returns
    -------
    GraphicalModel
        Factors in log space (a zero entry becomes ``-inf``); axes in scope order.

    Raises
    ------
    UAIFormatError
        On any format problem, with the file name and 1-based line number:
        unknown header, truncated file, non-integer counts, variable ids or
        cardinalities out of range, repeated scope variables, a table whose
        entry count differs from the product of its cardinalities, a negative,
        NaN or infinite entry, trailing tokens; also for bad evidence.
    FileNotFoundError
        If a file does not exist.

    Examples
    --------
    >>> from sampling.utils.data import data_path
    >>> from sampling.bounds import read_uai, log_partition
    >>> m = read_uai(data_path("uai", "bn", "BN_0.uai"), evidence=data_path("uai", "bn", "BN_0.uai.evid"))
    >>> round(log_partition(m) / 2.302585092994046, 6)  # log10 P(evidence)
    -8.893083
    """
    path = os.fspath(path)
    tk = _Tokens(_read_text(path), path)
    head = tk.next("the header MARKOV or BAYES")
    if head.upper() not in ("MARKOV", "BAYES"):
        raise tk.error(f"the header must be MARKOV or BAYES; got {head!r}", 0)
    n = tk.int("the number of variables", lo=0)
    cards = np.array([tk.int(f"the cardinality of variable {v}", lo=1) for v in range(n)], dtype=np.int64)
    m = tk.int("the number of factors", lo=0)
    scopes = []
    for a in range(m):
        k = tk.int(f"the scope size of factor {a}", lo=0, hi=n)
        start = tk.pos
        sc = tuple(tk.int(f"a variable of factor {a}", lo=0, hi=n - 1) for _ in range(k))
        if len(set(sc)) != k:
            raise tk.error(f"the scope of factor {a} repeats a variable: {sc}", start)
        scopes.append(sc)
    factors = []
    for a, sc in enumerate(scopes):
        shape = tuple(int(cards[v]) for v in sc)
        size = math.prod(shape)  # Python ints: no int64 wrap-around on huge cardinalities
        i = tk.pos
        cnt = tk.int(f"the number of entries of factor {a}", lo=0)
        if cnt != size:
            raise tk.error(
                f"factor {a} over variables {sc} must have {size} entries (product of cardinalities); "
                f"the file says {cnt}",
                i,
            )
        vals = tk.floats(cnt, f"the table of factor {a}")
        with np.errstate(divide="ignore"):
            factors.append(Factor(sc, np.log(vals).reshape(shape)))
    if tk.pos < len(tk.toks):
        raise tk.error(f"unexpected trailing token {tk.toks[tk.pos]!r} after the last table")
    model = GraphicalModel(cards, factors)
    if evidence is None:
        return model
    if not isinstance(evidence, dict):
        evidence = read_evidence(evidence, model=model)
    else:
        _check_evidence(evidence, model, None)
    return model.condition(evidence)


def _check_evidence(ev, model, path, lines=None):
    for v, x in ev.items():
        line = None if lines is None else lines.get(v)
        if not 0 <= v < model.n_vars:
            raise UAIFormatError(f"evidence variable {v} is out of range [0, {model.n_vars})", path=path, line=line)
        if not 0 <= x < model.cards[v]:
            raise UAIFormatError(
                f"evidence value {x} of variable {v} is out of range [0, {model.cards[v]})", path=path, line=line
            )


def read_evidence(path, *, model=None, sample=0):
    """Read an evidence file.

    Parameters
    ----------
    path : str or os.PathLike
        UAI-2014 one-line form ``n_obs v_1 x_1 ...``, or the older form
        ``n_samples`` followed by ``n_obs v_1 x_1 ...`` per sample. An empty file
        means no evidence.
    model : GraphicalModel, optional
        If given, variable ids and values are checked against it.
    sample : int, default 0
        Which evidence sample to return (older multi-sample form only).

    Returns
    -------
    dict of {int: int}
        Observed value of each observed variable.

    Raises
    ------
    UAIFormatError
        If the counts do not match the number of tokens, a token is not an
        integer, a variable is repeated, or (with ``model``) a variable or value
        is out of range; ``sample`` out of range.
    """
    path = os.fspath(path)
    tk = _Tokens(_read_text(path), path)
    ntok = len(tk.toks)
    if ntok == 0:
        return {}
    first = tk.int("the number of observed variables (or of evidence samples)", lo=0)
    records = []
    if ntok == 1 + 2 * first:
        records.append(_evid_record(tk, first))
    else:
        tk.pos = 1
        for s in range(first):
            nobs = tk.int(f"the number of observed variables of evidence sample {s}", lo=0)
            records.append(_evid_record(tk, nobs))
        if tk.pos < ntok:
            raise tk.error(
                f"evidence file has {ntok} tokens, which fits neither the one-line form "
                f"(1 + 2 * {first}) nor {first} evidence samples"
            )
    if not 0 <= sample < max(len(records), 1):
        raise UAIFormatError(f"evidence sample {sample} requested; the file holds {len(records)}", path=path)
    ev, lines = records[sample] if records else ({}, {})
    if model is not None:
        _check_evidence(ev, model, path, lines)
    return ev


def _evid_record(tk, nobs):
    ev, lines = {}, {}
    for _ in range(nobs):
        i = tk.pos
        v = tk.int("an evidence variable", lo=0)
        x = tk.int(f"the observed value of variable {v}", lo=0)
        if v in ev:
            raise tk.error(f"evidence variable {v} is observed twice", i)
        ev[v] = x
        lines[v] = tk.line_of(i)
    return ev, lines


def _fmt(vals):
    return " ".join(repr(float(v)) for v in vals)


def _data_then_path(fn, data, path, data_ok, data_name):
    """Refuse the old ``fn(path, data)`` order with a clear TypeError."""
    if not data_ok(data) and data_ok(path):
        raise TypeError(f"{fn} takes the {data_name} first, then the path (like the rest of the package): "
                        f"{fn}({data_name}, path); got ({type(data).__name__}, {type(path).__name__}), "
                        "the order of older versions")
    if not data_ok(data):
        raise TypeError(f"the {data_name} parameter of {fn} must be a "
                        f"{'GraphicalModel' if data_name == 'model' else 'dict of {var: value}'}; "
                        f"got {type(data).__name__}")
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"the path parameter of {fn} must be a str or os.PathLike; got {type(path).__name__}")


def write_uai(model, path, *, kind="MARKOV"):
    """Write ``model`` as a UAI file (values written as ``exp(log_values)`` with 17 digits).

    Parameters
    ----------
    model : GraphicalModel
    path : str or os.PathLike
    kind : {"MARKOV", "BAYES"}
        Header; ``BAYES`` is only a label here (no normalisation is checked).

    Raises
    ------
    ValueError
        If ``kind`` is not one of the two headers.
    TypeError
        If the arguments come in the old order ``write_uai(path, model)`` (the message
        says so) or have the wrong types.

    Notes
    -----
    The file is written to a temporary name and renamed, so a reader never sees
    a half-written model. ``write_uai(m, p)`` then ``read_uai(p)`` gives back ``m`` up to the
    rounding of ``exp`` then ``log`` (about 1e-15 relative).
    """
    _data_then_path("write_uai", model, path, lambda x: isinstance(x, GraphicalModel), "model")
    if kind not in ("MARKOV", "BAYES"):
        raise ValueError(f"the kind parameter of write_uai must be 'MARKOV' or 'BAYES'; got {kind!r} instead")
    path = os.fspath(path)
    out = [kind, str(model.n_vars), " ".join(str(int(c)) for c in model.cards), str(model.n_factors)]
    for f in model.factors:
        out.append(" ".join([str(len(f.scope))] + [str(v) for v in f.scope]))
    out.append("")
    for f in model.factors:
        vals = np.exp(f.log_values).reshape(-1)
        out.append(str(vals.size))
        row = f.shape[-1] if f.shape else 1
        for s in range(0, vals.size, max(row, 1)):
            out.append(" " + _fmt(vals[s:s + row]))
        out.append("")
    atomic_write_text(path, "\n".join(out) + "\n")


def write_evidence(evidence, path):
    """Write ``evidence`` (dict var -> value) in the UAI-2014 one-line form.

    Raises
    ------
    TypeError
        If the arguments come in the old order ``write_evidence(path, evidence)``.
    """
    _data_then_path("write_evidence", evidence, path, lambda x: isinstance(x, dict), "evidence")
    path = os.fspath(path)
    items = sorted((int(v), int(x)) for v, x in dict(evidence).items())
    atomic_write_text(path, " ".join([str(len(items))] + [f"{v} {x}" for v, x in items]) + "\n")
