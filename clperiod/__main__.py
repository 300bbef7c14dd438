"""``python -m clperiod``: the command line interface."""

from __future__ import annotations

from clperiod.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
