"""The NumPy multiband Lomb-Scargle reference (tests/reference/multiband.py) against astropy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from astropy.timeseries import LombScargle, LombScargleMultiband

from reference.multiband import MultibandLombScargle

BAND_NAMES = np.array(list("ugrizy"))
FREQUENCY = np.linspace(0.02, 3.0, 40)
PERIOD = 0.7


def band_number(bands):
    """Position of each label in "ugrizy" (its offset and amplitude in the light curve)."""
    return np.array(["ugrizy".index(band) for band in bands])


def light_curve(nbands: int, seed: int, per_band: int = 25):
    """Times from 0, values with per-band offsets and amplitudes, errors; one point of
    each band first, in sorted band order (astropy's ``model`` needs that, see its test)."""
    rng = np.random.default_rng(seed)
    n = per_band * nbands
    names = BAND_NAMES[:nbands]
    t = np.concatenate([np.arange(nbands) * 0.01, np.sort(rng.uniform(1.0, 150.0, n - nbands))])
    bands = np.concatenate([np.sort(names), rng.choice(names, n - nbands)])
    number = band_number(bands)
    phase = 2 * np.pi * t / PERIOD
    y = (12 + 0.3 * number + (1 + 0.2 * number) * np.sin(phase) + 0.3 * np.cos(2 * phase)
         + 0.4 * rng.normal(size=n))
    dy = rng.uniform(0.2, 1.0, n)
    return t, y, bands, dy


def astropy_and_reference(t, y, bands, dy, **options):
    return (LombScargleMultiband(t, y, bands, dy, **options),
            MultibandLombScargle(t, y, bands, dy, **options))


@pytest.mark.parametrize("nbands", [1, 2, 3, 6])
@pytest.mark.parametrize("with_errors", [False, True])
def test_power_equals_astropy_flexible(nbands, with_errors):
    t, y, bands, dy = light_curve(nbands, seed=nbands)
    dy = dy if with_errors else None
    for nterms_base, nterms_band in itertools.product(range(4), range(3)):
        if nterms_base == nterms_band == 0:
            continue
        options = {"nterms_base": nterms_base, "nterms_band": nterms_band}
        theirs, ours = astropy_and_reference(t, y, bands, dy, **options)
        np.testing.assert_allclose(ours.power(FREQUENCY),
                                   theirs.power(FREQUENCY, method="flexible"), rtol=1e-9,
                                   err_msg=str(options))


@pytest.mark.parametrize("options", [
    {"center_data": False},
    {"reg_base": 1e-5, "reg_band": 1e-4},
    {"reg_band": 1e-3, "regularize_by_trace": False},
    {"nterms_base": 2, "nterms_band": 1, "center_data": False, "reg_base": 1e-7},
])
def test_options_equal_astropy(options):
    t, y, bands, dy = light_curve(3, seed=7)
    theirs, ours = astropy_and_reference(t, y, bands, dy, **options)
    np.testing.assert_allclose(ours.power(FREQUENCY), theirs.power(FREQUENCY), rtol=1e-9)


def test_integer_band_labels_equal_astropy():
    t, y, bands, dy = light_curve(3, seed=8)
    labels = np.searchsorted(BAND_NAMES, bands) * 10
    theirs, ours = astropy_and_reference(t, y, labels, dy, nterms_band=2)
    np.testing.assert_allclose(ours.power(FREQUENCY), theirs.power(FREQUENCY), rtol=1e-9)


@pytest.mark.parametrize(("nterms_base", "nterms_band"), [(1, 1), (2, 0), (0, 2), (3, 2)])
def test_model_parameters_model_and_offset_equal_astropy(nterms_base, nterms_band):
    t, y, bands, dy = light_curve(3, seed=9)
    theirs, ours = astropy_and_reference(t, y, bands, dy, nterms_base=nterms_base,
                                         nterms_band=nterms_band)
    frequency = 1 / PERIOD
    parameters = ours.model_parameters(frequency)
    assert parameters.size == ours.n_parameters == 1 + 2 * nterms_base + 3 * (1 + 2 * nterms_band)
    np.testing.assert_allclose(parameters, theirs.model_parameters(frequency), rtol=1e-8,
                               atol=1e-10 * np.abs(parameters).max())
    t_fit = np.linspace(0, 2 * PERIOD, 17)
    np.testing.assert_allclose(ours.model(t_fit, frequency),
                               theirs.model(t_fit, frequency), rtol=1e-10)
    chosen = np.array(["u", "r", "g"])  # astropy's model fails on a subset of the bands
    np.testing.assert_allclose(ours.model(t_fit, frequency, bands_fit=chosen),
                               theirs.model(t_fit, frequency, bands_fit=chosen), rtol=1e-10)
    np.testing.assert_allclose(ours.offset(), theirs.offset(), rtol=1e-12)


def test_model_fits_the_signal_at_its_period():
    t, y, bands, dy = light_curve(2, seed=10, per_band=400)
    ours = MultibandLombScargle(t, y, bands, dy, nterms_base=2, nterms_band=1)
    t_fit = np.linspace(0, PERIOD, 9)
    phase = 2 * np.pi * t_fit / PERIOD
    truth = [12 + 0.3 * k + (1 + 0.2 * k) * np.sin(phase) + 0.3 * np.cos(2 * phase)
             for k in band_number(["g", "u"])]  # rows in sorted band order
    np.testing.assert_allclose(ours.model(t_fit, 1 / PERIOD), truth, atol=0.15)


def test_autofrequency_equals_astropy():
    t, y, bands, dy = light_curve(3, seed=11)
    theirs, ours = astropy_and_reference(t, y, bands, dy)
    np.testing.assert_allclose(ours.autofrequency(), theirs.autofrequency(), rtol=1e-13)
    np.testing.assert_allclose(
        ours.autofrequency(samples_per_peak=3, minimum_frequency=0.1, maximum_frequency=2),
        theirs.autofrequency(samples_per_peak=3, minimum_frequency=0.1, maximum_frequency=2),
        rtol=1e-13)


@pytest.mark.parametrize(("nterms_base", "nterms_band"), [(1, 0), (2, 0), (3, 0), (1, 1), (3, 2)])
@pytest.mark.parametrize("with_errors", [False, True])
def test_one_band_equals_single_band_lombscargle(nterms_base, nterms_band, with_errors):
    """One band, nterms_band <= nterms_base: the band terms repeat base terms and the ridge
    on them only removes the duplicate, so the power is astropy's LombScargle(nterms)."""
    t, y, bands, dy = light_curve(1, seed=12, per_band=60)
    dy = dy if with_errors else None
    ours = MultibandLombScargle(t, y, bands, dy, nterms_base=nterms_base,
                                nterms_band=nterms_band)
    single = LombScargle(t, y, dy, nterms=nterms_base).power(FREQUENCY)
    np.testing.assert_allclose(ours.power(FREQUENCY), single, rtol=1e-9)


def test_power_invariant_to_band_offsets_scale_and_time_shift():
    t, y, bands, dy = light_curve(3, seed=13)
    ours = MultibandLombScargle(t, y, bands, dy, nterms_base=2, nterms_band=1)
    power = ours.power(FREQUENCY)
    offsets = band_number(bands) * 7.5 - 3.0
    moved = MultibandLombScargle(t + 1000.0, -4.0 * y + offsets, bands, 4.0 * dy,
                                 nterms_base=2, nterms_band=1)
    np.testing.assert_allclose(moved.power(FREQUENCY), power, rtol=1e-9)
    grid = np.linspace(1.3, 1.6, 301)
    assert abs(grid[np.argmax(ours.power(grid))] - 1 / PERIOD) <= 0.001


def test_invalid_arguments_raise():
    t, y, bands, dy = light_curve(2, seed=14)
    with pytest.raises(ValueError, match="nterms_base and nterms_band"):
        MultibandLombScargle(t, y, bands, dy, nterms_base=0, nterms_band=0)
    with pytest.raises(ValueError, match=">= 0"):
        MultibandLombScargle(t, y, bands, dy, nterms_band=-1)
    with pytest.raises(ValueError, match="one length"):
        MultibandLombScargle(t, y[:-1], bands, dy)
    with pytest.raises(ValueError, match=r"bands_fit .*\['z'\]"):
        MultibandLombScargle(t, y, bands, dy).model([0.0], 1.0, bands_fit=["u", "z"])
