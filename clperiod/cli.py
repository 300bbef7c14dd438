"""Command line interface: ``clperiod <command>`` (also ``python -m clperiod``).

Each subcommand is one ``_add_<name>(subparsers)`` function that declares its
arguments and sets ``func`` to a ``_run_<name>(args) -> int`` handler; list the
adder in ``_COMMANDS``. A period search of catalog files calls
``_add_search_arguments(parser, algorithm, own_options, ...)`` (the
:class:`~clperiod.pipeline.PeriodSearch` algorithm, a function giving its
options from the command's own arguments, the kernel options it takes) and adds
its own arguments; ``_run_search`` runs it. pyopencl is imported inside the
handlers only, so that ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import csv
import json
import lzma
import math
import os
import re
import sys
import warnings
import zlib
from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any, NoReturn

__all__ = ["build_parser", "main"]

#: Exceptions that a command reports as ``clperiod: error: ...`` (exit status 1):
#: the readers' errors on bad or damaged input (which they raise as ValueErrors
#: naming the file; the raw kinds are listed too), bad options, failed searches.
_ERRORS = (
    OSError,
    ValueError,
    TypeError,
    RuntimeError,
    ImportError,
    KeyError,
    MemoryError,
    EOFError,
    zlib.error,
    lzma.LZMAError,
    csv.Error,
)


def _fail(exc: BaseException) -> int:
    """Print ``exc`` as one line on stderr, in the options' names; exit status 1."""
    message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
    print(f"clperiod: error: {_in_option_names(' '.join(str(message).split()))}", file=sys.stderr)
    return 1


#: Library parameter names whose command-line options are named otherwise.
_SYNONYMS = {
    "nan_policy='omit'": "--nan-policy omit",
    "nan_policy='mask'": "--nan-policy mask",
    "n_bins": "--bins",
    "n_covers": "--covers",
    "maximum_frequency": "--fmax",
    "minimum_frequency": "--fmin",
}


def _in_option_names(text: str) -> str:
    """``text`` with the library's parameter names that the command line has as
    options written as those options (``nterms_base`` -> ``--nterms-base``)."""
    names = dict(_SYNONYMS)
    for dest, option in _option_names(build_parser()).items():
        if "_" in dest:
            names.setdefault(dest, option)
    alternatives = "|".join(map(re.escape, sorted(names, key=len, reverse=True)))
    # not within a word, a dotted name or a path, nor before "(" or a suffix
    pattern = re.compile(rf"(?<![\w./\\-])({alternatives})(?![\w(]|\.\w)")
    return pattern.sub(lambda match: names[match.group(1)], text)


def _option_names(parser: argparse.ArgumentParser) -> dict[str, str]:
    """The first long option string of every option of ``parser`` and its
    subcommands, by destination."""
    found: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                found.update(_option_names(command))
        else:
            long = [option for option in action.option_strings if option.startswith("--")]
            if long:
                found.setdefault(action.dest, long[0])
    return found


def _device_facts(selected: set[str]) -> list[dict[str, Any]]:
    """Usable devices (facts, and whether in ``selected``) followed by skipped ones."""
    from clperiod.engine import devices as device

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
    from clperiod.engine import devices as device

    try:
        return {d.label for d in device.select_devices()}
    except (RuntimeError, ValueError):
        return set()


def _run_info(args: argparse.Namespace) -> int:
    """Print the device report (or JSON facts); exit status 1 if no device would be used."""
    from clperiod.engine import devices as device

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
    from clperiod.singlepulse import files as pulsefiles

    inputs = args.inputs
    if all(path.endswith(".dat") for path in inputs):
        if any(v is not None for v in (args.tsamp, args.dm_start, args.dm_step, args.dm_file)):
            raise ValueError(
                "PRESTO .dat input takes the DMs and tsamp from the .inf files; "
                "drop --tsamp and the DM options"
            )
        return pulsefiles.read_presto_series(inputs, require_finite=args.nan_policy == "raise")
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
    from clperiod.singlepulse.files import FORMATS

    if args.output is not None:
        return Path(args.output)
    first = Path(args.inputs[0])
    base = first.name.removesuffix(first.suffix)
    if len(args.inputs) > 1 and "_DM" in base:
        base = base[: base.rindex("_DM")]
    return first.with_name(base + FORMATS[args.format or "singlepulse"])


def _refuse_overwriting(
    outputs: dict[str, Any], inputs: list[Any], defaulted: bool = False
) -> None:
    """Raise a ValueError when an output (by option) is one of the input files:
    clperiod never overwrites its input (``defaulted``: the path was derived
    from the input, so the remedy is -o)."""
    for option, output in outputs.items():
        if output is None:
            continue
        for given in inputs:
            if (
                given is not None
                and Path(given).exists()
                and Path(output).resolve() == Path(given).resolve()
            ):
                remedy = "name the output with -o" if defaulted else "choose another path"
                raise ValueError(
                    f"{option} {output} is the input {given}, which clperiod never "
                    f"overwrites; {remedy}"
                )


def _run_singlepulse(args: argparse.Namespace) -> int:
    """Search a DM x time array for single pulses; write the candidates and a summary."""
    from clperiod.singlepulse import files as pulsefiles

    try:
        output = _pulse_output(args)
        _refuse_overwriting({"-o": output}, args.inputs, defaulted=args.output is None)
        data, dm, tsamp = _read_pulse_input(args)
        from clperiod.singlepulse import search

        cands = search(
            data,
            dm,
            tsamp,
            max_width=args.max_width,
            threshold=args.threshold,
            plan=args.plan,
            snr_mode=args.snr_mode,
            robust=args.robust,
            nan_policy=args.nan_policy,
            cluster=not args.no_cluster,
            device=args.device,
        )
        fmt = pulsefiles.write_candidates(output, cands, args.format)
    except _ERRORS as exc:
        return _fail(exc)
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
    from clperiod.singlepulse.files import FORMATS

    parser = subparsers.add_parser(
        "singlepulse",
        help="search de-dispersed DM x time data for single pulses",
        description="Boxcar single-pulse search of a DM x time array: one .npy file "
        "(n_dm, n_t) with --tsamp and the DMs, or PRESTO .dat files (one per DM; DM and "
        "tsamp from the .inf beside each). Writes the candidates and prints a summary.",
    )
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help=".npy file or .dat files")
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="output file (default: the input's basename with the format's suffix; "
        "several .dat files: the basename up to '_DM')",
    )
    parser.add_argument(
        "--format",
        choices=tuple(FORMATS),
        help="output format (default: from the suffix of OUT, else singlepulse)",
    )
    dms = parser.add_mutually_exclusive_group()
    dms.add_argument("--dm-start", type=float, help=".npy: DM of the first row (pc cm^-3)")
    dms.add_argument("--dm-file", help=".npy: text file with the DM of each row")
    parser.add_argument(
        "--dm-step", type=float, help=".npy: DM step between rows (pc cm^-3; with --dm-start)"
    )
    parser.add_argument("--tsamp", type=float, help=".npy: sampling time (s)")
    parser.add_argument(
        "--max-width", type=int, default=32, help="widest boxcar in samples (default 32)"
    )
    parser.add_argument("--threshold", type=float, default=6.0, help="S/N threshold (default 6)")
    parser.add_argument(
        "--plan",
        choices=("dit", "full"),
        default="dit",
        help="boxcar widths: decimation-in-time plan (default) or every width",
    )
    parser.add_argument(
        "--snr-mode",
        choices=("approx", "exact"),
        default="approx",
        help="boxcar noise normalisation: approximate (default) or exact",
    )
    parser.add_argument("--robust", action="store_true", help="outlier-resistant noise statistics")
    parser.add_argument(
        "--nan-policy",
        choices=("raise", "mask"),
        default="raise",
        help="non-finite samples: error (default), or mask them",
    )
    parser.add_argument(
        "--no-cluster",
        action="store_true",
        help="report every detection instead of clustering them",
    )
    parser.add_argument("--device", help="device selection (as CLPERIOD_DEVICE)")
    parser.set_defaults(func=_run_singlepulse)


def _search_grid(args: argparse.Namespace) -> Any:
    """The grid options as a FrequencyGrid or FrequencyArray (explicit, or read
    from a file) or AutoGrid (astropy's rule)."""
    from clperiod.grid import FrequencyGrid
    from clperiod.pipeline import AutoGrid

    automatic = {
        "--samples-per-peak": args.samples_per_peak,
        "--nyquist-factor": args.nyquist_factor,
    }
    shaping = [option for option, value in automatic.items() if value is not None]
    if shaping and (args.nf is not None or args.frequencies_file or args.periods_file):
        raise ValueError(
            f"{' and '.join(shaping)} shape the automatic grid, which --nf or a file of "
            "frequencies or periods replaces: give one or the other"
        )
    if args.frequencies_file is not None or args.periods_file is not None:
        return _grid_from_file(args)
    fmin = _frequency_bound(args.fmin, args.max_period, "--max-period")
    fmax = _frequency_bound(args.fmax, args.min_period, "--min-period")
    if args.nf is None:
        if args.df is not None:
            raise ValueError("--df needs --fmin and --nf")
        return AutoGrid(
            5 if args.samples_per_peak is None else args.samples_per_peak,
            5 if args.nyquist_factor is None else args.nyquist_factor,
            fmin,
            fmax,
        )
    if fmin is None or (fmax is None) == (args.df is None):
        raise ValueError(
            "--nf needs --fmin (or --max-period) and one of --fmax (or --min-period) or --df"
        )
    if fmax is not None:
        return FrequencyGrid.from_range(fmin, fmax, args.nf)
    return FrequencyGrid.from_step(fmin, args.df, args.nf)


#: Options that set a grid, which a file of frequencies or periods replaces.
_GRID_OPTIONS = ("fmin", "max_period", "fmax", "min_period", "nf", "df")


def _grid_from_file(args: argparse.Namespace) -> Any:
    """The grid of ``--frequencies-file`` or ``--periods-file``."""
    from clperiod.grid import FrequencyGrid

    given = [
        f"--{name.replace('_', '-')}" for name in _GRID_OPTIONS if getattr(args, name) is not None
    ]
    periods = args.periods_file is not None
    option = "--periods-file" if periods else "--frequencies-file"
    if given:
        raise ValueError(f"{option} gives the grid: drop {', '.join(given)}")
    path = Path(args.periods_file if periods else args.frequencies_file)
    values = _read_numbers(path, positive=periods)
    return FrequencyGrid.from_frequencies(1.0 / values if periods else values)


def _read_numbers(path: Path, positive: bool) -> Any:
    """The numbers of a ``.npy`` file (1-D) or a text file (one a line; blank
    lines and ``#`` comments skipped), each finite and ``>= 0`` (``> 0`` when
    ``positive``); a ValueError names the file and the line or index."""
    import numpy as np

    what = "periods" if positive else "frequencies"
    if path.suffix.lower() == ".npy":
        values = _npy_numbers(path, what)
        where = [f"index {index}" for index in range(values.size)]
    else:
        values, where = _text_numbers(path)
    if values.size == 0:
        raise ValueError(f"{path} holds no {what}")
    valid = np.isfinite(values) & ((values > 0) if positive else (values >= 0))
    if not valid.all():
        first = int(np.flatnonzero(~valid)[0])
        bound = "> 0" if positive else ">= 0"
        raise ValueError(
            f"{path}, {where[first]}: {what} must be finite and {bound}, got {values[first]}"
        )
    return values.astype(np.float64)


def _npy_numbers(path: Path, what: str) -> Any:
    """The 1-D array of numbers of a ``.npy`` file."""
    import numpy as np

    try:
        values = np.load(path, allow_pickle=False)
    except ValueError as error:  # not a .npy file, or one of Python objects
        raise ValueError(f"{path}: not a .npy file of numbers ({error})") from None
    if values.ndim != 1 or values.dtype.kind not in "iuf":
        raise ValueError(
            f"{path}: {what} must be a 1-D array of numbers, "
            f"got shape {values.shape} of {values.dtype}"
        )
    return values


def _text_numbers(path: Path) -> tuple[Any, list[str]]:
    """The numbers of a text file, one a line, and the line of each."""
    import numpy as np

    numbers, where = [], []
    try:
        with open(path, encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                text = line.split("#", 1)[0].strip()
                if text:
                    numbers.append(_number(text, path, number))
                    where.append(f"line {number}")
    except UnicodeDecodeError:
        raise ValueError(
            f"{path} is not a text file (nor named .npy): give one number per line"
        ) from None
    return np.array(numbers, dtype=np.float64), where


def _number(text: str, path: Path, line: int) -> float:
    """One number of a text file; a ValueError names the file and line."""
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{path}, line {line}: {text!r} is not a number") from None


def _frequency_bound(frequency: float | None, period: float | None, option: str) -> float | None:
    """A frequency bound given as such or as the period bound ``1 / frequency``."""
    if period is None:
        return frequency
    if not period > 0:
        raise ValueError(f"{option} must be > 0, got {period}")
    return 1.0 / period


def _search_options(args: argparse.Namespace) -> dict[str, Any]:
    """The search's keyword arguments set on the command line: the run options
    that its command has (``--precision``, ``--memory``, ``--top-k``), then its own
    (the command's ``own_options``)."""
    shared = {name: getattr(args, name) for name in _RUN_OPTIONS if hasattr(args, name)}
    return shared | args.own_options(args)


#: Search options of the run arguments (a command without --precision or --memory
#: leaves them out).
_RUN_OPTIONS = ("precision", "memory", "top_k")


def _given_flags(args: argparse.Namespace, flags: tuple[str, ...]) -> dict[str, Any]:
    """The yes/no options given; those left out keep the library's default (which
    may depend on other options)."""
    return {name: getattr(args, name) for name in flags if getattr(args, name) is not None}


def _lombscargle_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of ``clperiod lombscargle``."""
    return {
        "method": args.method,
        "normalization": None if args.normalization == "none" else args.normalization,
    } | _given_flags(args, ("fit_mean", "center_data"))


def _supersmoother_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of ``clperiod supersmoother``."""
    return {
        "variant": args.variant,
        "alpha": args.alpha,
        "compat": args.compat,
    } | _given_flags(args, ("periodic",))


def _multiband_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of ``clperiod lombscargle-multiband``."""
    return {
        "nterms_base": args.nterms_base,
        "nterms_band": args.nterms_band,
    } | _given_flags(args, ("center_data",))


def _mhaov_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of ``clperiod mhaov`` (those left out keep the library's defaults)."""
    given = {"fit_harmonics": args.fit_harmonics, "min_points": args.min_points}
    return {"nharmonics": args.nharmonics} | {
        name: value for name, value in given.items() if value is not None
    }


def _pdm_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of ``clperiod pdm``."""
    return {"n_bins": args.bins, "n_covers": args.covers} | _given_flags(args, ("weighted",))


def _aov_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of ``clperiod aov``."""
    return {"n_bins": args.bins} | _given_flags(args, ("weighted",))


def _conditional_entropy_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of ``clperiod conditional-entropy``."""
    return {"phase_bins": args.phase_bins, "magnitude_bins": args.magnitude_bins}


def _bls_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of ``clperiod bls``: the durations listed (``--durations``)
    or ``N`` evenly spaced from ``DMIN`` to ``DMAX`` (``--duration-range``)."""
    durations = (
        list(args.durations)
        if args.durations is not None
        else _duration_range(*args.duration_range)
    )
    return {
        "durations": durations,
        "objective": args.objective,
        "method": args.method,
        "oversample": args.oversample,
        "compat": args.compat,
    }


def _duration_range(low: float, high: float, count: float) -> list[float]:
    """``count`` durations evenly spaced from ``low`` to ``high`` (``--duration-range``)."""
    if count != int(count) or count < 1:
        raise ValueError(f"--duration-range N must be a whole number >= 1, got {count:g}")
    if not 0 < low <= high:
        raise ValueError(f"--duration-range needs 0 < DMIN <= DMAX, got {low:g} and {high:g}")
    if count == 1:
        return [low]
    return [low + (high - low) * k / (count - 1) for k in range(int(count))]


def _search_output(args: argparse.Namespace) -> Path:
    """-o, else the input's name with ``.<algorithm>.parquet`` in place of its suffix."""
    if args.output is not None:
        return Path(args.output)
    from clperiod.io.formats import COMPRESSIONS

    source = Path(args.input)
    name = source.name
    if source.suffix.lower() in COMPRESSIONS:
        name = name[: -len(source.suffix)]
    stem = name.rsplit(".", 1)[0]
    return source.with_name(f"{stem}.{args.command}.parquet")


def _run_search(args: argparse.Namespace) -> int:
    """Search every object of a catalog file; write one row per object (resumable)."""
    from clperiod import pipeline
    from clperiod.io import readers as catalog_files

    output = _search_output(args)
    try:
        inputs = [args.input, args.frequencies_file, args.periods_file]
        _refuse_overwriting({"-o": output}, inputs, defaulted=args.output is None)
        _refuse_overwriting({"--periodogram": args.periodogram}, inputs)
        if args.needs_bands and args.band_col is None:
            raise ValueError(
                f"{args.command} models each band: name the band label column with --band-col"
            )
        if args.no_dy and args.dy_col != "auto":
            raise ValueError("--no-dy ignores uncertainties and --dy-col names them: give one")
        if args.plot_ids and not args.plot:
            raise ValueError("--plot-ids chooses the objects that --plot DIR draws: give --plot")
        if getattr(args, "compat", None) == "astropy" and args.method == "exact":
            raise ValueError("--compat reproduces astropy's binned search, not --method exact")
        reader = catalog_files.open_catalog(
            args.input,
            layout=args.layout,
            id_col=args.id_col,
            t_col=args.t_col,
            y_col=args.y_col,
            dy_col=None if args.no_dy else args.dy_col,
            nested_col=args.nested_col,
            band_col=args.band_col,
            bands=args.bands.split(",") if args.bands else None,
            delimiter=args.delimiter,
            chunk_rows=args.chunk_rows,
            chunk_objects=args.chunk_objects,
            first_chunk_rows=args.first_chunk_rows or None,
            nan_policy=args.nan_policy,
            grouping=args.grouping,
        )
        fap = getattr(args, "fap_method", "none")
        search = pipeline.PeriodSearch(
            args.algorithm,
            _search_grid(args),
            _search_options(args),
            fap_method=None if fap == "none" else fap,
        )
        plot_ids = args.plot_ids.split(",") if args.plot_ids else None
        run = pipeline.run_catalog(
            reader,
            search,
            output,
            periodogram=args.periodogram,
            output_format=args.format,
            device=args.device,
            restart=args.restart,
            progress=False if args.no_progress else None,
            plot=args.plot,
            plot_ids=plot_ids,
            plot_format=args.plot_format,
            plot_labels=_plot_labels(args, reader) if args.plot else None,
        )
    except KeyboardInterrupt:
        print(
            f"clperiod: interrupted; the finished chunks are kept in "
            f"{pipeline.work_directory(output)}: run the same command again to resume",
            file=sys.stderr,
        )
        return 130
    except _ERRORS as exc:
        return _fail(exc)
    grid = run.grid
    facts = [args.command, f"{grid.nf:,} frequencies from {grid.fmin:.6g} to {grid.fmax:.6g}"]
    facts += [args.precision] if hasattr(args, "precision") else []
    summary = (
        f"{_plural(run.n_objects, 'object')} in {run.n_chunks} chunk(s) written to "
        f"{run.output} ({', '.join([*facts, *run.devices])}"
    )
    summary += f"; {run.n_resumed} chunk(s) resumed)" if run.n_resumed else ")"
    if run.statuses:
        causes = ", ".join(f"{count} {name}" for name, count in sorted(run.statuses.items()))
        summary += f"; {_plural(sum(run.statuses.values()), 'object')} without a result ({causes})"
    if reader.grouping == "sort":
        summary += "; input rows sorted by id"
    if run.periodogram is not None:
        summary += f"; periodograms in {run.periodogram}"
    if run.figures:
        summary += f"; {len(set(run.figures))} figure(s) written to {args.plot}"
    print(summary)
    return 0


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def _plot_labels(args: argparse.Namespace, reader: Any) -> Any:
    """The figures' axis labels: the input's columns, with the units given."""
    import dataclasses

    from clperiod import pipeline

    labels = pipeline.default_plot_labels(reader)
    given = {"t_unit": args.t_unit, "y_unit": args.y_unit, "invert_y": args.invert_y}
    return dataclasses.replace(labels, **{k: v for k, v in given.items() if v is not None})


def _add_search_arguments(
    parser: argparse.ArgumentParser,
    algorithm: str,
    own_options: Callable[[argparse.Namespace], dict[str, Any]],
    *,
    kernel_options: tuple[str, ...] = ("precision", "memory"),
    needs_bands: bool = False,
) -> None:
    """Input, grid, run and output options shared by the period searches.

    ``algorithm`` is the :class:`~clperiod.pipeline.PeriodSearch` algorithm,
    ``own_options`` gives its options from the command's own arguments;
    ``kernel_options`` are the run options of ``_KERNEL_OPTIONS`` that it
    takes; ``needs_bands`` requires ``--band-col``.
    """
    _add_input_arguments(parser)
    _add_grid_arguments(parser)
    _add_run_arguments(parser, kernel_options)
    parser.set_defaults(algorithm=algorithm, own_options=own_options, needs_bands=needs_bands)
    out = parser.add_argument_group("more output")
    out.add_argument(
        "--periodogram",
        metavar="FILE",
        help="also write every periodogram: .npy, .npz, .h5/.hdf5 or .parquet",
    )
    out.add_argument(
        "--plot",
        metavar="DIR",
        help="write a figure per chosen object (periodogram, folded light curve)",
    )
    out.add_argument(
        "--plot-ids",
        metavar="ID[,ID...]",
        help="objects to plot (default: the first 5 objects of INPUT)",
    )
    out.add_argument("--plot-format", default="png", help="figure format (default png)")
    out.add_argument(
        "--t-unit",
        metavar="UNIT",
        help="unit of the time column on the figures (default: d for a column "
        "named like mjd, jd, hjd, bjd; else none)",
    )
    out.add_argument("--y-unit", metavar="UNIT", help="unit of the value column on the figures")
    out.add_argument(
        "--invert-y",
        action=argparse.BooleanOptionalAction,
        help="draw y growing downwards (default: when the column name or --y-unit says magnitude)",
    )
    parser.set_defaults(func=_run_search)


def _add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """The catalog file, its layout and columns, and the results file."""
    from clperiod.io.readers import LAYOUTS

    parser.add_argument(
        "input",
        metavar="INPUT",
        help="catalog file: objId, t, y[, dy] lines (the papers' layout), "
        "long CSV or Parquet with a header, or nested Parquet",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="results file, .parquet or .csv (default: INPUT's name with '.<command>.parquet')",
    )
    parser.add_argument(
        "--format",
        choices=("parquet", "csv"),
        help="results format (default: from the suffix of OUT)",
    )
    read = parser.add_argument_group("input")
    read.add_argument(
        "--layout",
        default="auto",
        choices=("auto", *LAYOUTS),
        help="file layout (default: from the suffix and content)",
    )
    read.add_argument("--id-col", default="id", help="object id column (default id)")
    read.add_argument("--t-col", default="t", help="time column (default t)")
    read.add_argument("--y-col", default="y", help="value column (default y)")
    read.add_argument(
        "--dy-col", default="auto", help="uncertainty column (default: dy when the file has one)"
    )
    read.add_argument("--no-dy", action="store_true", help="ignore uncertainties")
    read.add_argument(
        "--band-col",
        help="band (filter) label column; lombscargle-multiband and mhaov model each band, "
        "the searches of one band pool them",
    )
    read.add_argument(
        "--bands",
        metavar="LABELS",
        help="with --band-col: the comma-separated band labels (others are an error)",
    )
    read.add_argument(
        "--nested-col", help="nested Parquet: the list<struct> column of observations"
    )
    read.add_argument(
        "--delimiter",
        type=_delimiter,
        default=",",
        help="CSV field separator (default ,; '\\t' for a tab)",
    )
    read.add_argument(
        "--nan-policy",
        choices=("raise", "omit"),
        default="raise",
        help="non-finite t, y or dy: error (default), or drop those rows",
    )
    read.add_argument(
        "--grouping",
        choices=("auto", "contiguous", "sort"),
        default="auto",
        help="rows of one object: found by reading the ids once and sorted by "
        "id when not contiguous (auto, default), taken as contiguous, or "
        "always sorted (sort; files in time order)",
    )


def _add_grid_arguments(parser: argparse.ArgumentParser) -> None:
    """An explicit frequency grid, or astropy's automatic one."""
    grid = parser.add_argument_group(
        "frequency grid",
        "--fmin/--fmax/--nf: nf frequencies from fmin up to, not including, fmax (the papers' "
        "grid); --fmin/--df/--nf: fmin + k df. Without --nf: astropy's autofrequency over the "
        "whole catalog (longest baseline, largest object), reaching periods of 0.05 (days) at "
        "least unless --fmax or --min-period is given; --fmin/--fmax bounding it. "
        "--max-period and --min-period may stand for --fmin and --fmax. "
        "--frequencies-file or --periods-file: any frequencies (e.g. uniform in period), "
        "searched as given, in place of the other grid options.",
    )
    low = grid.add_mutually_exclusive_group()
    low.add_argument("--fmin", type=float, help="lowest frequency (cycles per time unit)")
    low.add_argument(
        "--max-period", type=float, help="longest period, in the time unit (--fmin = 1 / it)"
    )
    high = grid.add_mutually_exclusive_group()
    high.add_argument(
        "--fmax", type=float, help="upper frequency bound (cycles per time unit), excluded"
    )
    high.add_argument(
        "--min-period", type=float, help="shortest period, in the time unit (--fmax = 1 / it)"
    )
    grid.add_argument("--nf", type=_count, help="number of frequencies (1e5 or 100000)")
    grid.add_argument(
        "--df", type=float, help="frequency step, cycles per time unit (with --fmin and --nf)"
    )
    listed = grid.add_mutually_exclusive_group()
    listed.add_argument(
        "--frequencies-file",
        metavar="FILE",
        help="the frequencies to search: a text file of one number per line (# comments) "
        "or a 1-D .npy array",
    )
    listed.add_argument(
        "--periods-file",
        metavar="FILE",
        help="the periods to search (frequencies 1 / period), as --frequencies-file",
    )
    grid.add_argument(
        "--samples-per-peak",
        type=float,
        help="automatic grid: points across a peak of width 1/T (default 5)",
    )
    grid.add_argument(
        "--nyquist-factor",
        type=float,
        help="automatic grid: multiple of the average Nyquist frequency (default 5)",
    )


#: Kernel options of the searches: name -> (choices, default, help).
_KERNEL_OPTIONS = {
    "precision": (("fp64", "fp32"), "fp64", "kernel precision (default fp64)"),
    "memory": (("auto", "local", "global"), "auto", "kernel memory strategy (default auto)"),
}


def _add_run_arguments(parser: argparse.ArgumentParser, kernel_options: tuple[str, ...]) -> None:
    """Device, kernel (those of ``kernel_options``), chunk and resume options."""
    from clperiod.io.readers import DEFAULT_CHUNK_ROWS, FIRST_CHUNK_ROWS

    run = parser.add_argument_group("run")
    run.add_argument("--device", help="device selection (same grammar as CLPERIOD_DEVICE)")
    for name in kernel_options:
        choices, default, text = _KERNEL_OPTIONS[name]
        run.add_argument(f"--{name}", choices=choices, default=default, help=text)
    run.add_argument(
        "--top-k", type=int, default=1, help="distinct peaks reported per object (default 1)"
    )
    run.add_argument(
        "--chunk-rows",
        type=_count,
        default=DEFAULT_CHUNK_ROWS,
        help=f"observations read and searched at a time (default {DEFAULT_CHUNK_ROWS:,})",
    )
    run.add_argument(
        "--chunk-objects",
        type=_count,
        help="at most this many objects per chunk (default: no limit)",
    )
    run.add_argument(
        "--first-chunk-rows",
        type=_count,
        default=FIRST_CHUNK_ROWS,
        help="observations of the first chunk; each next chunk may hold twice "
        f"as many, up to --chunk-rows (default {FIRST_CHUNK_ROWS:,}; 0: no ramp)",
    )
    run.add_argument(
        "--restart",
        action="store_true",
        help="discard the finished chunks of an earlier run instead of resuming",
    )
    run.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (it shows only on a terminal anyway)",
    )


def _add_lombscargle(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lombscargle",
        help="Lomb-Scargle period search of every object of a catalog file",
        description="Lomb-Scargle periodograms of every object of a catalog file, read and "
        "searched in chunks; one row per object (best period, power, false-alarm "
        "probability, top-k peaks, status) to a Parquet or CSV file. An interrupted run "
        "resumes from its finished chunks when run again.",
    )
    _add_search_arguments(parser, "lombscargle", _lombscargle_options)
    options = parser.add_argument_group("Lomb-Scargle")
    options.add_argument(
        "--method",
        choices=("generalized", "standard"),
        default="generalized",
        help="floating-mean weighted (default) or classic periodogram",
    )
    options.add_argument(
        "--normalization",
        choices=("standard", "model", "log", "psd", "none"),
        default="standard",
        help="power normalization (default standard)",
    )
    options.add_argument(
        "--fap-method",
        choices=("baluev", "davies", "naive", "townsend", "none"),
        default="baluev",
        help="false-alarm probability of the fap column (default baluev)",
    )
    options.add_argument(
        "--fit-mean",
        action=argparse.BooleanOptionalAction,
        help="fit a floating mean (default: yes for generalized, no for standard)",
    )
    options.add_argument(
        "--center-data",
        action=argparse.BooleanOptionalAction,
        help="subtract the (weighted) mean first (default: yes for generalized, no for standard)",
    )


def _add_supersmoother(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "supersmoother",
        help="SuperSmoother period search of every object of a catalog file",
        description="SuperSmoother periodograms of every object of a catalog file, read and "
        "searched in chunks; one row per object (best period, power, top-k peaks, status) to "
        "a Parquet or CSV file. An interrupted run resumes from its finished chunks when run "
        "again.",
    )
    _add_search_arguments(parser, "supersmoother", _supersmoother_options)
    options = parser.add_argument_group("SuperSmoother")
    options.add_argument(
        "--variant",
        choices=("original", "single_pass"),
        default="original",
        help="Friedman's smoother (default) or the single-pass variant",
    )
    options.add_argument(
        "--alpha", type=float, default=9.0, help="bass enhancement in [0, 10] (default 9)"
    )
    options.add_argument(
        "--compat",
        action="store_true",
        help="reproduce the reference GPU code (docs/guide/supersmoother.md)",
    )
    options.add_argument(
        "--periodic",
        action=argparse.BooleanOptionalAction,
        help="wrap the smoother's windows around phase 0/1 (default: yes; "
        "no with --compat; --no-periodic needs --variant original)",
    )


def _add_lombscargle_multiband(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lombscargle-multiband",
        help="multiband Lomb-Scargle period search of every object of a catalog file",
        description="Multiband Lomb-Scargle periodograms (VanderPlas & Ivezic 2015; astropy's "
        "LombScargleMultiband, method 'flexible') of every object of a catalog file with a "
        "band label per row (--band-col), read and searched in chunks; one row per object "
        "(best period, power, top-k peaks, status) to a Parquet or CSV file. An interrupted "
        "run resumes from its finished chunks when run again.",
    )
    _add_search_arguments(
        parser,
        "lombscargle_multiband",
        _multiband_options,
        kernel_options=("precision",),
        needs_bands=True,
    )
    options = parser.add_argument_group("multiband Lomb-Scargle")
    options.add_argument(
        "--nterms-base",
        type=int,
        default=1,
        help="harmonics shared by all bands, 0 to 4 (default 1)",
    )
    options.add_argument(
        "--nterms-band",
        type=int,
        default=1,
        help="harmonics of each band's own model, 0 to 4 (default 1)",
    )
    options.add_argument(
        "--center-data",
        action=argparse.BooleanOptionalAction,
        help="subtract each band's weighted mean first (default: yes)",
    )


def _add_mhaov(subparsers: argparse._SubParsersAction) -> None:
    from clperiod.periodograms.mhaov import MAX_NHARMONICS

    parser = subparsers.add_parser(
        "mhaov",
        help="multi-harmonic AOV period search of every object of a catalog file",
        description="Multi-harmonic analysis of variance periodograms (Schwarzenberg-Czerny "
        "1996, as P4J computes them) of every object of a catalog file: with --band-col the "
        "multiband statistic (each band its own mean and fit, P4J's MultiBandPeriodogram), "
        "without it the single-band one. Read and searched in chunks; one row per object "
        "(best period, power, top-k peaks, status) to a Parquet or CSV file. An interrupted "
        "run resumes from its finished chunks when run again.",
    )
    _add_search_arguments(parser, "mhaov", _mhaov_options, kernel_options=("precision",))
    options = parser.add_argument_group("multi-harmonic AOV")
    options.add_argument(
        "--nharmonics",
        type=int,
        default=1,
        help=f"harmonics of the statistic (P4J's Nharmonics), 1 to {MAX_NHARMONICS} (default 1)",
    )
    options.add_argument(
        "--fit-harmonics",
        type=int,
        help="with --band-col: harmonics fitted in each band (default 1, as P4J; "
        "--nharmonics's value gives the textbook multiband statistic)",
    )
    options.add_argument(
        "--min-points",
        type=int,
        help="fewest rows of a band for it to enter an object's statistic "
        "(default and least: 2 max(nharmonics, fit harmonics) + 2; ALeRCE keeps 15)",
    )


def _phase_statistic_parser(
    subparsers: argparse._SubParsersAction,
    command: str,
    algorithm: str,
    own_options: Callable[[argparse.Namespace], dict[str, Any]],
    what: str,
) -> argparse.ArgumentParser:
    """The subcommand of a phase-binned statistic (``what``: its description's
    first sentence); the caller adds the statistic's own options."""
    parser = subparsers.add_parser(
        command,
        help=f"{what.split(' (')[0]} period search of every object of a catalog file",
        description=f"{what} of every object of a catalog file, read and searched in chunks; "
        "one row per object (best period, best statistic, top-k peaks, status) to a Parquet "
        "or CSV file. An interrupted run resumes from its finished chunks when run again.",
    )
    _add_search_arguments(parser, algorithm, own_options, kernel_options=("precision",))
    return parser


def _add_pdm(subparsers: argparse._SubParsersAction) -> None:
    from clperiod.periodograms.phase_statistics import DEFAULT_PDM_BINS

    parser = _phase_statistic_parser(
        subparsers,
        "pdm",
        "pdm",
        _pdm_options,
        "Phase dispersion minimization (Stellingwerf 1978; theta, lowest at the period: "
        "columns statistic_min, statistic_min_1 ..)",
    )
    options = parser.add_argument_group("PDM")
    options.add_argument(
        "--bins", type=int, default=DEFAULT_PDM_BINS, help="phase bins per cover (default 10)"
    )
    options.add_argument(
        "--covers", type=int, default=1, help="covers, each shifted by 1/(bins covers) (default 1)"
    )
    options.add_argument(
        "--weighted",
        action=argparse.BooleanOptionalAction,
        help="weight by dy**-2 (default: yes when the catalog has dy)",
    )


def _add_aov(subparsers: argparse._SubParsersAction) -> None:
    from clperiod.periodograms.phase_statistics import DEFAULT_AOV_BINS

    parser = _phase_statistic_parser(
        subparsers,
        "aov",
        "aov",
        _aov_options,
        "Phase-binned analysis of variance (Schwarzenberg-Czerny 1989; theta, highest at the "
        "period: columns statistic_max, statistic_max_1 ..)",
    )
    options = parser.add_argument_group("AOV")
    options.add_argument(
        "--bins", type=int, default=DEFAULT_AOV_BINS, help="phase bins (default 10)"
    )
    options.add_argument(
        "--weighted",
        action=argparse.BooleanOptionalAction,
        help="weight by dy**-2 (default: yes when the catalog has dy)",
    )


def _add_conditional_entropy(subparsers: argparse._SubParsersAction) -> None:
    from clperiod.periodograms.phase_statistics import (
        DEFAULT_MAGNITUDE_BINS,
        DEFAULT_PHASE_BINS,
    )

    parser = _phase_statistic_parser(
        subparsers,
        "conditional-entropy",
        "conditional_entropy",
        _conditional_entropy_options,
        "Conditional entropy (Graham et al. 2013; in nats, lowest at the period: columns "
        "statistic_min, statistic_min_1 ..)",
    )
    options = parser.add_argument_group("conditional entropy")
    options.add_argument(
        "--phase-bins", type=int, default=DEFAULT_PHASE_BINS, help="phase bins (default 10)"
    )
    options.add_argument(
        "--magnitude-bins",
        type=int,
        default=DEFAULT_MAGNITUDE_BINS,
        help="bins of the values, scaled to [0, 1] per object (default 5)",
    )


def _add_bls(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bls",
        help="box least squares transit search of every object of a catalog file",
        description="Box least squares (Kovacs et al. 2002; astropy's BoxLeastSquares) of "
        "every object of a catalog file at the periods of the frequency grid, read and "
        "searched in chunks; one row per object (best period, power: the objective, the best "
        "box's depth, depth_err, duration, transit_time, depth_snr, log_likelihood, top-k "
        "peaks, status) to a Parquet or CSV file. Every duration must be shorter than the "
        "shortest period (give --fmax or --min-period). An interrupted run resumes from its "
        "finished chunks when run again.",
    )
    _add_search_arguments(parser, "bls", _bls_options, kernel_options=("precision",))
    options = parser.add_argument_group("BLS")
    durations = options.add_mutually_exclusive_group(required=True)
    durations.add_argument(
        "--durations",
        type=float,
        nargs="+",
        metavar="D",
        help="box durations (time unit); give INPUT before this option",
    )
    durations.add_argument(
        "--duration-range",
        nargs=3,
        metavar=("DMIN", "DMAX", "N"),
        type=float,
        help="N box durations evenly spaced from DMIN to DMAX",
    )
    options.add_argument(
        "--objective",
        choices=("likelihood", "snr"),
        default="likelihood",
        help="maximise the log-likelihood (default) or the depth's signal-to-noise ratio",
    )
    options.add_argument(
        "--method",
        choices=("binned", "exact"),
        default="binned",
        help="binned (astropy's fast, default) or exact (astropy's slow) search",
    )
    options.add_argument(
        "--oversample",
        type=int,
        default=10,
        help="bins per shortest duration (binned) or box centres per duration (exact); default 10",
    )
    options.add_argument(
        "--compat",
        action="store_const",
        const="astropy",
        help="binned: astropy's bins exactly, with its gaps at phase 0 (default: boxes "
        "wrap around phase 0)",
    )


#: Refinement box of ``clperiod rv search --refine``: period within this
#: fraction, eccentricity within this distance of the planet found before.
_REFINE_PERIOD = 0.03
_REFINE_ECCENTRICITY = 0.15


def _per_instrument(text: str | None, option: str) -> dict[str, float] | float | None:
    """``a=3,j=2.3`` as ``{label: value}``, or one number for every instrument."""
    if text is None:
        return None
    try:
        if "=" not in text:
            return float(text)
        return {
            label.strip(): float(value)
            for label, _, value in (item.partition("=") for item in text.split(","))
        }
    except ValueError:
        raise ValueError(
            f"{option} takes a number or label=value pairs separated by commas "
            f"(e.g. a=3,j=2.5), got {text!r}"
        ) from None


def _instrument_values(value: dict[str, float] | float | None, instruments: Any) -> Any:
    """A per-instrument option as kepler takes it (one number: the same for every instrument)."""
    if value is None or isinstance(value, dict):
        return value
    return {str(label): value for label in set(instruments.tolist())}


def _read_params(path: str) -> Any:
    """Model parameters ``(n_models, n_planets, 5)`` from a .npy or text file."""
    import numpy as np

    from clperiod.io.file_errors import is_damage, text_errors
    from clperiod.io.formats import are_numbers, leading_record

    if path.endswith(".npy"):
        try:
            params = np.load(path)
        except (ValueError, EOFError) as exc:  # pickled objects, a truncated header
            raise ValueError(f"{path}: not a readable .npy array ({exc})") from None
    else:
        skip, record = leading_record(Path(path))
        delimiter = "," if "," in record else None
        header = not are_numbers(record.replace(",", " ").split())
        with text_errors(Path(path)):
            try:
                params = np.loadtxt(
                    path,
                    delimiter=delimiter,
                    skiprows=skip + header,
                    ndmin=2,
                    encoding="utf-8-sig",
                )
            except ValueError as exc:
                if is_damage(exc):  # undecodable text: text_errors says where
                    raise
                raise ValueError(f"{path}: {exc}") from None
    if params.ndim not in (2, 3) or params.shape[-1] % 5 or params.size == 0:
        raise ValueError(
            f"{path}: expected 5 numbers per planet on each row (n_models rows), "
            f"got shape {params.shape}"
        )
    return params.reshape(params.shape[0], -1, 5)


def _rv_output(args: argparse.Namespace, source: str, suffix: str) -> Path:
    """-o, else ``source``'s name with ``suffix`` in place of its own suffix."""
    if args.output is not None:
        return Path(args.output)
    source_path = Path(source)
    return source_path.with_name(source_path.name.rsplit(".", 1)[0] + suffix)


def _search_planets(data: Any, args: argparse.Namespace) -> tuple[list[Any], Any]:
    """``--planets`` searches, each with the planets found before held fixed, then
    ``--refine`` rounds re-searching each planet near itself with the others fixed.

    Returns the planets (standard basis) and the last search, whose chi^2 and
    offsets are those of all planets together.
    """
    import numpy as np

    from clperiod import kepler

    if args.planets < 1 or args.refine < 0:
        raise ValueError(
            f"--planets must be >= 1 and --refine >= 0, got {args.planets} and {args.refine}"
        )
    jitter = _instrument_values(_per_instrument(args.jitter, "--jitter"), data.instrument)
    rng = np.random.default_rng(args.seed)

    def search(
        known: list[Any], period: tuple[float, float], eccentricity: tuple[float, float]
    ) -> Any:
        return kepler.search(
            data.t,
            data.v,
            data.sigma,
            period=period,
            eccentricity=eccentricity,
            instrument=data.instrument,
            known=np.array(known).reshape(-1, 5),
            jitter=jitter,
            n_models=args.n_models,
            t_ref=args.t_ref,
            precision=args.precision,
            seed=rng,
            device=args.device,
        )

    planets: list[Any] = []
    for _ in range(args.planets):
        last = search(planets, tuple(args.period), tuple(args.eccentricity))
        planets.append(last.best)
    e_low, e_high = args.eccentricity
    for _ in range(args.refine):
        for i, planet in enumerate(planets):
            period = (planet[0] * (1 - _REFINE_PERIOD), planet[0] * (1 + _REFINE_PERIOD))
            eccentricity = (
                max(e_low, planet[2] - _REFINE_ECCENTRICITY),
                min(e_high, planet[2] + _REFINE_ECCENTRICITY),
            )
            last = search(planets[:i] + planets[i + 1 :], period, eccentricity)
            planets[i] = last.best
    return planets, last


def _write_planets(path: Path, planets: list[Any], last: Any) -> None:
    """One CSV row per planet: its orbit, then t_ref, chi^2 and offsets of the whole fit."""
    from clperiod.io.results import atomic_path

    names = ["planet", "period", "k", "e", "w", "m0", "t_ref", "chi2"]
    names += [f"offset_{label}" for label in last.instruments]
    with atomic_path(path) as temporary, open(temporary, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(names)
        for number, planet in enumerate(planets, start=1):
            writer.writerow(
                [
                    number,
                    *map(repr, map(float, planet)),
                    repr(float(last.t_ref)),
                    repr(float(last.chi2[0])),
                    *map(repr, map(float, last.offsets[0])),
                ]
            )


def _run_rv_search(args: argparse.Namespace) -> int:
    """Find planets in radial velocities; write them and print a table."""
    from clperiod import io

    output = _rv_output(args, args.data, ".planets.csv")
    try:
        _refuse_overwriting({"-o": output}, [args.data], defaulted=args.output is None)
        data = io.read_rv(args.data)
        planets, last = _search_planets(data, args)
        _write_planets(output, planets, last)
    except _ERRORS as exc:
        return _fail(exc)
    print(
        f"{len(planets)} planet(s) from {data.t.size} velocities ({args.n_models:,} trial "
        f"orbits per search), chi2 = {last.chi2[0]:.2f}, t_ref = {last.t_ref:.6f}; "
        f"written to {output}"
    )
    print(f"{'planet':>6} {'P':>14} {'K':>10} {'e':>6} {'w [rad]':>8} {'M0 [rad]':>8}")
    for number, (period, k, e, w, m0) in enumerate(planets, start=1):
        print(f"{number:>6} {period:14.6f} {k:10.4f} {e:6.3f} {w:8.3f} {m0:8.3f}")
    offsets = ", ".join(
        f"{label}: {value:.3f}"
        for label, value in zip(last.instruments, last.offsets[0], strict=True)
    )
    print(f"offsets: {offsets}")
    return 0


def _run_rv_evaluate(args: argparse.Namespace) -> int:
    """chi^2 or log-likelihood of every model of a parameter file; write them."""
    import numpy as np

    from clperiod import io, kepler

    output = _rv_output(args, args.params, f".{args.statistic}.npy")
    try:
        _refuse_overwriting(
            {"-o": output}, [args.data, args.params], defaulted=args.output is None
        )
        if output.suffix not in (".npy", ".csv", ".txt"):
            raise ValueError(f"the output {output} must end in .npy, .csv or .txt")
        data = io.read_rv(args.data)
        params = _read_params(args.params)
        function = kepler.chi2 if args.statistic == "chi2" else kepler.loglike
        values = function(
            data.t,
            data.v,
            data.sigma,
            params,
            basis=args.basis,
            t_ref=args.t_ref,
            instrument=data.instrument,
            offsets=_instrument_values(
                _per_instrument(args.offsets, "--offsets"), data.instrument
            ),
            jitter=_instrument_values(_per_instrument(args.jitter, "--jitter"), data.instrument),
            trend=args.trend,
            precision=args.precision,
            device=args.device,
        )
        _write_values(output, values, args.statistic)
    except _ERRORS as exc:
        return _fail(exc)
    finite = np.isfinite(values)
    summary = f"{values.size} models ({params.shape[1]} planet(s)) written to {output}"
    if finite.any():
        pick = np.nanargmin if args.statistic == "chi2" else np.nanargmax
        best = int(pick(values))
        summary += f"; best {args.statistic} {values[best]:.6g} (model {best})"
    if not finite.all():
        summary += f"; {int((~finite).sum())} invalid model(s) (NaN)"
    print(summary)
    return 0


def _write_values(path: Path, values: Any, name: str) -> None:
    """One value per model: ``.npy``, or text with ``name`` on a header line."""
    import numpy as np

    from clperiod.io.results import atomic_path

    with atomic_path(path) as temporary:
        if path.suffix == ".npy":
            with open(temporary, "wb") as handle:
                np.save(handle, values)
        else:
            np.savetxt(temporary, values, fmt="%.17g", header=name, comments="")


def _add_rv(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "rv",
        help="Keplerian radial-velocity models: planet search, or chi^2 of a parameter grid",
        description="Radial velocities of one star (radvel's layouts: whitespace-separated "
        "'time mnvel errvel tel', or CSV with columns t, vel, errvel) against Keplerian "
        "models on the device.",
    )
    commands = parser.add_subparsers(dest="rv_command", required=True, metavar="RV_COMMAND")
    _add_rv_search(commands)
    _add_rv_evaluate(commands)


def _add_rv_search(commands: argparse._SubParsersAction) -> None:
    search = commands.add_parser(
        "search",
        help="find planets by a random search (K and offsets solved)",
        description="Random search for planets: trial orbits (P log-uniform, e, w and M0 "
        "uniform), the planet's K and each instrument's offset solved by weighted least "
        "squares. Each further planet is searched with the ones found before held fixed; "
        "--refine re-searches each planet near itself with the others fixed. Writes one row "
        "per planet (P, K, e, w, M0, then t_ref, chi^2 and offsets of the whole fit) to a CSV "
        "file.",
    )
    search.add_argument("data", metavar="DATA", help="radial-velocity file")
    search.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="planets CSV file (default: DATA's name with '.planets.csv')",
    )
    search.add_argument(
        "--period",
        nargs=2,
        type=float,
        metavar=("MIN", "MAX"),
        required=True,
        help="period range, in the unit of DATA's times",
    )
    search.add_argument(
        "--eccentricity",
        nargs=2,
        type=float,
        metavar=("MIN", "MAX"),
        default=(0.0, 0.9),
        help="eccentricity range (default 0 0.9)",
    )
    search.add_argument(
        "--planets",
        type=int,
        default=1,
        metavar="N",
        help="planets to search for, one after the other (default 1)",
    )
    search.add_argument(
        "--refine",
        type=int,
        default=0,
        metavar="N",
        help="rounds re-searching each planet within 3 %% of its period and "
        "0.15 of its eccentricity, the others fixed (default 0)",
    )
    search.add_argument(
        "--n-models",
        type=_count,
        default=1_000_000,
        metavar="N",
        help="trial orbits per search (default 1,000,000)",
    )
    search.add_argument("--seed", type=int, help="random seed (default: fresh)")
    search.add_argument(
        "--t-ref", type=float, help="reference epoch of M0 (default: the middle of the data)"
    )
    _add_rv_common(search)
    search.set_defaults(func=_run_rv_search)


def _add_rv_evaluate(commands: argparse._SubParsersAction) -> None:
    from clperiod.kepler.orbits import BASES

    evaluate = commands.add_parser(
        "evaluate",
        help="chi^2 or log-likelihood of every model in a parameter file",
        description="chi^2 (or radvel's log-likelihood) of every model of a parameter file: "
        ".npy of shape (n_models, n_planets, 5), or a text file (comma or whitespace "
        "separated, '#' comments, an optional header line) with 5 numbers per planet on each "
        "row. Writes one value per model (.npy, or text with a header line).",
    )
    evaluate.add_argument("data", metavar="DATA", help="radial-velocity file")
    evaluate.add_argument("params", metavar="PARAMS", help="model parameters (.npy or text)")
    evaluate.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="output .npy, .csv or .txt (default: PARAMS's name with '.<statistic>.npy')",
    )
    evaluate.add_argument(
        "--statistic",
        choices=("chi2", "loglike"),
        default="chi2",
        help="chi^2 (default) or Gaussian log-likelihood with jitter",
    )
    evaluate.add_argument(
        "--basis",
        choices=BASES,
        default=BASES[0],
        metavar="BASIS",
        help="the 5 parameters of each planet, one of: "
        f"{', '.join(repr(b) for b in BASES)} (default {BASES[0]!r})",
    )
    evaluate.add_argument(
        "--offsets",
        metavar="VALUES",
        help="instrument offsets, in the unit of the velocities: label=value,... or one number",
    )
    evaluate.add_argument(
        "--trend",
        nargs=2,
        type=float,
        metavar=("DVDT", "CURV"),
        help="add dvdt (t - t_ref) + curv (t - t_ref)^2 (velocity per time unit, per its square)",
    )
    evaluate.add_argument(
        "--t-ref", type=float, default=0.0, help="reference epoch of M0 and of --trend (default 0)"
    )
    _add_rv_common(evaluate)
    evaluate.set_defaults(func=_run_rv_evaluate)


def _add_rv_common(parser: argparse.ArgumentParser) -> None:
    """Options shared by the rv commands."""
    parser.add_argument(
        "--jitter",
        metavar="VALUES",
        help="jitter added to the uncertainties in quadrature, in the unit of the "
        "velocities: label=value,... or one number for every instrument",
    )
    parser.add_argument(
        "--precision",
        choices=("mixed", "fp64", "fp32"),
        default="mixed",
        help="mixed (default: phase in double, the rest in single), fp64, fp32",
    )
    parser.add_argument("--device", help="device selection (as CLPERIOD_DEVICE)")


_COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    _add_info,
    _add_lombscargle,
    _add_supersmoother,
    _add_lombscargle_multiband,
    _add_mhaov,
    _add_pdm,
    _add_aov,
    _add_conditional_entropy,
    _add_bls,
    _add_singlepulse,
    _add_rv,
)


def _version() -> str:
    """The installed clperiod version (without importing the package and pyopencl)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("clperiod")
    except PackageNotFoundError:
        return "0+unknown"


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors are one line and where to find the
    options, not the whole usage (the subcommands' parsers are of this class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (`{self.prog} --help` lists the options)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``clperiod`` argument parser with one subparser per command."""
    parser = _Parser(
        prog="clperiod",
        description="Period searches and time-domain kernels on any OpenCL device.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add_command in _COMMANDS:
        add_command(subparsers)
    return parser


def _chosen_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Any:
    """The parser of the (sub)command that ``args`` chose."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = getattr(args, action.dest, None)
            if chosen in action.choices:
                return _chosen_parser(action.choices[chosen], args)
    return parser


def _delimiter(text: str) -> str:
    """A CSV separator; ``\\t`` as typed in a shell stands for a tab (argparse type)."""
    return "\t" if text == "\\t" else text


def _count(text: str) -> int:
    """A whole number, also written like 1e5 or 100_000 (argparse type)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value == int(value)):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    return int(value)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line interface.

    Parameters
    ----------
    argv
        Arguments without the program name; ``None`` means ``sys.argv[1:]``.

    Returns
    -------
    int
        Exit status (0 on success; 141, as for SIGPIPE, when the reader of the
        output went away, as ``| head`` does).
    """
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # named by the (sub)command they were given to
        _chosen_parser(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return args.func(args)
    except BrokenPipeError:
        # stdout's reader is gone: no traceback, and no second error when Python
        # flushes stdout at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _show_warning(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> None:
    """Print a warning as one ``clperiod: warning:`` line on stderr."""
    print(f"clperiod: warning: {message}", file=sys.stderr)
