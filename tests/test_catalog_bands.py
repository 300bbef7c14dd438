"""Tests of the band labels of clperiod.catalog: building, validation, access."""

from __future__ import annotations

import numpy as np
import pytest

import clperiod
from clperiod import Catalog, FrequencyGrid
from clperiod.periodograms.inputs import band_order

IDS = np.array([7, 7, 7, 7, 3, 3, 9, 9, 9])
T = np.array([0.0, 1.0, 2.5, 3.0, 10.0, 11.0, 5.0, 6.0, 8.0])
BAND = np.array(["r", "g", "r", "r", "g", "g", "i", "r", "g"])


def y_values():
    return np.random.default_rng(1).normal(size=IDS.size)


def banded(**kwargs):
    return Catalog.from_arrays(IDS, T, y_values(), np.full(IDS.size, 0.1), band=BAND, **kwargs)


def test_codes_index_the_sorted_labels():
    cat = banded()
    assert cat.bands == ("g", "i", "r") and cat.n_bands == 3
    assert cat.band_codes.dtype == np.int16 and not cat.band_codes.flags.writeable
    np.testing.assert_array_equal(cat.band_labels()[cat.band_codes], BAND)
    np.testing.assert_array_equal(cat.band_counts(), [[1, 0, 3], [2, 0, 0], [1, 1, 1]])
    assert "bands=['g', 'i', 'r']" in repr(cat)


def test_integer_labels_and_integral_floats():
    cat = Catalog.from_arrays(IDS, T, y_values(), band=np.array([2, 1, 2, 2, 1, 1, 5, 2, 1.0]))
    assert cat.bands == (1, 2, 5) and all(type(label) is int for label in cat.bands)
    np.testing.assert_array_equal(cat.band_codes, [1, 0, 1, 1, 0, 0, 2, 1, 0])


def test_fixed_band_set_keeps_its_order_and_empty_bands():
    cat = banded(bands=["u", "g", "r", "i", "z"])
    assert cat.bands == ("u", "g", "r", "i", "z")
    np.testing.assert_array_equal(
        cat.band_counts(), [[0, 1, 3, 0, 0], [0, 2, 0, 0, 0], [0, 1, 1, 1, 0]]
    )
    np.testing.assert_array_equal(cat.band_labels()[cat.band_codes], BAND)


def test_unknown_label_names_label_object_and_row():
    with pytest.raises(ValueError, match=r"band label 'i' \(not in bands \['g', 'r'\]\) in "
                       r"object 9 at row 0 of that object \(row 6 overall\)"):
        banded(bands=["g", "r"])


@pytest.mark.parametrize(
    ("band", "error", "message"),
    [
        (np.array(["r", "g", None, "r", "g", "g", "i", "r", "g"], dtype=object), ValueError,
         r"missing band label in object 7 at row 2 .*\(row 2 overall\)"),
        (np.array([1, 1, 1, 1, 2, np.nan, 1, 1, 1]), ValueError,
         r"missing band label in object 3 at row 1 .*\(row 5 overall\)"),
        (np.array([1, 1, 1, 1, 2, np.inf, 1, 1, 1]), ValueError, r"\(row 5 overall\)"),
        (np.ma.array(BAND, mask=IDS == 9), ValueError, r"object 9 at row 0"),
        (["g", "g", "g", "g", "g", "g", "g", "r", ""], ValueError, r"\(row 8 overall\)"),
        (["g", "g", "g", 1, "g", "g", "g", "g", "g"], TypeError, r"mix strings \(row 0\) and "
         r"numbers \(row 3\)"),
        (np.full(IDS.size, 1.5), TypeError, r"got 1.5 at row 0"),
        (np.ones(IDS.size, dtype=bool), TypeError, r"strings or integers, got dtype bool"),
        (BAND[:-1], ValueError, r"mismatched lengths: band=8, t=9"),
        (BAND.reshape(3, 3), ValueError, r"band must be 1-D"),
    ],
)
def test_bad_labels(band, error, message):
    with pytest.raises(error, match=message):
        Catalog.from_arrays(IDS, T, y_values(), band=band)


@pytest.mark.parametrize("nan_policy", ["raise", "omit"])
def test_missing_label_raises_under_every_nan_policy(nan_policy):
    band = np.ma.array(BAND, mask=np.arange(IDS.size) == 4)
    with pytest.raises(ValueError, match=r"missing band label in object 3 at row 0"):
        Catalog.from_arrays(IDS, T, y_values(), band=band, nan_policy=nan_policy)


@pytest.mark.parametrize(
    ("bands", "error", "message"),
    [
        ("gr", TypeError, "sequence of labels"),
        ([], ValueError, "at least one band"),
        (["g", "r", "g", "i"], ValueError, r"duplicate label 'g' \(positions 0 and 2\)"),
        (["g", None], ValueError, "missing label at position 1"),
    ],
)
def test_bad_band_sets(bands, error, message):
    with pytest.raises(error, match=message):
        banded(bands=bands)


def test_bands_without_band_column():
    with pytest.raises(ValueError, match="no band column"):
        Catalog.from_arrays(IDS, T, y_values(), bands=["g"])


def test_omit_drops_the_band_of_dropped_rows():
    y = y_values()
    y[[1, 4, 5]] = np.nan
    cat = Catalog.from_arrays(IDS, T, y, band=BAND, nan_policy="omit")
    assert cat.n_dropped == 3
    keep = np.isfinite(y)
    np.testing.assert_array_equal(cat.band_labels()[cat.band_codes], BAND[keep])
    np.testing.assert_array_equal(cat.band_counts(), [[0, 0, 3], [0, 0, 0], [1, 1, 1]])
    assert cat.bands == ("g", "i", "r")


def test_subset_slice_and_lightcurve_carry_the_bands():
    cat = banded()
    part = cat.subset([2, 0])
    assert part.bands == cat.bands
    np.testing.assert_array_equal(part.band_counts(), cat.band_counts()[[2, 0]])
    np.testing.assert_array_equal(part.band_labels()[part.band_codes], BAND[[6, 7, 8, 0, 1, 2, 3]])
    view = cat.slice(1, 3)
    assert np.shares_memory(view.band_codes, cat.band_codes)
    np.testing.assert_array_equal(view.band_counts(), cat.band_counts()[1:])
    t, _, dy, band = cat.lightcurve(2)
    np.testing.assert_array_equal(band, ["i", "r", "g"])
    np.testing.assert_array_equal(dy, [0.1, 0.1, 0.1])
    np.testing.assert_array_equal(t, [5.0, 6.0, 8.0])


def test_lightcurves_round_trip_with_bands():
    cat = banded(bands=["g", "r", "i"])
    again = Catalog.from_lightcurves(
        [cat.lightcurve(k) for k in range(cat.n_objects)], ids=cat.ids, bands=cat.bands
    )
    for name in ("ids", "offsets", "t", "y", "dy", "band_codes"):
        np.testing.assert_array_equal(getattr(again, name), getattr(cat, name))
    assert again.bands == cat.bands


def test_from_lightcurves_scalar_band_per_curve():
    cat = Catalog.from_lightcurves(
        [([0, 1, 2], [1, 2, 3], None, "r"), ([0, 1], [4, 5], None, ["g", "r"])], ids=["a", "b"]
    )
    assert cat.dy is None and cat.bands == ("g", "r")
    np.testing.assert_array_equal(cat.band_counts(), [[0, 3], [1, 1]])


@pytest.mark.parametrize(
    ("curves", "error", "message"),
    [
        ([([0, 1], [1, 2], None, "r"), ([0, 1], [1, 2])], ValueError, "a band for every"),
        ([([0, 1], [1, 2], None, "r"), ([0, 1], [1, 2], None, 3)], TypeError,
         r"mix strings \(light curve 0\) and integers \(light curve 1\)"),
        ([([0, 1], [1, 2], None, ["r"])], ValueError,
         r"band of light curve 0 \(object 0\) has 1 labels for 2 rows"),
        ([([0, 1], [1, 2], None, None)], ValueError, r"missing band label in object 0 at row 0"),
    ],
)
def test_bad_lightcurve_bands(curves, error, message):
    with pytest.raises(error, match=message):
        Catalog.from_lightcurves(curves)


def test_from_single_and_from_offsets():
    one = Catalog.from_single([0.0, 1.0, 2.0], [1.0, 2.0, 0.5], band="g", bands=["g", "r"])
    np.testing.assert_array_equal(one.band_counts(), [[3, 0]])
    flat = banded()
    again = Catalog.from_offsets(flat.ids, flat.offsets, flat.t, flat.y, band=BAND)
    np.testing.assert_array_equal(again.band_codes, flat.band_codes)


def test_select_bands():
    cat = banded()
    red = cat.select_bands("r")
    assert red.bands == ("r",) and red.n_objects == 3
    np.testing.assert_array_equal(red.lengths, [3, 0, 1])
    np.testing.assert_array_equal(red.t, T[BAND == "r"])
    two = cat.select_bands(["r", "g"])
    assert two.bands == ("g", "r")
    np.testing.assert_array_equal(two.t, T[BAND != "i"])
    np.testing.assert_array_equal(two.band_counts(), cat.band_counts()[:, [0, 2]])
    with pytest.raises(ValueError, match=r"band 'z' is not one of the bands"):
        cat.select_bands("z")


def test_catalog_without_bands_is_one_band():
    cat = Catalog.from_arrays(IDS, T, y_values())
    assert cat.bands is None and cat.band_codes is None and cat.n_bands == 1
    np.testing.assert_array_equal(cat.band_counts(), cat.lengths[:, None])
    assert len(cat.lightcurve(0)) == 3
    with pytest.raises(ValueError, match="no bands"):
        cat.select_bands("g")


def test_constructor_checks_band_fields():
    with pytest.raises(ValueError, match="together"):
        Catalog(np.array([0]), np.array([0, 2]), np.zeros(2), np.zeros(2), None, 0, [0, 0])
    with pytest.raises(ValueError, match=r"lie in \[0, 1\)"):
        Catalog(np.array([0]), np.array([0, 2]), np.zeros(2), np.zeros(2), None, 0, [0, 1], ("g",))
    with pytest.raises(ValueError, match="distinct"):
        Catalog(np.array([0]), np.array([0, 2]), np.zeros(2), np.zeros(2), None, 0, [0, 1],
                ("g", "g"))


def test_single_band_searches_pool_the_bands():
    rng = np.random.default_rng(5)
    t = np.sort(rng.uniform(0, 50, 120))
    y = np.sin(2 * np.pi * t / 3.1) + 0.1 * rng.normal(size=t.size)
    band = rng.choice(["g", "r"], size=t.size)
    ids = np.zeros(t.size, dtype=int)
    grid = FrequencyGrid.from_range(0.05, 2.0, 800)
    pooled = clperiod.lombscargle(Catalog.from_arrays(ids, t, y), grid, periodogram=True)
    banded_result = clperiod.lombscargle(
        Catalog.from_arrays(ids, t, y, band=band), grid, periodogram=True
    )
    np.testing.assert_array_equal(banded_result.power, pooled.power)
    assert banded_result.period[0] == pytest.approx(3.1, rel=1e-2)


@pytest.mark.parametrize("n_bands", [1, 2, 6])
def test_band_order_is_a_stable_sort_by_object_and_band(n_bands):
    """The searches' counting sort of each object's rows band by band equals
    NumPy's stable lexsort, empty objects and empty bands included."""
    rng = np.random.default_rng(n_bands)
    lengths = rng.integers(0, 12, 40)
    lengths[[0, 7]] = 0
    codes = rng.integers(0, n_bands, lengths.sum()).astype(np.int16)
    owners = np.repeat(np.arange(lengths.size), lengths)
    counts = np.bincount(owners * n_bands + codes, minlength=lengths.size * n_bands)
    order = band_order(counts.reshape(-1, n_bands), owners, codes)
    np.testing.assert_array_equal(order, np.lexsort((codes, owners)))
