"""Run every benchmark suited to the selected device and write JSON under bench/results/.

GPU: the issue's single-object and catalog workloads with peers; CPU runtime:
the scaled catalog workload against astropy ``cython`` on the same cores.
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
    workloads = ["single", "catalog", "--peers"] if info.kind == "gpu" else ["cpu"]
    tag = "".join(c if c.isalnum() else "-" for c in info.name.lower()).strip("-")[:40]
    out = HERE / "results" / f"{date.today().isoformat()}_{tag}_lombscargle.json"
    command = [sys.executable, str(HERE / "bench_lombscargle.py"), *workloads, "--out", str(out)]
    print(" ".join(command), flush=True)
    return subprocess.call(command)


if __name__ == "__main__":
    raise SystemExit(main())
