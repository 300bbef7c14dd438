"""False-alarm probabilities of whole catalogs (stats.catalog_false_alarm_probability)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from astropy.timeseries.periodograms.lombscargle._statistics import (
    false_alarm_probability as astropy_fap,
)

from clperiod import Catalog, FrequencyGrid, Status, lombscargle
from clperiod.io.tables import _status_names, result_columns
from clperiod.periodograms import stats
from clperiod.testing import sinusoid_lightcurve

NORMS = ("standard", "model", "log", "psd")
CENTRING = ((True, True), (False, True), (True, False))
FMAX, NF = 3.0, 4000
LENGTHS = (2, 3, 4, 5, 31, 400, 2500, 17)


def _catalog(rng, dy=True, epoch=2_458_000.0):
    """Objects of very different lengths (2 and 3 points have no noise degrees of freedom)."""
    lcs = [sinusoid_lightcurve(rng, n, 1.7, baseline=rng.uniform(5.0, 900.0), epoch=epoch,
                               noise=0.5, dy=(0.05, 2.0) if dy else None)
           for n in LENGTHS]
    return Catalog.from_lightcurves(lcs)


def _heights(rng, norm, shape):
    """Peak heights in ``norm``: standard powers spread over (0.02, 0.7)."""
    z = rng.uniform(0.02, 0.7, shape)
    return 20.0 * z if norm == "psd" else stats.normalize(z, norm)


def _per_object(z, cat, weighted, **kwargs):
    """The scalar API, one object at a time."""
    out = np.empty(z.shape)
    for k in range(cat.n_objects):
        t, _, dy = cat.lightcurve(k)
        out[k] = stats.false_alarm_probability(
            z[k], n=t.size, t=t, dy=dy if weighted else None, fmax=FMAX, nf=NF, **kwargs
        )
    return out


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("method", stats.FAP_METHODS)
def test_catalog_equals_per_object(rng, norm, method):
    cat = _catalog(rng)
    for (fit_mean, center_data), weighted, k in itertools.product(
        CENTRING, (True, False), (None, 3)
    ):
        z = _heights(rng, norm, (cat.n_objects,) if k is None else (cat.n_objects, k))
        kwargs = {"normalization": norm, "method": method, "fit_mean": fit_mean,
                  "center_data": center_data}
        got = stats.catalog_false_alarm_probability(
            z, cat, fmax=FMAX, nf=NF, weighted=weighted, **kwargs
        )
        expected = _per_object(z, cat, weighted, **kwargs)
        assert got.shape == z.shape
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
        assert np.isnan(got[:2]).all() and np.isfinite(got[2:]).all()  # n <= 3 -> NaN
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0)
        if method != "davies":  # an upper bound that may exceed 1
            assert np.all((got[2:] >= 0) & (got[2:] <= 1))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize(("nterms", "fit_mean", "center_data"),
                         [(1, False, False), (2, True, True), (3, False, False)])
def test_catalog_multiterm_and_uncentred_equal_per_object(rng, norm, nterms, fit_mean,
                                                          center_data):
    cat = _catalog(rng)
    z = _heights(rng, norm, (cat.n_objects, 2))
    dead = cat.lengths <= int(fit_mean or center_data) + 2 * nterms  # no noise dof left
    for method in stats.FAP_METHODS:
        kwargs = {"normalization": norm, "method": method, "fit_mean": fit_mean,
                  "center_data": center_data, "nterms": nterms}
        got = stats.catalog_false_alarm_probability(z, cat, fmax=FMAX, nf=NF, **kwargs)
        expected = _per_object(z, cat, True, **kwargs)
        np.testing.assert_array_equal(np.isnan(got), np.broadcast_to(dead[:, None], z.shape))
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize("method", ["baluev", "davies", "naive"])
def test_catalog_matches_astropy(rng, method):
    cat = _catalog(rng)
    z = _heights(rng, "standard", cat.n_objects)
    got = stats.catalog_false_alarm_probability(z, cat, fmax=FMAX, method=method)
    for k in range(2, cat.n_objects):
        t, y, dy = cat.lightcurve(k)
        # astropy's own fmax is its autofrequency limit, so call its formulas with
        # ours; it loses digits of the time variance at JD epochs: t - t[0]
        expected = astropy_fap(z[k], fmax=FMAX, t=t - t[0], y=y, dy=dy, method=method,
                               normalization="standard")
        np.testing.assert_allclose(got[k], expected, rtol=1e-10)


def test_blocks_of_rows_split_between_objects(rng, monkeypatch):
    cat = _catalog(rng)
    z = _heights(rng, "standard", (cat.n_objects, 2))
    whole = stats.catalog_false_alarm_probability(z, cat, fmax=FMAX)
    assert cat.t.size < stats._BLOCK_ROWS  # one block above; several below
    for rows in (1, 64, 500):  # objects longer than a block get a block of their own
        monkeypatch.setattr(stats, "_BLOCK_ROWS", rows)
        fresh = Catalog(cat.ids, cat.offsets, cat.t, cat.y, cat.dy)  # not remembered yet
        blocked = stats.catalog_false_alarm_probability(z, fresh, fmax=FMAX)
        np.testing.assert_allclose(blocked, whole, rtol=1e-13)


def test_time_spread_is_remembered_per_catalog_and_weighting(rng):
    cat = _catalog(rng)
    weighted = stats.catalog_time_spread(cat)
    assert stats.catalog_time_spread(cat) is weighted
    unweighted = stats.catalog_time_spread(cat, weighted=False)
    for k in range(cat.n_objects):
        t, _, dy = cat.lightcurve(k)
        assert weighted[0][k] == unweighted[0][k] == t.max() - t.min()
        for spread, w in ((weighted, dy**-2.0), (unweighted, np.ones_like(t))):
            mean = np.sum(w * t) / w.sum()
            np.testing.assert_allclose(spread[1][k], np.sum(w * (t - mean) ** 2) / w.sum(),
                                       rtol=1e-9)
    no_dy = Catalog(cat.ids, cat.offsets, cat.t, cat.y)
    assert stats.catalog_time_spread(no_dy) is stats.catalog_time_spread(no_dy, weighted=False)


def test_objects_without_rows_get_nan(rng):
    t = np.sort(rng.uniform(0, 40, 30))
    cat = Catalog(np.array([1, 2, 3]), np.array([0, 0, 30, 30]), t, np.sin(t), np.ones(30))
    for method in stats.FAP_METHODS:
        fap = stats.catalog_false_alarm_probability(
            np.full(3, 0.4), cat, fmax=FMAX, nf=NF, method=method
        )
        assert np.isnan(fap[[0, 2]]).all() and 0 < fap[1] < 1
    empty = Catalog(np.array([1, 2]), np.array([0, 0, 0]), np.zeros(0), np.zeros(0))
    fap = stats.catalog_false_alarm_probability(np.full(2, 0.4), empty, fmax=FMAX)
    assert fap.shape == (2,) and np.isnan(fap).all()
    none = Catalog(np.zeros(0), np.array([0]), np.zeros(0), np.zeros(0))
    assert stats.catalog_false_alarm_probability(np.zeros(0), none, fmax=FMAX).shape == (0,)


def test_catalog_argument_errors(rng):
    cat = _catalog(rng)
    z = np.full(cat.n_objects, 0.3)
    with pytest.raises(ValueError, match=r"z must have shape \(8,\) or \(8, k\)"):
        stats.catalog_false_alarm_probability(z[:-1], cat, fmax=FMAX)
    with pytest.raises(ValueError, match="shape"):
        stats.catalog_false_alarm_probability(z[:, None, None], cat, fmax=FMAX)
    with pytest.raises(TypeError, match="Catalog"):
        stats.catalog_false_alarm_probability(z, cat.t, fmax=FMAX)
    with pytest.raises(ValueError, match="periodic model"):
        stats.catalog_false_alarm_probability(z, cat, fmax=FMAX, nterms=0)
    with pytest.raises(ValueError, match="nf"):
        stats.catalog_false_alarm_probability(z, cat, fmax=FMAX, method="townsend")
    with pytest.raises(ValueError, match="method"):
        stats.catalog_false_alarm_probability(z, cat, fmax=FMAX, method="single")


# {{{ LombScargleResult.false_alarm_probability


def _result_reference(result, power, method):
    """The former per-object loop: the scalar API for each OK object, NaN otherwise."""
    out = np.full(power.shape, np.nan)
    for k in np.flatnonzero(result.status == Status.OK):
        t, _, dy = result.catalog.lightcurve(k)
        out[k] = stats.false_alarm_probability(
            power[k], n=t.size, fmax=result.grid.fmax, t=t,
            dy=dy if result.method == "generalized" else None,
            normalization=result.normalization, method=method, fit_mean=result.fit_mean,
            center_data=result.center_data, nf=result.grid.nf,
        )
    return out


@pytest.mark.parametrize("ls_method", ["generalized", "standard"])
@pytest.mark.slow
def test_result_equals_per_object_loop(rng, ls_method, monkeypatch):
    flat = (np.arange(20.0), np.full(20, 3.0), np.ones(20))  # ZERO_VARIANCE
    cat = _catalog(rng)
    cat = Catalog.from_lightcurves([cat.lightcurve(k) for k in range(2, 8)] + [flat])
    grid = FrequencyGrid.from_range(0.05, FMAX, 1500)
    for norm, (fit_mean, center_data) in itertools.product(NORMS, CENTRING):
        result = lombscargle(cat, grid, method=ls_method, normalization=norm, top_k=2,
                             fit_mean=fit_mean, center_data=center_data)
        assert list(result.status[-1:]) == [Status.ZERO_VARIANCE]
        for method, power in itertools.product(
            stats.FAP_METHODS, (result.power_best, result.top_k_power)
        ):
            got = result.false_alarm_probability(method, power=power)
            expected = _result_reference(result, power, method)
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0)
            assert np.isnan(got[-1]).all() and np.isfinite(got[:-1]).all()
    # no per-object Python calls left: the scalar API is not used at all
    monkeypatch.setattr(stats, "false_alarm_probability", None)
    assert np.isfinite(result.false_alarm_probability()[:-1]).all()


def test_result_columns_status_names(rng):
    cat = _catalog(rng, dy=False)
    cat = Catalog.from_lightcurves([(np.arange(3.0), np.arange(3.0))]
                                   + [cat.lightcurve(k)[:2] for k in (4, 5)])
    result = lombscargle(cat, FrequencyGrid.from_range(0.05, FMAX, 500))
    columns = result_columns(result)
    assert list(columns["status_name"]) == ["TOO_FEW_POINTS", "OK", "OK"]
    assert np.isnan(columns["fap"][0]) and (columns["fap"][1:] < 1).all()
    names = _status_names(np.array([[3, 0], [2, 1]], dtype=np.int8))
    assert names.tolist() == [["NOT_FINITE", "OK"], ["ZERO_VARIANCE", "TOO_FEW_POINTS"]]
    with pytest.raises(ValueError, match="7 is not a valid Status"):
        _status_names(np.array([0, 7]))


# }}}
