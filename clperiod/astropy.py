"""Astropy bridge: astropy's ``LombScargle`` interface, computed by clperiod.

Existing astropy code switches to the OpenCL device with one line::

    from astropy.timeseries import LombScargle    # before
    from clperiod.astropy import LombScargle      # after

    frequency, power = LombScargle(t, y, dy).autopower()

:class:`LombScargle` subclasses :class:`astropy.timeseries.LombScargle`, so
``Time``/``TimeDelta`` times, unit handling, ``from_timeseries``, ``model``,
``model_parameters``, ``offset``, ``design_matrix`` and ``distribution`` are
astropy's own; the periodogram comes from :func:`clperiod.lombscargle` (the
exact direct sum, no approximation) on a :class:`clperiod.FrequencyGrid`, and
the false-alarm statistics from :mod:`clperiod.periodograms.stats` (the bootstrap runs its
resamplings as one catalog, or one multi-term batch, on the device).

Every astropy method name is accepted and computed exactly, with astropy's
rules on which models a method takes:

=====================================  ===========================================
``method``                             clperiod computes
=====================================  ===========================================
``"auto"``, ``"clperiod"``             single-term kernel (``nterms = 1``), else
                                       the multi-term kernel
``"slow"``, ``"cython"``, ``"fast"``   single-term kernel; ``nterms != 1`` raises
``"scipy"``                            single-term kernel, uniform ``dy`` kept as
                                       weights; ``fit_mean=True``, a non-uniform
                                       ``dy`` or ``nterms != 1`` raise
``"chi2"``, ``"fastchi2"``             multi-term kernel, any ``nterms`` (fp64)
=====================================  ===========================================

The fast methods' approximation controls in ``method_kwds`` (``use_fft``,
``trig_sum_kwds``, ``algorithm``; also taken with ``"auto"``) do not
approximate anything here: ``use_fft=False``, astropy's request for direct
sums, evaluates every harmonic's sine and cosine from its own phase with the
multi-term kernel (fp64), where the default kernels use trigonometric
recurrences; both are exact to rounding. What else differs from astropy:

* ``nterms != 1`` (up to :data:`clperiod.periodograms.multiterm.MAX_NTERMS`) is the exact
  least-squares fit of astropy's ``"chi2"`` method, in fp64
  (:func:`clperiod.periodograms.multiterm.multiterm_power`);
* the power at frequency 0 is NaN for every method (astropy's exact
  single-term methods give NaN, ``"chi2"`` raises LinAlgError and the fast
  methods return their approximation of 0);
* ``false_alarm_level`` takes probabilities 0 and 1 as astropy (levels at
  the top of the range, 1 or inf, and 0), and ``false_alarm_probability``
  of an infinite power is 0;
* false-alarm probabilities and levels also exist for ``nterms != 1`` and
  for uncentred data (``fit_mean = center_data = False``), which astropy
  refuses (NotImplementedError): Baluev's approximation generalized to
  ``2 nterms`` harmonic components (see :mod:`clperiod.periodograms.stats`), and a
  bootstrap of the object's own model;
* ``power(frequency)`` takes any frequencies, in any order and shape, as
  astropy's exact methods do: evenly spaced ones (``linspace``, ``arange``,
  ``autofrequency`` arrays) run on the uniform-grid kernels, any others
  (e.g. uniform in period) on the kernels that read each frequency from an
  array (:meth:`clperiod.FrequencyGrid.from_frequencies`), one device call
  either way;
* ``precision=`` (``"fp64"``/``"fp32"``) and ``device=`` choose the kernel.

:func:`register_astropy_method` instead adds ``method="clperiod"`` to astropy's
own class (opt-in; nothing is registered at import).

:class:`LombScargleMultiband` does the same for
:class:`astropy.timeseries.LombScargleMultiband`, with
:func:`clperiod.lombscargle_multiband` for the powers of method
``"flexible"``, clperiod's single-band periodograms for those of method
``"fast"``, and :class:`clperiod.periodograms.multiband_fit.MultibandFit`
for ``model``, ``model_parameters`` and ``offset``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal, cast

import numpy as np

try:
    from astropy import units as u
    from astropy.timeseries import BoxLeastSquares as _AstropyBoxLeastSquares
    from astropy.timeseries import LombScargle as _AstropyLombScargle
    from astropy.timeseries import LombScargleMultiband as _AstropyLombScargleMultiband
except ImportError as error:  # pragma: no cover - exercised only without astropy
    raise ImportError("clperiod.astropy needs astropy: pip install clperiod[astropy]") from error

from clperiod import checks
from clperiod.catalog import Catalog, Status
from clperiod.grid import FrequencyArray, FrequencyGrid
from clperiod.periodograms import stats
from clperiod.periodograms.bls import Method, Objective, bls
from clperiod.periodograms.bootstrap import DEFAULT_RESAMPLINGS, resample
from clperiod.periodograms.inputs import check_choice
from clperiod.periodograms.lombscargle import Algorithm, Precision, lombscargle
from clperiod.periodograms.multiband import MAX_NTERMS as MAX_NTERMS_MULTIBAND
from clperiod.periodograms.multiband import lombscargle_multiband
from clperiod.periodograms.multiband_fit import DEFAULT_REG_BAND, MultibandFit
from clperiod.periodograms.multiterm import MAX_NTERMS, multiterm_max_power, multiterm_power

__all__ = [
    "BoxLeastSquares",
    "LombScargle",
    "LombScargleMultiband",
    "lombscargle_clperiod",
    "register_astropy_method",
]

#: Keywords of ``method_kwds`` passed on to :func:`clperiod.lombscargle`.
_DEVICE_KEYWORDS = ("precision", "device", "memory", "progress")
#: astropy's method names, in astropy's order, and clperiod's own.
_METHODS = ("auto", "slow", "chi2", "cython", "fast", "fastchi2", "scipy", "clperiod")
#: Methods fitting the multi-term model whatever ``nterms`` is.
_MULTITERM_METHODS = ("chi2", "fastchi2")
#: Methods astropy runs only with ``nterms = 1``.
_SINGLE_TERM_METHODS = ("slow", "cython", "fast", "scipy")
#: Methods whose ``method_kwds`` may hold the fast methods' approximation controls.
_FAST_METHODS = ("auto", "fast", "fastchi2")
_APPROXIMATION_KEYWORDS = ("use_fft", "trig_sum_kwds", "algorithm")
Kernel = Literal["auto", "multiterm", "direct"]
_FAP_METHODS = ("baluev", "davies", "naive", "single", "townsend", "bootstrap")
#: LombScargleMultiband's methods, astropy's.
_MULTIBAND_METHODS = ("flexible", "fast")
#: The :func:`clperiod.lombscargle` algorithm of each single-band method of the
#: multiband method "fast" that is not exact, for one harmonic ("direct" for the
#: others, and for several harmonics: the multi-term NUFFT loses accuracy below
#: one cycle per baseline, where astropy's frequency grids start).
_BAND_ALGORITHMS: dict[str, Algorithm] = {
    "fast": "nufft",
    "fastchi2": "nufft",
    "auto": "auto",
    "clperiod": "auto",
}
#: BoxLeastSquares method names: astropy's, then clperiod's for the same searches.
_BLS_METHODS = ("fast", "slow", "binned", "exact")
#: The fields of astropy's BLS implementations' results, in their order.
_BLS_FIELDS = (
    "power",
    "depth",
    "depth_err",
    "duration",
    "transit_time",
    "depth_snr",
    "log_likelihood",
)


class _AutoFrequency:
    """astropy's frequency heuristic for the bridge classes, from
    :meth:`clperiod.FrequencyGrid.auto` (each class gives ``_values`` and
    ``_frequency_value``)."""

    _trel: Any
    _values: Callable[[], tuple[Any, ...]]
    _frequency_value: Callable[[Any], float | None]

    def autofrequency(
        self,
        samples_per_peak: float = 5,
        nyquist_factor: float = 5,
        minimum_frequency: Any = None,
        maximum_frequency: Any = None,
        return_freq_limits: bool = False,
    ) -> Any:
        """astropy's heuristic frequency grid, from :meth:`clperiod.FrequencyGrid.auto`.

        Parameters and results as astropy's ``autofrequency`` (the same
        values; multiband: all bands pooled); frequencies carry the unit
        ``1 / t`` when ``t`` has one.
        """
        grid = self._auto_grid(
            samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency
        )
        unit = self._frequency_unit()
        if return_freq_limits:
            return grid.fmin * unit, grid.fmax * unit
        return grid.frequencies() * unit

    def _frequency_unit(self) -> Any:
        unit = getattr(self._trel, "unit", None)
        return 1 if unit is None else 1 / unit

    def _auto_grid(
        self, samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency
    ) -> FrequencyGrid:
        return FrequencyGrid.auto(
            self._values()[0],
            samples_per_peak=samples_per_peak,
            nyquist_factor=nyquist_factor,
            minimum_frequency=self._frequency_value(minimum_frequency),
            maximum_frequency=self._frequency_value(maximum_frequency),
        )


class LombScargle(_AutoFrequency, _AstropyLombScargle):
    """astropy's Lomb-Scargle periodogram, evaluated by clperiod on OpenCL.

    Parameters
    ----------
    t : array_like, Quantity ['time'], Time or TimeDelta
        Observation times. ``Time`` values are taken relative to ``t[0]``, in
        days, as astropy does.
    y : array_like or Quantity
        Observations.
    dy : float, array_like or Quantity, optional
        Uncertainties (the same unit as ``y``).
    fit_mean, center_data : bool
        Floating mean; subtract the weighted mean first (astropy's meaning).
    nterms : int
        Harmonics of the model, 0 to :data:`clperiod.periodograms.multiterm.MAX_NTERMS`
        (0 needs ``fit_mean``); other than 1 the periodogram is the
        multi-term fit (fp64).
    normalization : {"standard", "model", "log", "psd"}
        Default normalization.
    precision : {"fp64", "fp32"}
        Kernel precision (times stay float64 on the host either way);
        multi-term periodograms are fp64 only.
    device : str or devices, optional
        OpenCL device selection (see :func:`clperiod.select_devices`);
        default ``CLPERIOD_DEVICE``.

    Raises
    ------
    ValueError
        Unknown ``precision``, fp32 with ``nterms != 1``, ``nterms`` out of
        range, or astropy's input checks.
    """

    available_methods: ClassVar[list[str]] = list(_METHODS)

    def __init__(
        self,
        t: Any,
        y: Any,
        dy: Any = None,
        fit_mean: bool = True,
        center_data: bool = True,
        nterms: int = 1,
        normalization: str = "standard",
        *,
        precision: Precision = "fp64",
        device: Any = None,
    ) -> None:
        nterms = checks.integer("nterms", nterms, low=0, high=MAX_NTERMS)
        check_choice("precision", precision, Precision)
        if nterms != 1 and precision != "fp64":
            raise ValueError(
                f"multi-term periodograms (nterms={nterms}) are computed in fp64; "
                f"got precision={precision!r}"
            )
        super().__init__(t, y, dy, fit_mean, center_data, nterms, normalization)
        self.precision = precision
        self.device = device

    # ------------------------------------------------------------ frequency grids
    def autopower(
        self,
        method: str = "auto",
        method_kwds: Mapping[str, Any] | None = None,
        normalization: str | None = None,
        samples_per_peak: float = 5,
        nyquist_factor: float = 5,
        minimum_frequency: Any = None,
        maximum_frequency: Any = None,
    ) -> tuple[Any, Any]:
        """Power on the ``autofrequency`` grid, evaluated as that one grid.

        Parameters
        ----------
        method : str
            One of ``available_methods``: astropy's method names, and
            ``"clperiod"`` (as ``"auto"``); each computes the exact
            periodogram (module notes).
        method_kwds : dict, optional
            ``precision``, ``device``, ``memory`` or ``progress`` for this
            call (see :func:`clperiod.lombscargle`); with ``"auto"``,
            ``"fast"`` and ``"fastchi2"`` also astropy's ``use_fft``
            (False: recurrence-free sums), ``trig_sum_kwds`` and
            ``algorithm`` (no effect: nothing is approximated).
        normalization : str, optional
            Override the normalization given at construction.
        samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency
            As ``autofrequency``.

        Returns
        -------
        frequency, power : ndarray or Quantity
        """
        normalization = self.normalization if normalization is None else normalization
        options = self._options(normalization, method, method_kwds)
        grid = self._auto_grid(
            samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency
        )
        t, y, dy = self._values()
        power = _grid_power(t, y, dy, grid, **options)
        return (
            grid.frequencies() * self._frequency_unit(),
            power * self._power_unit(normalization),
        )

    def power(
        self,
        frequency: Any,
        normalization: str | None = None,
        method: str = "auto",
        assume_regular_frequency: bool = False,
        method_kwds: Mapping[str, Any] | None = None,
    ) -> Any:
        """Lomb-Scargle power at the given frequencies.

        Parameters
        ----------
        frequency : array_like or Quantity ['frequency']
            Ordinary frequencies, any shape, order and spacing (see
            :func:`lombscargle_clperiod`).
        normalization : str, optional
            Override the normalization given at construction.
        method : str
            As :meth:`autopower`.
        assume_regular_frequency : bool
            Accepted for compatibility; the spacing is always checked (it
            costs one pass over the frequencies) and any spacing is taken.
        method_kwds : dict, optional
            As :meth:`autopower`.

        Returns
        -------
        ndarray or Quantity
            Same shape as ``frequency``; NaN at frequency 0 (as astropy's
            exact single-term methods).

        Raises
        ------
        ValueError
            A method astropy does not run with this model (module notes),
            non-finite frequencies, or a light curve clperiod cannot evaluate.
        """
        normalization = self.normalization if normalization is None else normalization
        options = self._options(normalization, method, method_kwds)
        frequency = np.asarray(_strip(self._validate_frequency(frequency)))
        t, y, dy = self._values()
        power = lombscargle_clperiod(t, y, dy, frequency, **options)
        return power * self._power_unit(normalization)

    # ------------------------------------------------------------ false alarms
    def false_alarm_probability(
        self,
        power: Any,
        method: str = "baluev",
        samples_per_peak: float = 5,
        nyquist_factor: float = 5,
        minimum_frequency: Any = None,
        maximum_frequency: Any = None,
        method_kwds: Mapping[str, Any] | None = None,
    ) -> Any:
        """False-alarm probability of periodogram maxima ``power``.

        As :meth:`astropy.timeseries.LombScargle.false_alarm_probability`
        (``fmax`` from ``autofrequency`` with the given arguments), with
        the analytic methods of :func:`clperiod.periodograms.stats.false_alarm_probability`.

        Parameters
        ----------
        power : array_like or Quantity
            Peak heights in this object's normalization.
        method : {"baluev", "davies", "naive", "single", "townsend", "bootstrap"}
            astropy's methods, plus ``townsend`` (Townsend 2010: the
            ``autofrequency`` grid size as the number of independent
            frequencies). ``bootstrap`` evaluates ``n_bootstraps``
            resamplings (astropy's draws for a given ``random_seed``) on the
            device, with this object's ``nterms``, ``fit_mean`` and
            ``center_data`` (astropy's bootstrap uses its defaults): one
            catalog for ``nterms = 1``, one
            :func:`clperiod.periodograms.multiterm.multiterm_max_power` batch otherwise.
        method_kwds : dict, optional
            ``n_bootstraps`` (default 1000) and ``random_seed`` for ``bootstrap``.

        Returns
        -------
        ndarray, float or Quantity
            Dimensionless Quantity when ``power`` is a Quantity (as astropy).

        Raises
        ------
        ValueError
            Unknown method, or ``nterms = 0`` (no periodic model).

        Notes
        -----
        Unlike astropy, ``nterms != 1`` and uncentred data
        (``fit_mean = center_data = False``: the null hypothesis is zero-mean
        noise) are supported by every method; see :mod:`clperiod.periodograms.stats` for
        the analytic null distributions.
        """
        self._check_periodic()
        grid = self._auto_grid(
            samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency
        )
        z = self._power_values(power)
        if _fap_method(method, method_kwds) == "bootstrap":
            maxima = self._bootstrap_maxima(grid.fmax, **dict(method_kwds or {}))
            fap = np.where(np.isnan(z), np.nan, 1 - np.searchsorted(maxima, z) / len(maxima))[()]
        else:
            fap = stats.false_alarm_probability(z, **self._null(method, grid))
        return u.Quantity(fap, u.dimensionless_unscaled) if isinstance(power, u.Quantity) else fap

    def false_alarm_level(
        self,
        false_alarm_probability: Any,
        method: str = "baluev",
        samples_per_peak: float = 5,
        nyquist_factor: float = 5,
        minimum_frequency: Any = None,
        maximum_frequency: Any = None,
        method_kwds: Mapping[str, Any] | None = None,
    ) -> Any:
        """Peak height whose false-alarm probability is ``false_alarm_probability``.

        The inverse of :meth:`false_alarm_probability` (same arguments), from
        :func:`clperiod.periodograms.stats.false_alarm_level`.

        Returns
        -------
        ndarray, float or Quantity
            Plain values for the analytic methods and a Quantity for
            ``bootstrap`` (as astropy).
        """
        self._check_periodic()
        grid = self._auto_grid(
            samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency
        )
        p = np.asarray(false_alarm_probability, dtype=np.float64)
        if _fap_method(method, method_kwds) != "bootstrap":
            return stats.false_alarm_level(p, **self._null(method, grid))
        maxima = self._bootstrap_maxima(grid.fmax, **dict(method_kwds or {}))
        rank = np.clip(np.floor((1 - p) * len(maxima)).astype(int), 0, len(maxima) - 1)
        unit = self._power_unit(self.normalization)
        return u.Quantity(maxima[rank], u.dimensionless_unscaled if unit == 1 else unit)

    # ------------------------------------------------------------ helpers
    def _values(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Relative times, values and uncertainties without units."""
        t, y = np.asarray(_strip(self._trel)), np.asarray(_strip(self.y))
        return t, y, None if self.dy is None else np.asarray(_strip(self.dy))

    def _frequency_value(self, frequency: Any) -> float | None:
        if frequency is None:
            return None
        return float(_strip(self._validate_frequency(frequency)))

    def _options(
        self,
        normalization: str,
        method: str = "auto",
        method_kwds: Mapping[str, Any] | None = None,
    ) -> dict:
        """Keywords of :func:`lombscargle_clperiod` for ``method`` and ``method_kwds``."""
        return {
            "fit_mean": self.fit_mean,
            "center_data": self.center_data,
            "normalization": normalization,
            "precision": self.precision,
            "device": self.device,
            "nterms": self.nterms,
            **_method_options(method, method_kwds, self.nterms, self.fit_mean, self._values()[2]),
        }

    def _power_values(self, power: Any) -> np.ndarray:
        if not isinstance(power, u.Quantity):
            return np.asarray(power, dtype=np.float64)
        unit = self._power_unit(self.normalization)
        return power.to_value(u.dimensionless_unscaled if unit == 1 else unit)

    def _check_periodic(self) -> None:
        """False-alarm statistics need a periodic model: raise for ``nterms = 0``."""
        if self.nterms == 0:
            raise ValueError(
                "false-alarm probabilities need a periodic model: nterms=0 fits only the mean"
            )

    def _null(self, method: str, grid: FrequencyGrid) -> dict:
        """Arguments of the clperiod.periodograms.stats false-alarm functions."""
        t, _, dy = self._values()
        # astropy's "single" (one frequency) is Townsend's formula with nf = 1.
        named = "townsend" if method == "single" else method
        return {
            "n": t.size,
            "fmax": grid.fmax,
            "t": t,
            "dy": dy,
            "normalization": self.normalization,
            "method": named,
            "fit_mean": self.fit_mean,
            "center_data": self.center_data,
            "nf": 1 if method == "single" else grid.nf,
            "nterms": self.nterms,
        }

    def _bootstrap_maxima(
        self, fmax: float, n_bootstraps: int = 1000, random_seed: Any = None
    ) -> np.ndarray:
        """Sorted periodogram maxima of ``n_bootstraps`` resamplings of ``(y, dy)``.

        The draws are astropy's (``rng.integers(0, n, n)`` per resampling of
        ``default_rng(random_seed)``) and the grid is astropy's bootstrap grid,
        ``autofrequency(maximum_frequency=fmax)``; every resampling is one
        object of a single catalog (``nterms = 1``) or one row of a
        :func:`clperiod.periodograms.multiterm.multiterm_max_power` batch.
        """
        n_bootstraps = operator.index(n_bootstraps)
        if n_bootstraps < 1:
            raise ValueError(f"n_bootstraps must be >= 1, got {n_bootstraps}")
        t, y, dy = self._values()
        rng = np.random.default_rng(random_seed)
        picks = np.stack([rng.integers(0, y.size, y.size) for _ in range(n_bootstraps)])
        grid = FrequencyGrid.auto(t, maximum_frequency=fmax)
        if self.nterms != 1:
            maxima = multiterm_max_power(
                t,
                y[picks],
                None if dy is None else dy[picks],
                grid,
                self.nterms,
                fit_mean=self.fit_mean,
                center_data=self.center_data,
                normalization=self.normalization,
                device=self.device,
            )
            bad = np.flatnonzero(np.isnan(maxima))
            if bad.size:
                raise ValueError(
                    f"bootstrap resampling {bad[0]} has no periodogram: constant "
                    f"values, or fewer distinct times than the model's parameters"
                )
            return np.sort(maxima)
        catalog = Catalog.from_arrays(
            np.repeat(np.arange(n_bootstraps), t.size),
            np.tile(t, n_bootstraps),
            y[picks].ravel(),
            None if dy is None else dy[picks].ravel(),
        )
        result = lombscargle(
            catalog,
            grid,
            fit_mean=self.fit_mean,
            center_data=self.center_data,
            normalization=self.normalization,
            precision=self.precision,
            device=self.device,
        )
        bad = np.flatnonzero(result.status != Status.OK)
        if bad.size:
            raise ValueError(
                f"bootstrap resampling {bad[0]} has no periodogram "
                f"({Status(result.status[bad[0]]).name}): too few distinct points"
            )
        return np.sort(result.power_best)


class LombScargleMultiband(_AutoFrequency, _AstropyLombScargleMultiband):
    """astropy's multiband Lomb-Scargle periodogram, evaluated by clperiod.

    A drop-in for :class:`astropy.timeseries.LombScargleMultiband` (methods
    ``"flexible"`` and ``"fast"``)::

        from astropy.timeseries import LombScargleMultiband   # before
        from clperiod.astropy import LombScargleMultiband     # after

    Powers of method ``"flexible"`` come from
    :func:`clperiod.lombscargle_multiband` (on the device; fp64 by default,
    equal to astropy's to rounding), those of method ``"fast"`` from
    clperiod's single-band periodograms (:meth:`power`); ``model``,
    ``model_parameters`` and ``offset`` from
    :class:`~clperiod.periodograms.multiband_fit.MultibandFit` (float64 on the
    host). ``Time``/``TimeDelta``/Quantity inputs, ``from_timeseries`` and
    ``design_matrix`` are astropy's own. Differences from astropy:

    * ``power`` takes any frequencies (any shape, order and spacing,
      repeats, negative values: the power is even in ``f``). The power at
      frequency 0 is NaN (astropy: a number of the degenerate model).
    * ``nterms_base`` and ``nterms_band`` go up to 4, the bands up to 8
      (method ``"flexible"``); its powers need a ridge (``reg_base`` or
      ``reg_band``, in units of the trace or, with
      ``regularize_by_trace=False``, absolute), else ``power`` raises.
    * Method ``"fast"`` (each band's single-band periodogram, weighted as
      astropy does) runs astropy's approximate single-band methods
      ``"fast"`` and ``"fastchi2"`` through clperiod's NUFFT (1e-9 of each
      band's highest power in fp64) and the others exactly; with
      ``nterms_base > 1`` all are exact (fp64). Any frequencies are taken
      (astropy's ``"fast"`` needs a regular grid); ``nterms_base=0``, which
      leaves no periodic model, raises.
    * ``model`` adds each band's own weighted mean back; astropy 8 adds, for
      the ``k``-th band, the mean of the band of the ``k``-th observation (the
      same when observation ``k`` is in band ``k``).
    * ``offset`` without ``center_data`` is an array of zeros (astropy: 0).
    * ``false_alarm_probability`` and ``false_alarm_level``, which astropy
      does not implement, are bootstraps of method "flexible" (``method=
      "bootstrap"``, resampling within bands); ``distribution`` raises
      NotImplementedError, as astropy's.

    Parameters
    ----------
    t : array_like, Quantity ['time'], Time or TimeDelta
        Observation times (``Time`` values relative to ``t[0]``, in days).
    y : array_like or Quantity
        Observations.
    bands : array_like
        Band label of each observation (strings or integers).
    dy : float, array_like or Quantity, optional
        Uncertainties.
    normalization : {"standard", "model", "log", "psd"}
        Default normalization: method ``"fast"``'s bands' periodograms; the
        flexible method's power is the same ratio under every normalization.
    nterms_base, nterms_band : int
        Harmonics of the shared model and of each band's model, 0 to
        :data:`clperiod.periodograms.multiband.MAX_NTERMS`, not both 0.
    reg_base, reg_band : float or None
        Ridges on the base and band parameters.
    regularize_by_trace, center_data, fit_mean : bool
        As astropy (``fit_mean`` applies to astropy's method "fast" only).
    precision : {"fp64", "fp32"}
        Arithmetic of the powers on the device (times stay float64 on the
        host either way; see :func:`clperiod.lombscargle_multiband`); the
        models are float64.
    device : str or devices, optional
        OpenCL device selection (see :func:`clperiod.select_devices`); fp64
        needs a device that supports it.

    Raises
    ------
    ValueError
        ``nterms_base`` or ``nterms_band`` out of range, unknown
        ``precision``, or astropy's input checks (a model without harmonics,
        both 0, raises when it is fitted, as in astropy).
    """

    def __init__(
        self,
        t: Any,
        y: Any,
        bands: Any,
        dy: Any = None,
        normalization: str = "standard",
        nterms_base: int = 1,
        nterms_band: int = 1,
        reg_base: float | None = None,
        reg_band: float | None = DEFAULT_REG_BAND,
        regularize_by_trace: bool = True,
        center_data: bool = True,
        fit_mean: bool = True,
        *,
        precision: Precision = "fp64",
        device: Any = None,
    ) -> None:
        check_choice("precision", precision, Precision)
        nterms_base = checks.integer("nterms_base", nterms_base, low=0, high=MAX_NTERMS_MULTIBAND)
        nterms_band = checks.integer("nterms_band", nterms_band, low=0, high=MAX_NTERMS_MULTIBAND)
        super().__init__(
            t,
            y,
            bands,
            dy,
            normalization,
            nterms_base,
            nterms_band,
            reg_base,
            reg_band,
            regularize_by_trace,
            center_data,
            fit_mean,
        )
        self.precision = precision
        self.device = device

    def autopower(
        self,
        method: str = "flexible",
        sb_method: str = "auto",
        normalization: str = "standard",
        samples_per_peak: float = 5,
        nyquist_factor: float = 5,
        minimum_frequency: Any = None,
        maximum_frequency: Any = None,
    ) -> tuple[Any, Any]:
        """Power on the ``autofrequency`` grid, evaluated as that one grid.

        Parameters as :meth:`astropy.timeseries.LombScargleMultiband.autopower`
        (``method`` and ``sb_method`` as :meth:`power`).

        Returns
        -------
        frequency, power : ndarray or Quantity
        """
        _check_multiband_method(method)
        normalization = self.normalization if normalization is None else normalization
        grid = self._auto_grid(
            samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency
        )
        power = self._method_power(grid, method, sb_method, normalization)
        return grid.frequencies() * self._frequency_unit(), power * self._power_unit(normalization)

    def power(
        self,
        frequency: Any,
        method: str = "flexible",
        sb_method: str = "auto",
        normalization: str = "standard",
    ) -> Any:
        """Multiband Lomb-Scargle power at the given frequencies.

        Parameters
        ----------
        frequency : array_like or Quantity ['frequency']
            Ordinary frequencies, any shape, order and spacing; the power is
            even in ``f``, so negative values give that of ``|f|``. Evenly
            spaced ones run the uniform-grid kernel, others the array kernel
            (:meth:`clperiod.FrequencyGrid.from_frequencies`); each value is
            evaluated as it would be alone.
        method : {"flexible", "fast"}
            ``"flexible"``: the multiband model (:func:`clperiod.lombscargle_multiband`).
            ``"fast"``: astropy's approximation, each band's single-band
            periodogram with ``nterms = nterms_base``, ``fit_mean``,
            ``center_data`` and ``normalization``, averaged with weights
            proportional to each band's sum of squared powers over the
            frequencies asked for (those above 0); ``nterms_band`` and the
            ridges do not enter.
        sb_method : str
            Method ``"fast"``'s single-band method: astropy's names (as
            :class:`LombScargle`'s ``method``, with astropy's rules on
            ``nterms`` and on ``"scipy"``) or ``"clperiod"``. ``"fast"`` and
            ``"fastchi2"`` run clperiod's NUFFT (``algorithm="nufft"`` of
            :func:`clperiod.lombscargle`: 1e-9 of each band's highest power
            in fp64, where astropy's extirpolation is approximate), ``"auto"``
            and ``"clperiod"`` the faster of the NUFFT and the direct sums
            (``algorithm="auto"``), the others exact direct sums. Not used by
            ``"flexible"``.
        normalization : str
            ``"flexible"``: sets only the unit of the result, as in astropy;
            ``"fast"``: the bands' normalization (None: the normalization
            given at construction).

        Returns
        -------
        ndarray or Quantity
            The shape of ``frequency``; NaN at frequency 0.

        Raises
        ------
        ValueError
            Unknown method or ``sb_method``, frequencies not finite, no ridge
            (``"flexible"``), ``nterms_base = 0`` or an ``sb_method`` astropy
            does not run with this model (``"fast"``), or a light curve (a
            band, for ``"fast"``) the search cannot evaluate (too few points,
            constant values).
        """
        _check_multiband_method(method)
        normalization = self.normalization if normalization is None else normalization
        frequency = np.asarray(_strip(self._validate_frequency(frequency)), dtype=np.float64)
        if not np.isfinite(frequency).all():
            raise ValueError("frequencies must be finite")
        flat = np.abs(frequency.ravel())
        power = np.full(flat.size, np.nan)  # NaN at frequency 0
        positive = flat > 0
        if positive.any():
            distinct = np.unique(flat[positive])
            grid = FrequencyGrid.from_frequencies(distinct)
            at = np.searchsorted(distinct, flat[positive])
            power[positive] = self._method_power(grid, method, sb_method, normalization, at)
        return power.reshape(frequency.shape) * self._power_unit(normalization)

    def model_parameters(self, frequency: Any, units: bool = True) -> Any:
        """Best-fit parameters at ``frequency``, astropy's order and meaning.

        See :meth:`clperiod.periodograms.multiband_fit.MultibandFit.model_parameters`;
        with ``units``, in the unit of ``y``.
        """
        theta = self._fit().model_parameters(self._frequency_number(frequency))
        return theta * _unit(self.y) if units else theta

    def model(self, t: Any, frequency: Any, bands_fit: Any = None) -> Any:
        """The fitted model at times ``t``, shape ``(n_bands_fit, len(t))``.

        Parameters
        ----------
        t : array_like, Quantity ['time'] or Time
            Times, in the form of the times given at construction.
        frequency : float or Quantity
            Frequency of the model.
        bands_fit : array_like or str, optional
            Bands, one row each; default all, sorted.

        Returns
        -------
        ndarray or Quantity
            Each band's model (its own weighted mean added back with
            ``center_data``), in the unit of ``y``.
        """
        times = _strip(self._validate_t(self._as_relative_time("t", t)))
        fitted = self._fit().model(times, self._frequency_number(frequency), bands_fit)
        return fitted * _unit(self.y)

    def offset(self, t_fit: Any = None, bands_fit: Any = None) -> Any:
        """The model's offset: each band's weighted mean (zeros without ``center_data``).

        Parameters
        ----------
        t_fit : array_like, Quantity or Time, optional
            Times; without them, the offset of every observation.
        bands_fit : array_like or str, optional
            Bands (default all, sorted); with ``t_fit``, the offsets of
            ``t_fit`` broadcast against ``bands_fit[:, None]``, flattened as
            ``design_matrix`` orders its rows.

        Returns
        -------
        ndarray or Quantity
            In the unit of ``y``.

        Raises
        ------
        ValueError
            A label of ``bands_fit`` absent from the data.
        """
        fit = self._fit()
        bands = np.atleast_1d(np.asarray(fit.labels if bands_fit is None else bands_fit))
        fit.band_numbers(bands)
        if t_fit is None:
            return fit.offset() * _unit(self.y)
        _, labels = np.broadcast_arrays(np.empty(np.shape(t_fit)), bands[:, None])
        return fit.offset(labels.ravel()) * _unit(self.y)

    def false_alarm_probability(
        self,
        power: Any,
        method: str = "bootstrap",
        samples_per_peak: float = 5,
        nyquist_factor: float = 5,
        minimum_frequency: Any = None,
        maximum_frequency: Any = None,
        method_kwds: Mapping[str, Any] | None = None,
    ) -> np.ndarray:
        """Bootstrap false-alarm probability of peak powers of method "flexible".

        astropy defines no false-alarm probability for its multiband class
        (it raises NotImplementedError). clperiod resamples the light curve
        within its bands (:func:`clperiod.periodograms.bootstrap.resample`),
        searches every copy on the ``autofrequency`` grid of the arguments
        and gives ``(1 + #{copies whose highest power >= power}) / (1 +
        n_bootstraps)``: with the same seed, the value of
        :meth:`clperiod.MultibandResult.false_alarm_probability` at the
        observed highest power.

        Parameters
        ----------
        power : array_like
            Powers of method "flexible", any shape.
        method : {"bootstrap"}
            The only method for multiband powers.
        samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency
            The grid of the search, as ``autofrequency``.
        method_kwds : mapping, optional
            ``n_bootstraps`` (default 1000) and ``random_seed`` (default a fresh
            one), as astropy's single-band bootstrap.

        Returns
        -------
        ndarray
            The probabilities, shaped as ``power``.
        """
        maxima = self._bootstrap_maxima(
            method,
            samples_per_peak,
            nyquist_factor,
            minimum_frequency,
            maximum_frequency,
            method_kwds,
        )
        values = np.asarray(getattr(power, "value", power), dtype=np.float64)
        exceeding = maxima.size - np.searchsorted(maxima, values, side="left")
        return (1.0 + exceeding) / (1.0 + maxima.size)

    def false_alarm_level(
        self,
        false_alarm_probability: Any,
        method: str = "bootstrap",
        samples_per_peak: float = 5,
        nyquist_factor: float = 5,
        minimum_frequency: Any = None,
        maximum_frequency: Any = None,
        method_kwds: Mapping[str, Any] | None = None,
    ) -> np.ndarray:
        """Power of method "flexible" with a given bootstrap false-alarm probability.

        The ``1 - false_alarm_probability`` quantile of the copies' highest
        powers (:meth:`false_alarm_probability` for the copies and the
        parameters), as astropy's single-band bootstrap level.

        Raises
        ------
        ValueError
            A probability outside [0, 1], or a method other than "bootstrap".
        """
        probability = np.asarray(false_alarm_probability, dtype=np.float64)
        if np.any(~((probability >= 0) & (probability <= 1))):
            raise ValueError("false_alarm_probability must be in [0, 1]")
        maxima = self._bootstrap_maxima(
            method,
            samples_per_peak,
            nyquist_factor,
            minimum_frequency,
            maximum_frequency,
            method_kwds,
        )
        return np.quantile(maxima, 1.0 - probability)

    def distribution(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: the multiband power has no known distribution at one frequency."""
        raise NotImplementedError(
            "distribution is not defined for LombScargleMultiband (nor by astropy): the "
            "multiband power has no known single-frequency law; false_alarm_probability "
            "and false_alarm_level give bootstrap values"
        )

    # ------------------------------------------------------------ helpers
    def _values(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """Relative times, values, bands and uncertainties without units."""
        t, y = np.asarray(_strip(self._trel)), np.asarray(_strip(self.y))
        dy = None if self.dy is None else np.asarray(_strip(self.dy))
        return t, y, np.asarray(self.bands), dy

    def _fit(self) -> MultibandFit:
        """The host model of the light curve, with this object's options."""
        t, y, bands, dy = self._values()
        return MultibandFit.from_arrays(
            t,
            y,
            bands,
            dy,
            nterms_base=self.nterms_base,
            nterms_band=self.nterms_band,
            reg_base=self.reg_base,
            reg_band=self.reg_band,
            regularize_by_trace=self.regularize_by_trace,
            center_data=self.center_data,
        )

    def _frequency_number(self, frequency: Any) -> float:
        return float(_strip(self._validate_frequency(frequency)))

    def _auto_grid(
        self, samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency
    ) -> FrequencyGrid:
        """astropy's multiband heuristic: with times that carry a unit, the
        step and the default limits come from the times in days, and the
        number of frequencies from the limits in ``1 / t`` (astropy's order
        of operations: the rounding of a half-integer count follows it)."""
        unit = getattr(self._trel, "unit", None)
        if unit is None:
            return super()._auto_grid(
                samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency
            )
        days = self._trel.to_value(u.day)
        in_days = FrequencyGrid.auto(days, samples_per_peak, nyquist_factor)
        to_unit = (u.day**-1).to(unit**-1)  # a frequency of 1 / day, in 1 / t
        fmin = self._frequency_value(minimum_frequency)
        fmin = in_days.fmin * to_unit if fmin is None else fmin
        fmax = self._frequency_value(maximum_frequency)
        if fmax is None:
            fmax = nyquist_factor * (0.5 * days.size / (days.max() - days.min())) * to_unit
        if fmax < fmin:
            raise ValueError(
                f"maximum_frequency ({fmax}) must not be below the minimum frequency ({fmin})"
            )
        df = in_days.df * to_unit
        return FrequencyGrid(fmin, df, 1 + int(np.round((fmax - fmin) / df)))

    def _frequency_value(self, frequency: Any) -> float | None:
        return None if frequency is None else self._frequency_number(frequency)

    def _method_power(
        self,
        grid: FrequencyGrid | FrequencyArray,
        method: str,
        sb_method: str,
        normalization: str,
        at: np.ndarray | None = None,
    ) -> np.ndarray:
        """The power of ``method`` at the frequencies ``grid.frequencies()[at]``
        (every frequency of ``grid`` without ``at``), as float64."""
        if method == "flexible":
            power = self._grid_power(grid)
            return power if at is None else power[at]
        band_powers = self._band_powers(grid, sb_method, normalization)
        return _weighted_band_powers(band_powers if at is None else band_powers[:, at])

    def _band_powers(
        self, grid: FrequencyGrid | FrequencyArray, sb_method: str, normalization: str
    ) -> np.ndarray:
        """Each band's single-band periodogram on ``grid`` (method "fast"), one
        row per band in the order of ``np.unique``, as float64."""
        if self.nterms_base == 0:
            raise ValueError(
                "method='fast' fits each band alone with nterms_base harmonics; "
                "nterms_base=0 leaves no periodic model (use method='flexible')"
            )
        t, y, bands, dy = self._values()
        labels, index = np.unique(bands, return_inverse=True)
        rows = []
        for number, label in enumerate(labels.tolist()):
            mask = index.ravel() == number
            band_dy = None if dy is None else dy[mask]
            try:
                rows.append(
                    self._band_power(t[mask], y[mask], band_dy, grid, sb_method, normalization)
                )
            except ValueError as error:
                raise ValueError(
                    f"method='fast' with sb_method={sb_method!r} and "
                    f"nterms_base={self.nterms_base}, band {label!r}: {error}"
                ) from error
        return np.stack(rows)

    def _band_power(
        self,
        t: np.ndarray,
        y: np.ndarray,
        dy: np.ndarray | None,
        grid: FrequencyGrid | FrequencyArray,
        sb_method: str,
        normalization: str,
    ) -> np.ndarray:
        """One band's single-band periodogram on ``grid`` with ``sb_method``
        (:meth:`power`), as float64."""
        one_term = self.nterms_base == 1
        return _grid_power(
            t,
            y,
            dy,
            grid,
            nterms=self.nterms_base,
            algorithm=_BAND_ALGORITHMS.get(sb_method, "direct") if one_term else "direct",
            fit_mean=self.fit_mean,
            center_data=self.center_data,
            normalization=normalization,
            precision=self.precision,
            device=self.device,
            **_method_options(sb_method, None, self.nterms_base, self.fit_mean, dy),
        )

    def _catalog(self) -> Catalog:
        """The light curve as a catalog of one object with bands."""
        t, y, bands, dy = self._values()
        return Catalog.from_arrays(np.zeros(t.size, dtype=np.int64), t, y, dy, band=bands)

    def _search(
        self, catalog: Catalog, grid: FrequencyGrid | FrequencyArray, periodogram: bool
    ) -> Any:
        """:func:`clperiod.lombscargle_multiband` of ``catalog`` with this model."""
        return lombscargle_multiband(
            catalog,
            grid,
            nterms_base=self.nterms_base,
            nterms_band=self.nterms_band,
            center_data=self.center_data,
            reg_base=self.reg_base,
            reg_band=self.reg_band,
            regularize_by_trace=self.regularize_by_trace,
            precision=self.precision,
            periodogram=periodogram,
            device=self.device,
        )

    def _bootstrap_maxima(
        self,
        method: str,
        samples_per_peak: float,
        nyquist_factor: float,
        minimum_frequency: Any,
        maximum_frequency: Any,
        method_kwds: Mapping[str, Any] | None,
    ) -> np.ndarray:
        """The sorted highest powers of the bootstrap copies (searches that fail dropped)."""
        if method != "bootstrap":
            raise ValueError(
                f"method must be 'bootstrap' for multiband powers (astropy defines none), "
                f"got {method!r}"
            )
        options = dict(method_kwds or {})
        unknown = sorted(set(options) - {"n_bootstraps", "random_seed"})
        if unknown:
            raise ValueError(f"unknown method_kwds {unknown}; accepted: n_bootstraps, random_seed")
        grid = self._auto_grid(
            samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency
        )
        copies = resample(
            self._catalog(),
            options.get("n_bootstraps", DEFAULT_RESAMPLINGS),
            seed=options.get("random_seed"),
            device=self.device,
        )
        result = self._search(copies.catalog, grid, periodogram=False)
        maxima = np.asarray(result.power_best, dtype=np.float64)
        return np.sort(maxima[(result.status == Status.OK) & np.isfinite(maxima)])

    def _grid_power(self, grid: FrequencyGrid | FrequencyArray) -> np.ndarray:
        """The periodogram of the light curve on ``grid``, on the device, as float64."""
        catalog = self._catalog()
        result = self._search(catalog, grid, periodogram=True)
        status = Status(result.status[0])
        if status != Status.OK:
            raise ValueError(
                f"clperiod cannot evaluate this light curve ({catalog.t.size} points in "
                f"{catalog.n_bands} bands): {status.name}"
            )
        assert result.power is not None  # asked for with periodogram=True
        return result.power[0].astype(np.float64)


class BoxLeastSquares(_AstropyBoxLeastSquares):
    """astropy's box least squares periodogram, evaluated by clperiod on OpenCL.

    A drop-in for :class:`astropy.timeseries.BoxLeastSquares`::

        from astropy.timeseries import BoxLeastSquares   # before
        from clperiod.astropy import BoxLeastSquares     # after

    ``power`` (and so ``autopower``) runs :func:`clperiod.bls` with
    ``compat="astropy"``: method ``"fast"`` is the binned search with
    astropy's bins (and its gaps at phase 0), ``"slow"`` the exact search;
    with ``precision="fp64"`` every field equals astropy's to rounding.
    ``autoperiod``, ``model``, ``transit_mask``, ``compute_stats``, units,
    ``Time`` inputs and ``from_timeseries`` are astropy's own code.
    Differences from astropy:

    * a period where no box is admissible gives power ``-inf`` and NaN
      fields (astropy's ``"fast"`` leaves them uninitialised, ``"slow"``
      raises TypeError);
    * a box needs an observation inside and one outside; astropy's
      ``"fast"`` asks for weights ``>= DBL_EPSILON`` instead, the same unless
      ``dy`` exceeds about 6.7e7 in the unit of ``y``;
    * light curves the search cannot evaluate (fewer than three points,
      which astropy searches, constant values, equal times) raise
      ValueError, as do non-finite values and ``dy <= 0``.

    Parameters
    ----------
    t : array_like, Quantity ['time'], Time or TimeDelta
        Observation times (``Time`` values relative to ``t[0]``, in days).
    y : array_like or Quantity
        Observations.
    dy : float, array_like or Quantity, optional
        Uncertainties.
    precision : {"fp64", "fp32"}
        Kernel precision (see :func:`clperiod.bls`).
    device : str or devices, optional
        OpenCL device selection (see :func:`clperiod.select_devices`).
    """

    def __init__(
        self, t: Any, y: Any, dy: Any = None, *, precision: Precision = "fp64", device: Any = None
    ) -> None:
        check_choice("precision", precision, Precision)
        super().__init__(t, y, dy)
        self.precision = precision
        self.device = device

    def power(
        self,
        period: Any,
        duration: Any,
        objective: str | None = None,
        method: str | None = None,
        oversample: int = 10,
    ) -> Any:
        """The periodogram at the given periods, on the device.

        Parameters
        ----------
        period : array_like or Quantity ['time']
            Trial periods (1-D).
        duration : float, array_like or Quantity ['time']
            Box durations, each shorter than every period.
        objective : {"likelihood", "snr"}, optional
            The quantity maximised (default ``"likelihood"``).
        method : {"fast", "slow"}, optional
            The binned (default) or exact search (also ``"binned"``, ``"exact"``).
        oversample : int
            Bins per shortest duration (fast) or centres per duration (slow).

        Returns
        -------
        BoxLeastSquaresResults
            astropy's results object, with astropy's units.

        Raises
        ------
        ValueError
            astropy's checks, or a light curve the search cannot evaluate.
        """
        period, duration = self._validate_period_and_duration(period, duration)
        try:
            oversample = int(oversample)
        except TypeError as error:
            raise ValueError(f"oversample must be an int, got {oversample}") from error
        if oversample < 1:
            raise ValueError("oversample must be greater than or equal to 1")
        objective = "likelihood" if objective is None else objective
        if objective not in ("likelihood", "snr"):
            raise ValueError(f"objective must be 'likelihood' or 'snr', got {objective!r}")
        method = "fast" if method is None else method
        if method not in _BLS_METHODS:
            raise ValueError(f"method must be one of {_BLS_METHODS}, got {method!r}")
        t = np.asarray(_strip(self._trel), dtype=np.float64)
        y = np.asarray(_strip(self.y), dtype=np.float64)
        dy = None if self.dy is None else np.asarray(_strip(self.dy), dtype=np.float64)
        catalog = Catalog.from_arrays(
            np.zeros(t.size, dtype=np.int64),
            t,
            y,
            None if dy is None else np.broadcast_to(dy, t.shape),
        )
        result = bls(
            catalog,
            np.asarray(_strip(period), dtype=np.float64),
            np.asarray(_strip(duration), dtype=np.float64),
            objective=cast(Objective, objective),
            method=cast(Method, method),
            oversample=oversample,
            compat="astropy",
            periodogram=True,
            precision=self.precision,
            device=self.device,
        )
        status = Status(result.status[0])
        if status != Status.OK:
            raise ValueError(
                f"clperiod cannot search this light curve ({t.size} points): {status.name}"
            )
        fields = tuple(np.array(getattr(result, name)[0]) for name in _BLS_FIELDS)
        return self._format_results(0.0, objective, period, fields)


def lombscargle_clperiod(
    t: Any,
    y: Any,
    dy: Any = None,
    frequency: Any = None,
    center_data: bool = True,
    fit_mean: bool = True,
    normalization: str = "standard",
    *,
    precision: Precision = "fp64",
    device: Any = None,
    memory: str = "auto",
    progress: bool = False,
    nterms: int = 1,
    kernel: Kernel = "auto",
) -> np.ndarray:
    """Lomb-Scargle power at given frequencies, on the OpenCL device.

    The signature of astropy's implementation functions (``lombscargle_cython``
    and the others), so it can be registered as an astropy method (see
    :func:`register_astropy_method`). The absolute values of the frequencies
    (the power is even in ``f``) become one grid
    (:meth:`clperiod.FrequencyGrid.from_frequencies`), evaluated by one call
    of :func:`clperiod.lombscargle` or
    :func:`clperiod.periodograms.multiterm.multiterm_power`: on the uniform
    kernels when their distinct values are evenly spaced (in any order),
    else frequency by frequency from a device array, exactly either way.

    Parameters
    ----------
    t, y : array_like
        Times and values (plain numbers).
    dy : float or array_like, optional
        Uncertainties.
    frequency : array_like
        Ordinary frequencies, any shape, order and spacing.
    center_data, fit_mean : bool
        As astropy.
    normalization : {"standard", "model", "log", "psd"}
        As astropy.
    precision, device, memory, progress
        As :func:`clperiod.lombscargle` (``memory`` and ``progress`` apply
        to single-term periodograms).
    nterms : int
        Harmonics; other than 1, :func:`clperiod.periodograms.multiterm.multiterm_power`
        computes each run.
    kernel : {"auto", "multiterm", "direct"}
        ``"auto"``: :func:`clperiod.lombscargle` for ``nterms = 1``, else the
        multi-term kernel; ``"multiterm"``: the multi-term kernel for any
        ``nterms`` (astropy's ``chi2`` methods); ``"direct"``: the multi-term
        kernel with every harmonic from its own phase (no recurrence; astropy's
        ``use_fft=False``). The last two are fp64.

    Returns
    -------
    ndarray
        float64, the shape of ``frequency``; NaN at frequency 0, where the
        periodogram is undefined (astropy gives NaN there too).

    Raises
    ------
    ValueError
        Non-finite frequencies; a light curve clperiod cannot evaluate (too
        few points, zero variance); bad options.
    """
    if frequency is None:
        raise ValueError("frequency is required")
    frequency = np.asarray(frequency, dtype=np.float64)
    if not np.all(np.isfinite(frequency)):
        raise ValueError("frequencies must be finite")
    flat = np.abs(frequency.ravel())
    if flat.size == 0:
        return np.zeros(frequency.shape)
    t = np.asarray(t, dtype=np.float64)
    if dy is not None:
        dy = np.broadcast_to(np.asarray(dy, dtype=np.float64), t.shape)
    check_choice("kernel", kernel, Kernel)
    options = {
        "fit_mean": fit_mean,
        "center_data": center_data,
        "normalization": normalization,
        "precision": precision,
        "device": device,
        "memory": memory,
        "progress": progress,
        "nterms": nterms,
        "kernel": kernel,
    }
    power = np.full(flat.size, np.nan)  # NaN at frequency 0
    positive = flat > 0
    if positive.any():
        grid = FrequencyGrid.from_frequencies(flat[positive])
        power[positive] = _grid_power(t, y, dy, grid, **options)
    return power.reshape(frequency.shape)


def register_astropy_method(name: str = "clperiod") -> None:
    """Add ``method=name`` to astropy's own ``LombScargle``.

    After the call, ``astropy.timeseries.LombScargle(t, y, dy).power(f,
    method="clperiod", method_kwds={"device": "gpu"})`` (and ``autopower``)
    evaluate through :func:`lombscargle_clperiod`. The entry goes into
    astropy's method table (``implementations.main.METHODS``, a module astropy
    does not document as public); its ``available_methods()`` list is fixed
    and does not show it. Calling again is harmless.

    Parameters
    ----------
    name : str
        The method name.

    Raises
    ------
    ValueError
        ``name`` is already one of astropy's methods.
    """
    from astropy.timeseries.periodograms.lombscargle.implementations import main

    current = main.METHODS.get(name)
    if current is not None and current is not lombscargle_clperiod:
        raise ValueError(f"astropy already has a Lomb-Scargle method named {name!r}")
    main.METHODS[name] = lombscargle_clperiod


# ---------------------------------------------------------------------- helpers


def _strip(value: Any) -> Any:
    """The number(s) of a Quantity in its own unit; anything else unchanged."""
    return value.value if isinstance(value, u.Quantity) else value


def _unit(value: Any) -> Any:
    """The unit of a Quantity; 1 for plain numbers."""
    return getattr(value, "unit", 1)


def _method_options(
    method: str,
    method_kwds: Mapping[str, Any] | None,
    nterms: int,
    fit_mean: bool,
    dy: np.ndarray | None,
) -> dict:
    """:func:`lombscargle_clperiod` keywords (``kernel`` and those of ``method_kwds``)
    for astropy's method name ``method``; astropy's errors for models it does
    not run with that method."""
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    extra = dict(method_kwds or {})
    allowed = _DEVICE_KEYWORDS + (_APPROXIMATION_KEYWORDS if method in _FAST_METHODS else ())
    unknown = sorted(set(extra) - set(allowed))
    if unknown:
        raise TypeError(f"method={method!r} takes method_kwds {allowed}, got {unknown}")
    if method in _SINGLE_TERM_METHODS and nterms != 1:
        raise ValueError(
            f"nterms != 1 needs method 'chi2', 'fastchi2' or 'auto' (astropy's "
            f"rule), got method={method!r} with nterms={nterms}"
        )
    if method == "scipy":
        _check_scipy_method(fit_mean, dy)
    direct = not extra.pop("use_fft", True)
    extra.pop("trig_sum_kwds", None)  # controls of an approximation clperiod does not make
    extra.pop("algorithm", None)
    kernel = "direct" if direct else "multiterm" if method in _MULTITERM_METHODS else "auto"
    return {"kernel": kernel, **extra}


def _check_scipy_method(fit_mean: bool, dy: np.ndarray | None) -> None:
    """astropy's limits of its ``"scipy"`` method: no floating mean, uniform ``dy``."""
    if fit_mean:
        raise ValueError(
            "method='scipy' has no floating mean: use fit_mean=False (or another method)"
        )
    if dy is not None and not np.allclose(np.ravel(dy)[0], dy):
        raise ValueError("method='scipy' needs uniform uncertainties dy (or another method)")


def _check_multiband_method(method: str) -> None:
    if method not in _MULTIBAND_METHODS:
        raise ValueError(f"method must be one of {_MULTIBAND_METHODS}, got {method!r}")


def _weighted_band_powers(band_powers: np.ndarray) -> np.ndarray:
    """astropy's multiband method "fast" from the bands' periodograms (rows):
    at each frequency the mean of the bands' powers, each band weighted by
    its sum of squared powers over all the frequencies."""
    weights = np.sum(band_powers**2, axis=1)
    return np.dot(weights / weights.sum(), band_powers)


def _fap_method(method: str, method_kwds: Mapping[str, Any] | None) -> str:
    if method not in _FAP_METHODS:
        raise ValueError(f"method must be one of {_FAP_METHODS}, got {method!r}")
    if method_kwds and method != "bootstrap":
        raise TypeError(f"method={method!r} takes no method_kwds, got {sorted(method_kwds)}")
    return method


def _grid_power(
    t: np.ndarray,
    y: np.ndarray,
    dy: np.ndarray | None,
    grid: FrequencyGrid | FrequencyArray,
    nterms: int = 1,
    kernel: str = "auto",
    algorithm: Algorithm = "direct",
    **options: Any,
) -> np.ndarray:
    """The float64 periodogram of one light curve on ``grid`` (``kernel`` as
    :func:`lombscargle_clperiod`; ``algorithm`` other than ``"direct"``:
    :func:`clperiod.lombscargle` with that algorithm, any ``nterms``)."""
    if algorithm == "direct" and (nterms != 1 or kernel != "auto"):
        if options["precision"] != "fp64":
            raise ValueError(
                f"multi-term periodograms (nterms={nterms}, kernel={kernel!r}) are "
                f"computed in fp64"
            )
        return multiterm_power(
            t,
            y,
            dy,
            grid,
            nterms,
            fit_mean=options["fit_mean"],
            center_data=options["center_data"],
            normalization=options["normalization"],
            direct_harmonics=kernel == "direct",
            device=options["device"],
        )
    result = lombscargle(
        t,
        grid,
        y,
        dy,
        method="generalized",
        nterms=nterms,
        algorithm=algorithm,
        periodogram=True,
        **options,
    )
    status = Status(result.status[0])
    if status != Status.OK:
        raise ValueError(
            f"clperiod cannot evaluate this light curve ({len(t)} points): {status.name}"
        )
    assert result.power is not None  # asked for with periodogram=True
    return result.power[0].astype(np.float64)
