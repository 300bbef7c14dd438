"""Figures of period-search results (needs matplotlib: ``pip install clperiod[plot]``).

:func:`plot_result` draws one object of a result: its periodogram with the
best and the top-k peaks marked (the lowest values for PDM and conditional
entropy) and, for Lomb-Scargle, horizontal lines at the power of chosen
false-alarm probabilities; below it the light curve folded at the best
period, for a multiband Lomb-Scargle or multi-harmonic AOV result one panel
per band with the fitted model overlaid, for BLS with the best box model.
:func:`plot_objects` writes one such figure per object of a chosen set.
:class:`PlotLabels` names the axes after the data's columns and units (days
for Julian dates) and turns the y axis of magnitudes over (brighter up).
matplotlib is imported when a function is called, never at ``import clperiod``.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from clperiod.catalog import Catalog, Status
from clperiod.grid import search_grid
from clperiod.periodograms import stats
from clperiod.periodograms.bls import BlsResult
from clperiod.periodograms.lombscargle import LombScargleResult
from clperiod.periodograms.mhaov import MhaovResult
from clperiod.periodograms.multiband import MultibandResult
from clperiod.periodograms.phase_statistics import PhaseStatisticResult
from clperiod.periodograms.supersmoother import SuperSmootherResult

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["PlotLabels", "file_stem", "plot_objects", "plot_result"]

#: Periodograms longer than this are drawn as a min/max envelope of this many bins.
_MAX_LINE_POINTS = 20_000
#: Colours of the false-alarm lines, most to least probable.
_FAP_COLORS = ("0.55", "tab:purple", "tab:green", "tab:brown", "tab:cyan")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
#: Characters of an id kept in a file name that needs a hash (the name stays
#: far below the 255 bytes file systems allow).
_NAME_CHARS = 100
#: ``-`` and hex digits of the id's hash ending a file name that is not the id itself.
_HASHED = re.compile(r"-[0-9a-f]{16}$")
#: Words (split at non-letters and lower-to-upper case changes) naming Julian
#: dates: MJD, JD, HJD, BJD, RJD, BJD_TDB, TESS's BTJD, Kepler's BKJD.
_JULIAN_DATE = re.compile(r"[mhbr]?jd|btjd|bkjd", re.IGNORECASE)
#: Words naming magnitudes: mag, mags, magnitude, rmag, Gmag, psfmag, ...
_MAGNITUDE = re.compile(r"mag(?:nitude)?s?$", re.IGNORECASE)
_WORDS = re.compile(r"[A-Z]*[a-z0-9]+|[A-Z]+(?![a-z])")
#: Height in inches of a panel of a new figure, and of a band's fold panel.
_PANEL_HEIGHT = 3.4
_BAND_PANEL_HEIGHT = 2.6
#: Phases at which the multiband model curve is drawn (over two cycles).
_MODEL_PHASES = 400
#: Results drawn with one fold panel per band.
_BAND_RESULTS = (MultibandResult, MhaovResult)
#: Phases at which the BLS box model is drawn (over two cycles): its edges
#: fall within 1/4000 of a cycle of the box's.
_BOX_PHASES = 8000
#: The results :func:`plot_result` draws.
_RESULTS = (
    LombScargleResult,
    SuperSmootherResult,
    MultibandResult,
    MhaovResult,
    PhaseStatisticResult,
    BlsResult,
)
#: How the phase-binned statistics are named on the figures.
_STATISTIC_NAMES = {"pdm": "PDM", "aov": "AOV", "conditional_entropy": "conditional entropy"}
#: The y label of each phase-binned statistic's periodogram.
_STATISTIC_LABELS = {
    "pdm": r"PDM $\theta$ (lowest at the period)",
    "aov": r"AOV $\theta$ (highest at the period)",
    "conditional_entropy": "conditional entropy, nats (lowest at the period)",
}


@dataclass(frozen=True)
class PlotLabels:
    """What a figure calls the data: column names, units, direction of the y axis.

    Parameters
    ----------
    t, y : str
        Names of the time and value columns, as the axes show them.
    t_unit, y_unit : str, optional
        Units, as text (``"d"``, ``"mag"``, ``"e-/s"``). ``t_unit`` defaults
        to ``"d"`` when ``t`` names a Julian date (``mjd``, ``jd``, ``hjd``,
        ``bjd``, ``bjd_tdb``, ``btjd``, ...); frequencies are then in ``1/d``.
        Without a time unit they are in cycles per unit of ``t``.
    invert_y : bool, optional
        Draw y growing downwards, as magnitudes are shown (brighter up).
        Default: when ``y_unit`` or the name ``y`` says magnitude (``mag``,
        ``ABmag``, ``psfMag_r``, ``Gmag``, ``magnitude``).

    Examples
    --------
    >>> PlotLabels("mjd", "mag_g").frequency_label
    'frequency [1/d]'
    >>> PlotLabels("mjd", "mag_g").inverted
    True
    """

    t: str = "t"
    y: str = "y"
    t_unit: str | None = None
    y_unit: str | None = None
    invert_y: bool | None = None

    @property
    def time_unit(self) -> str | None:
        """The unit of t: as given, else ``"d"`` for a Julian date, else None."""
        if self.t_unit is not None:
            return self.t_unit
        return "d" if any(_JULIAN_DATE.fullmatch(w) for w in _words(self.t)) else None

    @property
    def inverted(self) -> bool:
        """Whether the y axis grows downwards (magnitudes)."""
        if self.invert_y is not None:
            return bool(self.invert_y)
        if self.y_unit is not None:
            return "mag" in self.y_unit.lower()
        return any(_MAGNITUDE.search(w) for w in _words(self.y))

    @property
    def time_label(self) -> str:
        """The time axis: ``"mjd [d]"``."""
        return _with_unit(self.t, self.time_unit)

    @property
    def value_label(self) -> str:
        """The value axis: ``"flux [e-/s]"``, or the name alone without a unit."""
        return _with_unit(self.y, self.y_unit)

    @property
    def frequency_label(self) -> str:
        """The frequency axis: ``"frequency [1/d]"``."""
        unit = self.time_unit
        return f"frequency [1/{unit}]" if unit else f"frequency [cycles per unit of {self.t}]"

    def period(self, period: float) -> str:
        """A period with its unit, e.g. ``"0.5297 d"``."""
        unit = self.time_unit
        return f"{period:.6g} {unit}" if unit else f"{period:.6g}"

    def frequency(self, frequency: float) -> str:
        """A frequency with its unit, e.g. ``"1.8885 /d"``."""
        unit = self.time_unit
        return f"{frequency:.6g} /{unit}" if unit else f"{frequency:.6g}"


def _words(name: str) -> list[str]:
    """The words of a column name: ``"psfMag_r"`` -> psf, Mag, r; ``"BJD_TDB"`` -> BJD, TDB."""
    return _WORDS.findall(name)


def _with_unit(name: str, unit: str | None) -> str:
    return f"{name} [{unit}]" if unit else name


def plot_result(
    result: Any,
    catalog: Catalog,
    index: int = 0,
    ax: Axes | Sequence[Axes] | None = None,
    path: str | os.PathLike[str] | None = None,
    *,
    fap_levels: Sequence[float] = (0.1, 0.01, 0.001),
    fap_method: str = "baluev",
    labels: PlotLabels | None = None,
    name: str | None = None,
) -> Figure:
    """Plot the periodogram and the phase-folded light curve of one object.

    Parameters
    ----------
    result
        A period-search result: LombScargleResult, SuperSmootherResult,
        MultibandResult, MhaovResult, PhaseStatisticResult or BlsResult. With
        ``periodogram=True`` the periodogram panel is drawn; otherwise only
        the folded light curve, with a note.
        A multiband Lomb-Scargle or a multi-harmonic AOV result folds each
        band in which the object has rows in a panel of its own (labelled
        with the band, in the order of ``catalog.bands``), with the model at
        the best frequency drawn over it: that of
        :meth:`MultibandResult.fit <clperiod.MultibandResult.fit>`, or for
        MHAOV each band's weighted least-squares fit of a mean and
        ``fit_harmonics`` harmonics (the fit of its statistic; none for a
        band left out of it, which the band's label says).
        A PDM or conditional-entropy periodogram marks its lowest values
        (``best == "minimum"``); a BLS result draws its power against
        frequency (``1 / periods``) and its best box
        (:meth:`BlsResult.model <clperiod.periodograms.bls.BlsResult.model>`)
        over the fold.
    catalog : Catalog
        The catalog the result was computed from.
    index : int
        Object index (position in ``result.ids``).
    ax : Axes or sequence of Axes, optional
        Where to draw: ``(periodogram_ax, fold_ax)``, or one Axes when the
        result holds no periodogram; for a multiband or MHAOV result one fold
        Axes per band of the object (one without bands) after the
        periodogram's.
        Default: a new figure.
    path : path-like, optional
        Save the figure there (format from the suffix). A new figure made for
        saving (or made where there is no display) uses the Agg canvas and is
        not registered with pyplot, so nothing stays open.
    fap_levels : sequence of float
        False-alarm probabilities drawn as labelled horizontal lines at the
        power :func:`clperiod.periodograms.stats.false_alarm_level` gives for this object
        (Lomb-Scargle only; the other searches have no analytic false-alarm
        probability, which the plot says). Empty: no lines.
    fap_method : {"baluev", "davies", "naive", "townsend"}
        The false-alarm approximation, as in
        :meth:`~clperiod.LombScargleResult.false_alarm_probability`.
    labels : PlotLabels, optional
        Names and units of t and y, and whether the y axis is inverted
        (default: ``PlotLabels()``, columns ``t`` and ``y`` without units).
    name : str, optional
        How the titles name the object (default: ``"object <id>"``).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ImportError
        matplotlib is not installed.
    TypeError
        ``result`` is not one of the results above.
    ValueError, IndexError
        ``catalog`` does not match ``result``, ``index`` is out of range,
        ``ax`` does not provide the panels needed, or a false-alarm
        probability is not in (0, 1).
    """
    _require_matplotlib()
    _check_result(result, catalog)
    probabilities = _check_probabilities(fap_levels)
    n_objects = len(result.ids)
    if not -n_objects <= index < n_objects:
        raise IndexError(f"object index {index} out of range for {n_objects} objects")
    index %= n_objects
    labels = PlotLabels() if labels is None else labels
    name = f"object {result.ids[index]}" if name is None else str(name)
    has_power = result.power is not None
    if isinstance(result, _BAND_RESULTS):
        bands = _object_bands(catalog, index)
        fig, axes = _axes(ax, int(has_power) + len(bands), path, _BAND_PANEL_HEIGHT)
        folds = axes[int(has_power) :]
        _draw_band_folds(folds, result, catalog, index, bands, labels, name, not has_power)
    else:
        fig, axes = _axes(ax, 2 if has_power else 1, path)
        _draw_fold(axes[-1], result, catalog, index, labels, name, not has_power)
    if has_power:
        _draw_periodogram(axes[0], result, index, probabilities, fap_method, labels, name)
    if ax is None:
        fig.tight_layout()
    if path is not None:
        _save(fig, Path(path))
    return fig


def plot_objects(
    result: Any,
    catalog: Catalog,
    objects: Sequence[Any],
    directory: str | os.PathLike[str],
    *,
    fap_levels: Sequence[float] = (0.1, 0.01, 0.001),
    fmt: str = "png",
    labels: PlotLabels | None = None,
) -> list[Path]:
    """Save the :func:`plot_result` figure of each chosen object to a file.

    Parameters
    ----------
    result
        A period-search result that :func:`plot_result` draws (with
        ``periodogram=True`` for the periodogram panels).
    catalog : Catalog
        The catalog the result was computed from.
    objects : sequence
        Object ids. An id matches by value or, when it is a string, by the
        string form of the catalog's ids (``"1234"`` finds the integer id
        1234, as typed on a command line).
    directory : path-like
        Output folder, created if missing.
    fap_levels : sequence of float
        False-alarm probabilities drawn on Lomb-Scargle periodograms.
    fmt : str
        A file format matplotlib writes (``png``, ``pdf``, ``svg``, ...).
    labels : PlotLabels, optional
        Names and units of the axes (see :func:`plot_result`).

    Returns
    -------
    list of pathlib.Path
        ``<directory>/<name>.<fmt>``, one per entry of ``objects`` (a
        repeated id is drawn once). The name is the id itself when it holds
        only letters, digits, ``.``, ``_`` and ``-`` (and up to 100 of
        them); otherwise other characters become ``_``, the text is cut to
        100 characters and ``-`` and 16 hex digits of a hash of the id
        follow (``a/b`` -> ``a_b-<hash>``), so that distinct ids get distinct
        names in every call (the chunks of a catalog run included).

    Raises
    ------
    KeyError
        Some ids are not in the result (all of them are named).
    ValueError
        Unknown ``fmt``, a bad false-alarm probability, or a catalog that does
        not match the result.
    """
    _require_matplotlib()
    _check_result(result, catalog)
    probabilities = _check_probabilities(fap_levels)
    fmt = _check_format(fmt)
    indices = _object_indices(result.ids, objects)
    names = _file_names(result.ids, sorted(set(indices)))
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {k: directory / f"{name}.{fmt}" for k, name in names.items()}
    for k, path in paths.items():
        plot_result(result, catalog, k, path=path, fap_levels=probabilities, labels=labels)
    return [paths[k] for k in indices]


# ---------------------------------------------------------------------- panels


def _draw_periodogram(
    ax: Axes,
    result: Any,
    index: int,
    probabilities: tuple[float, ...],
    fap_method: str,
    labels: PlotLabels,
    name: str,
) -> None:
    frequency = np.asarray(result.frequency(), dtype=np.float64)
    power = np.asarray(result.power[index], dtype=np.float64)
    power = np.where(np.isneginf(power), np.nan, power)  # BLS: no admissible box
    rising = np.argsort(frequency, kind="stable")  # a FrequencyArray may come in any order
    ax.plot(*_envelope(frequency[rising], power[rising]), color="0.25", lw=0.6)
    ok = result.status[index] == Status.OK
    top_f = np.asarray(result.top_k_frequency[index], dtype=np.float64)
    top_p = np.asarray(result.top_k_power[index], dtype=np.float64)
    found = np.isfinite(top_f) & np.isfinite(top_p)
    lowest = getattr(result, "best", "maximum") == "minimum"
    marker, best = ("^", "best (minimum)") if lowest else ("v", "best")
    if ok and found.any():
        ax.plot(
            top_f[found][1:],
            top_p[found][1:],
            marker,
            color="tab:orange",
            ms=6,
            label=f"other top-k {'minima' if lowest else 'peaks'}" if found.sum() > 1 else None,
        )
        best_f, best_p = result.frequency_best[index], result.power_best[index]
        ax.axvline(best_f, color="tab:red", lw=0.8, ls="--", alpha=0.7)
        ax.plot(
            [best_f],
            [best_p],
            marker,
            color="tab:red",
            ms=8,
            label=f"{best}: f = {labels.frequency(best_f)}, P = {labels.period(1.0 / best_f)}",
        )
    if ok:
        _draw_false_alarm_levels(ax, result, index, probabilities, fap_method)
    else:
        ax.text(
            0.5,
            0.5,
            f"no periodogram: {Status(result.status[index]).name}",
            transform=ax.transAxes,
            ha="center",
            color="0.4",
        )
    if ax.get_legend_handles_labels()[1]:
        ax.legend(loc="upper right", fontsize="small")
    ax.set_xlim(frequency[0], frequency[-1])
    ax.set_xlabel(labels.frequency_label)
    ax.set_ylabel(_power_label(result))
    facts = [_algorithm_name(result), f"{len(frequency):,} frequencies", _precision(result)]
    ax.set_title(f"{name}: " + ", ".join(fact for fact in facts if fact))


def _draw_false_alarm_levels(
    ax: Axes, result: Any, index: int, probabilities: tuple[float, ...], method: str
) -> None:
    """Labelled horizontal lines at the powers of the given false-alarm
    probabilities, or a legend note saying why there are none."""
    if not probabilities:
        return
    if isinstance(result, SuperSmootherResult):
        _note(ax, "no FAP levels: SuperSmoother has no analytic FAP")
        return
    if isinstance(result, MultibandResult):
        _note(ax, "no FAP levels: the multiband FAP is a bootstrap (false_alarm_probability)")
        return
    if isinstance(result, MhaovResult):
        _note(ax, "no FAP levels: MHAOV's FAP is a bootstrap (false_alarm_probability)")
        return
    if isinstance(result, (PhaseStatisticResult, BlsResult)):
        _note(ax, f"no FAP levels: {_short_name(result)} has no analytic FAP")
        return
    levels = _false_alarm_levels(result, index, probabilities, method)
    from matplotlib.transforms import blended_transform_factory

    label_at = blended_transform_factory(ax.transAxes, ax.transData)
    for k, (p, level) in enumerate(zip(probabilities, levels, strict=True)):
        if not math.isfinite(level):
            continue
        color = _FAP_COLORS[k % len(_FAP_COLORS)]
        ax.axhline(level, color=color, lw=0.8, ls=":", gid=f"fap {p!r}")
        ax.text(
            0.005,
            level,
            f"FAP {p:g}",
            transform=label_at,
            ha="left",
            va="bottom",
            fontsize="x-small",
            color=color,
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 0.5},
        )


def _false_alarm_levels(
    result: LombScargleResult, index: int, probabilities: Sequence[float], method: str
) -> np.ndarray:
    """Powers of one object's periodogram with the given false-alarm probabilities.

    The arguments :meth:`~clperiod.LombScargleResult.false_alarm_probability` uses,
    inverted with :func:`clperiod.periodograms.stats.false_alarm_level`.
    """
    t, _, dy = result.catalog.lightcurve(index)[:3]
    return np.atleast_1d(
        stats.false_alarm_level(
            np.asarray(probabilities, dtype=np.float64),
            n=len(t),
            fmax=result.grid.fmax,
            t=t,
            dy=dy if result.method == "generalized" else None,
            normalization=result.normalization,
            method=method,
            fit_mean=result.fit_mean,
            center_data=result.center_data,
            nf=search_grid(result.grid)[0].nf,
        )
    )


def _draw_fold(
    ax: Axes,
    result: Any,
    catalog: Catalog,
    index: int,
    labels: PlotLabels,
    name: str,
    note_missing_power: bool,
) -> None:
    t, y, dy = catalog.lightcurve(index)[:3]
    frequency = result.frequency_best[index]
    ax.set_ylabel(labels.value_label)
    if labels.inverted:
        ax.invert_yaxis()
    if result.status[index] != Status.OK or not np.isfinite(frequency) or t.size == 0:
        ax.plot(t, y, ".", color="tab:blue")
        ax.set_xlabel(labels.time_label)
        ax.set_title(f"{name}: no period ({Status(result.status[index]).name})")
        return
    _draw_folded_points(ax, t, y, dy, frequency, t.min(), "tab:blue")
    title = _fold_title(result, index, labels, name, t.size)
    if isinstance(result, BlsResult):
        phase = np.linspace(0.0, 2.0, _BOX_PHASES)
        model = result.model(index, t.min() + phase / frequency)
        ax.plot(phase, model, "-", color="black", lw=1.0, gid="box model")
        title += ", box model in black"
    ax.set_xlabel(_phase_label(labels, t.min()))
    ax.set_title(title)
    if note_missing_power:
        _note_missing_power(ax)


def _draw_band_folds(
    axes: Sequence[Axes],
    result: MultibandResult | MhaovResult,
    catalog: Catalog,
    index: int,
    bands: list[tuple[int, Any]],
    labels: PlotLabels,
    name: str,
    note_missing_power: bool,
) -> None:
    """One panel per band of the object: its rows folded at the best frequency
    and the band's fitted model over them."""
    t, y, dy = catalog.lightcurve(index)[:3]
    band_of_row = _band_codes_of(catalog, index)
    frequency = result.frequency_best[index]
    periodic = result.status[index] == Status.OK and np.isfinite(frequency) and t.size > 0
    models = _band_models(result, catalog, index, frequency) if periodic else {}
    for k, (ax, (code, label)) in enumerate(zip(axes, bands, strict=True)):
        rows = band_of_row == code
        if labels.inverted:
            ax.invert_yaxis()
        ax.set_ylabel(labels.value_label)
        color = f"C{code % 10}"
        if not periodic:
            ax.plot(t[rows], y[rows], ".", color=color)
        else:
            band_dy = None if dy is None else dy[rows]
            _draw_folded_points(ax, t[rows], y[rows], band_dy, frequency, t.min(), color)
            if label in models:
                phase, model = models[label]
                ax.plot(phase, model, "-", color="black", lw=1.0, gid=f"model {label}")
        if label is not None:
            _band_tag(ax, label, int(rows.sum()), _left_out(result, index, code))
        if k < len(bands) - 1:
            ax.tick_params(labelbottom=False)
    if periodic:
        axes[0].set_title(_fold_title(result, index, labels, name, t.size) + ", model in black")
        axes[-1].set_xlabel(_phase_label(labels, t.min()))
    else:
        axes[0].set_title(f"{name}: no period ({Status(result.status[index]).name})")
        axes[-1].set_xlabel(labels.time_label)
    if note_missing_power:
        _note_missing_power(axes[-1])


def _draw_folded_points(
    ax: Axes, t: np.ndarray, y: np.ndarray, dy: Any, frequency: float, t0: float, color: str
) -> None:
    """The points at the phases of ``t - t0``, two cycles, with error bars when there is dy."""
    phase = ((t - t0) * frequency) % 1.0
    phase2 = np.concatenate((phase, phase + 1.0))
    y2 = np.concatenate((y, y))
    if dy is not None:
        ax.errorbar(
            phase2,
            y2,
            yerr=np.concatenate((dy, dy)),
            fmt=".",
            color=color,
            ecolor="0.6",
            elinewidth=0.6,
            ms=4,
        )
    else:
        ax.plot(phase2, y2, ".", color=color, ms=4)
    ax.set_xlim(0.0, 2.0)


def _band_models(
    result: MultibandResult | MhaovResult, catalog: Catalog, index: int, frequency: float
) -> dict[Any, tuple[np.ndarray, np.ndarray]]:
    """Each band's fitted model at the best frequency over two cycles: label ->
    (phase, model), phases of ``t - t.min()`` as the folded points."""
    if isinstance(result, MhaovResult):
        return _mhaov_models(result, catalog, index, frequency)
    t0 = catalog.lightcurve(index)[0].min()
    fit = result.fit(index)
    phase = np.linspace(0.0, 2.0, _MODEL_PHASES)
    model = fit.model(t0 + phase / frequency, frequency)
    return {label: (phase, row) for label, row in zip(fit.labels, model, strict=True)}


def _mhaov_models(
    result: MhaovResult, catalog: Catalog, index: int, frequency: float
) -> dict[Any, tuple[np.ndarray, np.ndarray]]:
    """The fits of the MHAOV statistic at ``frequency``: for each band that enters
    it, the weighted least-squares fit of a mean and ``fit_harmonics`` harmonics
    of the band's rows (weights ``dy**-2`` when the search used them), over two
    cycles of the phases of ``t - t.min()``."""
    t, y, dy = catalog.lightcurve(index)[:3]
    codes = _band_codes_of(catalog, index)
    weights = dy**-2.0 if result.use_errors and dy is not None else np.ones(t.size)
    curve = np.linspace(0.0, 2.0, _MODEL_PHASES)
    models = {}
    for code in np.flatnonzero(result.band_used[index]):
        rows = codes == code
        phase = ((t[rows] - t.min()) * frequency) % 1.0
        root = np.sqrt(weights[rows])
        design = _harmonic_columns(phase, result.fit_harmonics)
        coefficients = np.linalg.lstsq(design * root[:, None], y[rows] * root, rcond=None)[0]
        models[result.bands[code]] = (
            curve,
            _harmonic_columns(curve, result.fit_harmonics) @ coefficients,
        )
    return models


def _harmonic_columns(phase: np.ndarray, harmonics: int) -> np.ndarray:
    """The columns ``1, cos 2 pi h phase, sin 2 pi h phase`` (h = 1 .. harmonics)."""
    angle = 2.0 * np.pi * np.outer(phase, np.arange(1, harmonics + 1))
    return np.column_stack((np.ones(phase.size), np.cos(angle), np.sin(angle)))


def _left_out(result: Any, index: int, code: int) -> bool:
    """Whether band ``code`` of object ``index`` stays out of an MHAOV statistic
    (too few rows) while the object is OK."""
    return (
        isinstance(result, MhaovResult)
        and result.status[index] == Status.OK
        and not result.band_used[index, code]
    )


def _object_bands(catalog: Catalog, index: int) -> list[tuple[int, Any]]:
    """The ``(code, label)`` of each band in which object ``index`` has rows, in
    the order of ``catalog.bands``; ``[(0, None)]`` without bands or rows."""
    codes = np.unique(_band_codes_of(catalog, index))
    if catalog.bands is None or codes.size == 0:
        return [(0, None)]
    return [(int(code), catalog.bands[code]) for code in codes]


def _band_codes_of(catalog: Catalog, index: int) -> np.ndarray:
    """The band code of each row of object ``index`` (zeros without bands)."""
    rows = slice(catalog.offsets[index], catalog.offsets[index + 1])
    if catalog.band_codes is None:
        return np.zeros(rows.stop - rows.start, dtype=np.intp)
    return catalog.band_codes[rows].astype(np.intp)


def _band_tag(ax: Axes, label: Any, n_rows: int, left_out: bool = False) -> None:
    """The band's label and number of rows in the panel's upper left corner
    (and whether the statistic left the band out)."""
    ax.text(
        0.01,
        0.96,
        f"{label} (n = {n_rows}{', left out: too few rows' if left_out else ''})",
        transform=ax.transAxes,
        ha="left",
        va="top",
        fontsize="small",
        gid=f"band {label}",
        bbox={"facecolor": "white", "edgecolor": "0.7", "alpha": 0.8, "pad": 1.5},
    )


def _phase_label(labels: PlotLabels, t0: float) -> str:
    return f"phase (two cycles; phase 0 at {labels.t} = {t0:.6f})"


def _fold_title(result: Any, index: int, labels: PlotLabels, name: str, n: int) -> str:
    frequency = result.frequency_best[index]
    value = "power"
    if isinstance(result, PhaseStatisticResult):
        value = _short_name(result) + (
            r" $\theta$" if result.method != "conditional_entropy" else ""
        )
    return (
        f"{name} folded at P = {labels.period(1.0 / frequency)} "
        f"({value} {result.power_best[index]:.3g}, n = {n})"
    )


def _note_missing_power(ax: Axes) -> None:
    ax.text(
        0.01,
        0.02,
        "periodogram not stored (run with periodogram=True)",
        transform=ax.transAxes,
        fontsize="small",
        color="0.4",
    )


# ---------------------------------------------------------------------- helpers


def _check_result(result: Any, catalog: Catalog) -> None:
    if not isinstance(result, _RESULTS):
        raise TypeError(
            "expected a LombScargleResult, SuperSmootherResult, MultibandResult, "
            f"MhaovResult, PhaseStatisticResult or BlsResult, got {type(result).__name__}"
        )
    if catalog.n_objects != len(result.ids) or not np.array_equal(catalog.ids, result.ids):
        raise ValueError("catalog does not match result (different object ids)")


def _check_probabilities(fap_levels: Sequence[float]) -> tuple[float, ...]:
    probabilities = tuple(float(p) for p in np.atleast_1d(np.asarray(fap_levels, dtype=float)))
    bad = [p for p in probabilities if not 0.0 < p < 1.0]
    if bad:
        raise ValueError(f"false-alarm probabilities must lie in (0, 1), got {bad}")
    return probabilities


def _check_format(fmt: str) -> str:
    from matplotlib.backend_bases import FigureCanvasBase

    fmt = str(fmt).lower().lstrip(".")
    supported = FigureCanvasBase.get_supported_filetypes()
    if fmt not in supported:
        names = ", ".join(sorted(supported))
        raise ValueError(f"fmt must be a format matplotlib writes ({names}), got {fmt!r}")
    return fmt


def _object_indices(ids: np.ndarray, objects: Sequence[Any]) -> list[int]:
    """Catalog positions of ``objects`` (by value, or strings by the ids' string form)."""
    if isinstance(objects, (str, bytes)) or not isinstance(objects, Iterable):
        raise TypeError(f"objects must be a sequence of object ids, got {objects!r}")
    by_value = {_key(v): k for k, v in enumerate(ids.tolist())}
    by_text = {str(v): k for k, v in enumerate(ids.tolist())}
    indices, missing = [], []
    for item in objects:
        item = item.item() if isinstance(item, np.generic) else item
        k = by_value.get(_key(item))
        if k is None and isinstance(item, str):
            k = by_text.get(item)
        if k is None:
            missing.append(item)
        else:
            indices.append(k)
    if missing:
        shown = ", ".join(repr(m) for m in missing[:20])
        more = f" and {len(missing) - 20} more" if len(missing) > 20 else ""
        raise KeyError(f"object ids not in the result: {shown}{more}")
    return indices


def _key(value: Any) -> Any:
    """A dict key for an id (unhashable values match nothing)."""
    try:
        hash(value)
    except TypeError:
        return None
    return value


def _file_names(ids: np.ndarray, indices: Sequence[int]) -> dict[int, str]:
    """File stems for the objects ``indices`` (:func:`file_stem`); distinct ids whose
    text is the same (``1`` and ``"1"`` of one object array) get ``_<catalog index>``."""
    stems = {k: file_stem(ids[k]) for k in indices}
    counts: dict[str, int] = {}
    for stem in stems.values():
        counts[stem] = counts.get(stem, 0) + 1
    return {k: stem if counts[stem] == 1 else f"{stem}_{k}" for k, stem in stems.items()}


def file_stem(object_id: Any) -> str:
    """The file name (without suffix) of an object's figure: the id's text when it
    is made of letters, digits, ``.``, ``_`` and ``-`` only, has at most 100 of
    them, does not start with ``.`` and does not end like a hashed name; else
    the text with other runs of characters as ``_``, cut to 100 characters,
    then ``-`` and 16 hex digits of the BLAKE2b hash of the text."""
    text = str(object_id.item() if isinstance(object_id, np.generic) else object_id)
    safe = _UNSAFE.sub("_", text)
    if (
        safe == text
        and 0 < len(text) <= _NAME_CHARS
        and not text.startswith(".")
        and not _HASHED.search(text)
    ):
        return text
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    stem = safe[:_NAME_CHARS]
    return f"{'_' if stem.startswith('.') or not stem else ''}{stem}-{digest}"


def _algorithm_name(result: Any) -> str:
    if isinstance(result, PhaseStatisticResult):
        return f"{_short_name(result)} ({_parameter_text(result.parameters)})"
    if isinstance(result, BlsResult):
        n = result.durations.size
        return f"BLS ({result.objective}, {result.method}, {n} duration{'s' if n > 1 else ''})"
    if isinstance(result, SuperSmootherResult):
        return f"SuperSmoother ({result.variant})"
    if isinstance(result, MultibandResult):
        return f"multiband Lomb-Scargle (nterms {result.nterms_base}+{result.nterms_band})"
    if isinstance(result, MhaovResult):
        return _mhaov_name(result)
    return f"{result.method} Lomb-Scargle"


def _mhaov_name(result: MhaovResult) -> str:
    """``multiband MHAOV (nharmonics 2, 1 fitted per band)`` or ``MHAOV (nharmonics 2)``."""
    if result.bands == (None,):
        return f"MHAOV (nharmonics {result.nharmonics})"
    return (
        f"multiband MHAOV (nharmonics {result.nharmonics}, {result.fit_harmonics} fitted per band)"
    )


def _short_name(result: Any) -> str:
    """A phase-binned statistic's name (PDM, AOV, conditional entropy), or BLS."""
    return "BLS" if isinstance(result, BlsResult) else _STATISTIC_NAMES[result.method]


def _parameter_text(parameters: Any) -> str:
    """A phase-binned statistic's bins as ``name value`` pairs (``weighted`` left out)."""
    return ", ".join(
        f"{key.replace('_', ' ')} {value}"
        for key, value in parameters.items()
        if key != "weighted"
    )


def _precision(result: Any) -> str:
    """The floating-point precision of the search (a BLS result does not record it)."""
    return str(getattr(result, "precision", ""))


#: What each Lomb-Scargle normalization computes (astropy's definitions).
_NORMALIZATIONS = {
    "standard": r"$1 - \chi^2/\chi^2_{\rm ref}$",
    "model": r"$\chi^2_{\rm ref}/\chi^2 - 1$",
    "log": r"$-\ln(\chi^2/\chi^2_{\rm ref})$",
    "psd": r"$(\chi^2_{\rm ref} - \chi^2)/2$",
}


def _power_label(result: Any) -> str:
    if isinstance(result, PhaseStatisticResult):
        return _STATISTIC_LABELS[result.method]
    if isinstance(result, BlsResult):
        objective = "log-likelihood" if result.objective == "likelihood" else "depth S/N"
        return f"BLS power: {objective}"
    if isinstance(result, SuperSmootherResult):
        return r"power, $(n/2)(1 - \chi^2/\chi^2_{\rm ref})$"
    if isinstance(result, MultibandResult):
        return r"power, multiband: $1 - \chi^2/\chi^2_{\rm ref}$"
    if isinstance(result, MhaovResult):
        return r"power, MHAOV: $(d_2/d_1)\,\Delta\chi^2/(\chi^2 - \Delta\chi^2)$"
    formula = _NORMALIZATIONS.get(result.normalization)
    normalization = f"{result.normalization} normalization"
    return f"power, {normalization}: {formula}" if formula else f"power, {normalization}"


def _note(ax: Axes, text: str) -> None:
    """A legend line with no symbol."""
    ax.plot([], [], " ", label=text)


def _require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError("clperiod.plot needs matplotlib: pip install clperiod[plot]") from None


def _axes(
    ax: Any, needed: int, path: Any, fold_height: float = _PANEL_HEIGHT
) -> tuple[Figure, list[Axes]]:
    """The figure and the ``needed`` Axes to draw into (new ones when ax is None:
    the first panel ``_PANEL_HEIGHT`` high, the others ``fold_height``)."""
    if ax is None:
        size = (9.0, _PANEL_HEIGHT + fold_height * (needed - 1))
        if path is not None or not _has_display():
            from matplotlib.backends.backend_agg import FigureCanvasAgg
            from matplotlib.figure import Figure

            fig = Figure(figsize=size)
            FigureCanvasAgg(fig)
            axes = [fig.add_subplot(needed, 1, k + 1) for k in range(needed)]
        else:
            import matplotlib.pyplot as plt

            fig, grid = plt.subplots(needed, 1, figsize=size, squeeze=False)
            axes = list(grid[:, 0])
        return fig, axes
    from matplotlib.axes import Axes as AxesClass
    from matplotlib.figure import SubFigure

    axes = [ax] if isinstance(ax, AxesClass) else list(ax)
    if len(axes) < needed:
        raise ValueError(
            f"ax must provide {needed} Axes (periodogram, then fold panels); got {len(axes)}"
        )
    figure = axes[0].figure
    if isinstance(figure, SubFigure):  # the whole figure: it is what can be saved
        figure = figure.figure
    return figure, axes[-needed:]


def _save(fig: Figure, path: Path) -> None:
    """Save ``fig`` to ``path`` (format from the suffix) through an exclusive
    temporary file, moved into place when complete
    (``clperiod.io.results.atomic_path``)."""
    import matplotlib

    from clperiod.io.results import atomic_path

    fmt = path.suffix[1:].lower() or matplotlib.rcParams["savefig.format"]
    with atomic_path(path) as temporary:
        fig.savefig(temporary, dpi=120, format=fmt)


def _has_display() -> bool:
    """Whether a GUI backend could open a window (always True off Linux)."""
    if not sys.platform.startswith("linux"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _envelope(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decimate a long curve to per-bin (min, max) pairs so every peak stays visible."""
    n = x.size
    if n <= _MAX_LINE_POINTS:
        return x, y
    bins = _MAX_LINE_POINTS // 2
    edges = np.linspace(0, n, bins + 1).astype(np.int64)
    starts = edges[:-1]
    # NaN powers (objects that failed) are kept out of the envelope.
    filled = np.where(np.isnan(y), -np.inf, y)
    high = np.maximum.reduceat(filled, starts)
    low = np.minimum.reduceat(np.where(np.isnan(y), np.inf, y), starts)
    xs = np.repeat(0.5 * (x[starts] + x[edges[1:] - 1]), 2)
    ys = np.column_stack((low, high)).ravel()
    return xs, np.where(np.isfinite(ys), ys, np.nan)
