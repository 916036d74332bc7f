"""Every file the engine itself creates or opens goes through this module.

SQLite does its own I/O; everything else (lock files, the store file's
creation with private permissions, later the derived index files) passes
through these few functions, so tests can inject faults in one place.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Callable
from contextlib import suppress

from embedmind.crashpoints import crashpoint
from embedmind.errors import StorageError

PRIVATE_MODE = 0o600


def open_lock_file(path: str) -> int:
    """Open (creating, mode 0600) a lock file and return its descriptor.

    Raises:
        StorageError: When the file cannot be opened.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
    try:
        return os.open(path, flags, PRIVATE_MODE)
    except OSError as e:
        raise StorageError(f"cannot open lock file {path!r}: {e.strerror}") from e


def close_fd(fd: int) -> None:
    """Close a descriptor, ignoring one that is already closed."""
    if fd >= 0:
        with suppress(OSError):
            os.close(fd)


def create_private_file(path: str) -> None:
    """Create ``path`` with mode 0600 if it does not exist, so SQLite inherits the mode.

    SQLite gives its ``-wal`` and ``-shm`` files the permissions of the database
    file, so creating the database privately keeps all of them private.

    Raises:
        StorageError: When the file cannot be created.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, PRIVATE_MODE)
    except FileExistsError:
        return
    except OSError as e:
        raise StorageError(f"cannot create store {path!r}: {e.strerror}") from e
    os.close(fd)


def file_size(path: str) -> int:
    """Return the size of ``path`` in bytes, or 0 when it does not exist."""
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def checksum_bytes(data: bytes | bytearray | memoryview) -> str:
    """BLAKE2b-128 of ``data``, hex: the integrity check of index files."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def read_verified(path: str, size: int, checksum: str) -> bytes | None:
    """Read ``path`` whole and return it only if its size and checksum match.

    Anything unexpected — missing, a directory, a FIFO, a socket, a symlink,
    unreadable, the wrong size or content — returns ``None``: the caller
    rebuilds instead of trusting it. What the path names is checked with
    ``lstat`` before it is opened, and the open itself never blocks: opening a
    FIFO for reading waits for a writer, which hung every vector recall.
    """
    if not is_regular_file(path):
        return None
    try:
        # O_NONBLOCK: a FIFO swapped in after the lstat still cannot block the open.
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size != size:
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(size + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) != size or checksum_bytes(data) != checksum:
        return None
    return data


def is_regular_file(path: str) -> bool:
    """Whether ``path`` itself (not a symlink's target) is a regular file, without opening it."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def write_atomically(path: str, write: Callable[[str], None]) -> tuple[int, str]:
    """Write a file through a temporary sibling, fsync it, rename it over ``path``.

    The caller holds the store's writer lock, so no other save is under way:
    any ``<name>.*.tmp`` sibling is a leftover of a save killed before its
    rename (or of a power cut), and is removed first so they never pile up.

    Args:
        path: The destination.
        write: Called with the temporary path; it writes the content there.

    Returns:
        The size and checksum of what was written.

    Raises:
        StorageError: When any step fails (``write`` raising anything included);
            no temporary file is left, and ``path`` is left as it was unless the
            rename itself succeeded.
    """
    directory = os.path.dirname(path) or "."
    _remove_leftovers(directory, os.path.basename(path))
    temp: str | None = None
    try:
        fd, temp = tempfile.mkstemp(
            prefix=os.path.basename(path) + ".", suffix=".tmp", dir=directory
        )
        os.close(fd)
        write(temp)
        _save_hook(temp)
        with open(temp, "rb") as handle:
            data = handle.read()
        fd = os.open(temp, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(temp, PRIVATE_MODE)
        crashpoint("index-save-before-rename")
        os.replace(temp, path)
        crashpoint("index-save-after-rename")
        _fsync_directory(directory)
    except BaseException as e:
        # Whatever failed (usearch reports a full disk as RuntimeError "Failed to
        # serialize into stream", not OSError), the temporary file goes: left
        # behind it would hold the space of a whole index on a disk already full.
        if temp is not None:
            with suppress(OSError):
                os.unlink(temp)
        if isinstance(e, Exception):
            raise StorageError(f"cannot write {path!r}: {e}") from e
        raise  # Ctrl-C, SystemExit: cleaned up, and still what they are
    return len(data), checksum_bytes(data)


def _remove_leftovers(directory: str, name: str) -> None:
    with suppress(OSError):
        for entry in os.scandir(directory):
            if entry.name.startswith(name + ".") and entry.name.endswith(".tmp"):
                with suppress(OSError):
                    os.unlink(entry.path)


def _save_hook(temp: str) -> None:
    """Fault-injection seam for tests (a short write, a full disk); does nothing."""


def _fsync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_quietly(path: str) -> None:
    """Delete ``path`` if it exists (a derived file that is about to be rebuilt)."""
    with suppress(OSError):
        os.unlink(path)
