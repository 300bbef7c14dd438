"""Low-frequency bins: exact least-squares powers where the normal equations are
ill conditioned (issue 22; ``clperiod.periodograms.lowfreq``).

References: ``tests/reference/lstsq_power.py`` (least squares in 60-digit ``mpmath``,
and ``numpy.linalg.lstsq`` in float64, which agrees with it to ~1e-12 from
``f T = 0.1`` up for these light curves).
"""

import numpy as np
import pytest
from astropy.timeseries import LombScargle as AstropyLombScargle

import clperiod
from clperiod import Catalog, FrequencyGrid
from clperiod.engine.devices import get_queue
from clperiod.periodograms import lowfreq
from clperiod.periodograms.multiterm import multiterm_max_power, multiterm_power
from clperiod.periodograms.nufft import TRANSFORM_MARGIN
from reference.lstsq_power import lstsq_powers, lstsq_powers_float64

BOUND = {"fp64": 1e-9, "fp32": 1e-5}
#: (algorithm, precision) of the searches; the direct multi-term path is fp64 only.
PATHS = [("direct", "fp64"), ("nufft", "fp64"), ("direct", "fp32"), ("nufft", "fp32")]


def probe_light_curves():
    """The light curves of the issue's probe: a 6.28 d sinusoid in noise, raw
    MJD epochs, 200 and 3000 points over 100 d."""
    rng = np.random.default_rng(1)
    curves = []
    for n in (200, 3000):
        t = 58000 + np.sort(rng.uniform(0, 100, n))
        y = np.sin(t) + rng.normal(0, 0.3, t.size)
        curves.append((t, y, rng.uniform(0.2, 0.4, t.size)))
    return curves


def autofrequency_grid(t, y, dy, bins=260):
    """astropy's autofrequency grid (first bin at f T = 0.1, step 0.2 / T),
    its first ``bins`` frequencies."""
    frequency = AstropyLombScargle(t, y, dy).autofrequency()
    return FrequencyGrid(frequency[0], frequency[1] - frequency[0], bins)


@pytest.fixture(scope="module")
def probe_references():
    """Per probe light curve and nterms: the grid and the reference periodogram
    (float64 least squares; the 200-point curve's two lowest bins in mpmath)."""
    references = {}
    for n_curve, (t, y, dy) in enumerate(probe_light_curves()):
        grid = autofrequency_grid(t, y, dy)
        for nterms in (1, 2, 3):
            power = lstsq_powers_float64(t, y, dy, grid.frequencies(), nterms)
            if n_curve == 0:
                exact = lstsq_powers(t, y, dy, grid.frequencies()[:2], nterms)
                np.testing.assert_allclose(power[:2], exact, rtol=0, atol=1e-10)
                power[:2] = exact
            references[n_curve, nterms] = (grid, power)
    return references


@pytest.mark.parametrize("fit_mean, center_data", [(True, True), (False, True), (False, False)])
@pytest.mark.parametrize("nterms", [1, 2, 3, 8])
def test_exact_fits_match_the_extended_precision_reference(nterms, fit_mean, center_data):
    rng = np.random.default_rng(nterms)
    t = 2.46e6 + np.sort(rng.uniform(0, 40, 40))
    y = 3 + np.cos(2 * np.pi * t / 7.3) + 0.05 * (t - t[0]) + rng.normal(0, 0.3, t.size)
    dy = rng.uniform(0.1, 0.5, t.size)
    f_times_t = np.array([1e-3, 0.01, 0.1, 0.5, 2.0, 20.0])
    if nterms == 8:
        f_times_t = f_times_t[2:]  # the reference's 60 digits resolve 16 harmonics from 0.1 on
    frequency = f_times_t / np.ptp(t)
    model = lowfreq.Model(nterms, fit_mean, center_data, use_dy=True)
    points = lowfreq.fit_points(
        Catalog.from_single(t, y, dy),
        min_points=model.min_points,
        center=fit_mean or center_data,
        use_dy=True,
    )
    fits = lowfreq.exact_fits(points, np.zeros(frequency.size, int), frequency, nterms, fit_mean)
    expected = lstsq_powers(
        t, y, dy, frequency, nterms, fit_mean=fit_mean, center_data=center_data
    )
    np.testing.assert_allclose(fits.power, expected, rtol=0, atol=1e-13)


@pytest.mark.parametrize("nterms", [1, 3])
def test_exact_fits_of_an_object_do_not_depend_on_the_other_requests(nterms):
    """A request's fit is the same to the last bit alone or batched with
    requests of other objects, shorter or longer (so that batches, devices
    and catalogs of any make-up give one object the same exact powers)."""
    rng = np.random.default_rng(40 + nterms)
    lengths = [37, 90, 100, 109, 120, 400]
    curves = [(np.sort(rng.uniform(0, 60, n)), rng.normal(size=n), rng.uniform(0.1, 0.3, n))
              for n in lengths]
    points = lowfreq.fit_points(Catalog.from_lightcurves(curves), min_points=2 * nterms + 2,
                                center=True, use_dy=True)
    frequencies = rng.uniform(0.002, 0.05, 6)
    objects = np.arange(6)
    together = lowfreq.exact_fits(points, objects, frequencies, nterms, True).power
    for k in objects:
        alone = lowfreq.exact_fits(points, objects[k : k + 1], frequencies[k : k + 1], nterms,
                                   True).power
        assert alone[0] == together[k], (k, alone[0] - together[k])
    assert np.all(np.isfinite(together))


def test_frequency_zero_is_not_determined():
    rng = np.random.default_rng(3)
    t = np.sort(rng.uniform(0, 10, 30))
    points = lowfreq.fit_points(
        Catalog.from_single(t, rng.normal(size=30)), min_points=8, center=True, use_dy=False
    )
    fits = lowfreq.exact_fits(points, np.zeros(2, int), np.array([0.0, 0.05]), 3, True)
    assert np.isnan(fits.power[0]) and np.isfinite(fits.power[1])


@pytest.mark.parametrize("nterms", [1, 2, 3])
@pytest.mark.parametrize("algorithm, precision", PATHS)
def test_probe_periodograms_match_the_reference(
    probe_references, cpu_device, algorithm, precision, nterms
):
    if algorithm == "direct" and precision == "fp32" and nterms > 1:
        pytest.skip("the direct multi-term path is fp64 only")
    for n_curve, (t, y, dy) in enumerate(probe_light_curves()):
        grid, expected = probe_references[n_curve, nterms]
        result = clperiod.lombscargle(
            t,
            grid,
            y,
            dy,
            nterms=nterms,
            algorithm=algorithm,
            precision=precision,
            periodogram=True,
            top_k=3,
            device=cpu_device,
        )
        peak = np.nanmax(expected)
        assert np.max(np.abs(result.power[0] - expected)) <= BOUND[precision] * peak
        assert result.frequency_best[0] == grid.frequencies()[np.argmax(expected)]
        assert_peaks_follow_the_periodogram(result)


def assert_peaks_follow_the_periodogram(result):
    """The top-k peaks are those of the returned periodograms (the kernels' rule)."""
    values, bins = lowfreq.top_k_peaks(result.power, result.top_k_power.shape[1])
    found = bins != lowfreq.NO_PEAK
    frequency = np.where(found, result.grid.frequencies()[np.where(found, bins, 0)], np.nan)
    np.testing.assert_array_equal(frequency, result.top_k_frequency)
    if result.normalization != "psd":
        np.testing.assert_array_equal(np.where(found, values, np.nan), result.top_k_power)


@pytest.mark.parametrize("normalization", ["standard", "model", "log", "psd"])
@pytest.mark.parametrize("fit_mean, center_data", [(True, True), (False, True), (False, False)])
@pytest.mark.parametrize("algorithm", ["direct", "nufft"])
def test_every_model_and_normalization(
    cpu_device, algorithm, fit_mean, center_data, normalization
):
    t, y, dy = probe_light_curves()[0]
    y = y + 5.0  # an offset that matters to the uncentred model
    grid = FrequencyGrid(0.02 / np.ptp(t), 0.04 / np.ptp(t), 30)  # f T = 0.02 .. 1.18
    z = lstsq_powers_float64(
        t, y, dy, grid.frequencies(), 2, fit_mean=fit_mean, center_data=center_data
    )
    z[:4] = lstsq_powers(
        t, y, dy, grid.frequencies()[:4], 2, fit_mean=fit_mean, center_data=center_data
    )
    residual = y - (np.sum(y / dy**2) / np.sum(dy**-2.0) if fit_mean or center_data else 0)
    expected = {
        "standard": z,
        "model": z / (1 - z),
        "log": -np.log1p(-z),
        "psd": 0.5 * np.sum((residual / dy) ** 2) * z,
    }[normalization]
    result = clperiod.lombscargle(
        t,
        grid,
        y,
        dy,
        nterms=2,
        algorithm=algorithm,
        fit_mean=fit_mean,
        center_data=center_data,
        normalization=normalization,
        periodogram=True,
        top_k=2,
        device=cpu_device,
    )
    # 1e-9 of the peak in standard powers; model powers z / (1 - z) move up to 10x more here
    bound = 1e-8 * np.max(expected)
    np.testing.assert_allclose(result.power[0], expected, rtol=0, atol=bound)
    assert_peaks_follow_the_periodogram(result)


@pytest.mark.parametrize("algorithm, precision", [("direct", "fp64"), ("nufft", "fp32")])
def test_a_corrected_bin_can_win_the_peak(cpu_device, algorithm, precision):
    """A slow trend: the exact best frequency is the lowest bin, which the
    transforms' fp32 normal equations (nterms = 2) put below the second."""
    rng = np.random.default_rng(4)
    t = 58000 + np.sort(rng.uniform(0, 100, 200))
    y = 0.02 * (t - t.mean()) ** 2 / 100 + 0.05 * np.sin(2 * np.pi * t / 3.1)
    y += rng.normal(0, 0.05, t.size)
    dy = np.full(t.size, 0.05)
    grid = FrequencyGrid(0.1 / np.ptp(t), 0.2 / np.ptp(t), 400)
    expected = lstsq_powers_float64(t, y, dy, grid.frequencies(), 2)
    result = clperiod.lombscargle(
        t, grid, y, dy, nterms=2, algorithm=algorithm, precision=precision, device=cpu_device
    )
    assert np.argmax(expected) == 0
    assert result.frequency_best[0] == grid.fmin
    assert abs(result.power_best[0] - expected[0]) <= BOUND[precision] * expected[0]


@pytest.mark.parametrize(
    "algorithm, precision", [("direct", "fp64"), ("nufft", "fp64"), ("nufft", "fp32")]
)
def test_a_corrected_bin_can_lose_the_peak(cpu_device, algorithm, precision):
    """13 points and three harmonics: the normal equations of the lowest bins
    gave powers above the true peak (at f T = 4.1; direct sums: a standard
    power of 1.17)."""
    rng = np.random.default_rng(34)
    n = int(rng.integers(12, 40))
    t = 58000 + np.sort(rng.uniform(0, 100, n))
    y = rng.uniform(0, 0.3) * (t - t.mean()) / 100
    y += 0.1 * np.sin(2 * np.pi * t / rng.uniform(2, 20)) + rng.normal(0, 0.05, n)
    dy = np.full(n, 0.05)
    grid = FrequencyGrid(0.02 / np.ptp(t), 0.02 / np.ptp(t), 300)
    expected = lstsq_powers_float64(t, y, dy, grid.frequencies(), 3)
    result = clperiod.lombscargle(
        t,
        grid,
        y,
        dy,
        nterms=3,
        algorithm=algorithm,
        precision=precision,
        top_k=4,
        device=cpu_device,
    )
    assert result.frequency_best[0] == grid.frequencies()[np.argmax(expected)]
    assert abs(result.power_best[0] - expected.max()) <= BOUND[precision] * expected.max()


def short_catalog(rng, n_objects=1000):
    """Survey-like objects: 20 to 120 points over 80 to 100 d, a sinusoid in noise."""
    curves = []
    for _ in range(n_objects):
        n, baseline = int(rng.integers(20, 120)), rng.uniform(80, 100)
        t = 58000 + np.sort(rng.uniform(0, baseline, n))
        y = 0.3 * np.sin(2 * np.pi * t / rng.uniform(0.3, 10)) + rng.normal(0, 0.3, n)
        curves.append((t, y, rng.uniform(0.2, 0.4, n)))
    return Catalog.from_lightcurves(curves)


@pytest.mark.parametrize("nterms", [1, 2])
def test_a_short_catalog_from_two_steps_recomputes_nothing(nterms, monkeypatch):
    """fmin = 2 df (df = 1 / (5 T)): no bin of the direct path is recomputed,
    and deciding that costs two estimated fits per object, the top rung of
    its ladder (f T_eff = 0.75 nterms) and the last (the first at or below
    the grid's first frequency), and the rungs between for the objects that
    walk (none with one term)."""
    catalog = short_catalog(np.random.default_rng(2))
    grid = FrequencyGrid(2 * 0.2 / 100, 0.2 / 100, 5000)
    evaluated = []
    original = lowfreq.exact_fits

    def counted(points, objects, frequencies, *args, **kwargs):
        evaluated.append(frequencies)
        return original(points, objects, frequencies, *args, **kwargs)

    monkeypatch.setattr(lowfreq, "exact_fits", counted)
    fits = lowfreq.low_frequency_fits(
        catalog,
        grid,
        lowfreq.Model(nterms, True, True, True),
        fp64=True,
        tolerance=None,
        eps=lowfreq.DIRECT_EPS[True],
    )
    assert not fits.any()
    n = catalog.n_objects
    top = lowfreq.WALK_LIMIT * nterms / lowfreq.effective_baselines(catalog)
    np.testing.assert_array_equal(evaluated[0][:n], top)
    last = evaluated[0][n:]
    assert last.size == n
    assert np.all(last <= grid.fmin) and np.all(last * lowfreq.LADDER_STEP > grid.fmin)
    # objects whose last rung is not within the bound of the top rung's power walk
    rungs = np.round(np.log(top / last) / np.log(lowfreq.LADDER_STEP)) + 1
    walked = sum(f.size for f in evaluated[1:])
    assert walked <= np.sum(rungs - 1) and (nterms > 1 or walked == 0)


@pytest.mark.parametrize("fit_mean", [True, False])
@pytest.mark.parametrize("nterms", [1, 2, 3])
def test_device_estimates_equal_the_host_ones(cpu_device, nterms, fit_mean):
    """The cutoffs' fits estimated on a device (Gram matrices summed by the
    kernel) equal the host's, and so do the cutoffs."""
    catalog = short_catalog(np.random.default_rng(5), n_objects=60)
    model = lowfreq.Model(nterms, fit_mean, True, True)
    points = lowfreq.fit_points(catalog, min_points=model.min_points, center=True, use_dy=True)
    objects = np.flatnonzero(points.ok)
    frequencies = np.geomspace(0.01, 2.0, objects.size) * nterms / 100
    queue = get_queue(cpu_device)
    host = lowfreq.exact_fits(points, objects, frequencies, nterms, fit_mean, accurate=False)
    device = lowfreq._DeviceFits(queue, points, nterms, fit_mean)(objects, frequencies)
    np.testing.assert_allclose(device.power, host.power, rtol=0, atol=1e-13)
    np.testing.assert_allclose(device.amplification, host.amplification, rtol=1e-9)
    options = dict(fp64=True, tolerance=None, eps=lowfreq.DIRECT_EPS[True])
    lowest = 0.02 / 100
    np.testing.assert_array_equal(
        lowfreq.low_frequency_cutoffs(catalog, model, lowest, queue=queue, **options),
        lowfreq.low_frequency_cutoffs(catalog, model, lowest, **options),
    )


@pytest.mark.slow
@pytest.mark.parametrize("nterms", [1, 2])
@pytest.mark.parametrize("algorithm, precision", PATHS)
def test_only_the_recomputed_bins_change(monkeypatch, cpu_device, algorithm, precision, nterms):
    """Objects of several baselines on one grid: each object's bins below its
    cutoff take the exact powers, all others keep the device's values
    bit for bit (a search with no bin recomputed), and the peaks follow."""
    if algorithm == "direct" and precision == "fp32" and nterms > 1:
        pytest.skip("the direct multi-term path is fp64 only")
    rng = np.random.default_rng(5)
    curves = []
    for n, baseline in ((12, 20), (40, 100), (300, 1000), (20000, 1000)):
        t = 58000 + np.sort(rng.uniform(0, baseline, n))
        curves.append((t, np.sin(0.7 * t) + rng.normal(0, 0.3, n), rng.uniform(0.2, 0.4, n)))
    catalog = Catalog.from_lightcurves(curves)
    grid = FrequencyGrid(1e-4, 2e-4, 3000)
    options = dict(
        nterms=nterms,
        algorithm=algorithm,
        precision=precision,
        periodogram=True,
        top_k=5,
        normalization="psd",
        device=cpu_device,
    )
    result = clperiod.lombscargle(catalog, grid, **options)
    fp64 = precision == "fp64"
    tolerance = None if algorithm == "direct" else BOUND[precision] * TRANSFORM_MARGIN[fp64]
    fits = lowfreq.low_frequency_fits(
        catalog,
        grid,
        lowfreq.Model(nterms, True, True, True),
        fp64=fp64,
        tolerance=tolerance,
        eps=BOUND[precision],
    )
    monkeypatch.setattr(
        lowfreq,
        "low_frequency_cutoffs",
        lambda catalog, *args, **kwargs: np.zeros(catalog.n_objects),
    )
    plain = clperiod.lombscargle(catalog, grid, **options)
    assert fits.stop[0] > 2  # the 20-day object's lowest bins are recomputed
    for row, stop in enumerate(fits.stop):
        np.testing.assert_array_equal(result.power[row, stop:], plain.power[row, stop:])
        assert stop == 0 or np.any(result.power[row, :stop] != plain.power[row, :stop])
    assert_peaks_follow_the_periodogram(result)


@pytest.mark.parametrize("algorithm", ["direct", "nufft"])
def test_frequency_arrays_evaluate_each_frequency_as_alone(cpu_device, algorithm):
    """Whether a frequency's power is recomputed, and its value, do not depend
    on the other frequencies of the grid."""
    t, y, dy = probe_light_curves()[0]
    frequencies = np.geomspace(0.005, 3.0, 40)[::-1] / np.ptp(t)
    array = FrequencyGrid.from_frequencies(frequencies)
    options = dict(algorithm=algorithm, periodogram=True, device=cpu_device)
    together = clperiod.lombscargle(t, array, y, dy, **options).power[0]
    expected = lstsq_powers_float64(t, y, dy, frequencies, 1)
    np.testing.assert_allclose(together, expected, rtol=0, atol=1e-9)
    cutoff = lowfreq.low_frequency_cutoffs(
        Catalog.from_single(t, y, dy),
        lowfreq.Model(1, True, True, True),
        frequencies[-1],
        fp64=True,
        tolerance=None if algorithm == "direct" else 1e-12,
        eps=1e-9,
    )[0]
    assert 0 < np.sum(frequencies < cutoff) < frequencies.size
    for k in range(0, frequencies.size, 3):
        grid = FrequencyGrid(frequencies[k], 1.0, 1)
        alone = clperiod.lombscargle(t, grid, y, dy, **options).power[0, 0]
        if frequencies[k] < cutoff:
            assert together[k] == alone
        else:  # a grid of one frequency runs the uniform grids' kernel
            assert abs(together[k] - alone) < 1e-12


def test_single_light_curve_functions(cpu_device):
    t, y, dy = probe_light_curves()[0]
    grid = FrequencyGrid(0.02 / np.ptp(t), 0.04 / np.ptp(t), 30)
    expected = lstsq_powers(t, y, dy, grid.frequencies()[:6], 3)
    power = multiterm_power(t, y, dy, grid, 3, device=cpu_device)
    np.testing.assert_allclose(power[:6], expected, rtol=0, atol=1e-10)
    curves = np.stack([y, y[::-1], -y])
    maxima = multiterm_max_power(t, curves, dy, grid, 3, device=cpu_device)
    each = [np.nanmax(multiterm_power(t, c, dy, grid, 3, device=cpu_device)) for c in curves]
    np.testing.assert_array_equal(maxima, each)


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_direct_powers_do_not_depend_on_the_grid_length(monkeypatch, cpu_device, precision):
    """The one-term direct path merges peaks from a search of the grid's first
    bins: the kernel gives those bins the same values in any grid length."""
    monkeypatch.setattr(
        lowfreq,
        "low_frequency_cutoffs",
        lambda catalog, *args, **kwargs: np.zeros(catalog.n_objects),
    )
    rng = np.random.default_rng(8)
    curves = []
    for n in (15, 300, 20000):
        t = 2.46e6 + np.sort(rng.uniform(0, 50, n))
        curves.append((t, np.sin(2.1 * t) + rng.normal(0, 0.3, n), rng.uniform(0.2, 0.4, n)))
    catalog = Catalog.from_lightcurves(curves)
    for fmin in (0.0, 1e-3):
        long = clperiod.lombscargle(
            catalog,
            FrequencyGrid(fmin, 4e-3, 20000),
            precision=precision,
            periodogram=True,
            device=cpu_device,
        )
        head = clperiod.lombscargle(
            catalog,
            FrequencyGrid(fmin, 4e-3, 37),
            precision=precision,
            periodogram=True,
            device=cpu_device,
        )
        np.testing.assert_array_equal(head.power, long.power[:, :37])


def test_many_peaks_below_the_cutoff_come_from_whole_periodograms(monkeypatch, cpu_device):
    """fp32 and 64 peaks: the kernel keeps no more, so the peaks among the
    recomputed bins could not be merged; the periodograms are searched whole."""
    from clperiod.periodograms import lombscargle as module

    searched = []
    whole = module._exact_periodograms

    def counted(*args):
        searched.append(args[1].n_objects)
        return whole(*args)

    monkeypatch.setattr(module, "_exact_periodograms", counted)
    rng = np.random.default_rng(9)
    t = 58000 + np.sort(rng.uniform(0, 10, 25))
    y, dy = np.sin(2 * np.pi * t / 0.9) + rng.normal(0, 0.3, t.size), np.full(t.size, 0.3)
    grid = FrequencyGrid(1e-4, 1e-3, 4000)  # f T from 0.001, 0.01 apart
    result = clperiod.lombscargle(
        t, grid, y, dy, precision="fp32", periodogram=True, top_k=64, device=cpu_device
    )
    assert searched
    expected = lstsq_powers_float64(t, y, dy, grid.frequencies(), 1)
    assert np.max(np.abs(result.power[0] - expected)) <= BOUND["fp32"] * expected.max()
    assert_peaks_follow_the_periodogram(result)


@pytest.mark.parametrize("algorithm, precision", PATHS)
def test_peaks_on_log_spaced_frequencies(cpu_device, algorithm, precision):
    """Arrays: the exact powers of the lowest frequencies enter the peaks
    (local maxima along rising frequency) as on uniform grids."""
    t, y, dy = probe_light_curves()[0]
    y = y + 0.01 * (t - t.mean())  # a trend: the best frequencies are the lowest
    frequencies = np.geomspace(0.002, 40.0, 300) / np.ptp(t)
    array = FrequencyGrid.from_frequencies(frequencies)
    result = clperiod.lombscargle(
        t,
        array,
        y,
        dy,
        algorithm=algorithm,
        precision=precision,
        periodogram=True,
        top_k=4,
        device=cpu_device,
    )
    expected = lstsq_powers_float64(t, y, dy, frequencies, 1)
    assert np.max(np.abs(result.power[0] - expected)) <= BOUND[precision] * expected.max()
    assert result.frequency_best[0] == frequencies[np.argmax(expected)]
    assert_peaks_follow_the_periodogram(result)


def test_float32_exact_bins_from_the_device_equal_the_host_ones(cpu_device):
    """The exact bins of a float32 search may come from the device's normal
    equations where well conditioned: within 1e-10 of the host's fits."""
    catalog = short_catalog(np.random.default_rng(8), n_objects=80)
    model = lowfreq.Model(2, True, True, True)
    grid = FrequencyGrid(0.02 / 100, 0.02 / 100, 200)
    cutoff = np.full(catalog.n_objects, 0.3 / 100)
    host = lowfreq.exact_bins(catalog, grid, model, cutoff)
    device = lowfreq.exact_bins(catalog, grid, model, cutoff, get_queue(cpu_device))
    assert host.power.shape == device.power.shape and host.power.shape[1] > 5
    np.testing.assert_array_equal(np.isnan(device.power), np.isnan(host.power))
    np.testing.assert_allclose(device.power, host.power, rtol=0, atol=1e-10)


def test_effective_baselines_read_at_most_spread_rows_per_object():
    """All rows of short objects; an even spread of SPREAD_ROWS rows of long
    ones: within 5 % of all rows' spread for evenly spread times, and below
    it (a higher ladder top: more conservative) where a few points lie far
    from the bunch."""
    rng = np.random.default_rng(11)
    short = [np.sort(rng.uniform(0, 50, 30)) for _ in range(3)]
    even = np.sort(rng.uniform(0, 400, 10_000))
    bunched = np.sort(np.concatenate([rng.uniform(0, 10, 9950), rng.uniform(0, 400, 50)]))
    curves = [(t, np.sin(t), np.ones_like(t)) for t in [*short, even, bunched]]
    catalog = Catalog.from_lightcurves(curves)
    every = np.array([min(np.ptp(t), np.sqrt(12) * np.std(t)) for t, _, _ in curves])
    got = lowfreq.effective_baselines(catalog)
    np.testing.assert_allclose(got[:3], every[:3], rtol=1e-12)
    np.testing.assert_allclose(got[3], every[3], rtol=0.05)
    assert got[4] < every[4] < 0.5 * np.ptp(bunched)


def test_the_least_effective_baselines_bound_the_estimates(monkeypatch):
    """T min(1, sqrt(6 / n)) is the least spread of n times over T (two at
    the ends, the rest at the mean); grids that start above every ladder's
    highest possible top need no spread at all."""
    rng = np.random.default_rng(3)
    t = np.concatenate([[0.0], np.full(98, 50.0), [100.0]])
    curves = [(t, rng.normal(size=100), np.ones(100))]
    curves += [(np.sort(rng.uniform(0, 100, 40)), rng.normal(size=40), np.ones(40))]
    catalog = Catalog.from_lightcurves(curves)
    least = lowfreq.least_effective_baselines(catalog)
    np.testing.assert_allclose(least[0], np.sqrt(12) * np.std(t), rtol=1e-12)
    assert np.all(lowfreq.effective_baselines(catalog) >= least)

    def refused(catalog):
        raise AssertionError("effective_baselines called")

    monkeypatch.setattr(lowfreq, "effective_baselines", refused)
    highest = lowfreq.WALK_LIMIT / least.min()
    cutoff = lowfreq.low_frequency_cutoffs(
        catalog,
        lowfreq.Model(1, True, True, True),
        1.01 * highest,
        fp64=True,
        tolerance=None,
        eps=1e-9,
    )
    np.testing.assert_array_equal(cutoff, 0.0)
