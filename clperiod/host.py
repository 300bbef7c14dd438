"""Host-side helpers shared by the search front ends."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, get_args

import numpy as np

__all__ = ["check_choice", "progress_bar", "segment_sum"]


def check_choice(name: str, value: Any, kind: Any) -> None:
    """Raise ValueError unless ``value`` is one of the ``Literal`` ``kind``'s values."""
    choices = get_args(kind)
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


@contextlib.contextmanager
def progress_bar(enabled: bool, total: int, desc: str) -> Iterator[Any]:
    """A tqdm bar over ``total`` work items, or None when disabled."""
    if not enabled:
        yield None
        return
    try:
        from tqdm.auto import tqdm
    except ImportError as error:
        raise ImportError("progress=True needs tqdm: pip install clperiod[progress]") from error
    with tqdm(total=total, unit="batch", desc=desc) as bar:
        yield bar


def segment_sum(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per-object sums of ``values`` (segments given by ``offsets``; empty -> 0)."""
    sums = np.zeros(len(offsets) - 1)
    nonempty = np.flatnonzero(np.diff(offsets) > 0)
    if len(nonempty):
        sums[nonempty] = np.add.reduceat(values, offsets[:-1][nonempty])
    return sums
