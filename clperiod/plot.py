"""Figures of period-search results (needs matplotlib: ``pip install clperiod[plot]``).

:func:`plot_result` draws one object of a result: its periodogram with the
best and the top-k peaks marked, and its light curve folded at the best
period. matplotlib is imported when the function is called, never at
``import clperiod``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .catalog import Catalog, Status

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_result"]

#: Periodograms longer than this are drawn as a min/max envelope of this many bins.
_MAX_LINE_POINTS = 20_000


def plot_result(
    result: Any,
    catalog: Catalog,
    index: int = 0,
    ax: Axes | Sequence[Axes] | None = None,
    path: str | os.PathLike[str] | None = None,
) -> Figure:
    """Plot the periodogram and the phase-folded light curve of one object.

    Parameters
    ----------
    result : LombScargleResult
        A period-search result (``clperiod.lombscargle(...)``). With
        ``periodogram=True`` the periodogram panel is drawn; otherwise only
        the folded light curve, with a note.
    catalog : Catalog
        The catalog the result was computed from.
    index : int
        Object index (position in ``result.ids``).
    ax : Axes or pair of Axes, optional
        Where to draw: ``(periodogram_ax, fold_ax)``, or one Axes when the
        result holds no periodogram. Default: a new figure.
    path : path-like, optional
        Save the figure there (format from the suffix). A new figure made for
        saving (or made where there is no display) uses the Agg canvas and is
        not registered with pyplot, so nothing stays open.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ImportError
        matplotlib is not installed.
    ValueError, IndexError
        ``catalog`` does not match ``result``, ``index`` is out of range, or
        ``ax`` does not provide the panels needed.
    """
    _require_matplotlib()
    n_objects = len(result.ids)
    if catalog.n_objects != n_objects or not np.array_equal(catalog.ids, result.ids):
        raise ValueError("catalog does not match result (different object ids)")
    if not -n_objects <= index < n_objects:
        raise IndexError(f"object index {index} out of range for {n_objects} objects")
    index %= n_objects
    has_power = result.power is not None
    fig, axes = _axes(ax, 2 if has_power else 1, path)
    if has_power:
        _draw_periodogram(axes[0], result, index)
    _draw_fold(axes[-1], result, catalog, index, note_missing_power=not has_power)
    if ax is None:
        fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


# ---------------------------------------------------------------------- panels


def _draw_periodogram(ax: Axes, result: Any, index: int) -> None:
    frequency = np.asarray(result.frequency(), dtype=np.float64)
    power = np.asarray(result.power[index], dtype=np.float64)
    ax.plot(*_envelope(frequency, power), color="0.25", lw=0.6)
    ok = result.status[index] == Status.OK
    top_f = np.asarray(result.top_k_frequency[index], dtype=np.float64)
    top_p = np.asarray(result.top_k_power[index], dtype=np.float64)
    found = np.isfinite(top_f) & np.isfinite(top_p)
    if ok and found.any():
        ax.plot(top_f[found][1:], top_p[found][1:], "v", color="tab:orange", ms=6,
                label="other top-k peaks" if found.sum() > 1 else None)
        best_f, best_p = result.frequency_best[index], result.power_best[index]
        ax.axvline(best_f, color="tab:red", lw=0.8, ls="--", alpha=0.7)
        ax.plot([best_f], [best_p], "v", color="tab:red", ms=8,
                label=f"best: f = {best_f:.6g}, P = {1.0 / best_f:.6g}")
        ax.legend(loc="upper right", fontsize="small")
    elif not ok:
        ax.text(0.5, 0.5, f"no periodogram: {Status(result.status[index]).name}",
                transform=ax.transAxes, ha="center", color="0.4")
    ax.set_xlim(frequency[0], frequency[-1])
    ax.set_xlabel("frequency [cycles / time unit]")
    ax.set_ylabel(f"power ({result.normalization})")
    ax.set_title(
        f"object {result.ids[index]}: {result.method} Lomb-Scargle, "
        f"{len(frequency):,} frequencies, {result.precision}"
    )


def _draw_fold(
    ax: Axes, result: Any, catalog: Catalog, index: int, note_missing_power: bool
) -> None:
    t, y, dy = catalog.lightcurve(index)
    frequency = result.frequency_best[index]
    ax.set_ylabel("y")
    if result.status[index] != Status.OK or not np.isfinite(frequency) or t.size == 0:
        ax.plot(t, y, ".", color="tab:blue")
        ax.set_xlabel("t")
        ax.set_title(f"object {result.ids[index]}: no period ({Status(result.status[index]).name})")
        return
    phase = ((t - t.min()) * frequency) % 1.0
    phase2 = np.concatenate((phase, phase + 1.0))
    y2 = np.concatenate((y, y))
    if dy is not None:
        ax.errorbar(phase2, y2, yerr=np.concatenate((dy, dy)), fmt=".", color="tab:blue",
                    ecolor="0.6", elinewidth=0.6, ms=4)
    else:
        ax.plot(phase2, y2, ".", color="tab:blue", ms=4)
    ax.set_xlim(0.0, 2.0)
    ax.set_xlabel(f"phase (t0 = {t.min():.6f}, two cycles)")
    ax.set_title(
        f"object {result.ids[index]} folded at P = {1.0 / frequency:.6g} "
        f"(power {result.power_best[index]:.3g}, n = {t.size})"
    )
    if note_missing_power:
        ax.text(0.01, 0.02, "periodogram not stored (run with periodogram=True)",
                transform=ax.transAxes, fontsize="small", color="0.4")


# ---------------------------------------------------------------------- helpers


def _require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError(
            "clperiod.plot needs matplotlib: pip install clperiod[plot]"
        ) from None


def _axes(ax: Any, needed: int, path: Any) -> tuple[Figure, list[Axes]]:
    """The figure and the ``needed`` Axes to draw into (new ones when ax is None)."""
    if ax is None:
        size = (9.0, 3.4 * needed)
        if path is not None or not _has_display():
            from matplotlib.backends.backend_agg import FigureCanvasAgg
            from matplotlib.figure import Figure

            fig = Figure(figsize=size)
            FigureCanvasAgg(fig)
            axes = [fig.add_subplot(needed, 1, k + 1) for k in range(needed)]
        else:
            import matplotlib.pyplot as plt

            fig, axes = plt.subplots(needed, 1, figsize=size, squeeze=False)
            axes = list(axes[:, 0])
        return fig, axes
    from matplotlib.axes import Axes as AxesClass

    axes = [ax] if isinstance(ax, AxesClass) else list(ax)
    if len(axes) < needed:
        raise ValueError(f"ax must provide {needed} Axes (periodogram, fold); got {len(axes)}")
    return axes[0].figure, axes[-needed:]


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
