"""Group the rows of a long-format catalog file by object id when they are not contiguous.

Internal to :mod:`clperiod.io.readers`. A file sorted by time (the rows of
one object spread over the file) is read once and sorted by id with an
external merge sort: runs of :data:`SORT_RUN_ROWS` rows are stably sorted in
memory and written to a temporary folder (``TMPDIR``), then merged, a few
thousand rows of each run at a time. Memory stays near one run (about 50
bytes a row for integer ids, t, y and dy: 200 MB) whatever the file's size;
the temporary files hold a copy of the columns read. A file of one run is
sorted in memory, with no temporary files.

The sort is stable: an object's rows keep their file order, and objects
follow the sorted ids (numbers by value, text by code point), so the
result depends only on the file's content.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from clperiod.io.chunks import Block, SeenIds, long_block

__all__ = ["SORT_RUN_ROWS", "is_grouped", "sorted_blocks"]

#: Rows sorted in memory at a time (one run of the external sort).
SORT_RUN_ROWS = 1 << 22
#: Rows of all runs held at once while merging (split evenly over the runs).
MERGE_ROWS = 1 << 20
#: Fewest rows read from one run at a time while merging.
_MIN_PIECE = 1 << 12


def is_grouped(blocks: Iterable[Block]) -> bool:
    """Whether the rows of every object are contiguous (stops at the first id
    that comes back after other objects)."""
    seen = SeenIds()
    last = None
    for block in blocks:
        if not block.n_objects:
            continue
        ids = block.ids[1:] if last is not None and block.ids[0] == last else block.ids
        last = block.ids[-1]
        if not ids.size:
            continue
        if np.unique(ids).size != ids.size or seen.find(ids) is not None:
            return False
        seen.add(ids, np.zeros(ids.size, dtype=np.int64))
    return True


def sorted_blocks(blocks: Iterable[Block], block_rows: int) -> Iterator[Block]:
    """The rows of long-format ``blocks``, stably sorted by id, in blocks of
    whole objects (an object is never split): about ``block_rows`` rows from
    one run, up to :data:`MERGE_ROWS` from several.

    The first block is ready once the whole input is read; the temporary
    files go when the iteration ends or is closed.
    """
    with tempfile.TemporaryDirectory(prefix="clperiod-sort-") as folder:
        runs = _sorted_runs(blocks, Path(folder))
        try:
            first_row = 0
            for rows in _merged(runs, block_rows):
                block = long_block(rows.pop("id"), rows, first_row)
                first_row += int(block.offsets[-1])
                yield block
        finally:
            runs.clear()  # unmaps the run files before their folder goes


def _sorted_runs(blocks: Iterable[Block], folder: Path) -> list[dict[str, np.ndarray]]:
    """The input in runs of at most :data:`SORT_RUN_ROWS` rows, each stably sorted
    by id: one in memory, or several memory-mapped from files in ``folder``."""
    runs: list[dict[str, np.ndarray]] = []
    pending: list[dict[str, np.ndarray]] = []
    count = 0
    for block in blocks:
        rows = {"id": np.repeat(block.ids, np.diff(block.offsets))} | block.columns
        while rows["id"].size:
            take = min(rows["id"].size, SORT_RUN_ROWS - count)
            pending.append({name: values[:take] for name, values in rows.items()})
            rows = {name: values[take:] for name, values in rows.items()}
            count += take
            if count == SORT_RUN_ROWS:
                runs.append(_save(_sorted(pending), folder, len(runs)))
                pending, count = [], 0
    if pending:
        run = _sorted(pending)  # empties pending
        runs.append(run if not runs else _save(run, folder, len(runs)))
    return runs


def _sorted(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Consecutive rows joined and stably sorted by id (``parts`` is emptied, and
    one column at a time is reordered, so the rows are held about once)."""
    rows = {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}
    parts.clear()
    order = np.argsort(rows["id"], kind="stable")
    for name in rows:
        rows[name] = rows[name][order]
    return rows


def _save(run: dict[str, np.ndarray], folder: Path, index: int) -> dict[str, np.ndarray]:
    """Write a sorted run to ``folder``; the run memory-mapped from there."""
    mapped = {}
    for name, values in run.items():
        path = folder / f"run-{index:06d}-{name}.npy"
        np.save(path, values)
        mapped[name] = np.load(path, mmap_mode="r")
    return mapped


def _merged(runs: list[dict[str, np.ndarray]], block_rows: int) -> Iterator[dict[str, np.ndarray]]:
    """Rows of sorted runs merged stably (equal ids in run order), in pieces that
    end between objects.

    Each step reads ahead in every run, takes the smallest of the last ids read
    (the frontier) and emits, sorted, every row read with a smaller id: no run
    holds such an id further on. A run whose rows read all carry the frontier
    id reads further.
    """
    if len(runs) <= 1:
        for run in runs:
            yield from _pieces(run, block_rows)
        return
    piece = max(_MIN_PIECE, MERGE_ROWS // len(runs))
    sizes = [run["id"].size for run in runs]
    start = [0] * len(runs)  # first row not emitted
    end = [0] * len(runs)  # first row not read
    while True:
        for k in range(len(runs)):
            if start[k] == end[k] < sizes[k]:
                end[k] = min(sizes[k], end[k] + piece)
        open_runs = [k for k in range(len(runs)) if end[k] < sizes[k]]
        if not any(start[k] < end[k] for k in range(len(runs))):
            return
        if not open_runs:  # every run is read to its end
            yield _joined(runs, start, end)
            return
        frontier = min(runs[k]["id"][end[k] - 1] for k in open_runs)
        stop = [
            start[k] + int(np.searchsorted(runs[k]["id"][start[k] : end[k]], frontier))
            for k in range(len(runs))
        ]
        if stop == start:
            for k in open_runs:
                if runs[k]["id"][end[k] - 1] == frontier:
                    end[k] = min(sizes[k], end[k] + piece)
            continue
        yield _joined(runs, start, stop)
        start = stop


def _joined(
    runs: list[dict[str, np.ndarray]], start: list[int], stop: list[int]
) -> dict[str, np.ndarray]:
    """Rows ``start[k]:stop[k]`` of each run, stably sorted by id (run order kept)."""
    return _sorted(
        [
            {name: np.asarray(values[a:b]) for name, values in run.items()}
            for run, a, b in zip(runs, start, stop, strict=True)
            if b > a
        ]
    )


def _pieces(run: dict[str, np.ndarray], block_rows: int) -> Iterator[dict[str, np.ndarray]]:
    """A sorted run in pieces of about ``block_rows`` rows that end between objects."""
    ids = run["id"]
    start = 0
    while start < ids.size:
        stop = min(ids.size, start + block_rows)
        if stop < ids.size:  # move the cut to the end of the object it falls in
            stop = start + int(np.searchsorted(ids[start:], ids[stop - 1], side="right"))
        yield {name: values[start:stop] for name, values in run.items()}
        start = stop
