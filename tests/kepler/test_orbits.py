"""Parameter bases and converters of clperiod.kepler.orbits (host NumPy, issue 4).

Round trips between every pair of :data:`clperiod.kepler.orbits.BASES`, the
time-of-conjunction formulas against radvel's (``tests/peers.py``), the mean
anomaly at ``t_ref`` against the time of periastron by definition, and the
(secosw, sesinw) bases at e = 0. "Same orbit" is checked through the
velocities of the NumPy reference model, which knows only the standard basis.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from peers import load_radvel
from reference import kepler_rv as ref

from clperiod.kepler import orbits

RADVEL = load_radvel()
needs_radvel = pytest.mark.skipif(RADVEL is None, reason="radvel is not installed "
                                  "(python3 -m pip install --no-deps radvel)")
STANDARD = orbits.STANDARD
T_REF = 1234.5
TWO_PI = 2 * np.pi


def random_standard(rng, n=500, e_max=0.95):
    """``(n, 5)`` planets (P, K, e, w, M0); w and M0 over several turns."""
    per = np.exp(rng.uniform(np.log(0.3), np.log(5000), n))
    e = rng.uniform(0, e_max, n)
    e[:3] = 1e-9, 0.5, e_max
    return np.stack([per, rng.uniform(0.5, 200, n), e, rng.uniform(-7, 7, n),
                     rng.uniform(-20, 20, n)], axis=-1)


def wrapped(x, period):
    """``x`` folded into ``[-period/2, period/2)``."""
    return np.mod(x + period / 2, period) - period / 2


def assert_same_params(got, want, basis, atol_angle=1e-9, rtol_time=1e-10):
    """Equal parameters in ``basis``, angles modulo 2 pi and times modulo P."""
    per = want[..., 0]
    np.testing.assert_allclose(got[..., 0], per, rtol=1e-14)
    np.testing.assert_allclose(got[..., 1], want[..., 1], rtol=1e-14)
    if basis.split()[2] == "e":
        np.testing.assert_allclose(got[..., 2], want[..., 2], rtol=1e-12, atol=1e-15)
        assert np.abs(wrapped(got[..., 3] - want[..., 3], TWO_PI)).max() <= atol_angle
    else:
        np.testing.assert_allclose(got[..., 2:4], want[..., 2:4], rtol=0, atol=1e-12)
    if basis.endswith("m0"):
        assert np.abs(wrapped(got[..., 4] - want[..., 4], TWO_PI)).max() <= atol_angle
    else:  # tp or tc: the same epoch up to whole periods
        diff = wrapped(got[..., 4] - want[..., 4], per)
        assert np.abs(diff / per).max() <= rtol_time, np.abs(diff / per).max()


def velocities(params_standard, t):
    return ref.radial_velocity(t, np.asarray(params_standard)[:, None, :], T_REF)


def assert_same_orbit(params, want, t):
    """Same velocity curves (standard-basis planets), to 1e-8 K."""
    diff = (velocities(params, t) - velocities(want, t)) / want[:, 1:2]
    assert np.abs(diff).max() <= 1e-8, np.abs(diff).max(axis=1)


@pytest.mark.slow
@pytest.mark.parametrize("from_basis, to_basis", list(itertools.product(orbits.BASES, repeat=2)))
def test_round_trip_between_bases(from_basis, to_basis):
    rng = np.random.default_rng(31)
    std = random_standard(rng)
    start = orbits.convert(std, STANDARD, from_basis, t_ref=T_REF)
    there = orbits.convert(start, from_basis, to_basis, t_ref=T_REF)
    assert there.shape == start.shape and there.dtype == np.float64
    # the direct conversion from the standard basis agrees
    assert_same_params(there, orbits.convert(std, STANDARD, to_basis, t_ref=T_REF), to_basis)
    back = orbits.convert(there, to_basis, from_basis, t_ref=T_REF)
    assert_same_params(back, start, from_basis)
    # and it is the same orbit
    t = np.linspace(T_REF - 3000, T_REF + 3000, 41)
    assert_same_orbit(orbits.convert(there, to_basis, STANDARD, t_ref=T_REF), std, t)


def test_standard_to_standard_normalises_angles():
    rng = np.random.default_rng(32)
    std = random_standard(rng, 50)
    same = orbits.convert(std, STANDARD, STANDARD, t_ref=T_REF)
    np.testing.assert_allclose(same[:, :4], std[:, :4], rtol=1e-15)
    assert np.all((same[:, 4] >= 0) & (same[:, 4] < TWO_PI))
    assert np.abs(wrapped(same[:, 4] - std[:, 4], TWO_PI)).max() < 1e-10
    # w from (secosw, sesinw) comes back in (-pi, pi]
    w = orbits.convert(orbits.convert(std, STANDARD, "per k secosw sesinw m0"),
                       "per k secosw sesinw m0", STANDARD)[:, 3]
    assert np.all((w > -np.pi) & (w <= np.pi))


def test_mean_anomaly_and_time_of_periastron_by_definition():
    """M(t) = 2 pi (t - tp) / P and M(t_ref) = M0: tp = t_ref - M0 P / (2 pi)
    modulo P, the last periastron at or before t_ref."""
    rng = np.random.default_rng(33)
    std = random_standard(rng)
    per, m0 = std[:, 0], std[:, 4]
    tp = orbits.convert(std, STANDARD, "per k e w tp", t_ref=T_REF)[:, 4]
    phase = TWO_PI * (T_REF - tp) / per
    assert np.abs(wrapped(phase - m0, TWO_PI)).max() < 1e-9
    # and back: M0 in [0, 2 pi) from any tp (also tp after t_ref)
    for shift in (-7, 0, 3):
        params = std.copy()
        params[:, 4] = tp + shift * per
        got = orbits.convert(params, "per k e w tp", STANDARD, t_ref=T_REF)[:, 4]
        assert np.all((got >= 0) & (got < TWO_PI))
        assert np.abs(wrapped(got - m0, TWO_PI)).max() < 1e-9
    # t_ref only moves M0: M0(t2) = M0(t1) + 2 pi (t2 - t1) / P
    other = orbits.convert(std, STANDARD, STANDARD, t_ref=T_REF)  # t_ref cancels here
    m_later = orbits.convert(orbits.convert(other, STANDARD, "per k e w tp", t_ref=T_REF),
                             "per k e w tp", STANDARD, t_ref=T_REF + 10.0)[:, 4]
    assert np.abs(wrapped(m_later - (m0 + TWO_PI * 10.0 / per), TWO_PI)).max() < 1e-9
    # documented: "tp derived from m0 is the last periastron at or before
    # t_ref", whatever turn M0 is given in (here M0 in [-20, 20])
    outside = (tp > T_REF) | (tp <= T_REF - per * (1 + 1e-12))
    assert not outside.any(), f"{outside.sum()} of {tp.size} tp outside (t_ref - P, t_ref]"


@needs_radvel
def test_conjunction_formulas_match_radvel():
    rng = np.random.default_rng(34)
    std = random_standard(rng)
    per, _, e, w, _ = std.T
    tc = rng.uniform(-3000, 5000, per.size)
    want_tp = RADVEL.timetrans_to_timeperi(tc, per, e, w)
    got_tp = orbits.timetrans_to_timeperi(tc, per, e, w)
    np.testing.assert_allclose(got_tp, want_tp, rtol=0, atol=1e-12 * np.abs(tc).max())
    want_tc = RADVEL.timeperi_to_timetrans(got_tp, per, e, w)
    got_tc = orbits.timeperi_to_timetrans(got_tp, per, e, w)
    np.testing.assert_allclose(got_tc, want_tc, rtol=0, atol=1e-12 * np.abs(tc).max())
    np.testing.assert_allclose(got_tc, tc, rtol=0, atol=1e-9 * per.max())
    # scalars, as radvel calls them
    assert orbits.timetrans_to_timeperi(5.0, 10.0, 0.3, 0.7) == pytest.approx(
        RADVEL.timetrans_to_timeperi(5.0, 10.0, 0.3, 0.7), abs=1e-12)
    # through convert: tc of the standard basis is radvel's tc of its tp
    tp = orbits.convert(std, STANDARD, "per k e w tp", t_ref=T_REF)[:, 4]
    got = orbits.convert(std, STANDARD, "per k e w tc", t_ref=T_REF)[:, 4]
    np.testing.assert_allclose(got, RADVEL.timeperi_to_timetrans(tp, per, e, w), rtol=0,
                               atol=1e-9 * per.max())


def test_conjunction_mean_anomaly_is_the_time_from_periastron():
    """M_c of orbits.conjunction_mean_anomaly (the kernels' tc form) equals
    2 pi (tc - tp) / P of radvel's formula, modulo 2 pi, for w of any turn."""
    rng = np.random.default_rng(36)
    std = random_standard(rng, e_max=0.99)
    per, _, e, w, _ = std.T
    m_c = orbits.conjunction_mean_anomaly(e, w)
    assert (np.abs(m_c) <= np.pi).all()
    tc = rng.uniform(-3000, 5000, per.size)
    want = TWO_PI * (tc - orbits.timetrans_to_timeperi(tc, per, e, w)) / per
    assert np.abs(wrapped(m_c - want, TWO_PI)).max() <= 1e-9
    # circular: conjunction a quarter period after periastron
    np.testing.assert_allclose(orbits.conjunction_mean_anomaly(0.0, [0.0, 1.0]),
                               [np.pi / 2, np.pi / 2 - 1.0], rtol=0, atol=1e-15)


def test_conjunction_is_where_the_true_anomaly_is_pi_over_2_minus_w():
    """At t = tc the star's velocity is K e cos w (f + w = pi/2) and falling."""
    rng = np.random.default_rng(35)
    std = random_standard(rng, 200, e_max=0.9)
    tc = orbits.convert(std, STANDARD, "per k e w tc", t_ref=T_REF)[:, 4]
    per, k, e, w, _ = std.T
    for i in range(per.size):
        t = tc[i] + np.array([-1e-6, 0.0, 1e-6]) * per[i]
        v = ref.radial_velocity(t, std[None, i : i + 1], T_REF)[0]
        assert v[1] == pytest.approx(k[i] * e[i] * np.cos(w[i]), abs=1e-6 * k[i])
        assert v[0] > v[2]


@pytest.mark.parametrize("basis", [b for b in orbits.BASES if "secosw" in b])
def test_secosw_sesinw_at_zero_eccentricity(basis):
    rng = np.random.default_rng(36)
    std = random_standard(rng, 100)
    std[:, 2] = 0.0
    got = orbits.convert(std, STANDARD, basis, t_ref=T_REF)
    assert np.all(got[:, 2:4] == 0.0)  # exactly, no NaN
    back = orbits.convert(got, basis, STANDARD, t_ref=T_REF)
    assert np.isfinite(back).all()
    assert np.all(back[:, 2] == 0.0)  # w is arbitrary (0 or +-pi from signed zeros)
    # from (0, 0) to every basis: finite, e = 0
    for other in orbits.BASES:
        assert np.isfinite(orbits.convert(got, basis, other, t_ref=T_REF)).all()
    # the circular orbit itself must survive: v = K cos(M + w) depends on
    # M0 + w only, so with w lost the time parameter has to absorb it
    t = np.linspace(T_REF - 500, T_REF + 500, 21)
    assert_same_orbit(back, std, t)


def test_circular_conjunction_bases_keep_the_orbit():
    """With tc the circular orbit is kept whatever w was (tc is physical)."""
    rng = np.random.default_rng(37)
    std = random_standard(rng, 100)
    std[:, 2] = 0.0
    t = np.linspace(T_REF - 500, T_REF + 500, 21)
    for basis in ("per k e w tc", "per k secosw sesinw tc"):
        back = orbits.convert(orbits.convert(std, STANDARD, basis, t_ref=T_REF), basis, STANDARD,
                              t_ref=T_REF)
        assert_same_orbit(back, std, t)


def test_convert_shapes_and_errors():
    rng = np.random.default_rng(38)
    std = random_standard(rng, 24).reshape(2, 3, 4, 5)
    got = orbits.convert(std, STANDARD, "per k secosw sesinw tc", t_ref=T_REF)
    assert got.shape == (2, 3, 4, 5)
    np.testing.assert_allclose(got.reshape(-1, 5), orbits.convert(
        std.reshape(-1, 5), STANDARD, "per k secosw sesinw tc", t_ref=T_REF), rtol=1e-15)
    one = orbits.convert(std[0, 0, 0], STANDARD, "per k e w tp", t_ref=T_REF)
    assert one.shape == (5,)
    with pytest.raises(ValueError, match="unknown basis"):
        orbits.convert(std, STANDARD, "per tc secosw sesinw k")
    with pytest.raises(ValueError, match="unknown basis"):
        orbits.convert(std, "per k e w", STANDARD)
    with pytest.raises(ValueError, match="5 per-planet"):
        orbits.convert(std[..., :4], STANDARD, "per k e w tp")
    assert orbits.check_basis("per k secosw sesinw tc") == ("secosw_sesinw", "tc")
    assert orbits.check_basis(STANDARD) == ("e_w", "m0")
    assert len(set(orbits.BASES)) == 6 and STANDARD in orbits.BASES
