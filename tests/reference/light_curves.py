"""Non-sinusoidal light curves with survey-like cadence, for the phase-statistic tests.

Each returns ``(t, y, dy)``: ``n`` nightly epochs over ``baseline`` days with seasonal
gaps (8 months observed in 12), each between 0.3 and 0.7 d into its night (so t > 0),
constant errors ``noise`` and white Gaussian noise of that size. Shapes (phase
``frac((t - epoch) / period)``):

* :func:`eclipsing_binary`: primary eclipse of depth 1 and secondary of depth 0.5, each
  ``width`` long in phase (boxes), flat outside;
* :func:`transit`: one box dip of depth 1 and phase width ``width``;
* :func:`sawtooth`: a linear rise by 1 over the cycle and a sudden drop.

Their signal-to-noise ratio is quoted per point: the amplitude (1: the primary eclipse's or
the transit's depth, the sawtooth's rise) over ``noise``, so S/N 10 at the default 0.1.
:func:`whole_snr` gives the S/N of the whole light curve, which grows with the number of
points (about 40 for 165 to 200 points at a per-point S/N of 10).
"""

from __future__ import annotations

import numpy as np

from reference.phase_bins import FloatArray

LightCurve = tuple[FloatArray, FloatArray, FloatArray]


def cadence(rng: np.random.Generator, n: int, baseline: float) -> FloatArray:
    """``n`` sorted epochs on distinct nights of the observed seasons, 0.3-0.7 d into each."""
    nights = np.arange(int(baseline))
    observed = nights[(nights % 365) < 240]
    chosen = rng.choice(observed, size=n, replace=False)
    return np.sort(chosen + rng.uniform(0.3, 0.7, n))


def phase_of(t: FloatArray, period: float, epoch: float) -> FloatArray:
    """``frac((t - epoch) / period)``."""
    cycles = (t - epoch) / period
    return cycles - np.floor(cycles)


def _observe(rng: np.random.Generator, t: FloatArray, signal: FloatArray, noise: float
             ) -> LightCurve:
    dy = np.full(t.size, noise)
    return t, 15.0 + signal + noise * rng.normal(size=t.size), dy


def eclipsing_binary(seed: int, period: float, n: int = 200, baseline: float = 400.0,
                     width: float = 0.08, noise: float = 0.1, epoch: float = 0.3) -> LightCurve:
    """Detached eclipsing binary: box eclipses at phases 0 (depth 1) and 0.5 (depth 0.5)."""
    rng = np.random.default_rng(seed)
    t = cadence(rng, n, baseline)
    phase = phase_of(t, period, epoch)
    primary = np.minimum(phase, 1 - phase) < width / 2
    secondary = np.abs(phase - 0.5) < width / 2
    return _observe(rng, t, 1.0 * primary + 0.5 * secondary, noise)


def transit(seed: int, period: float, n: int = 200, baseline: float = 400.0,
            width: float = 0.1, noise: float = 0.1, epoch: float = 0.3) -> LightCurve:
    """Box dip of depth 1 (a fainter magnitude) and phase width ``width`` at phase 0."""
    rng = np.random.default_rng(seed)
    t = cadence(rng, n, baseline)
    phase = phase_of(t, period, epoch)
    return _observe(rng, t, 1.0 * (np.minimum(phase, 1 - phase) < width / 2), noise)


def sawtooth(seed: int, period: float, n: int = 200, baseline: float = 400.0,
             noise: float = 0.1, epoch: float = 0.3) -> LightCurve:
    """Rise by 1 over the cycle, then a sudden drop (an RR Lyrae caricature, reversed)."""
    rng = np.random.default_rng(seed)
    t = cadence(rng, n, baseline)
    return _observe(rng, t, phase_of(t, period, epoch), noise)


def whole_snr(signal: FloatArray, noise: float) -> float:
    """S/N of a noiseless ``signal`` (at the observed times) over the whole light curve:
    ``sqrt(sum((signal - mean(signal))**2)) / noise``, how well the true shape stands out
    from a constant in white noise of that size. For a box of depth ``A`` holding ``m`` of
    the ``N`` points it is ``A / noise * sqrt(m (1 - m/N))``, about ``A / noise * sqrt(m)``;
    for a sinusoid of semi-amplitude ``A``, ``A / noise * sqrt(N / 2)``; for the sawtooth of
    rise ``A``, ``A / noise * sqrt(N / 12)``."""
    return float(np.sqrt(np.sum((signal - np.mean(signal)) ** 2)) / noise)


def trial_frequencies(baseline: float = 400.0, fmin: float = 0.05, fmax: float = 3.0,
                      oversampling: float = 5.0) -> FloatArray:
    """A uniform grid from ``fmin`` to ``fmax`` with step ``1 / (oversampling baseline)``."""
    return np.arange(fmin, fmax, 1.0 / (oversampling * baseline))


def best_periods(frequency: FloatArray, statistic: FloatArray, count: int = 3,
                 minimum: bool = False) -> FloatArray:
    """Periods of the ``count`` best distinct peaks (local extrema, best first)."""
    value = -statistic if minimum else statistic
    inner = (value[1:-1] >= value[:-2]) & (value[1:-1] >= value[2:])
    peaks = np.nonzero(inner)[0] + 1
    order = peaks[np.argsort(value[peaks])[::-1]][:count]
    return 1.0 / frequency[order]
