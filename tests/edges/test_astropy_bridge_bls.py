"""clperiod.astropy.BoxLeastSquares against astropy's own BoxLeastSquares: every field of
both methods, units and Time inputs, autopower, fp32, errors, and astropy's own BLS test
module run through the bridge."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from astropy import units as u
from astropy.tests.helper import assert_quantity_allclose
from astropy.time import Time
from astropy.timeseries import BoxLeastSquares as AstropyBoxLeastSquares
from astropy.timeseries import TimeSeries

import clperiod
from clperiod.astropy import BoxLeastSquares

FIELDS = ("power", "depth", "depth_err", "duration", "transit_time", "depth_snr",
          "log_likelihood")
ASTROPY_TESTS = "astropy.timeseries.periodograms.bls.tests.test_bls"
ASTROPY_IMPORT = re.compile(
    r"^from astropy\.timeseries\.periodograms\.bls import BoxLeastSquares$", re.MULTILINE)


def transit_data(seed: int = 0, n: int = 400):
    """A 0.01-deep, 0.15-long transit every 1.9 days over 15 days, with errors."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 15, n))
    dy = rng.uniform(0.002, 0.004, n)
    y = 1 + dy * rng.normal(size=n)
    y[np.abs((t - 0.7 + 0.95) % 1.9 - 0.95) < 0.075] -= 0.01
    return t, y, dy


def assert_same(ours, theirs, rtol: float = 1e-9) -> None:
    """Equal units (or none) and values equal to ``rtol``."""
    assert getattr(ours, "unit", None) == getattr(theirs, "unit", None)
    np.testing.assert_allclose(u.Quantity(ours).value, u.Quantity(theirs).value, rtol=rtol,
                               atol=0)


def assert_results_equal(ours, theirs, rtol: float = 1e-9) -> None:
    assert set(ours) == set(theirs) and ours.objective == theirs.objective
    for name in (*FIELDS, "period"):
        assert_same(ours[name], theirs[name], rtol)


# astropy's method "slow" divides by the weights of empty boxes (and then skips them)
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:.*encountered in scalar divide:RuntimeWarning")
@pytest.mark.parametrize("method", ["fast", "slow"])
@pytest.mark.parametrize("objective", ["likelihood", "snr"])
@pytest.mark.parametrize("with_errors", [False, True])
def test_power_equals_astropys(cpu_device, method, objective, with_errors):
    t, y, dy = transit_data()
    dy = dy if with_errors else None
    periods = np.linspace(1.2, 3.0, 120 if method == "fast" else 25)
    durations = [0.05, 0.15, 0.1]
    ours = BoxLeastSquares(t, y, dy, device=cpu_device).power(
        periods, durations, objective=objective, method=method, oversample=8)
    theirs = AstropyBoxLeastSquares(t, y, dy).power(
        periods, durations, objective=objective, method=method, oversample=8)
    assert_results_equal(ours, theirs)


def test_autopower_with_units_and_absolute_times_equals_astropys(cpu_device):
    t, y, dy = transit_data(1)
    times = Time("2021-03-04T00:00:00") + t * u.day
    args = (times, y * u.mag, dy * u.mag)
    ours = BoxLeastSquares(*args, device=cpu_device).autopower(0.15 * u.day,
                                                               objective="snr")
    theirs = AstropyBoxLeastSquares(*args).autopower(0.15 * u.day, objective="snr")
    assert isinstance(ours.transit_time, Time)
    assert_quantity_allclose((ours.transit_time - theirs.transit_time).to(u.s), 0 * u.s,
                             atol=1e-3 * u.s)
    for name in ("power", "depth", "depth_err", "duration", "depth_snr", "log_likelihood",
                 "period"):
        assert_same(ours[name], theirs[name])
    assert ours.depth.unit == u.mag and ours.period.unit == u.day
    best = np.argmax(ours.power)
    assert abs(ours.period[best] - 1.9 * u.day) < 0.01 * u.day


def test_likelihood_power_without_errors_carries_the_unit_squared(cpu_device):
    t, y, _ = transit_data(2)
    ours = BoxLeastSquares(t * u.day, y * u.mJy, device=cpu_device).power([1.9, 2.0], 0.15)
    theirs = AstropyBoxLeastSquares(t * u.day, y * u.mJy).power([1.9, 2.0], 0.15)
    assert ours.power.unit == theirs.power.unit == u.mJy**2
    assert_results_equal(ours, theirs)


def test_from_timeseries_and_fp32(cpu_device):
    t, y, dy = transit_data(3)
    series = TimeSeries(time=Time(60000.0, format="mjd") + t * u.day,
                        data={"flux": y * u.one, "flux_err": dy * u.one})
    bridge = BoxLeastSquares.from_timeseries(series, "flux", "flux_err", precision="fp32",
                                             device=cpu_device)
    periods = np.linspace(1.5, 2.5, 200) * u.day
    ours = bridge.power(periods, 0.15 * u.day)
    theirs = AstropyBoxLeastSquares.from_timeseries(series, "flux", "flux_err").power(
        periods, 0.15 * u.day)
    assert np.argmax(ours.power) == np.argmax(theirs.power)
    same = np.isclose(ours.power, theirs.power, rtol=1e-12)
    assert same.mean() > 0.98


def test_bad_arguments_and_light_curves(cpu_device):
    t, y, dy = transit_data(4)
    bridge = BoxLeastSquares(t, y, dy, device=cpu_device)
    with pytest.raises(ValueError, match="method"):
        bridge.power([1.0, 2.0], 0.1, method="cython")
    with pytest.raises(ValueError, match="objective"):
        bridge.power([1.0, 2.0], 0.1, objective="chi2")
    with pytest.raises(ValueError, match="oversample"):
        bridge.power([1.0, 2.0], 0.1, oversample=0)
    with pytest.raises(ValueError, match="shorter than the minimum period"):
        bridge.power([1.0, 2.0], 1.5)
    with pytest.raises(ValueError, match="precision"):
        BoxLeastSquares(t, y, precision="fp16")
    with pytest.raises(ValueError, match="ZERO_VARIANCE"):
        BoxLeastSquares(t, np.ones_like(t), device=cpu_device).power([1.0, 2.0], 0.1)
    with pytest.raises(ValueError, match="dy"):
        BoxLeastSquares(t, y, np.zeros_like(t), device=cpu_device).power([1.0, 2.0], 0.1)


@pytest.mark.slow
def test_astropys_bls_tests_pass_through_the_bridge(tmp_path):
    spec = importlib.util.find_spec(ASTROPY_TESTS)
    if spec is None or spec.origin is None:
        pytest.skip(f"{ASTROPY_TESTS} is not installed")
    source, switched = ASTROPY_IMPORT.subn("from clperiod.astropy import BoxLeastSquares",
                                          Path(spec.origin).read_text())
    assert switched == 1
    (tmp_path / "test_bls_bridged.py").write_text(source)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    root = str(Path(clperiod.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
         str(tmp_path), "test_bls_bridged.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    summary = completed.stdout[-2000:]
    assert completed.returncode == 0, summary
    passed = re.search(r"(\d+) passed", summary)
    assert passed and int(passed.group(1)) >= 50 and "skipped" not in summary, summary
