"""Command line interface: ``clperiod <command>`` (also ``python -m clperiod``).

Each subcommand is one ``_add_<name>(subparsers)`` function that declares its
arguments and sets ``func`` to a ``_run_<name>(args) -> int`` handler; list the
adder in ``_COMMANDS``. pyopencl is imported inside the handlers only, so that
``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

__all__ = ["build_parser", "main"]


def _device_facts(selected: set[str]) -> list[dict[str, Any]]:
    """Usable devices (facts, and whether in ``selected``) followed by skipped ones."""
    from clperiod import device

    facts = []
    for info in device.list_devices():
        entry = {"label": info.label, "usable": True, "selected": info.label in selected}
        entry |= {f.name: getattr(info, f.name) for f in fields(info) if f.name != "device"}
        facts.append(entry)
    facts += [
        {"label": label, "usable": False, "reason": reason}
        for label, reason in device.skipped_devices()
    ]
    return facts


def _selected_labels() -> set[str]:
    """Labels of the devices clperiod would use now; empty if the selection fails."""
    from clperiod import device

    try:
        return {d.label for d in device.select_devices()}
    except (RuntimeError, ValueError):
        return set()


def _run_info(args: argparse.Namespace) -> int:
    """Print the device report (or JSON facts); exit status 1 if no device would be used."""
    from clperiod import device

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", device.DeviceWarning)  # the report shows the reasons
        selected = _selected_labels()
        if not args.json:
            print(device.describe())
            return 0 if selected else 1
        try:
            facts = _device_facts(selected)
        except RuntimeError as exc:  # no platform, or no device passed the probe
            print(f"clperiod: error: {exc}", file=sys.stderr)
            return 1
    print(json.dumps(facts, indent=2))
    return 0 if selected else 1


def _add_info(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "info",
        help="list OpenCL platforms and devices, and which one clperiod would use",
        description="List OpenCL platforms and devices, probe results, and the device "
        "clperiod selects (CLPERIOD_DEVICE, else PYOPENCL_CTX, else the default preference).",
    )
    parser.add_argument("--json", action="store_true", help="print device facts as a JSON list")
    parser.set_defaults(func=_run_info)


def _read_pulse_input(args: argparse.Namespace) -> tuple[Any, Any, float]:
    """The DM x time array, its DMs and tsamp from one .npy or several PRESTO .dat files."""
    from clperiod import pulsefiles

    inputs = args.inputs
    if all(path.endswith(".dat") for path in inputs):
        if any(v is not None for v in (args.tsamp, args.dm_start, args.dm_step, args.dm_file)):
            raise ValueError("PRESTO .dat input takes the DMs and tsamp from the .inf files; "
                             "drop --tsamp and the DM options")
        return pulsefiles.read_presto_series(inputs)
    if len(inputs) != 1 or not inputs[0].endswith(".npy"):
        raise ValueError("INPUT must be one .npy file or one or more PRESTO .dat files")
    if args.tsamp is None:
        raise ValueError(".npy input needs --tsamp")
    dm = None
    if args.dm_file is not None:
        import numpy as np

        try:
            dm = np.loadtxt(args.dm_file, ndmin=1)
        except ValueError as exc:
            raise ValueError(f"{args.dm_file}: {exc}") from None
    return pulsefiles.read_npy_series(
        inputs[0], dm, dm_start=args.dm_start, dm_step=args.dm_step, tsamp=args.tsamp
    )


def _pulse_output(args: argparse.Namespace) -> Path:
    """-o, else the first input's basename (several .dat: cut at "_DM") + the format's suffix."""
    from clperiod.pulsefiles import FORMATS

    if args.output is not None:
        return Path(args.output)
    first = Path(args.inputs[0])
    base = first.name.removesuffix(first.suffix)
    if len(args.inputs) > 1 and "_DM" in base:
        base = base[: base.rindex("_DM")]
    return first.with_name(base + FORMATS[args.format or "singlepulse"])


def _run_singlepulse(args: argparse.Namespace) -> int:
    """Search a DM x time array for single pulses; write the candidates and a summary."""
    from clperiod import pulsefiles

    try:
        output = _pulse_output(args)
        if any(output.resolve() == Path(path).resolve() for path in args.inputs):
            raise ValueError(f"the output {output} would overwrite an input; pass -o")
        data, dm, tsamp = _read_pulse_input(args)
        from clperiod.singlepulse import search

        cands = search(
            data, dm, tsamp, max_width=args.max_width, threshold=args.threshold,
            plan=args.plan, snr_mode=args.snr_mode, robust=args.robust,
            nan_policy=args.nan_policy, cluster=not args.no_cluster, device=args.device,
        )
        fmt = pulsefiles.write_candidates(output, cands, args.format)
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"clperiod: error: {exc}", file=sys.stderr)
        return 1
    summary = f"{len(cands)} candidate(s) over {len(dm)} DMs written to {output} ({fmt})"
    if len(cands):
        best = cands[int(cands["snr"].argmax())]
        summary += (
            f"; best S/N {best['snr']:.2f} at DM {best['dm']:.2f}, t = {best['time']:.6f} s "
            f"(sample {best['sample']}), width {best['width']}"
        )
    print(summary)
    return 0


def _add_singlepulse(subparsers: argparse._SubParsersAction) -> None:
    from clperiod.pulsefiles import FORMATS

    parser = subparsers.add_parser(
        "singlepulse",
        help="search de-dispersed DM x time data for single pulses",
        description="Boxcar single-pulse search of a DM x time array: one .npy file "
        "(n_dm, n_t) with --tsamp and the DMs, or PRESTO .dat files (one per DM; DM and "
        "tsamp from the .inf beside each). Writes the candidates and prints a summary.",
    )
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help=".npy file or .dat files")
    parser.add_argument(
        "-o", "--output", metavar="OUT",
        help="output file (default: the input's basename with the format's suffix; "
        "several .dat files: the basename up to '_DM')",
    )
    parser.add_argument(
        "--format", choices=tuple(FORMATS),
        help="output format (default: from the suffix of OUT, else singlepulse)",
    )
    dms = parser.add_mutually_exclusive_group()
    dms.add_argument("--dm-start", type=float, help=".npy: DM of the first row")
    dms.add_argument("--dm-file", help=".npy: text file with the DM of each row")
    parser.add_argument("--dm-step", type=float, help=".npy: DM step between rows")
    parser.add_argument("--tsamp", type=float, help=".npy: sampling time (s)")
    parser.add_argument("--max-width", type=int, default=32,
                        help="widest boxcar in samples (default 32)")
    parser.add_argument("--threshold", type=float, default=6.0,
                        help="S/N threshold (default 6)")
    parser.add_argument("--plan", choices=("dit", "full"), default="dit",
                        help="boxcar widths: decimation-in-time plan or every width")
    parser.add_argument("--snr-mode", choices=("approx", "exact"), default="approx",
                        help="boxcar noise normalisation")
    parser.add_argument("--robust", action="store_true",
                        help="outlier-resistant noise statistics")
    parser.add_argument("--nan-policy", choices=("raise", "mask"), default="raise",
                        help="non-finite samples: error, or mask them")
    parser.add_argument("--no-cluster", action="store_true",
                        help="report every detection instead of clustering them")
    parser.add_argument("--device", help="device selection (as CLPERIOD_DEVICE)")
    parser.set_defaults(func=_run_singlepulse)


_COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    _add_info,
    _add_singlepulse,
)


def build_parser() -> argparse.ArgumentParser:
    """The ``clperiod`` argument parser with one subparser per command."""
    parser = argparse.ArgumentParser(
        prog="clperiod",
        description="Period searches and time-domain kernels on any OpenCL device.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add_command in _COMMANDS:
        add_command(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line interface.

    Parameters
    ----------
    argv
        Arguments without the program name; ``None`` means ``sys.argv[1:]``.

    Returns
    -------
    int
        Exit status (0 on success).
    """
    args = build_parser().parse_args(argv)
    return args.func(args)
