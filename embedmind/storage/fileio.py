"""Every file the engine itself creates or opens goes through this module.

SQLite does its own I/O; everything else (lock files, the store file's
creation with private permissions, later the derived index files) passes
through these few functions, so tests can inject faults in one place.
"""

from __future__ import annotations

import os
from contextlib import suppress

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
