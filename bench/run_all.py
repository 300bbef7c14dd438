"""Run every benchmark suited to the selected device and write JSON under bench/results/.

GPU: the issues' Lomb-Scargle (single object, catalog, peers) and SuperSmoother
(Stripe 82, single object) workloads; CPU runtime: the scaled workloads against
astropy ``cython``, the vectorised NumPy SuperSmoother and the
``supersmoother`` package on the same cores.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import date
from pathlib import Path

import clperiod

HERE = Path(__file__).resolve().parent


def main() -> int:
    info = clperiod.select_devices()[0]
    gpu = info.kind == "gpu"
    tag = "".join(c if c.isalnum() else "-" for c in info.name.lower()).strip("-")[:40]
    runs = {
        "lombscargle": ["single", "catalog", "--peers"] if gpu else ["cpu"],
        "supersmoother": ["stripe82", "single"] if gpu else ["cpu"],
    }
    status = 0
    for name, workloads in runs.items():
        out = HERE / "results" / f"{date.today().isoformat()}_{tag}_{name}.json"
        command = [sys.executable, str(HERE / f"bench_{name}.py"), *workloads, "--out", str(out)]
        print(" ".join(command), flush=True)
        status = subprocess.call(command) or status
    return status


if __name__ == "__main__":
    raise SystemExit(main())
