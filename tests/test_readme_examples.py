"""Every fenced ```python and ```bash example of README.md runs as written, from an empty directory.

Each block is written to a file in a fresh temporary directory (``tmp_path``, outside the
checkout) and run there in a subprocess: Python blocks with ``python -P`` (the current
directory never on ``sys.path``), bash blocks with ``bash -eo pipefail`` (the first failing
command fails the block). The test passes when the exit code is 0; a failure names the block
by its README line and first line and shows the tail of its output.

Which package the examples use
------------------------------
The INSTALLED one, as a user has it after ``pip install .`` (CI: ``pip install ".[test]" &&
pytest``). The subprocess environment drops ``PYTHONPATH``, ``PYTHONHOME`` and
``PYTHONSTARTUP``, sets ``PYTHONSAFEPATH=1`` (so that ``python`` and the console scripts in bash
blocks never import the current directory either) and puts the directory of this interpreter
first on ``PATH`` (so that ``python``, ``coref`` and ``sampling`` are those of this environment).

To check a source tree built in place without installing it, name it in
``README_EXAMPLES_PYTHONPATH``; it becomes the examples' ``PYTHONPATH``::

    README_EXAMPLES_PYTHONPATH=$PWD pytest tests/test_readme_examples.py -m "slow or not slow"

Rules
-----
* ``pip install`` is never run: a line ``pip install ARGS && REST`` runs only ``REST``, a line
  ``pip install ARGS`` is dropped, and a ``REST`` that starts with ``pytest`` is dropped too (CI
  runs that very line; running the suite inside itself proves nothing). A block left empty is
  skipped with that reason.
* ``<!-- slow -->`` on the last non-blank line before a fence marks the block ``slow`` (off by
  default, ``pytest -m slow``): for examples that take more than about 60 s.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
LANGUAGES = ("python", "bash")
SLOW_MARKER = "<!-- slow -->"
TIMEOUT_S = 900
_FENCE = re.compile(r"^```\s*([A-Za-z0-9_+-]*)\s*$")


def readme_blocks(text):
    """The fenced blocks of ``text``: ``(line, language, code, slow)`` per block.

    ``line`` is the 1-based line of the opening fence; ``slow`` is True when the last
    non-blank line before the fence is :data:`SLOW_MARKER`.
    """
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m or not m.group(1):
            i += 1
            continue
        start, lang = i, m.group(1).lower()
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        before = next((ln.strip() for ln in reversed(lines[:start]) if ln.strip()), "")
        blocks.append((start + 1, lang, "\n".join(lines[i + 1:j]) + "\n", before == SLOW_MARKER))
        i = j + 1
    return blocks


def without_pip_install(code):
    """``code`` (bash) with the ``pip install`` commands removed by the rules of the module docstring."""
    out = []
    for line in code.splitlines():
        stripped = line.strip()
        if stripped.startswith("pip install"):
            rest = stripped.split("&&", 1)[1].strip() if "&&" in stripped else ""
            if not rest or rest.startswith("pytest"):
                continue
            line = rest
        out.append(line)
    return "\n".join(out).strip() + "\n" if any(ln.strip() for ln in out) else ""


def example_env():
    """Environment of the examples: the installed package, or ``README_EXAMPLES_PYTHONPATH``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    tree = os.environ.get("README_EXAMPLES_PYTHONPATH")
    if tree:
        env["PYTHONPATH"] = tree
    env["PYTHONSAFEPATH"] = "1"
    env["MPLBACKEND"] = "Agg"
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def _params():
    if not README.is_file():
        return [pytest.param(None, id="no-README", marks=pytest.mark.skip(reason=f"{README} absent"))]
    params = []
    for line, lang, code, slow in readme_blocks(README.read_text(encoding="utf-8")):
        if lang not in LANGUAGES:
            continue
        marks = [pytest.mark.slow] if slow else []
        params.append(pytest.param((line, lang, code), id=f"README.md:{line}-{lang}", marks=marks))
    return params


def test_readme_has_examples():
    blocks = [b for b in readme_blocks(README.read_text(encoding="utf-8")) if b[1] in LANGUAGES]
    assert any(lang == "python" for _, lang, _, _ in blocks)
    assert any(lang == "bash" for _, lang, _, _ in blocks)


def test_pip_install_rule():
    assert without_pip_install("pip install . && coref run\n") == "coref run\n"
    assert without_pip_install('pip install ".[test]" && pytest\n') == ""
    assert without_pip_install("pip install -e .\ncoref --help\n") == "coref --help\n"


@pytest.mark.parametrize("block", _params())
def test_readme_example(block, tmp_path):
    line, lang, code = block
    first = next((ln.strip() for ln in code.splitlines() if ln.strip()), "")
    name = f"README.md line {line} ({lang}: {first[:60]!r})"
    if lang == "bash":
        code = without_pip_install(code)
        if not code:
            pytest.skip(f"{name}: only `pip install` / `pytest` commands, which CI itself runs")
        script = tmp_path / "example.sh"
        cmd = ["bash", "-eo", "pipefail", str(script)]
    else:
        script = tmp_path / "example.py"
        cmd = [sys.executable, "-P", str(script)]
    script.write_text(code, encoding="utf-8")
    try:
        proc = subprocess.run(cmd, cwd=tmp_path, env=example_env(), capture_output=True, text=True,
                              timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{name} did not finish in {TIMEOUT_S} s")
    if proc.returncode != 0:
        pytest.fail(f"{name} exited with {proc.returncode}\n--- stdout (tail)\n{proc.stdout[-3000:]}"
                    f"\n--- stderr (tail)\n{proc.stderr[-3000:]}", pytrace=False)
