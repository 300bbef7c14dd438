"""Keplerian radial-velocity models on the device (issue 4) against the NumPy reference.

The oracle is ``tests/reference/kepler_rv.py`` (float64 NumPy, radvel's
conventions) and, when installed, radvel itself (``tests/peers.py``).
Conventions: planets ``(..., n_planets, 5)`` in a basis of
:data:`clperiod.kepler.orbits.BASES` (standard ``(P, K, e, w, M0)`` with ``M0`` at
``t_ref``); offsets and jitter per instrument in sorted label order or as a
``{label: value}`` mapping; the trend ``(dvdt, curv)`` is about ``t_ref``.

Everything runs on the selected OpenCL device; on the 2-core PoCL CPU device
the whole file takes a few tens of seconds (most of it kernel builds, which
the OpenCL program caches keep for later runs).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from peers import load_radvel
from reference import kepler_rv as ref
from reference import kepler_rv_mp as mp_ref

from clperiod import io, kepler, select_devices

from clperiod.kepler import orbits

from clperiod.kepler import rvmodel
from clperiod.kepler import ModelStatus, RVLikelihood
from clperiod.kepler.rvmodel import ModelEvaluator, Observations
from clperiod.testing import random_planets

RADVEL = load_radvel()
needs_radvel = pytest.mark.skipif(
    RADVEL is None or RADVEL.rv_drive_array is None,
    reason="radvel (with its C extension radvel._kepler) is not installed "
           "(python3 -m pip install --no-deps radvel)")

#: Instrument labels in order of appearance; the library sorts them, so
#: offsets/jitter arrays are in the order of SORTED and the reference's
#: integer codes are positions in SORTED.
LABELS = ("hires", "apf", "pfs")
SORTED = ("apf", "hires", "pfs")
MIXED_PHASES = ("double", "double_single")


@pytest.fixture(scope="module", autouse=True)
def _device(cpu_device):
    """Skip the whole module when no OpenCL device is usable."""
    return cpu_device


# --------------------------------------------------------------- helpers
def instruments(n_obs):
    """Labels (in order of appearance ``LABELS``) and the reference's sorted codes."""
    labels = np.array(LABELS)[np.arange(n_obs) % len(LABELS)]
    return labels, np.searchsorted(SORTED, labels)


def rv_problem(rng, *, n_models=6, n_obs=150, span=400.0, t_ref=None, e_max=0.8,
               period=(2.0, 300.0), n_planets=2):
    """Data drawn from model 0 (2 planets, 3 instruments, offsets, jitter and a
    trend); the other models are small perturbations of it, so every chi^2
    per point is of order 1 to 10 (realistic fits)."""
    t = np.sort(rng.uniform(0.0, span, n_obs))
    t_ref = 0.5 * span if t_ref is None else t_ref
    labels, codes = instruments(n_obs)
    truth = random_planets(rng, 1, n_planets, e_max=e_max, period=period, amplitude=(5.0, 30.0))
    offsets = np.array([[4.0, -17.0, 30.0]])
    jitter = np.array([[1.5, 0.8, 2.5]])
    trend = np.array([[0.02, -1e-5]])
    sigma = rng.uniform(1.0, 3.0, n_obs)
    v = ref.radial_velocity(t, truth, t_ref, offsets, codes, trend)[0]
    v += rng.normal(0.0, 1.0, n_obs) * np.sqrt(sigma**2 + jitter[0, codes] ** 2)
    params = np.repeat(truth, n_models, axis=0)
    params[1:, :, 0] *= 1 + rng.normal(0, 2e-4, (n_models - 1, n_planets))
    params[1:, :, 1] *= 1 + rng.normal(0, 0.05, (n_models - 1, n_planets))
    params[1:, :, 2] = np.clip(params[1:, :, 2] + rng.normal(0, 0.02, (n_models - 1, n_planets)),
                               0.0, 0.95)
    params[1:, :, 3:] += rng.normal(0, 0.05, (n_models - 1, n_planets, 2))
    model = dict(
        t_ref=t_ref,
        offsets=offsets + rng.normal(0, 0.5, (n_models, 3)),
        jitter=np.abs(jitter + rng.normal(0, 0.3, (n_models, 3))),
        trend=trend + np.array([1e-3, 1e-6]) * rng.normal(0, 1, (n_models, 2)),
    )
    return dict(t=t, v=v, sigma=sigma, labels=labels, codes=codes, params=params, **model)


def reference_statistic(name, pb):
    function = ref.chi2 if name == "chi2" else ref.loglike
    return function(pb["t"], pb["v"], pb["sigma"], pb["params"], pb["t_ref"], pb["offsets"],
                    pb["codes"], pb["trend"], pb["jitter"], exact=True)


def device_statistic(name, pb, **kwargs):
    function = kepler.chi2 if name == "chi2" else kepler.loglike
    return function(pb["t"], pb["v"], pb["sigma"], pb["params"], t_ref=pb["t_ref"],
                    instrument=pb["labels"], offsets=pb["offsets"], jitter=pb["jitter"],
                    trend=pb["trend"], **kwargs)


def velocity_error(got, want, params):
    """Max |got - want| per model over the model's total semi-amplitude."""
    scale = np.abs(params[..., 1]).sum(axis=-1)
    return (np.abs(np.asarray(got, np.float64) - want).max(axis=-1) / scale).max()


# ------------------------------------------------- 1. velocities vs reference
@pytest.mark.parametrize("basis", orbits.BASES)
@pytest.mark.parametrize("precision, bound", [("fp64", 1e-9), ("mixed", 2.5e-4)])
def test_radial_velocity_matches_reference(precision, bound, basis):
    rng = np.random.default_rng(11)
    n_obs, t_ref = 200, 700.0
    params = random_planets(rng, 16, 3)  # e up to 0.99
    if "secosw" in basis:
        # (secosw, sesinw) = (0, 0) loses w, and orbits.convert keeps M0/tp,
        # so a circular orbit with w != 0 changes (see test_orbits.py); this
        # test is about the velocities, so keep e > 0 here
        params[..., 2] = np.maximum(params[..., 2], 1e-6)
    t = np.sort(rng.uniform(0.0, 2000.0, n_obs))
    labels, codes = instruments(n_obs)
    offsets = rng.normal(0, 10, (16, 3))
    trend = rng.normal(0, 1e-2, (16, 2)) * [1, 1e-3]
    want = ref.radial_velocity(t, params, t_ref, offsets, codes, trend)
    converted = orbits.convert(params, orbits.STANDARD, basis, t_ref=t_ref)
    got = kepler.radial_velocity(t, converted, basis=basis, t_ref=t_ref, instrument=labels,
                                 offsets=offsets, trend=trend, precision=precision)
    assert got.shape == (16, n_obs)
    assert got.dtype == (np.float64 if precision == "fp64" else np.float32)
    # measured on PoCL (of the summed K): fp64 4e-12 to 8e-12; mixed 8e-7
    # (2.6e-5 before the Danby stopping rule became relative to f')
    assert velocity_error(got, want, params) <= bound


def test_extra_batch_axes():
    """params (2, 4, n_planets, 5) with offsets/jitter (2, 4, n_inst) and trend
    (2, 4, 2), as documented ("(..., n_inst)"), give (2, 4[, n_obs]) results."""
    rng = np.random.default_rng(10)
    pb = rv_problem(rng, n_models=8, n_obs=60)
    batched = {key: pb[key].reshape((2, 4) + pb[key].shape[1:])
               for key in ("params", "offsets", "jitter", "trend")}
    want_v = ref.radial_velocity(pb["t"], pb["params"], pb["t_ref"], pb["offsets"], pb["codes"],
                                 pb["trend"])
    got_v = kepler.radial_velocity(pb["t"], batched["params"], t_ref=pb["t_ref"],
                                   instrument=pb["labels"], offsets=batched["offsets"],
                                   trend=batched["trend"])
    assert got_v.shape == (2, 4, pb["t"].size)
    assert velocity_error(got_v.reshape(8, -1), want_v, pb["params"]) <= 1e-9
    got = device_statistic("loglike", dict(pb, **batched), precision="fp64")
    assert got.shape == (2, 4)
    np.testing.assert_allclose(got.ravel(), reference_statistic("loglike", pb), rtol=1e-10)


def test_radial_velocity_offsets_mapping_and_defaults():
    rng = np.random.default_rng(12)
    params = random_planets(rng, 4, 2)
    t = np.sort(rng.uniform(0.0, 300.0, 60))
    labels, codes = instruments(60)
    offsets = rng.normal(0, 10, (4, 3))
    as_array = kepler.radial_velocity(t, params, instrument=labels, offsets=offsets)
    as_dict = kepler.radial_velocity(t, params, instrument=labels,
                                     offsets={s: offsets[:, i] for i, s in enumerate(SORTED)})
    np.testing.assert_array_equal(as_array, as_dict)
    np.testing.assert_allclose(as_array, ref.radial_velocity(t, params, 0.0, offsets, codes),
                               rtol=0, atol=1e-9 * params[..., 1].sum(-1).max())
    # no instruments: one offset per model broadcasts; default t_ref = 0
    single = kepler.radial_velocity(t, params, offsets=offsets[:, :1])
    np.testing.assert_allclose(single, ref.radial_velocity(t, params, 0.0, offsets[:, :1]),
                               rtol=0, atol=1e-9 * params[..., 1].sum(-1).max())


@needs_radvel
@pytest.mark.parametrize("precision, bound", [("fp64", 1e-9), ("mixed", 2.5e-4)])
def test_radial_velocity_matches_radvel(precision, bound):
    rng = np.random.default_rng(13)
    params = random_planets(rng, 12, 2)  # radvel's C solver exits the process beyond e ~ 0.998
    t, t_ref = np.sort(rng.uniform(0.0, 2000.0, 150)), 700.0
    want = np.zeros((12, t.size))
    for i, j in np.ndindex(12, 2):
        per, k, e, w, m0 = params[i, j]
        tp = t_ref - m0 * per / (2 * np.pi)
        want[i] += RADVEL.rv_drive_array(t, per, tp, e, w, k)
    got = kepler.radial_velocity(t, params, t_ref=t_ref, precision=precision)
    assert velocity_error(got, want, params) <= bound


# ---------------------------------------------------- 2. analytic identities
@pytest.mark.parametrize("precision, tol", [("fp64", 1e-12), ("mixed", 2e-6)])
@pytest.mark.parametrize("e", [0.0, 0.1])
def test_closed_form_velocities(precision, tol, e):
    per, k = 3.7, 12.5
    t = np.array([0.0, per / 2, per])
    got = kepler.radial_velocity(t, [[per, k, e, 0.0, 0.0]], precision=precision)
    np.testing.assert_allclose(got, k * (np.array([1.0, -1.0, 1.0]) + e), rtol=0, atol=tol * k)
    # the same about another reference epoch
    got = kepler.radial_velocity(t + 1234.5, [[per, k, e, 0.0, 0.0]], t_ref=1234.5,
                                 precision=precision)
    np.testing.assert_allclose(got, k * (np.array([1.0, -1.0, 1.0]) + e), rtol=0, atol=tol * k)


@pytest.mark.parametrize("precision, tol", [("fp64", 1e-12), ("mixed", 2e-6)])
def test_superposition_and_angle_periodicity(precision, tol):
    rng = np.random.default_rng(14)
    params = random_planets(rng, 5, 3, e_max=0.9)
    t = np.sort(rng.uniform(0.0, 500.0, 80))
    scale = params[..., 1].sum(-1).max()
    total = kepler.radial_velocity(t, params, t_ref=100.0, precision=precision).astype(float)
    parts = sum(kepler.radial_velocity(t, params[:, [j]], t_ref=100.0, precision=precision)
                .astype(float) for j in range(3))
    np.testing.assert_allclose(total, parts, rtol=0, atol=tol * scale)
    shifted = params.copy()
    shifted[..., 3] += 2 * np.pi
    shifted[..., 4] -= 4 * np.pi
    again = kepler.radial_velocity(t, shifted, t_ref=100.0, precision=precision).astype(float)
    np.testing.assert_allclose(again, total, rtol=0, atol=tol * scale)
    # the order of the planets does not matter
    swapped = kepler.radial_velocity(t, params[:, ::-1], t_ref=100.0, precision=precision)
    np.testing.assert_allclose(swapped.astype(float), total, rtol=0, atol=tol * scale)


# --------------------------------------------- 3. range reduction, precision
@pytest.mark.parametrize("phase", MIXED_PHASES)
@pytest.mark.parametrize("epoch", ["zero", "mid"])
def test_bjd_times_mixed_precision(phase, epoch):
    """BJD-like times (2.46e6) keep the mixed-precision velocities within
    2.5e-4 K of fp64 whether t_ref is 0 or mid-span (measured ~3e-7)."""
    rng = np.random.default_rng(15)
    t = 2.46e6 + np.sort(rng.uniform(0.0, 3000.0, 200))
    t_ref = 0.0 if epoch == "zero" else 0.5 * (t[0] + t[-1])
    params = random_planets(rng, 8, 2, e_max=0.9, period=(0.5, 500.0))
    obs = Observations.build(t, np.zeros_like(t), np.ones_like(t), None, t_ref)
    exact = ModelEvaluator(obs, n_planets=2, precision="fp64", layout="split").velocities(params)
    mixed = ModelEvaluator(obs, n_planets=2, precision="mixed", phase_arithmetic=phase,
                           layout="split")
    assert mixed.plan.phase == ("double" if phase == "double" else "ds")
    assert velocity_error(mixed.velocities(params), exact, params) <= 2.5e-4
    # the same data through chi2: the phase arithmetic reaches the statistic
    v = exact[0] + rng.normal(0, 1, t.size)
    sigma = np.ones_like(t)
    want = kepler.chi2(t, v, sigma, params, t_ref=t_ref, precision="fp64")
    got = kepler.chi2(t, v, sigma, params, t_ref=t_ref, precision="mixed", phase_arithmetic=phase)
    assert abs(got[0] / want[0] - 1) <= 1e-5  # chi^2 per point ~ 1 for model 0
    np.testing.assert_allclose(got, want, rtol=1e-4)


def test_fp32_phase_limited_by_the_span_of_the_data():
    """Ford (2009): the orbital phase needs more than single precision. The
    kernels form it from ``t - t_origin`` (``t_ref``, or the middle of the
    data when ``t_ref`` lies outside it), so fp32 is limited by the span of
    the data over P, whatever ``t_ref``: BJD times over 100 d miss by ~2e-5 K
    (t_ref = 0 or inside), over 2e4 d by ~4e-3 K; mixed stays at ~2e-7 K."""
    rng = np.random.default_rng(16)
    params = np.array([[[1.0123456, 10.0, 0.3, 1.0, 2.0]]])
    for span, low, high in ((100.0, 0.0, 1e-4), (2e4, 1e-3, np.inf)):
        t = 2.46e6 + np.sort(rng.uniform(0.0, span, 200))
        obs = Observations.build(t, np.zeros_like(t), np.ones_like(t))
        for t_ref in (0.0, t.mean()):
            exact = kepler.radial_velocity(t, params, t_ref=t_ref, precision="fp64")
            fp32 = kepler.radial_velocity(t, params, t_ref=t_ref, precision="fp32")
            assert low <= velocity_error(fp32, exact, params) <= high, (span, t_ref)
        exact = kepler.radial_velocity(t, params, precision="fp64")
        for phase in MIXED_PHASES:
            mixed = ModelEvaluator(obs, n_planets=1, precision="mixed", phase_arithmetic=phase,
                                   layout="split").velocities(params)
            assert velocity_error(mixed, exact, params) <= 2.5e-4


# ------------------------------- 3b. barycentric times with the default t_ref
def bjd_orbits(rng, basis, n_models=8, n_planets=2, period=(0.3, 1000.0), span=3000.0,
               n_obs=50):
    """Times 2.45e6 + [0, span] d and ``(n_models, n_planets, 5)`` planets in
    ``basis``, with the exact time of periastron ``tp`` (within the data) of
    each: the ``m0`` (about t_ref = 0) and ``tc`` epochs are computed from it
    in mpmath and rounded once."""
    import mpmath

    t = 2.45e6 + np.sort(rng.uniform(0.0, span, n_obs))
    shape = (n_models, n_planets)
    per = np.exp(rng.uniform(math.log(period[0]), math.log(period[1]), shape))
    k, e = rng.uniform(1.0, 100.0, shape), rng.uniform(0.0, 0.9, shape)
    w, tp = rng.uniform(-np.pi, np.pi, shape), 2.45e6 + rng.uniform(0.0, span, shape)
    ecc_form, time_form = orbits.check_basis(basis)
    tau = tp.copy()
    with mpmath.workdps(50):
        for index in np.ndindex(shape):
            P, T = mpmath.mpf(float(per[index])), mpmath.mpf(float(tp[index]))
            if time_form == "m0":
                turns = -T / P
                tau[index] = float(2 * mpmath.pi * (turns - mpmath.floor(turns)))
            elif time_form == "tc":
                f_c = mpmath.pi / 2 - mpmath.mpf(float(w[index]))
                ecc = mpmath.mpf(float(e[index]))
                big_e = 2 * mpmath.atan(mpmath.tan(f_c / 2) * mpmath.sqrt((1 - ecc) / (1 + ecc)))
                tau[index] = float(T + P / (2 * mpmath.pi) * (big_e - ecc * mpmath.sin(big_e)))
    a, b = (e, w) if ecc_form == "e_w" else (np.sqrt(e) * np.cos(w), np.sqrt(e) * np.sin(w))
    params = np.stack([per, k, a, b, tau], axis=-1)
    return t, params, dict(per=per, k=k, e=e, w=w, tp=tp)


def radvel_velocities(t, params, orbit, basis):
    """radvel's model of the same planets: ``tp`` as given (``tp``, ``m0``) or
    converted by radvel from ``tc``."""
    v = np.zeros((params.shape[0], t.size))
    for i, j in np.ndindex(params.shape[:2]):
        per, k, e, w, tp = (orbit[name][i, j] for name in ("per", "k", "e", "w", "tp"))
        if basis.endswith("tc"):
            tp = float(RADVEL.timetrans_to_timeperi(params[i, j, 4], per, e, w))
        v[i] += RADVEL.rv_drive_array(t, per, tp, e, w, k)
    return v


@pytest.mark.slow
@pytest.mark.parametrize("basis", orbits.BASES)
def test_bjd_times_default_t_ref_match_extended_precision(basis):
    """BJD times with the default t_ref = 0 (issue 19): in fp64 the velocities
    agree with the documented model evaluated in mpmath to 1e-9 K (measured
    4e-12 of the summed K, with periods down to 0.3 d), and chi2
    accordingly; in every basis."""
    rng = np.random.default_rng(90)
    t, params, _ = bjd_orbits(rng, basis)
    want = mp_ref.radial_velocity(t, params, basis)
    scale = params[..., 1].sum(-1)[:, None]
    for layout in ("split", "fused"):
        got = ModelEvaluator(Observations.build(t, np.zeros_like(t), np.ones_like(t)),
                             n_planets=2, basis=basis, precision="fp64",
                             layout=layout).velocities(params)
        assert np.abs(got - want).max() <= 1e-9 * scale.min(), layout
    got = kepler.radial_velocity(t, params, basis=basis, precision="fp64")
    assert (np.abs(got - want) <= 1e-9 * scale).all()
    # chi2: residuals of order sigma, so a model error of 1e-9 K moves each
    # term by at most 2 |r| 1e-9 K / sigma^2
    sigma = rng.uniform(0.5, 2.0, t.size)
    v = want[0] + rng.normal(0.0, 1.0, t.size) * sigma
    r = v - want
    chi2_want = np.array([math.fsum(row) for row in (r / sigma) ** 2])
    bound = 2e-9 * scale[:, 0] * (np.abs(r) / sigma**2).sum(-1) + 1e-13 * chi2_want
    for layout in ("split", "fused"):
        got = kepler.chi2(t, v, sigma, params, basis=basis, precision="fp64", layout=layout)
        assert (np.abs(got - chi2_want) <= bound).all(), (layout, got - chi2_want, bound)


@pytest.mark.slow
@needs_radvel
@pytest.mark.parametrize("basis", orbits.BASES)
def test_bjd_times_default_t_ref_match_radvel(basis):
    """fp64 with t_ref = 0 agrees with radvel's ``rv_drive`` to 1e-10 K beyond
    radvel's own distance from the exact model (measured 4e-12 of the summed
    K). radvel is exact here for tp and m0 (its tp is given exactly), not for
    tc, where it rounds tp = tc - P M_c / 2 pi to a float64 of ~2.45e6 (up to
    4e-9 K off at P = 0.3 d)."""
    rng = np.random.default_rng(91)
    t, params, orbit = bjd_orbits(rng, basis)
    radvel = radvel_velocities(t, params, orbit, basis)
    exact = mp_ref.radial_velocity(t, params, basis)
    got = kepler.radial_velocity(t, params, basis=basis, precision="fp64")
    scale = params[..., 1].sum(-1)[:, None]
    assert (np.abs(got - radvel) <= 1e-10 * scale + np.abs(radvel - exact)).all()
    if not basis.endswith("tc"):
        assert np.abs(got - radvel).max() <= 1e-10 * scale.min()


@pytest.mark.parametrize("basis", orbits.BASES)
@pytest.mark.parametrize("precision, phase, bound", [
    ("mixed", "double", 2.5e-4), ("mixed", "double_single", 2.5e-4), ("fp32", "auto", 1e-3)])
@pytest.mark.slow
def test_bjd_times_default_t_ref_other_precisions(basis, precision, phase, bound):
    """The same with t_ref = 0 in mixed precision (double and double-single
    phases; measured 3e-7 K) and fp32 (whose phase error grows with the
    data's span over P: 100 days, P >= 2 d, measured 1.2e-5 K), ``tc``
    included (the host forms the double-single and fp32 phases in float64)."""
    rng = np.random.default_rng(92)
    span, period = (3000.0, (0.3, 1000.0)) if precision == "mixed" else (100.0, (2.0, 1000.0))
    t, params, _ = bjd_orbits(rng, basis, span=span, period=period)
    want = mp_ref.radial_velocity(t, params, basis)
    obs = Observations.build(t, np.zeros_like(t), np.ones_like(t))
    got = ModelEvaluator(obs, n_planets=2, basis=basis, precision=precision,
                         phase_arithmetic=phase, layout="split").velocities(params)
    assert velocity_error(got, want, params) <= bound


@pytest.mark.slow
@pytest.mark.parametrize("basis", orbits.BASES)
def test_fp32_phase_formed_on_the_device_matches_host_coefficients(monkeypatch, basis):
    """fp32 on a device with fp64 forms each planet's 1/P and phase at the
    origin in double in the kernel, without host coefficients; a device
    without fp64 (or ``phase_arithmetic="host"``) gets them from the host in
    float64. Both round the same float64 values to float32, so with BJD times
    and t_ref = 0 the velocities agree within fp32 rounding of the rest of the
    setup (measured 4e-7 of K; chi^2 5e-6), both 2e-5 of K from mpmath."""
    rng = np.random.default_rng(98)
    t, params, _ = bjd_orbits(rng, basis, span=100.0, period=(2.0, 1000.0))
    sigma = rng.uniform(0.5, 2.0, t.size)
    v = mp_ref.radial_velocity(t, params[:1], basis)[0] + rng.normal(0, 1, t.size) * sigma
    obs = Observations.build(t, v, sigma)
    info = select_devices(None)[0]
    assert info.fp64  # PoCL and the GPUs this runs on
    host_paths = [dict(device=replace(info, fp64=False)), dict(phase_arithmetic="host")]
    host = [ModelEvaluator(obs, n_planets=2, basis=basis, precision="fp32", trend=1, **kw)
            for kw in host_paths]
    assert [ev.plan.phase for ev in host] == ["float", "float"]
    monkeypatch.setattr(rvmodel, "_phase_coefficients", None)  # the device path needs none
    device = ModelEvaluator(obs, n_planets=2, basis=basis, precision="fp32", trend=1)
    assert device.plan.phase == "float_device"
    want = mp_ref.radial_velocity(t, params, basis)
    got = device.velocities(params)
    assert velocity_error(got, want, params) <= 1e-3
    trend = np.tile([[1e-6, 0.0]], (params.shape[0], 1))  # 2.45 m/s at t about t_ref = 0
    chi2 = device(params, trend=trend)["statistic"]
    monkeypatch.undo()
    for ev in host:
        assert velocity_error(ev.velocities(params), got, params) <= 1.5e-6
        np.testing.assert_allclose(ev(params, trend=trend)["statistic"], chi2, rtol=3e-5)


@pytest.mark.parametrize("basis", ["per k e w tc", "per k secosw sesinw m0"])
def test_page_locked_params_upload_directly(monkeypatch, basis):
    """Parameters in kepler.empty_params reach the kernels without a host
    copy in every basis (tc too: the kernels read it directly) and give the
    results of an ordinary array."""
    rng = np.random.default_rng(95)
    t, params, _ = bjd_orbits(rng, basis, n_models=4)
    sigma = np.ones_like(t)
    v = mp_ref.radial_velocity(t, params[:1], basis)[0] + rng.normal(0, 1, t.size)
    want = kepler.chi2(t, v, sigma, params, basis=basis, precision="fp64")
    staged = []
    original = rvmodel.ModelEvaluator._stage_params
    monkeypatch.setattr(rvmodel.ModelEvaluator, "_stage_params",
                        lambda self, *args: staged.append(1) or original(self, *args))
    pinned = kepler.empty_params(4, 2)
    pinned[...] = params
    np.testing.assert_array_equal(kepler.chi2(t, v, sigma, pinned, basis=basis,
                                              precision="fp64"), want)
    assert not staged
    kepler.chi2(t, v, sigma, params, basis=basis, precision="fp64")
    assert staged


@pytest.mark.parametrize("statistic", ["chi2", "profile"])
def test_results_copy_straight_into_page_locked_arrays(monkeypatch, statistic):
    """Where the kernels write float64 (any precision on a device with fp64),
    the device copies the results straight into the page-locked arrays it
    returns, with no host copy; the float32 values of precision="mixed" come
    back exactly. Pageable ``out`` arrays, and float32 results (double-single
    phases), go through page-locked staging and give the same numbers."""
    from clperiod.engine.staging import PINNED_POOL

    rng = np.random.default_rng(96)
    pb = rv_problem(rng, n_models=700, n_obs=40)
    monkeypatch.setattr(rvmodel, "BATCH_MODELS", 256)  # several batches per call
    obs = Observations.build(pb["t"], pb["v"], pb["sigma"], pb["labels"], pb["t_ref"])
    params = kepler.empty_params(700, 2)  # page-locked: no parameter staging either
    params[...] = pb["params"]
    copies = []
    original = rvmodel.parallel_copy
    monkeypatch.setattr(rvmodel, "parallel_copy",
                        lambda dest, src: copies.append(dest.shape) or original(dest, src))

    def run(phase, out=None):
        evaluator = ModelEvaluator(obs, n_planets=2, statistic=statistic, precision="mixed",
                                   phase_arithmetic=phase, offsets=statistic == "chi2")
        offsets = pb["offsets"] if statistic == "chi2" else None
        return evaluator, evaluator(params, offsets, out=out)

    evaluator, direct = run("double")
    assert evaluator.result_dtype == np.float64 and copies == []
    assert all(PINNED_POOL.owns(a, evaluator.info) for a in direct.values())
    floats = {name: a for name, a in direct.items() if name != "status"}
    assert all(np.isfinite(a).all() for a in floats.values())
    for name, a in floats.items():
        if name == "offsets":  # the host adds each instrument's mean velocity
            continue
        np.testing.assert_array_equal(a.astype(np.float32).astype(np.float64), a, err_msg=name)
    pageable = {name: np.full_like(a, -1) for name, a in direct.items()}
    _, staged = run("double", out=pageable)
    assert len(copies) == len(direct) and all(staged[k] is pageable[k] for k in direct)
    for name in direct:
        np.testing.assert_array_equal(staged[name], direct[name], err_msg=name)
    copies.clear()
    evaluator, ds = run("double_single")
    result_copies = [shape for shape in copies if shape[0] == 700]  # not parameter staging
    assert evaluator.result_dtype == np.float32 and len(result_copies) == len(direct)
    assert all(ds[name].dtype == direct[name].dtype for name in direct)
    np.testing.assert_allclose(ds["statistic"], direct["statistic"], rtol=1e-5)


@pytest.mark.parametrize("precision, phase, bound", [
    ("fp64", "auto", 1e-12), ("mixed", "double", 2.5e-4), ("mixed", "double_single", 2.5e-4),
    ("fp32", "auto", 2.5e-4)])
def test_mean_anomaly_at_t_ref_of_any_size(precision, phase, bound):
    """M0 is reduced modulo 2 pi at rounding level whatever its size, up to
    the largest float64 (fp64 measured 1e-15 K; M0 / 2 pi in float64 was
    off by a whole turn at 1e20)."""
    rng = np.random.default_rng(93)
    t = np.sort(rng.uniform(0.0, 100.0, 40))
    m0 = np.array([3.0, -7e5, 3.3e7, 1e16, -1e20, 1e100, -1.7e308, 6381956970095103 * 2.0**797])
    params = np.zeros((m0.size, 1, 5))
    params[:, 0] = [7.3, 10.0, 0.4, 1.0, 0.0]
    params[:, 0, 4] = m0
    want = mp_ref.radial_velocity(t, params, t_ref=50.0)
    obs = Observations.build(t, np.zeros_like(t), np.ones_like(t), None, 50.0)
    evaluator = ModelEvaluator(obs, n_planets=1, precision=precision, phase_arithmetic=phase)
    got = evaluator.velocities(params)
    assert velocity_error(got, want, params) <= bound
    out = evaluator(params)
    assert (out["status"] == ModelStatus.OK).all()


@pytest.mark.parametrize("precision, phase, rtol", [
    ("fp64", "auto", 1e-10), ("mixed", "double", 1e-5), ("mixed", "double_single", 1e-5),
    ("fp32", "auto", 1e-4)])
@pytest.mark.parametrize("layout", ["fused", "split"])
def test_trend_about_t_ref_outside_the_data(precision, phase, rtol, layout):
    """With t_ref before the data the device times start from the middle of
    the data, and the trend is still dvdt (t - t_ref) + curv (t - t_ref)^2."""
    rng = np.random.default_rng(94)
    pb = rv_problem(rng, n_obs=120, span=60.0, period=(2.0, 40.0))
    pb["t"] = pb["t"] + 2.45e6
    pb["t_ref"] = pb["t"][0] - 30.0
    pb["v"] = ref.radial_velocity(pb["t"], pb["params"][:1], pb["t_ref"], pb["offsets"][:1],
                                  pb["codes"], pb["trend"][:1])[0] + rng.normal(0, 2, 120)
    obs = Observations.build(pb["t"], pb["v"], pb["sigma"], pb["labels"], pb["t_ref"])
    assert obs.t_origin == pytest.approx(pb["t"].mean(), abs=30.0)
    for name in ("chi2", "loglike"):
        got = device_statistic(name, pb, precision=precision, phase_arithmetic=phase,
                               layout=layout)
        np.testing.assert_allclose(got, reference_statistic(name, pb), rtol=rtol, err_msg=name)


def coefficient_rows(rng, basis, t_origin):
    """Planets in ``basis`` for the host phase coefficients: ordinary ones
    with epochs near ``t_origin``, and among them the cases that take the
    exact paths (2**26 periods and more from t_ref, M0 beyond 2**25, epochs of
    any size and sign), circular orbits and non-finite epochs."""
    ecc_form, time_form = orbits.check_basis(basis)
    n = 48
    per = 10.0 ** rng.uniform(-1, 4, n)
    e, w = rng.uniform(0.0, 0.95, n), rng.uniform(-np.pi, np.pi, n)
    tau = (rng.uniform(-10, 10, n) if time_form == "m0"
           else t_origin + rng.uniform(-3000, 3000, n))
    per[[3, 17]] = 1e-3, 2.9e-8
    e[5] = 0.0
    tau[[7, 29]] = ((3.3e7, -1.7e308) if time_form == "m0" else (0.0, -1e7))
    tau[[11, 40]] = (1e20, 6381956970095103 * 2.0**797) if time_form == "m0" else (1e300, 5.0)
    a, b = (e, w) if ecc_form == "e_w" else (np.sqrt(e) * np.cos(w), np.sqrt(e) * np.sin(w))
    rows = np.stack([per, rng.uniform(1, 10, n), a, b, tau], axis=-1)
    rows[20, 4], rows[21, 4] = np.nan, -np.inf
    return rows


@pytest.mark.parametrize("basis", orbits.BASES)
def test_host_phase_coefficients_match_extended_precision(monkeypatch, basis):
    """The float64 phase at the origin that the double-single and fp32
    kernels read is within 4e-16 turns of the documented model in mpmath
    (NaN for a non-finite epoch, which the kernels flag), with t_ref inside
    and far outside the data, and whichever rows of a block need the exact
    reductions; the float32 pairs are that phase and 1 / P rounded twice, and
    fp32 gets the same high parts (its low parts are left alone)."""
    rng = np.random.default_rng(96)
    ecc_form, time_form = orbits.check_basis(basis)
    monkeypatch.setattr(rvmodel, "_COEFF_BLOCK", 16)  # ordinary and exact rows share blocks
    for t_origin, t_ref in ((2457010.0, 2457010.0), (2457010.0, 0.0)):
        rows = coefficient_rows(rng, basis, t_origin)
        finite = np.isfinite(rows[:, 4])
        want = np.array([mp_ref.phase_at_origin(row, basis, t_origin, t_ref) if ok else np.nan
                         for row, ok in zip(rows, finite)])
        got = rvmodel._phase_at_origin(rows[:, 0].copy(), rows[:, 2], rows[:, 3],
                                       rows[:, 4].copy(), ecc_form, time_form, t_origin, t_ref)
        error = got - want
        error -= np.rint(error)
        assert np.abs(error[finite]).max() <= 4e-16, (t_ref, np.argmax(np.abs(error)))
        assert np.isnan(got[~finite]).all()
        pairs, highs = np.full((2, rows.shape[0], 4), 7.0, np.float32)
        rvmodel._phase_coefficients(pairs, rows, ecc_form, time_form, t_origin, t_ref)
        rvmodel._phase_coefficients(highs, rows, ecc_form, time_form, t_origin, t_ref,
                                    low_parts=False)
        for column, value in ((0, 1.0 / rows[:, 0]), (2, got)):
            hi = value.astype(np.float32)
            np.testing.assert_array_equal(pairs[:, column], hi)
            np.testing.assert_array_equal(pairs[finite, column + 1],
                                          (value - hi)[finite].astype(np.float32))
            np.testing.assert_array_equal(highs[:, column], hi)
            assert (highs[:, column + 1] == 7.0).all()


def test_host_phase_coefficients_work_in_cache_sized_blocks():
    """The host coefficients of a batch (fp32 and double-single phases) run
    over blocks whose float64 temporaries stay in cache: a few bytes of
    temporary memory per row, not a hundred (a full-size array per step)."""
    import tracemalloc

    rng = np.random.default_rng(97)
    n = 1 << 17
    rows = np.stack([10.0 ** rng.uniform(-1, 4, n), np.ones(n), rng.uniform(0, 0.9, n),
                     rng.uniform(-3, 3, n), 2457000.0 + rng.uniform(0, 100, n)], axis=-1)
    out = np.empty((n, 4), np.float32)
    for basis in ("per k e w m0", "per k e w tp", "per k secosw sesinw tc"):
        ecc_form, time_form = orbits.check_basis(basis)
        tracemalloc.start()
        try:
            rvmodel._phase_coefficients(out, rows, ecc_form, time_form, 2457050.0, 0.0)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak <= 16 * n, (basis, peak / n)


# ------------------------------------------------- 4. chi2 and loglike matrix
@pytest.mark.parametrize("memory", ["constant", "local", "global"])
@pytest.mark.parametrize("layout", ["fused", "split"])
@pytest.mark.parametrize("precision", ["fp64", "mixed", "fp32"])
def test_statistics_match_reference(precision, layout, memory):
    rng = np.random.default_rng(17)
    if precision == "fp32":
        # single precision only over a short span about t_ref (see the test above)
        pb = rv_problem(rng, n_obs=120, span=60.0, period=(2.0, 40.0))
        rtol = 1e-4  # measured ~2e-6
    else:
        pb = rv_problem(rng, n_obs=200, span=600.0)
        rtol = 1e-10 if precision == "fp64" else 1e-5  # measured 1e-14 / 1e-7
    chi2_ref = reference_statistic("chi2", pb)
    assert np.all(chi2_ref / pb["t"].size < 10)  # realistic fits
    kw = dict(precision=precision, layout=layout, memory=memory)
    for name, want in (("chi2", chi2_ref), ("loglike", reference_statistic("loglike", pb))):
        got = device_statistic(name, pb, **kw)
        assert got.dtype == np.float64 and got.shape == (len(pb["params"]),)
        np.testing.assert_allclose(got, want, rtol=rtol, err_msg=name)


@pytest.mark.parametrize("method", ["danby", "markley"])
@pytest.mark.parametrize("precision, rtol", [("fp64", 1e-10), ("mixed", 1e-5)])
def test_statistics_with_either_kepler_solver(precision, rtol, method):
    rng = np.random.default_rng(29)
    pb = rv_problem(rng, n_obs=150, span=500.0, e_max=0.95)
    for name in ("chi2", "loglike"):
        got = device_statistic(name, pb, precision=precision, kepler_method=method)
        np.testing.assert_allclose(got, reference_statistic(name, pb), rtol=rtol, err_msg=name)
    with pytest.raises(ValueError, match="kepler_method"):
        device_statistic("chi2", pb, precision=precision, kepler_method="newton")


def test_statistics_dict_and_broadcast_arguments():
    """Offsets and jitter as {label: value}, shared by every model; a trend
    of degree 1 given as (dvdt, 0)."""
    rng = np.random.default_rng(18)
    pb = rv_problem(rng, n_obs=90)
    n = len(pb["params"])
    offsets, jitter = pb["offsets"][0], pb["jitter"][0]
    trend = np.array([pb["trend"][0, 0], 0.0])
    want = ref.loglike(pb["t"], pb["v"], pb["sigma"], pb["params"], pb["t_ref"],
                       np.tile(offsets, (n, 1)), pb["codes"], np.tile(trend, (n, 1)),
                       np.tile(jitter, (n, 1)))
    got = kepler.loglike(pb["t"], pb["v"], pb["sigma"], pb["params"], t_ref=pb["t_ref"],
                         instrument=pb["labels"], precision="fp64",
                         offsets=dict(zip(SORTED, offsets)), jitter=dict(zip(SORTED, jitter)),
                         trend=trend)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    # without offsets, jitter or trend; a single model without batch axes -> 0-d
    want = ref.chi2(pb["t"], pb["v"], pb["sigma"], pb["params"][:1], pb["t_ref"])
    got = kepler.chi2(pb["t"], pb["v"], pb["sigma"], pb["params"][0], t_ref=pb["t_ref"],
                      precision="fp64")
    assert got.shape == ()
    np.testing.assert_allclose(got, want[0], rtol=1e-10)


# ------------------------------------------------------ 5. Kahan summation
@pytest.mark.parametrize("layout", ["fused", "split"])
def test_kahan_sum_over_many_observations(layout):
    rng = np.random.default_rng(19)
    n, t_ref = 50_000, 1500.0
    t = np.sort(rng.uniform(0.0, 3000.0, n))
    params = np.array([[[12.3, 20.0, 0.3, 1.0, 2.0], [301.0, 8.0, 0.1, -2.0, 0.5]]])
    sigma = rng.uniform(1.0, 3.0, n)
    model = ref.radial_velocity(t, params, t_ref)[0]
    v = model + rng.normal(0.0, 1.0, n) * sigma
    terms = ((v - model) / sigma) ** 2
    exact = math.fsum(terms)
    # Naive sequential float32 summation of the same terms misses by ~6e-6
    # (measured 6.0e-6 here), Kahan-compensated float32 by ~4e-8.
    naive = np.cumsum(terms.astype(np.float32), dtype=np.float32)[-1]
    assert abs(float(naive) / exact - 1) > 1e-6  # the bound below does discriminate
    got = kepler.chi2(t, v, sigma, params, t_ref=t_ref, precision="mixed", layout=layout)
    assert abs(got[0] / exact - 1) <= 1e-6
    log_terms = terms + np.log(2 * np.pi * sigma**2)
    got = kepler.loglike(t, v, sigma, params, t_ref=t_ref, precision="mixed", layout=layout)
    assert abs(got[0] / (-0.5 * math.fsum(log_terms)) - 1) <= 1e-6


# ---------------------------------------------------- 6. profile statistic
@pytest.mark.parametrize("layout", ["fused", "split"])
@pytest.mark.parametrize("precision", ["fp64", "mixed"])
def test_profile_matches_reference(precision, layout):
    rng = np.random.default_rng(20)
    n_obs, n, t_ref = 150, 40, 200.0
    t = np.sort(rng.uniform(0.0, 400.0, n_obs))
    labels, codes = instruments(n_obs)
    known = np.array([17.0, 12.0, 0.2, 0.5, 1.0])
    truth = np.array([63.0, 7.0, 0.4, 2.0, 3.0])
    trend = np.array([0.01, -2e-5])
    sigma = rng.uniform(1.0, 3.0, n_obs)
    v = (ref.radial_velocity(t, np.array([[known, truth]]), t_ref, [[3.0, -20.0, 50.0]], codes,
                             [trend])[0] + rng.normal(0, 1, n_obs) * sigma)
    trial = np.stack([np.exp(rng.uniform(math.log(2), math.log(200), n)), np.ones(n),
                      rng.uniform(0, 0.9, n), rng.uniform(0, 2 * np.pi, n),
                      rng.uniform(0, 2 * np.pi, n)], axis=-1)
    trial[0] = truth
    params = np.concatenate([np.broadcast_to(known, (n, 1, 5)), trial[:, None]], axis=1)
    jitter = np.tile([1.0, 0.5, 2.0], (n, 1))
    fixed = ref.radial_velocity(t, params[:, :1], t_ref, trend=np.tile(trend, (n, 1)))
    chi2_ref, k_ref, gamma_ref = ref.profile_last_planet(
        t, v, sigma, codes, trial[:, [0, 2, 3, 4]], t_ref, known=fixed, jitter=jitter)
    obs = Observations.build(t, v, sigma, labels, t_ref)
    evaluator = ModelEvaluator(obs, n_planets=2, statistic="profile", jitter=True, trend=2,
                               precision=precision, layout=layout)
    out = evaluator(params, None, jitter, np.tile(trend, (n, 1)))
    assert (out["status"] == ModelStatus.OK).all()
    assert out["offsets"].shape == (n, 3)
    if precision == "fp64":
        np.testing.assert_allclose(out["statistic"], chi2_ref, rtol=1e-10)
        np.testing.assert_allclose(out["k"], k_ref, rtol=0, atol=1e-9 * np.abs(k_ref).max())
        np.testing.assert_allclose(out["offsets"], gamma_ref, rtol=0, atol=1e-9 * 50)
    else:  # measured: chi2 1.2e-6 relative, K and offsets 1e-6 m/s
        np.testing.assert_allclose(out["statistic"], chi2_ref, rtol=1e-4)
        np.testing.assert_allclose(out["k"], k_ref, rtol=0, atol=1e-4 * np.abs(k_ref).max())
        np.testing.assert_allclose(out["offsets"], gamma_ref, rtol=0, atol=1e-4 * 50)
    # the true orbit recovers the true K and offsets
    assert out["k"][0] == pytest.approx(7.0, abs=0.5)
    np.testing.assert_allclose(out["offsets"][0], [3.0, -20.0, 50.0], atol=1.0)


@pytest.mark.slow
def test_profile_velocities_do_not_corrupt_memory():
    """ModelEvaluator.velocities on a "profile" evaluator: run in a child
    process because it has crashed the interpreter (out-of-bounds writes)."""
    code = textwrap.dedent("""
        import numpy as np
        from clperiod.kepler.rvmodel import ModelEvaluator, Observations
        rng = np.random.default_rng(0)
        t = np.sort(rng.uniform(0, 200, 50))
        obs = Observations.build(t, rng.normal(0, 10, 50), np.ones(50))
        p = np.tile([[[10.0, 5.0, 0.3, 1.0, 2.0]]], (1000, 1, 1))
        want = ModelEvaluator(obs, n_planets=1, precision="fp64").velocities(p)
        ev = ModelEvaluator(obs, n_planets=1, statistic="profile", precision="fp64")
        try:
            got = ev.velocities(p)
        except ValueError:
            print("refused")
        else:
            print("max error", np.abs(got - want).max())
            assert np.allclose(got, want, atol=1e-9)
    """)
    root = Path(kepler.__file__).resolve().parents[2]
    path = os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=root, env=env)
    assert run.returncode == 0, (run.returncode, run.stdout, run.stderr[-2000:])


# ----------------------------------------------------- 7. batch invariance
@pytest.mark.parametrize("layout", ["fused", "split"])
@pytest.mark.parametrize("precision", ["fp64", "mixed"])
def test_batch_size_invariance(precision, layout):
    rng = np.random.default_rng(21)
    pb = rv_problem(rng, n_models=1025, n_obs=40)
    results = {}
    for m in (1, 1023, 1024, 1025):
        sub = dict(pb, **{key: pb[key][:m] for key in ("params", "offsets", "jitter", "trend")})
        results[m] = device_statistic("loglike", sub, precision=precision, layout=layout)
        assert results[m].shape == (m,)
    for m in (1, 1023, 1024):
        np.testing.assert_array_equal(results[m], results[1025][:m])
    assert np.isfinite(results[1025]).all()


@pytest.mark.parametrize("precision, phase", [("fp64", "auto"), ("mixed", "double"),
                                              ("mixed", "double_single")])
def test_batched_launches_equal_one_launch(monkeypatch, precision, phase):
    rng = np.random.default_rng(22)
    pb = rv_problem(rng, n_models=1025, n_obs=40)
    kw = dict(precision=precision, phase_arithmetic=phase)
    obs = Observations.build(pb["t"], pb["v"], pb["sigma"], pb["labels"], pb["t_ref"])

    def run_all():
        out = {}
        for layout in ("fused", "split"):
            out[layout] = device_statistic("loglike", pb, layout=layout, **kw)
            profile = ModelEvaluator(obs, n_planets=2, statistic="profile", jitter=True, trend=2,
                                     layout=layout, **kw)
            prof = profile(pb["params"], None, pb["jitter"], pb["trend"])
            out[layout + "_profile"] = np.column_stack([prof["statistic"], prof["k"],
                                                        prof["offsets"]])
        out["velocities"] = ModelEvaluator(obs, n_planets=2, **kw).velocities(pb["params"])
        return out

    whole = run_all()
    monkeypatch.setattr(rvmodel, "BATCH_MODELS", 100)
    batched = run_all()
    for key in whole:
        np.testing.assert_array_equal(batched[key], whole[key], err_msg=key)
    # fused and split layouts agree to rounding
    rtol = 1e-12 if precision == "fp64" else 1e-6
    np.testing.assert_allclose(whole["fused"], whole["split"], rtol=rtol)
    np.testing.assert_allclose(whole["fused_profile"], whole["split_profile"], rtol=rtol,
                               atol=rtol * 100)


def test_threads_sharing_an_evaluator_get_their_own_results(monkeypatch):
    """Threads may share an evaluator: its calls take turns (they share its
    device buffers), each on the calling thread's queue and kernel objects."""
    rng = np.random.default_rng(23)
    pb = rv_problem(rng, n_models=1500, n_obs=40)
    monkeypatch.setattr(rvmodel, "BATCH_MODELS", 256)  # several batches per call
    obs = Observations.build(pb["t"], pb["v"], pb["sigma"], pb["labels"], pb["t_ref"])
    evaluator = ModelEvaluator(obs, n_planets=2, offsets=True, precision="fp64")
    parts = [slice(k * 300, (k + 1) * 300) for k in range(5)]
    alone = [evaluator(pb["params"][part], pb["offsets"][part])["statistic"] for part in parts]
    tools = []

    def call(part):
        tools.append((evaluator.queue, evaluator._kernels["rv_fused"]))
        return evaluator(pb["params"][part], pb["offsets"][part])["statistic"]

    with ThreadPoolExecutor(5) as pool:
        together = list(pool.map(call, parts * 4))
    for k, got in enumerate(together):
        np.testing.assert_array_equal(got, alone[k % 5])
    queues = {id(queue) for queue, _ in tools}
    assert len(queues) > 1 and len({id(kernel) for _, kernel in tools}) == len(queues)
    assert id(evaluator.queue) not in queues


# ---------------------------------------------------------- 8. bad input
def _data(n=20):
    rng = np.random.default_rng(23)
    return np.sort(rng.uniform(0, 100, n)), rng.normal(0, 5, n), np.ones(n)


GOOD = np.array([[10.0, 5.0, 0.2, 1.0, 1.0], [3.0, 2.0, 0.1, 0.0, 2.0]])


@pytest.mark.parametrize("function", [kepler.chi2, kepler.loglike])
def test_bad_observations_raise(function):
    t, v, s = _data()
    with pytest.raises(ValueError, match="differ in length"):
        function(t, v[:-1], s, GOOD)
    with pytest.raises(ValueError, match="differ in length"):
        function(t, v, s[:-1], GOOD)
    for bad in (np.nan, np.inf, -np.inf):
        for i in range(3):
            arrays = [t.copy(), v.copy(), s.copy()]
            arrays[i][3] = bad
            with pytest.raises(ValueError, match="non-finite"):
                function(*arrays, GOOD)
    for bad in (0.0, -1.0):
        s_bad = s.copy()
        s_bad[5] = bad
        with pytest.raises(ValueError, match="sigma must be positive"):
            function(t, v, s_bad, GOOD)
    with pytest.raises(TypeError, match="real numbers"):
        function(t.astype(str), v, s, GOOD)
    with pytest.raises(TypeError, match="real numbers"):
        function(t, v + 0j, s, GOOD)
    with pytest.raises(TypeError, match="real numbers"):
        function(t, v, s, GOOD.astype(complex))
    with pytest.raises(TypeError, match="real numbers"):
        function(t, v, s, [["a"] * 5])
    with pytest.raises(ValueError, match="no observations"):
        function([], [], [], GOOD)
    with pytest.raises(ValueError, match="one label per observation"):
        function(t, v, s, GOOD, instrument=["a"] * (t.size - 1))


def test_bad_model_arguments_raise():
    t, v, s = _data()
    labels = np.array(["b", "a"])[np.arange(t.size) % 2]
    for params in (GOOD[:, :4], np.zeros((3, 0, 5)), GOOD[0], np.zeros(5), np.zeros((2, 6))):
        with pytest.raises(ValueError, match="n_planets"):
            kepler.chi2(t, v, s, params)
        with pytest.raises(ValueError, match="n_planets"):
            kepler.radial_velocity(t, params)
    with pytest.raises(ValueError, match="unknown basis"):
        kepler.chi2(t, v, s, GOOD, basis="per k e w")
    with pytest.raises(ValueError, match="unknown basis"):
        kepler.radial_velocity(t, GOOD, basis="per k ecosw esinw tp")
    with pytest.raises(ValueError, match="precision"):
        kepler.chi2(t, v, s, GOOD, precision="fp16")
    with pytest.raises(ValueError, match="precision"):
        kepler.radial_velocity(t, GOOD, precision="double")
    with pytest.raises(ValueError, match="layout"):
        kepler.loglike(t, v, s, GOOD, layout="tiled")
    with pytest.raises(ValueError, match="memory"):
        kepler.loglike(t, v, s, GOOD, memory="texture")
    with pytest.raises(ValueError, match="phase_arithmetic"):
        kepler.chi2(t, v, s, GOOD, phase_arithmetic="quad")
    with pytest.raises(ValueError, match="phase_arithmetic"):
        kepler.chi2(t, v, s, GOOD, precision="fp64", phase_arithmetic="double")
    with pytest.raises(ValueError, match=r"unknown instruments \['c'\]"):
        kepler.chi2(t, v, s, GOOD, instrument=labels, offsets={"a": 1.0, "b": 2.0, "c": 3.0})
    with pytest.raises(ValueError, match=r"missing \['b'\]"):
        kepler.chi2(t, v, s, GOOD, instrument=labels, offsets={"a": 1.0})
    with pytest.raises(ValueError, match=r"missing \['a'\]"):
        kepler.loglike(t, v, s, GOOD, instrument=labels, jitter={"b": 1.0})
    with pytest.raises(ValueError, match="instruments"):
        kepler.chi2(t, v, s, GOOD, instrument=labels, offsets=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="trend"):
        kepler.chi2(t, v, s, GOOD, trend=[0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="statistic"):
        ModelEvaluator(Observations.build(t, v, s), n_planets=1, statistic="bic")
    with pytest.raises(ValueError, match="trend"):
        ModelEvaluator(Observations.build(t, v, s), n_planets=1, trend=3)


@pytest.mark.parametrize("memory", ["constant", "local"])
def test_observations_too_large_for_memory_raise(cpu_device, memory):
    # fp64: 24 bytes per observation (t, v, weight)
    limit = (cpu_device.device.max_constant_buffer_size if memory == "constant"
             else cpu_device.local_mem)
    n = limit // 24 + 1000  # PoCL: 2 MiB of each (88k observations); NVIDIA: 64/48 KiB
    t, v, s = np.arange(n, dtype=np.float64), np.zeros(n), np.ones(n)
    with pytest.raises(ValueError, match=f"memory='{memory}'.*do not fit"):
        kepler.chi2(t, v, s, GOOD, precision="fp64", memory=memory)
    # "auto" chooses memory that holds them and works
    obs = Observations.build(t, v, s)
    auto = ModelEvaluator(obs, n_planets=2, precision="fp64")
    assert auto.plan.memory != memory
    np.testing.assert_allclose(auto(GOOD[None])["statistic"], ref.chi2(t, v, s, GOOD[None]),
                               rtol=1e-10)


BAD_PARAMETERS = {
    "P=0": ((0, 0), 0.0),
    "P<0": ((0, 0), -1.0),
    "P=nan": ((0, 0), np.nan),
    "P=inf": ((1, 0), np.inf),
    "K=nan": ((0, 1), np.nan),
    "K=inf": ((0, 1), np.inf),
    "e<0": ((1, 2), -0.1),
    "e=1": ((0, 2), 1.0),
    "e>1": ((0, 2), 1.5),
    "e=nan": ((0, 2), np.nan),
    "w=inf": ((1, 3), np.inf),
    "M0=nan": ((0, 4), np.nan),
}


@pytest.mark.parametrize("case", list(BAD_PARAMETERS))
@pytest.mark.parametrize("precision, phase", [("fp64", "auto"), ("mixed", "double_single")])
def test_bad_parameters_flagged_per_model(case, precision, phase):
    t, v, s = _data(40)
    index, value = BAD_PARAMETERS[case]
    bad = GOOD.copy()
    bad[index] = value
    other = GOOD * [1.01, 0.9, 1.0, 1.0, 1.0]
    params = np.array([GOOD, bad, other, bad, GOOD])
    obs = Observations.build(t, v, s, None, 50.0)
    out = ModelEvaluator(obs, n_planets=2, precision=precision, phase_arithmetic=phase,
                         layout="split")(params)
    want = ref.chi2(t, v, s, params[[0, 2, 4]], 50.0)
    np.testing.assert_allclose(out["statistic"][[0, 2, 4]], want,
                               rtol=1e-10 if precision == "fp64" else 1e-5)
    assert np.isnan(out["statistic"][[1, 3]]).all()
    # the public functions give NaN rows and leave the good models alone
    for layout in ("fused", "split"):
        got = kepler.chi2(t, v, s, params, t_ref=50.0, precision=precision,
                          phase_arithmetic=phase, layout=layout)
        assert np.isnan(got[[1, 3]]).all()
        np.testing.assert_array_equal(got[[0, 2, 4]], out["statistic"][[0, 2, 4]])
    velocities = kepler.radial_velocity(t, params, t_ref=50.0)
    assert np.isnan(velocities[[1, 3]]).all() and np.isfinite(velocities[[0, 2, 4]]).all()
    # the documented status: BAD_PARAMETERS, not NOT_CONVERGED ("never seen")
    assert [ModelStatus(x).name for x in out["status"]] == [
        "OK", "BAD_PARAMETERS", "OK", "BAD_PARAMETERS", "OK"]


def test_bad_parameters_in_other_bases():
    t, v, s = _data(40)
    basis = "per k secosw sesinw tp"
    good = orbits.convert(GOOD, orbits.STANDARD, basis, t_ref=50.0)
    bad = good.copy()
    bad[0, 2:4] = 0.8, 0.7  # secosw^2 + sesinw^2 = 1.13 >= 1
    out = kepler.chi2(t, v, s, np.array([good, bad]), basis=basis, t_ref=50.0, precision="fp64")
    assert np.isnan(out[1])
    np.testing.assert_allclose(out[0], ref.chi2(t, v, s, GOOD[None], 50.0)[0], rtol=1e-10)


def test_empty_model_batches():
    t, v, s = _data()
    for shape in ((0, 2, 5), (3, 0, 1, 5)):
        empty = np.zeros(shape)
        assert kepler.chi2(t, v, s, empty).shape == shape[:-2]
        assert kepler.loglike(t, v, s, empty, jitter=1.0).shape == shape[:-2]
        assert kepler.radial_velocity(t, empty).shape == shape[:-2] + (t.size,)
    likelihood = RVLikelihood(t, v, s, n_planets=1)
    assert likelihood(np.zeros((0, likelihood.ndim))).shape == (0,)


# ------------------------------------------------------- 10. RVLikelihood
@pytest.mark.parametrize("trend", [0, 1, 2])
def test_rv_likelihood_vectorised(trend):
    rng = np.random.default_rng(24)
    pb = rv_problem(rng, n_models=7, n_obs=80)
    likelihood = RVLikelihood(pb["t"], pb["v"], pb["sigma"], n_planets=2, instrument=pb["labels"],
                              trend=trend, precision="fp64")
    words = ["per", "k", "e", "w", "m0"]
    assert likelihood.names == ([f"{w}{j}" for j in (1, 2) for w in words]
                                + [f"gamma_{i}" for i in SORTED] + [f"jit_{i}" for i in SORTED]
                                + ["dvdt", "curv"][:trend])
    assert likelihood.ndim == 10 + 6 + trend
    # default t_ref: middle of the data
    assert likelihood.observations.t_ref == pytest.approx(0.5 * (pb["t"][0] + pb["t"][-1]))
    t_ref = likelihood.observations.t_ref
    tr = np.zeros((7, 2))
    tr[:, :trend] = pb["trend"][:, :trend]
    theta = np.concatenate([pb["params"].reshape(7, 10), pb["offsets"], pb["jitter"],
                            tr[:, :trend]], axis=1)
    got = likelihood(theta)
    assert got.shape == (7,)
    want = kepler.loglike(pb["t"], pb["v"], pb["sigma"], pb["params"], t_ref=t_ref,
                          instrument=pb["labels"], offsets=pb["offsets"], jitter=pb["jitter"],
                          trend=tr if trend else None, precision="fp64")
    np.testing.assert_allclose(got, want, rtol=1e-12)
    ref_want = ref.loglike(pb["t"], pb["v"], pb["sigma"], pb["params"], t_ref, pb["offsets"],
                           pb["codes"], tr, pb["jitter"])
    np.testing.assert_allclose(got, ref_want, rtol=1e-10)
    # a single vector gives a float
    one = likelihood(theta[3])
    assert isinstance(one, float) and one == pytest.approx(got[3], rel=1e-12)
    # extra batch axes
    assert likelihood(theta[:6].reshape(2, 3, -1)).shape == (2, 3)
    # -inf for invalid parameters, the rest unchanged
    bad = np.repeat(theta[:1], 5, axis=0)
    bad[1, 0] = -3.0  # P < 0
    bad[2, 2] = 1.0  # e = 1
    bad[3, 7] = -0.2  # e < 0 (second planet)
    bad[4, 9] = np.inf  # M0 of the second planet
    lnl = likelihood(bad)
    assert lnl[0] == pytest.approx(got[0], rel=1e-12)
    assert list(np.isneginf(lnl)) == [False, True, True, True, True]
    assert likelihood(bad[1]) == -np.inf
    with pytest.raises(ValueError, match="theta must end"):
        likelihood(theta[:, :-1])


def test_rv_likelihood_non_finite_offsets_jitter_trend_give_minus_inf():
    """The docstring promises -inf for non-finite values in theta, not only
    for bad orbits: a NaN offset, jitter or trend must not come back as NaN
    (samplers treat NaN and -inf differently)."""
    rng = np.random.default_rng(27)
    pb = rv_problem(rng, n_models=1, n_obs=60)
    likelihood = RVLikelihood(pb["t"], pb["v"], pb["sigma"], n_planets=2, instrument=pb["labels"],
                              trend=2, precision="fp64")
    theta = np.concatenate([pb["params"].reshape(10), pb["offsets"][0], pb["jitter"][0],
                            pb["trend"][0]])
    good = likelihood(theta)
    assert np.isfinite(good)
    rows = np.repeat(theta[None], 6, axis=0)
    for row, (column, value) in enumerate([(10, np.nan), (12, np.inf), (13, np.nan),
                                           (15, -np.inf), (16, np.nan), (17, np.inf)]):
        rows[row, column] = value
    lnl = likelihood(rows)
    assert list(lnl) == [-np.inf] * 6, lnl


def test_rv_likelihood_without_offsets_or_jitter_and_mixed():
    rng = np.random.default_rng(25)
    pb = rv_problem(rng, n_models=5, n_obs=80)
    likelihood = RVLikelihood(pb["t"], pb["v"], pb["sigma"], n_planets=2, instrument=pb["labels"],
                              offsets=False, jitter=False, t_ref=pb["t_ref"])
    assert likelihood.ndim == 10 and likelihood.names[-1] == "m02"
    got = likelihood(pb["params"].reshape(5, 10))
    want = ref.loglike(pb["t"], pb["v"], pb["sigma"], pb["params"], pb["t_ref"])
    np.testing.assert_allclose(got, want, rtol=1e-5)  # default precision: mixed
    with pytest.raises(ValueError, match="n_planets"):
        RVLikelihood(pb["t"], pb["v"], pb["sigma"], n_planets=0)
    with pytest.raises(ValueError, match="trend"):
        RVLikelihood(pb["t"], pb["v"], pb["sigma"], n_planets=1, trend=3)


# ------------------------------------------------------------- 11. search
def test_search_synthetic_second_planet():
    rng = np.random.default_rng(26)
    n, t_ref = 100, 200.0
    t = np.sort(rng.uniform(0.0, 400.0, n))
    labels = np.where(rng.uniform(size=n) < 0.5, "hires", "apf")
    codes = (labels == "hires").astype(int)  # sorted: apf, hires
    known = np.array([7.3, 15.0, 0.1, 1.0, 2.0])
    new = np.array([47.0, 10.0, 0.25, -1.0, 4.0])
    sigma = rng.uniform(1.5, 3.0, n)
    v = (ref.radial_velocity(t, np.array([[known, new]]), t_ref, [[5.0, -12.0]], codes)[0]
         + rng.normal(0.0, 1.0, n) * sigma)
    result = kepler.search(t, v, sigma, instrument=labels, period=(20.0, 100.0),
                           eccentricity=(0.0, 0.5), known=[known], n_models=60_000, seed=1,
                           t_ref=t_ref, n_best=8)
    assert result.instruments == ("apf", "hires") and result.t_ref == t_ref
    assert result.params.shape == (8, 5) and result.offsets.shape == (8, 2)
    assert result.n_models == 60_000
    np.testing.assert_array_equal(result.known, [known])
    assert np.all(np.diff(result.chi2) >= 0)
    assert np.all(result.params[:, 1] >= 0)
    assert np.all((result.params[:, 3] >= 0) & (result.params[:, 3] < 2 * np.pi))
    best = result.best
    assert abs(best[0] / new[0] - 1) < 0.01
    assert abs(best[1] / new[1] - 1) < 0.2
    np.testing.assert_allclose(result.offsets[0], [5.0, -12.0], atol=1.5)
    # the reported chi^2 is that of the full model with the folded K >= 0
    full = ref.chi2(t, v, sigma, result.planets(0)[None], t_ref, result.offsets[:1], codes)
    assert result.chi2[0] == pytest.approx(full[0], rel=1e-4)
    assert result.chi2[0] < 1.5 * n


@pytest.mark.slow
def test_search_k2_24():
    """Both planets of K2-24 (transit periods 20.885 and 42.363 d) from its 32
    velocities alone.

    The brief asked for 2 %; the velocities alone do not pin the periods that
    well. 32 points over 101 days (resolution P^2 / T ~ 18 d at 42 d, ~4 d
    at 21 d) put the circular two-planet least-squares optimum at 20.50 and
    41.24 d, already 1.9 % and 2.6 % from the transit periods, and the first
    single-planet search is biased by the unmodelled second planet. Measured
    over 12 seed triples with 2e5 trial orbits each: the first search finds
    the outer planet 2.5-5.8 % low, the second (outer known) the inner one
    1.7-4.4 % off, the third (inner known) the outer one 1.0-3.7 % off; 1e6
    orbits give the same periods, so more models do not help (the search
    costs ~0.3 s per 1e5 orbits here and the period range is not narrowed).
    The tolerances below (8 %, 5 %, 5 %) still exclude the other local minima
    of the single-planet fit (12.0, 14.6, 26.1 d); the chi^2 steps are
    checked against the data's own values.
    """
    data = io.load_rv_example("k2-24")
    periods = np.array([20.885, 42.363])
    weight = 1 / data.sigma**2
    flat = np.sum(weight * (data.v - np.sum(weight * data.v) / weight.sum()) ** 2)  # 421.0
    kw = dict(period=(10.0, 60.0), eccentricity=(0.0, 0.3), n_models=200_000)
    first = kepler.search(data.t, data.v, data.sigma, seed=1, **kw)
    near = np.abs(first.best[0] / periods - 1)
    assert near.min() < 0.08, first.best
    assert 180 < first.chi2[0] < 0.6 * flat  # one planet: 223-226
    found, other = periods[np.argmin(near)], periods[np.argmax(near)]
    second = kepler.search(data.t, data.v, data.sigma, known=first.params[:1], seed=2, **kw)
    assert abs(second.best[0] / other - 1) < 0.05, second.best
    assert second.chi2[0] < 0.6 * first.chi2[0]  # two planets: 118-125
    # with the second known, the first planet again, closer
    third = kepler.search(data.t, data.v, data.sigma, known=second.params[:1], seed=3, **kw)
    assert abs(third.best[0] / found - 1) < 0.05, third.best
    assert third.chi2[0] <= second.chi2[0] + 2  # 113-115
    assert third.chi2[0] > 100  # the circular least-squares optimum is 113.7
    for result in (first, second, third):
        assert np.all(result.params[:, 1] >= 0)
        assert 3 < result.best[1] < 9  # K: 4.2 to 7.1 m/s


def test_search_bad_ranges_raise():
    t, v, s = _data()
    for period in ((0.0, 10.0), (-1.0, 10.0), (10.0, 5.0), (1.0, np.inf), (np.nan, 5.0), (1.0,),
                   "ab"):
        with pytest.raises(ValueError, match="period"):
            kepler.search(t, v, s, period=period, n_models=10)
    for ecc in ((0.0, 1.0), (0.5, 0.2), (-0.1, 0.5), (0.0, 1.5)):
        with pytest.raises(ValueError, match="eccentricity"):
            kepler.search(t, v, s, period=(1.0, 10.0), eccentricity=ecc, n_models=10)
    with pytest.raises(ValueError, match="positive"):
        kepler.search(t, v, s, period=(1.0, 10.0), n_models=0)
    with pytest.raises(ValueError, match="known"):
        kepler.search(t, v, s, period=(1.0, 10.0), known=np.zeros(5), n_models=10)
    with pytest.raises(ValueError, match="differ in length"):
        kepler.search(t, v[:-1], s, period=(1.0, 10.0), n_models=10)
    with pytest.raises(ValueError, match="fits 6 parameters .* got 6"):
        kepler.search(t[:6], v[:6], s[:6], period=(1.0, 10.0), n_models=10)
    kepler.search(t[:7], v[:7], s[:7], period=(1.0, 10.0), n_models=10)  # one left over
