"""PDM, conditional entropy and phase-binned AOV on the device (clperiod.pdm,
clperiod.conditional_entropy, clperiod.aov) against the NumPy references
(tests/reference/{pdm,conditional_entropy,aov}.py), which fold about t = 0: the device folds
about each object's first observation, so the references get t - t.min()."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import clperiod
from clperiod import Catalog, FrequencyGrid, Status
from clperiod.periodograms import multiterm, phase_statistics
from peers import load_p4j
from reference import aov as ref_aov
from reference import conditional_entropy as ref_ce
from reference import light_curves as lc
from reference import pdm as ref_pdm
from two_devices import run_on_two_devices

GRID = FrequencyGrid(0.05, 0.0011, 1500)  # up to 1.7 per day, 5 samples per 1/T of 180 d
MJD = 58000.0
needs_p4j = pytest.mark.skipif(load_p4j() is None, reason="P4J is not installed")


def lightcurve(seed: int, n: int = 140, shape=lc.sawtooth, period: float = 0.5772):
    """A light curve on raw MJD epochs (240 nights over 300 days) with errors varying by a
    factor of 4."""
    t, y, dy = shape(seed, period, n=n, baseline=300.0, noise=0.3)
    dy = dy * np.random.default_rng(seed).uniform(0.5, 2.0, n)
    return t + MJD, y, dy


def one(t, y, dy=None) -> Catalog:
    return Catalog.from_arrays(np.zeros(t.size, int), t, y, dy)


def top_peaks(values, k, minimum):
    """Indices of the ``k`` best local extrema (strictly better than the left neighbour, not
    worse than the right one; outside the grid and NaN count as worst), best first."""
    ranked = -values if minimum else values
    padded = np.concatenate([[-np.inf], np.nan_to_num(ranked, nan=-np.inf), [-np.inf]])
    peaks = np.flatnonzero((padded[1:-1] > padded[:-2]) & (padded[1:-1] >= padded[2:]))
    return peaks[np.argsort(-ranked[peaks], kind="stable")][:k]


def assert_matches(result, expected, minimum, rtol=1e-9, row=0, k=3):
    """The periodogram, the best value and the top-k peaks of row ``row`` equal ``expected``.

    Peaks of equal value may come in either order (the conditional entropy of different
    counts can be equal, and rounding then orders them), so the peaks are compared by
    value, and each reported frequency must carry its value in ``expected``."""
    np.testing.assert_allclose(result.statistic[row], expected, rtol=rtol, atol=0)
    peaks = top_peaks(expected, k, minimum)
    frequencies = result.grid.frequencies()
    found = [np.flatnonzero(frequencies == f)[0] for f in result.top_k_frequency[row]]
    np.testing.assert_allclose(result.top_k_statistic[row], expected[peaks], rtol=rtol)
    np.testing.assert_allclose(expected[found], expected[peaks], rtol=rtol)
    assert result.frequency_best[row] == result.top_k_frequency[row, 0]
    assert result.statistic_best[row] == result.top_k_statistic[row, 0]
    assert result.status[row] == Status.OK


# {{{ equal to the references in fp64


@pytest.mark.parametrize(("n_bins", "n_covers"), [(10, 1), (8, 3), (5, 2), (16, 1)])
@pytest.mark.parametrize("with_dy", [True, False])
def test_pdm_equals_the_reference(n_bins, n_covers, with_dy):
    t, y, dy = lightcurve(n_bins + n_covers)
    dy = dy if with_dy else None
    result = clperiod.pdm(one(t, y, dy), GRID, n_bins=n_bins, n_covers=n_covers, top_k=3,
                          periodogram=True)
    expected = ref_pdm.pdm(t - t.min(), y, dy, GRID.frequencies(), n_bins, n_covers)
    assert_matches(result, expected, minimum=True)
    assert result.best == "minimum" and result.method == "pdm"
    assert result.parameters == {"n_bins": n_bins, "n_covers": n_covers, "weighted": with_dy}


@pytest.mark.parametrize("n_bins", [3, 10, 16])
@pytest.mark.parametrize("with_dy", [True, False])
def test_aov_equals_the_reference(n_bins, with_dy):
    t, y, dy = lightcurve(n_bins, shape=lc.eclipsing_binary, period=2.7183)
    dy = dy if with_dy else None
    result = clperiod.aov(one(t, y, dy), GRID, n_bins=n_bins, top_k=3, periodogram=True)
    expected = ref_aov.aov(t - t.min(), y, dy, GRID.frequencies(), n_bins)
    assert_matches(result, expected, minimum=False)
    assert result.best == "maximum"


@pytest.mark.parametrize(("phase_bins", "magnitude_bins"), [(10, 5), (8, 10), (20, 3), (2, 1)])
def test_conditional_entropy_equals_the_reference(phase_bins, magnitude_bins):
    t, y, dy = lightcurve(phase_bins, shape=lc.transit, period=3.1416)
    result = clperiod.conditional_entropy(one(t, y, dy), GRID, phase_bins=phase_bins,
                                          magnitude_bins=magnitude_bins, top_k=3,
                                          periodogram=True)
    expected = ref_ce.conditional_entropy(t - t.min(), y, GRID.frequencies(), phase_bins,
                                          magnitude_bins)
    if magnitude_bins == 1:  # one cell per phase bin: H_c = 0 everywhere, one peak
        np.testing.assert_array_equal(result.statistic[0], 0.0)
        assert result.frequency_best[0] == GRID.fmin and np.isnan(result.top_k_statistic[0, 1])
        return
    assert_matches(result, expected, minimum=True)


def test_weighting_can_be_turned_off():
    t, y, dy = lightcurve(3)
    cat = one(t, y, dy)
    for search, reference in ((clperiod.pdm, ref_pdm.pdm), (clperiod.aov, ref_aov.aov)):
        result = search(cat, GRID, weighted=False, periodogram=True)
        expected = reference(t - t.min(), y, None, GRID.frequencies())
        np.testing.assert_allclose(result.statistic[0], expected, rtol=1e-9)
        assert result.parameters["weighted"] is False


def test_a_ragged_catalog_equals_its_objects_alone():
    """One launch of objects of 20 to 230 points (raw MJD, different epochs): every row
    equals the reference of that object."""
    curves = [lightcurve(seed, n=n, period=p)
              for seed, n, p in ((1, 20, 0.41), (2, 230, 1.3), (3, 75, 7.7), (4, 160, 0.9))]
    curves[2] = (curves[2][0] + 1234.5, *curves[2][1:])
    cat = Catalog.from_lightcurves(curves)
    frequency = GRID.frequencies()
    searches = [
        (clperiod.pdm, {"n_bins": 6, "n_covers": 2}, ref_pdm.pdm, True),
        (clperiod.aov, {"n_bins": 6}, ref_aov.aov, False),
    ]
    for search, options, reference, minimum in searches:
        result = search(cat, GRID, top_k=2, periodogram=True, **options)
        for row, (t, y, dy) in enumerate(curves):
            expected = reference(t - t.min(), y, dy, frequency, *options.values())
            assert_matches(result, expected, minimum, row=row, k=2)
    result = clperiod.conditional_entropy(cat, GRID, phase_bins=6, top_k=2, periodogram=True)
    for row, (t, y, _) in enumerate(curves):
        expected = ref_ce.conditional_entropy(t - t.min(), y, frequency, 6, 5)
        assert_matches(result, expected, minimum=True, row=row, k=2)


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_frequency_arrays_equal_the_reference(precision):
    """Unsorted frequencies with a repeat and a 0 (NaN there): the columns follow the
    array; fp32 within the tolerance of test_fp32_follows_fp64_on_a_survey_catalog."""
    t, y, dy = lightcurve(5, shape=lc.eclipsing_binary, period=2.7183)
    rng = np.random.default_rng(6)
    frequency = rng.uniform(0.05, 1.7, 900)
    frequency[[10, 20]] = frequency[30]
    frequency[5] = 0.0
    grid = FrequencyGrid.from_frequencies(frequency)
    assert isinstance(grid, clperiod.FrequencyArray)
    positive = np.where(frequency > 0, frequency, 1.0)
    tau = t - t.min()
    rtol = 1e-9 if precision == "fp64" else 3e-5
    searches = [
        (clperiod.pdm(one(t, y, dy), grid, n_covers=2, periodogram=True, precision=precision),
         ref_pdm.pdm(tau, y, dy, positive, 10, 2)),
        (clperiod.aov(one(t, y, dy), grid, periodogram=True, precision=precision),
         ref_aov.aov(tau, y, dy, positive)),
        (clperiod.conditional_entropy(one(t, y), grid, periodogram=True, precision=precision),
         ref_ce.conditional_entropy(tau, y, positive)),
    ]
    for result, expected in searches:
        expected[5] = np.nan
        assert result.grid is grid
        close = np.isclose(result.statistic[0], expected, rtol=rtol, atol=0)
        assert np.isnan(result.statistic[0, 5])
        assert np.mean(close[frequency > 0]) > (0.999 if precision == "fp32" else 1 - 1e-12)
        best = np.nanargmin(expected) if result.best == "minimum" else np.nanargmax(expected)
        assert result.frequency_best[0] == frequency[best]


@needs_p4j
def test_pdm_equals_p4j_where_no_bin_holds_two_points():
    """P4J's PDM1 (weighted, one cover) drops bins of 2 points, which 240 points in 8 bins
    never have. P4J folds fmodf(t, 1 / f) f in float32, which moves points of times up to
    a year across bin edges at a few frequencies, and sums in float32."""
    from P4J.algorithms.phase_dispersion_minimization import PDM

    t, y, dy = (a.astype(np.float32) for a in lightcurve(15, n=240))
    t -= t.min()  # float32-exact times from 0: both fold the same times
    frequency = GRID.frequencies().astype(np.float32)
    peer = PDM(t, y, dy, 8)
    theirs = np.array([peer.eval_frequency(f) for f in frequency])
    grid = FrequencyGrid.from_frequencies(frequency.astype(np.float64))
    ours = clperiod.pdm(one(t, y, dy), grid, n_bins=8, periodogram=True).statistic[0]
    assert np.mean(np.isclose(ours, theirs, rtol=1e-5, atol=0)) > 0.99
    assert np.argmin(ours) == np.argmin(theirs)


# }}}
# {{{ fp32


def survey_catalog(n_objects: int, seed: int = 7):
    """ZTF-like objects on raw MJD epochs: 100 to 250 nightly points over 3 years, errors
    varying by a factor of 3; eclipsing binaries, transits, sawtooth curves and pure noise."""
    rng = np.random.default_rng(seed)
    shapes = (lc.eclipsing_binary, lc.transit, lc.sawtooth, None)
    curves = []
    for k in range(n_objects):
        n = int(rng.integers(100, 250))
        period = float(np.exp(rng.uniform(np.log(0.3), np.log(20.0))))
        shape = shapes[k % len(shapes)]
        t, y, dy = (shape or lc.sawtooth)(seed + k, period, n=n, baseline=1100.0, noise=0.2,
                                           epoch=float(rng.uniform(0, period)))
        if shape is None:
            y = 15.0 + 0.2 * rng.normal(size=n)
        dy = dy * rng.uniform(0.6, 1.8, n)
        curves.append((t + MJD, y, dy))
    return Catalog.from_lightcurves(curves)


@pytest.mark.slow
@pytest.mark.parametrize("search", [clperiod.pdm, clperiod.aov, clperiod.conditional_entropy])
def test_fp32_follows_fp64_on_a_survey_catalog(search):
    """fp32 folds raw MJD epochs to ~1e-7 cycles and sums to ~1e-7 relative: 99.9 % of the
    values within 1e-5 of fp64 (the rest: a point within ~1e-7 cycles of a bin edge, in
    another bin), and the same best frequency for 99 % of the objects."""
    cat = survey_catalog(48)
    grid = FrequencyGrid(0.05, 5e-4, 6000)
    fp64 = search(cat, grid, periodogram=True)
    fp32 = search(cat, grid, periodogram=True, precision="fp32")
    assert fp32.precision == "fp32" and fp32.statistic.dtype == np.float64
    relative = np.abs(fp32.statistic - fp64.statistic) / np.abs(fp64.statistic)
    assert np.mean(relative[np.isfinite(relative)] < 1e-5) > 0.999
    assert np.median(relative[np.isfinite(relative)]) < 1e-6
    assert np.mean(fp32.frequency_best == fp64.frequency_best) >= 0.99
    np.testing.assert_array_equal(fp32.status, Status.OK)


def test_fp32_blocks_of_a_long_grid(monkeypatch):
    """Grids longer than a block are evaluated block by block; fp32 then folds each block
    from its first frequency. Blocks of 254 bins give the unblocked result."""
    t, y, dy = lightcurve(8)
    cat = one(t, y, dy)
    whole = clperiod.pdm(cat, GRID, top_k=4, periodogram=True, precision="fp32")
    monkeypatch.setattr(multiterm, "_MAX_BLOCK", 256)
    blocked = clperiod.pdm(cat, GRID, top_k=4, periodogram=True, precision="fp32")
    np.testing.assert_allclose(blocked.statistic, whole.statistic, rtol=2e-6)
    np.testing.assert_array_equal(blocked.top_k_frequency, whole.top_k_frequency)
    expected = ref_pdm.pdm(t - t.min(), y, dy, GRID.frequencies())
    np.testing.assert_allclose(blocked.statistic[0], expected, rtol=2e-5)


# }}}
# {{{ known answers, invariances, statuses


def test_noiseless_step_curves():
    """A two-level square wave folded at its period: every bin holds one level (PDM theta
    0, AOV theta infinite or at the reciprocal of rounding, conditional entropy 0)."""
    rng = np.random.default_rng(3)
    t = MJD + np.sort(rng.uniform(0, 100, 300))
    y = np.where(((t - t.min()) / 2.5) % 1.0 < 0.5, 16.0, 15.0)
    grid = FrequencyGrid(0.4, 1e-3, 1)
    cat = one(t, y)
    assert clperiod.pdm(cat, grid).statistic_best[0] < 1e-13
    assert clperiod.aov(cat, grid).statistic_best[0] > 1e13
    assert clperiod.conditional_entropy(cat, grid).statistic_best[0] == 0.0
    assert clperiod.pdm(cat, grid, precision="fp32").statistic_best[0] < 1e-5


@pytest.mark.parametrize("scale", [-3.0, 7.0])
def test_invariant_to_units_offsets_and_epochs(scale):
    t, y, dy = lightcurve(9)
    base = [search(one(t, y, dy), GRID, periodogram=True).statistic
            for search in (clperiod.pdm, clperiod.aov, clperiod.conditional_entropy)]
    moved = [search(one(t + 6e4, scale * y + 1e4, abs(scale) * dy), GRID,
                    periodogram=True).statistic
             for search in (clperiod.pdm, clperiod.aov, clperiod.conditional_entropy)]
    for before, after in zip(base, moved, strict=True):
        np.testing.assert_allclose(after, before, rtol=1e-9)


def test_fp32_takes_values_beyond_its_range():
    """Values and errors of 1e35 (their squares overflow float32) are scaled on the host."""
    t, y, dy = lightcurve(16)
    for search in (clperiod.pdm, clperiod.aov, clperiod.conditional_entropy):
        base = search(one(t, y, dy), GRID, periodogram=True, precision="fp32").statistic
        huge = search(one(t, 1e35 * y, 1e35 * dy), GRID, periodogram=True,
                      precision="fp32").statistic
        assert np.isfinite(huge).all()
        assert np.mean(np.isclose(huge, base, rtol=1e-5)) > 0.999


def test_statuses_and_neighbours():
    """Objects that cannot be searched get NaN and a status; the others are unaffected."""
    t, y, dy = lightcurve(10, n=60)
    rows = [
        (t, y, dy),                                   # OK
        (t[:10], y[:10], dy[:10]),                    # 10 points, 10 bins: TOO_FEW_POINTS
        (t, np.full(t.size, 15.0), dy),               # ZERO_VARIANCE
        (np.full(t.size, MJD), y, dy),                # ZERO_BASELINE
        (t, np.where(np.arange(t.size) == 3, np.nan, y), dy),  # NOT_FINITE
        (t, y, np.where(np.arange(t.size) == 4, -1.0, dy)),     # BAD_UNCERTAINTY
    ]
    ids = np.repeat(np.arange(len(rows)), [r[0].size for r in rows])
    cat = Catalog(ids=np.arange(len(rows)),
                  offsets=np.concatenate([[0], np.cumsum([r[0].size for r in rows])]),
                  t=np.concatenate([r[0] for r in rows]), y=np.concatenate([r[1] for r in rows]),
                  dy=np.concatenate([r[2] for r in rows]))
    assert ids.size == cat.t.size
    expected = [Status.OK, Status.TOO_FEW_POINTS, Status.ZERO_VARIANCE, Status.ZERO_BASELINE,
                Status.NOT_FINITE, Status.BAD_UNCERTAINTY]
    for search in (clperiod.pdm, clperiod.aov, clperiod.conditional_entropy):
        result = search(cat, GRID, top_k=2, periodogram=True)
        wanted = list(expected)
        if search is clperiod.conditional_entropy:
            wanted[5] = Status.OK  # dy is not used
        np.testing.assert_array_equal(result.status, wanted)
        failed = result.status != Status.OK
        assert np.isnan(result.statistic[failed]).all()
        assert np.isnan(result.statistic_best[failed]).all()
        assert np.isnan(result.top_k_frequency[failed]).all()
        alone = search(one(t, y, dy), GRID, top_k=2, periodogram=True)
        np.testing.assert_array_equal(result.statistic[0], alone.statistic[0])
        np.testing.assert_array_equal(result.top_k_frequency[0], alone.top_k_frequency[0])


def test_frequency_zero_is_nan_and_the_result_names():
    t, y, dy = lightcurve(11)
    grid = FrequencyGrid(0.0, 0.002, 800)
    for search in (clperiod.pdm, clperiod.aov, clperiod.conditional_entropy):
        result = search(one(t, y, dy), grid, top_k=2, periodogram=True)
        assert np.isnan(result.statistic[0, 0]) and np.isfinite(result.statistic[0, 1:]).all()
        assert result.power is result.statistic
        assert result.power_best is result.statistic_best
        assert result.top_k_power is result.top_k_statistic
        np.testing.assert_array_equal(result.period, 1 / result.frequency_best)
        without = search(one(t, y, dy), grid, top_k=2)
        assert without.statistic is None
        np.testing.assert_array_equal(without.top_k_statistic, result.top_k_statistic)


def test_an_empty_object_and_a_list_of_light_curves():
    t, y, dy = lightcurve(12)
    cat = Catalog(ids=np.arange(2), offsets=np.array([0, 0, t.size]), t=t, y=y, dy=dy)
    result = clperiod.aov(cat, GRID)
    assert list(result.status) == [Status.TOO_FEW_POINTS, Status.OK]
    from_list = clperiod.aov([(t, y, dy)], GRID)
    assert from_list.frequency_best[0] == result.frequency_best[1]


# }}}
# {{{ bad input


@pytest.mark.parametrize(("search", "options", "error", "name"), [
    (clperiod.pdm, {"n_bins": 1}, ValueError, "n_bins"),
    (clperiod.pdm, {"n_bins": 2.5}, TypeError, "n_bins"),
    (clperiod.pdm, {"n_covers": 0}, ValueError, "n_covers"),
    (clperiod.pdm, {"weighted": "yes"}, TypeError, "weighted"),
    (clperiod.aov, {"n_bins": 1}, ValueError, "n_bins"),
    (clperiod.aov, {"top_k": 0}, ValueError, "top_k"),
    (clperiod.aov, {"top_k": 65}, ValueError, "top_k"),
    (clperiod.aov, {"precision": "fp16"}, ValueError, "precision"),
    (clperiod.aov, {"periodogram": "no"}, TypeError, "periodogram"),
    (clperiod.conditional_entropy, {"phase_bins": 0}, ValueError, "phase_bins"),
    (clperiod.conditional_entropy, {"magnitude_bins": 0}, ValueError, "magnitude_bins"),
    (clperiod.conditional_entropy, {"magnitude_bins": 5000}, ValueError, "magnitude_bins"),
])
def test_bad_options_name_the_argument(search, options, error, name):
    t, y, dy = lightcurve(13, n=40)
    with pytest.raises(error, match=name):
        search(one(t, y, dy), GRID, **options)


def test_bad_catalogs_and_grids():
    t, y, _ = lightcurve(14, n=40)
    with pytest.raises(TypeError, match="catalog"):
        clperiod.pdm((t, y), GRID)
    with pytest.raises(TypeError, match="grid"):
        clperiod.pdm(one(t, y), GRID.frequencies())
    with pytest.raises(ValueError, match="above 0"):
        clperiod.pdm(one(t, y), FrequencyGrid(0.0, 1.0, 1))


def test_bins_beyond_local_memory(cpu_device):
    """The work-group shrinks until the histograms fit; bins that do not fit one trial
    frequency raise, naming the statistic."""
    statistic = phase_statistics._Statistic("pdm", "pdm", 50, 5, 1, True, 11, {"n_bins": 10})
    small = dataclasses.replace(cpu_device, local_mem=8 * 1024)
    # 3 sums of 50 fine bins, 8 bytes each, and 24 bytes of staged point: 1224 per frequency
    assert phase_statistics._work_group_size(small, statistic, True, False) == 4
    tiny = dataclasses.replace(cpu_device, local_mem=1000)
    with pytest.raises(ValueError, match=r"pdm .* local memory"):
        phase_statistics._work_group_size(tiny, statistic, True, False)


# }}}
# {{{ several devices

SEARCHES = {
    "pdm": (clperiod.pdm, {"n_bins": 8, "n_covers": 2}),
    "aov": (clperiod.aov, {"n_bins": 6}),
    "conditional_entropy": (clperiod.conditional_entropy, {"magnitude_bins": 4}),
}
FIELDS = ("frequency_best", "statistic_best", "top_k_frequency", "top_k_statistic", "status")


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize("name", sorted(SEARCHES))
def test_two_workers_of_one_device_equal_one(monkeypatch, name, precision):
    """Objects spread over two workers of one device (several batches, objects that are not
    OK among them) give the results of one device, periodograms included."""
    curves = [lightcurve(k, n=30 + 9 * k) for k in range(9)]
    curves[4] = (curves[4][0][:5], curves[4][1][:5], curves[4][2][:5])  # TOO_FEW_POINTS
    cat = Catalog.from_lightcurves(curves)
    search, options = SEARCHES[name]
    grid = FrequencyGrid(0.05, 0.0011, 400)
    one_device = search(cat, grid, top_k=3, periodogram=True, precision=precision, **options)
    info = clperiod.select_devices()[0]
    monkeypatch.setattr(phase_statistics, "select_devices", lambda _: [info, info])
    spread = search(cat, grid, top_k=3, periodogram=True, precision=precision, **options)
    assert spread.devices == [info.label] * 2
    assert one_device.status[4] == Status.TOO_FEW_POINTS
    for field in (*FIELDS, "statistic"):
        np.testing.assert_array_equal(getattr(spread, field), getattr(one_device, field))


TWO_DEVICES = r"""
import json
import numpy as np
import clperiod
from clperiod import Catalog, FrequencyArray, FrequencyGrid

devices = clperiod.select_devices("cpu")
rng = np.random.default_rng(3)
lcs = []
for k in range(24):
    n = int(rng.integers(15, 150))
    t = np.sort(rng.uniform(0, 300, n)) + 58000.0
    lcs.append((t, np.sin(2 * np.pi * t / (0.4 + k / 7)) + 0.3 * rng.standard_normal(n),
                rng.uniform(0.1, 0.3, n)))
cat = Catalog.from_lightcurves(lcs)
grids = {"uniform": FrequencyGrid.from_range(0.05, 3.0, 3000),
         "array": FrequencyArray(np.geomspace(0.05, 3.0, 1000))}
out = {"n_devices": len(devices)}
for name in ("pdm", "aov", "conditional_entropy"):
    search = getattr(clperiod, name)
    for precision in ("fp64", "fp32"):
        for kind, grid in grids.items():
            one = search(cat, grid, top_k=3, precision=precision, device=devices[:1])
            both = search(cat, grid, top_k=3, precision=precision, device=devices)
            out[f"{name} {precision} {kind}"] = {
                "devices": len(both.devices),
                "same": all(np.array_equal(getattr(one, f), getattr(both, f), equal_nan=True)
                            for f in ("frequency_best", "statistic_best", "top_k_frequency",
                                      "top_k_statistic", "status")),
            }
print(json.dumps(out))
"""


@pytest.mark.slow
def test_two_devices_equal_one():
    out = run_on_two_devices(TWO_DEVICES)
    assert out.pop("n_devices") == 2
    assert len(out) == 12
    assert all(value == {"devices": 2, "same": True} for value in out.values()), out


# }}}
# {{{ injected signals


def injected_curves(shape, count: int, seed: int, noise: float = 0.1):
    """``count`` light curves ``(t, y, dy)`` of one shape, 165 nightly points over 1000
    days on raw MJD epochs, periods 0.3 to 10 days, with white noise ``noise``; and the
    periods.

    S/N is per point: the amplitude (1: the primary eclipse's or the transit's depth, the
    sawtooth's rise) over the noise, 10 by default. Over the whole light curve
    (``light_curves.whole_snr``, the S/N of the true shape against a constant) the same
    curves have S/N 27 to 48, about 38 (docs/design/phase_statistics.md gives the rates at
    a whole-light-curve S/N of 10)."""
    rng = np.random.default_rng(seed)
    curves, periods = [], []
    for k in range(count):
        period = float(np.exp(rng.uniform(np.log(0.3), np.log(10.0))))
        t, y, dy = shape(seed + k, period, n=165, baseline=1000.0, noise=noise,
                         epoch=float(rng.uniform(0, period)))
        curves.append((t + MJD, y, dy))
        periods.append(period)
    return curves, np.array(periods)


def injected(shape, count: int, seed: int):
    """The light curves of :func:`injected_curves` at S/N 10 per point, as a catalog."""
    curves, periods = injected_curves(shape, count, seed)
    return Catalog.from_lightcurves(curves), periods


#: Accepted periods per shape, in units of the true one: PDM, AOV and conditional entropy
#: often fold an eclipsing binary tighter at half its period (both eclipses on one).
ALIASES = {lc.eclipsing_binary: (1.0, 0.5), lc.transit: (1.0,), lc.sawtooth: (1.0,)}


#: The injection tests' grid: to 3.5 per day, 5 samples per 1/T.
INJECTION_GRID = FrequencyGrid(0.09, 2e-4, 17000)


def found_fraction(top_periods, periods, shape):
    """The fraction of objects with the true period (or an accepted alias) among their
    top periods, to half a resolution element."""
    tolerance = periods**2 / (2 * 1000.0)
    found = [any(np.nanmin(np.abs(top_periods[i] - a * periods[i])) < a * a * tolerance[i]
                 for a in ALIASES[shape]) for i in range(periods.size)]
    return np.mean(found)


def recovered_fraction(search, shape, count, seed):
    cat, periods = injected(shape, count, seed)
    top = search(cat, INJECTION_GRID, top_k=3, precision="fp32").top_k_period
    return found_fraction(top, periods, shape)


@pytest.mark.parametrize("shape", [lc.eclipsing_binary, lc.transit, lc.sawtooth])
def test_snr_of_the_injections(shape):
    """Per point S/N 10; over the whole light curve 25 to 50, about 38 (the noiseless
    curves' signal against the noise of the injections)."""
    for count, seed in ((20, 100), (100, 1000)):
        noiseless, _ = injected_curves(shape, count, seed, noise=0.0)
        snr = [lc.whole_snr(y - 15.0, 0.1) for _, y, _ in noiseless]
        assert min(snr) > 25 and max(snr) < 50 and 36 < np.median(snr) < 39


@pytest.mark.slow
@pytest.mark.parametrize("shape", [lc.eclipsing_binary, lc.transit, lc.sawtooth])
def test_injected_signals_recovered(shape):
    for search in (clperiod.pdm, clperiod.aov, clperiod.conditional_entropy):
        assert recovered_fraction(search, shape, 20, 100) >= 0.95


@pytest.mark.slow
@pytest.mark.parametrize("shape", [lc.eclipsing_binary, lc.transit, lc.sawtooth])
@pytest.mark.parametrize("search", [clperiod.pdm, clperiod.aov, clperiod.conditional_entropy])
def test_injected_signals_recovered_on_many_curves(search, shape):
    assert recovered_fraction(search, shape, 100, 1000) >= 0.95


@pytest.mark.slow
@pytest.mark.parametrize("shape", [lc.eclipsing_binary, lc.transit])
def test_bls_recovers_injected_eclipses_and_transits(shape):
    """BLS (``objective="snr"``, boxes of 0.03 to 0.25 days) on the same injections, the
    magnitudes negated so that eclipses and transits are dips, at the grid's periods. The
    sawtooth is no box: BLS finds 90 % of them (docs/design/phase_statistics.md)."""
    curves, periods = injected_curves(shape, 20, 100)
    dips = Catalog.from_lightcurves([(t, -y, dy) for t, y, dy in curves])
    result = clperiod.bls(dips, INJECTION_GRID, [0.03, 0.06, 0.12, 0.25], objective="snr",
                          top_k=3, precision="fp32")
    assert found_fraction(result.top_k_period, periods, shape) >= 0.95


# }}}
