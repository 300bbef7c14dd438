"""One run at a time per output: exclusive locks on the files a run writes.

:func:`locked_outputs` takes an exclusive ``fcntl.flock`` lock on a lock file
next to each path, ``.<name>.lock``, for as long as the block runs; a
second process that asks for one of them gets :class:`OutputLockedError` at
once (naming the process that holds it) and touches nothing. The operating
system releases the lock when the holding process ends, however it ends, so
a killed run never blocks the next one. The lock file is removed when the
block exits (a process that finds the name pointing at another file after it
got its lock, one that a finishing run removed meanwhile, starts again).
``flock`` locks hold between processes of one host, and on NFS (Linux
emulates them with byte-range locks there).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from collections.abc import Iterator
from pathlib import Path

__all__ = ["OutputLockedError", "lock_path", "locked_outputs"]


class OutputLockedError(RuntimeError):
    """Another live process is writing the same output."""


def lock_path(path: str | os.PathLike[str]) -> Path:
    """The lock file of ``path``: ``.<name>.lock`` next to it."""
    path = Path(path)
    return path.with_name(f".{path.name}.lock")


@contextlib.contextmanager
def locked_outputs(*paths: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive lock on each of ``paths`` (files to be written) for the block.

    Raises
    ------
    OutputLockedError
        Another process holds one of the locks.
    OSError
        A lock file cannot be created (for example a symbolic link in its
        place, or a directory without write permission).
    """
    with contextlib.ExitStack() as stack:
        for path in sorted({Path(p).absolute() for p in paths}):
            stack.enter_context(_locked(path))
        yield


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    lock = lock_path(path)
    descriptor = _acquire(path, lock)
    try:
        os.ftruncate(descriptor, 0)
        os.write(descriptor, f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
        yield
    finally:
        # removed before it is unlocked: a process that opened it meanwhile
        # finds the name gone once it gets the lock, and starts again
        with contextlib.suppress(OSError):
            lock.unlink()
        os.close(descriptor)


def _acquire(path: Path, lock: Path) -> int:
    """An open descriptor of ``lock``, exclusively locked by this process."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    while True:
        descriptor = os.open(lock, flags, 0o666)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(descriptor)
            os.close(descriptor)
            raise OutputLockedError(
                f"another run ({holder}) is writing {path} (lock file {lock}); wait for it "
                "to finish, or write to another file"
            ) from None
        except BaseException:
            os.close(descriptor)
            raise
        if _names(descriptor, lock):
            return descriptor
        os.close(descriptor)  # removed by a run that finished meanwhile: a new lock file


def _names(descriptor: int, lock: Path) -> bool:
    """Whether ``lock`` still names the open file ``descriptor``."""
    try:
        current = os.stat(lock, follow_symlinks=False)
    except FileNotFoundError:
        return False
    opened = os.fstat(descriptor)
    return (current.st_dev, current.st_ino) == (opened.st_dev, opened.st_ino)


def _holder(descriptor: int) -> str:
    """Who holds a lock, as its holder wrote it."""
    with contextlib.suppress(OSError):
        text = os.pread(descriptor, 200, 0).decode(errors="replace").strip()
        if text:
            return text
    return "another process"
