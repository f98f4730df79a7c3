"""The lock file of an output directory: who writes it, and whether that process still lives.

``OUT/.coref.lock`` is a JSON object (pid, host, command, start) created with
``O_EXCL`` while a command writes ``OUT``. A lock whose process is dead (same host)
marks an interrupted command, not a running one; the messages here tell the two apart
and say what to do about each.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import socket
from pathlib import Path

from coref.exceptions import OutputError

__all__ = ["LOCK", "read_lock", "lock_state", "lock_message", "acquire_lock", "release_lock", "now_utc"]

LOCK = ".coref.lock"


def now_utc():
    """The current UTC time, ISO 8601 to the second."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _pid_alive(pid):
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def read_lock(out):
    """The lock of ``out`` as a dict ({} when unreadable), or None when there is none."""
    lock = Path(out) / LOCK
    if not lock.exists():
        return None
    info = {}
    with contextlib.suppress(OSError, ValueError):
        info = json.loads(lock.read_text(encoding="utf-8"))
    return info if isinstance(info, dict) else {}


def lock_state(info):
    """``"running"``, ``"interrupted"`` (its pid is dead, on this host) or ``"unknown"`` for a lock ``info``."""
    pid = info.get("pid") if isinstance(info, dict) else None
    if not isinstance(pid, int) or info.get("host") != socket.gethostname():
        return "unknown"
    return "running" if _pid_alive(pid) else "interrupted"


def lock_message(out, info):
    """What a lock ``info`` on ``out`` means for a user, and what to do about it.

    ``"a coref command (pid N) is still writing it"`` for a live process of this host;
    ``"the run that wrote it (pid N) was interrupted: ..."`` with the way to finish or
    redo it for a dead one; otherwise the lock's content and how to clear it.
    """
    lock = Path(out) / LOCK
    info = info if isinstance(info, dict) else {}
    pid, cmd = info.get("pid"), info.get("command")
    state = lock_state(info)
    if state == "running":
        return (f"{out}: a coref command (pid {pid}) is still writing it (coref {cmd}, started {info.get('started')}); "
                "wait for it to finish")
    if state == "interrupted":
        redo = "rerun with --resume" if cmd == "run" else f"rerun coref {cmd or 'the command'}"
        return f"{out}: the run that wrote it (pid {pid}) was interrupted: {redo}, or remove {out} to start over"
    who = f"pid {pid} on {info.get('host')}, coref {cmd}" if info else "unreadable lock"
    return (f"{out}: locked by a coref command ({who}) that cannot be checked from this host; "
            f"if no command is writing there, delete {lock}")


def acquire_lock(out, command):
    """Create ``out/.coref.lock`` for this process; a lock of a dead process of this host is taken over.

    Returns
    -------
    dict or None
        The lock taken over (its pid's leftovers may be cleaned), else None.

    Raises
    ------
    OutputError
        If a live (or unverifiable) command holds the lock, or the lock cannot be written.
    """
    lock = Path(out) / LOCK
    info = {"pid": os.getpid(), "host": socket.gethostname(), "command": command, "started": now_utc()}
    taken_over = None
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            other = read_lock(out) or {}
            if lock_state(other) == "interrupted":
                with contextlib.suppress(FileNotFoundError):
                    lock.unlink()   # left by a process of this host that died: take it over
                taken_over = other
                continue
            raise OutputError(f"--out {lock_message(out, other)}") from None
        except OSError as exc:
            raise OutputError(f"--out {str(out)!r}: cannot write there ({exc.strerror or exc})") from None
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(info, fh)
        return taken_over
    raise OutputError(f"--out {str(out)!r}: could not take the lock {lock}")


def release_lock(out):
    """Remove ``out/.coref.lock`` (if present)."""
    with contextlib.suppress(FileNotFoundError):
        (Path(out) / LOCK).unlink()
