"""clperiod.io.frames: catalogs from pandas DataFrames and astropy Tables (times, units)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from astropy import units as u
from astropy.table import MaskedColumn, QTable, Table
from astropy.time import Time, TimeDelta
from astropy.timeseries import TimeSeries

from clperiod.io.frames import catalog_from_dataframe, catalog_from_table, mjd_from_datetime64


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"oid": [7, 7, 7, 3, 3], "mjd": [1.0, 2.0, 3.5, 1.0, 4.0],
                         "mag": [10.0, 11.0, 12.0, 13.0, 14.0], "err": [0.1, 0.2, 0.1, 0.3, 0.1]})


def test_dataframe_long_format():
    cat = catalog_from_dataframe(_frame(), "oid", "mjd", "mag", "err")
    assert cat.ids.tolist() == [7, 3]
    np.testing.assert_array_equal(cat.offsets, [0, 3, 5])
    np.testing.assert_array_equal(cat.dy, [0.1, 0.2, 0.1, 0.3, 0.1])
    by_index = catalog_from_dataframe(_frame().set_index("oid"), "oid", "mjd", "mag")
    assert by_index.ids.tolist() == [7, 3] and by_index.dy is None
    shuffled = _frame().iloc[[3, 0, 4, 1, 2]]
    with pytest.raises(ValueError, match="contiguous"):
        catalog_from_dataframe(shuffled, "oid", "mjd", "mag")
    cat = catalog_from_dataframe(shuffled, "oid", "mjd", "mag", sort=True)
    assert cat.ids.tolist() == [3, 7]
    np.testing.assert_array_equal(cat.t, [1.0, 4.0, 1.0, 2.0, 3.5])


def test_dataframe_datetimes_become_mjd():
    frame = pd.DataFrame({"id": ["a", "a"], "y": [1.0, 2.0],
                          "t": pd.to_datetime(["2020-01-01T00:00", "2020-01-02T06:00"])})
    np.testing.assert_allclose(catalog_from_dataframe(frame).t, [58849.0, 58850.25], atol=1e-9)
    frame["t"] = frame["t"].dt.tz_localize("Europe/Paris")  # UTC+1 in winter
    np.testing.assert_allclose(catalog_from_dataframe(frame).t,
                               [58849.0 - 1 / 24, 58850.25 - 1 / 24], atol=1e-9)
    assert np.isnan(mjd_from_datetime64(np.array(["NaT"], "datetime64[s]"))[0])
    with pytest.raises(TypeError, match="datetime64"):
        mjd_from_datetime64(np.zeros(2))


def test_dataframe_errors_name_column_and_row():
    frame = _frame()
    frame["mag"] = frame["mag"].astype(object)
    frame.loc[3, "mag"] = "bright"
    with pytest.raises(ValueError, match=r"column 'mag', row 3: 'bright' is not a number"):
        catalog_from_dataframe(frame, "oid", "mjd", "mag")
    with pytest.raises(ValueError, match=r"no column\(s\) \['flux'\]"):
        catalog_from_dataframe(_frame(), "oid", "mjd", "flux")
    frame = _frame()
    frame["flag"] = True
    with pytest.raises(ValueError, match="holds booleans"):
        catalog_from_dataframe(frame, "oid", "mjd", "flag")


@pytest.mark.parametrize("ids", [[7, 7, None, 3, 3], ["a", "a", None, "b", "b"],
                                 pd.array([7, 7, None, 3, 3], dtype="Int64"),
                                 [7.0, 7.0, np.nan, 3.0, 3.0]])
def test_missing_ids_name_the_row(ids):
    frame = _frame().assign(oid=ids).set_axis([10, 11, 12, 13, 14])
    with pytest.raises(ValueError, match=r"column 'oid', row 12: missing object id"):
        catalog_from_dataframe(frame, "oid", "mjd", "mag")
    table = Table.from_pandas(_frame().assign(oid=[7.0, 7.0, np.nan, 3.0, 3.0]))
    with pytest.raises(ValueError, match=r"column 'oid', row 2: missing object id"):
        catalog_from_table(table, "oid", "mjd", "mag")


def test_dataframe_nested_arrow_column():
    lc = pa.array([[{"t": 1.0, "y": 2.0}, {"t": 2.0, "y": 3.0}], None, [{"t": 5.0, "y": 1.0}]],
                  type=pa.list_(pa.struct([("t", pa.float64()), ("y", pa.float64())])))
    frame = pd.DataFrame({"id": ["a", "b", "c"], "lc": pd.Series(lc, dtype=pd.ArrowDtype(lc.type))})
    cat = catalog_from_dataframe(frame, nested_col="lc")
    assert cat.ids.tolist() == ["a", "b", "c"]
    np.testing.assert_array_equal(cat.offsets, [0, 2, 2, 3])
    np.testing.assert_array_equal(cat.y, [2.0, 3.0, 1.0])
    frame.loc[2, "id"] = "a"
    with pytest.raises(ValueError, match="object id 'a' at row 2 repeats row 0"):
        catalog_from_dataframe(frame, nested_col="lc")


def test_table_time_columns():
    mjd = np.array([59000.0, 59000.5, 59001.0, 59003.0])
    table = Table({"id": [1, 1, 2, 2], "t": Time(mjd, format="mjd", scale="utc"),
                   "y": [1.0, 2.0, 3.0, 4.0]})
    tdb = catalog_from_table(table).t
    np.testing.assert_allclose(tdb - mjd, 69.184 / 86400, atol=3e-8)  # TT - UTC; TDB - TT ~ ms
    np.testing.assert_array_equal(catalog_from_table(table, time_scale=None).t, mjd)
    np.testing.assert_allclose(catalog_from_table(table, time_scale="tai").t - mjd, 37 / 86400,
                               atol=1e-10)
    table["t"] = TimeDelta(mjd - mjd[0], format="jd")
    np.testing.assert_allclose(catalog_from_table(table).t, mjd - mjd[0])
    table["t"] = (mjd - mjd[0]) * 24 * u.hour
    np.testing.assert_allclose(catalog_from_table(table).t, mjd - mjd[0])
    table["t"] = (mjd - mjd[0]) * u.m
    with pytest.raises(ValueError, match="column 't' has unit m, which is not a time"):
        catalog_from_table(table)
    local = Table({"id": [1, 1], "t": Time([1.0, 2.0], format="mjd", scale="local"),
                   "y": [1.0, 2.0]})
    with pytest.raises(ValueError, match="time_scale=None"):
        catalog_from_table(local)


def test_table_units_of_values_and_uncertainties():
    table = QTable({"id": [1, 1, 1], "t": [0.0, 1.0, 2.0], "flux": [1.0, 2.0, 3.0] * u.mJy,
                    "err": [100.0, 200.0, 300.0] * u.uJy})
    cat = catalog_from_table(table, y_col="flux", dy_col="err")
    np.testing.assert_allclose(cat.y, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(cat.dy, [0.1, 0.2, 0.3])
    plain = Table(table)  # Column objects with a .unit instead of Quantities
    np.testing.assert_allclose(catalog_from_table(plain, y_col="flux", dy_col="err").dy, cat.dy)
    table["err"] = [0.1, 0.2, 0.3]
    with pytest.raises(ValueError, match="column 'flux' has a unit but 'err' has none"):
        catalog_from_table(table, y_col="flux", dy_col="err")
    table["err"] = [0.1, 0.2, 0.3] * u.s
    with pytest.raises(ValueError, match=r"units of 'err' \(s\) do not convert"):
        catalog_from_table(table, y_col="flux", dy_col="err")
    mags = QTable({"id": [1, 1], "t": [0.0, 1.0], "m": [20.0, 21.0] * u.ABmag,
                   "e": [10.0, 20.0] * u.mmag})
    cat = catalog_from_table(mags, y_col="m", dy_col="e")
    np.testing.assert_allclose(cat.y, [20.0, 21.0])
    np.testing.assert_allclose(cat.dy, [0.01, 0.02])


def test_table_masked_entries_and_timeseries():
    table = Table({"id": [1, 1, 1], "t": [0.0, 1.0, 2.0],
                   "y": MaskedColumn([1.0, 2.0, 3.0], mask=[False, True, False])})
    with pytest.raises(ValueError, match="non-finite y in object 1 at row 1"):
        catalog_from_table(table)
    assert catalog_from_table(table, nan_policy="omit").y.tolist() == [1.0, 3.0]
    table["id"] = MaskedColumn([1, 1, 1], mask=[False, False, True])
    with pytest.raises(ValueError, match="column 'id', row 2: missing object id"):
        catalog_from_table(table)
    series = TimeSeries(time=Time([59000.0, 59001.0], format="mjd", scale="tdb"),
                        data={"id": [5, 5], "flux": [1.0, 2.0]})
    cat = catalog_from_table(series, t_col="time", y_col="flux")
    np.testing.assert_array_equal(cat.t, [59000.0, 59001.0])
    with pytest.raises(ValueError, match=r"no column\(s\) \['t'\]"):
        catalog_from_table(series, y_col="flux")


def test_table_text_numbers_and_masked_integers():
    table = Table({"id": [1, 1, 1], "t": MaskedColumn([1, 2, 3], mask=[False, True, False]),
                   "y": ["1.5", "2", "x"]})
    with pytest.raises(ValueError, match=r"column 'y', row 2: 'x' is not a number"):
        catalog_from_table(table)
    table["y"] = ["1.5", "2", "3"]
    cat = catalog_from_table(table, nan_policy="omit")
    np.testing.assert_array_equal(cat.t, [1.0, 3.0])
    np.testing.assert_array_equal(cat.y, [1.5, 3.0])
