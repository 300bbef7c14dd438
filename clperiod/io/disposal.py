"""Remove files and directories after a run, without the run waiting for the file system.

Freeing a file's blocks, or a directory's files, takes the file system a
fraction of a millisecond per file (more on file systems mounted with
``discard``), which a short catalog run would otherwise spend at its end.
:func:`dispose` moves a path out of the way at once (a rename, under a hidden
temporary name next to it) and removes it in a background thread;
:func:`released_on_replace` lets a file be replaced atomically while the
blocks of the old version are freed in that thread.

Hidden names have the form ``.<name>.tmp-<pid>-<random>-old``, so
:func:`clperiod.io.results.remove_temporaries` of ``<name>`` finds
whatever a process that ended early left behind, and nobody can place a file
under such a name in advance.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

from clperiod.engine.workers import SerialQueue

__all__ = ["dispose", "hidden_name", "released_on_replace", "wait_for_disposals"]

_removals = SerialQueue()


def hidden_name(path: Path) -> Path:
    """A fresh, unpredictable hidden name next to ``path`` (``.<name>.tmp-<pid>-<random>-old``)."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(8)}-old")


def dispose(path: str | os.PathLike[str]) -> None:
    """Remove a file or directory: renamed at once, deleted in a background thread.

    A path that does not exist is ignored.
    """
    path = Path(path)
    hidden = hidden_name(path)
    try:
        os.rename(path, hidden)
    except FileNotFoundError:
        return
    _submit(hidden)


@contextlib.contextmanager
def released_on_replace(path: str | os.PathLike[str]) -> Iterator[None]:
    """Keep a second link to the current ``path`` while the block replaces it.

    Replacing a file then drops only a link, and the old version's blocks are
    freed in the background thread once the block exits; the replacement
    stays atomic. Without a current file, or on a file system without hard
    links, the block runs as it is.
    """
    path = Path(path)
    hidden = hidden_name(path)
    try:
        os.link(path, hidden, follow_symlinks=False)
    except OSError:  # no current file, or no hard links here
        yield
        return
    try:
        yield
    finally:
        _submit(hidden)


def wait_for_disposals() -> None:
    """Wait until every path disposed of so far is removed."""
    _removals.join()


def _submit(hidden: Path) -> None:
    _removals.submit(_remove, hidden)


def _remove(path: Path) -> None:
    """Delete ``path``; a failure leaves it for the next ``remove_temporaries``."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()
