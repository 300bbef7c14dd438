"""The NumPy conditional entropy reference (tests/reference/conditional_entropy.py): by
hand, a histogram2d restatement, the peers' variants, invariances and injected signals."""

from __future__ import annotations

import numpy as np
import pytest

from reference import conditional_entropy as ref
from reference import light_curves as lc
from reference import phase_bins

# six points at f = 1, none on a phase-bin edge; y_n = (y - 1) / 9 = 0, 1/9, 2/9, 4/9, 5/9, 1
HAND_T = np.array([0.05, 0.15, 0.2, 0.55, 0.7, 0.9]) + 3.0
HAND_Y = np.array([1.0, 2.0, 3.0, 5.0, 6.0, 10.0])


def test_six_points_by_hand():
    """2 phase x 2 magnitude bins: phase bin 0 holds magnitude bins (0, 0, 0), phase bin 1
    holds (0, 1, 1) (the top point clamped into the last bin): p = 3/6, 1/6, 2/6."""
    graham = (1 / 6) * np.log(0.5 / (1 / 6)) + (2 / 6) * np.log(0.5 / (2 / 6))
    np.testing.assert_allclose(ref.conditional_entropy(HAND_T, HAND_Y, 1.0, 2, 2), graham,
                               rtol=1e-14)
    # cuvarbase: the bin width 1/2 inside the logarithm
    np.testing.assert_allclose(ref.cuvarbase_entropy(HAND_T, HAND_Y, 1.0, 2, 2),
                               graham - np.log(2), rtol=1e-14)
    # cuvarbase, mag_overlap 1: magnitude bin 1 also counts in bin 0, so rows (3, 0) and
    # (1 + 2, 2); bin 0 spans the whole range (width 1), bin 1 the top half
    overlap = (3 * np.log(5 / 3) + 2 * np.log(0.5 * 5 / 2)) / 8
    np.testing.assert_allclose(ref.cuvarbase_entropy(HAND_T, HAND_Y, 1.0, 2, 2, mag_overlap=1),
                               overlap, rtol=1e-14)
    # periodfind: 0.999 y_n + 5e-4 keeps the same bins here; magnitude extent 2 (cyclic)
    # puts every point in both magnitude bins: four cells of 1/4, H = ln 2
    np.testing.assert_allclose(ref.periodfind_entropy(HAND_T, HAND_Y, 1.0, 2, 2), graham,
                               rtol=1e-14)
    np.testing.assert_allclose(ref.periodfind_entropy(HAND_T, HAND_Y, 1.0, 2, 2,
                                                      mag_extent=2), np.log(2), rtol=1e-14)


def histogram2d_entropy(t, y, frequency, phase_bins, mag_bins):
    """Spec §6.4's independent restatement: numpy.histogram2d over the unit square."""
    y_n = (y - y.min()) / (y.max() - y.min())
    values = []
    for f in frequency:
        counts, _, _ = np.histogram2d((t * f) % 1.0, y_n, bins=(phase_bins, mag_bins),
                                      range=((0, 1), (0, 1)))
        p = counts / counts.sum()
        p_phase = np.broadcast_to(p.sum(axis=1, keepdims=True), p.shape)
        filled = p > 0
        values.append(np.sum(p[filled] * np.log(p_phase[filled] / p[filled])))
    return np.array(values)


@pytest.mark.parametrize(("phase_bins", "mag_bins"), [(10, 5), (16, 10), (7, 3)])
def test_equals_a_histogram2d_restatement(phase_bins, mag_bins):
    t, y, _ = lc.sawtooth(1, 0.5772, noise=0.3)
    frequency = lc.trial_frequencies(fmax=2.0)[::9]
    np.testing.assert_allclose(ref.conditional_entropy(t, y, frequency, phase_bins, mag_bins),
                               histogram2d_entropy(t, y, frequency, phase_bins, mag_bins),
                               rtol=1e-12)


def test_variants_without_overlap_differ_by_constants():
    """cuvarbase without overlap is H_c - ln(mag_bins); periodfind's 0.999 y_n + 5e-4 moves
    a point to another magnitude bin only within 5e-4 of an edge (none is, in this curve)."""
    t, y, _ = lc.eclipsing_binary(2, 2.7183, n=80)
    frequency = lc.trial_frequencies(fmax=2.0)[::9]
    graham = ref.conditional_entropy(t, y, frequency, 10, 5)
    np.testing.assert_allclose(ref.cuvarbase_entropy(t, y, frequency, 10, 5),
                               graham - np.log(5), rtol=1e-12)
    y_n = (y - y.min()) / np.ptp(y)
    interior = (y_n > 0) & (y_n < 1)  # the extremes stay in the first and last bins
    assert not np.any(interior & (np.abs(y_n * 5 - np.round(y_n * 5)) < 3e-3))
    np.testing.assert_allclose(ref.periodfind_entropy(t, y, frequency, 10, 5), graham,
                               rtol=1e-12)
    assert np.all((graham >= 0) & (graham <= np.log(5)))


@pytest.mark.parametrize("phase_overlap", [0, 1, 2])
def test_cuvarbase_phase_overlap_counts_each_point_in_more_bins(phase_overlap):
    """A point of phase bin n also counts in bins n - 1 .. n - o (cyclic): row k of the
    counts pools rows k .. k + o of the plain counts, (o + 1) N in all."""
    t, y, _ = lc.transit(3, 3.1416)
    frequency = np.array([1 / 3.1416, 0.77])
    phase_index = phase_bins.phase_bin_index(phase_bins.phases(t, frequency), 8)
    mag_index = ref.magnitude_bin(ref.rescaled(y), 4)
    base = ref.cell_counts(phase_index, mag_index, 8, 4)
    pooled = sum(np.roll(base, -shift, axis=1) for shift in range(phase_overlap + 1))
    expected = ref.entropy_from_counts(pooled, np.full(4, 0.25))
    np.testing.assert_allclose(ref.cuvarbase_entropy(t, y, frequency, 8, 4, phase_overlap),
                               expected, rtol=1e-12)
    assert np.all(pooled.sum(axis=(1, 2)) == (phase_overlap + 1) * t.size)


@pytest.mark.parametrize("scale", [-3.0, 7.0])
def test_invariant_to_units_and_offsets(scale):
    """a > 0 keeps every bin; a < 0 mirrors the magnitude bins (same H_c off the edges)."""
    t, y, _ = lc.sawtooth(4, 0.5772, noise=0.3)
    frequency = lc.trial_frequencies(fmax=2.5)[::7]
    for entropy in (ref.conditional_entropy, ref.cuvarbase_entropy):
        base = entropy(t, y, frequency)
        np.testing.assert_allclose(entropy(t, scale * y + 1e4, frequency), base, rtol=1e-12)


def test_constant_light_curve_and_bad_arguments():
    for entropy in (ref.conditional_entropy, ref.cuvarbase_entropy, ref.periodfind_entropy):
        assert np.isnan(entropy(HAND_T, np.full(6, 3.0), [0.5, 1.0])).all()
        with pytest.raises(ValueError, match="mag_bins"):
            entropy(HAND_T, HAND_Y, 1.0, 10, 0)
        with pytest.raises(ValueError, match="frequency"):
            entropy(HAND_T, HAND_Y, -1.0)


@pytest.mark.parametrize(("generator", "period", "aliases"), [
    (lc.eclipsing_binary, 2.7183, (1.0, 0.5)),  # the P / 2 fold is nearly as tight
    (lc.transit, 3.1416, (1.0,)),
    (lc.sawtooth, 0.5772, (1.0,)),
])
def test_injected_signals_recovered(generator, period, aliases):
    frequency = lc.trial_frequencies()
    tolerance = period**2 / (2 * 400.0)  # half a resolution element of the 400-d baseline
    for seed in range(4):
        t, y, _ = generator(seed, period)
        entropy = ref.conditional_entropy(t, y, frequency, 10, 5)
        top = lc.best_periods(frequency, entropy, minimum=True)
        assert any(np.min(np.abs(top - k * period)) < k * k * tolerance for k in aliases)
