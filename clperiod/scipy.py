"""SciPy bridge: :func:`scipy.signal.lombscargle`, computed by clperiod.

Existing SciPy code switches to the OpenCL device with one line::

    from scipy.signal import lombscargle      # before
    from clperiod.scipy import lombscargle    # after

    power = lombscargle(x, y, angular_frequencies, floating_mean=True)

The signature, the options (``normalize`` ``False``/``"power"``,
``True``/``"normalize"`` and ``"amplitude"``, ``weights``, ``floating_mean``,
the deprecated ``precenter`` and positional options) and the checks of the
input are SciPy's; the weighted least-squares fit of ``a cos(w x) + b sin(w x)
[+ c]`` at every frequency is the multi-term kernel of
:mod:`clperiod.periodograms.multiterm` with one harmonic (fp64, exact sums), and its
coefficients for ``"amplitude"``.

Frequencies: the distinct absolute values of ``freqs`` (angular, as SciPy),
in cycles, are one grid (:meth:`clperiod.FrequencyGrid.from_frequencies`) and
one kernel call: the uniform-grid kernel when they are evenly spaced (any
``linspace``/``arange`` array, in any order), else the kernel that reads each
frequency from an array; any spacing is exact.

Where the fit is degenerate (frequency 0, all phases equal modulo half a
cycle, fewer points than parameters) the kernel's normal equations are
singular; there the host fits the columns that are independent (offset, then
cosine, then sine), which is what SciPy's clamping of vanishing sums gives,
e.g. at frequency 0 the mean without ``floating_mean`` and 0 with it.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from clperiod.grid import FrequencyArray, FrequencyGrid
from clperiod.periodograms.lombscargle import Normalization
from clperiod.periodograms.multiterm import multiterm_coefficients, multiterm_power
from clperiod.periodograms.standardize import standardize

__all__ = ["lombscargle"]

_NORMALIZE = ("power", "normalize", "amplitude")
#: The options SciPy still takes by position (deprecated), in its order.
_POSITIONAL = ("precenter", "normalize", "weights", "floating_mean")
#: A column of a degenerate fit is dropped when the columns before it leave
#: less than this fraction of its norm (normal equations lose all digits there).
_DEPENDENT = float(np.sqrt(np.finfo(np.float64).eps))
_UNSET = object()


def lombscargle(
    x: Any,
    y: Any,
    freqs: Any,
    *args: Any,
    precenter: Any = _UNSET,
    normalize: bool | str = False,
    weights: Any = None,
    floating_mean: bool = False,
    device: Any = None,
) -> np.ndarray:
    """Generalized Lomb-Scargle periodogram with SciPy's interface, on OpenCL.

    Parameters
    ----------
    x : array_like
        Sample times, 1-D.
    y : array_like
        Values (baseline 0 unless ``floating_mean``), same shape as ``x``.
    freqs : array_like
        Angular frequencies (``2 pi / period``), 1-D, non-empty; any sign
        (the power is even in ``freqs``), order and spacing.
    *args
        ``precenter``, ``normalize``, ``weights``, ``floating_mean`` by
        position: deprecated (as SciPy), pass them by keyword.
    precenter : bool, optional
        Deprecated (as SciPy): subtract ``y.mean()`` first.
    normalize : {False, "power", True, "normalize", "amplitude"}
        ``"power"``: SciPy's unnormalized power, ``N / 2`` times the reduction
        of chi^2 with weights normalized to sum 1 (``A**2 N / 4`` for a
        sinusoid of amplitude ``A``); ``"normalize"``: that reduction over
        ``sum w y**2`` (about the weighted mean with ``floating_mean``);
        ``"amplitude"``: complex ``A + iB`` of the fit ``A cos(w x) + B
        sin(w x) [+ c]``.
    weights : array_like, optional
        Non-negative sample weights (not all 0), same shape as ``x``.
    floating_mean : bool
        Fit an offset at every frequency.
    device : str or devices, optional
        OpenCL device selection (see :func:`clperiod.select_devices`); it
        must support fp64.

    Returns
    -------
    ndarray
        float64 (complex128 for ``"amplitude"``), one value per frequency,
        squeezed as SciPy's (a 0-d array for one frequency). Where ``y`` is 0
        (with ``floating_mean``: constant within float64 resolution) the power
        is 0 and ``"normalize"`` NaN. ``"normalize"`` does not depend on the
        units of ``y`` (nor on its offset with ``floating_mean``), and
        amplitudes scale with ``y``.

    Raises
    ------
    ValueError
        Arrays not 1-D, empty or of different lengths, non-finite values,
        negative weights or weights summing to 0, or an unknown ``normalize``.
    """
    if args:
        precenter, normalize, weights, floating_mean = _positional_options(
            args,
            precenter=precenter,
            normalize=normalize,
            weights=weights,
            floating_mean=floating_mean,
        )
    x, y, w, freqs = _checked_arrays(x, y, weights, freqs)
    normalize = _checked_normalize(normalize)
    if precenter is not _UNSET:
        warnings.warn(
            "precenter is deprecated (as in SciPy 1.17): leave 'precenter' unspecified "
            "and pass y - y.mean() instead, or use floating_mean=True",
            DeprecationWarning,
            stacklevel=2,
        )
        if precenter:
            y = y - y.mean()
    fit = _Fit(x, y, w / w.sum(), bool(floating_mean), device)
    cycles = np.abs(freqs) / (2 * np.pi)
    distinct, inverse = np.unique(cycles, return_inverse=True)
    if normalize == "amplitude":
        values = fit.amplitudes(distinct)[inverse]
        values = np.where(freqs < 0, np.conj(values), values)
    elif normalize == "power":
        values = 0.5 * x.size * fit.delta_chi2(distinct)[inverse]
    else:
        values = fit.normalized(distinct)[inverse]
    return np.squeeze(values)


class _Fit:
    """The least-squares fit of one light curve at given frequencies (in cycles).

    Points of weight 0 are left out (they add nothing to any sum); the
    kernel evaluates the frequencies (sorted and distinct), the host the
    degenerate ones.
    Values that do not vary within float64 resolution (about their weighted
    mean with ``floating_mean``; :func:`clperiod.periodograms.standardize.standardize`)
    reduce chi^2 by 0 and have no normalized power (0 / 0: NaN).
    """

    def __init__(
        self, x: np.ndarray, y: np.ndarray, w: np.ndarray, floating_mean: bool, device: Any
    ) -> None:
        used = w > 0
        self.t, self.y, self.w = x[used], y[used], w[used]
        self.floating_mean = floating_mean
        self.device = device
        values = standardize(self.y, self.w**-0.5, np.array([0, self.y.size]), floating_mean)
        self.flat = bool(values.flat[0])
        self.chi2_ref = float(values.weighted_sum_of_squares()[0])

    def delta_chi2(self, frequency: np.ndarray) -> np.ndarray:
        """Reduction of chi^2 (weights summing to 1) at each frequency."""
        if self.flat:
            return np.zeros(frequency.size)
        values = self._on_grid(frequency, self._psd, ())
        for k in np.flatnonzero(np.isnan(values)):
            values[k] = _degenerate_fit(self.t, self.y, self.w, frequency[k], self.floating_mean)[
                0
            ]
        return values

    def normalized(self, frequency: np.ndarray) -> np.ndarray:
        """Reduction of chi^2 over ``chi2_ref`` at each frequency, free of the
        units and (with ``floating_mean``) the offset of ``y``."""
        if self.flat:
            return np.full(frequency.size, np.nan)
        values = self._on_grid(frequency, self._standard, ())
        for k in np.flatnonzero(np.isnan(values)):
            values[k] = (
                _degenerate_fit(self.t, self.y, self.w, frequency[k], self.floating_mean)[0]
                / self.chi2_ref
            )
        return values

    def amplitudes(self, frequency: np.ndarray) -> np.ndarray:
        """``A + iB`` of the fit ``A cos + B sin`` at each frequency."""
        coefficients = self._on_grid(frequency, self._coefficients, (2,))
        # the kernel's unknowns: [offset], sine, cosine
        values = coefficients[:, 1] + 1j * coefficients[:, 0]
        for k in np.flatnonzero(np.isnan(values)):
            _, cos, sin = _degenerate_fit(self.t, self.y, self.w, frequency[k], self.floating_mean)
            values[k] = cos + 1j * sin
        return values

    def _on_grid(self, frequency: np.ndarray, evaluate, shape: tuple[int, ...]) -> np.ndarray:
        """``evaluate(grid)`` on the grid of ``frequency`` (sorted, distinct);
        all NaN (every frequency degenerate) when there are fewer points than
        parameters."""
        if self.t.size < 2 + self.floating_mean:
            return np.full((frequency.size, *shape), np.nan)
        return evaluate(FrequencyGrid.from_frequencies(frequency))

    def _psd(self, grid: FrequencyGrid | FrequencyArray) -> np.ndarray:
        return 2 * self._power(grid, "psd")

    def _standard(self, grid: FrequencyGrid | FrequencyArray) -> np.ndarray:
        return self._power(grid, "standard")

    def _power(
        self, grid: FrequencyGrid | FrequencyArray, normalization: Normalization
    ) -> np.ndarray:
        return multiterm_power(
            self.t,
            self.y,
            self.w**-0.5,
            grid,
            1,
            fit_mean=self.floating_mean,
            center_data=False,
            normalization=normalization,
            device=self.device,
        )

    def _coefficients(self, grid: FrequencyGrid | FrequencyArray) -> np.ndarray:
        coefficients = multiterm_coefficients(
            self.t,
            self.y,
            self.w**-0.5,
            grid,
            1,
            fit_mean=self.floating_mean,
            center_data=False,
            device=self.device,
        )
        return coefficients[:, int(self.floating_mean) :]


def _degenerate_fit(
    t: np.ndarray, y: np.ndarray, w: np.ndarray, frequency: float, floating_mean: bool
) -> tuple[float, float, float]:
    """Reduction of chi^2 and the cosine and sine coefficients of the fit at a
    frequency whose columns are dependent.

    The columns (offset, cosine, sine, in that order) are orthogonalized
    (weighted, twice) and one that the earlier ones leave with less than
    :data:`_DEPENDENT` of the norm of a full column (the offset's: the cosine
    and sine columns' squared norms add up to it) is dropped (coefficient 0).
    """
    cycles = frequency * t
    cycles -= np.rint(cycles)
    root_w = np.sqrt(w)
    columns = [np.cos(2 * np.pi * cycles), np.sin(2 * np.pi * cycles)]
    if floating_mean:
        columns.insert(0, np.ones_like(t))
    design = root_w[:, None] * np.column_stack(columns)
    full = np.linalg.norm(root_w)
    basis = np.empty((t.size, 0))
    kept = []
    for j, column in enumerate(design.T):
        residual = column - basis @ (basis.T @ column)
        residual -= basis @ (basis.T @ residual)
        norm = np.linalg.norm(residual)
        if norm > _DEPENDENT * full:
            basis = np.column_stack([basis, residual / norm])
            kept.append(j)
    target = root_w * y
    projection = basis.T @ target
    # with a floating mean the offset (always kept, first) is part of the reference
    delta_chi2 = float(np.sum(projection[int(floating_mean) :] ** 2))
    coefficients = np.zeros(len(columns))
    if kept:
        coefficients[kept] = np.linalg.lstsq(design[:, kept], target, rcond=None)[0]
    cos, sin = coefficients[int(floating_mean) :]
    return delta_chi2, float(cos), float(sin)


def _positional_options(args: tuple, **given: Any) -> tuple:
    """SciPy's deprecated positional options, merged with the keywords."""
    if len(args) > len(_POSITIONAL):
        raise TypeError(
            f"lombscargle takes at most {3 + len(_POSITIONAL)} positional "
            f"arguments, got {3 + len(args)}"
        )
    names = _POSITIONAL[: len(args)]
    defaults = {"precenter": _UNSET, "normalize": False, "weights": None, "floating_mean": False}
    for name, value in zip(names, args, strict=True):
        if given[name] is not defaults[name]:
            raise TypeError(f"lombscargle got multiple values for argument {name!r}")
        given[name] = value
    warnings.warn(
        f"passing {', '.join(names)} by position is deprecated (as in SciPy 1.17): "
        "use keyword arguments",
        DeprecationWarning,
        stacklevel=3,
    )
    return tuple(given[name] for name in _POSITIONAL)


def _checked_arrays(x: Any, y: Any, weights: Any, freqs: Any) -> tuple[np.ndarray, ...]:
    """float64 ``x, y, weights, freqs``, with SciPy's shape and weight checks and
    finite values."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = np.ones_like(y) if weights is None else np.asarray(weights, dtype=np.float64)
    freqs = np.asarray(freqs, dtype=np.float64)
    if not (x.ndim == 1 and x.size > 0 and x.shape == y.shape == w.shape):
        raise ValueError(
            f"x, y and weights must be 1-D arrays of one non-zero length, got "
            f"shapes {x.shape}, {y.shape} and {w.shape}"
        )
    if not (freqs.ndim == 1 and freqs.size > 0):
        raise ValueError(f"freqs must be a non-empty 1-D array, got shape {freqs.shape}")
    for name, values in (("x", x), ("y", y), ("weights", w), ("freqs", freqs)):
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{name} must be finite")
    if not (np.all(w >= 0) and w.sum() > 0):
        raise ValueError("weights must be non-negative and sum to a positive value")
    return x, y, w, freqs


def _checked_normalize(normalize: Any) -> str:
    """SciPy's ``normalize`` as one of :data:`_NORMALIZE`."""
    if isinstance(normalize, (bool, np.bool_)):
        return "normalize" if normalize else "power"
    if isinstance(normalize, str) and normalize in _NORMALIZE:
        return normalize
    raise ValueError(
        f"normalize must be False (or 'power'), True (or 'normalize') or "
        f"'amplitude', got {normalize!r}"
    )
