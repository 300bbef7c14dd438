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


_COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (_add_info,)


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
