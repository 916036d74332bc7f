"""The per-user cache of rebuilt model graphs: location, hashing, atomic writes."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write", "cache_dir", "file_sha256"]

_CHUNK = 1 << 20


def cache_dir() -> Path:
    """Return the directory for rebuilt graphs (not created here).

    ``$EMBEDMIND_CACHE_DIR`` wins, then ``$XDG_CACHE_HOME/embedmind``, then
    ``~/.cache/embedmind``.

    Returns:
        The cache directory path.
    """
    explicit = os.environ.get("EMBEDMIND_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "embedmind"


def file_sha256(path: Path) -> str:
    """Return the hex sha256 of a file, read in 1 MiB chunks.

    Args:
        path: The file.

    Returns:
        The lowercase hex digest.
    """
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old file or the whole new one.

    A temp file in the same directory is written, fsynced and renamed over
    ``path``; the directory is fsynced so the rename survives a crash.

    Args:
        path: The destination; its parent directory is created if missing.
        data: The bytes to write.

    Raises:
        OSError: When the directory is not writable or the disk is full.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    """Fsync a directory where the platform allows it (not on Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
