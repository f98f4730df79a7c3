"""Atomic file output: write to a temporary file in the target folder, then rename.

A reader (or a run that is killed half way) sees either the old file or the
complete new one, never a partial file. Used by every writer of the project.
"""
import contextlib
import os
import tempfile
from pathlib import Path


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; on success move it over ``path``.

    The temporary name keeps ``path``'s suffix, so writers that pick a format from
    the extension (``DataFrame.to_parquet``, ``Figure.savefig``) work unchanged.
    Parent folders are created. On any exception the temporary file is removed and
    ``path`` is left as it was.

    Parameters
    ----------
    path : str or os.PathLike
        Final location.

    Yields
    ------
    pathlib.Path
        Where to write.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{path.suffix}", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_open(path, mode="w", **open_kwargs):
    """Open a temporary file beside ``path``; move it over ``path`` on success.

    A file-object front end to :func:`atomic_path`.

    Parameters
    ----------
    path : str or os.PathLike
        Final location (parent folders are created).
    mode : {"w", "wb"}
        Text or binary.
    **open_kwargs
        Passed to :func:`open` (e.g. ``encoding``, ``newline``).

    Yields
    ------
    file object
        Write the content to it. If the block raises, the temporary file is removed
        and ``path`` is left untouched.

    Raises
    ------
    ValueError
        If ``mode`` is not "w" or "wb".
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"the mode parameter of atomic_open must be 'w' or 'wb'; got {mode!r} instead")
    if mode == "w":
        open_kwargs.setdefault("encoding", "utf-8")
    with atomic_path(path) as tmp:
        with open(tmp, mode, **open_kwargs) as fh:
            yield fh


def atomic_write_text(path, text, *, encoding="utf-8"):
    """Write ``text`` to ``path`` atomically; return ``path`` as a ``Path``."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding=encoding)
    return Path(path)
