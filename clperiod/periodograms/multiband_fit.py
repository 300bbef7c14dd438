"""The flexible multiband model of one light curve at one frequency, fitted on the host.

:func:`clperiod.lombscargle_multiband` gives powers; :class:`MultibandFit`
gives the model behind a power: astropy ``LombScargleMultiband``'s
``model_parameters``, ``model`` and ``offset`` for its method "flexible"
(the same design matrix, parameter order and ridge), as a float64 weighted
least-squares solve of ``1 + 2 nterms_base + n_bands (1 + 2 nterms_band)``
unknowns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from clperiod import checks

__all__ = ["DEFAULT_REG_BAND", "MultibandFit"]

#: astropy's default ridge on the band parameters, in units of the normal matrix's trace.
DEFAULT_REG_BAND = 1e-6


@dataclass(frozen=True, repr=False, eq=False)
class MultibandFit:
    """The flexible multiband model of one light curve (astropy's method "flexible").

    At frequency ``f`` the model of band ``b`` is ``a_0 + sum_k (a_k sin 2 pi k f t
    + b_k cos 2 pi k f t)`` (``k = 1 .. nterms_base``, shared by all bands) plus
    ``c_0 + sum_l (c_l sin 2 pi l f t + d_l cos 2 pi l f t)`` (``l = 1 ..
    nterms_band``, band ``b``'s own), plus the band's weighted mean with
    ``center_data``; ``t`` counts from ``epoch``. Parameters are ordered
    ``[a_0, a_1, b_1, ...]`` then band by band ``[c_0, c_1, d_1, ...]``, as
    astropy orders them. Build it with :meth:`from_arrays` or
    :meth:`clperiod.MultibandResult.fit`.

    Attributes
    ----------
    t, y, weights : ndarray
        Times from ``epoch``, values and weights (``dy**-2``, or ones).
    band_index : ndarray of int
        Each observation's index into ``labels``.
    labels : tuple
        The band labels, in the order of the band parameters.
    nterms_base, nterms_band : int
        Harmonics of the shared model and of each band's model.
    reg_base, reg_band : float or None
        Ridges on the base and band parameters.
    regularize_by_trace : bool
        The ridges are in units of the normal matrix's trace.
    center_data : bool
        The model adds each band's weighted mean back (it is fitted to the
        values less their band's mean).
    epoch : float
        The time the phases count from (times given to :meth:`model` are in
        the scale of the data).
    """

    t: np.ndarray
    y: np.ndarray
    weights: np.ndarray
    band_index: np.ndarray
    labels: tuple[Any, ...]
    nterms_base: int = 1
    nterms_band: int = 1
    reg_base: float | None = None
    reg_band: float | None = DEFAULT_REG_BAND
    regularize_by_trace: bool = True
    center_data: bool = True
    epoch: float = 0.0

    @classmethod
    def from_arrays(
        cls,
        t: Any,
        y: Any,
        bands: Any,
        dy: Any = None,
        *,
        nterms_base: int = 1,
        nterms_band: int = 1,
        reg_base: float | None = None,
        reg_band: float | None = DEFAULT_REG_BAND,
        regularize_by_trace: bool = True,
        center_data: bool = True,
    ) -> MultibandFit:
        """The model of one light curve, with astropy's arguments and defaults.

        Parameters
        ----------
        t, y : array_like
            Times and values, one-dimensional, finite (plain numbers; phases
            count from ``t = 0``, as in astropy).
        bands : array_like
            Band label of each observation; the bands are ordered as
            ``np.unique`` sorts them (astropy's order).
        dy : float or array_like, optional
            Uncertainties, > 0.
        nterms_base, nterms_band : int
            Harmonics, >= 0, not both 0.
        reg_base, reg_band : float or None
            Ridges on the base and band parameters (None: none).
        regularize_by_trace, center_data : bool
            As astropy.

        Raises
        ------
        ValueError
            Arrays of different lengths or not 1-D, non-finite values, ``dy``
            not > 0, negative ridges or ``nterms``.
        """
        t = _finite_vector("t", t)
        y = _finite_vector("y", y)
        labels, index = np.unique(np.asarray(bands), return_inverse=True)
        if not t.size == y.size == index.size:
            raise ValueError(
                f"t, y and bands must have one length, got {t.size}, {y.size} and {index.size}"
            )
        return cls(
            t=t,
            y=y,
            weights=_weights(dy, t.size),
            band_index=index.ravel(),
            labels=tuple(labels.tolist()),
            nterms_base=checks.integer("nterms_base", nterms_base, low=0),
            nterms_band=checks.integer("nterms_band", nterms_band, low=0),
            reg_base=_ridge("reg_base", reg_base),
            reg_band=_ridge("reg_band", reg_band),
            regularize_by_trace=checks.boolean("regularize_by_trace", regularize_by_trace),
            center_data=checks.boolean("center_data", center_data),
        )

    def __post_init__(self) -> None:
        if self.nterms_base == 0 and self.nterms_band == 0:
            raise ValueError("at least one of nterms_base and nterms_band must be > 0")

    def __repr__(self) -> str:
        return (
            f"MultibandFit({self.t.size} points, bands={self.labels}, "
            f"nterms_base={self.nterms_base}, nterms_band={self.nterms_band})"
        )

    @property
    def n_parameters(self) -> int:
        """Length of :meth:`model_parameters`."""
        return 1 + 2 * self.nterms_base + len(self.labels) * (1 + 2 * self.nterms_band)

    def band_means(self) -> np.ndarray:
        """Weighted mean of each band's values, in the order of ``labels``."""
        size = len(self.labels)
        total = np.bincount(self.band_index, self.weights, minlength=size)
        return np.bincount(self.band_index, self.weights * self.y, minlength=size) / total

    def offset(self, bands: Any = None) -> np.ndarray:
        """The constant the model adds back: the band's weighted mean (0 without
        ``center_data``).

        Parameters
        ----------
        bands : array_like, optional
            Band labels (any shape); default: the band of every observation.

        Returns
        -------
        ndarray
            The offset of each label of ``bands`` (its shape), or of each
            observation.
        """
        return self._offsets_at(self.band_index if bands is None else self.band_numbers(bands))

    def band_numbers(self, bands: Any) -> np.ndarray:
        """Indices into ``labels`` of the labels ``bands`` (any shape).

        Raises
        ------
        ValueError
            A label absent from the data.
        """
        lookup = {label: number for number, label in enumerate(self.labels)}
        wanted = np.asarray(bands, dtype=object)
        unknown = sorted({str(b) for b in wanted.ravel() if b not in lookup})
        if unknown:
            raise ValueError(
                f"bands_fit has labels absent from the data: {unknown} "
                f"(the data's bands: {list(self.labels)})"
            )
        return np.vectorize(lookup.__getitem__, otypes=[np.intp])(wanted)

    def design_matrix(self, frequency: float, t: Any, band_index: Any) -> np.ndarray:
        """Unweighted design matrix ``(len(t), n_parameters)`` at ``frequency``.

        ``t`` counts from ``epoch``; ``band_index`` indexes ``labels``.
        """
        phase = 2 * np.pi * frequency * np.asarray(t, dtype=np.float64)
        in_band = np.asarray(band_index)[:, None] == np.arange(len(self.labels))
        band_columns = _harmonics(phase, self.nterms_band)
        columns = [_harmonics(phase, self.nterms_base)]
        columns += [band_columns * in_band[:, [band]] for band in range(len(self.labels))]
        return np.concatenate(columns, axis=1)

    def model_parameters(self, frequency: float) -> np.ndarray:
        """Best-fit parameters at ``frequency`` (the order of the class notes).

        The ridged weighted least-squares solution of astropy's method
        "flexible"; the minimum-norm one where the ridged normal matrix is
        singular (no ridge given).
        """
        frequency = checks.real("frequency", frequency)
        sigma = self.weights**-0.5
        x = self.design_matrix(frequency, self.t, self.band_index) / sigma[:, None]
        z = (self.y - self.offset()) / sigma
        normal = x.T @ x
        scale = np.trace(normal) if self.regularize_by_trace else 1.0
        normal[np.diag_indices_from(normal)] += scale * self._ridge()
        try:
            return np.linalg.solve(normal, x.T @ z)
        except np.linalg.LinAlgError:
            return np.linalg.lstsq(normal, x.T @ z, rcond=None)[0]

    def model(self, t: Any, frequency: float, bands: Any = None) -> np.ndarray:
        """The fitted model at times ``t`` for each band, shape ``(n_bands, len(t))``.

        Parameters
        ----------
        t : array_like
            Times, in the scale of the data (``epoch`` is subtracted).
        frequency : float
            Ordinary frequency of the model.
        bands : array_like, optional
            Band labels (one row each); default every band, in ``labels`` order.

        Returns
        -------
        ndarray
            Each band's model, its weighted mean added back with ``center_data``.
        """
        t = np.atleast_1d(np.asarray(t, dtype=np.float64)) - self.epoch
        numbers = np.arange(len(self.labels)) if bands is None else self.band_numbers(bands)
        numbers = np.atleast_1d(numbers)
        rows, times = np.broadcast_arrays(numbers[:, None], t.ravel()[None, :])
        x = self.design_matrix(frequency, times.ravel(), rows.ravel())
        fitted = (x @ self.model_parameters(frequency)).reshape(rows.shape)
        return fitted + self._offsets_at(numbers)[:, None]

    def _offsets_at(self, index: np.ndarray) -> np.ndarray:
        """The offsets of the bands ``index`` (indices into ``labels``)."""
        if not self.center_data:
            return np.zeros(np.shape(index))
        return self.band_means()[index]

    def _ridge(self) -> np.ndarray:
        """The ridge of each parameter (zeros where neither ridge is given)."""
        n_base = 1 + 2 * self.nterms_base
        ridge = np.zeros(self.n_parameters)
        ridge[:n_base] = self.reg_base or 0.0
        ridge[n_base:] = self.reg_band or 0.0
        return ridge


def _harmonics(phase: np.ndarray, nterms: int) -> np.ndarray:
    """Columns ``[1, sin phase, cos phase, ..., sin nterms phase, cos nterms phase]``."""
    columns = [np.ones_like(phase)]
    for k in range(1, nterms + 1):
        columns += [np.sin(k * phase), np.cos(k * phase)]
    return np.stack(columns, axis=-1)


def _finite_vector(name: str, values: Any) -> np.ndarray:
    """``values`` as a finite 1-D float64 array."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite")
    return array


def _weights(dy: Any, n: int) -> np.ndarray:
    """``dy**-2`` broadcast to ``n`` points (ones without ``dy``)."""
    if dy is None:
        return np.ones(n)
    dy = np.broadcast_to(np.asarray(dy, dtype=np.float64), (n,))
    if not (np.isfinite(dy) & (dy > 0)).all():
        raise ValueError("dy must be finite and > 0")
    return dy**-2.0


def _ridge(name: str, value: Any) -> float | None:
    """A ridge: None, or a finite float >= 0."""
    if value is None:
        return None
    ridge = checks.real(name, value)
    if ridge < 0:
        raise ValueError(f"{name} must be >= 0, got {ridge}")
    return ridge
