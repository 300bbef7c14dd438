"""The NumPy PDM reference (tests/reference/pdm.py): by hand, P4J, PyAstronomy, the Beta
law, invariances and injected signals."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from peers import load_p4j, load_pyastronomy_pdm
from reference import light_curves as lc
from reference import pdm as ref

P4J = load_p4j()
PYPDM = load_pyastronomy_pdm()
needs_p4j = pytest.mark.skipif(P4J is None, reason="P4J is not installed")
needs_pyastronomy = pytest.mark.skipif(PYPDM is None, reason="PyAstronomy is not installed")

# six points at f = 1, none on a bin edge of 2 or 4 bins; 4 bins: {3 points}, {}, {2}, {1}
HAND_T = np.array([0.05, 0.15, 0.2, 0.55, 0.7, 0.9]) + 3.0
HAND_Y = np.array([1.0, 2.0, 3.0, 5.0, 6.0, 10.0])
# mean 4.5, sum of squares 53.5, sigma^2 = 53.5 / 5
HAND_VARIANCE = 10.7


def noisy_sawtooth(seed: int, n: int = 150, float32: bool = False):
    t, y, dy = lc.sawtooth(seed, 0.5772, n=n, baseline=800.0, noise=0.3)
    dy = dy * np.random.default_rng(seed).uniform(0.5, 2.0, n)
    if float32:
        return tuple(a.astype(np.float32).astype(np.float64) for a in (t, y, dy))
    return t, y, dy


def test_six_points_by_hand():
    """2 bins: {1, 2, 3} and {5, 6, 10}, within sums of squares 2 and 14, 4 degrees of
    freedom. 4 bins: {1, 2, 3}, {}, {5, 6}, {10}: sums 2 + 0.5, degrees of freedom 2 + 1
    (the empty bin and the single point count for nothing). 2 bins x 2 covers: the shifted
    cover holds {5, 6} (sum 0.5) and {1, 2, 3, 10} (sum 50): 66.5 over 8."""
    def theta(nbins, ncovers=1, convention="stellingwerf"):
        return ref.pdm(HAND_T, HAND_Y, None, 1.0, nbins, ncovers, convention)[0]

    np.testing.assert_allclose(theta(2), (16 / 4) / HAND_VARIANCE, rtol=1e-14)
    np.testing.assert_allclose(theta(4), (2.5 / 3) / HAND_VARIANCE, rtol=1e-14)
    np.testing.assert_allclose(theta(2, 2), (66.5 / 8) / HAND_VARIANCE, rtol=1e-14)
    # P4J: only bins of 3+ points; 4 bins leave {1, 2, 3} alone
    np.testing.assert_allclose(theta(2, convention="p4j"), (16 / 4) / HAND_VARIANCE,
                               rtol=1e-14)
    np.testing.assert_allclose(theta(4, convention="p4j"), (2 / 2) / HAND_VARIANCE, rtol=1e-14)
    # PyAstronomy: M counts every bin (5 - 4 = 1 with 4 bins); sigma^2 of the doubled data
    doubled = 2 * 53.5 / 11
    np.testing.assert_allclose(theta(2, convention="pyastronomy"), (16 / 4) / doubled,
                               rtol=1e-14)
    np.testing.assert_allclose(theta(4, convention="pyastronomy"), 2.5 / doubled, rtol=1e-14)


def test_weights_by_hand():
    """Two bins of three points, weights v = (1, 1, 2) in each; bin means (1 + 2 + 6)/4 and
    (5 + 6 + 20)/4; each bin has V1 - V2/V1 = 4 - 6/4 = 2.5 degrees of freedom."""
    dy = np.array([1.0, 1.0, 2**-0.5] * 2)
    v = dy**-2.0
    mean0, mean1 = 9 / 4, 31 / 4
    within = (np.sum(v[:3] * (HAND_Y[:3] - mean0) ** 2)
              + np.sum(v[3:] * (HAND_Y[3:] - mean1) ** 2))
    overall = np.sum(v * HAND_Y) / 8
    variance = np.sum(v * (HAND_Y - overall) ** 2) / (8 - 12 / 8)
    np.testing.assert_allclose(ref.pdm(HAND_T, HAND_Y, dy, 1.0, 2)[0],
                               within / 5 / variance, rtol=1e-14)


def test_edge_cases_are_nan_or_errors():
    assert np.isnan(ref.pdm(HAND_T, np.full(6, 2.0), None, [0.3, 1.0])).all()
    # P4J's 3-point rule with 8 bins, which hold at most 2 of the six points
    assert np.isnan(ref.pdm(HAND_T, HAND_Y, None, 1.0, 8, convention="p4j")[0])
    with pytest.raises(ValueError, match="nbins"):
        ref.pdm(HAND_T, HAND_Y, None, 1.0, nbins=1)
    with pytest.raises(ValueError, match="ncovers"):
        ref.pdm(HAND_T, HAND_Y, None, 1.0, ncovers=2, convention="p4j")
    with pytest.raises(ValueError, match="frequency"):
        ref.pdm(HAND_T, HAND_Y, None, [1.0, 0.0])


@pytest.mark.parametrize("ncovers", [1, 3])
def test_covers_equal_the_sample_definition(ncovers):
    """Cover c is the bin set shifted by c / (nbins ncovers): built here from explicit bin
    edges (a direct reading of Stellingwerf's samples)."""
    t, y, _ = noisy_sawtooth(1)
    frequency = np.array([0.37, 1 / 0.5772, 2.9])
    nbins = 6
    expected = []
    for f in frequency:
        phase = (f * t) % 1.0
        within, dof = 0.0, 0.0
        for cover in range(ncovers):
            shifted = (phase - cover / (nbins * ncovers)) % 1.0
            for b in range(nbins):
                inside = (shifted >= b / nbins) & (shifted < (b + 1) / nbins)
                if inside.sum() > 1:
                    within += np.sum((y[inside] - y[inside].mean()) ** 2)
                    dof += inside.sum() - 1
        expected.append(within / dof / np.var(y, ddof=1))
    np.testing.assert_allclose(ref.pdm(t, y, None, frequency, nbins, ncovers), expected,
                               rtol=1e-12)


@pytest.mark.parametrize("scale", [-3.0, 7.0])
@pytest.mark.parametrize("ncovers", [1, 3])
def test_invariant_to_units_and_offsets(scale, ncovers):
    t, y, dy = noisy_sawtooth(2)
    frequency = lc.trial_frequencies(fmax=2.5)[::7]
    base = ref.pdm(t, y, dy, frequency, 8, ncovers)
    moved = ref.pdm(t, scale * y + 1e4, abs(scale) * dy, frequency, 8, ncovers)
    np.testing.assert_allclose(moved, base, rtol=1e-9)


def test_noiseless_square_wave_has_zero_dispersion_at_its_period():
    rng = np.random.default_rng(3)
    t = np.sort(rng.uniform(0, 100, 300))
    y = np.where((t / 2.5) % 1.0 < 0.5, 1.0, 0.0)
    assert ref.pdm(t, y, None, 1 / 2.5, nbins=10)[0] < 1e-28
    assert ref.pdm(t, y, None, 1 / 2.5, nbins=10, ncovers=2)[0] > 0.05  # covers straddle 0.5


def test_beta_law_on_gaussian_noise():
    """(N - M) theta / (N - 1) ~ Beta((N - M)/2, (M - 1)/2) for one cover (Schwarzenberg-
    Czerny 1997): 400 noise realisations at one frequency."""
    rng = np.random.default_rng(4)
    n, nbins = 120, 8
    t = np.sort(rng.uniform(0, 50, n))
    thetas = np.array([ref.pdm(t, rng.normal(size=n), None, 0.731, nbins)[0]
                       for _ in range(400)])
    a, b = ref.beta_parameters(n, nbins)
    assert stats.kstest((n - nbins) * thetas / (n - 1), stats.beta(a, b).cdf).pvalue > 1e-3


def light_curve_recovery(generator, period, seeds=range(4)):
    frequency = lc.trial_frequencies()
    found = []
    for seed in seeds:
        t, y, dy = generator(seed, period)
        theta = ref.pdm(t, y, dy, frequency, nbins=10)
        found.append(lc.best_periods(frequency, theta, minimum=True))
    return found


@pytest.mark.parametrize(("generator", "period", "aliases"), [
    (lc.eclipsing_binary, 2.7183, (1.0, 0.5)),  # PDM often prefers half the EB period
    (lc.transit, 3.1416, (1.0,)),
    (lc.sawtooth, 0.5772, (1.0,)),
])
def test_injected_signals_recovered(generator, period, aliases):
    tolerance = period**2 / (2 * 400.0)  # half a resolution element of the 400-d baseline
    for top in light_curve_recovery(generator, period):
        assert any(np.min(np.abs(top - k * period)) < k * k * tolerance for k in aliases)


@needs_p4j
@pytest.mark.parametrize("nbins", [8, 10])
def test_equals_p4j_pdm(nbins):
    """P4J's PDM1 (weighted, bins of 3+ points), float32-exact inputs and P4J's float32
    folding; P4J sums in float32 (a few 1e-7 relative)."""
    from P4J.algorithms.phase_dispersion_minimization import PDM

    t, y, dy = noisy_sawtooth(5, n=120, float32=True)
    frequency = np.linspace(0.05, 3.0, 300).astype(np.float32).astype(np.float64)
    peer = PDM(*(a.astype(np.float32) for a in (t, y, dy)), nbins)
    theirs = np.array([peer.eval_frequency(f) for f in frequency])
    ours = ref.pdm(t, y, dy, frequency, nbins, convention="p4j", phase_dtype=np.float32)
    np.testing.assert_allclose(ours, theirs, rtol=2e-6)


@needs_pyastronomy
@pytest.mark.parametrize("ncovers", [1, 3])
def test_equals_pyastronomy_equibin_cover(ncovers):
    t, y, _ = noisy_sawtooth(6)
    peer = PYPDM.PyPDM(t, y)
    scanner = PYPDM.Scanner(minVal=0.4, maxVal=2.0, dVal=0.0173, mode="frequency")
    frequency, theirs = peer.pdmEquiBinCover(7, ncovers, scanner)
    ours = ref.pdm(t, y, None, frequency, 7, ncovers, convention="pyastronomy")
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)


@needs_pyastronomy
def test_equals_pyastronomy_equibin_when_no_bin_is_merged():
    t, y, _ = noisy_sawtooth(7, n=300)
    peer = PYPDM.PyPDM(t, y)
    scanner = PYPDM.Scanner(minVal=0.4, maxVal=2.0, dVal=0.0173, mode="frequency")
    frequency, theirs = peer.pdmEquiBin(6, scanner)
    np.testing.assert_allclose(ref.pdm(t, y, None, frequency, 6), theirs, rtol=1e-12)
