"""Output directories you can trust: a lock while written, a manifest written last,
and block checkpoints that are data (npz / JSON), validated before reuse.

Layout of an output directory ``OUT``::

    OUT/.coref.lock        exists only while a command writes OUT (JSON: pid, host, command, start)
    OUT/manifest.json      written LAST: a finished run has it, an interrupted one does not
    OUT/...                the command's files, each listed in the manifest with its SHA-256
    OUT/encodings.npz      ``coref predict`` / ``add``: the per-mention encodings of the mentions
                           (:func:`write_encodings`), reused by a later ``coref add``
    OUT/.checkpoint/KEY/   ``coref run`` per-block results (npz) and fold models, KEY = settings hash

manifest.json (``"format": "coref-output"``, ``"version": 1``) holds ``command``,
``coref_version``, ``settings`` (the whole :class:`coref.settings.CorefSettings`),
``settings_key``, ``seed``, ``input`` (path, format and a SHA-256 of the mentions),
``model`` (where the model came from and its checksum), ``files`` (name -> sha256 and
bytes) and ``finished`` (UTC time). When a command starts on an existing ``OUT`` it
removes the old manifest first and then the files the old manifest listed, so the
files of two runs are never left side by side.

Nothing here unpickles: checkpoints are ``np.load(..., allow_pickle=False)`` npz files
whose JSON header and arrays are checked against the block they claim to cover (its
name, its mention ids, the settings key) before reuse; anything else is refused,
counted and recomputed.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import socket
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from sampling.utils.atomic import atomic_path, atomic_write_text

__all__ = ["OutputError", "OutputDir", "sha256_file", "mentions_checksum", "read_manifest",
           "CheckpointStore", "MANIFEST", "LOCK", "ENCODINGS_FILE", "EncodingsError", "write_encodings",
           "read_encodings"]

MANIFEST = "manifest.json"
LOCK = ".coref.lock"
CHECKPOINT_DIR = ".checkpoint"
_MANIFEST_FORMAT = "coref-output"
_MANIFEST_VERSION = 1
_CHECKPOINT_FORMAT = "coref-block-checkpoint"
_CHECKPOINT_VERSION = 2


class OutputError(OSError):
    """An output directory cannot be used (locked, unwritable, not a directory, unfinished)."""


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
        from coref import __version__

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


# --------------------------------------------------------------------------- checkpoints

class CheckpointStore:
    """Per-block results of ``coref run`` under ``OUT/.checkpoint/KEY`` as npz files.

    One file per (sampler, fold, block) holds a JSON header (format, version, settings
    key, sampler, fold, block, counts) and the arrays ``mention_id``, ``cluster_id``,
    ``evals_history`` and ``labels_history``. :meth:`load_block` returns the result only
    if every field matches what the caller expects, including the exact set of the
    block's mention ids; otherwise it records why in :attr:`refused` and returns None.
    """

    def __init__(self, out, key):
        self.key = key
        self.root = Path(out) / CHECKPOINT_DIR / key
        self.refused = []

    def _block_path(self, sampler, fold, block):
        h = hashlib.sha256(str(block).encode("utf-8")).hexdigest()[:24]
        return self.root / sampler / f"fold{int(fold)}" / f"{h}.npz"

    def model_dir(self, fold):
        """Directory of the fold's saved model (``coref.model`` format)."""
        return self.root / f"model_fold{int(fold)}"

    def save_block(self, result):
        header = {"format": _CHECKPOINT_FORMAT, "version": _CHECKPOINT_VERSION, "settings_key": self.key,
                  "sampler": result.sampler, "fold": int(result.fold), "block": str(result.block),
                  "n_mentions": int(len(result.mention_id)), "n_factor_evals": int(result.n_factor_evals),
                  "wall_s": float(result.wall_s)}
        lh = result.labels_history
        arrays = {
            "header": np.array(json.dumps(header)),
            "mention_id": np.asarray(result.mention_id, dtype=str),
            "cluster_id": np.asarray(result.cluster_id, dtype=str),
            "evals_history": np.asarray(result.evals_history, dtype=np.int64),
            "labels_history": (np.zeros((0, len(result.mention_id)), np.int32) if lh is None
                               else np.asarray(lh, dtype=np.int32)),
        }
        with atomic_path(self._block_path(result.sampler, result.fold, result.block)) as tmp:
            with open(tmp, "wb") as fh:
                np.savez(fh, **arrays)

    def load_block(self, sampler, fold, block, mention_ids):
        """The checkpointed :class:`coref.inference.BlockResult`, or None (refusal recorded).

        Parameters
        ----------
        mention_ids : array-like of str
            The block's mention ids now; the checkpoint must cover exactly these.
        """
        from coref.inference import BlockResult

        path = self._block_path(sampler, fold, block)
        if not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as z:
                header = json.loads(str(z["header"][()]))
                arrs = {k: z[k] for k in ("mention_id", "cluster_id", "evals_history", "labels_history")}
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, json.JSONDecodeError, EOFError) as exc:
            self.refused.append(f"{path}: unreadable checkpoint ({type(exc).__name__}: {exc})")
            return None
        want = {"format": _CHECKPOINT_FORMAT, "version": _CHECKPOINT_VERSION, "settings_key": self.key,
                "sampler": sampler, "fold": int(fold), "block": str(block)}
        for k, v in want.items():
            if not isinstance(header, dict) or header.get(k) != v:
                got = header.get(k) if isinstance(header, dict) else None
                self.refused.append(f"{path}: {k} is {got!r}, expected {v!r}")
                return None
        ids = np.asarray(arrs["mention_id"]).astype(str)
        now = np.asarray(mention_ids).astype(str)
        n = len(now)
        if len(ids) != n or set(ids.tolist()) != set(now.tolist()) or len(set(ids.tolist())) != n:
            missing = len(set(now.tolist()) - set(ids.tolist()))
            self.refused.append(f"{path}: covers {len(ids)} mentions of block {block!r}, which has {n} "
                                f"({missing} missing from the checkpoint)")
            return None
        cid = np.asarray(arrs["cluster_id"]).astype(str)
        ev = np.asarray(arrs["evals_history"])
        lh = np.asarray(arrs["labels_history"])
        if (cid.shape != (n,) or ev.ndim != 1 or ev.dtype.kind not in "iu" or lh.ndim != 2 or lh.shape[1] != n
                or lh.dtype.kind not in "iu" or (lh.shape[0] and lh.shape[0] != len(ev))
                or not isinstance(header.get("n_factor_evals"), int) or header.get("n_mentions") != n
                or not isinstance(header.get("wall_s"), (int, float))):
            self.refused.append(f"{path}: array shapes or counts do not match block {block!r}")
            return None
        return BlockResult(sampler, int(fold), str(block), ids.astype(object), cid.astype(object),
                           int(header["n_factor_evals"]), float(header["wall_s"]), ev.astype(np.int64),
                           lh.astype(np.int32) if lh.shape[0] else None)


# --------------------------------------------------------------------------- per-mention encodings

ENCODINGS_FILE = "encodings.npz"
_ENCODINGS_FORMAT = "coref-mention-encodings"
_ENCODINGS_VERSION = 1


class EncodingsError(ValueError):
    """A saved per-mention encoding cannot be reused (unreadable, foreign, tampered or stale)."""


def write_encodings(path, enc, *, model_sha256):
    """Save a :class:`coref.features.MentionEncoding` as an npz file (no pickle), atomically.

    Layout: ``header`` (JSON string: format ``coref-mention-encodings``, version 1, the
    SHA-256 of the model.json whose vocabulary made it, ``n_mentions``, ``n_vocab``,
    ``n_topics``), ``mention_id`` (unicode), ``array__<name>`` for each array and
    ``table__<name>`` for each string table of the encoding.

    Parameters
    ----------
    path : str or os.PathLike
    enc : coref.features.MentionEncoding
    model_sha256 : str
        Hex SHA-256 of the model's model.json (``coref.inputs.resolve_model`` info).
    """
    header = {"format": _ENCODINGS_FORMAT, "version": _ENCODINGS_VERSION, "model_json_sha256": str(model_sha256),
              "n_mentions": int(len(enc)), "n_vocab": {k: int(v) for k, v in enc.n_vocab.items()},
              "n_topics": int(enc.n_topics)}
    arrays = {"header": np.array(json.dumps(header, sort_keys=True)),
              "mention_id": np.asarray(enc.mention_id, dtype=str)}
    arrays.update({f"array__{k}": v for k, v in enc.arrays.items()})
    arrays.update({f"table__{k}": v for k, v in enc.tables.items()})
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)


def read_encodings(path, *, model_sha256, mention_ids, vocabulary=None):
    """A saved per-mention encoding, validated field by field, rows in the order of ``mention_ids``.

    Parameters
    ----------
    path : str or os.PathLike
    model_sha256 : str
        The model now in use: the file must have been made with it.
    mention_ids : array-like of str
        The mentions the file must cover, exactly (no more, no fewer).
    vocabulary : coref.features.Vocabulary or None
        When given, the file's vocabulary sizes must be its.

    Returns
    -------
    coref.features.MentionEncoding

    Raises
    ------
    EncodingsError
        Naming the file and the field: unreadable, another format or version, another
        model, other mentions, or an array of the wrong name, dtype, shape or range.
    """
    from coref.features import MentionEncoding

    path = Path(path)

    def bad(msg):
        raise EncodingsError(f"{path}: {msg}")

    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
        bad(f"unreadable ({type(exc).__name__}: {exc})")
    try:
        header = json.loads(str(data.pop("header")[()]))
    except (KeyError, ValueError, TypeError) as exc:
        bad(f"no valid JSON header ({type(exc).__name__}: {exc})")
    if not isinstance(header, dict):
        bad("the header is not a JSON object")
    for k, v in (("format", _ENCODINGS_FORMAT), ("version", _ENCODINGS_VERSION), ("model_json_sha256", model_sha256)):
        if header.get(k) != v:
            bad(f"header field {k!r} is {header.get(k)!r}, expected {v!r}"
                + (" (made with another model)" if k == "model_json_sha256" else ""))
    if "mention_id" not in data:
        bad("no array 'mention_id'")
    mids = data.pop("mention_id")
    if mids.ndim != 1 or mids.dtype.kind != "U":
        bad("'mention_id' must be a 1-D unicode array")
    if header.get("n_mentions") != len(mids):
        bad(f"header n_mentions {header.get('n_mentions')!r} differs from the {len(mids)} mention ids")
    arrays = {k[len("array__"):]: v for k, v in data.items() if k.startswith("array__")}
    tables = {k[len("table__"):]: v for k, v in data.items() if k.startswith("table__")}
    other = [k for k in data if not k.startswith(("array__", "table__"))]
    if other:
        bad(f"unexpected member(s) {other}")
    n_vocab, n_topics = header.get("n_vocab"), header.get("n_topics")
    if not isinstance(n_vocab, dict) or isinstance(n_topics, bool) or not isinstance(n_topics, int):
        bad("header fields 'n_vocab' (object) and 'n_topics' (int) are required")
    enc = MentionEncoding(mids.astype(object), arrays, tables, n_vocab, n_topics)
    try:
        enc.validate(vocabulary, where=str(path))
    except ValueError as exc:
        raise EncodingsError(str(exc)) from None
    want = np.asarray(mention_ids, dtype=object).astype(str)
    index = pd.Index(mids)
    pos = index.get_indexer(want)
    if len(want) != len(mids) or (pos < 0).any():
        missing = int((pos < 0).sum())
        bad(f"covers {len(mids)} mentions; the clustering has {len(want)} ({missing} of them not in the file)")
    return enc.take(pos)
