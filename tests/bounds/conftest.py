"""Lets the bounds tests import their test-only helpers (``bounds_oracle``) from this folder."""
import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
