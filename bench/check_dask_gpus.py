"""Dask workers on a multi-GPU host: is each bound to its own GPU (issue #6)?

Runs :func:`clperiod.dask.lombscargle` on the synthetic catalog of
``bench_lombscargle.py`` (``--objects``, ``--nf``) split into ``--partitions``
partitions, on two two-worker clusters:

* a ``distributed.LocalCluster`` of two worker processes and no device
  variables (binding by worker rank);
* a scheduler with two ``dask worker`` processes that each get
  ``CUDA_VISIBLE_DEVICES`` rotated ("0,1" and "1,0"), as dask-cuda's
  ``LocalCUDACluster`` sets it.

For each it reports every worker's rank and device (label and PCI bus:slot
of NVIDIA devices), whether the workers hold distinct GPUs, whether the
results equal a single-device in-process search object by object, and the
wall time of a warm run against that of the in-process search.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np
import pandas as pd
from bench_lombscargle import synthetic_catalog

import clperiod
import clperiod.dask
from clperiod import FrequencyGrid, lombscargle
from clperiod.dask.workers import worker_device, worker_rank


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


def check(client, ddf, grid, reference, in_process_s) -> dict:
    client.wait_for_workers(2, timeout=60)
    workers = client.run(where)
    clperiod.dask.lombscargle(ddf, grid, dy_col="dy").compute()  # warm-up
    started = time.perf_counter()
    table = clperiod.dask.lombscargle(ddf, grid, dy_col="dy").compute()
    wall = time.perf_counter() - started
    table = table.set_index("id").loc[reference.ids]
    same = all(np.array_equal(table[column].to_numpy(), values, equal_nan=True)
               for column, values in (("frequency", reference.frequency_best),
                                      ("power", reference.power_best)))
    return {"workers": list(workers.values()),
            "distinct_devices": len({w["pci"] for w in workers.values()}) == len(workers),
            "identical_to_one_device": same, "cluster_s": wall, "in_process_one_device_s": in_process_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=4000)
    parser.add_argument("--nf", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args()
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    catalog = synthetic_catalog(args.objects)
    grid = FrequencyGrid.from_range(0.1, 10.0, args.nf)
    device = clperiod.select_devices()[:1]
    lombscargle(catalog, grid, device=device)
    started = time.perf_counter()
    reference = lombscargle(catalog, grid, device=device)
    in_process = time.perf_counter() - started
    frame = pd.DataFrame({"id": np.repeat(catalog.ids, catalog.lengths), "t": catalog.t,
                          "y": catalog.y, "dy": catalog.dy}).set_index("id")
    ddf = dd.from_pandas(frame, npartitions=args.partitions, sort=True)
    for variable in ("CLPERIOD_DEVICE", "PYOPENCL_CTX", "CUDA_VISIBLE_DEVICES"):
        os.environ.pop(variable, None)  # the workers bind themselves
    out = {"date": datetime.date.today().isoformat(), "command": " ".join(sys.argv),
           "devices": [d.label for d in clperiod.select_devices("all")],
           "n_objects": args.objects, "nf": args.nf, "partitions": args.partitions}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        out["local_cluster_rank_rule"] = check(client, ddf, grid, reference, in_process)
    with LocalCluster(n_workers=0, processes=True, dashboard_address=None) as cluster:
        workers = [subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", cluster.scheduler_address,
             "--nthreads", "1", "--name", f"cuda-{rank}", "--no-dashboard"],
            env={**os.environ, "CUDA_VISIBLE_DEVICES": visible},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for rank, visible in enumerate(("0,1", "1,0"))]
        try:
            with Client(cluster) as client:
                out["cuda_visible_devices_rule"] = check(client, ddf, grid, reference, in_process)
        finally:
            for worker in workers:
                worker.terminate()
                worker.wait()
    text = json.dumps(out, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as file:
            file.write(text)


if __name__ == "__main__":
    main()
