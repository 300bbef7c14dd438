"""``lombscargle(..., algorithm="nufft" | "auto")`` on arrays of frequencies: the type-3
NUFFT of :mod:`clperiod.periodograms.nufft_type3` against exact sums and the direct kernel.

References: :func:`reference.nufft.lombscargle_direct` (float64 sums over ``t - min(t)``)
and, for long or real light curves, clperiod's direct kernel in fp64 (within ~1e-13 of the
peak of the exact sums, ``test_lombscargle_frequencies.py``). Bounds (issue 22, at the
default ``eps``), relative to the reference's peak power: 1e-9 (fp64), 1e-5 (fp32).
Arrays reach down to ``0.5 / T`` (``T`` the baseline): far below ``1 / T`` nearly
singular normal equations amplify the transforms' error, on uniform grids as here.
Light curves start at raw MJD epochs unless noted.
"""

from __future__ import annotations

import importlib

import functools

import numpy as np
import pyopencl as cl
import pytest

import clperiod
from clperiod import Catalog, FrequencyArray, FrequencyGrid, Status, lombscargle
from clperiod.engine.devices import get_queue
from clperiod.engine.staging import Staging
from clperiod.io import load_example
from clperiod.periodograms import algorithm, nufft, nufft_type3
from clperiod.periodograms import lombscargle as LS_MODULE
from clperiod.testing import sinusoid_lightcurve
from reference import nufft as ref

NORMALIZATIONS = ("standard", "model", "log", "psd")
#: (fit_mean, center_data)
CENTRING = ((True, True), (True, False), (False, True), (False, False))
#: issue 22: powers within this fraction of the peak of the exact ones at the default eps
BOUND = {"fp64": 1e-9, "fp32": 1e-5}


# {{{ light curves, arrays, references


@functools.cache
def light_curve(n: int, seed: int = 5043, baseline: float = 300.0, epoch: float = 6e4):
    """A sinusoid of period 2.7 d with noise, ``dy`` in [0.1, 0.3], from ``epoch``."""
    return sinusoid_lightcurve(np.random.default_rng(seed), n, 2.7, baseline=baseline,
                               epoch=epoch, mean=12.0, amplitude=0.4, phase=0.3, noise=0.3,
                               dy=(0.1, 0.3))


def object_of(name: str, row: int = 0):
    """``(t, y, dy)`` of one object of a bundled catalog (``dy`` None when it has none)."""
    catalog = load_example(name)
    rows = slice(catalog.offsets[row], catalog.offsets[row + 1])
    return catalog.t[rows], catalog.y[rows], None if catalog.dy is None else catalog.dy[rows]


def array_of(kind: str, baseline: float, fmax: float, n: int = 2000) -> np.ndarray:
    """Frequencies from ``0.5 / baseline`` to ``fmax``, of one kind."""
    rng = np.random.default_rng(17)
    fmin = 0.5 / baseline
    log = np.geomspace(fmin, fmax, n)
    if kind == "period":  # uniform in period
        return 1 / np.linspace(1 / fmax, 1 / fmin, n)
    if kind == "log":
        return log
    if kind == "unsorted":
        return rng.permutation(np.concatenate([log[::2], 1 / np.linspace(1 / fmax, 1 / fmin,
                                                                          n // 2)]))
    if kind == "duplicated":
        return rng.permutation(np.concatenate([log, log[::5], log[-3:], [0.0, 0.0]]))
    if kind == "clustered":  # zooms about a few frequencies over a coarse background
        centres = rng.uniform(20 * fmin, fmax, 5)
        zooms = [c + np.linspace(-3, 3, n // 10) / baseline for c in centres]
        return np.concatenate([*zooms, np.linspace(fmin, fmax, n // 2)])
    raise ValueError(kind)


def exact_power(t, y, dy, frequencies, **options) -> np.ndarray:
    return ref.lombscargle_direct(t, y, dy, frequencies, **options)


def nufft_power(t, y, dy, frequencies, **options) -> np.ndarray:
    grid = FrequencyGrid.from_frequencies(frequencies)
    assert isinstance(grid, FrequencyArray)
    return lombscargle(t, grid, y, dy, algorithm="nufft", periodogram=True, **options).power[0]


def peak_error(power: np.ndarray, expected: np.ndarray) -> float:
    """``max |power - expected| / max |expected|`` (the same NaNs required)."""
    np.testing.assert_array_equal(np.isnan(power), np.isnan(expected))
    return float(np.nanmax(np.abs(power - expected)) / np.nanmax(np.abs(expected)))


@pytest.fixture
def type3_searches(monkeypatch):
    """The number of objects each call of ``nufft_type3.search`` evaluates."""
    seen = []
    original = nufft_type3.search

    def recording(info, catalog, *args, **kwargs):
        seen.append(catalog.n_objects)
        return original(info, catalog, *args, **kwargs)

    monkeypatch.setattr(nufft_type3, "search", recording)
    return seen


# }}}

# {{{ the method's parts


def test_prescale_series_is_the_inverse_kernel_transform():
    for precision in ("fp64", "fp32"):
        width, beta = nufft_type3.kernel_params(None, precision == "fp64")
        theta = np.linspace(-np.pi / 2, np.pi / 2, 4001)
        x = 2 * (2 * theta / np.pi) ** 2 - 1
        series = np.polynomial.chebyshev.chebval(x, nufft_type3.prescale_coefficients(width,
                                                                                      beta))
        exact = 1 / nufft.kernel_fourier_transform(theta, width, beta)
        assert np.max(np.abs(series / exact - 1)) < 1e-13


@pytest.mark.parametrize(("precision", "fp64_math"), [("fp64", True), ("fp32", True),
                                                       ("fp32", False)])
def test_prescale_kernel_divides_the_strengths_by_the_kernel_transform(cpu_device, precision,
                                                                       fp64_math):
    """fp32 kernels compute the factors in float64 where the device has it."""
    t, y, dy = light_curve(400)
    catalog = Catalog.from_single(t, y, dy)
    plan = nufft_type3.Type3Plan.build(array_of("log", np.ptp(t), 5.0), np.ptp(t), precision)
    prepared = nufft.prepare(catalog, plan.inner, fit_mean=True, center_data=True, use_dy=True)
    queue = get_queue(cpu_device)
    staging = Staging(cpu_device)
    points = nufft.upload_points(staging, prepared, True)
    staging.send(queue)
    nufft_type3.prescale(queue, points, plan, t.size, fp64_math=fp64_math)
    weights = np.empty_like(prepared.weights)
    values = np.empty_like(prepared.weighted_values)
    cl.enqueue_copy(queue, weights, points.weights)
    cl.enqueue_copy(queue, values, points.weighted_values)
    staging.release()
    theta = 2 * np.pi * (plan.step * (t - t[0]) - 0.25)
    factor = 1 / nufft.kernel_fourier_transform(theta, plan.width, plan.beta)
    rtol = {("fp64", True): 1e-13, ("fp32", True): 1.2e-7, ("fp32", False): 2e-6}[
        (precision, fp64_math)]
    np.testing.assert_allclose(weights, prepared.weights * factor, rtol=rtol)
    np.testing.assert_allclose(values, prepared.weighted_values * factor, rtol=rtol)


def test_lattice_reaches_twice_the_highest_harmonic_and_mirrors_below_zero():
    baseline = 250.0
    frequencies = np.array([0.0, 0.001, 0.3, 2.0])
    for nterms in (1, 3):
        plan = nufft_type3.Type3Plan.build(frequencies, baseline, nterms=nterms)
        step, width = 1 / (2 * baseline), plan.width
        assert plan.step == step and width == 14 and plan.first == 0
        assert plan.inner.grid.df == step and plan.inner.grid.fmin == 0
        assert plan.inner.grid.nf == np.ceil(2 * nterms * 2.0 / step + width / 2) + 1
        first, offset = plan.targets()
        assert first.shape == offset.shape == (2 * nterms, frequencies.size)
        positions = np.arange(1, 2 * nterms + 1)[:, None] * frequencies / step
        np.testing.assert_array_equal(first, np.ceil(positions - width / 2))
        np.testing.assert_allclose(first - offset, positions, rtol=1e-15)
        assert first[0, 0] == -7  # mirrored below 0
        assert first[-1, -1] + width - 1 < plan.inner.grid.nf  # in the lattice
        assert np.all((offset >= -width / 2) & (offset < 1 - width / 2))
    # a band far from 0 starts its lattice below its lowest frequency
    band = nufft_type3.Type3Plan.build(np.array([1.0, 1.5, 1.7]), baseline, "fp32")
    assert band.first == np.floor(1.0 / step - band.width / 2) and band.width == 8
    assert band.targets()[0][0, 0] == 0


def test_plan_rejects_bad_input():
    with pytest.raises(ValueError, match="precision"):
        nufft_type3.Type3Plan.build(np.array([0.1, 0.2]), 10.0, "fp16")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="nterms"):
        nufft_type3.Type3Plan.build(np.array([0.1, 0.2]), 10.0, nterms=0)
    with pytest.raises(ValueError, match="distinct and rising"):
        nufft_type3.Type3Plan.build(np.array([0.2, 0.1]), 10.0)
    with pytest.raises(ValueError, match="one above 0"):
        nufft_type3.Type3Plan.build(np.array([0.0]), 10.0)
    with pytest.raises(ValueError, match=r"needs \d+ samples .*use algorithm='direct'"):
        nufft_type3.Type3Plan.build(np.array([0.1, 1e9]), 1e3)


# }}}

# {{{ against exact sums


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize("kind", ["period", "log", "unsorted", "duplicated", "clustered"])
def test_kinds_of_arrays_meet_the_bound(kind, precision):
    t, y, dy = light_curve(300)
    frequencies = array_of(kind, np.ptp(t), 5.0)
    power = nufft_power(t, y, dy, frequencies, precision=precision)
    expected = exact_power(t, y, dy, frequencies)
    assert peak_error(power, expected) <= BOUND[precision]
    assert frequencies[np.nanargmax(power)] == frequencies[np.nanargmax(expected)]


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize("normalization", NORMALIZATIONS)
def test_every_normalization_meets_the_bound(normalization, precision):
    t, y, dy = light_curve(200)
    frequencies = array_of("unsorted", np.ptp(t), 3.0, 1500)
    options = dict(normalization=normalization)
    power = nufft_power(t, y, dy, frequencies, precision=precision, **options)
    assert power.dtype == (np.float64 if precision == "fp64" else np.float32)
    assert peak_error(power, exact_power(t, y, dy, frequencies, **options)) <= BOUND[precision]


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize(("fit_mean", "center_data"), CENTRING)
def test_every_model_meets_the_bound(fit_mean, center_data, precision):
    t, y, dy = light_curve(200)
    frequencies = array_of("period", np.ptp(t), 3.0, 1500)
    options = dict(fit_mean=fit_mean, center_data=center_data)
    power = nufft_power(t, y, dy, frequencies, precision=precision, **options)
    assert peak_error(power, exact_power(t, y, dy, frequencies, **options)) <= BOUND[precision]


def test_standard_method_is_scipys_unweighted_form():
    t, y, _ = light_curve(150)
    frequencies = array_of("log", np.ptp(t), 4.0, 1000)
    power = nufft_power(t, y, None, frequencies, method="standard", normalization="psd")
    expected = exact_power(t, y, None, frequencies, fit_mean=False, center_data=False,
                           normalization="psd")
    assert peak_error(power, expected) <= BOUND["fp64"]


REAL = [  # (catalog, object, shortest and longest period)
    ("ida", 0, 1 / 30, 1.0),            # raw JD epochs, no dy
    ("8205_errors", 0, 1 / 6, 20.0),
    ("stripe82", 0, 0.2, 2.0),          # raw MJD epochs, RR Lyrae
    ("stripe82", 77, 0.2, 2.0),
]


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize(("name", "row", "shortest", "longest"), REAL)
def test_real_light_curves_meet_the_bound(name, row, shortest, longest, precision):
    t, y, dy = object_of(name, row)
    frequencies = 1 / np.linspace(shortest, longest, 3000)  # uniform in period
    grid = FrequencyGrid.from_frequencies(frequencies)
    for normalization in ("standard", "psd"):
        power = nufft_power(t, y, dy, frequencies, precision=precision,
                            normalization=normalization)
        expected = lombscargle(t, grid, y, dy, normalization=normalization,
                               periodogram=True).power[0]
        # Ida's 28 points in fp32 reach 1.05e-5 of the peak on an H100 (float32 VkFFT)
        bound = BOUND[precision] * (2 if (name, precision) == ("ida", "fp32") else 1)
        assert peak_error(power, expected) <= bound, normalization
        assert np.nanargmax(power) == np.nanargmax(expected)


def test_stripe82_catalog_rows_meet_the_bound_of_single_objects():
    """Objects of different baselines share the lattice of the longest."""
    catalog = load_example("stripe82").slice(0, 12)
    assert np.ptp(catalog.baselines()) > 100
    frequencies = array_of("log", float(np.min(catalog.baselines())), 5.0, 2500)
    grid = FrequencyGrid.from_frequencies(frequencies)
    fast = lombscargle(catalog, grid, algorithm="nufft", periodogram=True, top_k=3)
    direct = lombscargle(catalog, grid, periodogram=True, top_k=3)
    np.testing.assert_array_equal(fast.status, direct.status)
    np.testing.assert_array_equal(fast.frequency_best, direct.frequency_best)
    for row in range(catalog.n_objects):
        t, y, dy = object_of("stripe82", row)
        assert peak_error(fast.power[row], exact_power(t, y, dy, frequencies)) <= BOUND["fp64"]


POINT_COUNTS = (10, 100, 1000, 10_000, 100_000)


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize("n", [pytest.param(n, marks=[pytest.mark.slow] * (n >= 100_000))
                               for n in POINT_COUNTS])
def test_point_counts_meet_the_bound_against_the_direct_kernel(n, precision):
    t, y, dy = light_curve(n, baseline=1000.0)
    frequencies = array_of("unsorted", 1000.0, 2.0, 2000)
    grid = FrequencyGrid.from_frequencies(frequencies)
    direct = lombscargle(t, grid, y, dy, periodogram=True).power[0]
    power = lombscargle(t, grid, y, dy, algorithm="nufft", precision=precision,
                        periodogram=True).power[0]
    assert peak_error(power, direct) <= BOUND[precision]
    assert np.nanargmax(power) == np.nanargmax(direct)


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_mjd_offset_and_units_leave_the_powers_unchanged(precision):
    t, y, dy = light_curve(300, epoch=0.0)
    frequencies = array_of("clustered", np.ptp(t), 5.0)
    power = nufft_power(t, y, dy, frequencies, precision=precision)
    moved = nufft_power(t + 6e4, 1e3 * y - 17.0, 1e3 * dy, frequencies, precision=precision)
    assert peak_error(moved, power) <= BOUND[precision]


def test_eps_sets_the_accuracy():
    t, y, dy = light_curve(300)
    frequencies = array_of("log", np.ptp(t), 5.0)
    expected = exact_power(t, y, dy, frequencies)
    errors = {eps: peak_error(nufft_power(t, y, dy, frequencies, eps=eps), expected)
              for eps in (1e-3, 1e-6, None)}
    assert errors[1e-3] <= 1e-3 and errors[1e-6] <= 1e-6 and errors[None] <= BOUND["fp64"]
    assert errors[1e-3] > errors[1e-6] > errors[None]
    assert nufft_type3.kernel_params(1e-3, True)[0] < nufft_type3.kernel_params(None, True)[0]


# }}}

# {{{ result object: frequencies, peaks, statuses


def test_zero_frequency_is_nan_and_never_a_peak():
    t, _, dy = light_curve(80)
    y = 0.01 * (t - t[0]) + np.random.default_rng(3).normal(0, 0.2, t.size)  # low f highest
    frequencies = np.array([0.3, 0.0, 0.004, 0.2, 0.0, 0.05, 0.5])
    for precision in ("fp64", "fp32"):
        result = lombscargle(t, FrequencyGrid.from_frequencies(frequencies), y, dy,
                             algorithm="nufft", precision=precision, periodogram=True, top_k=2)
        direct = lombscargle(t, FrequencyGrid.from_frequencies(frequencies), y, dy,
                             precision=precision, top_k=2)
        zero = frequencies == 0
        assert np.isnan(result.power[0, zero]).all()
        assert np.isfinite(result.power[0, ~zero]).all()
        np.testing.assert_array_equal(result.top_k_frequency, direct.top_k_frequency)
        assert result.frequency_best[0] != 0


def test_peaks_periodogram_columns_and_statuses_are_the_direct_paths():
    lcs = [light_curve(n, seed=n) for n in (60, 150, 400)]
    t = np.linspace(0.0, 10.0, 30)
    lcs.insert(1, (t, np.full(30, 3.0), np.full(30, 0.1)))  # constant: ZERO_VARIANCE
    lcs.insert(3, (t[:3], np.array([1.0, 2.0, 0.5]), np.full(3, 0.1)))  # TOO_FEW_POINTS
    catalog = Catalog.from_lightcurves(lcs, ids=list("abcde"))
    frequencies = array_of("duplicated", 300.0, 4.0)
    grid = FrequencyGrid.from_frequencies(frequencies)
    for precision in ("fp64", "fp32"):
        options = dict(periodogram=True, top_k=5, precision=precision)
        fast = lombscargle(catalog, grid, algorithm="nufft", **options)
        direct = lombscargle(catalog, grid, **options)
        assert list(fast.status) == [Status.OK, Status.ZERO_VARIANCE, Status.OK,
                                     Status.TOO_FEW_POINTS, Status.OK]
        ok = fast.status == Status.OK
        assert np.isnan(fast.power[~ok]).all() and np.isnan(fast.top_k_power[~ok]).all()
        assert fast.power.shape == (5, frequencies.size) and fast.grid is grid
        np.testing.assert_array_equal(fast.top_k_frequency[ok], direct.top_k_frequency[ok])
        np.testing.assert_allclose(fast.top_k_power[ok], direct.top_k_power[ok],
                                   rtol=BOUND[precision])
        for row in np.flatnonzero(ok):
            assert peak_error(fast.power[row], direct.power[row]) <= BOUND[precision]
        np.testing.assert_allclose(fast.false_alarm_probability(),
                                   direct.false_alarm_probability(),
                                   rtol=1e-6 if precision == "fp64" else 1e-2)


def test_repeated_frequencies_get_the_same_power():
    t, y, dy = light_curve(200)
    frequencies = array_of("duplicated", np.ptp(t), 4.0)
    power = nufft_power(t, y, dy, frequencies)
    distinct, positions = np.unique(frequencies, return_inverse=True)
    first = np.full(distinct.size, -1)
    first[positions[::-1]] = np.arange(frequencies.size)[::-1]
    np.testing.assert_array_equal(power, power[first[positions]])


def test_host_preparation_gives_the_device_preparation_result(cpu_device):
    """Devices without fp64 prepare the points on the host (fp32 plans)."""
    catalog = Catalog.from_lightcurves([light_curve(n, seed=n) for n in (80, 300)])
    plan = nufft_type3.Type3Plan.build(array_of("log", 300.0, 4.0), 300.0, "fp32")
    without_fp64 = type(cpu_device)(**{**cpu_device.__dict__, "fp64": False})
    runs = []
    for info in (cpu_device, without_fp64):
        power = np.empty((2, plan.nf), np.float32)
        peaks = nufft_type3.search(info, catalog, plan, fit_mean=True, center_data=True,
                                   use_dy=True, normalization="standard", top_k=2,
                                   periodograms=power)
        runs.append((power, peaks))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=0, atol=1e-6)
    np.testing.assert_array_equal(runs[0][1].indices, runs[1][1].indices)


def test_batches_and_pieces_of_frequencies_give_the_whole_result(monkeypatch):
    catalog = Catalog.from_lightcurves([light_curve(n, seed=n) for n in (300, 2, 500, 90)])
    frequencies = array_of("unsorted", 300.0, 4.0)
    grid = FrequencyGrid.from_frequencies(frequencies)
    options = dict(algorithm="nufft", top_k=4, periodogram=True)
    whole = lombscargle(catalog, grid, **options)
    n_distinct = np.unique(frequencies).size
    monkeypatch.setattr(LS_MODULE, "_nufft_pieces", lambda *args: [
        (0, 500), (500, 501), (501, 1200), (1200, n_distinct)])
    info = clperiod.select_devices()[0]
    tiny = type(info)(**{**info.__dict__, "global_mem": 4_000_000, "max_alloc": 2_000_000})
    monkeypatch.setattr(LS_MODULE, "select_devices", lambda _: [tiny])
    split = lombscargle(catalog, grid, **options)
    np.testing.assert_array_equal(split.status, whole.status)
    np.testing.assert_array_equal(split.top_k_frequency, whole.top_k_frequency)
    np.testing.assert_allclose(split.top_k_power, whole.top_k_power, rtol=1e-9)
    ok = whole.status == Status.OK
    np.testing.assert_allclose(split.power[ok], whole.power[ok], rtol=0,
                               atol=1e-9 * np.nanmax(whole.power))


def test_pieces_of_a_large_array_fit_the_budget():
    frequencies = np.geomspace(0.001, 4.0, 20_000)
    plan = nufft_type3.Type3Plan.build(frequencies, 300.0)
    options = LS_MODULE._Options.build("generalized", "standard", None, None, "fp64", "auto",
                                       1, True, 1)
    whole = LS_MODULE.held_bytes(LS_MODULE._nufft_buffers(plan, options), 1, 500)
    budget = LS_MODULE.MemoryBudget(total=whole - 8 * 20_000, max_alloc=1 << 30, device="x")
    pieces = LS_MODULE._nufft_pieces(plan, np.array([500]), options, budget)
    assert len(pieces) == 2 and pieces[0] == (0, 10_000) and pieces[-1][1] == 20_000


# }}}

# {{{ several harmonics (nterms > 1)


def harmonic_light_curve(n: int, period: float, seed: int, baseline: float = 100.0):
    """Three harmonics plus noise, ``dy`` in [0.1, 0.3], from MJD 60000."""
    rng = np.random.default_rng(seed)
    t = 6e4 + np.sort(rng.uniform(0, baseline, n))
    phase = 2 * np.pi * t / period
    y = (12 + 0.5 * np.sin(phase) + 0.3 * np.cos(2 * phase + 0.4) + 0.2 * np.sin(3 * phase)
         + rng.normal(0, 0.2, n))
    return t, y, rng.uniform(0.1, 0.3, n)


@functools.cache
def harmonic_catalog():
    curves = [harmonic_light_curve(n, p, n) for n, p in [(150, 3.1), (90, 0.71), (40, 2.2)]]
    return curves, Catalog.from_lightcurves(curves)


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize("nterms", [2, 3])
def test_multi_term_arrays_meet_the_bound(nterms, precision):
    """From 1 / T on, as on uniform grids (below, the normal equations are ill-conditioned)."""
    curves, catalog = harmonic_catalog()
    frequencies = array_of("unsorted", 100.0, 5.0, 1500)
    frequencies = frequencies[frequencies >= 1 / np.min(catalog.baselines())]
    result = lombscargle(catalog, FrequencyGrid.from_frequencies(frequencies), nterms=nterms,
                         algorithm="nufft", precision=precision, periodogram=True, top_k=2)
    assert result.nterms == nterms and result.power.dtype == np.dtype(
        np.float64 if precision == "fp64" else np.float32)
    for row, (t, y, dy) in enumerate(curves):
        expected = exact_power(t, y, dy, frequencies, nterms=nterms)
        assert peak_error(result.power[row], expected) <= BOUND[precision], row
        assert result.frequency_best[row] == frequencies[np.nanargmax(expected)]


@pytest.mark.parametrize("normalization", NORMALIZATIONS)
@pytest.mark.parametrize(("fit_mean", "center_data"), CENTRING)
def test_multi_term_models_and_normalizations_meet_the_bound(fit_mean, center_data,
                                                            normalization):
    t, y, dy = harmonic_light_curve(120, 1.9, 5)
    frequencies = array_of("period", np.ptp(t), 5.0, 1000)
    frequencies = frequencies[frequencies >= 1 / np.ptp(t)]
    options = dict(fit_mean=fit_mean, center_data=center_data, normalization=normalization)
    power = nufft_power(t, y, dy, frequencies, nterms=2, **options)
    expected = exact_power(t, y, dy, frequencies, nterms=2, **options)
    assert peak_error(power, expected) <= BOUND["fp64"]


def test_multi_term_statuses_follow_the_unknowns_and_auto_takes_the_nufft(type3_searches):
    """Objects need 2 K + 2 points with fit_mean; arrays of several harmonics have no
    direct catalog path, so "auto" runs them all through the NUFFT."""
    curves, _ = harmonic_catalog()
    short = harmonic_light_curve(7, 2.0, 3)  # 4 points suffice for one term, 8 for K = 3
    catalog = Catalog.from_lightcurves([curves[0], short])
    grid = FrequencyGrid.from_frequencies(array_of("log", 100.0, 3.0, 500))
    auto = lombscargle(catalog, grid, nterms=3, algorithm="auto", periodogram=True)
    fast = lombscargle(catalog, grid, nterms=3, algorithm="nufft", periodogram=True)
    assert type3_searches == [2, 2]
    assert list(fast.status) == [Status.OK, Status.TOO_FEW_POINTS]
    assert np.isnan(fast.power[1]).all() and np.isfinite(fast.power[0]).all()
    np.testing.assert_array_equal(auto.power, fast.power)
    one_term = lombscargle(catalog, grid, algorithm="nufft")
    assert list(one_term.status) == [Status.OK, Status.OK]


# }}}

# {{{ algorithm="auto"


def test_auto_takes_the_type3_nufft_where_it_pays(type3_searches):
    t, y, dy = light_curve(3000)
    frequencies = array_of("log", np.ptp(t), 5.0, 20_000)
    grid = FrequencyGrid.from_frequencies(frequencies)
    auto = lombscargle(t, grid, y, dy, algorithm="auto", periodogram=True)
    assert type3_searches == [1]
    # a short light curve on a few frequencies: direct sums
    short, few = light_curve(20), array_of("log", 300.0, 5.0, 300)
    lombscargle(*short[:1], FrequencyGrid.from_frequencies(few), *short[1:], algorithm="auto")
    assert type3_searches == [1]
    nufft_run = lombscargle(t, grid, y, dy, algorithm="nufft", periodogram=True)
    np.testing.assert_array_equal(auto.power, nufft_run.power)


def test_prefers_type3_by_the_cost_model(monkeypatch):
    cpu = algorithm.COSTS["cpu"]
    monkeypatch.setattr(algorithm, "COSTS", {"gpu": cpu, "cpu": cpu})  # any device: CPU costs
    devices = clperiod.select_devices()
    nf, n_grid, width = 100_000, 200_000, 14
    lengths = np.array([10, 0, *[30] * 5, 100_000])
    assert algorithm.prefers_type3(lengths, nf, n_grid, width, devices).tolist() == (
        [False] * 7 + [True])
    assert not algorithm.prefers_type3(np.array([20]), 300, 200_000, width, devices).any()
    costs = algorithm.COSTS["cpu"]
    n = np.array([1000.0])
    assert costs.type3(n, nf, n_grid, width)[0] < costs.direct_array(n, nf)[0]
    assert costs.type3(np.array([0.0]), nf, n_grid, width)[0] == 0.0


def test_auto_mixes_both_paths_in_one_call(monkeypatch):
    catalog = Catalog.from_lightcurves([light_curve(n, seed=n) for n in (400, 2, 30, 600)])
    grid = FrequencyGrid.from_frequencies(array_of("period", 300.0, 4.0))
    by_nufft = np.array([True, False, False, True])
    monkeypatch.setattr(LS_MODULE, "prefers_type3", lambda *args: by_nufft)
    options = dict(top_k=3, periodogram=True, normalization="psd")
    mixed = lombscargle(catalog, grid, algorithm="auto", **options)
    fast = lombscargle(catalog, grid, algorithm="nufft", **options)
    direct = lombscargle(catalog, grid, algorithm="direct", **options)
    assert mixed.status.tolist() == direct.status.tolist()
    for rows, expected in ((by_nufft, fast), (~by_nufft, direct)):
        np.testing.assert_array_equal(mixed.power[rows], expected.power[rows])
        np.testing.assert_array_equal(mixed.top_k_frequency[rows], expected.top_k_frequency[rows])


def test_auto_sums_directly_where_the_lattice_is_too_large(monkeypatch, type3_searches):
    t, y, dy = light_curve(100)
    grid = FrequencyGrid.from_frequencies(array_of("log", np.ptp(t), 5.0, 500))
    monkeypatch.setattr(nufft_type3, "MAX_LATTICE", 1000)
    auto = lombscargle(t, grid, y, dy, algorithm="auto", periodogram=True)
    np.testing.assert_array_equal(auto.power, lombscargle(t, grid, y, dy, periodogram=True).power)
    with pytest.raises(ValueError, match=r"lattice .* use algorithm='direct'"):
        lombscargle(t, grid, y, dy, algorithm="nufft")
    assert type3_searches == []


# }}}

# {{{ bad input


def test_bad_input_is_an_error():
    t, y, dy = light_curve(50)
    grid = FrequencyGrid.from_frequencies(array_of("log", np.ptp(t), 5.0, 100))
    with pytest.raises(ValueError, match="eps must be a finite number"):
        lombscargle(t, grid, y, dy, algorithm="nufft", eps=0.0)
    with pytest.raises(ValueError, match=r"nterms=2.*direct path need evenly spaced") as refused:
        lombscargle(t, grid, y, dy, nterms=2)
    named = str(refused.value).split()[-1]  # the function it points to exists
    module, _, function = named.rpartition(".")
    assert callable(getattr(importlib.import_module(module), function))
    with pytest.raises(ValueError, match="no frequency above 0"):
        lombscargle(t, FrequencyGrid.from_frequencies([0.0, 0.0]), y, dy, algorithm="nufft")
    for bad, error, message in (([0.1, -0.2], ValueError, "finite and >= 0"),
                                ([0.1, np.nan], ValueError, "finite and >= 0"),
                                ([], ValueError, "must not be empty"),
                                ([[0.1, 0.2]], ValueError, "1-D")):
        with pytest.raises(error, match=message):
            lombscargle(t, FrequencyGrid.from_frequencies(bad), y, dy, algorithm="nufft")


# }}}
