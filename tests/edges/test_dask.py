"""clperiod.dask on a two-worker ``distributed.LocalCluster`` (processes, CPU runtime).

Every Dask result is compared object by object with a single-device run on
the same rows in the same order: they are equal bitwise, because each object
is computed by the same kernels on the same kind of device whatever catalog
holds it.  (Reordering the rows of an object, as a non-stable sort in
``set_index`` may do, changes the order of the sums and so the last bits;
the test frames are built already sorted by id, so Dask does not reorder them.)
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import clperiod
import clperiod.dask
import clperiod.pipeline
from clperiod.dask import workers as binding
from clperiod.catalog import Catalog, Status
from clperiod.engine.devices import list_devices, select_devices
from clperiod.io import load_example
from clperiod.io.tables import result_columns

N_OBJECTS = 18
GRID = clperiod.FrequencyGrid.from_range(0.5, 4.0, 2000)
SS_GRID = clperiod.FrequencyGrid.from_range(0.5, 4.0, 600)
# One PoCL thread per worker: two workers share the two cores of CI.
WORKER_ENV = {"POCL_MAX_PTHREAD_COUNT": "1", "POCL_CPU_MAX_CU_COUNT": "1"}


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with (LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                       dashboard_address=None, env=WORKER_ENV) as cluster,
          Client(cluster) as dask_client):
        yield dask_client


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    """Stripe 82 RR Lyrae light curves, sorted by id, plus a 2-point object."""
    stripe82 = load_example("stripe82")
    stars = stripe82.subset(np.argsort(stripe82.ids)[:N_OBJECTS])
    tiny = (np.array([0.0, 1.0]), np.array([1.0, 2.0]), np.array([0.1, 0.1]))
    curves = [stars.lightcurve(k) for k in range(stars.n_objects)] + [tiny]
    return Catalog.from_lightcurves(curves, ids=np.append(stars.ids, stars.ids.max() + 1))


@pytest.fixture(scope="module")
def long_table(catalog: Catalog) -> pd.DataFrame:
    """One row per observation, columns id, t, y, dy."""
    ids = np.repeat(catalog.ids, catalog.lengths)
    return pd.DataFrame({"id": ids, "t": catalog.t, "y": catalog.y, "dy": catalog.dy})


def by_id(long_table: pd.DataFrame, npartitions: int = 3) -> dd.DataFrame:
    """The long table indexed by id (the index is already sorted: rows keep their order)."""
    frame = dd.from_pandas(long_table.set_index("id"), npartitions=npartitions)
    assert frame.npartitions == npartitions
    return frame


def assert_same_objects(out: pd.DataFrame, expected: pd.DataFrame) -> None:
    """Every object exactly once, every value equal bitwise."""
    assert out["id"].is_unique
    got = out.sort_values("id").reset_index(drop=True)
    want = expected.sort_values("id").reset_index(drop=True)
    want = want.astype({"id": got["id"].dtype, "status_name": got["status_name"].dtype})
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def single_device(search, catalog: Catalog, grid, fap_method="baluev", **options) -> pd.DataFrame:
    result = search(catalog, grid, **options)
    return pd.DataFrame(result_columns(result, fap_method=fap_method))


# ---------------------------------------------------------------------- results


@pytest.mark.slow
def test_lombscargle_matches_single_device(client, catalog, long_table) -> None:
    options = {"normalization": "model", "top_k": 2}
    out = clperiod.dask.lombscargle(by_id(long_table), GRID, dy_col="dy", **options)
    assert isinstance(out, dd.DataFrame)
    table = out.compute()
    assert table["id"].dtype == np.int64
    assert list(table.columns[:6]) == ["id", "n_points", "period", "frequency", "power", "fap"]
    assert (table["status"] == Status.OK).sum() == N_OBJECTS
    assert table.loc[table["n_points"] == 2, "status_name"].tolist() == ["TOO_FEW_POINTS"]
    assert_same_objects(table, single_device(clperiod.lombscargle, catalog, GRID, **options))


@pytest.mark.slow
def test_lombscargle_id_column_without_uncertainties(client, catalog, long_table,
                                                     cpu_device) -> None:
    """Also a device selection string, used by every worker."""
    frame = by_id(long_table[["id", "t", "y"]]).reset_index()
    selection = f"{cpu_device.platform_index}:{cpu_device.device_index}"
    out = clperiod.dask.lombscargle(frame, GRID, method="standard", fap_method=None,
                                    device=selection).compute()
    plain = Catalog(catalog.ids, catalog.offsets, catalog.t, catalog.y)
    expected = single_device(clperiod.lombscargle, plain, GRID, None, method="standard",
                             device=cpu_device)
    assert_same_objects(out, expected)


@pytest.mark.slow
def test_supersmoother_matches_single_device(client, catalog, long_table) -> None:
    out = clperiod.dask.supersmoother(by_id(long_table, 2), SS_GRID, top_k=2)  # dy: auto
    table = out.compute()
    assert "fap" not in table.columns
    assert_same_objects(table, single_device(clperiod.supersmoother, catalog, SS_GRID, top_k=2))


@pytest.mark.slow
def test_frequency_arrays_match_single_device(client, catalog, long_table) -> None:
    """Uneven, unsorted frequencies (uniform in period) go to the workers as given."""
    periods = np.random.default_rng(6).permutation(np.linspace(0.25, 2.0, 500))
    grid = clperiod.FrequencyGrid.from_frequencies(1 / periods)
    assert isinstance(grid, clperiod.FrequencyArray)
    out = clperiod.dask.lombscargle(by_id(long_table), grid, top_k=2).compute()
    assert_same_objects(out, single_device(clperiod.lombscargle, catalog, grid, top_k=2))
    out = clperiod.dask.supersmoother(by_id(long_table, 2), grid).compute()
    assert_same_objects(out, single_device(clperiod.supersmoother, catalog, grid))


@pytest.mark.slow
def test_uncertainties_are_used_by_default(client, catalog, long_table) -> None:
    """dy_col="auto": the column dy weights the search, as on the command line;
    None searches without weights."""
    weighted = single_device(clperiod.lombscargle, catalog, GRID)
    plain = Catalog(catalog.ids, catalog.offsets, catalog.t, catalog.y)
    unweighted = single_device(clperiod.lombscargle, plain, GRID)
    differ = ~np.isclose(weighted["period"], unweighted["period"], rtol=1e-6)
    assert differ.sum() >= 3
    assert_same_objects(clperiod.dask.lombscargle(by_id(long_table), GRID).compute(), weighted)
    out = clperiod.dask.lombscargle(by_id(long_table), GRID, dy_col=None).compute()
    assert_same_objects(out, unweighted)


def nested_table(catalog: Catalog) -> tuple[pd.DataFrame, Catalog]:
    """One row per object, string ids and a list<struct<t, y, dy>> column; an
    empty and a null light curve and a null y are added. Also the catalog of
    the same objects with ``nan_policy="omit"`` applied."""
    curves = [catalog.lightcurve(k) for k in range(catalog.n_objects)]
    t, y, dy = (np.array(values) for values in curves[0])
    y[3] = np.nan
    curves[0] = (t, y, dy)
    empty = (np.zeros(0), np.zeros(0), np.zeros(0))
    curves += [empty, empty]
    ids = [f"star-{i}" for i in catalog.ids] + ["empty", "null"]
    lengths = np.array([len(c[0]) for c in curves])
    points = pa.StructArray.from_arrays(
        [pa.array(np.concatenate([c[i] for c in curves]), from_pandas=True) for i in range(3)],
        names=["t", "y", "dy"],
    )
    mask = pa.array([i == "null" for i in ids])
    lists = pa.ListArray.from_arrays(np.concatenate(([0], np.cumsum(lengths))).astype(np.int32),
                                     points, mask=mask)
    frame = pd.DataFrame({"id": ids, "lc": pd.Series(lists, dtype=pd.ArrowDtype(lists.type))})
    reference = Catalog.from_lightcurves(curves, ids=ids, nan_policy="omit")
    return frame, reference


@pytest.mark.slow
def test_nested_layout_matches_single_device(client, catalog) -> None:
    frame, reference = nested_table(catalog)
    assert frame["lc"].isna().tolist()[-2:] == [False, True]
    ddf = dd.from_pandas(frame, npartitions=3, sort=False)
    out = clperiod.dask.lombscargle(ddf, GRID, nested_col="lc", nan_policy="omit")  # dy: auto
    table = out.compute()
    assert table["id"].dtype == ddf["id"].dtype
    empty = table[table["id"].isin(["empty", "null"])]
    assert empty["n_points"].tolist() == [0, 0]
    assert set(empty["status_name"]) == {"TOO_FEW_POINTS"}
    assert table.loc[table["id"] == f"star-{catalog.ids[0]}", "n_points"].item() == \
        catalog.lengths[0] - 1
    assert_same_objects(table, single_device(clperiod.lombscargle, reference, GRID))


@pytest.mark.slow
def test_automatic_grid_is_resolved_on_the_whole_frame(client, catalog, long_table) -> None:
    """An AutoGrid is resolved over the frame, objects straddling partitions included."""
    auto = clperiod.pipeline.AutoGrid(maximum_frequency=2.0)
    grid = clperiod.FrequencyGrid.survey(catalog, maximum_frequency=2.0)
    shuffled = dd.from_pandas(long_table.sort_values("t"), npartitions=3)
    out = clperiod.dask.lombscargle(shuffled, auto).compute()
    assert_same_objects(out, single_device(clperiod.lombscargle, catalog, grid))


@pytest.mark.parametrize("nested", [False, True])
def test_default_grid_is_the_survey_grid_of_the_frame(catalog, long_table, nested) -> None:
    """grid=None: the default grid of catalog runs, from one pass over the frame."""
    if nested:
        frame, reference = nested_table(catalog)
        ddf = dd.from_pandas(frame, npartitions=3, sort=False)
        layout = clperiod.dask.api._layout(ddf, "id", "t", "y", "auto", "lc")
    else:
        reference = catalog
        ddf = dd.from_pandas(long_table.sort_values("t"), npartitions=3)
        layout = clperiod.dask.api._layout(ddf, "id", "t", "y", "auto", None)
    with dask.config.set(scheduler="sync"):
        grid = clperiod.dask.api._resolved_grid(None, ddf, layout, "omit")
    assert grid == clperiod.FrequencyGrid.survey(reference)
    assert grid.fmax >= 20 - grid.df


def test_nested_uncertainties_found_on_the_workers(catalog) -> None:
    """A nested column of Python objects tells its fields only on the workers,
    where dy_col="auto" finds the field dy."""
    frame, reference = nested_table(catalog)
    frame = frame.assign(lc=frame["lc"].astype(object))
    with dask.config.set({"dataframe.convert-string": False}):  # keep the Python objects
        ddf = dd.from_pandas(frame, npartitions=2, sort=False)
        assert ddf.dtypes["lc"] == object
        out = clperiod.dask.lombscargle(ddf, GRID, nested_col="lc", nan_policy="omit")
        table = out.compute(scheduler="sync")
    assert_same_objects(table, single_device(clperiod.lombscargle, reference, GRID))


# ---------------------------------------------------------------------- exactly once


def time_ordered(long_table: pd.DataFrame, npartitions: int = 3) -> dd.DataFrame:
    """The observations of all objects in time order: objects interleave and
    straddle the partitions."""
    frame = dd.from_pandas(long_table.sort_values("t", kind="stable"), npartitions=npartitions,
                           sort=False)
    assert not frame.known_divisions
    return frame


def test_objects_straddling_partitions_are_shuffled_by_id(client, catalog, long_table) -> None:
    """Any row order and partitioning gives the one-call result, bit for bit
    (each object's rows are searched in time order, as in the catalog)."""
    frame = time_ordered(long_table)
    first = frame.partitions[0].compute()["id"]
    assert first.isin(frame.partitions[1].compute()["id"]).any()
    expected = single_device(clperiod.lombscargle, catalog, GRID)
    assert_same_objects(clperiod.dask.lombscargle(frame, GRID).compute(), expected)
    by_index = time_ordered(long_table).set_index("id", sort=False)
    assert not by_index.known_divisions
    assert_same_objects(clperiod.dask.lombscargle(by_index, GRID).compute(), expected)


def test_noncontiguous_rows_of_a_partition_are_searched_in_time_order(long_table,
                                                                      catalog) -> None:
    shuffled = long_table.iloc[np.r_[0:10, 60:70, 10:60, 70:len(long_table)]]
    frame = dd.from_pandas(shuffled, npartitions=1, sort=False)
    out = clperiod.dask.lombscargle(frame, GRID, shuffle=False).compute(scheduler="sync")
    assert_same_objects(out, single_device(clperiod.lombscargle, catalog, GRID))


def test_partitions_in_order_are_not_sorted_again(long_table) -> None:
    """A partition already in (id, time) order is searched as it is; any other
    is sorted by id, then time (stable), NaN times last."""
    from clperiod.dask.api import _by_object_and_time

    for frame, id_col in ((long_table, "id"), (long_table.set_index("id"), "id")):
        assert _by_object_and_time(frame, id_col, "t") is frame
    stable = dict(kind="stable")
    late = long_table.iloc[np.r_[1, 0, 2:len(long_table)]]  # two times of object 0 swapped
    backwards = long_table.iloc[::-1]
    gap = long_table.assign(t=np.where(np.arange(len(long_table)) == 3, np.nan, long_table.t))
    named = long_table.assign(id=long_table.id.map("star {}".format))
    for frame in (late, backwards, gap, named):
        got = _by_object_and_time(frame, "id", "t")
        key = (lambda c: c.astype(str) if c.name == "id" else c) if frame is named else None
        pd.testing.assert_frame_equal(got, frame.sort_values(["id", "t"], key=key, **stable))
        assert got is not frame


def test_object_split_across_partitions_is_reported_without_shuffle(client, long_table) -> None:
    """shuffle=False trusts the partitioning; the id check names a split object."""
    frame = dd.from_pandas(long_table, npartitions=3, sort=False)
    split = long_table["id"].iloc[frame.divisions[1]]
    assert long_table["id"].iloc[frame.divisions[1] - 1] == split
    out = clperiod.dask.lombscargle(frame, GRID, shuffle=False)
    with pytest.raises(ValueError, match=rf"object id {split} appears in partitions \[0, 1\]"
                                         r".*shuffle=True"):
        out.compute()
    unchecked = clperiod.dask.lombscargle(frame, GRID, shuffle=False, check_ids=False).compute()
    assert (unchecked["id"] == split).sum() == 2


def test_divisions_that_share_an_id_are_checked(client, catalog, long_table) -> None:
    """Parquet files holding ids 0-2 and 2-3 give divisions (0, 2, 3) with id 2
    in both partitions: indexed frames are not shuffled, and the id check
    (on by default for them) catches id 2 in partition 0, outside its
    divisions; shuffle=True mends it."""
    table = long_table.set_index("id")
    cut = catalog.ids[catalog.n_objects // 2]
    rows = int(np.flatnonzero(table.index == cut)[3])
    parts = [table.iloc[:rows], table.iloc[rows:]]
    frame = dd.from_map(lambda part: part, parts,
                        divisions=(catalog.ids[0], cut, catalog.ids[-1]))
    assert frame.known_divisions
    with pytest.raises(ValueError, match=rf"partition 0: object id {cut} lies outside the "
                                         r"partition's divisions .*shuffle=True"):
        clperiod.dask.lombscargle(frame, GRID).compute()
    mended = clperiod.dask.lombscargle(frame, GRID, shuffle=True).compute()
    assert_same_objects(mended, single_device(clperiod.lombscargle, catalog, GRID))


def test_divisions_are_checked_at_both_ends(catalog, long_table) -> None:
    """An id below its partition's first division, or at the next partition's
    first division, is named; the last partition includes its last division."""
    table = long_table.set_index("id")
    ids = catalog.ids
    middle = ids[catalog.n_objects // 2]
    parts = [table.loc[:middle - 1], table.loc[middle:]]
    exact = dd.from_map(lambda part: part, parts, divisions=(ids[0], middle, ids[-1]))
    expected = single_device(clperiod.lombscargle, catalog, GRID)
    assert_same_objects(clperiod.dask.lombscargle(exact, GRID).compute(scheduler="sync"),
                        expected)
    for divisions, number, named in (((ids[0], ids[1], ids[-1]), 0, ids[1]),
                                     ((ids[0], middle + 1, ids[-1]), 1, middle),
                                     ((ids[0], middle, ids[-2]), 1, ids[-1])):
        frame = dd.from_map(lambda part: part, parts, divisions=divisions)
        with pytest.raises(ValueError, match=rf"partition {number}: object id {named} lies "
                                             "outside"):
            clperiod.dask.lombscargle(frame, GRID).compute(scheduler="sync")


def test_categorical_ids_with_known_divisions_are_gathered(long_table) -> None:
    """Categorical ids, whose categories need not compare, are checked by
    gathering them, as without divisions; the results are those of string ids."""
    names = long_table.assign(id=long_table["id"].map("star {:04d}".format))
    frames = [names, names.assign(id=names["id"].astype("category"))]
    outs = []
    for frame in frames:
        indexed = dd.from_pandas(frame.set_index("id"), npartitions=3)
        assert indexed.known_divisions
        outs.append(clperiod.dask.lombscargle(indexed, GRID).compute(scheduler="sync"))
    strings, categorical = outs
    assert categorical["id"].is_unique
    pd.testing.assert_frame_equal(categorical.astype({"id": str}).reset_index(drop=True),
                                  strings.astype({"id": str}).reset_index(drop=True))


def test_known_divisions_stream_the_output(catalog, long_table) -> None:
    """With the id as the index and known divisions the check runs within each
    search: an output partition needs only its own search, and no task gathers
    the ids; without divisions one task gathers the ids of every input
    partition, and an output partition still needs only its own search (the
    check once took the output ids, which searched every partition, and the
    first one twice)."""
    def first_partition(out: dd.DataFrame) -> tuple[list[int], bool]:
        keys = [key for key in out.partitions[0].optimize().__dask_graph__()
                if isinstance(key, tuple)]
        searched = sorted({key[1] for key in keys if "_search_partition" in key[0]})
        return searched, any("customreduction" in key[0] for key in keys)

    indexed = clperiod.dask.lombscargle(by_id(long_table, 3), GRID)
    assert first_partition(indexed) == ([0], False)
    unknown = by_id(long_table, 3).clear_divisions()
    checked = clperiod.dask.lombscargle(unknown, GRID, shuffle=False)
    assert first_partition(checked) == ([0], True)


def test_output_columns_reuse_the_inputs_computed_during_the_search(catalog, monkeypatch) -> None:
    """What the output columns need of a partition's catalog (grid warnings,
    Lomb-Scargle's false-alarm inputs) is computed beside the search and not
    again by the columns."""
    from clperiod.dask.api import _column_inputs
    from clperiod.periodograms import stats

    copy = catalog.subset(np.arange(catalog.n_objects))
    result = clperiod.lombscargle(copy, GRID)
    expected = result_columns(result)
    _column_inputs(copy, clperiod.lombscargle, {}, "baluev")

    def recomputed(*args, **kwargs):
        raise AssertionError("computed again")

    monkeypatch.setattr(clperiod.grid, "_supported_frequencies", recomputed)
    monkeypatch.setattr(stats, "_time_spread", recomputed)
    got = result_columns(result)
    for name, values in expected.items():
        np.testing.assert_array_equal(got[name], values)


def test_searches_read_only_the_columns_they_need(client, catalog, long_table,
                                                  tmp_path) -> None:
    """Columns the search does not use are neither read from Parquet nor
    shuffled; the results do not change."""
    wide = long_table.assign(ra=1.5, flag="x")
    dd.from_pandas(wide, npartitions=3).to_parquet(tmp_path)
    out = clperiod.dask.lombscargle(dd.read_parquet(tmp_path), GRID, dy_col="dy")

    def operations(expr):
        yield expr
        for operand in expr.operands:
            if hasattr(operand, "operands"):
                yield from operations(operand)

    reads = [expr for expr in operations(out.optimize(fuse=False).expr)
             if type(expr).__name__.startswith("ReadParquet")]
    assert reads and all(sorted(expr.columns) == ["dy", "id", "t", "y"] for expr in reads)
    assert_same_objects(out.compute(), single_device(clperiod.lombscargle, catalog, GRID))


def test_output_metadata_is_built_once_and_handed_out_as_copies(long_table) -> None:
    """Building the lazy output reuses the empty output frame of an earlier call
    with the same id type, top_k, false-alarm method and search, as a copy: a
    change to one call's metadata reaches no other."""
    from clperiod.dask import api

    api._built_meta.cache_clear()
    frame = dd.from_pandas(long_table, npartitions=2)
    first = clperiod.dask.lombscargle(frame, GRID, dy_col="dy", top_k=2)._meta
    again = api._meta(np.dtype(np.int64), 2, "baluev", api._lombscargle)
    assert api._built_meta.cache_info().hits == 1
    assert again is not first
    pd.testing.assert_frame_equal(again, first)
    again["period"] = again["period"].astype("float32")
    assert api._meta(np.dtype(np.int64), 2, "baluev", api._lombscargle)["period"].dtype \
        == np.float64
    other = clperiod.dask.lombscargle(frame, GRID, dy_col="dy", top_k=3)._meta
    assert [c for c in other.columns if c not in first.columns] == ["period_3", "power_3"]


def test_partitions_take_the_column_types_of_dataframes(long_table) -> None:
    """Datetime times become MJD, as in clperiod.io.frames; a missing id is named."""
    head = long_table.iloc[:200]
    dated = head.assign(t=pd.Timestamp("1858-11-17") + pd.to_timedelta(head["t"], unit="D"))
    out = clperiod.dask.lombscargle(dd.from_pandas(dated, npartitions=1), GRID, dy_col="dy")
    expected = clperiod.dask.lombscargle(dd.from_pandas(head, npartitions=1), GRID, dy_col="dy")
    got, want = out.compute(scheduler="sync"), expected.compute(scheduler="sync")
    np.testing.assert_allclose(got["period"], want["period"], rtol=1e-9)
    missing = head.astype({"id": "Int64"}).assign(id=lambda f: f["id"].mask(f.index == 7))
    out = clperiod.dask.lombscargle(dd.from_pandas(missing, npartitions=1), GRID, dy_col="dy")
    with pytest.raises(ValueError, match=r"partition 0: column 'id', row 7: missing object id"):
        out.compute(scheduler="sync")


def test_nested_duplicate_id_is_reported(catalog) -> None:
    frame, _ = nested_table(catalog)
    frame.loc[5, "id"] = frame.loc[2, "id"]
    out = clperiod.dask.lombscargle(dd.from_pandas(frame, npartitions=1), GRID,
                                    nested_col="lc", dy_col="dy", nan_policy="omit")
    with pytest.raises(ValueError, match=rf"partition 0: DataFrame column 'lc': object id "
                                         rf"'{frame.loc[2, 'id']}' at row 5 repeats row 2"):
        out.compute(scheduler="sync")


# ---------------------------------------------------------------------- bands


BANDS = np.array(["g", "r", "i"])


@pytest.fixture(scope="module")
def banded_table(long_table: pd.DataFrame) -> pd.DataFrame:
    """The long table with a band label per row ("g", "r", "i" in turn)."""
    return long_table.assign(band=BANDS[np.arange(len(long_table)) % 3])


@pytest.fixture
def searched(monkeypatch) -> list[Catalog]:
    """The catalogs that clperiod.dask.lombscargle hands to the search (in this
    process: compute with the sync scheduler)."""
    catalogs: list[Catalog] = []
    search = clperiod.dask.api._lombscargle

    @functools.wraps(search)
    def recording(catalog, *args, **options):
        catalogs.append(catalog)
        return search(catalog, *args, **options)

    monkeypatch.setattr(clperiod.dask.api, "_lombscargle", recording)
    return catalogs


def catalog_rows(catalogs: list[Catalog]) -> pd.DataFrame:
    """id, t and band label of every row of ``catalogs``, sorted."""
    frame = pd.concat(
        pd.DataFrame({"id": np.repeat(c.ids, c.lengths), "t": c.t,
                      "band": c.band_labels()[c.band_codes]})
        for c in catalogs
    )
    return frame.sort_values(["id", "t", "band"]).reset_index(drop=True)


def test_bands_are_read_and_results_do_not_change(client, catalog, banded_table) -> None:
    """On the workers: the search pools the bands, as for the catalog without them."""
    out = clperiod.dask.lombscargle(time_ordered(banded_table), GRID, band_col="band", top_k=2)
    assert_same_objects(out.compute(), single_device(clperiod.lombscargle, catalog, GRID,
                                                     top_k=2))


def test_partition_catalogs_carry_the_bands(banded_table, searched) -> None:
    """Shuffled long partitions: each catalog has the labels of its rows."""
    frame = time_ordered(banded_table)
    with dask.config.set({"dataframe.shuffle.method": "tasks"}):  # P2P needs the workers
        out = clperiod.dask.lombscargle(frame, GRID, band_col="band", bands=["u", "g", "r", "i"])
        out.compute(scheduler="sync")
    assert len(searched) == 3
    assert all(c.bands == ("u", "g", "r", "i") for c in searched)
    want = banded_table[["id", "t", "band"]].sort_values(["id", "t", "band"])
    pd.testing.assert_frame_equal(catalog_rows(searched), want.reset_index(drop=True))


def test_nested_partition_catalogs_carry_the_bands(catalog, searched) -> None:
    """Integer labels in a struct field; a partition has the labels found in it."""
    labels = np.arange(catalog.t.size) % 2 + 1
    labels[catalog.offsets[1]:catalog.offsets[2]] = 7
    columns = [pa.array(values) for values in (catalog.t, catalog.y, catalog.dy, labels)]
    points = pa.StructArray.from_arrays(columns, names=["t", "y", "dy", "band"])
    lists = pa.ListArray.from_arrays(catalog.offsets.astype(np.int32), points)
    frame = pd.DataFrame({"id": catalog.ids,
                          "lc": pd.Series(lists, dtype=pd.ArrowDtype(lists.type))})
    out = clperiod.dask.lombscargle(dd.from_pandas(frame, npartitions=2, sort=False), GRID,
                                    nested_col="lc", band_col="band")
    assert_same_objects(out.compute(scheduler="sync"),
                        single_device(clperiod.lombscargle, catalog, GRID))
    searched.sort(key=lambda c: c.ids[0])
    assert [c.bands for c in searched] == [(1, 2, 7), (1, 2)]
    got = np.concatenate([c.band_labels()[c.band_codes] for c in searched])
    np.testing.assert_array_equal(got, labels)


def test_band_arguments_are_checked_at_once(banded_table, catalog) -> None:
    frame = by_id(banded_table)
    with pytest.raises(ValueError, match=r"no column \['filter'\]"):
        clperiod.dask.lombscargle(frame, GRID, band_col="filter")
    with pytest.raises(ValueError, match="no band_col"):
        clperiod.dask.supersmoother(frame, SS_GRID, bands=["g", "r"])
    with pytest.raises(ValueError, match="bands: duplicate label 'g'"):
        clperiod.dask.lombscargle(frame, GRID, band_col="band", bands=["g", "r", "g"])
    nested = dd.from_pandas(nested_table(catalog)[0], npartitions=1)
    with pytest.raises(ValueError, match=r"no field 'band' \(fields: \['t', 'y', 'dy'\]\)"):
        clperiod.dask.lombscargle(nested, GRID, nested_col="lc", band_col="band")
    unknown = clperiod.dask.lombscargle(dd.from_pandas(banded_table, npartitions=1), GRID,
                                        band_col="band", bands=["g", "r"])
    with pytest.raises(ValueError, match=r"partition 0: band label 'i' \(not in bands"):
        unknown.compute(scheduler="sync")

def banded_catalog(catalog: Catalog) -> Catalog:
    """``catalog`` with the band labels of ``banded_table``."""
    labels = BANDS[np.arange(catalog.t.size) % 3]
    return Catalog.from_arrays(np.repeat(catalog.ids, catalog.lengths), catalog.t, catalog.y,
                               catalog.dy, band=labels)


def test_multiband_matches_single_device(client, catalog, banded_table) -> None:
    """Shuffled by id on the workers; each object's bands modelled as in one call."""
    options = {"nterms_base": 2, "nterms_band": 1, "top_k": 2}
    out = clperiod.dask.lombscargle_multiband(time_ordered(banded_table), GRID, band_col="band",
                                              **options)
    table = out.compute()
    assert "fap" not in table.columns
    assert (table["status"] == Status.OK).sum() == N_OBJECTS
    expected = single_device(clperiod.lombscargle_multiband, banded_catalog(catalog), GRID,
                             None, **options)
    assert_same_objects(table, expected)
    pooled = single_device(clperiod.lombscargle_multiband, catalog, GRID, None, **options)
    assert not np.isclose(table.sort_values("id")["power"].to_numpy()[:N_OBJECTS],
                          pooled.sort_values("id")["power"].to_numpy()[:N_OBJECTS]).any()


def test_multiband_arguments_are_checked_at_once(banded_table) -> None:
    frame = by_id(banded_table)
    with pytest.raises(TypeError, match="required keyword-only argument: 'band_col'"):
        clperiod.dask.lombscargle_multiband(frame, GRID)
    with pytest.raises(ValueError, match="band_col must name a column"):
        clperiod.dask.lombscargle_multiband(frame, GRID, band_col=None)
    with pytest.raises(TypeError, match=r"lombscargle_multiband\(\) got unsupported option\(s\) "
                                        r"\['method'\]"):
        clperiod.dask.lombscargle_multiband(frame, GRID, band_col="band", method="standard")
    with pytest.raises(ValueError, match=r"top_k must be in \[1, 64\], got 65"):
        clperiod.dask.lombscargle_multiband(frame, GRID, band_col="band", top_k=65)


@pytest.mark.slow
def test_mhaov_matches_single_device(client, catalog, banded_table) -> None:
    """With band_col each object's bands enter the multiband statistic as in one call;
    without it, the single-band statistic of the pooled rows."""
    options = {"nharmonics": 2, "min_points": 8, "top_k": 2}
    banded = clperiod.dask.mhaov(time_ordered(banded_table), GRID, band_col="band", **options)
    table = banded.compute()
    assert "fap" not in table.columns
    assert (table["status"] == Status.OK).sum() == N_OBJECTS
    assert_same_objects(table, single_device(clperiod.mhaov, banded_catalog(catalog), GRID,
                                             None, **options))
    one_band = clperiod.dask.mhaov(by_id(banded_table), GRID, **options).compute()
    assert_same_objects(one_band, single_device(clperiod.mhaov, catalog, GRID, None, **options))
    assert not np.isclose(table.sort_values("id")["power"].to_numpy()[:N_OBJECTS],
                          one_band.sort_values("id")["power"].to_numpy()[:N_OBJECTS]).any()


def test_mhaov_arguments_are_checked_at_once(banded_table) -> None:
    frame = by_id(banded_table)
    with pytest.raises(TypeError, match=r"mhaov\(\) got unsupported option\(s\) "
                                        r"\['nterms_base'\]"):
        clperiod.dask.mhaov(frame, GRID, band_col="band", nterms_base=1)
    with pytest.raises(ValueError, match=r"top_k must be in \[1, 64\], got 65"):
        clperiod.dask.mhaov(frame, GRID, top_k=65)
    with pytest.raises(ValueError, match="no band_col"):
        clperiod.dask.mhaov(frame, GRID, bands=["g", "r"])


def exit_once(frame: pd.DataFrame, marker: str, partition_info=None) -> pd.DataFrame:
    """Kill the worker process computing partition 1, the first time only."""
    if partition_info is not None and partition_info["number"] == 1 \
            and not os.path.exists(marker):
        Path(marker).touch()
        os._exit(1)
    return frame


def test_killed_worker_partitions_are_recomputed(client, catalog, long_table, tmp_path) -> None:
    marker = tmp_path / "killed"
    frame = by_id(long_table, 4)
    dying = frame.map_partitions(exit_once, str(marker), meta=long_table.set_index("id").iloc[:0])
    table = clperiod.dask.lombscargle(dying, GRID, dy_col="dy").compute()
    assert marker.exists()
    assert_same_objects(table, single_device(clperiod.lombscargle, catalog, GRID))


# ---------------------------------------------------------------------- devices


def worker_report() -> tuple[int, str]:
    return binding.worker_rank(), binding.worker_device().label


@pytest.mark.slow
def test_each_worker_has_a_rank_and_device(client, cpu_device) -> None:
    client.wait_for_workers(2, timeout=60)  # a worker killed above may be restarting
    workers = client.scheduler_info(n_workers=-1)["workers"]
    reports = [client.submit(worker_report, workers=[address], pure=False).result()
               for address in workers]
    assert sorted(rank for rank, _ in reports) == [0, 1]
    assert {label for _, label in reports} == {cpu_device.label}
    # outside tasks too (client.run), where distributed has no current worker
    assert sorted(client.run(binding.worker_rank).values()) == [0, 1]


def fake_device(**fields):
    info = list_devices()[0]
    return type(info)(**{**info.__dict__, **fields})


def never() -> int:
    raise AssertionError("the rank is not needed here")


@pytest.fixture
def plain_environment(monkeypatch) -> None:
    for name in ("CLPERIOD_DEVICE", "PYOPENCL_CTX", "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)


def test_rank_picks_among_the_preferred_devices(plain_environment) -> None:
    cpu = fake_device(kind="cpu", is_nvidia=False, device_index=0)
    nv0 = fake_device(kind="gpu", is_nvidia=True, vendor="NVIDIA Corporation", device_index=1)
    nv1 = fake_device(kind="gpu", is_nvidia=True, vendor="NVIDIA Corporation", device_index=2)
    amd = fake_device(kind="gpu", is_nvidia=False, vendor="Advanced Micro Devices, Inc.")
    usable = [cpu, nv0, amd, nv1]
    assert [binding._choose_device(usable, lambda r=r: r) for r in range(3)] == [nv0, nv1, nv0]
    assert binding._choose_device([cpu, amd], lambda: 5) is amd
    assert binding._choose_device([cpu, cpu], lambda: 0) is cpu


def test_visible_devices_pick_the_first_gpu_of_the_vendor(plain_environment, monkeypatch) -> None:
    cpu = fake_device(kind="cpu", is_nvidia=False)
    nv = fake_device(kind="gpu", is_nvidia=True, vendor="NVIDIA Corporation", device_index=1)
    nv_other = fake_device(kind="gpu", is_nvidia=True, vendor="NVIDIA Corporation", device_index=2)
    amd = fake_device(kind="gpu", is_nvidia=False, vendor="Advanced Micro Devices, Inc.")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,0,1,2")
    assert binding._choose_device([cpu, amd, nv, nv_other], never) is nv
    assert binding._choose_device([cpu, amd], lambda: 0) is amd  # no NVIDIA device: rank rule
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setenv("ROCR_VISIBLE_DEVICES", "1")
    assert binding._choose_device([cpu, nv, amd], never) is amd


def test_explicit_selection_wins(plain_environment, monkeypatch) -> None:
    nv = fake_device(kind="gpu", is_nvidia=True, vendor="NVIDIA Corporation")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setenv("CLPERIOD_DEVICE", "cpu")
    cpus = select_devices("cpu")
    assert binding._choose_device([nv], lambda: 1) == cpus[1 % len(cpus)]


def test_rank_from_worker_names_and_addresses() -> None:
    assert binding._rank_from_name(3) == 3
    assert binding._rank_from_name("node7-2") == 2
    assert binding._rank_from_name("12") == 12
    assert binding._rank_from_name("tcp://10.0.0.5:40123") is None
    workers = {
        "tcp://10.0.0.6:4000": {"host": "10.0.0.6"},
        "tcp://10.0.0.5:4100": {"host": "10.0.0.5"},
        "tcp://10.0.0.5:3900": {"host": "10.0.0.5"},
    }
    assert binding._local_rank("tcp://10.0.0.5:4100", workers) == 1
    assert binding._local_rank("tcp://10.0.0.5:3900", workers) == 0
    assert binding._local_rank("tcp://10.0.0.6:4000", workers) == 0
    assert binding.worker_rank() == 0  # not on a worker


# ---------------------------------------------------------------------- arguments


def test_bad_arguments_fail_at_once(long_table, cpu_device) -> None:
    frame = by_id(long_table)
    with pytest.raises(TypeError, match=r"unsupported option\(s\) \['periodogram'\]"):
        clperiod.dask.lombscargle(frame, GRID, periodogram=True)
    with pytest.raises(TypeError, match=r"\['variant'\]"):
        clperiod.dask.lombscargle(frame, GRID, variant="original")
    with pytest.raises(ValueError, match=r"no column \['flux'\].*columns: \['t', 'y', 'dy'\]"):
        clperiod.dask.lombscargle(frame, GRID, y_col="flux")
    with pytest.raises(ValueError, match=r"no column \['obj'\]"):
        clperiod.dask.supersmoother(frame, SS_GRID, id_col="obj")
    with pytest.raises(TypeError, match="selection string"):
        clperiod.dask.lombscargle(frame, GRID, device=cpu_device)
    with pytest.raises(TypeError, match="FrequencyGrid, FrequencyArray or AutoGrid, got tuple"):
        clperiod.dask.lombscargle(frame, (0.5, 4.0, 2000))
    with pytest.raises(ValueError, match="nan_policy"):
        clperiod.dask.lombscargle(frame, GRID, nan_policy="drop")
    with pytest.raises(ValueError, match="top_k"):
        clperiod.dask.lombscargle(frame, GRID, top_k=0)
    with pytest.raises(TypeError, match="shuffle must be True, False or None, got 'yes'"):
        clperiod.dask.lombscargle(frame, GRID, shuffle="yes")
    with pytest.raises(TypeError, match="dask.dataframe.DataFrame"):
        clperiod.dask.lombscargle(long_table, GRID)
    with pytest.raises(ValueError, match=r"column 't' must hold list<struct<...>> values"):
        clperiod.dask.lombscargle(frame, GRID, nested_col="t")


def test_bad_nested_fields_fail_at_once(catalog) -> None:
    frame = dd.from_pandas(nested_table(catalog)[0], npartitions=1)
    with pytest.raises(ValueError, match=r"no field 'flux' \(fields: \['t', 'y', 'dy'\]\)"):
        clperiod.dask.lombscargle(frame, GRID, nested_col="lc", y_col="flux")
