"""Bootstrap false-alarm probabilities of period searches, resampling within bands.

The null hypothesis is that an object's values carry no periodic signal: every
band's values (with their uncertainties) are exchangeable over that band's
times. Each resampled copy of an object keeps its times and band labels and
draws every row's ``(y, dy)`` with replacement from the object's rows of the
same band; the band offsets, the band's spread of values and the sampling
stay, any periodicity goes. The search of ``R`` such copies gives the largest
powers one sees by chance, and the false-alarm probability of the observed
best power ``z`` is the bootstrap p-value (Davison & Hinkley 1997, §4.2)

    FAP = (1 + #{r : z_r >= z}) / (1 + R),

``z_r`` the best power of copy ``r``. It is never 0: with ``R`` copies the
smallest FAP that can be told is ``1 / (R + 1)``, and an estimate ``p`` has
the binomial standard error ``sqrt(p (1 - p) / R)``.

The draws happen on the device (``cl_kernels/bootstrap.mako``) with the
counter-based generator Philox4x32-10 (Salmon et al. 2011): the draw of each
row depends only on the seed, the object's index in the catalog, the
resampling and the row, so results are reproducible from the seed and the
same on every device, work-group size and batching. (``pyopencl.clrandom``
keys its streams on the work-item of a device-dependent launch, so its
numbers change with the device.) The copies are then searched as one catalog
of ``R`` objects per object, in batches of at most ``max_rows`` rows.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyopencl as cl

from clperiod import checks
from clperiod.catalog import Catalog, Status
from clperiod.engine import kernels
from clperiod.engine.devices import get_queue, select_devices, upload

__all__ = [
    "DEFAULT_MAX_ROWS",
    "DEFAULT_RESAMPLINGS",
    "BootstrapResult",
    "Resampled",
    "SearchResult",
    "bootstrap_fap",
    "resample",
]

#: Resampled copies of each object by default.
DEFAULT_RESAMPLINGS = 1000
#: Rows of resampled copies searched at once by default (host and device
#: memory grow with it).
DEFAULT_MAX_ROWS = 2**22
_WG = 64
_MAX_ROWS = np.iinfo(np.int32).max


class SearchResult(Protocol):
    """What a search passed to :func:`bootstrap_fap` returns: one entry per object."""

    @property
    def power_best(self) -> np.ndarray: ...

    @property
    def status(self) -> np.ndarray: ...


@dataclass(frozen=True, repr=False)
class BootstrapResult:
    """Bootstrap false-alarm probabilities, one entry per catalog object.

    Attributes
    ----------
    ids : ndarray
        Object ids, catalog order.
    fap : ndarray
        ``(1 + n_exceeding) / (1 + n_valid)``: the false-alarm probability of
        the observed best power; NaN where ``status`` is not OK.
    status : ndarray of Status
        The observed search's status; where that was OK, OUT_OF_RANGE if its
        best power is not finite, and ZERO_VARIANCE if no resampled copy
        could be searched (every copy drew values constant within each band:
        possible only with very few resamplings).
    power_best : ndarray
        The observed best power the copies are compared with.
    n_exceeding : ndarray of int64
        Resampled copies whose best power is at least ``power_best``.
    n_valid : ndarray of int64
        Resampled copies searched with status OK (the others, whose drawn
        values are constant within each band, have no power and are left
        out of both counts); ``n_resamplings`` for most objects, 0 where
        ``status`` was not OK.
    n_resamplings : int
        Resampled copies drawn per object.
    seed : int
        The generator's seed: the same seed draws the same copies.
    """

    ids: np.ndarray
    fap: np.ndarray
    status: np.ndarray
    power_best: np.ndarray
    n_exceeding: np.ndarray
    n_valid: np.ndarray
    n_resamplings: int
    seed: int

    def __repr__(self) -> str:
        return (
            f"BootstrapResult(n_objects={self.ids.size}, n_resamplings={self.n_resamplings}, "
            f"seed={self.seed}, ok={int((self.status == Status.OK).sum())})"
        )


@dataclass(frozen=True, repr=False)
class Resampled:
    """Resampled copies of a catalog's objects (see :func:`resample`).

    Attributes
    ----------
    catalog : Catalog
        ``n_resamplings`` copies of every object, object after object
        (copy ``r`` of object ``k`` is object ``k * n_resamplings + r``, with
        id of the same number); times and bands of the object, values and
        uncertainties drawn.
    rows : ndarray of int64
        For every row of ``catalog``, the row of the original catalog its
        value and uncertainty come from.
    seed : int
        The generator's seed.
    """

    catalog: Catalog
    rows: np.ndarray
    seed: int


@dataclass(frozen=True)
class _Batch:
    """Resamplings ``first .. first + count - 1`` of the catalog objects ``objects``."""

    objects: np.ndarray
    first: int
    count: int


def bootstrap_fap(
    catalog: Catalog,
    search: Callable[[Catalog], SearchResult],
    *,
    n_resamplings: int = DEFAULT_RESAMPLINGS,
    seed: int | None = None,
    observed: SearchResult | None = None,
    device: Any = None,
    max_rows: int = DEFAULT_MAX_ROWS,
) -> BootstrapResult:
    """Bootstrap false-alarm probability of every object's best peak.

    Each object that ``observed`` found OK is resampled ``n_resamplings``
    times within its bands (module docstring), the copies are searched with
    ``search`` and the observed best power is ranked among theirs.

    Parameters
    ----------
    catalog : Catalog
        The light curves (with or without bands; without, all rows are one
        band).
    search : callable
        ``search(catalog)`` returns a result with per-object ``power_best``
        and ``status`` (higher power = stronger signal), e.g.
        ``functools.partial(clperiod.lombscargle_multiband, grid=grid,
        nterms_base=1)``. It is called on catalogs of resampled copies and
        must treat every object alone, as the searches of clperiod do.
    n_resamplings : int
        Resampled copies per object, >= 1.
    seed : int, optional
        Seed of the generator, 0 to 2**64 - 1; by default a fresh one
        (see ``BootstrapResult.seed``).
    observed : result, optional
        ``search(catalog)``, when already at hand; searched otherwise.
    device
        Device that draws the copies (see :func:`clperiod.select_devices`;
        the first selected). The search chooses its own devices.
    max_rows : int
        Most rows of resampled copies per call of ``search``; an object with
        more rows than ``max_rows / n_resamplings`` is searched in groups of
        its copies.

    Returns
    -------
    BootstrapResult

    Raises
    ------
    TypeError
        ``catalog`` is not a Catalog, ``search`` not callable, a result
        without ``power_best`` and ``status``, or a bad argument type.
    ValueError
        ``n_resamplings``, ``seed`` or ``max_rows`` out of range, or a search
        result without one entry per object.
    """
    catalog = _checked_catalog(catalog)
    if not callable(search):
        raise TypeError(f"search must be callable (catalog -> result), got {search!r}")
    n_resamplings = checks.integer("n_resamplings", n_resamplings, low=1, high=_MAX_ROWS)
    seed = _checked_seed(seed)
    max_rows = checks.integer("max_rows", max_rows, low=1, high=_MAX_ROWS)
    queue = get_queue(select_devices(device)[0])
    observed = search(catalog) if observed is None else observed
    power, status = _result_arrays(observed, catalog.n_objects, "observed")
    status = status.copy()
    status[(status == Status.OK) & ~np.isfinite(power)] = Status.OUT_OF_RANGE
    n_exceeding = np.zeros(catalog.n_objects, dtype=np.int64)
    n_valid = np.zeros(catalog.n_objects, dtype=np.int64)
    ok = np.flatnonzero(status == Status.OK)
    for batch in _batches(catalog.lengths, ok, n_resamplings, max_rows):
        sub = catalog.subset(batch.objects)
        drawn = _draw(queue, sub, batch.objects, batch.first, batch.count, seed)
        copies = _copies(sub, drawn, batch.count)
        maxima, copy_status = _result_arrays(search(copies), copies.n_objects, "search")
        shape = (batch.objects.size, batch.count)
        valid = (copy_status == Status.OK).reshape(shape) & np.isfinite(maxima).reshape(shape)
        exceeding = valid & (maxima.reshape(shape) >= power[batch.objects, None])
        n_valid[batch.objects] += valid.sum(axis=1)
        n_exceeding[batch.objects] += exceeding.sum(axis=1)
    status[(status == Status.OK) & (n_valid == 0)] = Status.ZERO_VARIANCE
    fap = np.where(status == Status.OK, (1.0 + n_exceeding) / (1.0 + n_valid), np.nan)
    return BootstrapResult(
        ids=catalog.ids,
        fap=fap,
        status=status,
        power_best=power,
        n_exceeding=n_exceeding,
        n_valid=n_valid,
        n_resamplings=n_resamplings,
        seed=seed,
    )


def resample(
    catalog: Catalog, n_resamplings: int, *, seed: int | None = None, device: Any = None
) -> Resampled:
    """``n_resamplings`` copies of every object, resampled within its bands.

    The copies :func:`bootstrap_fap` searches, all at once in memory (for a
    look at them, or to run another statistic on them): the same ``seed``
    gives the same copies there and here.

    Parameters
    ----------
    catalog : Catalog
        The light curves.
    n_resamplings : int
        Copies per object, >= 1.
    seed : int, optional
        Seed of the generator, 0 to 2**64 - 1; by default a fresh one.
    device
        Device that draws (see :func:`clperiod.select_devices`; the first
        selected).

    Returns
    -------
    Resampled

    Raises
    ------
    TypeError, ValueError
        Bad arguments, or more than 2**31 - 1 rows of copies.
    """
    catalog = _checked_catalog(catalog)
    n_resamplings = checks.integer("n_resamplings", n_resamplings, low=1, high=_MAX_ROWS)
    seed = _checked_seed(seed)
    if catalog.t.size * n_resamplings > _MAX_ROWS:
        raise ValueError(
            f"{n_resamplings} copies of {catalog.t.size} rows exceed {_MAX_ROWS} rows: "
            "resample fewer objects at a time"
        )
    queue = get_queue(select_devices(device)[0])
    objects = np.arange(catalog.n_objects)
    drawn = _draw(queue, catalog, objects, 0, n_resamplings, seed)
    return Resampled(_copies(catalog, drawn, n_resamplings), drawn, seed)


def _checked_catalog(catalog: Any) -> Catalog:
    if not isinstance(catalog, Catalog):
        raise TypeError(f"catalog must be a clperiod.Catalog, got {type(catalog).__name__}")
    return catalog


def _checked_seed(seed: Any) -> int:
    """``seed`` as an int in [0, 2**64 - 1], or a fresh random one for None."""
    if seed is None:
        return secrets.randbits(64)
    return checks.integer("seed", seed, low=0, high=2**64 - 1)


def _result_arrays(result: Any, n_objects: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(power_best, status)`` of a search result, checked to hold ``n_objects`` entries."""
    try:
        power = np.asarray(result.power_best, dtype=np.float64)
        status = np.asarray(result.status)
    except AttributeError as error:
        raise TypeError(
            f"{name} must be a search result with power_best and status, "
            f"got {type(result).__name__}"
        ) from error
    if power.shape != (n_objects,) or status.shape != (n_objects,):
        raise ValueError(
            f"{name} result has {power.shape} powers and {status.shape} statuses "
            f"for a catalog of {n_objects} objects"
        )
    return power, status


def _batches(
    lengths: np.ndarray, objects: np.ndarray, n_resamplings: int, max_rows: int
) -> Iterator[_Batch]:
    """Batches of ``objects`` with all their resamplings and at most
    ``max_rows`` rows of copies; an object with more splits its resamplings."""
    group: list[int] = []
    rows = 0
    for k in objects.tolist():
        need = int(lengths[k]) * n_resamplings
        if group and rows + need > max_rows:
            yield _Batch(np.array(group), 0, n_resamplings)
            group, rows = [], 0
        if need > max_rows:
            step = max(1, max_rows // int(lengths[k]))
            for first in range(0, n_resamplings, step):
                yield _Batch(np.array([k]), first, min(step, n_resamplings - first))
            continue
        group.append(k)
        rows += need
    if group:
        yield _Batch(np.array(group), 0, n_resamplings)


def _draw(
    queue: cl.CommandQueue,
    catalog: Catalog,
    object_index: np.ndarray,
    first: int,
    count: int,
    seed: int,
    work_group: int = _WG,
) -> np.ndarray:
    """For resamplings ``first .. first + count - 1`` of every object of
    ``catalog`` (whose indices in the catalog of the search are
    ``object_index``), the ``catalog`` row each copy's row draws: object
    after object, resampling after resampling, row after row."""
    lengths = catalog.lengths
    n_rows = catalog.t.size
    owner = np.repeat(np.arange(catalog.n_objects, dtype=np.int32), lengths)
    codes = np.zeros(n_rows, np.int64) if catalog.band_codes is None else catalog.band_codes
    cells = owner.astype(np.int64) * catalog.n_bands + codes
    pool = np.argsort(cells, kind="stable").astype(np.int32)
    cell_sizes = np.bincount(cells, minlength=catalog.n_objects * catalog.n_bands)
    cell_starts = np.cumsum(cell_sizes) - cell_sizes
    pending: list[cl.Event] = []
    arrays = (
        owner,
        catalog.offsets.astype(np.int32),
        np.asarray(object_index, dtype=np.int64),
        pool,
        cell_starts[cells].astype(np.int32),
        cell_sizes[cells].astype(np.int32),
    )
    buffers = [upload(queue, array, pending) for array in arrays]
    drawn = np.empty(n_rows * count, dtype=np.int32)
    out = cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY, max(drawn.nbytes, 4))
    if drawn.size:
        (kernel,) = kernels.get_kernels(queue.context, "bootstrap", ("bootstrap_draw",))
        kernel(
            queue,
            (-(-n_rows // work_group) * work_group, count),
            (work_group, 1),
            *buffers,
            np.int32(n_rows),
            np.int32(first),
            np.uint32(seed & 0xFFFFFFFF),
            np.uint32(seed >> 32),
            out,
        )
        cl.enqueue_copy(queue, drawn, out)
    pending.clear()
    return drawn.astype(np.int64)


def _copies(catalog: Catalog, drawn: np.ndarray, count: int) -> Catalog:
    """The catalog of ``count`` copies of every object of ``catalog``: its times
    and bands, the values and uncertainties of the ``drawn`` rows."""
    lengths = catalog.lengths
    copy_lengths = np.repeat(lengths, count)
    template = np.concatenate(
        [np.tile(np.arange(lo, hi), count) for lo, hi in itertools.pairwise(catalog.offsets)]
        or [np.zeros(0, np.int64)]
    )
    return Catalog(
        np.arange(copy_lengths.size),
        np.concatenate(([0], np.cumsum(copy_lengths))),
        _frozen(catalog.t[template]),
        _frozen(catalog.y[drawn]),
        None if catalog.dy is None else _frozen(catalog.dy[drawn]),
        0,
        None if catalog.band_codes is None else _frozen(catalog.band_codes[template]),
        catalog.bands,
        catalog.checked,
    )


def _frozen(array: np.ndarray) -> np.ndarray:
    """``array`` (a new one) made read-only, which the catalog then keeps uncopied."""
    array.setflags(write=False)
    return array
