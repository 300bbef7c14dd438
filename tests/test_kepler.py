"""Kepler solver kernel against NumPy (issue 4 groundwork)."""

from __future__ import annotations

import numpy as np
import pytest

from clperiod import kepler


def grid(e_max=0.999, n_e=60, n_big_e=801, span=300.0):
    e = np.linspace(0, e_max, n_e)[:, None]
    big_e = np.linspace(-span, span, n_big_e)[None, :]
    return np.broadcast_arrays(big_e - e * np.sin(big_e), e, big_e)


def test_fp64_residual_and_true_anomaly():
    m, e, big_e = grid()
    sol = kepler.solve(m, e, full=True)
    assert (sol.status == kepler.KeplerStatus.OK).all()
    residual = np.abs(sol.eccentric_anomaly - e * np.sin(sol.eccentric_anomaly) - m)
    scale = 1 + np.abs(m)  # NumPy's own rounding of E - e sin E grows with |E|
    assert (residual[e[:, 0] <= 0.99] <= 1e-12 * scale[e[:, 0] <= 0.99]).all()
    assert residual.max() <= 1e-11 * scale.max()
    # true anomaly from the exact E
    denom = 1 - e * np.cos(big_e)
    np.testing.assert_allclose(sol.sin_true_anomaly, np.sqrt(1 - e**2) * np.sin(big_e) / denom,
                               atol=2e-8)
    np.testing.assert_allclose(sol.cos_true_anomaly, (np.cos(big_e) - e) / denom, atol=2e-8)


def test_many_orbits_from_the_epoch():
    """Range reduction keeps 1e-12 for M a million radians from zero."""
    e = np.full(1000, 0.6)
    big_e = 1e6 + np.linspace(0, 2 * np.pi, 1000)
    m = big_e - e * np.sin(big_e)
    got = kepler.solve(m, e)
    np.testing.assert_allclose(got, big_e, rtol=0, atol=1e-9)  # |M| 1e6: ulp 1.2e-10


def test_fp32_bounds():
    m, e, _ = grid(e_max=0.99, span=30.0)
    got = kepler.solve(m, e, precision="fp32")
    assert got.dtype == np.float32
    g = got.astype(np.float64)
    residual = np.abs(g - e * np.sin(g) - m)
    assert np.median(residual) < 1e-6 and residual.max() < 1e-4


def test_edges_and_bad_input():
    m = np.array([0.0, np.pi, -np.pi, 2 * np.pi, 1.0, 1.0, 1.0, np.nan, np.inf, 1.0])
    e = np.array([0.0, 0.5, 0.999999, 0.9, 1.0, -0.1, 1.5, 0.3, 0.3, np.nan])
    sol = kepler.solve(m, e, full=True)
    status = kepler.KeplerStatus
    assert list(sol.status) == [status.OK] * 4 + [status.BAD_ECCENTRICITY] * 3 + [
        status.NOT_FINITE] * 3
    assert np.isnan(sol.eccentric_anomaly[4:]).all()
    ok = sol.eccentric_anomaly[:4]
    np.testing.assert_allclose(ok - e[:4] * np.sin(ok), m[:4], atol=1e-12)
    assert kepler.solve(np.zeros((2, 0)), 0.5).shape == (2, 0)
    assert kepler.solve(1.0, 0.0) == pytest.approx(1.0, abs=1e-15)
    with pytest.raises(ValueError, match="precision"):
        kepler.solve(1.0, 0.5, precision="fp16")
    with pytest.raises(TypeError, match="real"):
        kepler.solve(np.array(["a"]), 0.5)
