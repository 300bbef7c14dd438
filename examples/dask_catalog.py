"""clperiod on a Dask cluster: the Stripe 82 RR Lyrae catalog, one search per partition.

Run it directly::

    python3 examples/dask_catalog.py [--workers 2] [--partitions 4] [--scheduler ADDRESS]

Without ``--scheduler`` it starts a ``LocalCluster`` of single-threaded worker
processes on this machine; each worker binds itself to one OpenCL device
(``clperiod.dask.workers.worker_device``). With ``--scheduler`` it connects to a
running cluster, e.g. the multi-node GPU recipe of the README. It prints the
best periods and compares them, object by object, with a single-device run in
this process.
"""

from __future__ import annotations

import argparse
import os
import time

import dask.dataframe as dd
import numpy as np
import pandas as pd
from distributed import Client, LocalCluster

import clperiod
import clperiod.dask
from clperiod.io import load_example
from clperiod.io.tables import result_columns

GRID = clperiod.FrequencyGrid.from_range(0.1, 10.0, 330_000)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2, help="local worker processes")
    parser.add_argument("--partitions", type=int, default=4, help="partitions of the catalog")
    parser.add_argument("--scheduler", default=None,
                        help="address of a running scheduler, e.g. tcp://head:8786")
    return parser.parse_args()


def pocl_thread_cap(workers: int) -> dict[str, str]:
    """PoCL environment sharing the cores among the local workers (no effect on GPUs).

    ``POCL_CPU_MAX_CU_COUNT`` is read by PoCL >= 4.0, ``POCL_MAX_PTHREAD_COUNT``
    by older releases such as Debian bookworm's 3.1.
    """
    threads = str(max(1, (os.cpu_count() or 1) // workers))
    return {"POCL_CPU_MAX_CU_COUNT": threads, "POCL_MAX_PTHREAD_COUNT": threads}


def long_frame(catalog: clperiod.Catalog, partitions: int) -> dd.DataFrame:
    """One row per observation, indexed by object id, each object in one partition."""
    order = np.argsort(catalog.ids, kind="stable")
    catalog = catalog.subset(order)
    table = pd.DataFrame({"id": np.repeat(catalog.ids, catalog.lengths),
                          "t": catalog.t, "y": catalog.y, "dy": catalog.dy})
    return dd.from_pandas(table.set_index("id"), npartitions=partitions)


def main() -> None:
    args = parse_args()
    catalog = load_example("stripe82")
    frame = long_frame(catalog, args.partitions)
    cluster = None if args.scheduler else LocalCluster(
        n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None,
        env=pocl_thread_cap(args.workers))
    with Client(args.scheduler or cluster) as client:
        print(f"cluster: {len(client.scheduler_info(n_workers=-1)['workers'])} workers, "
              f"{frame.npartitions} partitions, {catalog.n_objects} stars x {GRID.nf} frequencies")
        start = time.perf_counter()
        table = clperiod.dask.lombscargle(frame, GRID, dy_col="dy").compute(retries=2)
        print(f"Dask: {time.perf_counter() - start:.1f} s")
    if cluster is not None:
        cluster.close()
    table = table.sort_values("id").reset_index(drop=True)
    print(table[["id", "n_points", "period", "power", "fap", "status_name"]].head(10).to_string())

    start = time.perf_counter()
    single = pd.DataFrame(result_columns(clperiod.lombscargle(catalog, GRID)))
    print(f"one device in this process: {time.perf_counter() - start:.1f} s")
    single = single.sort_values("id").reset_index(drop=True)
    same = np.array_equal(table["period"], single["period"], equal_nan=True) and \
        np.array_equal(table["power"], single["power"], equal_nan=True)
    print(f"every object once: {table['id'].is_unique and len(table) == catalog.n_objects}; "
          f"periods and powers equal to the single-device run: {same}")


if __name__ == "__main__":
    main()
