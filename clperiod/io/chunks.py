"""Deterministic chunks of whole objects, and the checks made on each chunk.

Internal to the catalog readers (:mod:`clperiod.io.readers`): a file is
parsed into :class:`Block` objects (objects in ragged form, in file order),
:class:`Chunker` cuts the stream into chunks whose content depends only on
the data and the limits, never on the block boundaries, and
:func:`check_block` rejects repeated ids and bad values, naming the file row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "Block",
    "Chunker",
    "SeenIds",
    "check_block",
    "check_ids",
    "check_values",
    "long_block",
    "show_id",
]


@dataclass
class Block:
    """Objects in ragged form: ids, offsets from 0, flat float64 columns."""

    ids: np.ndarray
    offsets: np.ndarray
    columns: dict[str, np.ndarray]
    first_row: int
    open_end: bool  # the last object may continue in the next block

    @property
    def n_objects(self) -> int:
        return self.ids.size

    def take(self, n: int, rows_are_objects: bool) -> tuple[Block, Block]:
        """The first ``n`` objects, and the rest."""
        cut = int(self.offsets[n])
        head = Block(
            self.ids[:n],
            self.offsets[: n + 1],
            {k: v[:cut] for k, v in self.columns.items()},
            self.first_row,
            False,
        )
        rest_first = self.first_row + (n if rows_are_objects else cut)
        rest = Block(
            self.ids[n:],
            self.offsets[n:] - cut,
            {k: v[cut:] for k, v in self.columns.items()},
            rest_first,
            self.open_end,
        )
        return head, rest


class Chunker:
    """Cut a stream of blocks into chunks of whole objects, deterministically.

    A chunk holds the largest number of leading objects with at most
    ``chunk_rows`` observations and at most ``chunk_objects`` objects, and at
    least one object. With ``first_rows`` the limit ramps up: chunk ``i``
    holds at most ``min(chunk_rows, first_rows * 2**i)`` observations, so a
    run's first chunk is read (and its device busy) soon. The cut is made only
    once data that could change it cannot arrive any more, so it never depends
    on the block boundaries.

    Blocks wait in a list and are joined only when a chunk can be cut, so an
    object spanning many blocks is copied once, not once per block.
    """

    def __init__(
        self,
        chunk_rows: int,
        chunk_objects: int | None,
        rows_are_objects: bool,
        first_rows: int | None = None,
    ):
        self.most_rows = chunk_rows
        self.chunk_rows = chunk_rows if first_rows is None else min(chunk_rows, first_rows)
        self.chunk_objects = chunk_objects if chunk_objects is not None else np.iinfo(np.int64).max
        self.rows_are_objects = rows_are_objects
        self._pending: list[Block] = []
        self._rows = 0  # observations in the pending blocks
        self._objects = 0  # objects in them (one continued across blocks counts once)

    def add(self, block: Block) -> list[Block]:
        """The chunks that ``block`` completes (often none)."""
        if not block.n_objects:
            return []
        if self._pending and _continues(self._pending[-1], block):
            self._objects -= 1
        self._pending.append(block)
        self._rows += int(block.offsets[-1])
        self._objects += block.n_objects
        closed = self._objects - (1 if block.open_end else 0)
        over = self._rows > self.chunk_rows or self._objects > self.chunk_objects
        return self._emit(final=False) if closed and over else []

    def cut(self, blocks: Iterable[Block]) -> Iterator[Block]:
        """The chunks of a whole stream of blocks, as soon as each is decided."""
        for block in blocks:
            yield from self.add(block)
        yield from self.finish()

    def finish(self) -> list[Block]:
        """The remaining chunks, once the stream has ended."""
        if not self._pending:
            return []
        self._pending[-1] = dataclasses.replace(self._pending[-1], open_end=False)
        return self._emit(final=True)

    def _emit(self, final: bool) -> list[Block]:
        buffer = _join(self._pending)
        chunks = []
        while buffer.n_objects:
            n = self._cut(buffer, final)
            if n is None:
                break
            chunk, buffer = buffer.take(n, self.rows_are_objects)
            chunks.append(chunk)
            self.chunk_rows = min(self.most_rows, 2 * self.chunk_rows)
        self._pending = [buffer] if buffer.n_objects else []
        self._rows, self._objects = int(buffer.offsets[-1]), buffer.n_objects
        return chunks

    def _cut(self, buffer: Block, final: bool) -> int | None:
        """Objects in the next chunk, or None while more data could change it."""
        ends = buffer.offsets[1:]
        n_closed = buffer.n_objects - (1 if buffer.open_end else 0)
        decided = final or ends[-1] > self.chunk_rows or buffer.n_objects > self.chunk_objects
        if not decided:
            return None
        fits = int(np.searchsorted(ends[:n_closed], self.chunk_rows, side="right"))
        n = min(fits, self.chunk_objects)
        if n == 0:  # the first object alone is longer than chunk_rows
            n = 1 if n_closed >= 1 else 0
        return n or None


def _continues(previous: Block, block: Block) -> bool:
    """Whether ``block`` starts with more rows of the open last object of ``previous``."""
    return previous.open_end and block.ids[0] == previous.ids[-1]


def _join(blocks: list[Block]) -> Block:
    """Consecutive blocks as one; an open last object continues into the next block."""
    if len(blocks) == 1:
        return blocks[0]
    ids: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    base = 0
    for k, block in enumerate(blocks):
        block_ids, block_ends = block.ids, block.offsets[1:] + base
        if k and _continues(blocks[k - 1], block):
            ends[-1] = ends[-1][:-1]  # the object ends in this block
            block_ids = block_ids[1:]
        ids.append(block_ids)
        ends.append(block_ends)
        base = int(block_ends[-1])
    return Block(
        np.concatenate(ids),
        np.concatenate([np.zeros(1, np.int64), *ends]),
        {name: np.concatenate([b.columns[name] for b in blocks]) for name in blocks[0].columns},
        blocks[0].first_row,
        blocks[-1].open_end,
    )


class SeenIds:
    """Ids read so far with the file row where each started, for duplicate checks.

    Kept as sorted runs merged like a binary counter, so checking and adding
    ``n`` ids costs ``O(n log^2 n)`` over a whole file.
    """

    def __init__(self) -> None:
        self.runs: list[tuple[np.ndarray, np.ndarray]] = []

    def find(self, ids: np.ndarray) -> tuple[int, int] | None:
        """``(i, row)``: the first ``ids[i]`` seen before, and where it started."""
        hits = []
        for run_ids, run_rows in self.runs:
            pos = np.searchsorted(run_ids, ids)
            pos = np.minimum(pos, run_ids.size - 1)
            found = np.flatnonzero(run_ids[pos] == ids)
            if found.size:
                hits.append((int(found[0]), int(run_rows[pos[found[0]]])))
        return min(hits) if hits else None

    def add(self, ids: np.ndarray, rows: np.ndarray) -> None:
        order = np.argsort(ids, kind="stable")
        run = (ids[order], rows[order])
        while self.runs and self.runs[-1][0].size <= run[0].size:
            last = self.runs.pop()
            merged_ids = np.concatenate((last[0], run[0]))
            order = np.argsort(merged_ids, kind="stable")
            run = (merged_ids[order], np.concatenate((last[1], run[1]))[order])
        self.runs.append(run)


def check_block(path: Any, block: Block, seen: SeenIds, nan_policy: str, nested: bool) -> None:
    """Duplicate ids, non-finite values and dy <= 0, named by file row."""
    check_ids(path, block, seen, nested)
    check_values(path, block, nan_policy, nested)


def check_ids(path: Any, block: Block, seen: SeenIds, nested: bool) -> None:
    """Ids that repeat within the block or that ``seen`` holds (then added to it)."""
    ids = block.ids
    rows = block.first_row + (np.arange(ids.size) if nested else block.offsets[:-1])
    order = np.argsort(ids, kind="stable")
    same = np.flatnonzero(ids[order][1:] == ids[order][:-1])
    if same.size:  # the repeat that occurs first in the file
        later = order[same + 1]
        k = int(later.min())
        first = int(order[same[np.argmin(later)]])
        _duplicate(path, ids[k], int(rows[first]), int(rows[k]), nested)
    hit = seen.find(ids)
    if hit is not None:
        _duplicate(path, ids[hit[0]], hit[1], int(rows[hit[0]]), nested)
    seen.add(ids, rows)


def check_values(path: Any, block: Block, nan_policy: str, nested: bool) -> None:
    """Non-finite values (``nan_policy="raise"``) and dy <= 0, named by file row
    (band labels are checked as they are read)."""
    for name, values in block.columns.items():
        if name == "band":
            continue
        bad = ~np.isfinite(values) if nan_policy == "raise" else np.zeros(values.size, bool)
        if name == "dy":
            bad |= np.isfinite(values) & (values <= 0)
        if bad.any():
            _bad_value(path, block, name, int(np.argmax(bad)), nested)


def _duplicate(path: Any, object_id: Any, first: int, again: int, nested: bool) -> None:
    if nested:
        raise ValueError(
            f"{path}: object id {show_id(object_id)} at row {again} repeats row {first}"
        )
    raise ValueError(
        f"{path}: object id {show_id(object_id)} appears again at row {again} after other "
        f"objects (its rows start at row {first}); the rows of one object must be "
        "contiguous: sort the file by id, or read it with grouping='sort' or 'auto' "
        "(command line: --grouping sort)"
    )


def _bad_value(path: Any, block: Block, name: str, index: int, nested: bool) -> None:
    k = int(np.searchsorted(block.offsets, index, side="right")) - 1
    value = float(block.columns[name][index])
    if nested:
        where = (
            f"row {block.first_row + k} (object {show_id(block.ids[k])}), "
            f"observation {index - int(block.offsets[k])}"
        )
    else:
        where = f"row {block.first_row + index} (object {show_id(block.ids[k])})"
    if name == "dy" and np.isfinite(value):
        raise ValueError(f"{path}: {where}: dy = {value!r}; uncertainties must be > 0")
    raise ValueError(
        f"{path}: {where}: {name} is {value!r}, not a finite number "
        "(nan_policy='omit' drops such rows)"
    )


def long_block(ids: np.ndarray, columns: dict[str, np.ndarray], first_row: int) -> Block:
    """A block of long-format rows: objects are the runs of equal ids."""
    starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
    offsets = np.append(starts, ids.size).astype(np.int64)
    return Block(ids[starts], offsets, columns, first_row, open_end=True)


def show_id(object_id: Any) -> str:
    """``repr`` of an id as a plain Python value."""
    return repr(object_id.item() if isinstance(object_id, np.generic) else object_id)
