"""The output directory of a coref command: a lock while written, a manifest written last.

Layout of an output directory ``OUT``::

    OUT/.coref.lock        exists only while a command writes OUT (JSON: pid, host, command, start)
    OUT/manifest.json      written LAST: a finished run has it, an interrupted one does not
    OUT/...                the command's files, each listed in the manifest with its SHA-256
    OUT/encodings.npz      ``coref predict`` / ``add``: the per-mention encodings of the mentions
                           (:mod:`coref.outputs.encodings`), reused by a later ``coref add``
    OUT/encodings-gNNNNN.npz, OUT/blocks.csv
                           instead, for a ``coref predict`` streamed in block groups
                           (:mod:`coref.jobs.streaming`): one encodings file per group (and one
                           per later ``coref add``), and the files, sampler and size of each block
    OUT/.checkpoint/stream-KEY/  a streamed ``coref predict`` while it runs: the block groups and
                           the pieces of the finished ones (kept when interrupted, to resume)
    OUT/.checkpoint/KEY/   ``coref run`` per-block results (npz) and fold models, KEY = settings hash
                           (:mod:`coref.outputs.checkpoints`)

manifest.json (``"format": "coref-output"``, ``"version": 1``) holds ``command``,
``coref_version``, ``settings`` (the whole :class:`coref.settings.CorefSettings`),
``settings_key``, ``seed``, ``input`` (path, format and a SHA-256 of the mentions),
``model`` (where the model came from and its checksum), ``files`` (name -> sha256 and
bytes), ``finished`` (UTC time) and ``manifest_sha256``, the SHA-256 of the rest of the
manifest (an edited manifest is refused by name).

A finished run in ``OUT`` is replaced only by a finished run: a command checks ``OUT``
(and that it is not an input) before any work, writes its files into
``OUT/.partial-PID`` and, once every file is written, swaps them in: the old manifest
removed, each new file renamed over the old one (atomic per file), the old run's other
files removed, the new manifest renamed in last. A command that fails before the swap
leaves the previous run as it was, removes ``OUT`` when it created it and it is left
empty, and says so in a note of the exception (:meth:`OutputDir.__exit__`).

Nothing here unpickles: the npz files of this package are written by :func:`write_npz`
and read with ``np.load(..., allow_pickle=False)``.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from coref import __version__
from coref.exceptions import OutputError
from coref.outputs.lock import LOCK, acquire_lock, lock_message, lock_state, now_utc, read_lock, release_lock
from sampling.utils.atomic import atomic_path, atomic_write_text

__all__ = ["OutputError", "OutputDir", "sha256_file", "mentions_checksum", "read_manifest", "verify_listed", "write_npz",
           "MANIFEST", "LOCK", "check_out_location", "manifest_digest", "content_digest", "PARTIAL_PREFIX"]

MANIFEST = "manifest.json"
PARTIAL_PREFIX = ".partial-"
_MANIFEST_FORMAT = "coref-output"
_MANIFEST_VERSION = 2
_READABLE_VERSIONS = (1, 2)   # version 1: no manifest_sha256


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


def manifest_digest(manifest):
    """Hex SHA-256 of a manifest's content (every key but ``manifest_sha256``, as canonical JSON)."""
    body = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def read_manifest(out, *, deferred=None):
    """The manifest of a finished output directory, its files checked.

    Parameters
    ----------
    out : str or os.PathLike
        An output directory of ``coref predict`` / ``add`` / ``run``.
    deferred : callable, optional
        ``deferred(name) -> bool``: listed files whose hashing the caller defers because it
        may not read them (``coref add`` onto a block-group output reads the encodings of the
        touched blocks only). Such a file is checked here by its size and modification time
        only: it is hashed now if it is newer than the manifest (copied or edited since);
        otherwise the caller must hash it with :func:`verify_listed` before reading it,
        and may pass it on unread with the SHA-256 the manifest records (a later reader
        checks that claim). Default: every listed file is hashed now.

    Returns
    -------
    dict

    Raises
    ------
    OutputError
        If ``out`` has no manifest (an interrupted or foreign directory), is locked (a
        running command still writes it, or the one that did was interrupted and left
        no finished run: the message tells which and what to do), the manifest was edited (its
        ``manifest_sha256`` differs), or a listed file is missing or its SHA-256
        differs; the message names the file.
    """
    out = Path(out)
    path = out / MANIFEST
    lock = read_lock(out)
    # a dead command's lock beside a manifest: that command was interrupted before its swap,
    # so the finished run it would have replaced is still whole (its files are checked below)
    if lock is not None and not (lock_state(lock) == "interrupted" and path.is_file()):
        raise OutputError(lock_message(out, lock))
    if not path.is_file():
        raise OutputError(f"{path}: no manifest; {out} is not the output of a finished coref command "
                          "(interrupted, or written by something else)")
    try:
        m = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OutputError(f"{path}: unreadable manifest ({exc})") from None
    if not isinstance(m, dict) or m.get("format") != _MANIFEST_FORMAT or not isinstance(m.get("files"), dict):
        raise OutputError(f"{path}: not a coref output manifest (format {m.get('format') if isinstance(m, dict) else None!r})")
    if m.get("version") not in _READABLE_VERSIONS:
        raise OutputError(f"{path}: manifest version {m.get('version')!r}; this coref reads versions "
                          f"{', '.join(map(str, _READABLE_VERSIONS))}")
    if m["version"] >= 2 and m.get("manifest_sha256") != manifest_digest(m):
        raise OutputError(f"{path}: its checksum (manifest_sha256) does not match its content: the manifest was "
                          "edited after the run; rerun the command that wrote it")
    manifest_mtime = path.stat().st_mtime_ns
    for name, meta in m["files"].items():
        f = _listed_file(out, name, meta, path)
        if deferred is not None and deferred(name):
            st = f.stat()
            if "bytes" in meta and st.st_size != meta["bytes"]:
                raise OutputError(f"{f}: {st.st_size} bytes, {path} lists {meta['bytes']} (the file was changed "
                                  "after the run)")
            if st.st_mtime_ns <= manifest_mtime:
                continue                     # unchanged since the run, as far as stat tells: hashed when read
        _check_digest(f, meta, path)
    return m


def verify_listed(out, manifest, name):
    """Hash the file ``name`` of the output ``out`` against ``manifest`` (as :func:`read_manifest` does).

    For a file :func:`read_manifest` deferred: call it before reading the file.

    Returns
    -------
    pathlib.Path
        The file, checked.

    Raises
    ------
    OutputError
        If ``name`` is not listed, is missing, or its SHA-256 differs from the manifest's.
    """
    out = Path(out)
    files = manifest.get("files", {})
    if name not in files:
        raise OutputError(f"{_inside(out, name, out / MANIFEST)}: not listed in {out / MANIFEST}")
    f = _listed_file(out, name, files[name], out / MANIFEST)
    _check_digest(f, files[name], out / MANIFEST)
    return f


def _listed_file(out, name, meta, where):
    """The path of the file ``name`` listed (with ``meta``) in the manifest ``where``; it must exist."""
    f = _inside(out, name, where)
    if not f.is_file():
        raise OutputError(f"{f}: listed in {where} but missing")
    if not isinstance(meta, dict):
        raise OutputError(f"{where}: bad entry for {name!r} (expected its sha256 and bytes)")
    return f


def _check_digest(f, meta, where):
    if sha256_file(f) != meta.get("sha256"):
        raise OutputError(f"{f}: SHA-256 differs from {where} (the file was changed after the run)")


def _inside(out, name, where):
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name in (".", "..") \
            or name.startswith("."):
        raise OutputError(f"{where}: bad file name {name!r} in the manifest")
    return out / name


def check_out_location(out, inputs=(), *, option="--out"):
    """Refuse an output location before any work, without creating or changing anything.

    Parameters
    ----------
    out : str or os.PathLike
        The output directory (need not exist).
    inputs : iterable of (str, path or None)
        ``(what, path)`` of each input of the command (e.g. ``("--data", "x/")``);
        ``None`` (and non-path values such as DataFrames) are skipped.
    option : str
        How the output is named in messages.

    Raises
    ------
    OutputError
        If ``out`` is a file, cannot be created (a parent is a file or not writable),
        is an existing directory that is not writable, equals an input or lies inside an
        input directory, or is locked by a running command.
    """
    out = Path(out).expanduser()
    if out.exists() and not out.is_dir():
        raise OutputError(f"{option} {str(out)!r} exists and is not a directory")
    anc = out
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise OutputError(f"{option} {str(out)!r}: cannot create the directory ({anc} is not a directory)")
    if not os.access(anc, os.W_OK | os.X_OK):
        what = "the directory is not writable" if anc == out else f"cannot create the directory ({anc} is not writable)"
        raise OutputError(f"{option} {str(out)!r}: {what}")
    real = out.resolve()
    for what, p in inputs:
        if not isinstance(p, (str, os.PathLike)):
            continue
        src = Path(p).expanduser().resolve()
        if real == src or (src.is_dir() and src in real.parents):
            where = "is" if real == src else "is inside"
            raise OutputError(f"{option} {str(out)!r} {where} the input {what} {str(p)!r}: its files would be mixed "
                              f"with the input's; choose an {option} outside it")
    lock = read_lock(out)
    if lock is not None and lock_state(lock) != "interrupted":
        raise OutputError(f"{option} {lock_message(out, lock)}")


class OutputDir:
    """An output directory held for one command: checked when made, locked on enter, swapped in by :meth:`finish`.

    Parameters
    ----------
    out : str or os.PathLike
        Directory (created with its parents on enter).
    command : str
        Recorded in the lock and the manifest.
    inputs : iterable of (str, path or None)
        The command's inputs: ``out`` may be neither one of them nor inside one
        (:func:`check_out_location`).

    Raises
    ------
    OutputError
        When made, before any work and without touching the disk: ``out`` is a file,
        cannot be created or written, is an input or inside one, or a running command
        holds its lock (the message names the pid). On enter, if another command took
        the lock meanwhile. A lock left by a dead process of this host is taken over
        (and its ``.partial-PID`` folder removed).

    Notes
    -----
    Make it first, read the inputs (inside :meth:`preparing`, so that an error there
    notes that ``out`` was not touched), then ``with od:`` write each file at
    :meth:`path` (atomically) and call :meth:`finish`. Until :meth:`finish` the new files
    are in ``OUT/.partial-PID``; a previous finished run stays in ``OUT`` as it was.
    On an error the partial folder is removed, ``OUT`` too if this command created it
    and nothing else is in it, the lock is released, and a note saying what was changed
    is added to the exception (``exc.__notes__``).
    """

    def __init__(self, out, command, *, inputs=()):
        self.out = Path(out).expanduser()
        self.command = command
        self.files = []
        self.work = None
        self._locked = False
        self._created = []
        self._had_finished = False
        self._finished = False
        self._moved = None
        self._known = {}
        check_out_location(self.out, inputs)

    @contextlib.contextmanager
    def preparing(self):
        """Context for reading inputs before enter: an error gets the note that ``out`` was not touched."""
        try:
            yield self
        except BaseException as exc:
            exc.add_note(f"--out {self.out}: not touched")
            raise

    def __enter__(self):
        out = self.out
        check_out_location(out)
        missing, p = [], out
        while not p.exists() and p != p.parent:
            missing.append(p)
            p = p.parent
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"--out {str(out)!r}: cannot create the directory ({exc.strerror or exc})") from None
        self._created = missing
        try:
            if not os.access(out, os.W_OK | os.X_OK):
                raise OutputError(f"--out {str(out)!r}: the directory is not writable")
            old = acquire_lock(out, self.command)
            self._locked = True
            if old and isinstance(old.get("pid"), int):
                shutil.rmtree(out / f"{PARTIAL_PREFIX}{old['pid']}", ignore_errors=True)
            self._had_finished = (out / MANIFEST).is_file()
            self.work = out / f"{PARTIAL_PREFIX}{os.getpid()}"
            shutil.rmtree(self.work, ignore_errors=True)
            self.work.mkdir()
        except BaseException:
            self._abandon()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        if not self._finished:
            note = self._abandon()
            if exc is not None:
                exc.add_note(note)
        self._release()
        return False

    # ------------------------------------------------------------------ failure
    def _release(self):
        if self._locked:
            release_lock(self.out)
            self._locked = False

    def _abandon(self):
        """Undo what this command did in ``out`` (not its checkpoints); return a note saying what changed."""
        out = self.out
        if self._moved is not None:   # failed half way through the swap: keep what is left of the new run
            self._release()
            return (f"--out {out}: the swap of the new results into place failed after {self._moved} file(s); "
                    f"the previous results are gone, the new files not yet moved are in {self.work}")
        if self.work is not None:
            shutil.rmtree(self.work, ignore_errors=True)
        self._release()
        removed = False
        for d in self._created:            # deepest first; only if left empty
            try:
                d.rmdir()
                removed = True
            except OSError:
                break
        if removed and not out.exists():
            return f"--out {out}: not created"
        notes = [f"--out {out}: " + ("the previous results there are kept, unchanged" if self._had_finished
                                      else "nothing was written there")]
        ckpt = out / ".checkpoint"
        if self.command == "run" and ckpt.is_dir() and any(ckpt.rglob("*.npz")):
            notes.append(f"the blocks finished so far are checkpointed in {ckpt} (rerun with --resume to reuse them)")
        if self.command == "predict" and ckpt.is_dir() and any(ckpt.glob("stream-*/plan.json")):
            notes.append(f"the block groups read and finished so far are kept in {ckpt} (run the same command "
                         "again to resume from them)")
        return "; ".join(notes)

    # ------------------------------------------------------------------ files
    def path(self, name):
        """Where to write output file ``name`` (in the partial folder; recorded for the manifest)."""
        if self.work is None:
            raise RuntimeError("OutputDir.path() before entering the OutputDir")
        if name not in self.files:
            self.files.append(name)
        return self.work / name

    def link(self, src, name, sha256):
        """Put a copy of the file ``src`` whose SHA-256 is known in as output file ``name``.

        Known: hashed, or recorded by the manifest of the run ``src`` comes from and unchanged
        since as far as :func:`read_manifest` (``deferred``) tells by size and time; a reader
        of the new output hashes it against the same value.

        A hard link when the file system allows it (no bytes copied; :meth:`finish` then
        takes ``sha256`` instead of hashing the file again, as long as the link is still
        the same unchanged file), else a copy (hashed as any file).
        """
        dst = self.path(name)
        try:
            os.link(src, dst)
        except OSError:
            shutil.copyfile(src, dst)
            return dst
        st = dst.stat()
        self._known[name] = (str(sha256), st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns)
        return dst

    def finish(self, *, settings, input_info=None, model_info=None, extra=None):
        """Hash every recorded file, write manifest.json, and swap the new run into ``out``.

        Returns
        -------
        dict
            The manifest written.
        """
        files = {}
        for name in self.files:
            f = self.work / name
            if f.is_file():
                st = f.stat()
                known = self._known.get(name)
                same = known is not None and known[1:] == (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns)
                files[name] = {"sha256": known[0] if same else sha256_file(f), "bytes": st.st_size}
        manifest = {
            "format": _MANIFEST_FORMAT, "version": _MANIFEST_VERSION, "command": self.command,
            "coref_version": __version__, "settings": settings.to_dict(), "settings_key": settings.key(),
            "seed": settings.seed, "input": input_info or {}, "model": model_info or {},
            **(extra or {}), "files": files, "finished": now_utc(),
        }
        manifest = json.loads(json.dumps(manifest, default=str))
        manifest["manifest_sha256"] = manifest_digest(manifest)
        atomic_write_text(self.work / MANIFEST, json.dumps(manifest, indent=2) + "\n")
        self._swap(files)
        return manifest

    def _swap(self, files):
        """Move the finished files of the partial folder into ``out``, the manifest last."""
        out, work = self.out, self.work
        old = {}
        with contextlib.suppress(OSError, ValueError):
            old = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
        old_files = old.get("files") if isinstance(old, dict) and isinstance(old.get("files"), dict) else {}
        self._moved = 0
        (out / MANIFEST).unlink(missing_ok=True)        # from here on OUT is not a finished run
        for name in files:
            os.replace(work / name, out / name)
            self._moved += 1
        for name in old_files:
            if name not in files:
                with contextlib.suppress(OutputError, OSError):
                    _inside(out, name, out / MANIFEST).unlink()
        os.replace(work / MANIFEST, out / MANIFEST)
        self._moved = None
        self._finished = True
        shutil.rmtree(work, ignore_errors=True)


def content_digest(key, header, arrays):
    """Hex SHA-256 of a data file's content and the settings it was made for.

    Parameters
    ----------
    key : str
        The settings key (or any string naming what the file was made for).
    header : dict
        JSON-able header; its ``content_sha256`` (if any) is left out.
    arrays : dict of {str: numpy.ndarray}
        Hashed in name order: name, dtype, shape and bytes of each.

    Returns
    -------
    str
    """
    h = hashlib.sha256(str(key).encode("utf-8"))
    body = {k: v for k, v in header.items() if k != "content_sha256"}
    h.update(json.dumps(body, sort_keys=True).encode("utf-8"))
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"\x00{name}\x00{a.dtype.str}\x00{a.shape}\x00".encode("utf-8"))
        h.update(a.tobytes())
    return h.hexdigest()


def write_npz(path, arrays):
    """Save ``arrays`` (name -> ndarray, no object arrays) as an uncompressed npz file, atomically."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
