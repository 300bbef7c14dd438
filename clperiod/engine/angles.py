"""Angles modulo 2 pi and epoch differences modulo a period, at rounding level.

Kepler's equation needs ``M mod 2 pi`` of a mean anomaly of any size, and an
orbital phase needs ``(a - b) / P mod 1`` of epochs such as barycentric
Julian dates (~2.46e6 d), whose difference cancels most of their digits.
Both lose only rounding here, for every finite float64 (host, NumPy):

* :func:`reduce_angle`: ``x - 2 pi k`` in ``[-pi, pi]``; below
  :data:`CODY_WAITE_LIMIT` with a two-part 2 pi (Cody and Waite), above it
  exactly in integer arithmetic on the bits of ``1 / (2 pi)`` (Payne and
  Hanek), as the kernels do (``cl_kernels/common.mako``);
* :func:`turns_between`: ``(a - b) / P`` less its nearest whole number, with
  ``a - b`` formed exactly as a double-double and the whole periods removed
  exactly before the division (two exact products of a split ``P``, the
  exact ``fmod`` beyond 2**26 periods);
* :data:`INV_TWO_PI_WORDS`: the bits of ``1 / (2 pi)`` that the kernels'
  Payne-Hanek reduction reads.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["CODY_WAITE_LIMIT", "INV_TWO_PI_WORDS", "reduce_angle", "turns_between"]

#: Below this |x| a two-part 2 pi reduces exactly enough: k = rint(x / 2 pi)
#: stays under 2**23, so k * TWO_PI_HI (30 bits) is exact.
CODY_WAITE_LIMIT = 2.0**25
TWO_PI_HI = 6.283185303211212
TWO_PI_LO = 3.968374318722162e-09
#: 64-bit words of the Payne-Hanek table: one zero word (so that bit indices
#: of small exponents stay positive), then 1 / (2 pi) from the binary point.
_WORDS = 20
_TABLE_BITS = 64 * (_WORDS - 1)


def _arctan_of_inverse(x: int, one: int) -> int:
    """``atan(1 / x) * one`` for an integer ``x > 1``, truncated (Taylor series)."""
    power = one // x
    total, k, x2 = power, 1, x * x
    while power:
        power //= x2
        total += (-1) ** k * (power // (2 * k + 1))
        k += 1
    return total


def _inv_two_pi_bits(bits: int) -> int:
    """``floor(2**bits / (2 pi))`` up to a unit in the last place (Machin's formula)."""
    guard = 64
    one = 1 << (bits + guard)
    pi = 16 * _arctan_of_inverse(5, one) - 4 * _arctan_of_inverse(239, one)
    return (1 << (2 * bits + guard)) // (2 * pi)


#: ``floor(2**_TABLE_BITS / (2 pi))``
_INV_TWO_PI_SCALED = _inv_two_pi_bits(_TABLE_BITS)
INV_TWO_PI_WORDS: tuple[int, ...] = (
    0,
    *((_INV_TWO_PI_SCALED >> (64 * i)) & (2**64 - 1) for i in reversed(range(_WORDS - 1))),
)


def _exact_turns(x: float) -> float:
    """``x / (2 pi)`` less its nearest integer for one finite float64 (Payne-Hanek).

    With ``|x| = mantissa * 2**shift`` the table's bits above ``2**-shift``
    give whole turns and drop out; the rest, 192 bits or more past the last
    one that matters, gives the fraction exactly enough for any float64.
    """
    fraction, exponent = math.frexp(abs(x))
    mantissa, shift = int(fraction * 2**53), exponent - 53
    scale = _TABLE_BITS - shift  # > 0: shift <= 971
    turns = (mantissa * _INV_TWO_PI_SCALED) % (1 << scale)
    if turns >= 1 << (scale - 1):
        turns -= 1 << scale
    return turns / (1 << scale) if x > 0 else -turns / (1 << scale)


def reduce_angle(x, out: np.ndarray | None = None) -> np.ndarray:
    """``x - 2 pi k`` in ``[-pi, pi]`` (``k`` the nearest integer to ``x / 2 pi``).

    Accurate to a few units in the last place of the result for every finite
    float64 ``x`` (the exact ``x``, not ``x`` rounded to some multiple of
    2 pi); non-finite values give NaN. Written into ``out`` (float64, of
    ``x``'s shape; ``x`` itself is allowed) if given.
    """
    x = np.asarray(x, np.float64)
    large = exact = None
    if x.size and not (np.max(x) < CODY_WAITE_LIMIT and np.min(x) > -CODY_WAITE_LIMIT):
        large = ~(np.abs(x) < CODY_WAITE_LIMIT)
        exact = [
            _exact_turns(v) * (2 * math.pi) if math.isfinite(v) else math.nan
            for v in x[large].tolist()
        ]
    with np.errstate(invalid="ignore"):
        k = np.multiply(x, 1 / (2 * np.pi), out=np.empty_like(x))
        np.rint(k, out=k)
        out = np.subtract(x, k * TWO_PI_HI, out=np.empty_like(x) if out is None else out)
        k *= TWO_PI_LO
        out -= k
    if large is not None:
        out[large] = exact
    return out


#: Low significand bits that :func:`_split_bits` clears: the high part keeps 26
#: bits, the low part has at most 27.
_LOW_BITS = np.uint64(2**27 - 1)
#: Up to this many whole periods ``n``, ``n * hi`` and ``n * lo`` of the split
#: period are exact products.
_SPLIT_WHOLE_LIMIT = 2.0**26


def _split_bits(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``x = hi + lo`` exactly, ``hi`` the top 26 bits of the significand (any float64)."""
    hi = (x.view(np.uint64) & ~_LOW_BITS).view(np.float64)
    return hi, x - hi


def _two_difference(
    a: np.ndarray | float, b: np.ndarray | float
) -> tuple[np.ndarray | float, np.ndarray | float]:
    """``a - b = d + d_lo`` exactly (Knuth's two-sum)."""
    d = a - b
    back = d - a
    return d, (a - (d - back)) - (b + back)


def _exact_remainder_turns(d: np.ndarray, d_lo: np.ndarray, period: np.ndarray) -> np.ndarray:
    """``(d + d_lo) / period`` less whole turns, within 2 of 0, for any number
    of periods: the exact ``fmod``, then at most one period off exactly."""
    r = np.fmod(d, period)
    whole = np.rint(r / period)
    r = np.where(whole == 0, r, r - whole * period)  # exact: r within a factor 2 of period
    return (r + np.fmod(d_lo, period)) / period


def turns_between(a, b, period) -> np.ndarray:
    """``(a - b) / period`` less its nearest whole number, in ``[-0.5, 0.5]``.

    ``a - b`` is formed exactly (as a pair of float64) and the whole periods
    ``n`` are removed exactly before the division (``n * period`` as two
    exact products of a split period; the exact ``fmod`` beyond 2**26
    periods), so the result is accurate to about 1e-16 for any finite epochs
    and ``period > 0``: barycentric dates lose nothing to cancellation.
    Scalar epochs form their difference once.
    """
    a, b, period = (np.asarray(v, np.float64) for v in (a, b, period))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        if a.ndim == b.ndim == 0:  # the same float64 arithmetic, without array calls
            a, b = float(a), float(b)
        d, d_lo = _two_difference(a, b)
        whole = np.rint(d / period)
        hi, lo = _split_bits(period)
        # d - whole * hi is exact (Sterbenz): the two are within a factor 2
        turns = np.asarray(d - whole * hi)
        turns -= whole * lo
        turns += d_lo
        turns /= period
        if turns.size and not (
            np.max(whole) <= _SPLIT_WHOLE_LIMIT
            and np.min(whole) >= -_SPLIT_WHOLE_LIMIT
            and math.isfinite(np.sum(turns))
        ):
            redo = ~((np.abs(whole) <= _SPLIT_WHOLE_LIMIT) & np.isfinite(turns))
            turns[redo] = _exact_remainder_turns(
                *(np.broadcast_to(v, turns.shape)[redo] for v in (d, d_lo, period))
            )
        turns -= np.rint(turns)
        return turns
