"""clperiod.lombscargle_multiband in fp32, on frequency arrays and on several devices, against
its fp64 run on a uniform grid and the NumPy reference (tests/reference/multiband.py).

Tolerances: fp64 1e-9 relative, as tests/periodograms/test_multiband.py. fp32: phases are
exact to ~1e-7 cycles whatever the epoch (double-single inputs), and the float32 sums of a
few hundred terms with weights summing to 1 carry ~1e-7 to 1e-6 of rounding; where the
normal system is well conditioned the standard powers (in [0, 1]) stay within a few 1e-6
of fp64's (the largest seen: 3.5e-6, four harmonics in two bands), so FP32_ATOL = 2e-5
leaves a margin of about 5. Near the frequencies where the harmonics of nightly
observations nearly repeat (the 1/day aliases) several harmonics are ill-conditioned in
float32 and the powers differ by more: the grids here stay clear of them, except the
catalog's, where only the best peaks are compared.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import clperiod
from clperiod import Catalog, FrequencyGrid, Status
from clperiod.engine.devices import select_devices
from clperiod.grid import FrequencyArray
from clperiod.periodograms import multiband
from reference.multiband import MultibandLombScargle
from two_devices import run_on_two_devices

FP32_ATOL = 2e-5
#: Below the 1/day alias for harmonics up to 2 (0.45 * 2 < 1), above 0.2 cycles per baseline.
CLEAR_GRID = FrequencyGrid.from_range(0.05, 0.45, 400)
BASELINE = 1100.0  # days: three seasons


def ztf_like(rng, n=150, bands=("g", "r"), epoch=5.9e4, period=0.61, snr=3.0, nightly=True):
    """``n`` points over three years in ``bands`` (times near local midnight on nights of
    three 240-day seasons, or uniform), a two-harmonic signal of amplitude ``snr`` times the
    median noise with band offsets and amplitudes: ``(t, y, dy, band)``."""
    if nightly:
        nights = np.flatnonzero((np.arange(int(BASELINE)) % 365) < 240)
        t = np.sort(rng.choice(nights, n, replace=False)) + 0.3 + rng.normal(0.0, 0.05, n)
    else:
        t = np.sort(rng.uniform(0.0, BASELINE, n))
    number = rng.integers(0, len(bands), n)
    dy = rng.uniform(0.02, 0.1, n)
    phase = 2 * np.pi * t / period + rng.uniform(0.0, 2 * np.pi)
    amplitude = snr * np.median(dy) * (1.0 - 0.1 * number)
    y = (17.0 + 0.4 * number + amplitude * (np.sin(phase) + 0.3 * np.sin(2 * phase))
         + rng.normal(0.0, dy))
    return epoch + t, y, dy, np.asarray(bands)[number]


def catalog(*curves):
    ids = np.repeat(np.arange(len(curves)), [c[0].size for c in curves])
    t, y, dy, band = (np.concatenate(column) for column in zip(*curves, strict=True))
    return Catalog.from_arrays(ids, t, y, dy, band=band)


def reference(curve, frequency, **model):
    t, y, dy, band = curve
    return MultibandLombScargle(t - t.min(), y, band, dy, **model).power(frequency)


def both(cat, grid, **options):
    """The fp64 and fp32 searches of ``cat`` on ``grid``, with periodograms."""
    return tuple(clperiod.lombscargle_multiband(cat, grid, periodogram=True, precision=p,
                                                **options) for p in ("fp64", "fp32"))


# {{{ fp32


@pytest.mark.parametrize(("nterms_base", "nterms_band"), [(1, 1), (1, 0), (0, 1), (2, 1), (1, 2)])
def test_fp32_follows_fp64_and_the_reference(rng, nterms_base, nterms_band):
    curve = ztf_like(rng, snr=1.0, period=1 / 0.2113)
    model = {"nterms_base": nterms_base, "nterms_band": nterms_band}
    fp64, fp32 = both(catalog(curve), CLEAR_GRID, top_k=3, **model)
    np.testing.assert_allclose(fp64.power[0], reference(curve, CLEAR_GRID.frequencies(), **model),
                               rtol=1e-9, atol=0)
    assert fp32.power.dtype == np.float32 and fp32.precision == "fp32"
    np.testing.assert_allclose(fp32.power[0], fp64.power[0], rtol=0, atol=FP32_ATOL)
    np.testing.assert_allclose(fp32.top_k_power, fp64.top_k_power, rtol=0, atol=FP32_ATOL)
    np.testing.assert_array_equal(fp32.top_k_frequency, fp64.top_k_frequency)
    assert fp32.status[0] == Status.OK and fp32.power_best.dtype == np.float64


@pytest.mark.slow
def test_fp32_keeps_raw_mjd_and_jd_epochs_over_1e5_frequencies(rng):
    """The same light curve on relative, MJD and JD epochs; 1e5 frequencies up to 18/day
    (f t up to 2e4 cycles, which plain float32 products would resolve to ~1e-3)."""
    t, y, dy, band = ztf_like(rng, epoch=0.0)
    curves = [(t + epoch, y, dy, band) for epoch in (0.0, 5.9e4, 2.46e6)]
    grid = FrequencyGrid(0.05, 1 / (5 * BASELINE), 100_000)
    fp64, fp32 = both(catalog(*curves), grid)
    assert np.max(np.abs(fp32.power - fp64.power)) < FP32_ATOL
    assert np.max(np.abs(fp32.power[1:] - fp32.power[0])) < 2e-6
    np.testing.assert_array_equal(fp32.frequency_best, fp64.frequency_best)


@pytest.mark.parametrize(("nterms_base", "nterms_band"), [(4, 4), (4, 0), (0, 4)])
def test_fp32_is_stable_with_four_harmonics_and_eight_bands(rng, nterms_base, nterms_band):
    """Up to 1 + 8 + 8 x 9 unknowns (the largest model): the reduced system keeps float32
    Cholesky stable, with astropy's default ridge of 1e-6 of the trace."""
    curve = ztf_like(rng, n=400, bands=tuple("grizyuJH"), nightly=False)
    model = {"nterms_base": nterms_base, "nterms_band": nterms_band}
    grid = FrequencyGrid.from_range(0.05, 2.0, 150)
    fp64, fp32 = both(catalog(curve), grid, **model)
    np.testing.assert_allclose(fp64.power[0], reference(curve, grid.frequencies(), **model),
                               rtol=1e-9, atol=0)
    np.testing.assert_allclose(fp32.power[0], fp64.power[0], rtol=0, atol=FP32_ATOL)


@pytest.mark.parametrize("ridge", [{"reg_band": 1e-10}, {"reg_base": 1e-10, "reg_band": None}])
def test_ridges_below_float32_resolution(rng, ridge):
    """astropy's matrix has eigenvalues of the ridge's size (duplicated constants and
    harmonics); the kernel eliminates those unknowns exactly, so a ridge below float32's
    resolution still gives the fp64 powers, and fp64 keeps the reference's."""
    curve = ztf_like(rng, bands=("g", "r", "i"))
    fp64, fp32 = both(catalog(curve), CLEAR_GRID, **ridge)
    np.testing.assert_allclose(fp64.power[0], reference(curve, CLEAR_GRID.frequencies(), **ridge),
                               rtol=1e-9, atol=0)
    np.testing.assert_allclose(fp32.power[0], fp64.power[0], rtol=0, atol=FP32_ATOL)


@pytest.mark.parametrize("dy_scale", [1e-3, 1.0, 1e2])
def test_fp32_follows_fp64_with_absolute_ridges(rng, dy_scale):
    """regularize_by_trace=False: each object's ridge is reg / sum(dy**-2) of its normalised
    weights, from far below float32's resolution (small dy) to about the trace (large)."""
    t, y, dy, band = ztf_like(rng, bands=("g", "r", "i"))
    curve = (t, y, dy_scale * dy, band)
    ridge = {"reg_band": 1e-3, "regularize_by_trace": False}
    fp64, fp32 = both(catalog(curve), CLEAR_GRID, **ridge)
    np.testing.assert_allclose(fp64.power[0], reference(curve, CLEAR_GRID.frequencies(), **ridge),
                               rtol=1e-9, atol=0)
    np.testing.assert_allclose(fp32.power[0], fp64.power[0], rtol=0, atol=FP32_ATOL)


@pytest.mark.slow
def test_fp32_phases_of_bins_beyond_the_first_block():
    """Grids of more than 2**22 frequencies run in blocks of bins; fp32's phase inputs
    follow each block's first bin, so the bin numbers stay exact in float32."""
    rng = np.random.default_rng(3)
    curve = ztf_like(rng, n=12, bands=("g",), epoch=2.46e6)
    cat = catalog(curve)
    grid = FrequencyGrid(0.05, 1 / (5 * BASELINE), 2**22 + 300)
    fp32 = clperiod.lombscargle_multiband(cat, grid, nterms_band=0, precision="fp32",
                                          periodogram=True)
    for first in (0, 2**22 - 300, grid.nf - 300):
        part = FrequencyGrid(grid.fmin + first * grid.df, grid.df, 300)
        fp64 = clperiod.lombscargle_multiband(cat, part, nterms_band=0, periodogram=True)
        np.testing.assert_allclose(fp32.power[0, first:first + 300], fp64.power[0], rtol=0,
                                   atol=FP32_ATOL)


@pytest.mark.slow
def test_fp32_finds_the_fp64_best_period_in_a_ztf_like_catalog():
    """200 ZTF-like objects (g and r, 120-180 points, three seasons, nightly cadence, raw MJD
    or JD epochs, periods 0.2-30 d, signal 0.3-10 times the noise) on astropy's grid from
    0.05 to 5/day: fp32's best period is fp64's for at least 99 % of them."""
    rng = np.random.default_rng(11)
    curves = [
        ztf_like(rng, n=int(rng.integers(120, 181)), epoch=(5.9e4, 2.46e6)[k % 2],
                 period=float(np.exp(rng.uniform(np.log(0.2), np.log(30.0)))),
                 snr=float(np.exp(rng.uniform(np.log(0.3), np.log(10.0)))))
        for k in range(200)
    ]
    grid = FrequencyGrid(0.05, 1 / (5 * BASELINE), 27_500)
    fp64, fp32 = (clperiod.lombscargle_multiband(catalog(*curves), grid, precision=p)
                  for p in ("fp64", "fp32"))
    assert (fp64.status == Status.OK).all()
    assert np.mean(fp32.frequency_best == fp64.frequency_best) >= 0.99
    assert np.max(np.abs(fp32.power_best - fp64.power_best)) < FP32_ATOL


# }}}
# {{{ frequency arrays


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_arrays_equal_each_frequency_alone_and_the_reference(rng, precision):
    curve = ztf_like(rng, epoch=2.46e6)
    cat = catalog(curve)
    frequency = np.sort(1 / rng.uniform(2.5, 20.0, 40))  # uneven: uniform in period
    array = FrequencyGrid.from_frequencies(frequency)
    assert isinstance(array, FrequencyArray)
    together = clperiod.lombscargle_multiband(cat, array, periodogram=True, precision=precision)
    alone = np.concatenate([
        clperiod.lombscargle_multiband(cat, FrequencyGrid(f, 1.0, 1), periodogram=True,
                                       precision=precision).power[0] for f in frequency
    ])
    expected = reference(curve, frequency)
    if precision == "fp64":
        np.testing.assert_allclose(together.power[0], alone, rtol=1e-13, atol=0)
        np.testing.assert_allclose(together.power[0], expected, rtol=1e-9, atol=0)
    else:  # the uniform and array kernels round the phases differently (~1e-7 cycles)
        np.testing.assert_allclose(together.power[0], alone, rtol=0, atol=2e-6)
        np.testing.assert_allclose(together.power[0], expected, rtol=0, atol=FP32_ATOL)
    assert together.grid is array
    assert together.frequency_best[0] == frequency[np.argmax(expected)]


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_unsorted_and_repeated_arrays(rng, precision):
    """Periodogram columns follow the array's order; peaks are local maxima along the
    rising distinct frequencies, as for the sorted array."""
    cat = catalog(ztf_like(rng), ztf_like(rng, period=3.7))
    frequency = np.sort(np.concatenate([np.geomspace(0.05, 2.0, 300), [0.0]]))
    given = rng.permutation(np.concatenate([frequency, frequency[::7]]))
    options = {"periodogram": True, "top_k": 3, "precision": precision}
    rising = clperiod.lombscargle_multiband(cat, FrequencyGrid.from_frequencies(frequency),
                                            **options)
    shuffled = clperiod.lombscargle_multiband(cat, FrequencyGrid.from_frequencies(given),
                                              **options)
    order = np.searchsorted(frequency, given)
    np.testing.assert_array_equal(shuffled.power, rising.power[:, order])
    assert np.isnan(shuffled.power[:, given == 0.0]).all()  # the power at f = 0
    for name in ("top_k_frequency", "top_k_power", "frequency_best", "power_best"):
        np.testing.assert_array_equal(getattr(shuffled, name), getattr(rising, name))
    for row, found in zip(rising.power, rising.top_k_frequency, strict=True):
        padded = np.concatenate([[-np.inf], np.nan_to_num(row, nan=-np.inf), [-np.inf]])
        peaks = np.flatnonzero((padded[1:-1] > padded[:-2]) & (padded[1:-1] >= padded[2:]))
        np.testing.assert_array_equal(found, frequency[peaks[np.argsort(-row[peaks])][:3]])


def test_evenly_spaced_arrays_run_as_the_grid(rng):
    cat = catalog(ztf_like(rng))
    on_grid = clperiod.lombscargle_multiband(cat, CLEAR_GRID, periodogram=True, top_k=2)
    reversed_array = FrequencyGrid.from_frequencies(CLEAR_GRID.frequencies()[::-1])
    reversed_run = clperiod.lombscargle_multiband(cat, reversed_array, periodogram=True, top_k=2)
    np.testing.assert_array_equal(reversed_run.power[0], on_grid.power[0, ::-1])
    np.testing.assert_array_equal(reversed_run.top_k_frequency, on_grid.top_k_frequency)


# }}}
# {{{ devices


def test_objects_are_cut_into_batches_for_each_device():
    """Two devices (here one listed twice): consecutive batches covering every object,
    at least one per device, of similar numbers of points."""
    info = select_devices()[0]
    lengths = np.random.default_rng(0).integers(0, 300, 101)
    options = multiband._Options((1, 1), (0.0, 1e-6), True, 1, 2)
    one = multiband._batches([info], lengths, CLEAR_GRID, options, None)
    two = multiband._batches([info, info], lengths, CLEAR_GRID, options, None)
    assert one == [(0, 101)]
    assert len(two) >= 2 and two[0][0] == 0 and two[-1][1] == 101
    assert all(a[1] == b[0] for a, b in itertools.pairwise(two))
    assert max(lengths[a:b].sum() for a, b in two) <= lengths.sum() / 2 + 300


SCRIPT = r"""
import json
import numpy as np
import clperiod
from clperiod import Catalog, FrequencyGrid

devices = clperiod.select_devices("cpu")
assert len(devices) == 2, [d.label for d in devices]
rng = np.random.default_rng(5)
rows = []
for k in range(30):
    n = int(rng.integers(20, 120))
    t = 5.9e4 + np.sort(rng.uniform(0, 300, n))
    band = rng.choice(["g", "r", "i"], n)
    y = np.sin(2 * np.pi * t / (0.5 + k / 10)) + 0.3 * rng.standard_normal(n)
    rows.append((t, y, rng.uniform(0.1, 0.3, n), band))
rows.insert(11, (np.arange(4.0), np.ones(4), np.ones(4), np.array(["g"] * 4)))  # too few
ids = np.repeat(np.arange(len(rows)), [r[0].size for r in rows])
t, y, dy, band = (np.concatenate(c) for c in zip(*rows))
cat = Catalog.from_arrays(ids, t, y, dy, band=band)
out = {}
grids = {"grid": FrequencyGrid.from_range(0.05, 3.0, 2000),
         "array": FrequencyGrid.from_frequencies(1 / np.linspace(0.3, 20.0, 1500))}
for name, precision in (("grid", "fp64"), ("grid", "fp32"), ("array", "fp64")):
    one, both = (clperiod.lombscargle_multiband(cat, grids[name], top_k=3, periodogram=True,
                                                precision=precision, device=d)
                 for d in (devices[:1], devices))
    out[f"{name}-{precision}"] = {
        "devices": both.devices,
        "same": all(np.array_equal(getattr(one, f), getattr(both, f), equal_nan=True)
                    for f in ("frequency_best", "power_best", "top_k_frequency",
                              "top_k_power", "status", "power")),
        "status": both.status.tolist(),
    }
print(json.dumps(out))
"""


@pytest.mark.slow
@pytest.mark.parametrize("run", ["grid-fp64", "grid-fp32", "array-fp64"])
def test_two_devices_equal_one(two_device_runs, run):
    out = two_device_runs[run]
    assert len(out["devices"]) == 2 and out["same"]
    assert out["status"].count(Status.OK) == 30 and out["status"][11] == Status.TOO_FEW_POINTS


@pytest.fixture(scope="module")
def two_device_runs():
    return run_on_two_devices(SCRIPT)


# }}}
