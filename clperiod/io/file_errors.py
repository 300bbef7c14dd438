"""Errors of damaged input files, turned into messages that name the file and the place.

Internal to the readers (:mod:`clperiod.io.formats`, :mod:`clperiod.io`,
:mod:`clperiod.singlepulse.files`). Text is read as UTF-8; ``.gz``, ``.bz2`` and
``.xz`` files are decompressed on the fly. When decoding or decompressing
fails, :func:`text_errors` reads the file again from the start (the error
path only) to find the line and byte where it breaks, and raises a
ValueError such as ``lc.csv.gz: line 1204 (byte 51232 of the text):
compressed data end early (the file is truncated)``.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import lzma
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["damage_message", "is_damage", "open_binary", "text_errors"]

#: Openers of compressed files by suffix (the text readers use the same ones).
OPENERS: dict[str, Callable[..., IO[Any]]] = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
#: Bytes read at a time when looking for the damage.
_SCAN_BYTES = 1 << 20
#: Byte-order marks of encodings that are not UTF-8.
_BOMS = {
    b"\xff\xfe\x00\x00": "UTF-32",
    b"\x00\x00\xfe\xff": "UTF-32",
    b"\xff\xfe": "UTF-16",
    b"\xfe\xff": "UTF-16",
}


def is_damage(error: BaseException) -> bool:
    """Whether ``error`` says that a file's content is damaged (undecodable text,
    broken compressed data), as opposed to a missing or unreadable file."""
    if isinstance(error, (UnicodeDecodeError, EOFError, zlib.error, lzma.LZMAError)):
        return True
    # gzip.BadGzipFile and bz2's "Invalid data stream" are OSErrors without errno
    return isinstance(error, OSError) and error.errno is None


@contextlib.contextmanager
def text_errors(path: Path) -> Iterator[None]:
    """Raise a ValueError from :func:`damage_message` for damage met inside the block."""
    try:
        yield
    except Exception as error:
        if not is_damage(error):
            raise
        raise ValueError(damage_message(path, error)) from None


def open_binary(path: Path) -> IO[bytes]:
    """The file's bytes, decompressed by its suffix."""
    return OPENERS.get(path.suffix.lower(), open)(path, "rb")


def damage_message(path: Path, error: BaseException) -> str:
    """``<path>: line L (byte B ...): what is wrong`` for an error met reading ``path``."""
    with contextlib.suppress(OSError):
        with open(path, "rb") as handle:
            start = handle.read(4)
        if path.suffix.lower() not in OPENERS:
            for bom, encoding in _BOMS.items():
                if start.startswith(bom):
                    return (
                        f"{path}: the file is {encoding} text (it starts with a byte-order "
                        f"mark); clperiod reads UTF-8: convert it, e.g. iconv -f {encoding} "
                        "-t UTF-8"
                    )
    line, offset, found = _first_damage(path)
    if found is None:  # read cleanly now: report what the reader met
        return f"{path}: {_reason(error)}"
    of_what = "" if path.suffix.lower() not in OPENERS else " of the decompressed text"
    return f"{path}: line {line} (byte {offset}{of_what}): {_reason(found)}"


def _first_damage(path: Path) -> tuple[int, int, BaseException | None]:
    """Line (from 1) and byte offset of the first undecodable or unreadable byte,
    and the error there; ``(lines, bytes, None)`` when the whole file reads."""
    lines, offset, carry = 1, 0, b""
    try:
        with open_binary(path) as handle:
            # read1: what decompresses before broken data comes back before the error
            read = getattr(handle, "read1", handle.read)
            while True:
                piece = read(_SCAN_BYTES)
                data = carry + piece
                good, bad = _decodable(data, final=not piece)
                lines += data.count(b"\n", 0, good)
                if bad is not None:
                    return lines, offset + good, bad
                offset += good
                carry = data[good:]
                if not piece:
                    return lines, offset, None
    except Exception as error:
        if not is_damage(error):
            raise
        return lines + carry.count(b"\n"), offset + len(carry), error


def _decodable(data: bytes, final: bool) -> tuple[int, UnicodeDecodeError | None]:
    """How many leading bytes of ``data`` decode as UTF-8, and the error after
    them (an incomplete character at the end waits for more, unless ``final``)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        if not final and error.reason == "unexpected end of data":
            return error.start, None
        return error.start, error
    return len(data), None


def _reason(error: BaseException) -> str:
    """What is wrong, in words, for a damage error."""
    if isinstance(error, UnicodeDecodeError):
        byte = error.object[error.start : error.start + 1]
        return (
            f"byte 0x{byte.hex()} is not UTF-8 text ({error.reason}); clperiod reads "
            "UTF-8: convert the file (e.g. iconv -f LATIN1 -t UTF-8)"
        )
    if isinstance(error, EOFError):
        return f"the compressed data end early: the file is truncated ({error})"
    return f"damaged or unreadable compressed data ({error})"
