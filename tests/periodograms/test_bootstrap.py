"""Bootstrap false-alarm probabilities (clperiod.periodograms.bootstrap): the device's draws
against the NumPy Philox restatement (tests/reference/philox.py), the FAP against a NumPy
bootstrap with the same draws and the multiband reference (tests/reference/multiband.py)."""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np
import pytest

import clperiod
from clperiod import Catalog, FrequencyGrid, Status
from clperiod.engine.devices import get_queue
from clperiod.periodograms import bootstrap
from clperiod.periodograms.bootstrap import bootstrap_fap, resample
from reference.multiband import MultibandLombScargle
from reference.philox import bootstrap_rows, philox4x32
from two_devices import run_on_two_devices

GRID = FrequencyGrid(0.05, 0.025, 120)
BANDS = ("g", "r", "z")
SEED = 2**40 + 12345  # both key words in use


def lightcurve(seed: int, n: int, amplitude: float, n_bands: int = 3, period: float = 1.7):
    """A multiband light curve on raw MJD epochs: a sinusoid of ``amplitude`` (in units of
    the noise), per-band offsets and uncertainties."""
    rng = np.random.default_rng(seed)
    t = np.sort(60000.0 + rng.uniform(0.0, 20.0, n))
    band = np.asarray(BANDS[:n_bands])[rng.integers(0, n_bands, n)]
    code = np.searchsorted(BANDS, band)
    dy = rng.uniform(0.5, 1.5, n)
    y = 12.0 + 0.7 * code + amplitude * np.sin(2 * np.pi * t / period)
    return t, y + dy * rng.standard_normal(n), dy, band


def catalog(curves, ids=None) -> Catalog:
    ids = np.arange(len(curves)) if ids is None else np.asarray(ids)
    owner = np.repeat(ids, [curve[0].size for curve in curves])
    t, y, dy, band = (np.concatenate(column) for column in zip(*curves, strict=True))
    return Catalog.from_arrays(owner, t, y, dy, band=band)


def owners(cat: Catalog, rows: np.ndarray) -> np.ndarray:
    return np.searchsorted(cat.offsets, rows, side="right") - 1


def multiband_search(**options):
    return functools.partial(clperiod.lombscargle_multiband, grid=GRID, **options)


@pytest.fixture(scope="module")
def mixed() -> Catalog:
    """Three objects, one with an empty band and a band of one row, one without rows."""
    curves = [lightcurve(1, 40, 3.0), lightcurve(2, 25, 1.0, n_bands=2)]
    one_row = (np.array([60001.5]), np.array([20.0]), np.array([0.5]), np.array(["z"]))
    curves[1] = tuple(np.concatenate(pair) for pair in zip(curves[1], one_row, strict=True))
    cat = catalog(curves)
    return Catalog.from_offsets(
        [0, 1, 2], np.append(cat.offsets, cat.offsets[-1]), cat.t, cat.y, cat.dy,
        band=cat.band_labels()[cat.band_codes],
    )


def test_copies_draw_only_rows_of_their_object_and_band(mixed):
    n = 50
    copies = resample(mixed, n, seed=SEED)
    out = copies.catalog
    np.testing.assert_array_equal(out.lengths, np.repeat(mixed.lengths, n))
    source_object = np.repeat(np.arange(mixed.n_objects), mixed.lengths * n)
    np.testing.assert_array_equal(owners(mixed, copies.rows), source_object)
    np.testing.assert_array_equal(mixed.band_codes[copies.rows], out.band_codes)
    template = np.concatenate([np.tile(np.arange(mixed.offsets[k], mixed.offsets[k + 1]), n)
                               for k in range(mixed.n_objects)])
    np.testing.assert_array_equal(out.t, mixed.t[template])
    np.testing.assert_array_equal(out.band_codes, mixed.band_codes[template])
    np.testing.assert_array_equal(out.y, mixed.y[copies.rows])
    np.testing.assert_array_equal(out.dy, mixed.dy[copies.rows])
    single = np.flatnonzero(mixed.y == 20.0)  # the one row of its band
    assert (copies.rows[out.y == 20.0] == single).all() and (out.y == 20.0).sum() == n
    # with replacement: some copy repeats a row, and every row of object 0 is drawn
    first = copies.rows[: mixed.lengths[0]]
    assert np.unique(first).size < first.size
    assert set(copies.rows[source_object == 0]) == set(range(mixed.offsets[1]))
    assert out.bands == mixed.bands and list(out.ids) == list(range(3 * n))


@pytest.mark.parametrize(("counter", "key", "expected"), [
    ([0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
])
def test_the_reference_philox_gives_the_known_answers(counter, key, expected):
    """Random123's known-answer vectors of Philox4x32-10 (also pyopencl's philox.cl)."""
    words = philox4x32([np.array([c], dtype=np.uint64) for c in counter], (key[0], key[1]))
    assert [int(word[0]) for word in words] == expected


@pytest.mark.parametrize("with_bands", [True, False])
def test_draws_equal_the_reference_generator(mixed, with_bands):
    cat = mixed if with_bands else Catalog(mixed.ids, mixed.offsets, mixed.t, mixed.y)
    copies = resample(cat, 7, seed=SEED)
    expected = bootstrap_rows(cat.offsets, cat.band_codes, [0, 1, 2], range(7), SEED)
    np.testing.assert_array_equal(copies.rows, expected)
    assert copies.seed == SEED


def test_draws_are_uniform_within_a_band():
    t = np.arange(10.0)
    band = np.array(["g"] * 5 + ["r"] * 5)
    cat = Catalog.from_arrays(np.zeros(10, int), t, t, band=band)
    rows = resample(cat, 2000, seed=3).rows
    counts = np.bincount(rows, minlength=10)  # 2000 copies x 5 draws per band
    assert np.abs(counts - 2000).max() < 200  # binomial sd 40


def test_draws_do_not_depend_on_seed_reuse_work_group_batch_or_catalog(mixed, cpu_device):
    queue = get_queue(cpu_device)
    objects = np.arange(3)
    full = bootstrap._draw(queue, mixed, objects, 0, 9, SEED)
    for work_group in (1, 5, 32, 128):
        np.testing.assert_array_equal(
            bootstrap._draw(queue, mixed, objects, 0, 9, SEED, work_group), full)
    per_copy = full[: 9 * mixed.lengths[0]].reshape(9, -1)
    part = bootstrap._draw(queue, mixed.subset([0]), np.array([0]), 4, 3, SEED)
    np.testing.assert_array_equal(part.reshape(3, -1), per_copy[4:7])
    alone = bootstrap._draw(queue, mixed.subset([1]), np.array([1]), 0, 9, SEED)
    np.testing.assert_array_equal(alone + mixed.offsets[1],
                                  full[9 * mixed.lengths[0]:].reshape(-1))
    other_seed = bootstrap._draw(queue, mixed, objects, 0, 9, SEED + 1)
    assert (other_seed != full).mean() > 0.5
    moved = bootstrap._draw(queue, mixed.subset([0]), np.array([7]), 0, 9, SEED)
    assert (moved != full[: moved.size]).mean() > 0.5  # the object index is in the counter


def reference_fap(cat: Catalog, n: int, seed: int, **model) -> np.ndarray:
    """The bootstrap FAP of each object from the reference draws and periodograms."""
    rows = bootstrap_rows(cat.offsets, cat.band_codes, list(range(cat.n_objects)), range(n),
                          seed)
    faps, start = [], 0
    for k in range(cat.n_objects):
        t, y, dy, band = cat.lightcurve(k)

        def best(values, errors, t=t, band=band):
            return MultibandLombScargle(t - t.min(), values, band, errors,
                                        **model).power(GRID.frequencies()).max()

        drawn = rows[start: start + n * t.size].reshape(n, t.size)
        start += drawn.size
        maxima = np.array([best(cat.y[copy], cat.dy[copy]) for copy in drawn])
        faps.append((1 + (maxima >= best(y, dy)).sum()) / (1 + n))
    return np.array(faps)


@pytest.mark.slow
def test_fap_equals_a_numpy_bootstrap_with_the_same_draws():
    model = dict(nterms_base=1, nterms_band=0)
    cat = catalog([lightcurve(4, 30, 0.55), lightcurve(5, 36, 0.3), lightcurve(6, 30, 3.0)])
    result = clperiod.lombscargle_multiband(cat, GRID, **model)
    fap = result.false_alarm_probability(39, seed=SEED)
    expected = reference_fap(cat, 39, SEED, **model)
    np.testing.assert_allclose(fap, expected, rtol=1e-12, atol=0)
    assert 0.1 < fap[0] < 0.9 and fap[1] < fap[0] and fap[2] == 1 / 40  # not trivial


def test_a_strong_sinusoid_has_the_smallest_fap_and_noise_does_not():
    cat = catalog([lightcurve(7, 40, 4.0), lightcurve(8, 40, 0.0)])
    result = clperiod.lombscargle_multiband(cat, GRID)
    boot = bootstrap_fap(cat, multiband_search(), n_resamplings=199, seed=1, observed=result)
    assert boot.fap[0] == 1 / 200 and boot.n_exceeding[0] == 0
    assert boot.fap[1] > 0.05
    np.testing.assert_array_equal(boot.n_valid, [199, 199])
    np.testing.assert_array_equal(boot.power_best, result.power_best)


@pytest.mark.slow
def test_faps_of_pure_noise_are_uniform():
    n_objects, n = 150, 39
    cat = catalog([lightcurve(100 + k, 30, 0.0) for k in range(n_objects)])
    fap = bootstrap_fap(cat, multiband_search(nterms_band=0), n_resamplings=n, seed=9).fap
    levels = np.arange(1, n + 2) / (n + 1)
    cdf = (fap[:, None] <= levels + 1e-12).mean(axis=0)
    # Kolmogorov distance to the uniform: 0.13 is the 1 % critical value for 150 draws
    assert np.abs(cdf - levels).max() < 0.13
    assert abs(fap.mean() - 0.5) < 0.08  # sd of the mean 0.024


def test_units_and_band_offsets_do_not_change_the_fap():
    cat = catalog([lightcurve(10, 30, 0.5), lightcurve(11, 30, 0.3)])
    shift = np.array([3.0, -40.0, 1e3])[cat.band_codes]
    moved = Catalog.from_arrays(np.repeat(cat.ids, cat.lengths), cat.t, -1e3 * cat.y + shift,
                                1e3 * cat.dy, band=cat.band_labels()[cat.band_codes])
    search = multiband_search()
    one = bootstrap_fap(cat, search, n_resamplings=29, seed=4)
    other = bootstrap_fap(moved, search, n_resamplings=29, seed=4)
    np.testing.assert_array_equal(one.n_exceeding, other.n_exceeding)
    np.testing.assert_array_equal(one.fap, other.fap)


def test_batches_split_objects_and_resamplings_without_changing_the_result():
    cat = catalog([lightcurve(12, 30, 0.5), lightcurve(13, 28, 0.3), lightcurve(14, 30, 0.8)])
    search = multiband_search()
    whole = bootstrap_fap(cat, search, n_resamplings=21, seed=SEED)
    calls = []

    def counting(copies):
        calls.append(copies.t.size)
        return search(copies)

    split = bootstrap_fap(cat, counting, n_resamplings=21, seed=SEED, max_rows=200)
    np.testing.assert_array_equal(split.n_exceeding, whole.n_exceeding)
    np.testing.assert_array_equal(split.fap, whole.fap)
    assert max(calls[1:]) <= 200 and len(calls) > 9  # calls[0] is the observed search


def test_batches_cover_every_copy_once():
    lengths = np.array([5, 0, 40, 3, 3, 12])
    seen = []
    for batch in bootstrap._batches(lengths, np.array([0, 2, 3, 4, 5]), 10, 60):
        assert (lengths[batch.objects].sum() * batch.count <= 60) or batch.count == 1
        seen += [(k, r) for k in batch.objects for r in range(batch.first,
                                                              batch.first + batch.count)]
    assert sorted(seen) == [(k, r) for k in (0, 2, 3, 4, 5) for r in range(10)]


def test_objects_that_are_not_ok_get_nan_and_their_status():
    t, y, dy, band = lightcurve(15, 30, 4.0)
    flat = np.where(band == "g", 3.0, 5.0)  # constant within each band
    cat = catalog([(t, y, dy, band), (t[:4], y[:4], dy[:4], band[:4]), (t, flat, dy, band)])
    result = clperiod.lombscargle_multiband(cat, GRID)
    fap = result.false_alarm_probability(19, seed=2)
    assert fap[0] == 1 / 20 and np.isnan(fap[1:]).all()
    boot = bootstrap_fap(cat, multiband_search(), n_resamplings=19, seed=2)
    np.testing.assert_array_equal(boot.status, [Status.OK, Status.TOO_FEW_POINTS,
                                                Status.ZERO_VARIANCE])
    np.testing.assert_array_equal(boot.n_valid, [19, 0, 0])


def test_an_ok_status_without_a_finite_power_is_out_of_range():
    cat = catalog([lightcurve(15, 30, 4.0), lightcurve(16, 30, 4.0)])
    observed = SimpleNamespace(power_best=np.array([np.nan, 0.9]), status=np.zeros(2, np.int8))

    def search(copies):
        assert copies.n_objects == 9  # only the second object is resampled
        return clperiod.lombscargle_multiband(copies, GRID)

    boot = bootstrap_fap(cat, search, n_resamplings=9, seed=1, observed=observed)
    assert np.isnan(boot.fap[0]) and boot.status[0] == Status.OUT_OF_RANGE
    assert boot.status[1] == Status.OK and boot.n_valid[1] == 9


def test_a_seed_reproduces_and_none_draws_a_fresh_one():
    cat = catalog([lightcurve(16, 30, 0.4)])
    search = multiband_search()
    first = bootstrap_fap(cat, search, n_resamplings=15)
    again = bootstrap_fap(cat, search, n_resamplings=15, seed=first.seed)
    assert isinstance(first.seed, int) and 0 <= first.seed < 2**64
    np.testing.assert_array_equal(first.n_exceeding, again.n_exceeding)
    assert bootstrap_fap(cat, search, n_resamplings=15).seed != first.seed


def test_any_search_plugs_in():
    """A single-band search (Lomb-Scargle) on a catalog without bands."""
    rng = np.random.default_rng(17)
    t = np.sort(rng.uniform(0, 20, 50))
    y = np.sin(2 * np.pi * t / 1.3) + 0.2 * rng.standard_normal(50)
    cat = Catalog.from_arrays(np.zeros(50, int), t, y)
    search = functools.partial(clperiod.lombscargle, grid=GRID)
    boot = bootstrap_fap(cat, search, n_resamplings=49, seed=5)
    assert boot.fap[0] == 1 / 50 and boot.status[0] == Status.OK


@pytest.mark.parametrize(("options", "error", "match"), [
    (dict(n_resamplings=0), ValueError, "n_resamplings"),
    (dict(n_resamplings=10.0), TypeError, "n_resamplings"),
    (dict(n_resamplings=True), TypeError, "n_resamplings"),
    (dict(seed=-1), ValueError, "seed"),
    (dict(seed=2**64), ValueError, "seed"),
    (dict(seed=1.5), TypeError, "seed"),
    (dict(seed="7"), TypeError, "seed"),
    (dict(max_rows=0), ValueError, "max_rows"),
    (dict(search=None), TypeError, "search must be callable"),
    (dict(catalog=[(np.arange(5.0), np.ones(5))]), TypeError, "catalog must be"),
    (dict(observed=object()), TypeError, "observed must be a search result"),
])
def test_bad_arguments(options, error, match):
    cat = catalog([lightcurve(18, 30, 0.4)])
    arguments = dict(catalog=cat, search=multiband_search(), n_resamplings=3, seed=1)
    arguments.update(options)
    with pytest.raises(error, match=match):
        bootstrap_fap(arguments.pop("catalog"), arguments.pop("search"), **arguments)


def test_a_search_with_the_wrong_number_of_objects_is_refused():
    cat = catalog([lightcurve(19, 30, 0.4), lightcurve(20, 30, 0.4)])
    observed = clperiod.lombscargle_multiband(cat, GRID)

    def first_only(copies):
        return clperiod.lombscargle_multiband(copies.slice(0, 1), GRID)

    with pytest.raises(ValueError, match="search result has"):
        bootstrap_fap(cat, first_only, n_resamplings=3, seed=1, observed=observed)
    with pytest.raises(ValueError, match="observed result has"):
        bootstrap_fap(cat.slice(0, 1), multiband_search(), n_resamplings=3, observed=observed)
    with pytest.raises(ValueError, match="n_resamplings"):
        observed.false_alarm_probability(0)
    with pytest.raises(ValueError, match="copies of"):
        resample(cat, 2**30)


SCRIPT = r"""
import functools, json
import numpy as np
import clperiod
from clperiod.periodograms.bootstrap import bootstrap_fap, resample

devices = clperiod.select_devices("cpu")
assert len(devices) == 2, [d.label for d in devices]
rng = np.random.default_rng(21)
n = 60
t = np.sort(rng.uniform(0, 20, n))
band = np.array(["g", "r"])[rng.integers(0, 2, n)]
y = 0.4 * np.sin(2 * np.pi * t / 1.7) + rng.standard_normal(n)
cat = clperiod.Catalog.from_arrays(np.repeat([0, 1], n // 2), t, y, band=band)
grid = clperiod.FrequencyGrid(0.05, 0.025, 120)
search = functools.partial(clperiod.lombscargle_multiband, grid=grid)
out = {}
for k, device in enumerate(devices):
    out[f"rows{k}"] = resample(cat, 5, seed=77, device=device).rows.tolist()
    boot = bootstrap_fap(cat, search, n_resamplings=19, seed=77, device=device)
    out[f"fap{k}"] = boot.fap.tolist()
print(json.dumps(out))
"""


@pytest.mark.slow
def test_two_devices_draw_the_same_copies():
    runs = run_on_two_devices(SCRIPT)
    assert runs["rows0"] == runs["rows1"] and runs["fap0"] == runs["fap1"]
    rng = np.random.default_rng(21)
    rng.uniform(0, 20, 60)
    codes = rng.integers(0, 2, 60)  # the script's bands: g is 0, r is 1
    expected = bootstrap_rows(np.array([0, 30, 60]), codes, [0, 1], range(5), 77)
    np.testing.assert_array_equal(runs["rows0"], expected)
