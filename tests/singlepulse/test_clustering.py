"""Friends-of-friends clustering of single-pulse detections (clperiod/clustering.py).

The brute-force clustering below tests every pair of detections with the rule
of the module docstring and walks the components in plain Python; the
library must give the same candidates field by field.
"""

from __future__ import annotations

import numpy as np
import pytest
from reference import singlepulse as ref

from clperiod.singlepulse import clustering
from clperiod.singlepulse.clustering import CLUSTER_DEFAULTS, cluster

FIELDS = ("dm_index", "start", "width", "sample", "snr", "members", "begin", "end")


# {{{ brute force


def brute_force(dm, start, width, snr, dm_tol, time_tol, width_tol):
    """Candidates as a dict of arrays, and the candidate of every detection, by O(N^2) pairs."""
    centre = start + width // 2
    wmax, wmin = np.maximum.outer(width, width), np.minimum.outer(width, width)
    friends = ((np.abs(np.subtract.outer(dm, dm)) <= dm_tol)
               & (np.abs(np.subtract.outer(centre, centre)) <= time_tol * wmax)
               & (wmax <= wmin * 2.0**width_tol))
    component = np.full(dm.size, -1)
    groups = []
    for seed in range(dm.size):
        if component[seed] >= 0:
            continue
        component[seed], stack, members = len(groups), [seed], []
        while stack:
            i = stack.pop()
            members.append(i)
            for j in np.flatnonzero(friends[i] & (component < 0)):
                component[j] = len(groups)
                stack.append(j)
        groups.append(members)
    rows = []
    for members in groups:
        peak = min(members, key=lambda i: (-snr[i], start[i], dm[i], width[i]))
        rows.append({"dm_index": dm[peak], "start": start[peak], "width": width[peak],
                     "sample": centre[peak], "snr": snr[peak], "members": len(members),
                     "begin": min(start[i] for i in members),
                     "end": max(start[i] + width[i] - 1 for i in members)})
    order = sorted(range(len(rows)), key=lambda k: (rows[k]["sample"], rows[k]["dm_index"],
                                                    rows[k]["width"]))
    rank = np.argsort(order)
    return {f: np.array([rows[k][f] for k in order]) for f in FIELDS}, rank[component]


def random_detections(rng, n):
    """Random detections in a small plane; a third continue a run of another (same row, width)."""
    dm = rng.integers(0, 25, n)
    start = rng.integers(0, 3000, n)
    width = rng.choice([1, 2, 3, 4, 6, 8, 17, 24, 32, 40, 64, 96, 128, 256, 512], n)
    k = n - n // 3
    src = rng.integers(0, k, n - k)
    dm[k:], width[k:] = dm[src], width[src]
    start[k:] = np.maximum(start[src] + rng.integers(-width[src], width[src] + 1), 0)
    snr = rng.integers(12, 40, n) / 2  # many ties
    return dm, start, width, snr


# }}}


@pytest.mark.parametrize("tols", [
    dict(CLUSTER_DEFAULTS),
    {"dm_tol": 0, "time_tol": 0.0, "width_tol": 0.0},
    {"dm_tol": 2, "time_tol": 0.5, "width_tol": 1.0},
    {"dm_tol": 10, "time_tol": 3.0, "width_tol": 2.5},
])
@pytest.mark.parametrize("small_chunks", [False, True])
def test_against_brute_force(tols, small_chunks, monkeypatch):
    if small_chunks:  # many chunks and passes, each skipping settled windows
        monkeypatch.setattr(clustering, "_PAIRS_PER_CHUNK", 7)
        monkeypatch.setattr(clustering, "_FIRST_PASSES", (1, 3))
    rng = np.random.default_rng(len(str(tols)) + small_chunks)
    for n in (1, 2, 50, 600):
        dm, start, width, snr = random_detections(rng, n)
        got = cluster(dm, start, width, snr, **tols)
        want, labels = brute_force(dm, start, width, snr, **tols)
        for field in FIELDS:
            np.testing.assert_array_equal(getattr(got, field), want[field], err_msg=field)
        np.testing.assert_array_equal(got.labels, labels)
        assert len(got) == len(want["snr"])


def test_peak_begin_end_fields():
    # dm, start, width, snr: one cluster; the peak is the second detection
    c = cluster([3, 4, 5], [100, 98, 104], [8, 16, 4], [7.0, 9.0, 6.5])
    assert len(c) == 1
    assert (c.dm_index[0], c.start[0], c.width[0], c.sample[0], c.snr[0]) == (4, 98, 16, 106, 9.0)
    assert (c.members[0], c.begin[0], c.end[0]) == (3, 98, 113)
    np.testing.assert_array_equal(c.labels, [0, 0, 0])
    # equal peaks: the first in (start, dm_index, width) order wins
    c = cluster([7, 5, 6], [10, 10, 9], [4, 4, 8], [8.0, 8.0, 8.0])
    assert (c.dm_index[0], c.start[0], c.width[0]) == (6, 9, 8)
    c = cluster([7, 5], [10, 10], [4, 4], [8.0, 8.0])
    assert (c.dm_index[0], c.start[0]) == (5, 10)


def test_separated_pulses_give_two_candidates():
    # a pulse smeared over DM rows 10..14 and widths 4..16, and copies moved
    # beyond each tolerance: in time, in DM and in width
    dm, start, width = np.meshgrid(np.arange(10, 15), np.arange(1000, 1012), [4, 8, 16])
    dm, start, width = dm.ravel(), start.ravel(), width.ravel()
    snr = 10 - np.abs(dm - 12) - np.abs(start - 1006) / 4
    one = cluster(dm, start, width, snr)
    assert len(one) == 1 and one.members[0] == dm.size
    # centres 43 > 16 samples apart, DM indices 7 > 5 apart, widths 16 > 2**3 times wider
    for moved in ({"start": start + 60}, {"dm": dm + 11}, {"width": width * 64}):
        both = {"dm": dm, "start": start, "width": width} | moved
        two = cluster(np.r_[dm, both["dm"]], np.r_[start, both["start"]],
                      np.r_[width, both["width"]], np.r_[snr, snr])
        assert len(two) == 2, moved
        np.testing.assert_array_equal(two.members, [dm.size, dm.size])
        np.testing.assert_array_equal(two.labels[: dm.size], two.labels[0])
        assert two.labels[dm.size] != two.labels[0]


def test_smeared_pulse_collapses_to_one():
    # a pulse smeared over DM rows and widths (the reference search finds it
    # at many (row, width, start)); threshold 7 keeps the noise out
    rng = np.random.default_rng(2)
    x = rng.normal(size=(24, 8192))
    for row in range(24):
        w = 40 + 12 * abs(row - 12)
        x[row, 4000 - w // 2 : 4000 - w // 2 + w] += 40 / (1 + abs(row - 12) / 3) / np.sqrt(w)
    det = ref.search(x, np.arange(24.0), 1e-3, max_width=256, threshold=7.0)
    assert len(np.unique(det["dm_index"])) > 10 and len(np.unique(det["width"])) > 10
    c = cluster(det["dm_index"], det["start"], det["width"], det["snr"])
    assert len(c) == 1 and c.members[0] == len(det)
    peak = det[np.argmax(det["snr"])]
    assert (c.dm_index[0], c.start[0], c.width[0], c.snr[0]) == (
        peak["dm_index"], peak["start"], peak["width"], peak["snr"])
    assert c.begin[0] == det["start"].min()
    assert c.end[0] == (det["start"] + det["width"] - 1).max()


def test_empty_and_bad_input():
    c = cluster([], [], [], [])
    assert len(c) == 0 and all(getattr(c, f).size == 0 for f in FIELDS + ("labels",))
    with pytest.raises(ValueError, match="equal length"):
        cluster([1], [1, 2], [1], [1.0])
    with pytest.raises(ValueError, match="widths"):
        cluster([1], [1], [0], [1.0])
    with pytest.raises(ValueError, match="NaN"):
        cluster([1], [1], [1], [np.nan])
    with pytest.raises(ValueError, match="tolerances"):
        cluster([1], [1], [1], [1.0], time_tol=-1.0)
