"""Reference Philox4x32-10 and bootstrap draws within bands, written for clarity.

Philox4x32-10 (Salmon, Moraes, Dror & Shaw 2011, "Parallel random numbers: as easy as
1, 2, 3", SC11) maps a 128-bit counter and a 64-bit key to 128 random bits in ten rounds.
A round multiplies counter words 0 and 2 by the constants ``M0``, ``M1`` (64-bit products
split into high and low words) and mixes the high words with words 1, 3 and the key; the
key grows by the Weyl constants ``W0``, ``W1`` between rounds. Here it runs on NumPy
arrays of counters (uint64 arithmetic masked to 32 bits), so the draws of every row of a
resampled catalog come at once. Nothing here imports ``clperiod``.

The draws restate ``clperiod.periodograms.bootstrap``'s scheme: row ``i`` (counted from its
object's first row) of resampling ``r`` of catalog object ``k`` takes the counter
``(i, r, k mod 2**32, k // 2**32)`` under the key ``(seed mod 2**32, seed // 2**32)``;
words 0 and 1 of the output form ``u = word0 + 2**32 word1``, and the row draws entry
``floor(u n / 2**64)`` of the ``n`` rows of its object and band, in catalog order.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF
ROUNDS = 10

UintArray = NDArray[np.uint64]


def philox4x32(counter: list[UintArray], key: tuple[int, int]) -> list[UintArray]:
    """The four output words of Philox4x32-10 for arrays of counter words (uint64 holding
    32-bit values) and one key."""
    x = [np.asarray(word, dtype=np.uint64) & MASK for word in counter]
    k0, k1 = key[0] & MASK, key[1] & MASK
    for round_number in range(ROUNDS):
        if round_number:
            k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
        product0 = x[0] * np.uint64(M0)
        product1 = x[2] * np.uint64(M1)
        hi0, lo0 = product0 >> np.uint64(32), product0 & np.uint64(MASK)
        hi1, lo1 = product1 >> np.uint64(32), product1 & np.uint64(MASK)
        x = [hi1 ^ x[1] ^ np.uint64(k0), lo1, hi0 ^ x[3] ^ np.uint64(k1), lo0]
    return x


def draw_index(u: UintArray, n: NDArray[np.int64]) -> NDArray[np.int64]:
    """``floor(u n / 2**64)`` for 64-bit ``u`` and ``n < 2**32``, exactly."""
    n = n.astype(np.uint64)
    high = (u >> np.uint64(32)) * n
    low = (u & np.uint64(MASK)) * n
    return ((high + (low >> np.uint64(32))) >> np.uint64(32)).astype(np.int64)


def bootstrap_rows(offsets: NDArray[np.int64], band_codes: NDArray | None, objects: list[int],
                   resamplings: range, seed: int) -> NDArray[np.int64]:
    """Catalog rows drawn for every row of the resampled copies of ``objects``: object by
    object, resampling by resampling (``resamplings``), row by row."""
    key = (seed & MASK, seed >> 32)
    drawn = []
    for k in objects:
        rows = np.arange(offsets[k], offsets[k + 1])
        codes = np.zeros(rows.size, int) if band_codes is None else band_codes[rows]
        pools = {code: rows[codes == code] for code in np.unique(codes)}
        pool_sizes = np.array([pools[code].size for code in codes], dtype=np.int64)
        for r in resamplings:
            counter = [np.arange(rows.size, dtype=np.uint64), np.full(rows.size, r),
                       np.full(rows.size, k & MASK), np.full(rows.size, k >> 32)]
            word = philox4x32([np.asarray(c, dtype=np.uint64) for c in counter], key)
            u = word[0] | (word[1] << np.uint64(32))
            picks = draw_index(u, pool_sizes)
            drawn.append([pools[code][pick] for code, pick in zip(codes, picks, strict=True)])
    return np.array([row for copy in drawn for row in copy], dtype=np.int64)
