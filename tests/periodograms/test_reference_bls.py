"""The NumPy BLS reference (tests/reference/bls.py): astropy BoxLeastSquares, by hand, and
the invariances and injections it must honour."""

from __future__ import annotations

import numpy as np
import pytest
from astropy.timeseries import BoxLeastSquares

from reference import bls as ref

PERIOD, DURATION, EPOCH, DEPTH = 2.3, 0.2, 101.1, 0.01
PERIODS = np.linspace(1.5, 3.5, 40)
SEVERAL = [0.1, 0.25, 0.15]  # not sorted: the tie rule follows the given order


def transit_light_curve(seed: int, n: int = 300, period: float = PERIOD,
                        epoch: float = EPOCH, duration: float = DURATION):
    """Box transit plus noise over 20 days from t = 100.3, with per-point errors."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 20, n)) + 100.3
    dy = rng.uniform(0.004, 0.007, n)
    y = 1.0 + dy * rng.normal(size=n)
    y[np.abs((t - epoch + period / 2) % period - period / 2) < duration / 2] -= DEPTH
    return t, y, dy


def assert_equals_astropy(ours: ref.BLSResult, theirs, rtol: float = 1e-9) -> None:
    for name in ref.FIELDS:
        np.testing.assert_allclose(getattr(ours, name), np.asarray(theirs[name]), rtol=rtol,
                                   atol=0, err_msg=name)


@pytest.mark.slow
@pytest.mark.parametrize("objective", ["likelihood", "snr"])
@pytest.mark.parametrize("durations", [[DURATION], SEVERAL], ids=["one", "several"])
@pytest.mark.parametrize("with_errors", [False, True])
def test_exact_search_equals_astropy_slow(objective, durations, with_errors):
    t, y, dy = transit_light_curve(1)
    dy = dy if with_errors else None
    theirs = BoxLeastSquares(t, y, dy).power(PERIODS, durations, objective=objective,
                                              method="slow")
    assert_equals_astropy(ref.bls_slow(t, y, dy, PERIODS, durations, objective), theirs)


@pytest.mark.parametrize("objective", ["likelihood", "snr"])
@pytest.mark.parametrize("durations", [[DURATION], SEVERAL], ids=["one", "several"])
@pytest.mark.parametrize("with_errors", [False, True])
def test_binned_search_equals_astropy_fast(objective, durations, with_errors):
    t, y, dy = transit_light_curve(2)
    dy = dy if with_errors else None
    periods = np.linspace(0.8, 4.0, 150)
    for oversample in (3, 10):
        theirs = BoxLeastSquares(t, y, dy).power(periods, durations, objective=objective,
                                                  method="fast", oversample=oversample)
        ours = ref.bls_binned(t, y, dy, periods, durations, objective, oversample,
                              compat="astropy")
        assert_equals_astropy(ours, theirs)


def test_astropy_suite_known_answer():
    """astropy's test_32bit_bug (spec §4.6): its numbers, from the reference alone."""
    rng = np.random.default_rng(42)
    t = rng.uniform(0, 10, 500)
    y = np.ones_like(t)
    y[np.abs((t + 1.0) % 2.0 - 1) < 0.08] = 1.0 - 0.1
    y += 0.01 * rng.standard_normal(len(t))
    periods = ref.autoperiod(t, 0.16)
    power = ref.bls_binned(t, y, None, periods, 0.16, compat="astropy").power
    np.testing.assert_allclose(periods[np.argmax(power)], 2.000412388152837, rtol=1e-12)
    power = ref.bls_binned(t, y, None, np.linspace(1.9, 2.1, 5), 0.16, compat="astropy").power
    np.testing.assert_allclose(power, [0.01723948, 0.0643028, 0.1338783, 0.09428816,
                                       0.03577543], rtol=1.1e-7)


@pytest.mark.parametrize("options", [{}, {"minimum_n_transit": 5, "frequency_factor": 3.0},
                                     {"minimum_period": 4.0, "maximum_period": 1.0}])
def test_autoperiod_equals_astropy(options):
    t, y, _ = transit_light_curve(3)
    theirs = BoxLeastSquares(t, y).autoperiod(SEVERAL, **options)
    np.testing.assert_allclose(ref.autoperiod(t, SEVERAL, **options), theirs, rtol=1e-14)
    with pytest.raises(ValueError, match="minimum_n_transit"):
        ref.autoperiod(t, SEVERAL, minimum_n_transit=1)


def test_six_points_by_hand():
    """One cycle of six points, one or two of them 1 low, dy = 0.5 (v = 4):
    depth 1, V_in = 4 n_in, V_out = 4 (6 - n_in), log_likelihood = V_in / 2."""
    t = 10.0 + np.arange(6.0)
    dy = np.full(6, 0.5)
    one = ref.bls_slow(t, [1, 1, 0, 1, 1, 1], dy, 6.0, 1.0, oversample=2)
    assert (one.depth[0], one.duration[0], one.transit_time[0]) == (1.0, 1.0, 12.0)
    np.testing.assert_allclose(one.depth_err[0], np.sqrt(1 / 4 + 1 / 20), rtol=1e-15)
    np.testing.assert_allclose(one.depth_snr[0], 1 / np.sqrt(0.3), rtol=1e-15)
    assert one.log_likelihood[0] == one.power[0] == 2.0
    two = ref.bls_slow(t, [1, 1, 0, 0, 1, 1], dy, 6.0, 2.0, "snr", oversample=4)
    assert (two.depth[0], two.transit_time[0], two.log_likelihood[0]) == (1.0, 12.5, 4.0)
    np.testing.assert_allclose(two.power[0], 1 / np.sqrt(1 / 8 + 1 / 16), rtol=1e-15)
    # binned: unit bins [k, k + 1); the box of bins [2, 4) is centred on its middle, 13
    binned = ref.bls_binned(t, [1, 1, 0, 0, 1, 1], dy, 6.0, 2.0, oversample=2)
    assert (binned.depth[0], binned.transit_time[0], binned.log_likelihood[0]) == (1, 13, 4)


def straddling_light_curve():
    """A 0.25-long transit centred on phase 0 of the search grids (t_ref = 50), P = 1.5.

    The first point (t_ref) lies on box edges of both grids, which treat edges differently
    (exact: open boxes; binned: half-open bins): it gets y = 1 and a negligible weight."""
    rng = np.random.default_rng(5)
    t = np.concatenate([[0.0], np.sort(rng.uniform(0.0, 15.0, 1200))]) + 50.0
    dy = np.full(t.size, 0.002)
    y = 1.0 + dy * rng.normal(size=t.size)
    y[np.abs((t - 50.0 + 0.75) % 1.5 - 0.75) < 0.125] -= 0.01
    dy[0], y[0] = 1e3, 1.0
    return t, y, dy


@pytest.mark.parametrize("objective", ["likelihood", "snr"])
def test_cyclic_binned_equals_exact_on_a_common_grid(objective):
    """Bins of 1/64 and box centres on multiples of 1/64 (oversample 8, duration 1/4 and
    periods that are multiples of 1/64): binned with cyclic wrap = exact search."""
    t, y, dy = straddling_light_curve()
    periods = np.arange(64, 160) / 64.0
    exact = ref.bls_slow(t, y, dy, periods, 0.25, objective, oversample=16)
    binned = ref.bls_binned(t, y, dy, periods, 0.25, objective, oversample=16)
    for name in ref.FIELDS:
        np.testing.assert_allclose(getattr(binned, name), getattr(exact, name), rtol=1e-9,
                                   err_msg=name)
    best = np.argmax(exact.power)
    assert periods[best] == 1.5 and abs(exact.depth[best] - 0.01) < 0.001


def test_astropy_binned_misses_boxes_across_phase_0():
    """With durations {1/16, 1/4} astropy pads only 'oversample' bins: the 1/4 box across
    phase 0 is never tried (spec §4.2 defect 2); the cyclic layout finds it."""
    t, y, dy = straddling_light_curve()
    exact = ref.bls_slow(t, y, dy, 1.5, [0.0625, 0.25], oversample=8)
    cyclic = ref.bls_binned(t, y, dy, 1.5, [0.0625, 0.25], oversample=8)
    astropy = ref.bls_binned(t, y, dy, 1.5, [0.0625, 0.25], oversample=8, compat="astropy")
    theirs = BoxLeastSquares(t, y, dy).power(1.5, [0.0625, 0.25], oversample=8)
    assert_equals_astropy(astropy, theirs)
    np.testing.assert_allclose(cyclic.power, exact.power, rtol=1e-9)
    assert cyclic.transit_time[0] == exact.transit_time[0] == 50.0
    assert cyclic.duration[0] == exact.duration[0] == 0.25
    assert astropy.power[0] < 0.6 * exact.power[0]
    assert astropy.depth[0] < 0.8 * exact.depth[0]


@pytest.mark.parametrize("with_errors", [False, True])
def test_transit_stats_equal_astropy_compute_stats(with_errors):
    t, y, dy = transit_light_curve(6, n=600)
    dy = dy if with_errors else None
    theirs = BoxLeastSquares(t, y, dy).compute_stats(PERIOD, DURATION, EPOCH)
    ours = ref.transit_stats(t, y, dy, PERIOD, DURATION, EPOCH)
    assert set(ours) == set(theirs)
    for name, value in ours.items():
        np.testing.assert_allclose(value, theirs[name], rtol=1e-9, err_msg=name)
    assert ours["per_transit_count"].sum() == np.count_nonzero(
        np.abs((t - EPOCH + PERIOD / 2) % PERIOD - PERIOD / 2) < DURATION / 2)


def test_transit_stats_add_up_to_the_search():
    """Per-transit log-likelihoods sum to the search's; odd and even depths both see the
    injected depth; the half-period model sees about half of it."""
    t, y, dy = transit_light_curve(7, n=2000)
    search = ref.bls_slow(t, y, dy, PERIOD, DURATION, oversample=50)
    stats = ref.transit_stats(t, y, dy, PERIOD, DURATION, search.transit_time[0])
    np.testing.assert_allclose(stats["per_transit_log_likelihood"].sum(),
                               search.log_likelihood[0], rtol=1e-9)
    np.testing.assert_allclose(stats["depth"][0], search.depth[0], rtol=1e-9)
    for name in ("depth_odd", "depth_even"):
        assert abs(stats[name][0] - DEPTH) < 3 * stats[name][1]
    assert abs(stats["depth_half"][0] - DEPTH / 2) < 0.2 * DEPTH
    assert abs(stats["depth_phased"][0]) < 3 * stats["depth_phased"][1]
    np.testing.assert_allclose(np.diff(stats["transit_times"]), PERIOD, rtol=1e-12)


def test_invariant_to_units_offsets_and_time_shift():
    """y -> 7 y + 1e4, dy -> 7 dy, t -> t + 6e4: dimensionless fields unchanged, depths
    scale by 7, transit times move by 6e4 (spec §0 with dy given)."""
    t, y, dy = transit_light_curve(8)
    for search in (ref.bls_slow, ref.bls_binned):
        base = search(t, y, dy, PERIODS, SEVERAL, "snr")
        moved = search(t + 6e4, 7 * y + 1e4, 7 * dy, PERIODS, SEVERAL, "snr")
        for name in ("power", "depth_snr", "log_likelihood", "duration"):
            np.testing.assert_allclose(getattr(moved, name), getattr(base, name), rtol=1e-9)
        np.testing.assert_allclose(moved.depth, 7 * base.depth, rtol=1e-9)
        np.testing.assert_allclose(moved.depth_err, 7 * base.depth_err, rtol=1e-9)
        np.testing.assert_allclose(moved.transit_time - 6e4, base.transit_time, atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("search", [ref.bls_slow, ref.bls_binned])
def test_injected_transit_recovered(search):
    """A 0.01-deep, 0.15-day transit every 3.17 days in 1000 points over 20 days: S/N 1.4
    to 2.5 per point (depth over dy, dy from 0.004 to 0.007), 13.5 over the whole light
    curve (depth * sqrt(sum(dy**-2)) over the 49 points in transit; the true box's
    depth_snr is 13.1)."""
    t, y, dy = transit_light_curve(9, n=1000, period=3.17, epoch=102.0, duration=0.15)
    periods = ref.autoperiod(t, [0.1, 0.15, 0.2], minimum_period=2.5, maximum_period=4.5,
                             frequency_factor=4.0)
    result = search(t, y, dy, periods, [0.1, 0.15, 0.2], oversample=5)
    best = np.argmax(result.power)
    assert abs(periods[best] - 3.17) < 0.005
    # the binned box may be a bin longer than the transit: up to 1/8 shallower
    assert abs(result.depth[best] - DEPTH) < 0.125 * DEPTH + 3 * result.depth_err[best]
    assert abs(result.duration[best] - 0.15) <= 0.05
    phase_error = (result.transit_time[best] - 102.0 + 3.17 / 2) % 3.17 - 3.17 / 2
    assert abs(phase_error) < 0.03


def test_constant_light_curve_and_bad_arguments():
    """No dip: the exact search admits nothing (power -inf, NaN fields); the binned search
    admits depth 0 as astropy's C core does."""
    t = np.linspace(0, 10, 50)
    exact = ref.bls_slow(t, np.ones(50), None, [1.0, 2.0], 0.1)
    assert np.all(exact.power == -np.inf) and np.all(np.isnan(exact.depth))
    binned = ref.bls_binned(t, np.ones(50), None, [1.0, 2.0], 0.1)
    assert np.all(binned.power == 0) and np.all(binned.depth == 0)
    with pytest.raises(ValueError, match="shorter than the minimum period"):
        ref.bls_slow(t, np.ones(50), None, [1.0, 2.0], 1.0)
    with pytest.raises(ValueError, match="objective"):
        ref.bls_binned(t, np.ones(50), None, 1.0, 0.1, objective="chi2")
    with pytest.raises(ValueError, match="oversample"):
        ref.bls_binned(t, np.ones(50), None, 1.0, 0.1, oversample=0)
