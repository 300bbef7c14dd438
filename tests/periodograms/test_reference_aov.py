"""The NumPy phase-binned AOV reference (tests/reference/aov.py): by hand, P4J, the F law,
PDM, invariances and injected signals."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from peers import load_p4j
from reference import aov as ref
from reference import light_curves as lc
from reference import pdm, phase_bins

P4J = load_p4j()
needs_p4j = pytest.mark.skipif(P4J is None, reason="P4J is not installed")

# six points at f = 1, none on a bin edge; 2 bins: {1, 2, 3}, {5, 6, 10};
# 4 bins: {1, 2, 3}, {}, {5, 6}, {10}. Mean 4.5, total sum of squares 53.5.
HAND_T = np.array([0.05, 0.15, 0.2, 0.55, 0.7, 0.9]) + 3.0
HAND_Y = np.array([1.0, 2.0, 3.0, 5.0, 6.0, 10.0])


def noisy_sawtooth(seed: int, n: int = 150, float32: bool = False):
    t, y, dy = lc.sawtooth(seed, 0.5772, n=n, baseline=800.0, noise=0.3)
    dy = dy * np.random.default_rng(seed).uniform(0.5, 2.0, n)
    if float32:
        return tuple(a.astype(np.float32).astype(np.float64) for a in (t, y, dy))
    return t, y, dy


def test_six_points_by_hand():
    def theta(nbins, convention="textbook", dy=None, extent=1):
        return ref.aov(HAND_T, HAND_Y, dy, 1.0, nbins, convention, extent)[0]

    # 2 bins: means 2 and 7; s1 = 3 (2.5^2) + 3 (2.5^2) = 37.5, s2 = 2 + 14
    np.testing.assert_allclose(theta(2), 4 / 1 * 37.5 / 16, rtol=1e-14)
    np.testing.assert_allclose(theta(2, "p4j"), 4 * 37.5 / 16, rtol=1e-14)
    # 4 bins, 3 occupied: means 2, 5.5, 10; s1 = 18.75 + 2 + 30.25, s2 = 2 + 0.5
    np.testing.assert_allclose(theta(4), (6 - 3) / (3 - 1) * 51 / 2.5, rtol=1e-14)
    # periodfind: the nominal 4 bins in the prefactor
    np.testing.assert_allclose(theta(4, "periodfind"), (6 - 4) / (4 - 1) * 51 / 2.5,
                               rtol=1e-14)
    # P4J: bins of 2+ points (s1 = 18.75 + 2) and the integer prefactor (6 - 4) // 3 = 0
    assert theta(4, "p4j") == 0.0
    # periodfind, extent 2: bin k also holds bin k - 1: {1, 2, 3, 10}, {1, 2, 3}, {5, 6},
    # {10, 5, 6}; means 4, 2, 5.5, 7 about the mean 4.5
    between = 4 * 0.5**2 + 3 * 2.5**2 + 2 * 1.0**2 + 3 * 2.5**2
    within = 50.0 + 2.0 + 0.5 + 14.0
    np.testing.assert_allclose(theta(4, "periodfind", extent=2),
                               (6 - 4) / (4 - 1) * between / within, rtol=1e-14)


def test_weights_by_hand():
    """2 bins, v = (1, 1, 2) in each: weighted means 9/4 and 31/4 about the weighted mean 5;
    s1 = 4 (11/4)^2 + 4 (11/4)^2 = 60.5, s2 = 2.75 + 20.75 (sum v (y - 5)^2 = 84 in all)."""
    dy = np.array([1.0, 1.0, 2**-0.5] * 2)
    np.testing.assert_allclose(ref.aov(HAND_T, HAND_Y, dy, 1.0, 2)[0], 4 * 60.5 / 23.5,
                               rtol=1e-14)
    # P4J: the same weighted means, unweighted sums s1 = 3 (2.75^2) + 3 (2.75^2) and
    # s2 = (1.25^2 + 0.25^2 + 0.75^2) + (2.75^2 + 1.75^2 + 2.25^2)
    between = 3 * (9 / 4 - 5) ** 2 + 3 * (31 / 4 - 5) ** 2
    within = (1.25**2 + 0.25**2 + 0.75**2) + (2.75**2 + 1.75**2 + 2.25**2)
    np.testing.assert_allclose(ref.aov(HAND_T, HAND_Y, dy, 1.0, 2, "p4j")[0],
                               4 * between / within, rtol=1e-14)


def test_edge_cases_are_nan_inf_or_errors():
    assert np.isnan(ref.aov(HAND_T, np.full(6, 2.0), None, [0.3, 1.0])).all()
    assert np.isnan(ref.aov(HAND_T, HAND_Y, None, 1.0, nbins=10)[0])  # one point per bin
    step = np.where(HAND_T % 1.0 < 0.5, 1.0, 0.0)
    assert ref.aov(HAND_T, step, None, 1.0, 2)[0] == np.inf
    with pytest.raises(ValueError, match="nbins"):
        ref.aov(HAND_T, HAND_Y, None, 1.0, nbins=1)
    with pytest.raises(ValueError, match="extent"):
        ref.aov(HAND_T, HAND_Y, None, 1.0, nbins=4, extent=2)
    with pytest.raises(ValueError, match="convention"):
        ref.aov(HAND_T, HAND_Y, None, 1.0, convention="pdm")


def test_unweighted_aov_is_a_function_of_pdm_theta():
    """One cover: Theta_AOV = (N - r)/(r - 1) (1/x - 1) with x = (N - r) Theta_PDM /
    (N - 1) (spec §5.1), r the occupied bins (all 8, or fewer at some low frequencies)."""
    t, y, _ = noisy_sawtooth(1)
    frequency = lc.trial_frequencies(fmax=2.0)[::5]
    index = phase_bins.phase_bin_index(phase_bins.phases(t, frequency), 8)
    occupied = np.sum(phase_bins.bin_counts(index, 8) > 0, axis=1)
    assert 0 < np.count_nonzero(occupied < 8) < occupied.size
    theta = ref.aov(t, y, None, frequency, 8)
    np.testing.assert_allclose(ref.pdm_theta_to_aov(pdm.pdm(t, y, None, frequency, 8),
                                                    t.size, occupied), theta, rtol=1e-9)


@pytest.mark.parametrize("with_errors", [False, True])
def test_f_law_on_gaussian_noise(with_errors):
    """theta ~ F(r - 1, N - r) under white Gaussian noise, with dy (noise drawn with it)
    as without: 400 realisations at one frequency."""
    rng = np.random.default_rng(4)
    n, nbins = 120, 8
    t = np.sort(rng.uniform(0, 50, n))
    dy = rng.uniform(0.5, 3.0, n) if with_errors else np.ones(n)
    thetas = np.array([ref.aov(t, dy * rng.normal(size=n) + 15.0,
                               dy if with_errors else None, 0.731, nbins)[0]
                       for _ in range(400)])
    assert stats.kstest(thetas, stats.f(nbins - 1, n - nbins).cdf).pvalue > 1e-3


@pytest.mark.parametrize("scale", [-3.0, 7.0])
@pytest.mark.parametrize("convention", ["textbook", "p4j", "periodfind"])
def test_invariant_to_units_and_offsets(scale, convention):
    t, y, dy = noisy_sawtooth(2)
    frequency = lc.trial_frequencies(fmax=2.5)[::7]
    base = ref.aov(t, y, dy, frequency, 8, convention)
    moved = ref.aov(t, scale * y + 1e4, abs(scale) * dy, frequency, 8, convention)
    np.testing.assert_allclose(moved, base, rtol=1e-9)


@pytest.mark.parametrize(("generator", "period", "aliases"), [
    (lc.eclipsing_binary, 2.7183, (1.0, 0.5)),  # equal-looking eclipses: P / 2 as well
    (lc.transit, 3.1416, (1.0,)),
    (lc.sawtooth, 0.5772, (1.0,)),
])
def test_injected_signals_recovered(generator, period, aliases):
    frequency = lc.trial_frequencies()
    tolerance = period**2 / (2 * 400.0)  # half a resolution element of the 400-d baseline
    for seed in range(4):
        t, y, dy = generator(seed, period)
        top = lc.best_periods(frequency, ref.aov(t, y, dy, frequency, 10))
        assert any(np.min(np.abs(top - k * period)) < k * k * tolerance for k in aliases)


@needs_p4j
@pytest.mark.parametrize("nbins", [8, 10])
@pytest.mark.parametrize("use_errorbars", [0, 1])
def test_equals_p4j_aov(nbins, use_errorbars):
    """P4J's AOV, float32-exact inputs and P4J's float32 folding. P4J sums in float32:
    the magnitudes are centred (exactly) so that its error stays near 1e-6."""
    from P4J.algorithms.analysis_of_variance import AOV

    t, y, dy = noisy_sawtooth(5, n=125, float32=True)
    y = y - 15.0
    frequency = np.linspace(0.05, 3.0, 300).astype(np.float32).astype(np.float64)
    peer = AOV(*(a.astype(np.float32) for a in (t, y, dy)), nbins, use_errorbars)
    theirs = np.array([peer.eval_frequency(f) for f in frequency])
    ours = ref.aov(t, y, dy if use_errorbars else None, frequency, nbins, "p4j",
                   phase_dtype=np.float32)
    np.testing.assert_allclose(ours, theirs, rtol=5e-6)
