# TRANSITIONAL SHIM (issue 26): re-exports for the integrator; delete after imports are rewritten.
"""Moved to ``benchmarks/scripts/bench_bounds_anytime.py``; tests/bounds still load it from here."""
import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parent / "scripts"))
from bench_bounds_anytime import *  # noqa: E402,F401,F403
from bench_bounds_anytime import main  # noqa: E402,F401

if __name__ == "__main__":
    raise SystemExit(main())
