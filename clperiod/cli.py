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


def _search_grid(args: argparse.Namespace) -> Any:
    """The grid options as a FrequencyGrid (explicit) or AutoGrid (astropy's rule)."""
    from clperiod.grid import FrequencyGrid
    from clperiod.pipeline import AutoGrid

    if args.nf is None:
        if args.df is not None:
            raise ValueError("--df needs --fmin and --nf")
        return AutoGrid(args.samples_per_peak, args.nyquist_factor, args.fmin, args.fmax)
    if args.fmin is None or (args.fmax is None) == (args.df is None):
        raise ValueError("--nf needs --fmin and one of --fmax or --df")
    if args.df is not None:
        return FrequencyGrid.from_step(args.fmin, args.df, args.nf)
    return FrequencyGrid.from_range(args.fmin, args.fmax, args.nf)


def _search_options(args: argparse.Namespace) -> dict[str, Any]:
    """The algorithm's keyword arguments set on the command line."""
    options = {"precision": args.precision, "memory": args.memory, "top_k": args.top_k}
    if args.command == "lombscargle":
        options |= {"method": args.method,
                    "normalization": None if args.normalization == "none" else args.normalization}
    else:
        options |= {"variant": args.variant, "alpha": args.alpha, "compat": args.compat}
    return options


def _search_output(args: argparse.Namespace) -> Path:
    """-o, else the input's name with ``.<algorithm>.parquet`` in place of its suffix."""
    if args.output is not None:
        return Path(args.output)
    source = Path(args.input)
    stem = source.name.removesuffix(".gz").rsplit(".", 1)[0]
    return source.with_name(f"{stem}.{args.command}.parquet")


def _run_search(args: argparse.Namespace) -> int:
    """Search every object of a catalog file; write one row per object (resumable)."""
    from clperiod import catalog_files, pipeline

    output = _search_output(args)
    try:
        if output.resolve() == Path(args.input).resolve():
            raise ValueError(f"the output {output} would overwrite the input; pass -o")
        reader = catalog_files.open_catalog(
            args.input, layout=args.layout, id_col=args.id_col, t_col=args.t_col,
            y_col=args.y_col, dy_col=None if args.no_dy else args.dy_col,
            nested_col=args.nested_col, delimiter=args.delimiter, chunk_rows=args.chunk_rows,
            chunk_objects=args.chunk_objects, nan_policy=args.nan_policy,
        )
        fap = getattr(args, "fap_method", "none")
        search = pipeline.PeriodSearch(args.command, _search_grid(args), _search_options(args),
                                       fap_method=None if fap == "none" else fap)
        plot_ids = args.plot_ids.split(",") if args.plot_ids else None
        run = pipeline.run_catalog(
            reader, search, output, periodogram=args.periodogram, output_format=args.format,
            device=args.device, restart=args.restart,
            progress=False if args.no_progress else None,
            plot=args.plot, plot_ids=plot_ids, plot_format=args.plot_format,
        )
    except KeyboardInterrupt:
        print(f"clperiod: interrupted; the finished chunks are kept in "
              f"{pipeline.work_directory(output)}: run the same command again to resume",
              file=sys.stderr)
        return 130
    except (OSError, ValueError, TypeError, RuntimeError, ImportError, KeyError) as exc:
        print(f"clperiod: error: {exc}", file=sys.stderr)
        return 1
    grid = run.grid
    summary = (f"{run.n_objects} objects in {run.n_chunks} chunk(s) written to {run.output} "
               f"({args.command}, {grid.nf:,} frequencies from {grid.fmin:.6g} to "
               f"{grid.fmax:.6g}, {args.precision}, {', '.join(run.devices)}")
    summary += f"; {run.n_resumed} chunk(s) resumed)" if run.n_resumed else ")"
    if run.periodogram is not None:
        summary += f"; periodograms in {run.periodogram}"
    if run.figures:
        summary += f"; {len(run.figures)} figure(s) in {args.plot}"
    print(summary)
    return 0


def _add_search_arguments(parser: argparse.ArgumentParser) -> None:
    """Input, grid, run and output options shared by the period searches."""
    parser.add_argument("input", metavar="INPUT",
                        help="catalog file: objId, t, y[, dy] lines (the papers' layout), "
                        "long CSV or Parquet with a header, or nested Parquet")
    parser.add_argument("-o", "--output", metavar="OUT",
                        help="results file, .parquet or .csv (default: INPUT's name with "
                        "'.<command>.parquet')")
    parser.add_argument("--format", choices=("parquet", "csv"),
                        help="results format (default: from the suffix of OUT)")
    read = parser.add_argument_group("input")
    read.add_argument("--layout", default="auto",
                      choices=("auto", "lightcurve-csv", "csv", "parquet", "nested-parquet"),
                      help="file layout (default: from the suffix and content)")
    read.add_argument("--id-col", default="id", help="object id column (default id)")
    read.add_argument("--t-col", default="t", help="time column (default t)")
    read.add_argument("--y-col", default="y", help="value column (default y)")
    read.add_argument("--dy-col", default="auto",
                      help="uncertainty column (default: dy when the file has one)")
    read.add_argument("--no-dy", action="store_true", help="ignore uncertainties")
    read.add_argument("--nested-col",
                      help="nested Parquet: the list<struct> column of observations")
    read.add_argument("--delimiter", default=",", help="CSV field separator (default ,)")
    read.add_argument("--nan-policy", choices=("raise", "omit"), default="raise",
                      help="non-finite t, y or dy: error (default), or drop those rows")
    grid = parser.add_argument_group(
        "frequency grid",
        "--fmin/--fmax/--nf: nf frequencies from fmin up to, not including, fmax (the papers' "
        "grid); --fmin/--df/--nf: fmin + k df. Without --nf: astropy's autofrequency over the "
        "whole catalog (longest baseline, largest object), --fmin/--fmax bounding it.")
    grid.add_argument("--fmin", type=float, help="lowest frequency (cycles per time unit)")
    grid.add_argument("--fmax", type=float, help="upper frequency bound")
    grid.add_argument("--nf", type=int, help="number of frequencies")
    grid.add_argument("--df", type=float, help="frequency step (with --fmin and --nf)")
    grid.add_argument("--samples-per-peak", type=float, default=5,
                      help="automatic grid: points across a peak of width 1/T (default 5)")
    grid.add_argument("--nyquist-factor", type=float, default=5,
                      help="automatic grid: multiple of the average Nyquist frequency "
                      "(default 5)")
    run = parser.add_argument_group("run")
    run.add_argument("--device", help="device selection (same grammar as CLPERIOD_DEVICE)")
    run.add_argument("--precision", choices=("fp64", "fp32"), default="fp64",
                     help="kernel precision (default fp64)")
    run.add_argument("--memory", choices=("auto", "local", "global"), default="auto",
                     help="kernel memory strategy (default auto)")
    run.add_argument("--top-k", type=int, default=1,
                     help="distinct peaks reported per object (default 1)")
    run.add_argument("--chunk-rows", type=int, default=1_000_000,
                     help="observations read and searched at a time (default 1,000,000)")
    run.add_argument("--chunk-objects", type=int,
                     help="at most this many objects per chunk (default: no limit)")
    run.add_argument("--restart", action="store_true",
                     help="discard the finished chunks of an earlier run instead of resuming")
    run.add_argument("--no-progress", action="store_true",
                     help="no progress bar (it shows only on a terminal anyway)")
    out = parser.add_argument_group("more output")
    out.add_argument("--periodogram", metavar="FILE",
                     help="also write every periodogram: .npy, .npz, .h5/.hdf5 or .parquet")
    out.add_argument("--plot", metavar="DIR",
                     help="write a figure per chosen object (periodogram, folded light curve)")
    out.add_argument("--plot-ids", metavar="ID[,ID...]",
                     help="objects to plot (default: the first 5 objects of INPUT)")
    out.add_argument("--plot-format", default="png", help="figure format (default png)")
    parser.set_defaults(func=_run_search)


def _add_lombscargle(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lombscargle",
        help="Lomb-Scargle period search of every object of a catalog file",
        description="Lomb-Scargle periodograms of every object of a catalog file, read and "
        "searched in chunks; one row per object (best period, power, false-alarm "
        "probability, top-k peaks, status) to a Parquet or CSV file. An interrupted run "
        "resumes from its finished chunks when run again.",
    )
    _add_search_arguments(parser)
    options = parser.add_argument_group("Lomb-Scargle")
    options.add_argument("--method", choices=("generalized", "standard"), default="generalized",
                         help="floating-mean weighted (default) or classic periodogram")
    options.add_argument("--normalization", choices=("standard", "model", "log", "psd", "none"),
                         default="standard", help="power normalization (default standard)")
    options.add_argument("--fap-method", choices=("baluev", "davies", "naive", "townsend", "none"),
                         default="baluev",
                         help="false-alarm probability of the fap column (default baluev)")


def _add_supersmoother(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "supersmoother",
        help="SuperSmoother period search of every object of a catalog file",
        description="SuperSmoother periodograms of every object of a catalog file, read and "
        "searched in chunks; one row per object (best period, power, top-k peaks, status) to "
        "a Parquet or CSV file. An interrupted run resumes from its finished chunks when run "
        "again.",
    )
    _add_search_arguments(parser)
    options = parser.add_argument_group("SuperSmoother")
    options.add_argument("--variant", choices=("original", "single_pass"), default="original",
                         help="Friedman's smoother (default) or the single-pass variant")
    options.add_argument("--alpha", type=float, default=9.0,
                         help="bass enhancement in [0, 10] (default 9)")
    options.add_argument("--compat", action="store_true",
                         help="reproduce the reference GPU code (see the README)")


_COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    _add_info,
    _add_lombscargle,
    _add_supersmoother,
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
