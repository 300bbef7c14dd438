"""Every documented public name imports at its documented path, and the old module paths
(before the modules moved into domain packages) still give the same objects, with a
DeprecationWarning naming the new path.

The lists are those of the README and the ``__all__`` lists before the move, written out
here so that a name dropped from a module or an ``__all__`` fails this test.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import warnings

import pytest

import clperiod
from clperiod import _moved

TOP_LEVEL = [
    "BlsResult",
    "Catalog",
    "DeviceInfo",
    "FrequencyArray",
    "FrequencyGrid",
    "LombScargleResult",
    "MhaovResult",
    "MultibandResult",
    "PhaseStatisticResult",
    "Status",
    "SuperSmootherResult",
    "__version__",
    "aov",
    "bls",
    "conditional_entropy",
    "kepler",
    "list_devices",
    "lombscargle",
    "lombscargle_async",
    "lombscargle_multiband",
    "mhaov",
    "orbits",
    "pdm",
    "select_devices",
    "singlepulse",
    "supersmoother",
]

#: The ``__all__`` of each public module.
PUBLIC_MODULES = {
    "clperiod.kepler": ["KeplerSolution", "KeplerStatus", "ModelStatus", "RVLikelihood",
                        "SearchResult", "chi2", "empty_params", "loglike", "radial_velocity",
                        "search", "solve"],
    "clperiod.singlepulse": ["CANDIDATE_DTYPE", "Candidates", "Level", "RowStatus",
                             "SearchInfo", "boxcar_plan", "search"],
    "clperiod.io": ["CatalogReader", "EXAMPLES", "RVData", "RV_EXAMPLES",
                    "catalog_from_dataframe", "catalog_from_table", "example_path",
                    "load_example", "load_rv_example", "open_catalog", "read_catalog",
                    "read_lightcurve_csv", "read_rv", "write_periodograms", "write_results"],
    "clperiod.dask": ["lombscargle", "lombscargle_multiband", "mhaov", "supersmoother", "pdm",
                      "aov", "conditional_entropy", "bls"],
    "clperiod.pipeline": ["ALGORITHMS", "AutoGrid", "CatalogRun", "GridResolutionWarning",
                          "PeriodSearch", "catalog_extent", "default_plot_labels",
                          "run_catalog", "work_directory"],
    "clperiod.astropy": ["BoxLeastSquares", "LombScargle", "LombScargleMultiband",
                         "lombscargle_clperiod",
                         "register_astropy_method"],
    "clperiod.scipy": ["lombscargle"],
    "clperiod.plot": ["PlotLabels", "file_stem", "plot_objects", "plot_result"],
}

#: Names the README documents in modules that did not move.
OTHER_DOCUMENTED = {"clperiod.grid": ["grid_warnings"]}

#: Old module -> the names the README (and CHANGES.md) use at that path.
OLD_PATHS = {
    "angles": ["turns_between"],
    "catalog_files": ["CatalogReader"],
    "clustering": [],
    "device": ["thread_memory_pool", "write", "upload"],
    "disposal": [],
    "distributed": ["worker_device", "worker_rank"],
    "frames": ["lightcurve_columns"],
    "grouping": [],
    "kernels": ["declare_scalar_args"],
    "multiterm": ["multiterm_coefficients", "multiterm_max_power", "multiterm_power"],
    "planning": ["available_host_memory"],
    "pulsefiles": ["read_presto_series", "write_candidates"],
    "runlock": [],
    "smoothing": ["scale_free", "single_pass_smooth", "supsmu_smooth"],
    "sort": ["fold_and_sort"],
    "stats": ["catalog_false_alarm_probability", "false_alarm_level",
              "false_alarm_probability"],
    "tables": ["result_columns"],
    "workers": [],
}

#: The old paths whose new module exists (one may have been removed since; see
#: test_an_old_path_to_a_removed_module_says_so).
PRESENT = {old: names for old, names in OLD_PATHS.items()
           if importlib.util.find_spec(_moved.MOVED[f"clperiod.{old}"]) is not None}


def _forget(monkeypatch: pytest.MonkeyPatch, old: str) -> None:
    """Make the next import of ``clperiod.<old>`` a first one."""
    monkeypatch.delitem(sys.modules, f"clperiod.{old}", raising=False)
    monkeypatch.delattr(clperiod, old, raising=False)


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_top_level_names(name):
    assert name in clperiod.__all__
    assert getattr(clperiod, name) is not None


def test_top_level_functions_and_packages():
    for name in ("lombscargle", "lombscargle_async", "supersmoother", "pdm", "aov",
                 "conditional_entropy"):
        assert inspect.isfunction(getattr(clperiod, name)), name
    for name in ("kepler", "singlepulse"):
        assert hasattr(getattr(clperiod, name), "__path__"), name
    assert clperiod.orbits is importlib.import_module("clperiod.kepler.orbits")
    assert isinstance(clperiod.__version__, str)


@pytest.mark.parametrize("module", sorted(PUBLIC_MODULES))
def test_public_module_names(module):
    imported = importlib.import_module(module)
    assert sorted(imported.__all__) == sorted(PUBLIC_MODULES[module])
    for name in PUBLIC_MODULES[module]:
        assert getattr(imported, name) is not None, f"{module}.{name}"


def test_searches_are_functions():
    import clperiod.dask
    import clperiod.kepler
    import clperiod.singlepulse

    for function in (clperiod.singlepulse.search, clperiod.kepler.search,
                     clperiod.dask.lombscargle, clperiod.dask.supersmoother,
                     clperiod.dask.lombscargle_multiband, clperiod.dask.mhaov):
        assert inspect.isfunction(function)


@pytest.mark.parametrize("module", sorted(OTHER_DOCUMENTED))
def test_other_documented_names(module):
    imported = importlib.import_module(module)
    for name in OTHER_DOCUMENTED[module]:
        assert hasattr(imported, name), f"{module}.{name}"


@pytest.mark.parametrize("old", sorted(PRESENT))
def test_old_path_warns_and_gives_the_module_at_the_new_path(old, monkeypatch):
    new = _moved.MOVED[f"clperiod.{old}"]
    _forget(monkeypatch, old)
    with pytest.warns(DeprecationWarning, match=f"clperiod.{old} moved to {new}"):
        module = importlib.import_module(f"clperiod.{old}")
    assert module is importlib.import_module(new)
    assert module.__name__ == new
    for name in PRESENT[old]:
        if name in MOVED_AGAIN.get(old, {}):
            with pytest.warns(DeprecationWarning, match=MOVED_AGAIN[old][name]):
                assert getattr(module, name) is _attribute(MOVED_AGAIN[old][name])
        else:
            assert getattr(module, name) is getattr(sys.modules[new], name)


# names that left the module their old path now aliases: old module -> name -> new path
MOVED_AGAIN = {"planning": {"available_host_memory":
                            "clperiod.engine.staging.available_host_memory"}}


def _attribute(path: str) -> object:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_from_import_of_an_old_path_points_at_the_import(monkeypatch):
    from clperiod.singlepulse import files

    _forget(monkeypatch, "pulsefiles")
    with pytest.warns(DeprecationWarning, match="clperiod.singlepulse.files") as record:
        from clperiod.pulsefiles import read_presto_series, write_candidates
    assert read_presto_series is files.read_presto_series
    assert write_candidates is files.write_candidates
    assert record[0].filename == __file__


def test_import_statement_of_an_old_path(monkeypatch):
    from clperiod.periodograms import stats

    _forget(monkeypatch, "stats")
    with pytest.warns(DeprecationWarning, match="clperiod.periodograms.stats"):
        import clperiod.stats
    assert clperiod.stats is stats
    assert sys.modules["clperiod.stats"] is stats


def test_monkeypatching_the_old_path_patches_the_new(monkeypatch):
    from clperiod.periodograms import stats

    def level(*args, **kwargs):
        return 0.5

    with pytest.warns(DeprecationWarning):
        _forget(monkeypatch, "stats")
        monkeypatch.setattr("clperiod.stats.false_alarm_level", level)
    assert stats.false_alarm_level is level


def test_orbits_keeps_its_path_quietly(monkeypatch):
    from clperiod.kepler import orbits

    monkeypatch.delitem(sys.modules, "clperiod.orbits", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from clperiod import orbits as top_orbits
        from clperiod.orbits import BASES, convert, timetrans_to_timeperi
    assert (BASES, convert, timetrans_to_timeperi) == (
        orbits.BASES, orbits.convert, orbits.timetrans_to_timeperi)
    assert top_orbits is orbits is sys.modules["clperiod.orbits"]


def test_functions_and_packages_are_not_aliased():
    for name in ("lombscargle", "supersmoother", "kepler", "singlepulse", "io", "dask",
                 "pipeline"):
        assert f"clperiod.{name}" not in _moved.MOVED
    assert set(OLD_PATHS) | {"orbits"} <= {old.rpartition(".")[2] for old in _moved.MOVED}


def test_an_old_path_to_a_removed_module_says_so(monkeypatch):
    monkeypatch.setitem(_moved.MOVED, "clperiod.gone_module", "clperiod.io.gone_module")
    with pytest.raises(ModuleNotFoundError, match="moved to 'clperiod.io.gone_module', which "
                                                  "has since been removed") as error:
        importlib.import_module("clperiod.gone_module")
    assert error.value.name == "clperiod.gone_module"


def test_an_unknown_name_is_still_missing():
    with pytest.raises(ModuleNotFoundError, match="clperiod.no_such_module"):
        importlib.import_module("clperiod.no_such_module")
