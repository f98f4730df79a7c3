"""Reference ln Z of the benchmark instances and how precisely it is known.

Shared by ``bench_bounds_anytime.py`` and ``bench_bounds_table1.py`` (issue 15): a run
"brackets" ln Z when no upper bound is below ``ln Z - tol`` and no lower bound above
``ln Z + tol``, where ``tol`` is the rounding of the printed reference, not a fixed number.

A reference is known as the decimal text of log10 Z printed by its source: the last token
of a UAI 2014 ``.PR`` file (``PR`` then log10 Z, printed with about six significant digits,
e.g. ``1311.98`` for Grids_17), or, for the UAI'08 pedigrees, the value and source listed in
``../shared/data/uai/SOURCES.md``. A number printed with ``d`` decimals is known to half a
unit of its last digit, so ::

    ln Z = float(text) * ln 10,    tol = 0.5 * 10**(-d) * ln 10 + 1e-6   (nats)

the same rule as ``/work/shared/checks/uairef.py``. Two decimals give 0.0115 nats, ten times
the former fixed 5e-4 * ln 10 of ``bench_bounds_table1.py``. Printing with ``%g`` drops
trailing zeros (``-116.58`` for -116.580), which only makes ``tol`` larger (conservative).
"""
from __future__ import annotations

import math
from pathlib import Path

__all__ = ["UAI_DATA", "PEDIGREE_LOG10_Z", "PEDIGREE_LNZ", "parse_log10", "read_pr", "reference", "brackets"]

_ROOT = Path(__file__).resolve().parents[2]
# the shared ``uai`` data folder beside the repository (a worktree one level deeper also finds it)
UAI_DATA = next((d for d in (_ROOT / ".." / "shared" / "data" / "uai", _ROOT / ".." / ".." / "shared" / "data" / "uai")
                 if d.is_dir()), _ROOT / ".." / "shared" / "data" / "uai")

# log10 Z of the 22 UAI'08 pedigrees as printed by the source named in SOURCES.md: the UAI 2014
# .PR file of the byte-identical linkage_N copy (six significant digits), our exact VE where
# SOURCES.md lists one (six decimals), or the two-decimal table where that is the only source
# (pedigree38, pedigree50). pedigree51 is disputed (PR -76.6058 vs table -77.27): no reference.
PEDIGREE_LOG10_Z = {
    "pedigree1": "-14.107169", "pedigree7": "-64.8245", "pedigree9": "-78.5222", "pedigree13": "-31.1776",
    "pedigree18": "-78.143606", "pedigree19": "-59.0249", "pedigree20": "-29.6304", "pedigree23": "-38.555591",
    "pedigree25": "-115.772", "pedigree30": "-83.733131", "pedigree31": "-69.7017", "pedigree33": "-54.2777",
    "pedigree34": "-64.2292", "pedigree37": "-116.58", "pedigree38": "-54.25", "pedigree39": "-102.199094",
    "pedigree40": "-87.8848", "pedigree41": "-76.0389", "pedigree42": "-30.7614", "pedigree44": "-63.4735",
    "pedigree50": "-22.88", "pedigree51": None,
}

_LN10 = math.log(10.0)


def parse_log10(text, where="reference"):
    """``(ln Z, tol)`` from the decimal text of log10 Z; ``tol`` (nats) is half a unit of the
    last printed digit times ln 10, plus 1e-6 for the float conversion.

    Raises ValueError naming ``where`` if ``text`` is not a finite decimal number."""
    tok = str(text).strip()
    try:
        val = float(tok)
    except ValueError:
        raise ValueError(f"{where}: log10 Z {tok!r} is not a number") from None
    if not math.isfinite(val) or "e" in tok.lower():
        raise ValueError(f"{where}: log10 Z {tok!r} is not a finite decimal number")
    dec = len(tok.split(".", 1)[1]) if "." in tok else 0
    return val * _LN10, 0.5 * 10.0 ** (-dec) * _LN10 + 1e-6


def read_pr(path):
    """``(ln Z, tol)`` from a UAI 2014 ``.PR`` file (``PR`` then log10 Z).

    Raises ValueError naming the file if the header is not ``PR`` or there is not exactly one value."""
    toks = Path(path).read_text().split()
    if not toks or toks[0] != "PR":
        raise ValueError(f"{path}: not a UAI PR file (first token {toks[0] if toks else None!r}, expected 'PR')")
    if len(toks) != 2:
        raise ValueError(f"{path}: expected one log10 Z value after 'PR', found {len(toks) - 1}")
    return parse_log10(toks[1], where=str(path))


PEDIGREE_LNZ = {k: (None if v is None else parse_log10(v, k)[0]) for k, v in PEDIGREE_LOG10_Z.items()}


def reference(name, data=None, pr_path=None):
    """``(ln Z, tol)`` of an instance, or ``(None, None)`` when no reference is known.

    A pedigree name is looked up in :data:`PEDIGREE_LOG10_Z`; otherwise ``pr_path`` or
    ``DATA/uai2014_dev/NAME.uai.PR`` (``data`` = the ``uai`` data folder) is read if it exists."""
    if name in PEDIGREE_LOG10_Z:
        text = PEDIGREE_LOG10_Z[name]
        return (None, None) if text is None else parse_log10(text, name)
    if pr_path is None and data is not None:
        pr_path = Path(data) / "uai2014_dev" / f"{name}.uai.PR"
    if pr_path is not None and Path(pr_path).exists():
        return read_pr(pr_path)
    return None, None


def brackets(log_Z_upper, log_Z_lower, log_Z, tol):
    """True if every upper bound is >= ln Z - tol and every lower bound <= ln Z + tol
    (array-likes of one trace; -inf lower and +inf upper bounds pass)."""
    import numpy as np

    up = np.asarray(log_Z_upper, dtype=float)
    lo = np.asarray(log_Z_lower, dtype=float)
    return bool(not (up < log_Z - tol).any() and not (lo > log_Z + tol).any())
