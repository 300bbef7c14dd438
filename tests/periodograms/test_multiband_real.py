"""Multiband Lomb-Scargle on real ugriz light curves: two SDSS Stripe 82 RR Lyrae stars
(``load_example("stripe82_ugriz")``, provenance in ``clperiod/data/README.md``) against
astropy's ``LombScargleMultiband(method="flexible")`` and their literature periods."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from astropy.timeseries import LombScargleMultiband

import clperiod
from clperiod import Catalog, FrequencyGrid, Status
from clperiod.io import load_example

ROOT = Path(__file__).resolve().parents[2]

#: Sesar et al. (2010), Table 2.
PERIODS = {1096833: 0.554791623256, 27887: 0.311494036020}
#: Frequency of the sidereal day, the strongest alias of ground-based data (d^-1).
SIDEREAL = 1.0027379
#: Around both stars' frequencies (1.80 and 3.21 d^-1) and their daily aliases (the
#: comparison needs no resolved peaks).
COMPARISON_GRID = FrequencyGrid.from_range(0.5, 4.0, 3000)
#: Periods from 0.2 to 2 d, a step of a tenth of the peak width 1/T (T = 3337 d).
SEARCH_GRID = FrequencyGrid.from_range(0.5, 5.0, 150_000)


def guide_example() -> str:
    """The code of the guide's example on these stars."""
    page = (ROOT / "docs" / "guide" / "multiband.md").read_text(encoding="utf-8")
    section = page.split("## Example: two RR Lyrae stars in five bands", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


@pytest.fixture(scope="module")
def stars() -> Catalog:
    return load_example("stripe82_ugriz")


def test_the_example_holds_two_stars_in_five_bands(stars):
    assert stars.ids.tolist() == list(PERIODS)
    assert stars.lengths.tolist() == [270, 306]
    assert stars.bands == ("g", "i", "r", "u", "z")
    assert stars.band_counts().tolist() == [[53, 54, 55, 54, 54], [61, 63, 63, 58, 61]]
    assert 51075 < stars.t.min() < stars.t.max() < 54413  # MJD
    assert 14 < stars.y.min() < stars.y.max() < 22 and 0 < stars.dy.min() < stars.dy.max() < 1


def astropy_power(stars: Catalog, index: int, with_dy: bool, **model) -> np.ndarray:
    """astropy's flexible periodogram of one star on COMPARISON_GRID (times from the
    first observation)."""
    star = stars.subset([index])
    band = star.band_labels()[star.band_codes]
    dy = star.dy if with_dy else None
    return LombScargleMultiband(star.t - star.t[0], star.y, band, dy, **model).power(
        COMPARISON_GRID.frequencies(), method="flexible"
    )


@pytest.mark.parametrize(
    ("nterms_base", "nterms_band"), [(1, 1), (1, 0), (0, 1), (2, 1), (3, 2)]
)
@pytest.mark.slow
@pytest.mark.parametrize("with_dy", [True, False])
def test_equals_astropy(stars, nterms_base, nterms_band, with_dy):
    catalog = stars if with_dy else Catalog(stars.ids, stars.offsets, stars.t, stars.y,
                                            band_codes=stars.band_codes, bands=stars.bands)
    model = {"nterms_base": nterms_base, "nterms_band": nterms_band}
    result = clperiod.lombscargle_multiband(catalog, COMPARISON_GRID, periodogram=True, **model)
    assert result.status.tolist() == [Status.OK, Status.OK]
    for index in range(stars.n_objects):
        expected = astropy_power(stars, index, with_dy, **model)
        np.testing.assert_allclose(result.power[index], expected, rtol=1e-9, atol=0)
        assert result.frequency_best[index] == COMPARISON_GRID.frequencies()[expected.argmax()]


@pytest.mark.slow
def test_the_guide_example_finds_the_literature_periods(capsys):
    """The example of docs/guide/multiband.md: three base and two band terms fit both
    stars' light curves; the best periods are the literature ones, within a step of the
    grid, and the example prints what its comment says."""
    example, namespace = guide_example(), {}
    exec(compile(example, "docs/guide/multiband.md", "exec"), namespace)
    result, grid = namespace["r"], namespace["grid"]
    literature = 1.0 / np.array(list(PERIODS.values()))
    np.testing.assert_allclose(result.frequency_best, literature, rtol=0, atol=grid.df)
    printed = example.rsplit("# ", 1)[1]
    assert capsys.readouterr().out.split() == printed.split()


@pytest.mark.slow
def test_one_term_finds_the_rrc_period_and_the_rrab_alias(stars):
    """One term each: the nearly sinusoidal RRc star (27887) peaks at its period, the
    RRab star (1096833) at the alias one sidereal day below its frequency (P = 1.2504 d),
    as the data README says."""
    result = clperiod.lombscargle_multiband(stars, SEARCH_GRID)
    rrab, rrc = (1.0 / period for period in PERIODS.values())
    assert result.frequency_best[1] == pytest.approx(rrc, abs=2 * SEARCH_GRID.df)
    assert result.frequency_best[0] == pytest.approx(rrab - SIDEREAL, abs=2 * SEARCH_GRID.df)
    assert 1.0 / result.frequency_best[0] == pytest.approx(1.2504, abs=1e-4)
