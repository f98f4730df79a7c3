"""The benchmark suite: pytest-benchmark tests in ``bench_*.py`` (this folder only).

``pytest benchmarks/ --benchmark-only`` runs them; the default ``pytest`` never does
(pyproject's ``testpaths`` is ``tests``). ``scripts/`` holds the longer command-line
benchmarks; it is not collected. Results belong in ``benchmarks/results/`` (git-ignored),
which this file creates.
"""
from pathlib import Path

import pytest

RESULTS = Path(__file__).resolve().parent / "results"

# scripts/: command-line benchmarks (run directly, not collected); results/: what the suite writes
collect_ignore = ["scripts", "results"]


def pytest_collect_file(file_path, parent):
    """Collect ``bench_*.py`` as test modules (pytest's default pattern is ``test_*.py``)."""
    if parent.session.isinitpath(file_path):
        return None  # named on the command line: pytest collects it itself
    if file_path.suffix == ".py" and file_path.name.startswith("bench_"):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


def pytest_configure(config):
    RESULTS.mkdir(exist_ok=True)
