"""Data generators for tests and benchmarks.

Synthetic light curves, Keplerian planets and de-dispersed (DM x time) planes with injected
pulses, each drawn from a NumPy random generator or a seed, so that a test and a benchmark
share one workload and reproduce it exactly. NumPy only: nothing here needs an OpenCL
device, pytest or a peer package.

>>> import numpy as np
>>> from clperiod.testing import sinusoid_lightcurve
>>> t, y, dy = sinusoid_lightcurve(np.random.default_rng(1), 100, 2.7, baseline=50.0)
>>> t.shape, float(t.min()) >= 58000.0
((100,), True)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = [
    "inject_pulse",
    "pulse_plane",
    "random_planets",
    "sinusoid_lightcurve",
]


def sinusoid_lightcurve(
    rng: np.random.Generator,
    n: int,
    period: float,
    *,
    baseline: float,
    epoch: float = 58000.0,
    mean: float = 0.0,
    amplitude: float = 1.0,
    phase: float = 0.0,
    noise: float = 0.1,
    dy: tuple[float, float] | None = (0.05, 0.15),
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """An irregularly sampled sinusoid with Gaussian noise.

    Times are ``n`` uniform draws over ``[epoch, epoch + baseline)``, sorted;
    ``y = mean + amplitude sin(2 pi t / period + phase)`` plus normal noise of standard
    deviation ``noise``; ``dy`` are uniform draws over the interval ``dy``. The draws are
    made in that order (times, noise, uncertainties).

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of the draws.
    n : int
        Number of points.
    period : float
        Period of the sinusoid, in the unit of the times.
    baseline, epoch : float
        Span and start of the times.
    mean, amplitude, phase, noise : float
        The signal (phase in radians) and the standard deviation of its noise.
    dy : (float, float) or None
        Range of the uncertainties; None draws none.

    Returns
    -------
    t, y : ndarray
    dy : ndarray or None
    """
    t = epoch + np.sort(rng.uniform(0.0, baseline, n))
    y = mean + amplitude * np.sin(2 * np.pi * t / period + phase) + rng.normal(0.0, noise, n)
    return t, y, None if dy is None else rng.uniform(*dy, n)


def random_planets(
    rng: np.random.Generator,
    n_models: int,
    n_planets: int,
    *,
    period: tuple[float, float] = (0.5, 1000.0),
    amplitude: tuple[float, float] = (1.0, 100.0),
    e_max: float = 0.99,
) -> np.ndarray:
    """Random Keplerian planets ``(P, K, e, w, M0)`` in the standard basis.

    Periods are log-uniform over ``period``, semi-amplitudes uniform over ``amplitude``,
    eccentricities uniform over ``[0, e_max)`` with the first two set to 0 and ``e_max``
    (so both ends occur), ``w`` uniform over ``[-pi, pi)`` and ``M0`` over ``[-10, 10)``
    (beyond one turn). The draws are made in the order P, e, K, w, M0.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of the draws.
    n_models, n_planets : int
        Shape of the parameter array's leading axes (``n_models * n_planets >= 2``).
    period, amplitude : (float, float)
        Ranges of the periods and semi-amplitudes.
    e_max : float
        Largest eccentricity.

    Returns
    -------
    ndarray
        Shape ``(n_models, n_planets, 5)``.
    """
    shape = (n_models, n_planets)
    per = np.exp(rng.uniform(np.log(period[0]), np.log(period[1]), shape))
    e = rng.uniform(0.0, e_max, shape)
    e.flat[:2] = 0.0, e_max
    return np.stack(
        [
            per,
            rng.uniform(*amplitude, shape),
            e,
            rng.uniform(-np.pi, np.pi, shape),
            rng.uniform(-10.0, 10.0, shape),
        ],
        axis=-1,
    )


def pulse_plane(
    n_dm: int,
    n_t: int,
    pulses: Iterable[tuple[int, int, int, float]] = (),
    *,
    seed: int = 0,
    loc: float = 0.0,
    scale: float = 1.0,
    dtype: Any = np.float32,
) -> np.ndarray:
    """A de-dispersed plane: Gaussian noise with top-hat pulses added.

    Parameters
    ----------
    n_dm, n_t : int
        Rows (DM trials) and samples per row.
    pulses : iterable of (row, start, width, amplitude)
        Top-hats added to the noise (:func:`inject_pulse`).
    seed : int
        Seed of the noise (``numpy.random.default_rng(seed).normal``).
    loc, scale : float
        Mean and standard deviation of the noise.
    dtype : numpy dtype
        Of the plane; the noise is drawn in float64 and rounded to it.

    Returns
    -------
    ndarray
        Shape ``(n_dm, n_t)``.
    """
    data = np.random.default_rng(seed).normal(loc, scale, (n_dm, n_t)).astype(dtype, copy=False)
    for row, start, width, amplitude in pulses:
        inject_pulse(data, row, start, width, amplitude)
    return data


def inject_pulse(data: Any, row: int, start: int, width: int, amplitude: float) -> None:
    """Add a top-hat of ``width`` samples and height ``amplitude`` to ``data[row]`` at ``start``.

    ``data`` is a 2-D NumPy array or ``pyopencl.array.Array``, changed in place;
    ``amplitude`` is rounded to its dtype first.

    Raises
    ------
    ValueError
        The pulse does not lie within the row.
    """
    if start < 0 or width < 1 or start + width > data.shape[1]:
        raise ValueError(
            f"a pulse of width {width} at sample {start} does not fit in rows of "
            f"{data.shape[1]} samples"
        )
    data[row, start : start + width] += data.dtype.type(amplitude)
