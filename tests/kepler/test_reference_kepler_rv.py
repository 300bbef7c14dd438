"""The NumPy Keplerian RV reference (tests/reference/kepler_rv.py) against radvel and algebra.

radvel (``pip install --no-deps radvel``, loaded by tests/peers.py) is the
peer for the model and the likelihood; Kepler's equation, closed-form
velocities and a direct least-squares solve check the rest.
"""

from __future__ import annotations

import numpy as np
import pytest
from peers import load_radvel
from reference import kepler_rv as ref

from clperiod.testing import random_planets

RADVEL = load_radvel()
needs_radvel = pytest.mark.skipif(RADVEL is None, reason="radvel is not installed "
                                  "(python3 -m pip install --no-deps radvel)")
EPS = np.finfo(np.float64).eps


def test_eccentric_anomaly_round_trip():
    E = np.linspace(-300, 300, 2001)
    e = np.linspace(0, 0.999, 40)[:, None]
    M = E - e * np.sin(E)
    got = ref.eccentric_anomaly(M, e)
    assert np.all(np.abs(got - e * np.sin(got) - M) <= 4 * EPS * (1 + np.abs(M)))
    # dE/dM = 1 / (1 - e cos E): the inversion magnifies the rounding of M
    assert np.all(np.abs(got - E) <= 4 * EPS * (1 + np.abs(E)) / (1 - e * np.cos(E)))


@pytest.mark.parametrize("e", [0.0, 0.1])
def test_radial_velocity_closed_form(e):
    P, K = 3.7, 12.5
    t = np.array([0.0, P / 2, P]) + 100.0
    v = ref.radial_velocity(t, [[[P, K, e, 0.0, 0.0]]], t_ref=100.0)
    np.testing.assert_allclose(v[0], K * (np.array([1.0, -1.0, 1.0]) + e), rtol=0, atol=1e-13 * K)


def test_radial_velocity_sum_offsets_trend():
    rng = np.random.default_rng(5)
    planets = random_planets(rng, 6, 1).reshape(3, 2, 5)
    t = np.sort(rng.uniform(0, 500, 50))
    instrument = rng.integers(0, 3, t.size)
    offsets, trend = rng.normal(0, 10, (3, 3)), rng.normal(0, 0.1, (3, 2))
    got = ref.radial_velocity(t, planets, 200.0, offsets, instrument, trend)
    dt = t - 200.0
    want = (sum(ref.radial_velocity(t, planets[:, [j]], 200.0) for j in range(2))
            + offsets[:, instrument] + trend[:, :1] * dt + trend[:, 1:] * dt**2)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max())


@needs_radvel
def test_radial_velocity_matches_radvel():
    rng = np.random.default_rng(1)
    params = random_planets(rng, 200, 1)
    t, t_ref = np.sort(rng.uniform(0, 2000, 100)), 700.0
    P, K, e, w, M0 = params[:, 0].T
    tp = t_ref - M0 * P / (2 * np.pi)
    want = np.array([RADVEL.rv_drive(t, orbel) for orbel in zip(P, tp, e, w, K)])
    got = ref.radial_velocity(t, params, t_ref)
    assert np.all(np.abs(got - want) <= 1e-9 * K[:, None])


def likelihood_problem(rng, n_models=4, n_obs=40, n_inst=3):
    """Random data, two-planet models with offsets, trend and jitter for 3 instruments."""
    t = np.sort(rng.uniform(0, 300, n_obs))
    instrument = np.arange(n_obs) % n_inst
    params = random_planets(rng, 2 * n_models, 1, e_max=0.8).reshape(n_models, 2, 5)
    model = dict(t_ref=150.0, offsets=rng.normal(0, 5, (n_models, n_inst)),
                 instrument=instrument, trend=rng.normal(0, 0.01, (n_models, 2)),
                 jitter=rng.uniform(0.5, 3, (n_models, n_inst)))
    sigma = rng.uniform(1, 4, n_obs)
    v = rng.normal(0, 30, n_obs)
    return t, v, sigma, params, model


@needs_radvel
def test_loglike_matches_radvel_loglike_jitter():
    rng = np.random.default_rng(2)
    t, v, sigma, params, model = likelihood_problem(rng)
    jitter = model.pop("jitter")
    r = v - ref.radial_velocity(t, params, **model)
    want = [RADVEL.loglike_jitter(r[i], sigma, jitter[i, model["instrument"]])
            for i in range(len(params))]
    for exact in (False, True):
        got = ref.loglike(t, v, sigma, params, **model, jitter=jitter, exact=exact)
        np.testing.assert_allclose(got, want, rtol=1e-13)


def test_exact_sums_agree():
    rng = np.random.default_rng(3)
    args = likelihood_problem(rng)
    for function in (ref.chi2, ref.loglike):
        fast = function(*args[:4], **args[4])
        exact = function(*args[:4], **args[4], exact=True)
        np.testing.assert_allclose(fast, exact, rtol=1e-13)


def test_profile_matches_least_squares():
    rng = np.random.default_rng(4)
    t, v, sigma, params, model = likelihood_problem(rng)
    instrument, jitter = model["instrument"], model["jitter"]
    known = ref.radial_velocity(t, params[:, :1], model["t_ref"], trend=model["trend"])
    nonlinear = params[:, 1, [0, 2, 3, 4]]
    chi2_min, K_hat, gamma_hat = ref.profile_last_planet(
        t, v, sigma, instrument, nonlinear, model["t_ref"], known=known, jitter=jitter)
    onehot = (instrument[:, None] == np.arange(3)).astype(float)
    for i, (P, e, w, M0) in enumerate(nonlinear):
        u = ref.radial_velocity(t, [[[P, 1.0, e, w, M0]]], model["t_ref"])[0]
        scale = 1 / np.sqrt(sigma**2 + jitter[i, instrument] ** 2)
        design = np.column_stack([u, onehot]) * scale[:, None]
        solution, residual, *_ = np.linalg.lstsq(design, (v - known[i]) * scale, rcond=None)
        np.testing.assert_allclose(chi2_min[i], residual[0], rtol=1e-10)
        np.testing.assert_allclose([K_hat[i], *gamma_hat[i]], solution, rtol=1e-10, atol=1e-10)
    # the profiled optimum, plugged into the full model, gives the same chi-square
    fitted = params.copy()
    fitted[:, 1, 1] = K_hat
    np.testing.assert_allclose(
        ref.chi2(t, v, sigma, fitted, model["t_ref"], gamma_hat, instrument, model["trend"],
                 jitter), chi2_min, rtol=1e-12)
