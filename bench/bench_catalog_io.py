"""Catalog throughput end to end: a Parquet file in, a results Parquet file out (issue #6).

The catalog is the 1000-object Lomb-Scargle catalog of ``bench_lombscargle.py``
(``synthetic_catalog``: log-normal lengths, mean ~165 points, ZTF-like cadence),
written as long-format Parquet (``id, t, y, dy``, one row per observation) and
as nested Parquet (``id`` plus a ``list<struct<t, y, dy>>`` column).

Reported per workload:

* ``compute_s``: ``clperiod.lombscargle`` on the in-memory catalog, best
  periods only (the ``catalog`` workload of ``bench_lombscargle.py``);
* ``table_s``: :func:`clperiod.io.tables.result_columns` of that result (the
  per-object table, false-alarm probabilities included);
* for each layout and chunking: ``end_to_end_s`` of
  :func:`clperiod.pipeline.run_catalog` from the Parquet file to a results
  Parquet file (reading, checking, searching, tables, part files, joining),
  the stage sums it reports, and the I/O overhead
  ``end_to_end_s / compute_s - 1`` (and over ``compute_s + table_s``).
  Chunkings: ``default`` (the reader's defaults: chunks ramp up from
  ``FIRST_CHUNK_ROWS`` to ``DEFAULT_CHUNK_ROWS`` observations), for each
  ``--first`` value ``n`` the ramp from ``n`` observations, and for each
  ``--chunks`` count ``n``, ``n`` equal chunks without the ramp.

Workloads: ``catalog`` (N_f = 2x10^5, for GPUs) and ``cpu`` (N_f = 5,000, for a
CPU runtime); ``--objects`` and ``--nf`` scale them (a run's fixed costs,
reading its first chunk and closing its output, weigh less in longer runs).
Every time is the best of ``--repeat`` runs after a warm-up.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from bench_lombscargle import synthetic_catalog
from harness import best_of, run_report

import clperiod
from clperiod import FrequencyGrid, lombscargle
from clperiod.io.readers import open_catalog
from clperiod.pipeline import PeriodSearch, run_catalog
from clperiod.io.tables import result_columns

NF = {"catalog": 200_000, "cpu": 5_000}


def write_inputs(catalog, folder: Path) -> dict[str, Path]:
    """The catalog as long and as nested Parquet files."""
    ids = np.repeat(catalog.ids, catalog.lengths)
    long_path = folder / "catalog_long.parquet"
    pq.write_table(pa.table({"id": ids, "t": catalog.t, "y": catalog.y, "dy": catalog.dy}),
                   long_path)
    struct = pa.StructArray.from_arrays(
        [pa.array(catalog.t), pa.array(catalog.y), pa.array(catalog.dy)], names=["t", "y", "dy"])
    lists = pa.ListArray.from_arrays(pa.array(catalog.offsets.astype(np.int32)), struct)
    nested_path = folder / "catalog_nested.parquet"
    pq.write_table(pa.table({"id": catalog.ids, "lc": lists}), nested_path)
    return {"long": long_path, "nested": nested_path}


def end_to_end(path: Path, grid: FrequencyGrid, chunking: dict, folder: Path, repeat: int):
    """Best wall time of a whole run (after a warm-up) and that run's stage timings."""
    search = PeriodSearch("lombscargle", grid)
    runs = []

    def once():
        reader = open_catalog(path, **chunking)
        run = run_catalog(reader, search, folder / "results.parquet", restart=True,
                          progress=False)
        runs.append(run)
        return run

    wall, run = best_of(once, repeat)
    best = min(runs[1:], key=lambda r: r.timings["total_s"])
    return wall, best


def bench(workload: str, repeat: int, chunks: list[int], layouts: list[str],
          n_objects: int = 1000, nf: int | None = None, folder: str | None = None,
          first_rows: list[int] = ()) -> dict:
    catalog = synthetic_catalog(n_objects)
    grid = FrequencyGrid.from_range(0.1, 10.0, nf or NF[workload])
    info = clperiod.select_devices()[0]
    rows = int(catalog.lengths.sum())
    out = {"device": info.label, "n_objects": catalog.n_objects, "n_t": rows, "nf": grid.nf}
    compute, result = best_of(lambda: lombscargle(catalog, grid), repeat)
    table, _ = best_of(lambda: result_columns(result), repeat)
    out["compute_s"], out["table_s"] = compute, table
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        out["folder"] = tmp
        folder = Path(tmp)
        started = time.perf_counter()
        inputs = write_inputs(catalog, folder)
        out["write_inputs_s"] = time.perf_counter() - started
        out["input_bytes"] = {k: v.stat().st_size for k, v in inputs.items()}
        chunkings = {"default": {}} | {
            f"first_{n}": {"first_chunk_rows": n} for n in first_rows} | {
            f"{n}_chunks": {"chunk_rows": math.ceil(rows / n), "first_chunk_rows": None}
            for n in chunks}
        for layout in layouts:
            for name, chunking in chunkings.items():
                wall, run = end_to_end(inputs[layout], grid, chunking, folder, repeat)
                expected = pq.read_table(folder / "results.parquet").column("period").to_numpy()
                assert np.array_equal(expected, result.period, equal_nan=True)
                out[f"{layout}_{name}"] = {
                    "reader": chunking or "defaults",
                    "chunks": run.n_chunks,
                    "end_to_end_s": wall,
                    "stages_s": {k: round(v, 6) for k, v in run.timings.items()},
                    "io_overhead_over_compute": wall / compute - 1,
                    "io_overhead_over_compute_and_table": wall / (compute + table) - 1,
                }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="+", choices=sorted(NF))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--chunks", type=int, nargs="+", default=[1, 4, 10],
                        help="also cut the catalog into this many equal chunks, without "
                        "the ramp (one run per count)")
    parser.add_argument("--first", type=int, nargs="*", default=[],
                        help="also ramp up from first chunks of this many observations "
                        "(one run per value; the default is FIRST_CHUNK_ROWS)")
    parser.add_argument("--layouts", nargs="+", choices=["long", "nested"],
                        default=["long", "nested"])
    parser.add_argument("--objects", type=int, default=1000, help="catalog size (default 1000)")
    parser.add_argument("--nf", type=int, help="grid size (default: the workload's)")
    parser.add_argument("--folder", help="where the input and output files go (default: "
                        "the system's temporary folder; e.g. /dev/shm for a RAM disk)")
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args()
    run_report("bench_catalog_io.py", args.workloads,
               lambda name: bench(name, args.repeat, args.chunks, args.layouts, args.objects,
                                  args.nf, args.folder, args.first), args.out)


if __name__ == "__main__":
    main()
