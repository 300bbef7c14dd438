"""Regressions from fuzzing the public API with hostile input (issue 20):
masked arrays, NaN results without a status saying why, and exceptions that
did not name the argument."""

from __future__ import annotations

import numpy as np
import pytest

import clperiod
from clperiod import Catalog, FrequencyGrid, Status, kepler, singlepulse
from clperiod.periodograms import stats
from clperiod.periodograms.multiterm import multiterm_coefficients, multiterm_max_power, multiterm_power

RNG = np.random.default_rng(20)
N = 40
T = np.sort(RNG.uniform(0.0, 30.0, N))
Y = np.sin(2 * np.pi * T / 2.3) + 0.1 * RNG.normal(size=N)
DY = np.full(N, 0.1)
GRID = FrequencyGrid.from_range(0.05, 3.0, 300)


# ---------------------------------------------------------------------- masked arrays


def masked_y() -> np.ma.MaskedArray:
    """Y with a masked outlier of 1e6 at row 5."""
    values = np.ma.masked_array(Y.copy(), mask=np.zeros(N, dtype=bool))
    values.data[5], values.mask[5] = 1e6, True
    return values


def test_masked_rows_are_refused_or_left_out():
    """A masked value is never used: nan_policy="raise" names it, "omit"
    leaves its row out (NumPy and astropy masked arrays alike)."""
    from astropy.utils.masked import Masked

    keep = np.arange(N) != 5
    expected = clperiod.lombscargle(T[keep], GRID, Y[keep], DY[keep])
    for values in (masked_y(), Masked(masked_y().data, mask=masked_y().mask)):
        with pytest.raises(ValueError, match=r"masked y in object 0 at row 5 .*nan_policy='omit'"):
            clperiod.lombscargle(T, GRID, values, DY)
        result = clperiod.lombscargle(T, GRID, values, DY, nan_policy="omit")
        assert result.catalog.n_dropped == 1
        np.testing.assert_array_equal(result.power_best, expected.power_best)
    listed = Catalog.from_lightcurves([(T, masked_y(), DY), (T, Y, DY)], nan_policy="omit")
    np.testing.assert_array_equal(listed.lengths, [N - 1, N])
    with pytest.raises(ValueError, match="ids has a masked entry"):
        Catalog.from_arrays(np.ma.masked_array(np.zeros(N), mask=~keep), T, Y)


def test_masked_times_are_left_out_of_the_grid():
    times = np.ma.masked_array(np.append(T, 1e6), mask=np.append(np.zeros(N, bool), True))
    assert FrequencyGrid.auto(times) == FrequencyGrid.auto(T)


def test_masked_samples_of_a_single_pulse_search():
    data = RNG.normal(size=(3, 2048)).astype(np.float32)
    data[1, 700:708] += 6.0
    masked = np.ma.masked_array(data.copy(), mask=np.zeros(data.shape, dtype=bool))
    masked.data[2, 100], masked.mask[2, 100] = 1e6, True
    with pytest.raises(ValueError, match=r"1 masked samples .*\[2, 100\].*nan_policy='mask'"):
        singlepulse.search(masked, np.arange(3.0), 1e-3)
    found = singlepulse.search(masked, np.arange(3.0), 1e-3, nan_policy="mask")
    with_nan = data.copy()
    with_nan[2, 100] = np.nan
    expected = singlepulse.search(with_nan, np.arange(3.0), 1e-3, nan_policy="mask")
    assert found.info.masked.tolist() == [0, 0, 1]
    np.testing.assert_array_equal(found, expected)


@pytest.mark.parametrize("call", [
    lambda m: kepler.solve(m, 0.3),
    lambda m: kepler.radial_velocity(m, [[10.0, 5.0, 0.1, 0.2, 0.0]]),
    lambda m: kepler.chi2(m, np.ones(2), np.ones(2), [[10.0, 5.0, 0.1, 0.2, 0.0]]),
    lambda m: stats.false_alarm_probability(0.5, n=2, fmax=2.0, t=m),
    lambda m: multiterm_power(m, np.ones(2), None, GRID, 2),
    lambda m: multiterm_coefficients(np.arange(2.0), m, None, GRID, 0),
    lambda m: stats.weighted_sum_of_squares(m),
], ids=["solve", "radial_velocity", "chi2", "false_alarm_probability", "multiterm_power",
        "multiterm_coefficients", "weighted_sum_of_squares"])
def test_functions_of_every_value_refuse_masks(call):
    masked = np.ma.masked_array([0.5, 1e6], mask=[False, True])
    with pytest.raises(ValueError, match=r"has 1 masked entries \(the first at index \[1\]\)"):
        call(masked)


def test_multiterm_max_power_refuses_masked_light_curves():
    masked = np.ma.masked_array([[0.5, 1.0, 2.0], [0.5, 1e6, 2.0]],
                                mask=[[False] * 3, [False, True, False]])
    with pytest.raises(ValueError, match=r"y has 1 masked entries \(the first at index \[1, 1\]"):
        multiterm_max_power(np.arange(3.0), masked, None, GRID, 0)


# ---------------------------------------------------------------------- NaN with a status


def direct(t, y, dy) -> Catalog:
    """One object through the constructor, which does not check values."""
    return Catalog([0], [0, len(t)], t, y, dy)


def replaced(values: np.ndarray, row: int, value: float) -> np.ndarray:
    values = values.copy()
    values[row] = value
    return values


#: name -> (catalog, search options, the statuses allowed). Invalid input and
#: degenerate times have one cause; values outside the floating-point range
#: may be searched (a scale-free kernel) or get OUT_OF_RANGE.
CASES = {
    "all-equal times": (Catalog.from_single(np.full(N, 5.0), Y, DY), {}, {"ZERO_BASELINE"}),
    "all-equal times fp32": (Catalog.from_single(np.zeros(N), Y, DY), {"precision": "fp32"},
                             {"ZERO_BASELINE"}),
    "times equal after rounding": (Catalog.from_single(T + 1e20, Y, DY),
                                   {"method": "standard"}, {"ZERO_BASELINE"}),
    "dy of 5e-324": (Catalog.from_single(T, Y, np.full(N, 5e-324)), {}, {"OK", "OUT_OF_RANGE"}),
    "dy of 1e200": (Catalog.from_single(T, Y, np.full(N, 1e200)), {}, {"OK", "OUT_OF_RANGE"}),
    "y and dy of 1e200": (Catalog.from_single(T, Y * 1e200, DY * 1e200), {},
                          {"OK", "OUT_OF_RANGE"}),
    "y of 1e300, standard": (Catalog.from_single(T, Y * 1e300), {"method": "standard"},
                             {"OK", "OUT_OF_RANGE"}),
    "denormal y": (Catalog.from_single(T, Y * 1e-315, DY * 1e-315), {}, {"OK", "OUT_OF_RANGE"}),
    "denormal times fp32": (Catalog.from_single(T * 1e-320, Y, DY), {"precision": "fp32"},
                            {"OK", "OUT_OF_RANGE"}),
    "one dy of 5e-324": (Catalog.from_single(T, Y, replaced(DY, 0, 5e-324)), {},
                         {"ZERO_VARIANCE"}),
    "NaN y via the constructor": (direct(T, replaced(Y, 3, np.nan), DY), {}, {"NOT_FINITE"}),
    "inf y via the constructor": (direct(T, replaced(Y, 3, np.inf), DY),
                                  {"method": "standard"}, {"NOT_FINITE"}),
    "NaN t via the constructor": (direct(replaced(T, 3, np.nan), Y, DY), {}, {"NOT_FINITE"}),
    "NaN dy via the constructor": (direct(T, Y, replaced(DY, 3, np.nan)), {"precision": "fp32"},
                                   {"NOT_FINITE"}),
    "zero dy via the constructor": (direct(T, Y, replaced(DY, 3, 0.0)), {}, {"BAD_UNCERTAINTY"}),
    "negative dy via the constructor": (direct(T, Y, replaced(DY, 3, -0.1)), {},
                                        {"BAD_UNCERTAINTY"}),
}


def assert_status_says_why(result, allowed: set[str]) -> None:
    """Every object: OK with finite numbers, or a status in ``allowed`` with NaN."""
    names = [Status(s).name for s in result.status]
    assert set(names) <= allowed, names
    ok = result.status == Status.OK
    assert np.isfinite(result.power_best[ok]).all() and np.isfinite(result.period[ok]).all()
    assert np.isnan(result.power_best[~ok]).all() and np.isnan(result.top_k_period[~ok]).all()
    if result.power is not None:
        assert np.isnan(result.power[~ok]).all()


@pytest.mark.parametrize("name", list(CASES))
def test_lombscargle_nan_results_carry_their_cause(name):
    catalog, options, allowed = CASES[name]
    result = clperiod.lombscargle(catalog, GRID, periodogram=True, **options)
    assert_status_says_why(result, allowed)
    assert np.isnan(result.false_alarm_probability()[result.status != Status.OK]).all()


@pytest.mark.parametrize("name", ["all-equal times", "NaN t via the constructor",
                                  "zero dy via the constructor", "y and dy of 1e200"])
def test_supersmoother_nan_results_carry_their_cause(name):
    catalog, _, allowed = CASES[name]
    assert_status_says_why(clperiod.supersmoother(catalog, GRID, periodogram=True), allowed)


def test_flat_values_beyond_the_range_are_out_of_range_not_zero_variance():
    """y of 1e-300 varies, but its squares underflow: the cause is the range."""
    tiny = Catalog.from_single(T, Y * 1e-300)
    result = clperiod.supersmoother(tiny, GRID)
    assert Status(result.status[0]).name in {"OK", "OUT_OF_RANGE"}
    constant = Catalog.from_single(T, Y + 1e300)  # equal to within rounding
    assert clperiod.lombscargle(constant, GRID).status[0] == Status.ZERO_VARIANCE


def test_a_degenerate_object_leaves_the_others_alone():
    good = (T, Y, DY)
    catalog = direct(np.r_[T, T, np.full(N, 2.0)], np.r_[Y, replaced(Y, 0, np.nan), Y],
                     np.r_[DY, DY, DY])
    catalog = Catalog(np.arange(3), [0, N, 2 * N, 3 * N], catalog.t, catalog.y, catalog.dy)
    result = clperiod.lombscargle(catalog, GRID)
    assert [Status(s).name for s in result.status] == ["OK", "NOT_FINITE", "ZERO_BASELINE"]
    alone = clperiod.lombscargle(*good[:1], GRID, *good[1:])
    assert result.power_best[0] == alone.power_best[0]


def test_a_grid_without_a_positive_frequency_is_refused():
    with pytest.raises(ValueError, match="grid has no frequency above 0"):
        clperiod.lombscargle(T, FrequencyGrid(0.0, 0.1, 1), Y, DY)


def test_rows_whose_float32_variance_overflows_are_searched_in_their_units():
    data = RNG.normal(size=(3, 2048)).astype(np.float32)
    plain = singlepulse.search(data, np.arange(3.0), 1e-3)
    data[2] *= np.float32(1e30)  # float32 squares overflow: the row is rescaled
    found = singlepulse.search(data, np.arange(3.0), 1e-3)
    assert [singlepulse.RowStatus(s).name for s in found.info.row_status] == ["OK"] * 3
    np.testing.assert_allclose(found.info.std[2], 1e30 * plain.info.std[2], rtol=1e-6)


# ---------------------------------------------------------------------- bad arguments

DATA = RNG.normal(size=(2, 1024)).astype(np.float32)

BAD_ARGUMENTS = {
    "NaN ids": (lambda: Catalog.from_arrays(np.r_[np.full(20, np.nan), np.ones(20)], T, Y),
                ValueError, r"ids: NaN at row 0 is not an object id"),
    "NaN id of a light curve": (
        lambda: Catalog.from_lightcurves([(T, Y), (T, Y)], ids=[1.0, np.nan]),
        ValueError, r"ids: NaN at light curve 1"),
    "NaN ids of offsets": (lambda: Catalog.from_offsets([np.nan, 2.0], [0, 20, N], T, Y),
                           ValueError, r"ids: NaN at object 0"),
    "mixed int and str ids": (
        lambda: Catalog.from_arrays(np.array([1] * 20 + ["a"] * 20, dtype=object), T, Y),
        TypeError, r"ids mix strings and other values \(1 at row 0, 'a' at row 20\)"),
    "None id": (lambda: Catalog.from_lightcurves([(T, Y), (T, Y)],
                                                 ids=np.array([None, 1], dtype=object)),
                ValueError, r"ids: missing id \(None\) at light curve 0"),
    "float nf": (lambda: FrequencyGrid(0.1, 0.01, 10.5), TypeError,
                 r"nf must be an integer, got 10.5"),
    "string nf": (lambda: FrequencyGrid.from_range(0.1, 1.0, "10"), TypeError,
                  r"nf must be an integer, got '10'"),
    "string fmin": (lambda: FrequencyGrid("a", 0.01, 10), TypeError,
                    r"fmin must be a real number, got 'a'"),
    "maximum_frequency=inf": (lambda: FrequencyGrid.auto(T, maximum_frequency=np.inf),
                              ValueError, r"maximum_frequency must be finite, got inf"),
    "maximum_frequency=nan": (lambda: FrequencyGrid.auto(T, maximum_frequency=np.nan),
                              ValueError, r"maximum_frequency must be finite, got nan"),
    "maximum_frequency below the minimum": (
        lambda: FrequencyGrid.auto(T, maximum_frequency=1e-9), ValueError,
        r"maximum_frequency \(1e-09\) must not be below the minimum frequency"),
    "samples_per_peak string": (lambda: FrequencyGrid.auto(T, samples_per_peak="5"), TypeError,
                                r"samples_per_peak must be a real number"),
    "tsamp=None": (lambda: singlepulse.search(DATA, [0.0, 1.0], None), TypeError,
                   r"tsamp must be a real number, got None"),
    "tsamp='abc'": (lambda: singlepulse.search(DATA, [0.0, 1.0], "abc"), TypeError,
                    r"tsamp must be a real number, got 'abc'"),
    "threshold=None": (lambda: singlepulse.search(DATA, [0.0, 1.0], 1e-3, threshold=None),
                       TypeError, r"threshold must be a real number, got None"),
    "string dm": (lambda: singlepulse.search(DATA, ["a", "b"], 1e-3), TypeError,
                  r"dm must be real numbers"),
    "array-valued precision": (
        lambda: clperiod.lombscargle(T, GRID, Y, DY, precision=np.array(["fp64", "fp32"])),
        ValueError, r"precision must be one of \('fp64', 'fp32'\), got array"),
    "one-element array precision": (
        lambda: clperiod.supersmoother(T, GRID, Y, DY, precision=np.array(["fp64"])),
        ValueError, r"precision must be one of \('fp64', 'fp32'\), got array"),
    "array-valued method": (
        lambda: clperiod.lombscargle(T, GRID, Y, DY, method=np.array(["a", "b"])),
        ValueError, r"method must be one of \('generalized', 'standard'\)"),
    "array-valued Kepler precision": (
        lambda: kepler.solve([1.0], [0.1], precision=np.array(["fp64", "fp32"])),
        ValueError, r"precision must be one of"),
    "fit_mean='no'": (lambda: clperiod.lombscargle(T, GRID, Y, DY, fit_mean="no"), TypeError,
                      r"fit_mean must be True or False, got 'no'"),
    "nterms=1.5": (lambda: multiterm_power(T, Y, DY, GRID, 1.5), TypeError,
                   r"nterms must be an integer, got 1.5"),
    "nterms=1.5 in the astropy bridge": (
        lambda: pytest.importorskip("clperiod.astropy").LombScargle(T, Y, DY, nterms=1.5),
        TypeError, r"nterms must be an integer, got 1.5"),
    "nterms=1.5 for false alarms": (
        lambda: stats.false_alarm_probability(0.5, n=N, fmax=2.0, t=T, nterms=1.5),
        TypeError, r"nterms must be an integer, got 1.5"),
}


@pytest.mark.parametrize("name", list(BAD_ARGUMENTS))
def test_bad_arguments_are_named(name):
    call, error, message = BAD_ARGUMENTS[name]
    with pytest.raises(error, match=message):
        call()
