"""Host-side helpers shared by the search front ends."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar, get_args

import numpy as np

from .catalog import Catalog

__all__ = ["Deferred", "PeakResults", "as_catalog", "check_choice", "check_top_k", "progress_bar",
           "segment_max", "segment_sum"]


T = TypeVar("T")


class Deferred(Generic[T]):
    """A result the device may still be computing: :meth:`result` waits for it
    (once; later calls return the same object)."""

    def __init__(self, finish: Callable[[], T]) -> None:
        self._finish: Callable[[], T] | None = finish
        self._value: T | None = None

    @classmethod
    def ready(cls, value: T) -> Deferred[T]:
        """An already finished result."""
        return cls(lambda: value)

    def result(self) -> T:
        """Wait for the device and return the result."""
        if self._finish is not None:
            self._value = self._finish()
            self._finish = None
        return self._value


class PeakResults:
    """Derived views shared by the per-object search results (dataclasses with
    ``frequency_best``, ``top_k_frequency``, ``catalog`` and ``grid``)."""

    @property
    def period(self) -> np.ndarray:
        """Best period of each object (``1 / frequency_best``)."""
        return 1.0 / self.frequency_best

    @property
    def top_k_period(self) -> np.ndarray:
        """Periods of the top-k peaks."""
        return 1.0 / self.top_k_frequency

    @property
    def n_points(self) -> np.ndarray:
        """Observations per object."""
        return self.catalog.lengths

    def frequency(self) -> np.ndarray:
        """The grid frequencies (columns of :attr:`power`)."""
        return self.grid.frequencies()


def as_catalog(cat_or_t: Any, y: Any, dy: Any, nan_policy: str) -> Catalog:
    """The catalog of a search call: a Catalog as given, or one light curve."""
    if isinstance(cat_or_t, Catalog):
        if y is not None or dy is not None:
            raise ValueError("give y and dy inside the Catalog, not as arguments")
        return cat_or_t
    if y is None:
        raise ValueError("y is required when the first argument is a time array")
    return Catalog.from_single(cat_or_t, y, dy, nan_policy=nan_policy)


def check_top_k(top_k: Any, largest: int) -> int:
    """``top_k`` as an int in ``[1, largest]``, or TypeError/ValueError."""
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)):
        raise TypeError(f"top_k must be an integer, got {top_k!r}")
    if not 1 <= top_k <= largest:
        raise ValueError(f"top_k must be in [1, {largest}], got {top_k}")
    return int(top_k)


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


def segment_max(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per-object maxima of ``values`` (segments given by ``offsets``; empty -> 0)."""
    maxima = np.zeros(len(offsets) - 1)
    nonempty = np.flatnonzero(np.diff(offsets) > 0)
    if len(nonempty):
        maxima[nonempty] = np.maximum.reduceat(values, offsets[:-1][nonempty])
    return maxima
