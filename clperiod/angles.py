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
  by the exact ``fmod`` before the division;
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
INV_TWO_PI_WORDS: tuple[int, ...] = (0, *(
    (_INV_TWO_PI_SCALED >> (64 * i)) & (2**64 - 1) for i in reversed(range(_WORDS - 1))))


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


def reduce_angle(x) -> np.ndarray:
    """``x - 2 pi k`` in ``[-pi, pi]`` (``k`` the nearest integer to ``x / 2 pi``).

    Accurate to a few units in the last place of the result for every finite
    float64 ``x`` (the exact ``x``, not ``x`` rounded to some multiple of
    2 pi); non-finite values give NaN.
    """
    x = np.asarray(x, np.float64)
    with np.errstate(invalid="ignore"):
        k = np.rint(x * (1 / (2 * np.pi)))
        out = (x - k * TWO_PI_HI) - k * TWO_PI_LO
    large = np.abs(x) >= CODY_WAITE_LIMIT
    if large.any():
        big = x[large]
        out[large] = [_exact_turns(v) * (2 * math.pi) if math.isfinite(v) else math.nan
                      for v in big.tolist()]
    return out


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp's split: ``x = hi + lo`` with 26-bit halves (|x| < 1e290)."""
    scaled = 134217729.0 * x  # 2**27 + 1
    hi = scaled - (scaled - x)
    return hi, x - hi


def _two_product(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``x * y = p + err`` exactly (Dekker)."""
    p = x * y
    (xh, xl), (yh, yl) = _split(x), _split(y)
    return p, ((xh * yh - p) + xh * yl + xl * yh) + xl * yl


def turns_between(a, b, period) -> np.ndarray:
    """``(a - b) / period`` less its nearest whole number, in ``[-0.5, 0.5]``.

    ``a - b`` is formed exactly (as a pair of float64) and the whole periods
    are removed exactly before the division (``n * period`` as an exact
    product; the exact ``fmod`` beyond 2**50 periods), so the result is
    accurate to a few 1e-16 for any finite epochs and ``period > 0``:
    barycentric dates lose nothing to cancellation.
    """
    a, b, period = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, period)))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        d = a - b
        back = d - a
        d_lo = (a - (d - back)) - (b + back)
        quotient = d / period
        whole = np.rint(quotient)
        product, product_lo = _two_product(whole, period)
        # d - product is exact (Sterbenz): the two are within a factor 2
        turns = (((d - product) - product_lo) + d_lo) / period
        far = ~((np.abs(quotient) < 2.0**50) & (period > 1e-290) & (period < 1e290))
        if far.any():
            turns[far] = (np.fmod(d[far], period[far])
                          + np.fmod(d_lo[far], period[far])) / period[far]
        return turns - np.rint(turns)
