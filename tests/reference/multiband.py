"""Reference multiband Lomb-Scargle periodogram (VanderPlas & Ivezic 2015), written for clarity.

This module restates ``shared/spec/methods_next.md`` §2 (cited below as "spec")
in float64 NumPy: astropy ``LombScargleMultiband``'s method ``"flexible"``, its
``model``, ``model_parameters``, ``offset`` and ``autofrequency``. It is the
oracle the OpenCL multiband kernels are tested against; nothing here imports
``clperiod`` or astropy.

Model (spec §2.2). Bands are ordered as ``np.unique`` orders their labels. With
``K = nterms_base`` and ``L = nterms_band`` the model at angular frequency
``w`` is a base part ``a_0 + sum_k (a_k sin kwt + b_k cos kwt)``, k = 1..K, common
to all bands, plus for each band ``c_0 + sum_l (c_l sin lwt + d_l cos lwt)``,
l = 1..L, on that band's points only. The parameter vector is ordered as
``[a_0, a_1, b_1, ..., a_K, b_K]`` then, band by band, ``[c_0, c_1, d_1, ...]``.
The base constant duplicates the sum of the band constants, so the normal
matrix is singular; a ridge (``reg_base``, ``reg_band``, by default 1e-6 times
its trace on the band parameters) makes it invertible, as in astropy.

Power: with ``center_data``, each band's weighted mean is subtracted first; the
power is ``b^T M^-1 b / chi2_0`` with ``M`` the ridged normal matrix of the
rows divided by ``dy``, ``b = X^T z``, ``z = y / dy`` and ``chi2_0 = z^T z``
(so it is about zero, not about the band means, when ``center_data`` is False).
Astropy's method "flexible" ignores ``normalization`` and ``fit_mean``: every
normalization gives this same ratio, so none is taken here.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]

#: astropy's default ridge on the band parameters, in units of the normal matrix's trace.
DEFAULT_REG_BAND = 1e-6


def band_index(bands: ArrayLike) -> tuple[NDArray, NDArray[np.intp]]:
    """Sorted unique band labels and each observation's index into them."""
    labels, index = np.unique(np.asarray(bands), return_inverse=True)
    return labels, index.ravel()


def inverse_variance(dy: ArrayLike | None, n: int) -> FloatArray:
    """``dy**-2`` broadcast to ``n`` points (ones without errors)."""
    if dy is None:
        return np.ones(n)
    return np.broadcast_to(np.asarray(dy, dtype=float) ** -2.0, (n,)).copy()


def band_means(y: FloatArray, weights: FloatArray, index: NDArray[np.intp],
               nbands: int) -> FloatArray:
    """Weighted mean of ``y`` in each band (length ``nbands``)."""
    sum_w = np.bincount(index, weights, minlength=nbands)
    sum_wy = np.bincount(index, weights * y, minlength=nbands)
    return sum_wy / sum_w


def harmonic_columns(phase: FloatArray, nterms: int) -> list[FloatArray]:
    """``[1, sin phase, cos phase, ..., sin nterms phase, cos nterms phase]``."""
    columns = [np.ones_like(phase)]
    for k in range(1, nterms + 1):
        columns += [np.sin(k * phase), np.cos(k * phase)]
    return columns


def design_matrix(t: ArrayLike, index: ArrayLike, nbands: int, frequency: float,
                  nterms_base: int, nterms_band: int) -> FloatArray:
    """Unweighted design matrix ``(len(t), 1 + 2K + nbands (1 + 2L))`` of the model.

    ``index`` is each row's band index (``0 .. nbands - 1``); columns follow the
    parameter order of the module docstring.
    """
    t = np.asarray(t, dtype=float)
    index = np.asarray(index)
    phase = 2.0 * np.pi * frequency * t
    base = harmonic_columns(phase, nterms_base)
    band_terms = harmonic_columns(phase, nterms_band)
    columns = list(base)
    for band in range(nbands):
        in_band = index == band
        columns += [np.where(in_band, column, 0.0) for column in band_terms]
    return np.stack(columns, axis=-1)


def regularization(nbands: int, nterms_base: int, nterms_band: int,
                   reg_base: float | None, reg_band: float | None) -> FloatArray:
    """The ridge per parameter (zeros where neither ridge is given)."""
    n_base = 1 + 2 * nterms_base
    ridge = np.zeros(n_base + nbands * (1 + 2 * nterms_band))
    if reg_base is not None:
        ridge[:n_base] = reg_base
    if reg_band is not None:
        ridge[n_base:] = reg_band
    return ridge


def ridged_normal_matrix(x_weighted: FloatArray, ridge: FloatArray,
                         regularize_by_trace: bool) -> FloatArray:
    """``X^T X`` plus the ridge on its diagonal (scaled by its trace if asked)."""
    normal = x_weighted.T @ x_weighted
    scale = np.trace(normal) if regularize_by_trace else 1.0
    return normal + np.diag(scale * ridge)


def solve_normal(normal: FloatArray, rhs: FloatArray) -> FloatArray:
    """``normal^-1 rhs``; the minimum-norm least-squares solution where singular."""
    try:
        return np.linalg.solve(normal, rhs)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(normal, rhs, rcond=None)[0]


class MultibandLombScargle:
    """The multiband periodogram of one light curve (astropy's method "flexible").

    Parameters
    ----------
    t, y : array_like
        Times (relative to a reference epoch) and values, length ``N``.
    bands : array_like
        Band label of each observation (any type ``np.unique`` sorts).
    dy : array_like or float, optional
        Uncertainties; without them every point has weight one.
    nterms_base, nterms_band : int
        Harmonics of the shared model and of each band's model (not both 0).
    reg_base, reg_band : float or None
        Ridges on the base and band parameters (astropy's defaults: None, 1e-6).
    regularize_by_trace : bool
        Express the ridges in units of the normal matrix's trace.
    center_data : bool
        Subtract each band's weighted mean before fitting.
    """

    def __init__(self, t: ArrayLike, y: ArrayLike, bands: ArrayLike,
                 dy: ArrayLike | float | None = None, *, nterms_base: int = 1,
                 nterms_band: int = 1, reg_base: float | None = None,
                 reg_band: float | None = DEFAULT_REG_BAND, regularize_by_trace: bool = True,
                 center_data: bool = True) -> None:
        if nterms_base < 0 or nterms_band < 0:
            raise ValueError("nterms_base and nterms_band must be >= 0")
        if nterms_base == 0 and nterms_band == 0:
            raise ValueError("at least one of nterms_base and nterms_band must be > 0")
        self.t = np.asarray(t, dtype=float)
        self.y = np.asarray(y, dtype=float)
        self.labels, self.index = band_index(bands)
        if not self.t.shape == self.y.shape == self.index.shape or self.t.ndim != 1:
            raise ValueError("t, y and bands must be one-dimensional with one length")
        self.weights = inverse_variance(dy, self.t.size)
        self.sigma = self.weights**-0.5
        self.nterms_base = nterms_base
        self.nterms_band = nterms_band
        self.ridge = regularization(self.labels.size, nterms_base, nterms_band, reg_base,
                                    reg_band)
        self.regularize_by_trace = regularize_by_trace
        self.center_data = center_data
        self.means = band_means(self.y, self.weights, self.index, self.labels.size)

    @property
    def n_parameters(self) -> int:
        """Length of :meth:`model_parameters`: ``1 + 2K + nbands (1 + 2L)``."""
        return 1 + 2 * self.nterms_base + self.labels.size * (1 + 2 * self.nterms_band)

    def offset(self) -> FloatArray:
        """Per-observation model offset: its band's weighted mean (0 without centring)."""
        if not self.center_data:
            return np.zeros_like(self.y)
        return self.means[self.index]

    def _weighted_system(self, frequency: float) -> tuple[FloatArray, FloatArray]:
        """Rows and data divided by ``dy``: ``(X / dy, (y - offset) / dy)``."""
        x = design_matrix(self.t, self.index, self.labels.size, frequency, self.nterms_base,
                          self.nterms_band)
        return x / self.sigma[:, None], (self.y - self.offset()) / self.sigma

    def model_parameters(self, frequency: float) -> FloatArray:
        """Best-fit parameters at ``frequency``, in the order of the module docstring."""
        x_weighted, z = self._weighted_system(frequency)
        normal = ridged_normal_matrix(x_weighted, self.ridge, self.regularize_by_trace)
        return solve_normal(normal, x_weighted.T @ z)

    def power(self, frequency: ArrayLike) -> FloatArray:
        """Periodogram ``b^T M^-1 b / chi2_0`` at each frequency (spec §2.2)."""
        frequency = np.asarray(frequency, dtype=float)
        powers = np.empty(frequency.size)
        for k, f in enumerate(frequency.ravel()):
            x_weighted, z = self._weighted_system(f)
            normal = ridged_normal_matrix(x_weighted, self.ridge, self.regularize_by_trace)
            rhs = x_weighted.T @ z
            powers[k] = rhs @ solve_normal(normal, rhs) / (z @ z)
        return powers.reshape(frequency.shape)

    def _band_numbers(self, bands_fit: ArrayLike | None) -> NDArray[np.intp]:
        """Indices of ``bands_fit`` (default: every band) among the data's bands."""
        if bands_fit is None:
            return np.arange(self.labels.size)
        wanted = np.atleast_1d(np.asarray(bands_fit))
        unknown = np.setdiff1d(wanted, self.labels)
        if unknown.size:
            raise ValueError(f"bands_fit has labels absent from the data: {unknown.tolist()}")
        return np.searchsorted(self.labels, wanted)

    def model(self, t_fit: ArrayLike, frequency: float,
              bands_fit: ArrayLike | None = None) -> FloatArray:
        """Best-fit model at ``t_fit`` for each band, shape ``(n_bands_fit, len(t_fit))``.

        The band's mean is added back where the data were centred. (Astropy 8
        adds ``offset()[k]``, the mean of the band of the ``k``-th observation, for
        the ``k``-th sorted band; the two agree when observation ``k`` is in band
        ``k`` for every band.)
        """
        t_fit = np.atleast_1d(np.asarray(t_fit, dtype=float))
        numbers = self._band_numbers(bands_fit)
        theta = self.model_parameters(frequency)
        rows = np.broadcast_to(numbers[:, None], (numbers.size, t_fit.size))
        times = np.broadcast_to(t_fit, rows.shape)
        x = design_matrix(times.ravel(), rows.ravel(), self.labels.size, frequency,
                          self.nterms_base, self.nterms_band)
        fitted = (x @ theta).reshape(rows.shape)
        if self.center_data:
            fitted += self.means[numbers][:, None]
        return fitted

    def autofrequency(self, samples_per_peak: float = 5, nyquist_factor: float = 5,
                      minimum_frequency: float | None = None,
                      maximum_frequency: float | None = None) -> FloatArray:
        """Astropy's heuristic grid on all bands pooled (spec §2.4)."""
        baseline = self.t.max() - self.t.min()
        step = 1.0 / baseline / samples_per_peak
        if minimum_frequency is None:
            minimum_frequency = 0.5 * step
        if maximum_frequency is None:
            maximum_frequency = nyquist_factor * 0.5 * self.t.size / baseline
        count = 1 + int(np.round((maximum_frequency - minimum_frequency) / step))
        return minimum_frequency + step * np.arange(count)
