"""Host reductions of clperiod.engine.angles against mpmath: x mod 2 pi of any float64,
epoch differences modulo a period, and the bits of 1 / (2 pi) the kernels read."""

from __future__ import annotations

import mpmath
import numpy as np

from clperiod.engine import angles
from reference.kepler_rv_mp import reduce_mean_anomaly


def test_inv_two_pi_words_are_the_bits_of_one_over_two_pi():
    words = angles.INV_TWO_PI_WORDS
    assert words[0] == 0 and all(0 <= w < 2**64 for w in words)
    bits = 64 * (len(words) - 1)
    table = int("".join(f"{w:016x}" for w in words[1:]), 16)
    with mpmath.workdps(bits // 3 + 40):
        exact = mpmath.floor(mpmath.mpf(2) ** bits / (2 * mpmath.pi))
    assert abs(table - int(exact)) <= 1
    assert words[1] == 0x28BE60DB9391054A  # 1 / (2 pi) = 0.159154943... = 0x0.28be60db...


def test_reduce_angle_of_any_float64():
    """Within an ulp of the exact x mod 2 pi for x of every size (a float64
    reduction, x - 2 pi round(x / 2 pi), is off by radians at 1e20)."""
    rng = np.random.default_rng(1)
    x = np.concatenate([[0.0, -0.0, 3.0, np.pi, -7.5, 2.0**25, -(2.0**25), 2.0**25 - 1, 1e16,
                         -1e20, 1e100, 1.7976931348623157e308, 6381956970095103 * 2.0**797,
                         5e-324],
                        rng.choice([-1, 1], 300) * 10.0 ** rng.uniform(-10, 308, 300)])
    got = angles.reduce_angle(x)
    want = np.array([reduce_mean_anomaly(v)[0] for v in x])
    assert (np.abs(got) <= np.pi).all()
    assert (np.abs(got - want) <= np.spacing(np.abs(want))).all()
    naive = x[10] - 2 * np.pi * np.round(x[10] / (2 * np.pi))
    assert abs(naive - want[10]) > 0.1
    assert np.isnan(angles.reduce_angle([np.nan, np.inf, -np.inf])).all()


def test_turns_between_barycentric_epochs():
    """(a - b) / P less whole turns to 1e-16 for BJD epochs, epochs of
    opposite sign and sizes far beyond 2^52 periods; (a - b) / P in float64
    is off by 3e-11 turns for a = 2.46e6 d, P = 0.73 d."""
    rng = np.random.default_rng(2)
    n = 400
    a = 2.45e6 + rng.uniform(0, 1e4, n)
    b = np.where(rng.uniform(size=n) < 0.5, 0.0, rng.uniform(-1e7, 1e7, n))
    per = 10.0 ** rng.uniform(-3, 4, n)
    a[:4], b[:4], per[:4] = [1e300, 5.0, -3e200, 2456789.123], [0.0, -1e299, 7.0, 0.0], \
        [1e-5, 3.3, 1e-10, 0.731]
    got = angles.turns_between(a, b, per)
    with mpmath.workdps(700):
        want = []
        for x, y, p in zip(a, b, per):
            q = (mpmath.mpf(float(x)) - mpmath.mpf(float(y))) / mpmath.mpf(float(p))
            want.append(float(q - mpmath.nint(q)))
    assert np.abs(got - want).max() <= 1.2e-16
    assert (np.abs(got) <= 0.5).all()
    naive = (a[3] - b[3]) / per[3]
    assert abs(naive - np.rint(naive) - want[3]) > 1e-11


def test_reductions_of_scalars_and_in_place():
    """Scalars of any size (those beyond the fast paths raised) and
    reduce_angle into its own input give the reductions of arrays."""
    x = np.array([3.0, 1e30, -7e5, np.nan])
    want = angles.reduce_angle(x)
    assert [float(angles.reduce_angle(v)) for v in x[:3]] == want[:3].tolist()
    same = x.copy()
    assert angles.reduce_angle(same, out=same) is same
    np.testing.assert_array_equal(same, want)
    a, b, per = np.array([1e300, 2456789.123, 3.0]), np.array([0.0, 0.0, 1.0]), np.array([
        1e-5, 0.731, np.inf])
    want = angles.turns_between(a, b, per)
    assert want[2] == 0.0
    assert [float(angles.turns_between(*v)) for v in zip(a, b, per)] == want.tolist()
    one_epoch = angles.turns_between(a[1], 0.0, per)  # scalar epochs, array of periods
    assert one_epoch.tolist() == [float(angles.turns_between(a[1], 0.0, p)) for p in per]
    assert one_epoch[1] == want[1]
