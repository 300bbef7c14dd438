"""Friends-of-friends clustering of single-pulse detections into candidates.

Two detections ``i`` and ``j`` (DM index ``d``, first sample ``s``, width
``w`` in samples, centre ``c = s + w // 2``) are *friends* when all of

* ``|d_i - d_j| <= dm_tol``;
* ``|c_i - c_j| <= time_tol * max(w_i, w_j)``;
* ``|log2(w_i / w_j)| <= width_tol``, evaluated as
  ``max(w_i, w_j) <= min(w_i, w_j) * 2**width_tol``

hold, the coincidence rule of heimdall (``hd/are_coincident.cuh``) with the
filter index replaced by ``log2`` of the width. The connected components of
the friendship graph are the candidates.

The clustering is exact (the same components as testing every pair) and
avoids testing most pairs of a dense cluster:

1. Detections of one DM row and one width whose consecutive centres are at
   most ``time_tol * w`` apart are friends along the chain, so each such run
   becomes one *segment* ``[p, q]`` (first and last centre). The gaps of a
   run are at most any pair tolerance ``T = time_tol * max(w, w')`` it
   meets, so two runs hold a friendly pair exactly when
   ``dist([p, q], [p', q']) <= T`` (and the DM and width rules hold).
2. Every segment looks up the segments that *start* in a window around its
   ``[p, q]`` (``_windows``), in the DM bands of ``dm_tol + 1`` rows
   next to its own: one sorted array and three binary searches per segment.
3. The exact rule tests these candidates a few million at a time, and
   ``scipy.sparse.csgraph.connected_components`` joins the friends. Windows
   whose candidates all lie in the segment's component already are skipped;
   passes that test only the first 8, 64 and 512 candidates of each window
   come first, so that a dense cluster is joined before its long windows
   would be tested in full.

With the defaults, on one CPU core: 1e6 random detections (1000 DM rows,
1e7 samples, the 144 widths of a 4096-sample BoxDIT plan) take 2-2.5 s; the
1.2e5 detections of one bright pulse over 128 DM rows 0.1 s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.sparse import coo_array
from scipy.sparse.csgraph import connected_components

__all__ = ["CLUSTER_DEFAULTS", "Clusters", "cluster"]

#: Default friends-of-friends tolerances of :func:`cluster`.
CLUSTER_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {"dm_tol": 5, "time_tol": 1.0, "width_tol": 3.0}
)
#: Candidate segment pairs tested at once (bounds the memory of dense clusters).
_PAIRS_PER_CHUNK = 1 << 22
#: Candidates per window tested by the first passes of :func:`_link`.
_FIRST_PASSES = (8, 64, 512)

IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class Clusters:
    """Candidates: one entry per cluster, sorted by ``(sample, dm_index, width)``.

    The peak member (highest ``snr``; on ties the first in ``(start,
    dm_index, width)`` order) gives ``dm_index``, ``start``, ``width``,
    ``sample`` and ``snr``.

    Attributes
    ----------
    dm_index, start, width, sample : ndarray of int64
        DM index, first sample, width (samples) and centre
        ``start + width // 2`` of the peak member.
    snr : ndarray of float64
        Its signal-to-noise ratio.
    members : ndarray of int64
        Number of detections in the cluster.
    begin, end : ndarray of int64
        First and last sample covered by any member:
        ``min(start)`` and ``max(start + width - 1)``.
    labels : ndarray of int64
        For every input detection, in input order, the index of its candidate.
    """

    dm_index: IntArray
    start: IntArray
    width: IntArray
    sample: IntArray
    snr: NDArray[np.float64]
    members: IntArray
    begin: IntArray
    end: IntArray
    labels: IntArray

    def __len__(self) -> int:
        return len(self.snr)


def cluster(
    dm_index: ArrayLike,
    start: ArrayLike,
    width: ArrayLike,
    snr: ArrayLike,
    *,
    dm_tol: float = CLUSTER_DEFAULTS["dm_tol"],
    time_tol: float = CLUSTER_DEFAULTS["time_tol"],
    width_tol: float = CLUSTER_DEFAULTS["width_tol"],
) -> Clusters:
    """Group detections into candidates by friends-of-friends (see the module docstring).

    Parameters
    ----------
    dm_index, start, width, snr
        One entry per detection: DM trial index, first sample of the boxcar,
        its width in samples (``>= 1``) and its signal-to-noise ratio.
    dm_tol
        Largest DM-index difference of friends.
    time_tol
        Largest centre difference of friends, in units of the wider width.
    width_tol
        Largest ``|log2|`` of the width ratio of friends.

    Returns
    -------
    Clusters
        The candidates and the candidate of every detection.

    Raises
    ------
    ValueError
        If the inputs are not 1-D arrays of one length, a width is below 1,
        an snr is NaN or a tolerance is negative or not finite.
    """
    dm, s, w = (np.asarray(a, dtype=np.int64) for a in (dm_index, start, width))
    snr = np.asarray(snr, dtype=np.float64)
    if any(a.ndim != 1 for a in (dm, s, w, snr)) or len({dm.size, s.size, w.size, snr.size}) != 1:
        raise ValueError("dm_index, start, width and snr must be 1-D arrays of equal length")
    if w.size and w.min() < 1:
        raise ValueError(f"widths must be >= 1, got {w.min()}")
    if np.isnan(snr).any():
        raise ValueError("snr must not be NaN")
    if not (dm_tol >= 0 and 0 <= time_tol < math.inf and 0 <= width_tol < math.inf):
        raise ValueError(
            f"tolerances must be finite and >= 0, got dm_tol={dm_tol}, "
            f"time_tol={time_tol}, width_tol={width_tol}"
        )

    if not snr.size:
        none = np.zeros(0, dtype=np.int64)
        return Clusters(none, none, none, none, snr, none, none, none, none)
    segment, seg_dm, seg_w, seg_p, seg_q = _segments(dm, w, s + w // 2, time_tol)
    labels = _link(seg_dm, seg_w, seg_p, seg_q, int(dm_tol), time_tol, 2.0**width_tol)
    _, comp = np.unique(labels[segment], return_inverse=True)

    by_comp = np.argsort(comp, kind="stable")
    first = np.flatnonzero(np.r_[True, np.diff(comp[by_comp]) != 0])
    best = np.maximum.reduceat(snr[by_comp], first)
    begin = np.minimum.reduceat(s[by_comp], first)
    end = np.maximum.reduceat((s + w - 1)[by_comp], first)
    # the peak: the highest snr, ties to the first in (start, dm_index, width) order
    tied = np.flatnonzero(snr == best[comp])
    tied = tied[_lexsort(w[tied], dm[tied], s[tied])]
    tied = tied[np.argsort(comp[tied], kind="stable")]
    peak = tied[np.r_[True, np.diff(comp[tied]) != 0]]
    sample = s[peak] + w[peak] // 2
    out = _lexsort(w[peak], dm[peak], sample)
    rank = np.empty_like(out)
    rank[out] = np.arange(out.size)
    return Clusters(
        dm_index=dm[peak][out],
        start=s[peak][out],
        width=w[peak][out],
        sample=sample[out],
        snr=best[out],
        members=np.diff(np.r_[first, comp.size])[out],
        begin=begin[out],
        end=end[out],
        labels=rank[comp].astype(np.int64),
    )


def _segments(
    dm: IntArray, w: IntArray, centre: IntArray, time_tol: float
) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray]:
    """Runs of one DM row and width with centre gaps ``<= time_tol * w``.

    Returns the segment of every detection and each segment's DM index,
    width, first centre ``p`` and last centre ``q``.
    """
    o = _lexsort(centre, w, dm)
    dm, w, c = dm[o], w[o], centre[o]
    new = np.ones(c.size, dtype=bool)
    new[1:] = (dm[1:] != dm[:-1]) | (w[1:] != w[:-1]) | (c[1:] - c[:-1] > time_tol * w[1:])
    segment = np.empty(c.size, dtype=np.int64)
    segment[o] = np.cumsum(new) - 1
    first = np.flatnonzero(new)
    last = np.r_[first[1:] - 1, c.size - 1].astype(np.int64)
    return segment, dm[first], w[first], c[first], c[last]


def _link(
    dm: IntArray,
    w: IntArray,
    p: IntArray,
    q: IntArray,
    dm_tol: int,
    time_tol: float,
    max_ratio: float,
) -> IntArray:
    """Connected component of every segment (labels in ``[0, n)``, not contiguous)."""
    query, lo, hi, by_key = _windows(dm, w, p, q, dm_tol, time_tol, max_ratio)

    def join(labels: IntArray, count: IntArray) -> IntArray:
        """Join the friends among the first ``count[k]`` candidates of every window ``k``."""
        todo = np.flatnonzero(count)
        while True:
            # drop the windows whose candidates all lie in the querying segment's component
            in_key = labels[by_key]
            run = np.cumsum(np.r_[0, in_key[1:] != in_key[:-1]])
            first, last = lo[todo], lo[todo] + count[todo] - 1
            todo = todo[(run[first] != run[last]) | (in_key[first] != labels[query[todo]])]
            if not todo.size:
                return labels
            n = count[todo]
            take = max(1, int(np.searchsorted(np.cumsum(n), _PAIRS_PER_CHUNK, "right")))
            window, todo, n = np.repeat(todo[:take], n[:take]), todo[take:], n[:take]
            i = query[window]
            j = by_key[lo[window] + np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)]
            wmax, wmin = np.maximum(w[i], w[j]), np.minimum(w[i], w[j])
            gap = np.maximum(np.maximum(p[j] - q[i], p[i] - q[j]), 0)
            friends = (
                (np.abs(dm[i] - dm[j]) <= dm_tol)
                & (wmax <= wmin * max_ratio)
                & (gap <= time_tol * wmax)
            )
            a, b = labels[i[friends]], labels[j[friends]]
            new = a != b
            if new.any():
                graph = coo_array(
                    (np.ones(int(new.sum()), dtype=bool), (a[new], b[new])),
                    shape=(dm.size, dm.size),
                )
                labels = connected_components(graph, directed=False)[1][labels]

    labels = np.arange(dm.size)
    for k in _FIRST_PASSES:
        labels = join(labels, np.minimum(hi - lo, k))
    return join(labels, hi - lo)


def _windows(
    dm: IntArray,
    w: IntArray,
    p: IntArray,
    q: IntArray,
    dm_tol: int,
    time_tol: float,
    max_ratio: float,
) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """Candidate partners of every segment: those starting in its windows.

    Segment ``i`` looks for the segments ``j`` that start in
    ``[p_i - time_tol * w_i, q_i + reach_i]``, where ``reach_i = time_tol *
    min(w_i * max_ratio, max(w))`` (the largest tolerance of a compatible
    partner) if ``q_i > p_i`` and ``time_tol * w_i`` otherwise, and that lie
    in the DM band of ``i`` (``dm // (dm_tol + 1)``) or a neighbouring one.
    With ``T`` the pair tolerance, a friendly pair either has the narrower
    segment start within ``T`` of the wider one's ``[p, q]`` (found by the
    wider segment), or has the wider one start in ``(p + T, q + T]`` of the
    narrower, which then has ``q > p`` (found by the narrower).

    Returns
    -------
    query, lo, hi, by_key
        Three windows per segment (one per DM band): the candidates of window
        ``k`` of segment ``query[k]`` are ``by_key[lo[k]:hi[k]]``.
    """
    own = time_tol * w
    reach = np.where(q > p, time_tol * np.minimum(w * max_ratio, w.max()), own)
    lo_c, hi_c = np.ceil(p - own).astype(np.int64), np.floor(q + reach).astype(np.int64)
    band = dm // (dm_tol + 1)
    # key = band * span + shifted start: one sorted axis for (band, start)
    base = int(lo_c.min())
    span = int(max(hi_c.max(), q.max())) - base + 1
    by_key = _lexsort(p, band)
    keys = band[by_key] * span + (p[by_key] - base)
    # queries in key order: nearly sorted needles make the binary searches cache-friendly
    band, lo_c, hi_c = band[by_key], lo_c[by_key] - base, hi_c[by_key] - base
    lo = np.concatenate(
        [np.searchsorted(keys, (band + o) * span + lo_c, "left") for o in (-1, 0, 1)]
    )
    hi = np.concatenate(
        [np.searchsorted(keys, (band + o) * span + hi_c, "right") for o in (-1, 0, 1)]
    )
    return np.tile(by_key, 3), lo, hi, by_key


def _lexsort(*keys: IntArray) -> IntArray:
    """``np.lexsort(keys)`` (last key primary) of non-empty integer keys.

    The keys are packed into one int64 key for a single stable argsort (several
    times faster) when the product of their ranges allows it.
    """
    packed, total = np.zeros(keys[0].size, dtype=np.int64), 1
    for key in reversed(keys):
        low, size = key.min(), int(key.max() - key.min()) + 1
        total *= size
        if total >= 2**62:
            return np.lexsort(keys)
        packed = packed * size + (key - low)
    return np.argsort(packed, kind="stable")
