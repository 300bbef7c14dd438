"""Tests of clperiod.catalog: building, validation, immutability and access."""

from __future__ import annotations

import numpy as np
import pytest

from clperiod.catalog import Catalog, Status
from clperiod.engine.staging import PINNED_POOL


@pytest.fixture
def long_format():
    rng = np.random.default_rng(0)
    ids = np.array([7, 7, 7, 3, 3, 9, 9, 9, 9])
    t = np.array([0.0, 1.0, 2.5, 10.0, 11.0, 5.0, 6.0, 8.0, 9.5])
    y = rng.normal(size=ids.size)
    dy = rng.uniform(0.1, 0.2, size=ids.size)
    return ids, t, y, dy


def test_status_values():
    assert [int(s) for s in Status] == [0, 1, 2, 3, 4, 5, 6]
    assert Status.OK == 0 and Status(2) is Status.ZERO_VARIANCE


def test_from_arrays_groups_runs_in_order(long_format):
    ids, t, y, dy = long_format
    cat = Catalog.from_arrays(ids, t, y, dy)
    np.testing.assert_array_equal(cat.ids, [7, 3, 9])
    np.testing.assert_array_equal(cat.offsets, [0, 3, 5, 9])
    np.testing.assert_array_equal(cat.lengths, [3, 2, 4])
    assert cat.n_objects == len(cat) == 3
    assert cat.offsets.dtype == np.int64
    for column, source in ((cat.t, t), (cat.y, y), (cat.dy, dy)):
        assert column.dtype == np.float64 and column.flags.c_contiguous
        np.testing.assert_array_equal(column, source)
    assert cat.n_dropped == 0


def test_lightcurve_views_and_round_trip(long_format):
    ids, t, y, dy = long_format
    cat = Catalog.from_arrays(ids, t, y, dy)
    lightcurves = [cat.lightcurve(k) for k in range(cat.n_objects)]
    again = Catalog.from_lightcurves(lightcurves, ids=cat.ids)
    for name in ("ids", "offsets", "t", "y", "dy"):
        np.testing.assert_array_equal(getattr(again, name), getattr(cat, name))
    tk, yk, dyk = cat.lightcurve(1)
    np.testing.assert_array_equal(tk, [10.0, 11.0])
    assert np.shares_memory(tk, cat.t)
    with pytest.raises(IndexError):
        cat.lightcurve(3)


def test_from_lightcurves_default_ids_and_no_dy():
    cat = Catalog.from_lightcurves([([0, 1, 2], [1, 2, 3]), (np.arange(5.0), np.ones(5))])
    np.testing.assert_array_equal(cat.ids, [0, 1])
    assert cat.dy is None
    assert cat.lightcurve(0)[2] is None
    np.testing.assert_array_equal(cat.lengths, [3, 5])


def test_from_lightcurves_bad_items():
    with pytest.raises(ValueError, match="tuple"):
        Catalog.from_lightcurves([([0.0, 1.0],)])
    with pytest.raises(ValueError, match="every light curve or for none"):
        Catalog.from_lightcurves([([0.0], [1.0], [0.1]), ([0.0], [1.0])])
    with pytest.raises(ValueError, match="2 ids for 1"):
        Catalog.from_lightcurves([([0.0], [1.0])], ids=[1, 2])
    assert Catalog.from_lightcurves([([0.0], [1.0], None)]).dy is None


def test_from_lightcurves_takes_dataframes_and_tables():
    """DataFrames and astropy Tables with columns t, y (and dy when present)
    are light curves too; Time and Quantity columns convert as in clperiod.io.frames."""
    pd = pytest.importorskip("pandas")
    u = pytest.importorskip("astropy.units")
    from astropy.table import QTable, Table
    from astropy.time import Time

    t, y, dy = np.array([0.5, 1.0, 2.5]), np.array([1.0, 2.0, 0.5]), np.array([0.1, 0.2, 0.1])
    frame = pd.DataFrame({"t": t, "y": y, "dy": dy, "other": 1})
    table = QTable({"t": Time(t + 50000.0, format="mjd", scale="tdb"), "y": y * u.mag,
                    "dy": dy * 1000 * u.mmag})
    cat = Catalog.from_lightcurves([frame, (t + 50000.0, y, dy), table], ids=["a", "b", "c"])
    np.testing.assert_array_equal(cat.lengths, [3, 3, 3])
    np.testing.assert_array_equal(cat.t, np.concatenate([t, t + 50000.0, t + 50000.0]))
    np.testing.assert_allclose(cat.dy, np.tile(dy, 3), rtol=1e-15)
    plain = Catalog.from_lightcurves([Table({"t": t, "y": y}), frame[["t", "y"]]])
    assert plain.dy is None
    with pytest.raises(ValueError, match=r"light curve 1: no column\(s\) \['t'\].*\['time', 'y'\]"):
        Catalog.from_lightcurves([frame, pd.DataFrame({"time": t, "y": y})])
    with pytest.raises(ValueError, match="dy for every light curve or for none"):
        Catalog.from_lightcurves([frame, plain.lightcurve(0)[:2]])
    with pytest.raises(TypeError, match="light curve 1 must be a .* got int"):
        Catalog.from_lightcurves([frame, 3])


def test_lightcurve_lists_are_recognised():
    from clperiod.catalog import catalog_of, is_lightcurve_list

    t = np.arange(4.0)
    assert is_lightcurve_list([(t, t), (t, t, t)]) and is_lightcurve_list([np.ones((3, 4))])
    assert not is_lightcurve_list(list(t)) and not is_lightcurve_list([])
    assert not is_lightcurve_list(np.ones((3, 4)))
    assert catalog_of([(t, t)]).n_objects == 1
    with pytest.raises(TypeError, match="source must be a Catalog or a list"):
        catalog_of(t, name="source")


def test_from_single_round_trip():
    t = np.array([3.0, 1.0, 2.0])
    cat = Catalog.from_single(t, [1.0, 2.0, 3.0], [0.1, 0.2, 0.3], id="star")
    assert cat.ids.tolist() == ["star"]
    np.testing.assert_array_equal(cat.offsets, [0, 3])
    got_t, got_y, got_dy = cat.lightcurve(0)
    np.testing.assert_array_equal(got_t, t)
    np.testing.assert_array_equal(got_dy, [0.1, 0.2, 0.3])
    assert Catalog.from_single(t, t).ids.tolist() == [0]


def test_string_ids_kept():
    cat = Catalog.from_arrays(["b", "b", "a"], [0, 1, 2], [1, 2, 3])
    assert cat.ids.tolist() == ["b", "a"]


def test_id_reappearing_later_is_an_error():
    with pytest.raises(ValueError, match=r"object id 1 appears again at row 3"):
        Catalog.from_arrays([1, 1, 2, 1], [0, 1, 2, 3], [0, 0, 0, 0])


def test_duplicate_ids_in_from_lightcurves():
    lc = ([0.0, 1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="duplicate object id 'x'"):
        Catalog.from_lightcurves([lc, lc], ids=["x", "x"])


@pytest.mark.parametrize("column", ["t", "y", "dy"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_raises_with_id_row_and_value(long_format, column, bad):
    ids, t, y, dy = long_format
    arrays = {"t": t.copy(), "y": y.copy(), "dy": dy.copy()}
    arrays[column][6] = bad  # object 9, its row 1
    with pytest.raises(ValueError) as info:
        Catalog.from_arrays(ids, **arrays)
    message = str(info.value)
    assert f"non-finite {column}" in message
    assert "object 9" in message and "row 1 of that object" in message
    assert repr(float(bad)) in message


def test_omit_drops_exactly_the_bad_rows(long_format):
    ids, t, y, dy = long_format
    t, y, dy = t.copy(), y.copy(), dy.copy()
    t[0], y[4], dy[3], y[6] = np.nan, np.inf, np.nan, -np.inf
    cat = Catalog.from_arrays(ids, t, y, dy, nan_policy="omit")
    keep = np.ones(ids.size, bool)
    keep[[0, 3, 4, 6]] = False
    assert cat.n_dropped == 4
    np.testing.assert_array_equal(cat.ids, [7, 3, 9])
    np.testing.assert_array_equal(cat.lengths, [2, 0, 3])  # object 3 kept with 0 rows
    np.testing.assert_array_equal(cat.t, t[keep])
    np.testing.assert_array_equal(cat.y, y[keep])
    np.testing.assert_array_equal(cat.dy, dy[keep])
    assert "n_dropped=4" in repr(cat)
    assert np.isnan(cat.baselines()[1]) and np.isnan(cat.epochs()[1])


def test_nan_policy_is_checked(long_format):
    ids, t, y, _ = long_format
    with pytest.raises(ValueError, match="nan_policy"):
        Catalog.from_arrays(ids, t, y, nan_policy="drop")


@pytest.mark.parametrize("value", [0.0, -1.0])
def test_non_positive_dy(long_format, value):
    ids, t, y, dy = long_format
    dy = dy.copy()
    dy[4] = value  # object 3, its row 1
    for policy in ("raise", "omit"):
        with pytest.raises(ValueError, match=rf"dy <= 0 in object 3 at row 1 .*{value!r}"):
            Catalog.from_arrays(ids, t, y, dy, nan_policy=policy)


def test_mismatched_lengths(long_format):
    ids, t, y, dy = long_format
    with pytest.raises(ValueError, match="mismatched lengths"):
        Catalog.from_arrays(ids, t, y[:-1], dy)
    with pytest.raises(ValueError, match="mismatched lengths"):
        Catalog.from_arrays(ids[:-1], t, y)
    with pytest.raises(ValueError, match="mismatched lengths of object 'a'"):
        Catalog.from_lightcurves([([0, 1], [1])], ids=["a"])


def test_empty_inputs():
    with pytest.raises(ValueError, match="empty"):
        Catalog.from_arrays([], [], [])
    with pytest.raises(ValueError, match="empty"):
        Catalog.from_lightcurves([])
    with pytest.raises(ValueError, match="empty"):
        Catalog.from_single([], [])


def test_two_dimensional_input():
    with pytest.raises(ValueError, match="1-D"):
        Catalog.from_arrays(np.zeros(4), np.zeros((2, 2)), np.zeros(4))
    with pytest.raises(ValueError, match="1-D"):
        Catalog.from_single(np.zeros((3, 1)), np.zeros(3))


@pytest.mark.parametrize(
    "bad",
    [np.ones(3, complex), np.ones(3, bool), np.array([1.0, None, 2.0]), np.array(["1", "2", "3"])],
)
def test_wrong_dtype_is_type_error(bad):
    with pytest.raises(TypeError, match="real numbers"):
        Catalog.from_arrays([0, 0, 0], bad, np.ones(3))
    with pytest.raises(TypeError, match="real numbers"):
        Catalog.from_single(np.arange(3.0), np.ones(3), bad)


def test_integer_input_is_converted():
    t = np.array([1, 2, 3], np.int32)
    y = np.array([4, 5, 6], np.uint8)
    cat = Catalog.from_arrays([1, 1, 2], t, y, [1, 1, 2])
    assert cat.t.dtype == cat.y.dtype == cat.dy.dtype == np.float64
    np.testing.assert_array_equal(cat.y, [4.0, 5.0, 6.0])


def test_float32_and_non_contiguous_input():
    t = np.arange(20.0)[::2]
    cat = Catalog.from_single(t, t.astype(np.float32))
    assert cat.t.flags.c_contiguous and cat.y.dtype == np.float64
    np.testing.assert_array_equal(cat.t, t)


def test_inputs_not_mutated_and_outputs_read_only(long_format):
    ids, t, y, dy = long_format
    t[2] = np.nan
    saved = [a.copy() for a in (ids, t, y, dy)]
    cat = Catalog.from_arrays(ids, t, y, dy, nan_policy="omit")
    for before, after in zip(saved, (ids, t, y, dy)):
        np.testing.assert_array_equal(before, after)
    for array in (cat.ids, cat.offsets, cat.t, cat.y, cat.dy, cat.lightcurve(0)[0]):
        assert not array.flags.writeable
        with pytest.raises(ValueError):
            array[0] = array[0]
    with pytest.raises(AttributeError):
        cat.t = np.zeros(3)


def test_later_changes_to_inputs_do_not_leak(long_format):
    ids, t, y, dy = long_format
    t = t.copy()
    cat = Catalog.from_arrays(ids, t, y, dy)
    t[0] = 123.0
    assert cat.t[0] == 0.0
    assert not np.shares_memory(cat.t, t)


def test_baselines_epochs_and_repr(long_format):
    ids, t, y, dy = long_format
    cat = Catalog.from_arrays(ids, t, y, dy)
    np.testing.assert_array_equal(cat.baselines(), [2.5, 1.0, 4.5])
    np.testing.assert_array_equal(cat.epochs(), [1.25, 10.5, 7.25])
    assert repr(cat) == "Catalog(n_objects=3, rows=9, length=[2, 4], dy=yes)"


def test_subset(long_format):
    ids, t, y, dy = long_format
    cat = Catalog.from_arrays(ids, t, y, dy)
    sub = cat.subset([2, 0])
    np.testing.assert_array_equal(sub.ids, [9, 7])
    np.testing.assert_array_equal(sub.offsets, [0, 4, 7])
    np.testing.assert_array_equal(sub.t, np.concatenate([t[5:], t[:3]]))
    np.testing.assert_array_equal(sub.dy, np.concatenate([dy[5:], dy[:3]]))
    masked = cat.subset(np.array([False, True, False]))
    np.testing.assert_array_equal(masked.t, [10.0, 11.0])
    assert cat.subset([]).n_objects == 0
    with pytest.raises(IndexError):
        cat.subset([3])


def test_slice_is_a_view(long_format):
    ids, t, y, dy = long_format
    cat = Catalog.from_arrays(ids, t, y, dy)
    part = cat.slice(1, 3)
    np.testing.assert_array_equal(part.ids, cat.ids[1:3])
    np.testing.assert_array_equal(part.offsets, cat.offsets[1:] - cat.offsets[1])
    np.testing.assert_array_equal(part.t, cat.t[cat.offsets[1]:])
    np.testing.assert_array_equal(part.dy, cat.dy[cat.offsets[1]:])
    assert np.shares_memory(part.y, cat.y)
    assert cat.slice(2, 2).n_objects == 0


def test_page_locked_copy_keeps_the_catalog(long_format, cpu_device):
    """Page-locked copies of t, y and dy (read-only, equal); ids, offsets,
    bands, the checked flag and a known time order unchanged."""
    ids, t, y, dy = long_format
    cat = Catalog.from_arrays(ids, t, y, dy, band=np.array(list("grgrgrgrg")))
    assert cat.time_ordered
    locked = cat.page_locked(cpu_device)
    for name in ("t", "y", "dy"):
        column = getattr(locked, name)
        np.testing.assert_array_equal(column, getattr(cat, name))
        assert PINNED_POOL.owns(column, cpu_device)
        assert not column.flags.writeable and not np.shares_memory(column, getattr(cat, name))
    for name in ("ids", "offsets", "band_codes"):
        np.testing.assert_array_equal(getattr(locked, name), getattr(cat, name))
    assert (locked.bands, locked.checked) == (cat.bands, cat.checked)
    assert "time_ordered" in locked.__dict__ and locked.time_ordered
    without_dy = Catalog.from_arrays(ids, t, y).page_locked(cpu_device)
    assert without_dy.dy is None and PINNED_POOL.owns(without_dy.t, cpu_device)


def test_constructor_checks_structure():
    with pytest.raises(ValueError, match="offsets"):
        Catalog(np.array([0, 1]), np.array([0, 2, 1]), np.zeros(1), np.zeros(1))
    with pytest.raises(ValueError, match="offsets must have shape"):
        Catalog(np.array([0]), np.array([0, 1, 2]), np.zeros(2), np.zeros(2))


def test_from_offsets_matches_from_arrays(long_format):
    ids, t, y, dy = long_format
    expected = Catalog.from_arrays(ids, t, y, dy)
    cat = Catalog.from_offsets([7, 3, 9], np.array([0, 3, 5, 9], np.int32), t, y, dy)
    for name in ("ids", "offsets", "t", "y", "dy"):
        np.testing.assert_array_equal(getattr(cat, name), getattr(expected, name))
    assert cat.offsets.dtype == np.int64 and not cat.t.flags.writeable


def test_from_offsets_empty_objects_and_omit(long_format):
    _, t, y, _ = long_format
    y = y.copy()
    y[3] = np.nan  # object "b", its row 0
    cat = Catalog.from_offsets(["a", "e", "b"], [0, 3, 3, 9], t, y, nan_policy="omit")
    np.testing.assert_array_equal(cat.lengths, [3, 0, 5])
    assert cat.n_dropped == 1
    with pytest.raises(ValueError, match="non-finite y in object 'b' at row 0"):
        Catalog.from_offsets(["a", "e", "b"], [0, 3, 3, 9], t, y)


@pytest.mark.parametrize(
    ("ids", "offsets", "message"),
    [
        ([1, 2, 1], [0, 3, 5, 9], r"duplicate object id 1 \(objects 0 and 2\)"),
        ([1, 2], [0, 3, 5, 9], r"offsets must have shape \(3,\)"),
        ([1, 2, 3], [1, 3, 5, 9], "rise from 0 to the number of rows"),
        ([1, 2, 3], [0, 5, 3, 9], "rise from 0"),
        ([1, 2, 3], [0, 3, 5, 8], r"rows \(9\)"),
        ([], [0], "empty catalog"),
    ],
)
def test_from_offsets_rejects_bad_structure(long_format, ids, offsets, message):
    _, t, y, _ = long_format
    with pytest.raises(ValueError, match=message):
        Catalog.from_offsets(ids, offsets, t, y)


def test_from_offsets_needs_integer_offsets(long_format):
    _, t, y, _ = long_format
    with pytest.raises(TypeError, match="offsets must be integers"):
        Catalog.from_offsets([1], [0.0, 9.0], t, y)


def test_builders_mark_their_values_checked_and_the_constructor_does_not():
    cat = Catalog.from_lightcurves([([1.0, 2.0, 3.0], [1.0, 2.0, 0.5], [0.1] * 3),
                                    ([0.0, 1.0], [3.0, 4.0], [0.2] * 2)])
    assert cat.checked and cat.subset([1]).checked and cat.slice(0, 1).checked
    raw = Catalog(cat.ids, cat.offsets, cat.t, np.array([1.0, np.nan, 0.5, 3.0, 4.0]), cat.dy)
    assert not raw.checked


@pytest.fixture
def four_parts(monkeypatch):
    """The builders' copies in four parts on threads (600,000 rows), of blocks
    of 1000 rows: falls and bad values at part and block boundaries are seen."""
    from clperiod import catalog as catalog_module
    from clperiod.engine import staging

    monkeypatch.setattr(staging, "_COPY_WORKERS", 4)
    monkeypatch.setattr(catalog_module, "_SCAN_BLOCK", 1000)
    rng = np.random.default_rng(3)
    n = 600_000
    return np.sort(rng.uniform(0, 100, n)), rng.normal(size=n), rng.uniform(0.5, 1.5, n)


@pytest.mark.parametrize("fall", [None, 1, 999, 1000, 150_000, 150_001, 450_000, 599_999])
def test_builders_learn_the_time_order_while_copying(four_parts, fall):
    t, y, dy = four_parts
    t = t.copy()
    if fall is not None:
        t[fall] = t[fall - 1] - 1e-9  # one row earlier than the row before it
    cat = Catalog.from_single(t, y, dy)
    assert "time_ordered" in cat.__dict__  # learnt, not computed on demand
    assert cat.time_ordered is (fall is None)
    unchecked = Catalog(cat.ids, cat.offsets, cat.t, cat.y, cat.dy)
    assert unchecked.time_ordered is cat.time_ordered
    np.testing.assert_array_equal(cat.baselines(), [t.max() - t.min()])
    # three objects, each ascending: the falls at their first rows do not count
    offsets = [0, 150_000, 450_001, t.size]
    by_object = np.concatenate([np.sort(t[a:b]) - 200 * k
                                for k, (a, b) in enumerate(zip(offsets, offsets[1:]))])
    ragged = Catalog.from_offsets([5, 6, 7], offsets, by_object, y)
    assert ragged.time_ordered and "time_ordered" in ragged.__dict__
    np.testing.assert_array_equal(
        ragged.baselines(), [np.ptp(by_object[a:b]) for a, b in zip(offsets, offsets[1:])]
    )


def test_time_order_of_parts_equal_times_and_the_constructor(long_format):
    ids, t, y, dy = long_format
    cat = Catalog.from_arrays(ids, t, y, dy)
    assert cat.time_ordered
    assert cat.slice(1, 3).__dict__.get("time_ordered") is True
    assert cat.subset([2, 0]).__dict__.get("time_ordered") is True
    shuffled = Catalog.from_arrays(ids, t[[1, 0, 2, 3, 4, 5, 6, 7, 8]], y, dy)
    assert not shuffled.time_ordered
    assert "time_ordered" not in shuffled.slice(0, 1).__dict__  # its own, computed on demand
    assert shuffled.slice(1, 3).time_ordered
    np.testing.assert_array_equal(shuffled.baselines(), cat.baselines())
    assert Catalog.from_single([2.0, 2.0, 3.0], [1.0, 2.0, 3.0]).time_ordered
    # the constructor's catalogs compute it, and take their time range from every row
    raw = Catalog(np.array([0]), np.array([0, 3]), np.array([1.0, np.nan, 3.0]), np.zeros(3))
    assert raw.time_ordered and np.isnan(raw.baselines()[0])


@pytest.mark.parametrize("row", [0, 999, 150_000, 599_999])
def test_bad_values_anywhere_in_long_columns(four_parts, row):
    t, y, dy = four_parts
    for column, value, message in ((y, np.inf, "non-finite y"), (t, np.nan, "non-finite t"),
                                   (dy, 0.0, "dy <= 0"), (dy, -1.0, "dy <= 0")):
        bad = column.copy()
        bad[row] = value
        columns = [bad if c is column else c for c in (t, y, dy)]
        with pytest.raises(ValueError, match=f"{message} in object 0 at row {row} "):
            Catalog.from_single(*columns)
    with pytest.raises(ValueError, match=f"non-finite y in object 1 at row {row} "):
        Catalog.from_offsets([0, 1], [0, 2, 2 + y.size], np.r_[0.0, 1.0, t + 2],
                             np.r_[0.0, 1.0, np.where(np.arange(y.size) == row, np.nan, y)])


def test_finite_values_whose_sum_overflows_are_accepted(four_parts):
    t, y, dy = four_parts
    huge = np.full(t.size, 1e308)
    cat = Catalog.from_single(t, huge, huge)
    assert cat.checked and cat.y[-1] == 1e308 and cat.dy.min() == 1e308
