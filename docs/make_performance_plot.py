"""Draw the performance page's figure from a Lomb-Scargle benchmark result.

Run it from the repository root after a new ``bench/bench_lombscargle.py single --peers``
run on a GPU has been committed::

    python3 docs/make_performance_plot.py [bench/results/<file>.json]

It writes ``docs/_static/performance.png``: the end-to-end time of one light
curve's periodogram with clperiod and with the peers measured in the same run
(log scale), labelled with the device and the date of the run.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after choosing the backend)

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RESULT = ROOT / "bench" / "results" / "2026-11-21_h100-sxm_lombscargle.json"
OUTPUT = ROOT / "docs" / "_static" / "performance.png"

#: Bars drawn, top to bottom: label and the path of its seconds in the result.
BARS = (
    ("clperiod, fp32", ("single", "fp32", "end_to_end_s")),
    ("clperiod, fp64", ("single", "fp64", "end_to_end_s")),
    ("clperiod, standard LS, fp64", ("single", "peers", "clperiod_standard_fp64_s")),
    ("nifty-ls (finufft, CPU threads)", ("single", "peers", "nifty_ls_finufft_s")),
    ("astropy, method='fast'", ("single", "peers", "astropy_fast_lra_s")),
    ("astropy, method='cython' (extrapolated)",
     ("single", "peers", "astropy_cython_extrapolated_s")),
    ("SciPy lombscargle, standard LS (extrapolated)",
     ("single", "peers", "scipy_standard_extrapolated_s")),
)


def lookup(result: dict, path: tuple[str, ...]) -> float:
    """The number at ``path`` of a nested result."""
    value: object = result
    for key in path:
        value = value[key]  # type: ignore[index]
    return float(value)  # type: ignore[arg-type]


def device_name(result: dict) -> str:
    """The device's name without clperiod's platform/device index."""
    return result["single"]["device"].split(" ", 1)[1]


def draw(result: dict, source: Path, output: Path) -> None:
    """Draw the bars of ``result`` into ``output``."""
    labels = [label for label, _ in BARS]
    seconds = [lookup(result, path) for _, path in BARS]
    single = result["single"]
    figure, axes = plt.subplots(figsize=(8.5, 4.0), layout="constrained")
    colours = ["tab:blue"] * 3 + ["tab:gray"] * (len(BARS) - 3)
    axes.barh(labels, seconds, color=colours)
    axes.invert_yaxis()
    axes.set_xscale("log")
    axes.set_xlabel("seconds, end to end (log scale)")
    for row, value in enumerate(seconds):
        axes.text(value * 1.15, row, f"{value:.3g} s", va="center", fontsize=8)
    axes.set_xlim(min(seconds) / 2, max(seconds) * 8)
    axes.set_title(
        f"Lomb-Scargle of one light curve, {single['n_t']} points x {single['nf']:,} "
        f"frequencies\n{device_name(result)}, {result['date']}\n{source.name}",
        fontsize=9,
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output, dpi=110)
    plt.close(figure)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("result", nargs="?", type=Path, default=DEFAULT_RESULT,
                        help="bench_lombscargle.py JSON with peers (default: %(default)s)")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="PNG to write")
    args = parser.parse_args(argv)
    draw(json.loads(args.result.read_text()), args.result, args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
