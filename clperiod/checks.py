"""Checks of scalar arguments: each error names the argument and what it accepts.

Arrays, lists, strings, booleans and None are refused where a number or a
choice is expected, instead of failing later with a message that names
nothing (or, for ``bool("no")``, not failing at all).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Iterable
from typing import Any

import numpy as np

__all__ = ["boolean", "choice", "integer", "real"]


def choice(name: str, value: Any, choices: Iterable[Any]) -> Any:
    """``value`` if it is one of ``choices``, else ValueError (arrays and
    lists are never one: they are not compared element by element)."""
    choices = tuple(choices)
    if not (isinstance(value, Hashable) and value in choices):
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def integer(name: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an int in ``[low, high]``.

    Raises
    ------
    TypeError
        Not an integer (floats, even integral ones, strings, booleans, None).
    ValueError
        Outside the bounds.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (numbers.Integral, np.integer)
    ):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"[{'-inf' if low is None else low}, {'inf' if high is None else high}]"
        raise ValueError(f"{name} must be in {bounds}, got {value}")
    return value


def real(name: str, value: Any, *, positive: bool = False, finite: bool = True) -> float:
    """``value`` (a real number, or a 0-d NumPy array of one) as a float.

    Parameters
    ----------
    name
        The argument's name.
    value
        The argument.
    positive
        Require ``value > 0``.
    finite
        Require a finite value.

    Raises
    ------
    TypeError
        Not a real number (strings, booleans, None, arrays, quantities).
    ValueError
        NaN or infinite (with ``finite``), or not positive (with ``positive``).
    """
    if type(value) is np.ndarray and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (numbers.Real, np.floating, np.integer)
    ):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if finite and not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if positive and not value > 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    return value


def boolean(name: str, value: Any) -> bool:
    """``value`` if it is True or False (NumPy booleans too), else TypeError."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)
