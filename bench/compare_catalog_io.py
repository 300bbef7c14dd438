"""Catalog-run overhead of several versions of clperiod, alternating, in one session.

Lent GPU machines differ from one another by more than the changes measured
here, so versions are compared on one machine: each TREE (a source tree with
``clperiod/`` and ``cl_kernels/``, e.g. from ``git archive``) is
timed in its own process, in turn, for ``--rounds`` rounds. A timing is the
catalog of ``bench_catalog_io.py`` (``--objects``, default 1000):
``clperiod.lombscargle`` in memory against ``run_catalog`` from long Parquet
to a results Parquet file (default chunking), best and median of ``--repeat``
after a warm-up.

    git archive <commit> clperiod cl_kernels | tar -x -C /tmp/v0
    python bench/compare_catalog_io.py /tmp/v0 . --rounds 4 --objects 10000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def measure(repeat: int, nf: int, n_objects: int) -> dict:
    """In-memory search and catalog run of this process's clperiod (ms: best, median)."""
    from bench_catalog_io import write_inputs
    from bench_lombscargle import synthetic_catalog

    from clperiod import FrequencyGrid, lombscargle
    from clperiod.io.readers import open_catalog
    from clperiod.pipeline import PeriodSearch, run_catalog

    catalog = synthetic_catalog(n_objects)
    grid = FrequencyGrid.from_range(0.1, 10.0, nf)
    search = PeriodSearch("lombscargle", grid)
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        long = write_inputs(catalog, folder)["long"]

        def timed(function):
            function()
            times = []
            for _ in range(repeat):
                started = time.perf_counter()
                function()
                times.append(1e3 * (time.perf_counter() - started))
            times.sort()
            return times[0], times[len(times) // 2]

        memory = timed(lambda: lombscargle(catalog, grid))
        run = timed(lambda: run_catalog(open_catalog(long), search, folder / "out.parquet",
                                        restart=True, progress=False))
    return {"in_memory_ms": memory, "run_ms": run,
            "overhead_pct": [100 * (r / m - 1) for r, m in zip(run, memory)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", help="source trees to compare")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--nf", type=int, default=200_000)
    parser.add_argument("--objects", type=int, default=1000, help="catalog size (default 1000)")
    parser.add_argument("--out", help="write the JSON here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        import clperiod

        tree = Path(args.trees[0]).resolve()
        if tree not in Path(clperiod.__file__).resolve().parents:
            raise SystemExit(f"clperiod came from {clperiod.__file__}, not from {tree}")
        print(json.dumps(measure(args.repeat, args.nf, args.objects)))
        return
    rounds = []
    for _ in range(args.rounds):
        row = {}
        for tree in args.trees:
            tree = str(Path(tree).resolve())
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [tree, os.environ.get("PYTHONPATH", "")]))
            done = subprocess.run(
                [sys.executable, __file__, tree, "--child", "--repeat", str(args.repeat),
                 "--nf", str(args.nf), "--objects", str(args.objects)],
                env=env, capture_output=True, text=True, check=True)
            row[tree] = json.loads(done.stdout.strip().splitlines()[-1])
            best, median = row[tree]["overhead_pct"]
            print(f"{tree}: overhead {best:.1f} % (best) {median:.1f} % (median)", flush=True)
        rounds.append(row)
    if args.out:
        Path(args.out).write_text(json.dumps({"command": " ".join(sys.argv), "rounds": rounds},
                                             indent=1))


if __name__ == "__main__":
    main()
