"""The data generators of clperiod.testing: the draws they make and the data they give."""

from __future__ import annotations

import numpy as np
import pytest

from clperiod.testing import inject_pulse, pulse_plane, random_planets, sinusoid_lightcurve


def test_sinusoid_lightcurve_draws_times_noise_and_uncertainties_in_order():
    t, y, dy = sinusoid_lightcurve(np.random.default_rng(3), 50, 2.5, baseline=10.0,
                                   epoch=100.0, mean=4.0, amplitude=0.5, phase=0.2,
                                   noise=0.1, dy=(0.2, 0.4))
    rng = np.random.default_rng(3)
    times = 100.0 + np.sort(rng.uniform(0.0, 10.0, 50))
    noise = rng.normal(0.0, 0.1, 50)
    np.testing.assert_array_equal(t, times)
    np.testing.assert_array_equal(y, 4.0 + 0.5 * np.sin(2 * np.pi * times / 2.5 + 0.2) + noise)
    np.testing.assert_array_equal(dy, rng.uniform(0.2, 0.4, 50))
    assert np.all(np.diff(t) >= 0) and 100.0 <= t[0] and t[-1] < 110.0


def test_sinusoid_lightcurve_without_uncertainties():
    t, y, dy = sinusoid_lightcurve(np.random.default_rng(0), 7, 1.0, baseline=1.0, dy=None)
    assert dy is None and t.shape == y.shape == (7,)


def test_random_planets_ranges_and_extremes():
    params = random_planets(np.random.default_rng(1), 200, 3, period=(2.0, 50.0),
                            amplitude=(5.0, 6.0), e_max=0.8)
    assert params.shape == (200, 3, 5)
    per, k, e, w, m0 = np.moveaxis(params, -1, 0)
    assert 2.0 <= per.min() and per.max() < 50.0
    assert 5.0 <= k.min() and k.max() < 6.0
    assert e.flat[0] == 0.0 and e.flat[1] == 0.8 and e.max() == 0.8 and e.min() == 0.0
    assert -np.pi <= w.min() and w.max() < np.pi
    assert -10.0 <= m0.min() and m0.max() < 10.0 and np.abs(m0).max() > np.pi
    # log-uniform periods: the median is near the geometric mean of the range
    assert abs(np.log(np.median(per)) - np.log(10.0)) < 0.3


def test_pulse_plane_adds_top_hats_to_seeded_noise():
    bare = pulse_plane(3, 100, seed=5, loc=2.0, scale=0.5)
    assert bare.dtype == np.float32 and bare.shape == (3, 100)
    np.testing.assert_array_equal(
        bare, np.random.default_rng(5).normal(2.0, 0.5, (3, 100)).astype(np.float32))
    plane = pulse_plane(3, 100, [(1, 10, 4, 3.0), (2, 96, 4, 1.5)], seed=5, loc=2.0,
                        scale=0.5, dtype=np.float64)
    assert plane.dtype == np.float64
    expected = np.random.default_rng(5).normal(2.0, 0.5, (3, 100))
    expected[1, 10:14] += 3.0
    expected[2, 96:] += 1.5
    np.testing.assert_array_equal(plane, expected)


def test_inject_pulse_rounds_the_amplitude_to_the_dtype_and_checks_the_row():
    data = np.zeros((2, 10), np.float32)
    inject_pulse(data, 1, 3, 2, 0.1)
    assert data[1, 3] == np.float32(0.1) and data[1, 5] == 0 and not data[0].any()
    for start, width in ((9, 2), (-1, 1), (0, 0)):
        with pytest.raises(ValueError, match=f"width {width} at sample {start}"):
            inject_pulse(data, 0, start, width, 1.0)
