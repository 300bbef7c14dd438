"""Band labels through catalog runs: every source hands the search chunks that
keep their bands, and today's searches (which pool the bands) give the results
of the same catalog without bands."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import clperiod
from clperiod import Catalog
from clperiod.io import catalog_from_dataframe, load_example, open_catalog
from clperiod.pipeline import PeriodSearch, run_catalog
from clperiod.pipeline import run as pipeline

GRID = clperiod.FrequencyGrid.from_range(0.5, 4.0, 600)
N_OBJECTS = 12
LABELS = np.array(["g", "r", "i"])
pytestmark = pytest.mark.filterwarnings("ignore::clperiod.pipeline.GridResolutionWarning")


@pytest.fixture(scope="module")
def plain() -> Catalog:
    return load_example("stripe82").subset(np.arange(N_OBJECTS))


@pytest.fixture(scope="module")
def banded(plain) -> Catalog:
    """The same rows, each with a band label ("g", "r", "i" in turn; no "u")."""
    band = LABELS[np.arange(plain.t.size) % 3]
    ids = np.repeat(plain.ids, plain.lengths)
    return Catalog.from_arrays(ids, plain.t, plain.y, plain.dy, band=band, bands=list("ugri"))


@pytest.fixture
def received(monkeypatch) -> list[Catalog]:
    """The catalogs the run hands to the search (queued and periodogram searches)."""
    catalogs: list[Catalog] = []
    for method in ("start", "run"):
        original = getattr(PeriodSearch, method)

        def recording(self, catalog, _original=original, **options):
            catalogs.append(catalog)
            return _original(self, catalog, **options)

        monkeypatch.setattr(PeriodSearch, method, recording)
    return catalogs


def _results(path) -> pd.DataFrame:
    return pq.read_table(path).to_pandas()


def _run(source, tmp_path, name, **options):
    search = PeriodSearch("lombscargle", GRID, {"top_k": 2})
    return run_catalog(source, search, tmp_path / f"{name}.parquet", progress=False, **options)


def assert_carry_bands(chunks: list[Catalog], whole: Catalog) -> None:
    """Chunks of whole objects, in order, with the rows and band labels of ``whole``."""
    assert len(chunks) > 1
    ids = np.concatenate([chunk.ids for chunk in chunks])
    np.testing.assert_array_equal(ids, whole.ids)
    labels = np.concatenate([chunk.band_labels()[chunk.band_codes] for chunk in chunks])
    np.testing.assert_array_equal(labels, whole.band_labels()[whole.band_codes])
    np.testing.assert_array_equal(np.concatenate([chunk.t for chunk in chunks]), whole.t)


def test_catalog_chunks_keep_the_bands_and_results_do_not_change(
    tmp_path, plain, banded, received, cpu_device
):
    run = _run(banded, tmp_path, "banded", chunk_rows=400, device=cpu_device)
    assert run.n_chunks == len(received) > 1
    assert all(chunk.bands == ("u", "g", "r", "i") for chunk in received)
    assert_carry_bands(received, banded)
    reference = _run(plain, tmp_path, "plain", chunk_rows=400, device=cpu_device)
    pd.testing.assert_frame_equal(_results(run.output), _results(reference.output))


def test_periodogram_groups_keep_the_bands(tmp_path, plain, banded, received, monkeypatch,
                                           cpu_device):
    monkeypatch.setattr(pipeline, "_group_objects", lambda grid: 3)
    run = _run(banded, tmp_path, "banded", chunk_rows=400, device=cpu_device,
               periodogram=tmp_path / "banded.npy")
    assert len(received) > run.n_chunks
    assert_carry_bands(received, banded)
    reference = _run(plain, tmp_path, "plain", chunk_rows=400, device=cpu_device,
                     periodogram=tmp_path / "plain.npy")
    np.testing.assert_array_equal(np.load(run.periodogram), np.load(reference.periodogram))
    pd.testing.assert_frame_equal(_results(run.output), _results(reference.output))


def test_light_curves_and_dataframes_keep_the_bands(tmp_path, banded, received, cpu_device):
    curves = [banded.lightcurve(k) for k in range(banded.n_objects)]
    _run(curves, tmp_path, "curves", chunk_rows=400, device=cpu_device)
    from_list = Catalog.from_lightcurves(curves)
    assert_carry_bands(received, from_list)
    assert received[0].bands == ("g", "i", "r")
    received.clear()
    rows = np.repeat(banded.ids, banded.lengths)
    frame = pd.DataFrame({"id": rows, "t": banded.t, "y": banded.y, "dy": banded.dy,
                          "filter": banded.band_labels()[banded.band_codes]})
    from_frame = catalog_from_dataframe(frame, dy_col="dy", band_col="filter")
    _run(from_frame, tmp_path, "frame", chunk_rows=400, device=cpu_device)
    assert_carry_bands(received, from_frame)


def test_file_chunks_keep_the_bands(tmp_path, plain, banded, received, cpu_device):
    path = tmp_path / "banded.parquet"
    pd.DataFrame({"id": np.repeat(banded.ids, banded.lengths), "t": banded.t, "y": banded.y,
                  "dy": banded.dy, "filter": banded.band_labels()[banded.band_codes]}
                 ).to_parquet(path)
    reader = open_catalog(path, band_col="filter", bands=["u", "g", "r", "i"], chunk_rows=400)
    run = _run(reader, tmp_path, "banded", device=cpu_device)
    assert all(chunk.bands == ("u", "g", "r", "i") for chunk in received)
    assert_carry_bands(received, banded)
    reference = _run(plain, tmp_path, "plain", device=cpu_device)
    pd.testing.assert_frame_equal(_results(run.output), _results(reference.output))


def test_an_in_memory_catalog_is_identified_with_its_bands(plain, banded):
    """Catalogs without bands keep the identity of earlier runs (their work
    directories resume); the bands and their labels are part of it."""
    tiny = Catalog(np.array([3, 5]), np.array([0, 2, 3]), np.arange(3.0), np.ones(3))
    assert pipeline._MemorySource(tiny, 10).identity() == {
        "catalog_blake2b": "8e3c5c25598c95189e482b754c43f110"
    }
    relabelled = Catalog(banded.ids, banded.offsets, banded.t, banded.y, banded.dy,
                         band_codes=banded.band_codes, bands=("u", "g", "i", "r"))
    identities = {
        str(pipeline._MemorySource(catalog, 400).identity())
        for catalog in (plain, banded, relabelled)
    }
    assert len(identities) == 3
