"""Box least squares on the device (clperiod.bls) against astropy's BoxLeastSquares and the
NumPy reference (tests/reference/bls.py): both methods and objectives, catalogs, layouts of
the binned kernel, fp32, invariances, injections, statuses and bad input."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from astropy.timeseries import BoxLeastSquares

import clperiod
from clperiod import Catalog, FrequencyGrid, Status
from clperiod.io import load_example
from clperiod.periodograms import bls as bls_module
from clperiod.periodograms.bls import Layout
from clperiod.periodograms.bls_stats import autoperiod
from reference import bls as ref
from two_devices import run_on_two_devices

PERIOD, DURATION, EPOCH, DEPTH = 2.3, 0.2, 101.1, 0.01
PERIODS = np.linspace(0.8, 4.0, 150)
SEVERAL = [0.1, 0.25, 0.15]  # not sorted: ties follow the given order
ASTROPY_METHOD = {"binned": "fast", "exact": "slow"}


def transit_light_curve(seed: int, n: int = 300, period: float = PERIOD,
                        epoch: float = EPOCH, duration: float = DURATION):
    """Box transit plus noise over 20 days from t = 100.3, with per-point errors."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 20, n)) + 100.3
    dy = rng.uniform(0.004, 0.007, n)
    y = 1.0 + dy * rng.normal(size=n)
    y[np.abs((t - epoch + period / 2) % period - period / 2) < duration / 2] -= DEPTH
    return t, y, dy


def one(t, y, dy=None) -> Catalog:
    return Catalog.from_arrays(np.zeros(np.size(t), dtype=int), t, y, dy)


def assert_fields_equal(result, row: int, expected, rtol: float = 1e-9) -> None:
    """Every periodogram field of ``result``'s object ``row`` equals ``expected``'s (a
    BoxLeastSquaresResults or a reference BLSResult)."""
    for name in ref.FIELDS:
        theirs = np.asarray(expected[name] if isinstance(expected, dict) else
                            getattr(expected, name))
        np.testing.assert_allclose(getattr(result, name)[row], theirs, rtol=rtol, atol=0,
                                   err_msg=name)


@pytest.mark.parametrize("objective", ["likelihood", "snr"])
@pytest.mark.parametrize("durations", [[DURATION], SEVERAL], ids=["one", "several"])
@pytest.mark.parametrize("with_errors", [False, True])
def test_binned_search_equals_astropy_fast(objective, durations, with_errors):
    t, y, dy = transit_light_curve(1)
    dy = dy if with_errors else None
    for oversample in (3, 10):
        theirs = BoxLeastSquares(t, y, dy).power(PERIODS, durations, objective=objective,
                                                  method="fast", oversample=oversample)
        ours = clperiod.bls(one(t, y, dy), PERIODS, durations, objective=objective,
                            oversample=oversample, compat="astropy", periodogram=True)
        assert_fields_equal(ours, 0, theirs)
        best = np.argmax(theirs.power)
        assert ours.period_best[0] == PERIODS[best] and ours.top_k_index[0, 0] == best
        assert ours.power_best[0] == ours.power[0, best]
        assert ours.transit_time_best[0] == ours.transit_time[0, best]


def test_astropys_own_choice_among_copies_of_a_box():
    """astropy copies the first bins after the last one; a box inside them and its copy
    hold the same points, and astropy's rounding picks either (here the copy at least
    once): compat="astropy" reports astropy's pick, the cyclic search the first."""
    t, y, dy = transit_light_curve(1)
    theirs = BoxLeastSquares(t, y, dy).power(PERIODS, DURATION)
    ours = clperiod.bls(one(t, y, dy), PERIODS, DURATION, compat="astropy", periodogram=True)
    np.testing.assert_array_equal(ours.transit_time[0], theirs.transit_time)
    width = DURATION / 10
    phase = theirs.transit_time - t.min()
    copies = phase > PERIODS - width  # a box centred on phase P - ..., holding bins 1 ..
    assert copies.any()


@pytest.mark.slow
@pytest.mark.parametrize("objective", ["likelihood", "snr"])
@pytest.mark.parametrize("durations", [[DURATION], SEVERAL], ids=["one", "several"])
@pytest.mark.parametrize("with_errors", [False, True])
def test_exact_search_equals_astropy_slow(objective, durations, with_errors):
    t, y, dy = transit_light_curve(2)
    dy = dy if with_errors else None
    periods = np.linspace(1.5, 3.5, 40)
    theirs = BoxLeastSquares(t, y, dy).power(periods, durations, objective=objective,
                                              method="slow")
    ours = clperiod.bls(one(t, y, dy), periods, durations, objective=objective,
                        method="exact", periodogram=True)
    assert_fields_equal(ours, 0, theirs)
    assert ours.method == "exact" and ours.compat is None


@pytest.mark.slow
def test_a_ztf_cadence_light_curve_equals_astropy():
    """The bundled '8205_errors' light curve (a synthetic asteroid with a ZTF cadence
    and photometric errors, clperiod/data/README.md): no transit, but every field of
    both searches equals astropy's."""
    catalog = load_example("8205_errors")
    t, y, dy = catalog.lightcurve(0)
    durations = [0.02, 0.05]
    periods = np.linspace(0.2, 2.0, 400)
    for method, chosen in (("fast", periods), ("slow", periods[::40])):
        theirs = BoxLeastSquares(t, y, dy).power(chosen, durations, method=method)
        ours = clperiod.bls(catalog, chosen, durations, method=method, compat="astropy",
                            periodogram=True)
        assert_fields_equal(ours, 0, theirs)


#: HAT-P-7 b (Kepler-2 b; Pal et al. 2008, ApJ 680, 1450): period 2.2047299 +- 0.0000040 d;
#: the discovery's BLS found a 7.0 mmag deep, 4.1 h long transit.
HAT_P_7B_PERIOD, HAT_P_7B_DEPTH, HAT_P_7B_DURATION = 2.2047299, 1 - 10 ** (-0.4 * 7.0e-3), 4.1 / 24
KEPLER_DURATIONS = [0.1, 0.15, 0.2]


def kepler_periods(t) -> np.ndarray:
    """A fine grid around HAT-P-7 b's period (steps of 0.002 d) and a coarse grid from 0.8
    to 4.3 days (astropy's autoperiod, 40 times coarser than its default)."""
    fine = np.linspace(2.18, 2.23, 26)
    wide = autoperiod(t, KEPLER_DURATIONS, minimum_period=0.8, maximum_period=4.0,
                      frequency_factor=40.0)
    return np.concatenate([fine, wide])


@pytest.mark.slow
@pytest.mark.parametrize("objective", ["likelihood", "snr"])
def test_a_kepler_planet_host_equals_astropy(objective):
    """HAT-P-7 in Kepler's Q0 short cadence (load_example("hat-p-7"), 2655 points with
    PDCSAP errors): every field of the exact search, and of the binned one with
    compat="astropy", equals astropy's BoxLeastSquares on both grids."""
    catalog = load_example("hat-p-7")
    t, y, dy = catalog.lightcurve(0)
    periods = kepler_periods(t)
    for method, compat in (("exact", None), ("binned", "astropy")):
        theirs = BoxLeastSquares(t, y, dy).power(periods, KEPLER_DURATIONS, objective=objective,
                                                  method=ASTROPY_METHOD[method])
        ours = clperiod.bls(catalog, periods, KEPLER_DURATIONS, objective=objective,
                            method=method, compat=compat, periodogram=True)
        assert_fields_equal(ours, 0, theirs)
        assert ours.period_best[0] == periods[np.argmax(theirs.power)]


@pytest.mark.slow
def test_a_kepler_planet_recovered():
    """HAT-P-7 b's period, depth and duration from the Kepler light curve, by the exact
    and binned searches in fp64 and fp32.

    Period: within BLS's resolution on the 9.7-day baseline, astropy's autoperiod step
    ``min(durations) / baseline**2`` in frequency (0.0051 d at 2.2 d); the best box fits
    transits that are longer than it and limb-darkened, so periods that move the boxes
    within the transits fit about as well (the exact search picks 2.206 d). Depth: within
    10 % of the discovery's 7.0 mmag (0.64 %), measured on other (HATNet I-band) data with
    other limb darkening. Duration: within 20 % of 4.1 h, as the best box leaves out the
    shallow ingress and egress (it is 0.15 d, 3.6 h)."""
    catalog = load_example("hat-p-7")
    t, y, _ = catalog.lightcurve(0)
    periods = kepler_periods(t)
    resolution = HAT_P_7B_PERIOD**2 * min(KEPLER_DURATIONS) / np.ptp(t) ** 2
    exact = clperiod.bls(catalog, periods, KEPLER_DURATIONS, method="exact")
    assert abs(exact.period_best[0] - HAT_P_7B_PERIOD) < resolution
    relative_depth = exact.depth_best[0] / np.median(y)
    assert abs(relative_depth - HAT_P_7B_DEPTH) < 0.1 * HAT_P_7B_DEPTH
    assert abs(exact.duration_best[0] - HAT_P_7B_DURATION) < 0.2 * HAT_P_7B_DURATION
    assert exact.depth_snr_best[0] > 100
    for method, precision in (("binned", "fp64"), ("exact", "fp32"), ("binned", "fp32")):
        other = clperiod.bls(catalog, periods, KEPLER_DURATIONS, method=method,
                             precision=precision)
        assert other.period_best[0] == exact.period_best[0], (method, precision)
        assert other.duration_best[0] == exact.duration_best[0], (method, precision)


def test_astropy_known_answer():
    """astropy's test_32bit_bug (spec §4.6): its numbers."""
    rng = np.random.default_rng(42)
    t = rng.uniform(0, 10, 500)
    y = np.ones_like(t)
    y[np.abs((t + 1.0) % 2.0 - 1) < 0.08] = 1.0 - 0.1
    y += 0.01 * rng.standard_normal(len(t))
    periods = autoperiod(t, 0.16)
    result = clperiod.bls(one(t, y), periods, 0.16, compat="astropy")
    np.testing.assert_allclose(result.period_best[0], 2.000412388152837, rtol=1e-12)
    result = clperiod.bls(one(t, y), np.linspace(1.9, 2.1, 5), 0.16, compat="astropy",
                          periodogram=True)
    np.testing.assert_allclose(result.power[0], [0.01723948, 0.0643028, 0.1338783,
                                                 0.09428816, 0.03577543], rtol=1.1e-7)


def straddling_light_curve():
    """A 0.25-long transit centred on phase 0 of the search grids (t_ref = 50), P = 1.5;
    the first point lies on box edges and gets a negligible weight (as the reference's)."""
    rng = np.random.default_rng(5)
    t = np.concatenate([[0.0], np.sort(rng.uniform(0.0, 15.0, 1200))]) + 50.0
    dy = np.full(t.size, 0.002)
    y = 1.0 + dy * rng.normal(size=t.size)
    y[np.abs((t - 50.0 + 0.75) % 1.5 - 0.75) < 0.125] -= 0.01
    dy[0], y[0] = 1e3, 1.0
    return t, y, dy


@pytest.mark.parametrize("objective", ["likelihood", "snr"])
def test_cyclic_binned_equals_exact_on_a_common_grid(objective):
    """Bins of 1/64, box centres on multiples of 1/64: the cyclic binned search equals
    the exact one, also for the transit across phase 0."""
    t, y, dy = straddling_light_curve()
    periods = np.arange(64, 160) / 64.0
    exact = clperiod.bls(one(t, y, dy), periods, 0.25, objective=objective, method="exact",
                         oversample=16, periodogram=True)
    binned = clperiod.bls(one(t, y, dy), periods, 0.25, objective=objective, oversample=16,
                          periodogram=True)
    assert_fields_equal(binned, 0, {name: getattr(exact, name)[0] for name in ref.FIELDS})
    assert binned.period_best[0] == 1.5 and abs(binned.depth_best[0] - 0.01) < 0.001


def test_astropy_binned_misses_boxes_across_phase_0():
    """Durations {1/16, 1/4}: astropy pads only 'oversample' bins, so the 1/4 box across
    phase 0 is never tried; compat="astropy" reproduces that, the default finds it."""
    t, y, dy = straddling_light_curve()
    durations = [0.0625, 0.25]
    theirs = BoxLeastSquares(t, y, dy).power(1.5, durations, oversample=8)
    astropy = clperiod.bls(one(t, y, dy), [1.5], durations, oversample=8, compat="astropy",
                           periodogram=True)
    cyclic = clperiod.bls(one(t, y, dy), [1.5], durations, oversample=8, periodogram=True)
    exact = ref.bls_slow(t, y, dy, 1.5, durations, oversample=8)
    assert_fields_equal(astropy, 0, theirs)
    np.testing.assert_allclose(cyclic.power[0], exact.power, rtol=1e-9)
    assert cyclic.transit_time[0, 0] == 50.0 and cyclic.duration[0, 0] == 0.25
    assert astropy.power[0, 0] < 0.6 * cyclic.power[0, 0]


def test_cyclic_search_equals_the_reference():
    """compat=None against the reference's cyclic layout. Where two boxes hold the same
    points (a box of the first bins and one ending in the empty last bin) they tie; the
    kernel's exact sums keep the first, the reference's float sums either: those periods
    have equal fields but for the transit time, and are few."""
    t, y, dy = transit_light_curve(3)
    ours = clperiod.bls(one(t, y, dy), PERIODS, SEVERAL, periodogram=True)
    expected = ref.bls_binned(t, y, dy, PERIODS, SEVERAL)
    for name in ref.FIELDS:
        if name != "transit_time":
            np.testing.assert_allclose(getattr(ours, name)[0], getattr(expected, name),
                                       rtol=1e-9, err_msg=name)
    differ = ours.transit_time[0] != expected.transit_time
    assert np.count_nonzero(differ) <= 3
    width = min(SEVERAL) / 10
    shift = (ours.transit_time[0] - expected.transit_time)[differ] % PERIODS[differ]
    assert np.all(np.minimum(shift, PERIODS[differ] - shift) < 2 * width)


def ragged_catalog():
    """Three transiting light curves of 300, 50 and 700 points, and objects the search
    cannot take: one row, constant values, equal times."""
    curves = [transit_light_curve(seed, n) for seed, n in ((4, 300), (5, 50), (6, 700))]
    curves += [(np.array([100.0]), np.array([1.0]), np.array([0.01])),
               (np.linspace(100, 110, 30), np.ones(30), np.full(30, 0.01)),
               (np.full(20, 100.0), np.linspace(0, 1, 20), np.full(20, 0.01))]
    return Catalog.from_lightcurves(curves), curves


@pytest.mark.parametrize("method", ["binned", "exact"])
@pytest.mark.slow
def test_a_ragged_catalog_equals_its_objects_alone(method):
    catalog, curves = ragged_catalog()
    periods = PERIODS[::5] if method == "exact" else PERIODS
    together = clperiod.bls(catalog, periods, SEVERAL, method=method, top_k=3,
                            periodogram=True)
    np.testing.assert_array_equal(together.status, [Status.OK] * 3 + [
        Status.TOO_FEW_POINTS, Status.ZERO_VARIANCE, Status.ZERO_BASELINE])
    for row, (t, y, dy) in enumerate(curves[:3]):
        alone = clperiod.bls(one(t, y, dy), periods, SEVERAL, method=method,
                             periodogram=True)
        assert_fields_equal(together, row, {n: getattr(alone, n)[0] for n in ref.FIELDS},
                            rtol=0)
        assert_peaks_are_the_periodograms(together, row)
    assert np.isnan(together.power[3:]).all() and np.isnan(together.period_best[3:]).all()
    assert (together.top_k_index[3:] == -1).all()


@pytest.mark.parametrize(("method", "compat"),
                         [("binned", None), ("binned", "astropy"), ("exact", None)])
@pytest.mark.slow
def test_devices_give_the_results_of_one(monkeypatch, cpu_device, method, compat):
    """Objects spread over two workers of one device, the second with 8 KiB of local
    memory (so more period ranges, and more peak columns per object, than the first): the
    results of one device."""
    catalog, _ = ragged_catalog()
    periods = np.linspace(1.0, 12.0, 60) if method == "binned" else PERIODS[::5]
    durations = [0.04, 0.1]
    one_device = clperiod.bls(catalog, periods, durations, method=method, compat=compat,
                              top_k=3, periodogram=True)
    small = dataclasses.replace(cpu_device, local_mem=8192)
    monkeypatch.setattr(bls_module, "select_devices", lambda _: [cpu_device, small])
    spread = clperiod.bls(catalog, periods, durations, method=method, compat=compat,
                          top_k=3, periodogram=True)
    assert spread.devices == [cpu_device.label] * 2
    for name in ("period_best", "power_best", "depth_best", "transit_time_best",
                 "top_k_index", "top_k_power", "status", *ref.FIELDS):
        np.testing.assert_array_equal(getattr(spread, name), getattr(one_device, name),
                                      err_msg=name)


def test_joined_batches_pad_peak_columns():
    """Batches found with different numbers of period ranges join with NO_PEAK columns."""
    options = bls_module._Options("likelihood", "binned", 10, None, 1, False)
    wide = bls_module._Found(np.array([[3, 7]], np.int32), np.array([[5, 9]], np.int32),
                             np.ones((1, 2, 2), np.int64), None, None)
    narrow = bls_module._Found(np.array([[4]], np.int32), np.array([[6]], np.int32),
                               np.full((1, 1, 2), 2, np.int64), None, None)
    joined = bls_module._joined([wide, narrow], 10, options)
    no_peak = np.iinfo(np.int32).max
    np.testing.assert_array_equal(joined.indices, [[3, 7], [4, no_peak]])
    np.testing.assert_array_equal(joined.keys, [[5, 9], [6, no_peak]])
    np.testing.assert_array_equal(joined.sums[1], [[2, 2], [0, 0]])
    assert joined.all_keys is None


TWO_DEVICES = r"""
import json
import numpy as np
import clperiod
from clperiod import Catalog

devices = clperiod.select_devices("cpu")
rng = np.random.default_rng(8)
lcs = []
for k in range(16):
    n = int(rng.integers(30, 400))
    t = np.sort(rng.uniform(0, 20, n)) + 58000.0
    y = 1.0 + 0.005 * rng.standard_normal(n)
    y[np.abs((t - 58001.0 + 1.15) % 2.3 - 1.15) < 0.1] -= 0.01
    lcs.append((t, y, rng.uniform(0.004, 0.007, n)))
cat = Catalog.from_lightcurves(lcs)
periods = np.linspace(0.8, 4.0, 400)
fields = ("period_best", "power_best", "depth_best", "duration_best", "transit_time_best",
          "top_k_index", "top_k_power", "status")
out = {"n_devices": len(devices)}
for method in ("binned", "exact"):
    for precision in ("fp64", "fp32"):
        one = clperiod.bls(cat, periods, [0.1, 0.2], method=method, top_k=3,
                           precision=precision, device=devices[:1])
        both = clperiod.bls(cat, periods, [0.1, 0.2], method=method, top_k=3,
                            precision=precision, device=devices)
        out[f"{method} {precision}"] = {
            "devices": len(both.devices),
            "same": all(np.array_equal(getattr(one, f), getattr(both, f), equal_nan=True)
                        for f in fields),
        }
print(json.dumps(out))
"""


@pytest.mark.slow
def test_two_devices_equal_one():
    out = run_on_two_devices(TWO_DEVICES)
    assert out.pop("n_devices") == 2
    assert len(out) == 4
    assert all(value == {"devices": 2, "same": True} for value in out.values()), out


def assert_peaks_are_the_periodograms(result, row: int) -> None:
    """The top-k peaks are the periodogram's highest local maxima (strictly above the
    left neighbour, not below the right one), best first."""
    power = result.power[row]
    padded = np.concatenate([[-np.inf], power, [-np.inf]])
    peaks = np.flatnonzero((padded[1:-1] > padded[:-2]) & (padded[1:-1] >= padded[2:]))
    expected = peaks[np.argsort(-power[peaks], kind="stable")][:result.top_k_index.shape[1]]
    np.testing.assert_array_equal(result.top_k_index[row, :expected.size], expected)
    np.testing.assert_array_equal(result.top_k_power[row, :expected.size], power[expected])
    np.testing.assert_array_equal(result.top_k_period[row, :expected.size],
                                  result.periods[expected])


@pytest.mark.parametrize("layout", [Layout(True, "int64"), Layout(False, "int64"),
                                    Layout(True, "split"), Layout(False, "split")],
                         ids=["local-int64", "global-int64", "local-split", "global-split"])
@pytest.mark.parametrize("compat", ["astropy", None])
def test_binned_layouts_give_the_same_boxes(layout, compat):
    """Bins in local or global memory, 64-bit or split atomic adds: the same integer
    sums, so identical results."""
    catalog, _ = ragged_catalog()
    default = clperiod.bls(catalog, PERIODS, SEVERAL, compat=compat, periodogram=True)
    other = clperiod.bls(catalog, PERIODS, SEVERAL, compat=compat, periodogram=True,
                         layout=layout)
    for name in ref.FIELDS:
        np.testing.assert_array_equal(getattr(other, name), getattr(default, name))


@pytest.mark.parametrize("compat", ["astropy", None])
def test_long_periods_use_global_bins(compat):
    """With 16 KiB of local memory for the bins, the short periods are searched with local
    bins and the long ones with global bins (ranges whose neighbours hold more bins than
    they do): all agree with the reference."""
    t, y, dy = transit_light_curve(7)
    periods = np.linspace(1.0, 12.0, 60)  # 250 .. 3000 bins of 0.004
    durations = [0.04, 0.1]
    mixed = clperiod.bls(one(t, y, dy), periods, durations, compat=compat,
                         periodogram=True, layout=Layout(None, "int64", local_bytes=16384))
    expected = ref.bls_binned(t, y, dy, periods, durations, compat=compat)
    for name in ref.FIELDS:
        if name != "transit_time" or compat == "astropy":  # cyclic ties: see below
            np.testing.assert_allclose(getattr(mixed, name)[0], getattr(expected, name),
                                       rtol=1e-9, err_msg=name)


@pytest.mark.parametrize("method", ["binned", "exact"])
def test_fp32_chooses_the_fp64_boxes_on_mjd_epochs(method):
    """fp32 folds in double-single (~1e-7 cycles): on MJD epochs (t ~ 6e4) a point can
    change side only within ~1e-7 cycles of an edge, so almost every period keeps the
    fp64 box, whose fields come from the same exact sums (equal to rounding)."""
    t, y, dy = transit_light_curve(8, n=500)
    t = t + 60000.0
    periods = PERIODS[::3] if method == "exact" else PERIODS
    fp64 = clperiod.bls(one(t, y, dy), periods, SEVERAL, method=method, periodogram=True)
    fp32 = clperiod.bls(one(t, y, dy), periods, SEVERAL, method=method, periodogram=True,
                        precision="fp32")
    same = np.isclose(fp32.power[0], fp64.power[0], rtol=1e-12, atol=0)
    assert same.mean() >= 0.98
    np.testing.assert_allclose(fp32.power[0], fp64.power[0], rtol=0.05)
    assert fp32.period_best[0] == fp64.period_best[0]
    for name in ("depth_best", "duration_best", "transit_time_best"):
        np.testing.assert_allclose(getattr(fp32, name), getattr(fp64, name), rtol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["binned", "exact"])
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_injected_transit_recovered(method, precision):
    """A 0.01-deep, 0.15-day transit every 3.17 days in 1000 points over 20 days: S/N 1.4
    to 2.5 per point (depth over dy, dy from 0.004 to 0.007), 13.5 over the whole light
    curve (depth * sqrt(sum(dy**-2)) over the 49 points in transit; the true box's
    depth_snr is 13.1)."""
    t, y, dy = transit_light_curve(9, n=1000, period=3.17, epoch=102.0, duration=0.15)
    periods = autoperiod(t, [0.1, 0.15, 0.2], minimum_period=2.5, maximum_period=4.5,
                         frequency_factor=4.0)
    result = clperiod.bls(one(t, y, dy), periods, [0.1, 0.15, 0.2], method=method,
                          oversample=5, precision=precision, top_k=3)
    assert abs(result.period_best[0] - 3.17) < 0.005
    # the binned box may be a bin longer than the transit: up to 1/8 shallower
    error = 0.125 * DEPTH + 3 * result.depth_err_best[0]
    assert abs(result.depth_best[0] - DEPTH) < error
    assert abs(result.duration_best[0] - 0.15) <= 0.05
    phase_error = (result.transit_time_best[0] - 102.0 + 3.17 / 2) % 3.17 - 3.17 / 2
    assert abs(phase_error) < 0.03
    assert result.depth_snr_best[0] > 10


@pytest.mark.parametrize("method", ["binned", "exact"])
def test_units_offsets_and_time_shifts_change_nothing(method):
    """y -> 7 y + 1e4, dy -> 7 dy, t -> t + 6e4: dimensionless fields unchanged, depths
    times 7, transit times 6e4 later."""
    t, y, dy = transit_light_curve(10)
    periods = PERIODS[::4]
    base = clperiod.bls(one(t, y, dy), periods, SEVERAL, objective="snr", method=method,
                        periodogram=True)
    moved = clperiod.bls(one(t + 6e4, 7 * y + 1e4, 7 * dy), periods, SEVERAL,
                         objective="snr", method=method, periodogram=True)
    for name in ("power", "depth_snr", "log_likelihood", "duration"):
        np.testing.assert_allclose(getattr(moved, name), getattr(base, name), rtol=1e-9)
    np.testing.assert_allclose(moved.depth, 7 * base.depth, rtol=1e-9)
    np.testing.assert_allclose(moved.depth_err, 7 * base.depth_err, rtol=1e-9)
    np.testing.assert_allclose(moved.transit_time - 6e4, base.transit_time, atol=1e-9)


def test_periods_in_any_order_and_frequency_grids():
    """Unsorted periods with repeats: columns in the given order, each the value of its
    period; a FrequencyGrid searches the periods 1 / f."""
    t, y, dy = transit_light_curve(11)
    rng = np.random.default_rng(0)
    shuffled = rng.permutation(np.concatenate([PERIODS, PERIODS[:10]]))
    ordered = clperiod.bls(one(t, y, dy), PERIODS, SEVERAL, periodogram=True)
    mixed = clperiod.bls(one(t, y, dy), shuffled, SEVERAL, periodogram=True)
    columns = np.searchsorted(PERIODS, shuffled)
    for name in ref.FIELDS:
        np.testing.assert_array_equal(getattr(mixed, name)[0],
                                      getattr(ordered, name)[0, columns])
    assert mixed.period_best[0] == ordered.period_best[0]
    assert shuffled[mixed.top_k_index[0, 0]] == ordered.period_best[0]
    grid = FrequencyGrid(0.25, 0.01, 100)
    from_grid = clperiod.bls(one(t, y, dy), grid, SEVERAL, periodogram=True)
    from_periods = clperiod.bls(one(t, y, dy), 1 / grid.frequencies(), SEVERAL,
                                periodogram=True)
    np.testing.assert_array_equal(from_grid.power, from_periods.power)
    assert from_grid.grid is grid
    np.testing.assert_allclose(from_grid.frequency(), grid.frequencies())


@pytest.mark.parametrize("with_errors", [False, True])
def test_compute_stats_and_model_equal_astropys(with_errors):
    t, y, dy = transit_light_curve(12, n=600)
    dy = dy if with_errors else None
    result = clperiod.bls(one(t, y, dy), PERIODS, DURATION, oversample=20)
    period, duration = result.period_best[0], result.duration_best[0]
    transit_time = result.transit_time_best[0]
    theirs = BoxLeastSquares(t, y, dy)
    expected = theirs.compute_stats(period, duration, transit_time)
    stats = result.compute_stats(0)
    assert set(stats) == set(expected)
    for name, value in stats.items():
        np.testing.assert_allclose(value, expected[name], rtol=1e-9, err_msg=name)
    np.testing.assert_allclose(stats["per_transit_log_likelihood"].sum(),
                               result.log_likelihood_best[0], rtol=1e-9)
    t_model = np.linspace(100, 121, 500)
    np.testing.assert_allclose(result.model(0, t_model),
                               theirs.model(t_model, period, duration, transit_time),
                               rtol=1e-12)


@pytest.mark.parametrize("options", [{}, {"minimum_n_transit": 5, "frequency_factor": 3.0},
                                     {"minimum_period": 4.0, "maximum_period": 1.0}])
def test_autoperiod_equals_astropys(options):
    t, y, _ = transit_light_curve(13)
    expected = BoxLeastSquares(t, y).autoperiod(SEVERAL, **options)
    np.testing.assert_allclose(autoperiod(t, SEVERAL, **options), expected, rtol=1e-14)


def test_statuses_and_no_admissible_box():
    """Points that share one bin at every trial period leave no box with points on
    both sides (TOO_FEW_POINTS); catalogs made by the
    constructor may hold non-finite values or dy <= 0; results of objects that are not
    OK have no best box."""
    catalog = Catalog(ids=np.arange(3), offsets=np.array([0, 3, 6, 9]),
                      t=np.array([0.0, 1, 2] * 3),
                      y=np.array([0.0, 1, 0, 0, 1, np.nan, 0, 1, 0]),
                      dy=np.array([1.0, 1, 1, 1, 1, 1, 1, -1, 1]))
    result = clperiod.bls(catalog, [0.5, 1.0], 0.2, periodogram=True)
    np.testing.assert_array_equal(result.status, [Status.TOO_FEW_POINTS, Status.NOT_FINITE,
                                                  Status.BAD_UNCERTAINTY])
    assert np.isnan(result.power).all() and np.isnan(result.depth_best).all()
    with pytest.raises(ValueError, match="TOO_FEW_POINTS"):
        result.compute_stats(0)
    with pytest.raises(IndexError):
        result.model(3, [0.0])
    ids, t = [0, 0, 0, 1, 1, 1, 2, 2], [0.0, 1, 2, 0, 0.5, 0.7, 0, 0.5]
    alone = clperiod.bls(Catalog.from_arrays(ids, t, [0.0, 1, 0, 0, 1, 0, 0, 1]), [1.0], 0.2,
                         periodogram=True)
    # object 2: two points, which the box's two levels always fit exactly
    np.testing.assert_array_equal(alone.status, [Status.TOO_FEW_POINTS, Status.OK,
                                                 Status.TOO_FEW_POINTS])
    assert np.isnan(alone.depth_snr_best[2])


def test_an_empty_catalog_gives_an_empty_result():
    empty = Catalog(ids=np.zeros(0, np.int64), offsets=[0], t=np.zeros(0), y=np.zeros(0))
    result = clperiod.bls(empty, [0.5, 1.0], 0.2, top_k=2, periodogram=True)
    assert result.status.shape == result.period_best.shape == (0,)
    assert result.top_k_power.shape == (0, 2) and result.power.shape == (0, 2)


def test_bad_arguments():
    t, y, dy = transit_light_curve(14)
    catalog = one(t, y, dy)
    with pytest.raises(ValueError, match="shorter than the shortest period"):
        clperiod.bls(catalog, [1.0, 2.0], [0.5, 1.0])
    for periods in ([], [1.0, -2.0], [1.0, np.nan], [[1.0, 2.0]]):
        with pytest.raises(ValueError, match="periods"):
            clperiod.bls(catalog, periods, 0.1)
    for durations in ([], [0.1, 0.0], [np.inf]):
        with pytest.raises(ValueError, match="durations"):
            clperiod.bls(catalog, [1.0, 2.0], durations)
    with pytest.raises(ValueError, match="frequency 0"):
        clperiod.bls(catalog, FrequencyGrid(0.0, 0.1, 10), 0.1)
    bad_options = [{"objective": "chi2"}, {"method": "fastest"}, {"compat": "cuvarbase"},
                   {"oversample": 0}, {"top_k": 0}, {"precision": "fp16"}]
    for options in bad_options:
        with pytest.raises(ValueError, match=next(iter(options))):
            clperiod.bls(catalog, [1.0, 2.0], 0.1, **options)
    with pytest.raises(TypeError, match="oversample"):
        clperiod.bls(catalog, [1.0, 2.0], 0.1, oversample=2.5)
    with pytest.raises(ValueError, match="bins or box centres"):
        clperiod.bls(catalog, [1.0, 1e6], 1e-3, oversample=1000)


@pytest.mark.parametrize("method", ["fast", "slow"])
@pytest.mark.slow
def test_points_on_bin_and_box_edges_fall_as_in_astropy(method):
    """A regular cadence of 0.01 and periods on multiples of it put points on the edges
    of bins (0.005) and boxes: fp64 folds with astropy's roundings, so each falls on
    astropy's side (a fused multiply-add would move some)."""
    rng = np.random.default_rng(15)
    t = 0.01 * np.arange(2000)
    y = 1 + 0.001 * rng.normal(size=t.size)
    y[np.abs((t - 0.37 + 0.65) % 1.3 - 0.65) < 0.04] -= 0.004
    periods = np.round(np.linspace(1.0, 2.0, 101 if method == "fast" else 11), 2)
    theirs = BoxLeastSquares(t, y).power(periods, [0.05, 0.1], method=method)
    ours = clperiod.bls(one(t, y), periods, [0.05, 0.1], method=method, compat="astropy",
                        periodogram=True)
    assert_fields_equal(ours, 0, theirs)


def test_any_scale_of_y_and_dy():
    """y and dy scaled together by 1e-200 .. 1e300: the fields in units of the scale do not
    change (weights in units of min(dy)**-2, depths of min(dy): nothing overflows)."""
    t, y, dy = transit_light_curve(16)
    base = clperiod.bls(one(t, y, dy), PERIODS, SEVERAL, periodogram=True)
    for scale in (1e-200, 1e-150, 1e150, 1e300):
        scaled = clperiod.bls(one(t, scale * y, scale * dy), PERIODS, SEVERAL,
                              periodogram=True)
        assert scaled.status[0] == Status.OK
        for name in ("power", "depth_snr", "log_likelihood", "transit_time", "duration"):
            np.testing.assert_allclose(getattr(scaled, name), getattr(base, name),
                                       rtol=1e-12, err_msg=name)
        for name in ("depth", "depth_err"):
            np.testing.assert_allclose(getattr(scaled, name) / scale, getattr(base, name),
                                       rtol=1e-12, err_msg=name)
