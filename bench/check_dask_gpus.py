"""Dask with one worker per GPU (issues 6 and 25): binding, results and throughput.

Runs :func:`clperiod.dask.lombscargle` (``top_k=3``) on the Lomb-Scargle catalog of
``bench_multidevice.py`` (``bench_lombscargle.py``'s 1000 synthetic objects repeated
``--copies`` times: 16,000 objects by default; ``--nf`` frequencies, default 2x10^5) as a
frame indexed by id with known divisions, in ``--partitions`` partitions. For one worker
and for ``--workers`` workers (default 2, one per GPU) it starts a
``distributed.LocalCluster`` of worker processes (one thread each, or
``--threads-per-worker``) without device variables, so that each binds itself by rank to
its own device (``clperiod.dask.workers``), and reports, for the frame held in the workers' memory
(``--source memory``: persisted with its partitions dealt to the workers in turn, or where
the scheduler puts them with ``--placement dask``; each search then runs where its
partition lies) or read by the workers from one Parquet file per partition in every search
(``--source parquet``, as a survey pipeline reads its light curves; the scheduler hands
each read to a free worker):

* every worker's rank and device (label and PCI bus:slot of NVIDIA devices) and whether
  the workers hold distinct devices;
* whether every object appears exactly once and its columns (frequency, power, FAP,
  top-k peaks, status) equal those of a one-device in-process search, object by object;
* the wall time of a warm run (best of ``--repeat`` after a first run that builds the
  kernels), the objects per second, and how many partitions each worker searched in it;

and the ratio of the two throughputs (issue 25 asks >= 1.8 for two GPUs).

One computation of the catalog (``--in-flight 1``, the default) times its whole
latency, Dask's fixed cost included: submitting the graph, and collecting the output
on one worker and sending it to the client (``--concatenate client`` collects the
partitions on the client instead, ``compute(concatenate=False)``). ``--in-flight N``
computes N copies of the catalog (distinct ids) together, as a survey streams its
chunks, so that one copy's fixed cost overlaps the others' searches: the throughput of a
stream of such catalogs.
``--cuda-visible-devices`` also runs two ``dask worker`` processes given
``CUDA_VISIBLE_DEVICES`` "0,1" and "1,0", as dask-cuda sets it, and checks them the
same way (binding and results).

Small sizes check the script on a CPU: ``CLPERIOD_DEVICE`` is removed for the
workers, which then all take the CPU device, e.g. ``--copies 1 --nf 2000
--partitions 4``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd
from bench_lombscargle import synthetic_catalog
from bench_multidevice import repeated

import clperiod
import clperiod.dask
from clperiod import FrequencyGrid, lombscargle
from clperiod.dask.workers import worker_device, worker_rank
from clperiod.io.tables import result_columns

TOP_K = 3


def physical(info) -> str:
    """PCI bus:slot of an NVIDIA device (the same GPU under any device order)."""
    try:
        return f"{info.device.pci_bus_id_nv}:{info.device.pci_slot_id_nv}"
    except Exception:  # other vendors: no such query
        return info.label


def where() -> dict:
    info = worker_device()
    return {"rank": worker_rank(), "device": info.label, "pci": physical(info),
            "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES")}


def compared(table: pd.DataFrame, expected: pd.DataFrame) -> dict:
    """Whether every object of ``expected`` appears once in ``table``, no other, and
    with equal columns (NaN equal to NaN)."""
    counts = table["id"].value_counts()
    once = bool((counts == 1).all()) and set(counts.index) == set(expected.index)
    same = False
    if once:
        table = table.set_index("id").loc[expected.index]
        same = all(np.array_equal(table[name].to_numpy(), expected[name].to_numpy(),
                                  equal_nan=expected[name].dtype.kind == "f")
                   for name in expected.columns)
    return {"every_object_once": once, "identical_to_one_device": same}


def check(client, source, grid, expected: pd.DataFrame, n_workers: int, repeat: int,
          concatenate: bool = True) -> dict:
    """Binding, results and warm wall time of the cluster behind ``client`` on the
    frames ``source(client)`` gives (copies of the catalog, ids apart by
    :data:`ID_STEP`), with the searches each worker ran in the fastest run."""
    import dask
    from distributed import get_task_stream

    client.wait_for_workers(n_workers, timeout=120)
    workers = list(client.run(where).values())
    frames = source(client)

    def search() -> pd.DataFrame:
        lazy = [clperiod.dask.lombscargle(frame, grid, dy_col="dy", top_k=TOP_K)
                for frame in frames]
        if len(lazy) == 1:
            return lazy[0].compute(concatenate=concatenate)
        return pd.concat(dask.compute(*lazy), ignore_index=True)

    table = search()  # builds the kernels on every worker
    times, placements = [], []
    for _ in range(repeat):
        with get_task_stream(client) as stream:
            started = time.perf_counter()
            table = search()
            times.append(time.perf_counter() - started)
        placements.append(searches_per_worker(stream.data))
    wall = min(times)
    first = table[table["id"] < ID_STEP]
    others = table[table["id"] >= ID_STEP]
    copies_once = bool(others["id"].is_unique) and len(others) == len(expected) * (len(frames) - 1)
    checked = compared(first, expected)
    checked["every_object_once"] &= copies_once
    return {"n_workers": n_workers, "workers": workers,
            "distinct_devices": len({w["pci"] for w in workers}) == len(workers),
            **checked, "warm_s": wall, "runs_s": times,
            "median_s": float(np.median(times)),
            "searches_per_worker": placements[times.index(wall)],
            "objects_per_s": len(frames) * len(expected) / wall}


#: Id offset between the copies of the catalog that ``--in-flight`` searches together.
ID_STEP = 10_000_000


def dealt(client, ddf):
    """``ddf`` persisted with its partitions dealt to the workers in turn."""
    import dask.dataframe as dd

    workers = sorted(client.scheduler_info()["workers"])
    futures = [client.compute(part, workers=[workers[i % len(workers)]])
               for i, part in enumerate(ddf.to_delayed())]
    return dd.from_delayed(futures, meta=ddf._meta, divisions=ddf.divisions, verify_meta=False)


def searches_per_worker(tasks: list[dict]) -> dict:
    """Partitions searched by each worker, and their compute seconds."""
    out: dict = {}
    for task in tasks:
        key = task["key"][0] if isinstance(task["key"], tuple) else task["key"]
        if "search_partition" not in str(key):
            continue
        entry = out.setdefault(task["worker"], {"partitions": 0, "compute_s": 0.0})
        entry["partitions"] += 1
        entry["compute_s"] += sum(step["stop"] - step["start"]
                                  for step in task["startstops"] if step["action"] == "compute")
    return out


def local_cluster(n_workers: int, threads: int = 1):
    from distributed import LocalCluster

    return LocalCluster(n_workers=n_workers, threads_per_worker=threads, processes=True,
                        dashboard_address=None)


def visible_devices_rule(source, grid, expected, repeat: int) -> dict:
    """Two ``dask worker`` processes with ``CUDA_VISIBLE_DEVICES`` rotated."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=0, processes=True, dashboard_address=None) as cluster:
        workers = [subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", cluster.scheduler_address,
             "--nthreads", "1", "--name", f"cuda-{rank}", "--no-dashboard"],
            env={**os.environ, "CUDA_VISIBLE_DEVICES": visible},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for rank, visible in enumerate(("0,1", "1,0"))]
        try:
            with Client(cluster) as client:
                return check(client, source, grid, expected, 2, repeat)
        finally:
            for worker in workers:
                worker.terminate()
                worker.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=16,
                        help="copies of the 1000 synthetic objects (16: 16,000 objects)")
    parser.add_argument("--nf", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2, help="workers of the scaled run")
    parser.add_argument("--threads-per-worker", type=int, default=1,
                        help="threads of each worker (two let one partition's host work "
                             "overlap another's device work)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--source", choices=("memory", "parquet"), default="memory",
                        help="the frame persisted on the workers, or read from Parquet files "
                             "in every search")
    parser.add_argument("--placement", choices=("dealt", "dask"), default="dealt",
                        help="memory source: partitions dealt to the workers in turn, or "
                             "left where the scheduler's persist puts them")
    parser.add_argument("--in-flight", type=int, default=1,
                        help="copies of the catalog computed together (throughput of a stream)")
    parser.add_argument("--concatenate", choices=("workers", "client"), default="workers",
                        help="where one computation's output partitions are collected")
    parser.add_argument("--cuda-visible-devices", action="store_true",
                        help="also check two workers bound by CUDA_VISIBLE_DEVICES")
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args()
    import dask.dataframe as dd
    from distributed import Client

    catalog = repeated(synthetic_catalog(1000), args.copies)
    grid = FrequencyGrid.from_range(0.1, 10.0, args.nf)
    device = clperiod.select_devices()[:1]
    reference = lombscargle(catalog, grid, top_k=TOP_K, device=device)
    expected = pd.DataFrame(result_columns(reference)).set_index("id")
    frame = pd.DataFrame({"id": np.repeat(catalog.ids, catalog.lengths), "t": catalog.t,
                          "y": catalog.y, "dy": catalog.dy}).set_index("id")
    ddfs = [dd.from_pandas(frame.set_axis(frame.index + k * ID_STEP), npartitions=args.partitions,
                           sort=True) for k in range(args.in_flight)]
    folder = tempfile.TemporaryDirectory()
    if args.source == "parquet":
        for k, ddf in enumerate(ddfs):
            ddf.to_parquet(os.path.join(folder.name, str(k)))

        def source(client):
            return [dd.read_parquet(os.path.join(folder.name, str(k)), index="id",
                                    calculate_divisions=True) for k in range(args.in_flight)]
    elif args.placement == "dealt":

        def source(client):
            return [dealt(client, ddf) for ddf in ddfs]
    else:

        def source(client):
            return [ddf.persist() for ddf in ddfs]

    out = {"date": datetime.date.today().isoformat(), "command": " ".join(sys.argv),
           "devices": [d.label for d in clperiod.select_devices("all")],
           "reference_device": device[0].label, "n_objects": catalog.n_objects,
           "n_points": int(catalog.lengths.sum()), "nf": args.nf, "top_k": TOP_K,
           "partitions": args.partitions, "source": args.source,
           "placement": args.placement if args.source == "memory" else None,
           "in_flight": args.in_flight, "concatenate": args.concatenate,
           "threads_per_worker": args.threads_per_worker}
    for variable in ("CLPERIOD_DEVICE", "PYOPENCL_CTX", "CUDA_VISIBLE_DEVICES"):
        os.environ.pop(variable, None)  # the workers bind themselves
    for n_workers in (1, args.workers):
        cluster = local_cluster(n_workers, args.threads_per_worker)
        with cluster, Client(cluster) as client:
            out[f"local_cluster_{n_workers}_workers"] = check(
                client, source, grid, expected, n_workers, args.repeat,
                args.concatenate == "workers")
    runs = [out[f"local_cluster_{n}_workers"] for n in (1, args.workers)]
    out["throughput_ratio"] = runs[0]["warm_s"] / runs[1]["warm_s"]
    out["throughput_ratio_median"] = runs[0]["median_s"] / runs[1]["median_s"]
    if args.cuda_visible_devices:
        out["cuda_visible_devices_rule"] = visible_devices_rule(source, grid, expected,
                                                                args.repeat)
    folder.cleanup()
    text = json.dumps(out, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as file:
            file.write(text)


if __name__ == "__main__":
    main()
