"""The binned BLS kernel's two ways of filling the bins (Layout.binning): atomic adds per point
and differences of prefix sums of the points in time order. Both give the same integer bins,
so every result must be identical, bit for bit, including points on bin edges and at cycle
boundaries where astropy's rounding folds them across the edge."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from astropy.timeseries import BoxLeastSquares

import clperiod
from clperiod import Catalog
from clperiod.periodograms import bls as bls_module
from clperiod.periodograms.bls import Layout
from reference import bls as ref

EDGE_PERIODS = np.round(np.linspace(0.5, 1.5, 101), 2)
EDGE_DURATIONS = [0.05, 0.1]  # bins of 0.005 with oversample 10: P / width is an integer
RESULT_FIELDS = ("period_best", "power_best", "depth_best", "depth_err_best", "duration_best",
                 "transit_time_best", "depth_snr_best", "log_likelihood_best", "top_k_index",
                 "top_k_power", "status", *ref.FIELDS)


def astropy_keys(tau, period, width):
    """astropy's (cycle, bin) of each time and its wrapped phase, operation by operation."""
    turns = np.floor(tau / period)
    wrapped = tau - period * turns
    return turns, np.trunc(wrapped / width).astype(np.int64) + 1, wrapped


def edge_times():
    """Times from 0 to 20 on a 0.01 cadence (on bin edges of 0.005 at periods of whole 0.01),
    and the doubles at and beside the multiples n P of the trial periods (whose folds wrap
    below 0, or to P and beyond), some repeated: ``(cadence, near)``."""
    cadence = 0.01 * np.arange(2000)
    multiples = (EDGE_PERIODS[:, None] * np.arange(1, 41)).ravel()
    multiples = multiples[multiples < 20]
    near = np.concatenate([np.nextafter(multiples, 0), multiples, np.nextafter(multiples, 99)])
    return cadence, np.concatenate([near, near[::7]])


def light_curve(kind: str, seed: int = 1):
    """``(t, y, dy)``: "dense" (2-minute cadence over 12 days with a gap), "sparse" (150
    nights over 3 years), "edges" (:func:`edge_times` from t = 0, the points near n P 0.01
    low, so that at each trial period the best box holds the cycle boundaries' points),
    "shuffled" (a dense curve with repeated times, rows in random order); each with a box
    transit."""
    rng = np.random.default_rng(seed)
    if kind == "dense":
        t = 1000.0 + np.arange(8640) / 720.0
        t = t[(t < 1005.0) | (t > 1006.5)]
    elif kind == "sparse":
        t = 58000.0 + np.sort(rng.choice(1100, 150, replace=False) + rng.uniform(0, 0.3, 150))
    elif kind == "edges":
        cadence, near = edge_times()
        t = np.concatenate([cadence, near])
    else:
        t = 2000.0 + np.arange(3000) / 360.0
        t = rng.permutation(np.concatenate([t, t[::5]]))
    dy = rng.uniform(0.8e-3, 1.2e-3, t.size)
    y = 1.0 + dy * rng.normal(size=t.size)
    y[np.abs((t - t.min() - 0.3 + 0.61) % 1.22 - 0.61) < 0.04] -= 0.003
    if kind == "edges":
        y[cadence.size:] -= 0.01
    return t, y, dy


def search(monkeypatch, catalog, periods, durations, binning, layout=None, **options):
    """clperiod.bls with the bins filled as ``binning`` says (in ``layout``, default the
    device's), and what it passed on to its results: the per-object choice of fill
    (prepared.sorted) and the keys and sums found."""
    layout = layout or bls_module.layout_for(clperiod.select_devices()[0])
    seen: dict = {"sorted": []}
    build, prepare = bls_module._result, bls_module._prepare

    def spy_prepare(*args):
        prepared = prepare(*args)
        seen["sorted"].append(prepared.sorted)
        return prepared

    def spy(catalog, trials, plan, options, objects, found, devices):
        seen["found"] = found
        return build(catalog, trials, plan, options, objects, found, devices)

    monkeypatch.setattr(bls_module, "_prepare", spy_prepare)
    monkeypatch.setattr(bls_module, "_result", spy)
    result = clperiod.bls(catalog, periods, durations, periodogram=True, top_k=3,
                          layout=dataclasses.replace(layout, binning=binning), **options)
    return result, np.concatenate(seen["sorted"]), seen["found"]


def assert_same_results(first, second) -> None:
    results, finds = (first[0], second[0]), (first[2], second[2])
    for name in RESULT_FIELDS:
        np.testing.assert_array_equal(*(getattr(r, name) for r in results), err_msg=name)
    for name in ("indices", "keys", "sums", "all_keys", "all_sums"):
        np.testing.assert_array_equal(*(getattr(f, name) for f in finds), err_msg=name)


def test_the_edge_times_reach_every_case_of_the_fold():
    """The keys of edge_times() are non-decreasing in time at every trial period, and among
    them are folds below 0 (bin 1), to P and beyond (bin K + 1, the next cycle's phase 0) and
    repeated times: the cases the prefix fill's boundaries must place as the atomic fill."""
    tau = np.sort(np.concatenate(edge_times()))
    width = min(EDGE_DURATIONS) / 10
    below_zero = beyond_period = 0
    for period in EDGE_PERIODS:
        turns, bins, wrapped = astropy_keys(tau, period, width)
        step_turns, step_bins = np.diff(turns), np.diff(bins)
        assert np.all((step_turns > 0) | ((step_turns == 0) & (step_bins >= 0))), period
        below_zero += np.count_nonzero(wrapped < 0)
        beyond_period += np.count_nonzero(bins == np.ceil(period / width) + 1)
        assert bins.min() >= 1
    assert below_zero > 300 and beyond_period >= 4
    assert np.count_nonzero(np.diff(tau) == 0) > 10


@pytest.mark.parametrize("compat", ["astropy", None])
@pytest.mark.parametrize("oversample", [1, 10])
def test_prefix_fill_equals_atomic_fill_on_edges(monkeypatch, compat, oversample):
    """Points on bin edges and beside cycle boundaries (see above), bins 0.005 (oversample
    10) or 0.05 wide: the same keys, sums and fields from both fills, and astropy's."""
    t, y, dy = light_curve("edges")
    catalog = Catalog.from_single(t, y, dy)
    durations = [d * oversample / 10 for d in EDGE_DURATIONS]
    found = [search(monkeypatch, catalog, EDGE_PERIODS, durations, binning, compat=compat,
                    oversample=oversample) for binning in ("atomic", "prefix")]
    assert not found[0][1].any() and found[1][1].all()
    assert_same_results(*found)
    if compat == "astropy":
        theirs = BoxLeastSquares(t, y, dy).power(EDGE_PERIODS, durations, method="fast",
                                                 oversample=oversample)
        np.testing.assert_allclose(found[1][0].power[0], theirs.power, rtol=1e-9)
        np.testing.assert_array_equal(found[1][0].transit_time[0], theirs.transit_time)


@pytest.mark.parametrize(("kind", "periods", "durations"), [
    ("dense", np.geomspace(0.3, 6.0, 400), [1 / 24, 3 / 24]),
    ("dense", np.geomspace(0.11, 0.2, 100), [0.02]),
    ("sparse", np.geomspace(0.5, 40.0, 300), [0.05, 0.15]),
    ("shuffled", np.linspace(0.7, 3.0, 200), [0.05, 0.1]),
], ids=["dense", "dense-short", "sparse", "shuffled-repeats"])
@pytest.mark.parametrize("compat", ["astropy", None])
def test_prefix_fill_equals_atomic_fill(monkeypatch, kind, periods, durations, compat):
    t, y, dy = light_curve(kind)
    catalog = Catalog.from_single(t, y, dy)
    found = [search(monkeypatch, catalog, periods, durations, binning, compat=compat,
                    oversample=5) for binning in ("atomic", "prefix")]
    assert_same_results(*found)


@pytest.mark.parametrize("layout", [Layout(False, "int64"), Layout(True, "split")],
                         ids=["global-bins", "split-atomics"])
def test_prefix_fill_in_other_layouts(monkeypatch, layout):
    """Bins in global memory (the prefix fill's barriers fence it too) and split atomics."""
    t, y, dy = light_curve("dense", seed=2)
    catalog = Catalog.from_single(t, y, dy)
    periods = np.geomspace(0.5, 4.0, 120)
    found = [search(monkeypatch, catalog, periods, [0.05, 0.1], binning, layout=layout)
             for binning in ("atomic", "prefix")]
    assert found[1][1].all()
    assert_same_results(*found)


def mixed_catalog():
    """Dense, sparse and dense light curves, one row only, and all times equal."""
    curves = [light_curve("dense", 3), light_curve("sparse", 4), light_curve("dense", 5)]
    curves += [(np.array([100.0]), np.array([1.0]), np.array([0.01])),
               (np.full(20, 100.0), np.linspace(0, 1, 20), np.full(20, 0.01))]
    return Catalog.from_lightcurves(curves)


def test_by_default_dense_objects_take_the_prefix_fill(monkeypatch):
    """One launch over a catalog of dense and sparse objects: the default fills the dense
    ones from prefix sums and the others atomically (the branch is per object), with the
    results of either fill alone; fp32 chooses as fp64 and the exact search has no bins."""
    catalog = mixed_catalog()
    periods = np.geomspace(0.5, 5.0, 60)
    durations = [0.05, 0.1]
    chosen = search(monkeypatch, catalog, periods, durations, None)
    np.testing.assert_array_equal(chosen[1], [True, False, True, False, False])
    for binning in ("atomic", "prefix"):
        forced = search(monkeypatch, catalog, periods, durations, binning)
        prefix = binning == "prefix"  # all objects with points, equal times too
        np.testing.assert_array_equal(forced[1], [prefix, prefix, prefix, False, prefix])
        assert_same_results(chosen, forced)
    fp32 = search(monkeypatch, catalog, periods[::10], durations, None, precision="fp32")
    np.testing.assert_array_equal(fp32[1], chosen[1])
    exact = bls_module._plan(periods, np.array(durations),
                             bls_module._Options("likelihood", "exact", 10, None, 1, False), True)
    lengths, spans = np.array([10**5, 0]), np.array([1.0, 0.0])
    assert not bls_module._prefix_objects(exact, lengths, spans, "prefix").any()


def test_devices_split_the_prefix_tables(monkeypatch, cpu_device):
    """Objects spread over two workers, each with its objects' prefix sums and guides: the
    results of one device."""
    catalog = mixed_catalog()
    periods = np.geomspace(0.5, 5.0, 60)
    one_device = search(monkeypatch, catalog, periods, [0.05, 0.1], "prefix")
    monkeypatch.setattr(bls_module, "select_devices", lambda _: [cpu_device, cpu_device])
    spread = search(monkeypatch, catalog, periods, [0.05, 0.1], "prefix")
    assert spread[0].devices == [cpu_device.label] * 2
    assert_same_results(one_device, spread)


def test_prefix_tables():
    """Exclusive prefix sums per object from entry offsets[k] + k (exact where the running
    sum over the objects passes 2**63), and guides to the first point at or after
    j * span / n; zeros for an object filled atomically."""
    tau = np.array([0.0, 0.0, 1.0, 3.0, 0.0, 2.0, 5.0, 0.0, 4.0])
    uv = np.array([2**61, 2**61 - 1, 2**61, 5, 2**61, -3, 2**61, 3, 4], np.int64)
    v = np.arange(1, 10, dtype=np.int64)
    offsets = np.array([0, 4, 7, 9])
    spans = np.array([3.0, 5.0, 4.0])
    tables = bls_module._prefix_tables(tau, uv, v, offsets, spans, np.array([True, True, False]))
    np.testing.assert_array_equal(tables.uv, [0, 2**61, 2**62 - 1, 3 * 2**61 - 1,
                                              3 * 2**61 + 4, 0, 2**61, 2**61 - 3, 2**62 - 3,
                                              0, 0, 0])
    np.testing.assert_array_equal(tables.v, [0, 1, 3, 6, 10, 0, 5, 11, 18, 0, 0, 0])
    np.testing.assert_allclose(tables.inv_step, [4 / 3, 3 / 5, 0])
    # steps of 0.75 (first points at or after 0, 0.75, 1.5, 2.25, 3) and of 5/3
    np.testing.assert_array_equal(tables.guide, [0, 2, 3, 3, 3, 0, 1, 2, 2, 0, 0, 0])


@pytest.mark.parametrize("epoch", [0.0, 60000.0])
def test_fp32_prefix_fill_places_points_as_fp64(monkeypatch, epoch):
    """fp32's prefix fill compares double-single times with double-single edges (~2**-44
    relative), so on a TESS-like cadence (bins of 3 cadences: in the first cycle every
    third point is on an edge) it keeps fp64's box, sums and fields at nearly every period,
    raw MJD epochs included."""
    t, y, dy = light_curve("dense")
    catalog = Catalog.from_single(t - t.min() + epoch, y, dy)
    periods = np.geomspace(0.3, 6.0, 400)
    fp64 = search(monkeypatch, catalog, periods, [1 / 24, 3 / 24], None)
    fp32 = search(monkeypatch, catalog, periods, [1 / 24, 3 / 24], "prefix", precision="fp32")
    assert fp32[1].all()
    same = np.all(fp32[2].all_sums == fp64[2].all_sums, axis=-1)[0]
    assert same.mean() >= 0.97
    np.testing.assert_array_equal(fp32[0].power[0, same], fp64[0].power[0, same])
    for name in ("period_best", "depth_best", "duration_best", "transit_time_best"):
        np.testing.assert_array_equal(getattr(fp32[0], name), getattr(fp64[0], name))


def test_fp32_prefix_fill_needs_ordered_edges():
    """fp32 fills from prefix sums only objects spanning under 2**22 cycles of the shortest
    period, with bins wider than 2**-30 of their span plus the longest period."""
    plan = bls_module._Plan(np.array([0.5, 2.0]), np.array([0.1]), False, 50,
                            width=0.01, real_bins=np.array([50, 200], np.int32))
    spans = np.array([0.0, 1e3, 2.0**21 - 1, 2.0**21, 1e6])
    lengths = np.array([2, 2, 2, 2, 0])
    chosen = bls_module._prefix_objects(plan, lengths, spans, "prefix")
    np.testing.assert_array_equal(chosen, [True, True, True, False, False])
    plan = dataclasses.replace(plan, width=2.0**-30 * (1e3 + 2.0) * 1.01)
    np.testing.assert_array_equal(bls_module._prefix_objects(plan, lengths, spans, "prefix"),
                                  [True, True, False, False, False])
    fp64 = dataclasses.replace(plan, fp64=True)
    np.testing.assert_array_equal(bls_module._prefix_objects(fp64, lengths, spans, "prefix"),
                                  [True, True, True, True, False])


def test_binning_must_be_a_known_fill():
    with pytest.raises(ValueError, match="binning"):
        Layout(None, "int64", binning="sorted")
