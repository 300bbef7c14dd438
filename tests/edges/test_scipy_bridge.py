"""clperiod.scipy.lombscargle against scipy.signal.lombscargle on the same data."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import signal

import clperiod.scipy as bridge
from clperiod.periodograms import multiterm, stats
from clperiod.scipy import lombscargle

NORMALIZE = [False, True, "amplitude"]


@pytest.fixture
def data(rng):
    """150 points over 30 time units with an offset, a 1.7-unit period, and weights."""
    x = np.sort(rng.uniform(0, 30, 150))
    y = 3 + 1.2 * np.cos(2 * np.pi * x / 1.7 + 0.4) + rng.normal(0, 0.5, x.size)
    weights = rng.uniform(0.2, 2.0, x.size)
    weights[7] = 0.0  # a point SciPy counts in N but not in the fit
    return x, y, weights


def relative(actual, expected):
    return np.max(np.abs(actual - expected)) / np.max(np.abs(expected))


@pytest.mark.parametrize(("normalize", "floating_mean", "weighted"),
                         itertools.product(NORMALIZE, [False, True], [False, True]))
def test_equals_scipy(data, cpu_device, normalize, floating_mean, weighted):
    x, y, weights = data
    options = {"normalize": normalize, "floating_mean": floating_mean,
               "weights": weights if weighted else None}
    freqs = np.linspace(-12.0, 12.0, 1201)  # angular, both signs, through 0
    got = lombscargle(x, y, freqs, device=cpu_device, **options)
    expected = signal.lombscargle(x, y, freqs, **options)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    nonzero = freqs != 0  # at 0 SciPy's floating-mean amplitude is rounding over epsilon
    assert relative(got[nonzero], expected[nonzero]) < 1e-10
    # from one cycle over the baseline up; below, the normal equations are
    # ill-conditioned (at f T = 0.1 the floating-mean amplitude is 2e-11 off
    # a 40-digit fit, SciPy's 4e-13)
    resolved = np.abs(freqs) * np.ptp(x) >= 2 * np.pi
    assert relative(got[resolved], expected[resolved]) < 1e-12
    # without floating_mean the offset of 3 makes the lowest frequencies highest;
    # amplitudes grow where a frequency's fit is poorly determined (f T << 1)
    if floating_mean and normalize != "amplitude":
        peak = np.argmax(np.abs(got))
        assert abs(abs(freqs[peak]) - 2 * np.pi / 1.7) < 0.02


def test_amplitude_and_phase_of_a_sinusoid(cpu_device):
    x = np.sort(np.random.default_rng(2).uniform(0, 50, 90))
    y = 2.0 * np.cos(1.3 * x + 0.12) + 5.0
    amplitude = lombscargle(x, y, np.array([1.3, -1.3]), normalize="amplitude",
                            floating_mean=True, device=cpu_device)
    np.testing.assert_allclose(amplitude, [2.0 * np.exp(-0.12j), 2.0 * np.exp(0.12j)],
                               rtol=1e-12)
    assert lombscargle(x, y, [1.3], normalize=True, floating_mean=True,
                       device=cpu_device) == pytest.approx(1.0, rel=1e-12)


def test_degenerate_frequencies_fit_the_independent_columns(cpu_device):
    """Integer times: at 1 cycle the sine vanishes, at 1.5 cycles the cosine is
    +-1; at 0 the cosine is the constant. SciPy's clamped sums give the same
    fits (except its floating-mean amplitude at 0, rounding over epsilon)."""
    x = np.arange(1.0, 33.0)
    y = 1.0 + np.random.default_rng(1).normal(size=x.size)
    freqs = 2 * np.pi * np.array([0.0, 1.0, 1.5, 0.3])
    for floating_mean in (False, True):
        power = lombscargle(x, y, freqs, floating_mean=floating_mean, device=cpu_device)
        expected = signal.lombscargle(x, y, freqs, floating_mean=floating_mean)
        np.testing.assert_allclose(power, expected, rtol=1e-9, atol=1e-10)
    mean = y.mean()
    assert lombscargle(x, y, [0.0], device=cpu_device) == pytest.approx(x.size / 2 * mean**2)
    amplitude = lombscargle(x, y, freqs, normalize="amplitude", device=cpu_device)
    alternating = np.cos(np.pi * x)
    # the vanishing column's coefficient is 0 (SciPy's is rounding over epsilon)
    np.testing.assert_allclose(amplitude[:3], [mean, mean, np.mean(y * alternating)],
                               rtol=1e-12)
    np.testing.assert_allclose(amplitude[3], signal.lombscargle(x, y, freqs[3:],
                                                                normalize="amplitude"),
                               rtol=1e-12)
    floating = lombscargle(x, y, freqs, normalize="amplitude", floating_mean=True,
                           device=cpu_device)
    assert floating[0] == 0  # the constant is the offset's
    # one point: the cosine fits it exactly (SciPy: 0.5)
    assert lombscargle([1.0], [1.0], [1.0], device=cpu_device) == pytest.approx(0.5)


@pytest.mark.parametrize("normalize", NORMALIZE)
def test_arbitrary_frequencies_in_one_kernel_call(data, cpu_device, monkeypatch, normalize):
    """Any angular frequencies (uniform in period, log-spaced, unsorted, repeated,
    both signs), 3000 of them with no two steps equal: one kernel call, SciPy's values."""
    x, y, weights = data
    rng = np.random.default_rng(3)
    uneven = np.concatenate([2 * np.pi / np.linspace(10.0, 0.5, 2000),
                             np.geomspace(0.05, 40.0, 1000)])
    freqs = rng.permutation(np.concatenate([uneven, -uneven[:50], uneven[:7]]))
    calls = []
    for name in ("multiterm_power", "multiterm_coefficients"):
        original = getattr(multiterm, name)
        monkeypatch.setattr(bridge, name, lambda *a, _f=original, **k: calls.append(a[3])
                            or _f(*a, **k))
    options = {"normalize": normalize, "floating_mean": True, "weights": weights}
    got = lombscargle(x, y, freqs, device=cpu_device, **options)
    expected = signal.lombscargle(x, y, freqs, **options)
    assert got.shape == expected.shape
    assert relative(got, expected) < 1e-11
    assert len(calls) == 1 and calls[0].nf == np.unique(np.abs(freqs)).size == 3000


def test_scipy_input_errors(data):
    x, y, weights = data
    f = np.linspace(0.1, 3.0, 20)
    with pytest.raises(ValueError, match="1-D arrays of one non-zero length"):
        lombscargle(x, y[:-1], f)
    with pytest.raises(ValueError, match="1-D arrays"):
        lombscargle(x[None], y[None], f)
    with pytest.raises(ValueError, match="1-D arrays"):
        lombscargle(x, y, f, weights=weights[:-1])
    with pytest.raises(ValueError, match="freqs must be a non-empty 1-D array"):
        lombscargle(x, y, f[None])
    with pytest.raises(ValueError, match="non-negative and sum to a positive value"):
        lombscargle(x, y, f, weights=-weights)
    with pytest.raises(ValueError, match="non-negative and sum to a positive value"):
        lombscargle(x, y, f, weights=np.zeros_like(x))
    for bad in ("lomb", 2, None):
        with pytest.raises(ValueError, match="normalize must be"):
            lombscargle(x, y, f, normalize=bad)
    with pytest.raises(ValueError, match="y must be finite"):
        lombscargle(x, np.where(x > 5, y, np.nan), f)
    with pytest.raises(ValueError, match="freqs must be finite"):
        lombscargle(x, y, np.append(f, np.inf))


@pytest.mark.filterwarnings("ignore:precenter is deprecated:DeprecationWarning")
def test_deprecated_precenter_and_positional_options(data, cpu_device):
    x, y, weights = data
    f = np.linspace(0.5, 5.0, 40)
    with pytest.deprecated_call(match="leave 'precenter' unspecified"):
        centred = lombscargle(x, y, f, precenter=True, device=cpu_device)
    np.testing.assert_allclose(centred, lombscargle(x, y - y.mean(), f, device=cpu_device),
                               rtol=1e-12)
    with pytest.deprecated_call(match="use keyword arguments"):
        positional = lombscargle(x, y, f, None, True, weights, True, device=cpu_device)
    np.testing.assert_array_equal(positional, lombscargle(
        x, y, f, normalize=True, weights=weights, floating_mean=True, device=cpu_device))
    with pytest.raises(TypeError, match="multiple values for argument 'normalize'"):
        lombscargle(x, y, f, False, True, normalize=True)
    with pytest.raises(TypeError, match="at most 7 positional arguments"):
        lombscargle(x, y, f, False, True, None, False, 1)


def test_inputs_are_not_modified_and_units_do_not_matter(data, cpu_device):
    x, y, weights = data
    f = np.linspace(0.5, 5.0, 40)
    copies = [a.copy() for a in (x, y, weights, f)]
    power = lombscargle(x, y, f, normalize=True, weights=weights, floating_mean=True,
                        device=cpu_device)
    for original, copy in zip((x, y, weights, f), copies):
        np.testing.assert_array_equal(original, copy)
    scaled = lombscargle(24 * x, 1e3 * y + 7, f / 24, normalize=True, weights=3 * weights,
                         floating_mean=True, device=cpu_device)
    np.testing.assert_allclose(scaled, power, rtol=1e-11)


@pytest.mark.parametrize(("scale", "offset"), [(1e-200, 0.0), (1e200, 0.0), (1.0, 1e12),
                                               (3e-150, 2e-138)])
def test_normalized_power_and_amplitudes_are_free_of_units_and_offsets(data, cpu_device,
                                                                       scale, offset):
    x, y, weights = data
    f = np.linspace(0.5, 5.0, 40)
    options = dict(weights=weights, floating_mean=True, device=cpu_device)
    moved = scale * y + offset
    for normalize, factor in ((True, 1.0), ("amplitude", scale)):
        base = lombscargle(x, y, f, normalize=normalize, **options)
        np.testing.assert_allclose(lombscargle(x, scale * y, f, normalize=normalize,
                                               **options) / factor, base, rtol=1e-12)
        np.testing.assert_allclose(lombscargle(x, moved, f, normalize=normalize, **options),
                                   lombscargle(x, moved - offset, f, normalize=normalize,
                                               **options), rtol=1e-12)


@pytest.mark.parametrize(("level", "floating_mean"), [(0.0, False), (0.0, True), (3.0, True)])
def test_values_that_do_not_vary(data, cpu_device, level, floating_mean):
    """No reduction of chi^2 (SciPy: rounding), so no normalized power."""
    x, _, weights = data
    y = np.full(x.size, level)
    f = np.linspace(0.5, 50.0, 2000)
    options = dict(weights=weights, floating_mean=floating_mean, device=cpu_device)
    np.testing.assert_array_equal(lombscargle(x, y, f, **options), 0.0)
    assert np.isnan(lombscargle(x, y, f, normalize=True, **options)).all()
    np.testing.assert_array_equal(lombscargle(x, y, f, normalize="amplitude", **options), 0.0)


def test_the_module_does_not_shadow_scipy():
    import scipy

    assert scipy.__name__ == "scipy" and scipy.signal.lombscargle is signal.lombscargle
    assert bridge.__name__ == "clperiod.scipy"
    # clperiod.periodograms.stats imports scipy.special and scipy.optimize
    assert stats.false_alarm_level(0.5, n=50, fmax=2.0, t=np.linspace(0, 10, 50)) > 0
