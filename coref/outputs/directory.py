"""The output directory of a coref command: a lock while written, a manifest written last.

Layout of an output directory ``OUT``::

    OUT/.coref.lock        exists only while a command writes OUT (JSON: pid, host, command, start)
    OUT/manifest.json      written LAST: a finished run has it, an interrupted one does not
    OUT/...                the command's files, each listed in the manifest with its SHA-256
    OUT/encodings.npz      ``coref predict`` / ``add``: the per-mention encodings of the mentions
                           (:mod:`coref.outputs.encodings`), reused by a later ``coref add``
    OUT/.checkpoint/KEY/   ``coref run`` per-block results (npz) and fold models, KEY = settings hash
                           (:mod:`coref.outputs.checkpoints`)

manifest.json (``"format": "coref-output"``, ``"version": 1``) holds ``command``,
``coref_version``, ``settings`` (the whole :class:`coref.settings.CorefSettings`),
``settings_key``, ``seed``, ``input`` (path, format and a SHA-256 of the mentions),
``model`` (where the model came from and its checksum), ``files`` (name -> sha256 and
bytes) and ``finished`` (UTC time). When a command starts on an existing ``OUT`` it
removes the old manifest first and then the files the old manifest listed, so the
files of two runs are never left side by side.

Nothing here unpickles: the npz files of this package are written by :func:`write_npz`
and read with ``np.load(..., allow_pickle=False)``.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import socket
from pathlib import Path

import numpy as np
import pandas as pd

from coref import __version__
from coref.exceptions import OutputError
from sampling.utils.atomic import atomic_path, atomic_write_text

__all__ = ["OutputError", "OutputDir", "sha256_file", "mentions_checksum", "read_manifest", "write_npz",
           "MANIFEST", "LOCK"]

MANIFEST = "manifest.json"
LOCK = ".coref.lock"
_MANIFEST_FORMAT = "coref-output"
_MANIFEST_VERSION = 1


def sha256_file(path, chunk=1 << 20):
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def mentions_checksum(df):
    """Hex SHA-256 of a mention table's content, independent of the row order.

    List cells (``coauthors``, ``keywords``) are joined with ``|``; every other cell is
    hashed as text; rows are taken in ``mention_id`` order and columns in sorted order.
    """
    cols = sorted(df.columns)
    frame = df.loc[:, cols].copy()
    for c in cols:
        frame[c] = frame[c].map(_cell_text)
    frame = frame.sort_values("mention_id", kind="stable") if "mention_id" in frame else frame
    h = hashlib.sha256(json.dumps(cols).encode())
    h.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return h.hexdigest()


def _cell_text(v):
    if isinstance(v, (list, tuple, np.ndarray)):
        return "|".join(str(x) for x in v)
    if v is None or v is pd.NA or (isinstance(v, float) and v != v):
        return "\x00NA"
    return str(v)


def _now():
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _pid_alive(pid):
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def read_manifest(out):
    """The manifest of a finished output directory, its files checked.

    Parameters
    ----------
    out : str or os.PathLike
        An output directory of ``coref predict`` / ``add`` / ``run``.

    Returns
    -------
    dict

    Raises
    ------
    OutputError
        If ``out`` has no manifest (an interrupted or foreign directory), is locked (still
        being written), or a listed file is missing or its SHA-256 differs; the message
        names the file.
    """
    out = Path(out)
    path = out / MANIFEST
    if (out / LOCK).exists():
        raise OutputError(f"{out}: a coref command is still writing it (lock file {out / LOCK})")
    if not path.is_file():
        raise OutputError(f"{path}: no manifest; {out} is not the output of a finished coref command "
                          "(interrupted, or written by something else)")
    try:
        m = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OutputError(f"{path}: unreadable manifest ({exc})") from None
    if not isinstance(m, dict) or m.get("format") != _MANIFEST_FORMAT or not isinstance(m.get("files"), dict):
        raise OutputError(f"{path}: not a coref output manifest (format {m.get('format') if isinstance(m, dict) else None!r})")
    if m.get("version") != _MANIFEST_VERSION:
        raise OutputError(f"{path}: manifest version {m.get('version')!r}; this coref reads version {_MANIFEST_VERSION}")
    for name, meta in m["files"].items():
        f = _inside(out, name, path)
        if not f.is_file():
            raise OutputError(f"{f}: listed in {path} but missing")
        if not isinstance(meta, dict) or sha256_file(f) != meta.get("sha256"):
            raise OutputError(f"{f}: SHA-256 differs from {path} (the file was changed after the run)")
    return m


def _inside(out, name, where):
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name in (".", "..") \
            or name.startswith("."):
        raise OutputError(f"{where}: bad file name {name!r} in the manifest")
    return out / name


class OutputDir:
    """An output directory held for one command: lock on enter, manifest on :meth:`finish`.

    Parameters
    ----------
    out : str or os.PathLike
        Directory (created with its parents).
    command : str
        Recorded in the lock and the manifest.

    Raises
    ------
    OutputError
        On enter, before any work: ``out`` exists and is not a directory, cannot be
        created or written, or another live command holds its lock (the message names
        the lock file, pid and host). A lock left by a dead process of this host is
        taken over.

    Notes
    -----
    On enter the previous manifest is removed first (so the directory no longer looks
    finished) and then every file that manifest listed. :meth:`path` gives where to
    write a file (write it atomically); :meth:`finish` hashes them and writes the
    manifest last. The lock is released on exit, also after an error; the manifest is
    then absent, which marks the directory as unfinished.
    """

    def __init__(self, out, command):
        self.out = Path(out).expanduser()
        self.command = command
        self.files = []
        self._locked = False

    def __enter__(self):
        out = self.out
        if out.exists() and not out.is_dir():
            raise OutputError(f"--out {str(out)!r} exists and is not a directory")
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"--out {str(out)!r}: cannot create the directory ({exc.strerror or exc})") from None
        if not os.access(out, os.W_OK | os.X_OK):
            raise OutputError(f"--out {str(out)!r}: the directory is not writable")
        self._lock()
        try:
            self._clear_previous()
        except BaseException:
            self._unlock()
            raise
        return self

    def __exit__(self, *exc):
        self._unlock()
        return False

    # ------------------------------------------------------------------ lock
    def _lock(self):
        lock = self.out / LOCK
        info = {"pid": os.getpid(), "host": socket.gethostname(), "command": self.command, "started": _now()}
        for _ in range(2):
            try:
                fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                other = {}
                with contextlib.suppress(OSError, ValueError):
                    other = json.loads(lock.read_text(encoding="utf-8"))
                if (isinstance(other, dict) and other.get("host") == info["host"]
                        and isinstance(other.get("pid"), int) and not _pid_alive(other["pid"])):
                    with contextlib.suppress(FileNotFoundError):
                        lock.unlink()  # left by a process of this host that died: take it over
                    continue
                who = (f"pid {other.get('pid')} on {other.get('host')}, coref {other.get('command')} "
                       f"since {other.get('started')}") if isinstance(other, dict) and other else "unknown"
                raise OutputError(f"--out {str(self.out)!r} is locked by another coref command ({who}); "
                                  f"wait for it to finish or, if no command is writing there, delete {lock}") from None
            except OSError as exc:
                raise OutputError(f"--out {str(self.out)!r}: cannot write there ({exc.strerror or exc})") from None
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(info, fh)
            self._locked = True
            return
        raise OutputError(f"--out {str(self.out)!r}: could not take the lock {lock}")

    def _unlock(self):
        if self._locked:
            with contextlib.suppress(FileNotFoundError):
                (self.out / LOCK).unlink()
            self._locked = False

    def _clear_previous(self):
        path = self.out / MANIFEST
        if not path.exists():
            return
        old = {}
        with contextlib.suppress(OSError, ValueError):
            old = json.loads(path.read_text(encoding="utf-8"))
        path.unlink()
        files = old.get("files") if isinstance(old, dict) else None
        for name in (files or {}):
            with contextlib.suppress(OutputError, OSError):
                _inside(self.out, name, path).unlink()

    # ------------------------------------------------------------------ files
    def path(self, name):
        """Where to write output file ``name`` (recorded for the manifest)."""
        if name not in self.files:
            self.files.append(name)
        return self.out / name

    def finish(self, *, settings, input_info=None, model_info=None, extra=None):
        """Hash every recorded file and write manifest.json atomically, last.

        Returns
        -------
        dict
            The manifest written.
        """
        files = {}
        for name in self.files:
            f = self.out / name
            if f.is_file():
                files[name] = {"sha256": sha256_file(f), "bytes": f.stat().st_size}
        manifest = {
            "format": _MANIFEST_FORMAT, "version": _MANIFEST_VERSION, "command": self.command,
            "coref_version": __version__, "settings": settings.to_dict(), "settings_key": settings.key(),
            "seed": settings.seed, "input": input_info or {}, "model": model_info or {},
            **(extra or {}), "files": files, "finished": _now(),
        }
        atomic_write_text(self.out / MANIFEST, json.dumps(manifest, indent=2, default=str) + "\n")
        return manifest


def write_npz(path, arrays):
    """Save ``arrays`` (name -> ndarray, no object arrays) as an uncompressed npz file, atomically."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
