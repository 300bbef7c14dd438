"""clperiod.dask.pdm, aov, conditional_entropy and bls: every object's row equals the
library call on the whole catalog (bitwise: each object is computed by the same kernels
whatever catalog holds it), on a two-worker LocalCluster and with the sync scheduler."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import clperiod
import clperiod.dask
from clperiod.catalog import Catalog
from clperiod.io import load_example
from clperiod.io.tables import result_columns

GRID = clperiod.FrequencyGrid.from_range(0.5, 4.0, 500)
#: name -> (options, the best-value column)
SEARCHES = {
    "pdm": ({"n_bins": 8, "n_covers": 2, "top_k": 2}, "statistic_min"),
    "aov": ({"n_bins": 6, "top_k": 3, "precision": "fp32"}, "statistic_max"),
    "conditional_entropy": ({"magnitude_bins": 4, "top_k": 2}, "statistic_min"),
    "bls": ({"durations": [0.02, 0.05], "objective": "snr", "top_k": 2}, "power"),
}
WORKER_ENV = {"POCL_MAX_PTHREAD_COUNT": "1", "POCL_CPU_MAX_CU_COUNT": "1"}


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    """Ten Stripe 82 RR Lyrae, sorted by id, and a 3-point object."""
    stripe82 = load_example("stripe82")
    stars = stripe82.subset(np.argsort(stripe82.ids)[:10])
    tiny = (np.array([0.0, 1.0, 2.5]), np.array([1.0, 2.0, 1.5]), np.full(3, 0.1))
    curves = [stars.lightcurve(k) for k in range(stars.n_objects)] + [tiny]
    return Catalog.from_lightcurves(curves, ids=np.append(stars.ids, stars.ids.max() + 1))


@pytest.fixture(scope="module")
def frame(catalog: Catalog) -> dd.DataFrame:
    ids = np.repeat(catalog.ids, catalog.lengths)
    table = pd.DataFrame({"id": ids, "t": catalog.t, "y": catalog.y, "dy": catalog.dy})
    return dd.from_pandas(table.set_index("id"), npartitions=3)


def expected(name: str, catalog: Catalog, **options) -> pd.DataFrame:
    result = getattr(clperiod, name)(catalog, GRID, **options)
    return pd.DataFrame(result_columns(result, fap_method=None))


def assert_same_objects(out: pd.DataFrame, want: pd.DataFrame) -> None:
    assert out["id"].is_unique
    got = out.sort_values("id").reset_index(drop=True)
    want = want.astype({"id": got["id"].dtype, "status_name": got["status_name"].dtype})
    pd.testing.assert_frame_equal(got, want, check_exact=True)


@pytest.mark.parametrize("name", sorted(SEARCHES))
def test_sync_scheduler_matches_the_library(frame, catalog, name) -> None:
    options, value = SEARCHES[name]
    out = getattr(clperiod.dask, name)(frame, GRID, **options)
    assert list(out.columns[4:6]) == [value, "depth" if name == "bls" else "period_1"]
    table = out.compute(scheduler="sync")
    assert_same_objects(table, expected(name, catalog, **options))
    assert table["status_name"].iloc[-1] == ("OK" if name == "bls" else "TOO_FEW_POINTS")


@pytest.mark.slow
def test_two_workers_match_the_library(frame, catalog) -> None:
    from distributed import Client, LocalCluster

    with (LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                       dashboard_address=None, env=WORKER_ENV) as cluster,
          Client(cluster)):
        outs = {name: getattr(clperiod.dask, name)(frame, GRID, **options)
                for name, (options, _) in SEARCHES.items()}
        tables = dict(zip(outs, dd.compute(*outs.values()), strict=True))
    for name, table in tables.items():
        assert_same_objects(table, expected(name, catalog, **SEARCHES[name][0]))


def test_bad_options_raise_at_once(frame) -> None:
    with pytest.raises(TypeError, match=r"clperiod.dask.pdm\(\) got unsupported option\(s\) "
                                        r"\['magnitude_bins'\]"):
        clperiod.dask.pdm(frame, GRID, magnitude_bins=3)
    with pytest.raises(ValueError, match="duration"):
        clperiod.dask.bls(frame, GRID, durations=[0.3])
    with pytest.raises(TypeError, match="durations"):
        clperiod.dask.bls(frame, GRID)
