"""Old import paths of modules that moved into the domain packages.

Every module once sat directly in ``clperiod/``. Importing one by its old name
(``import clperiod.stats``, ``from clperiod.pulsefiles import read_presto_series``) still
works: the import gives the module at its new path, the same module object (so
monkeypatching either name patches both), with a :class:`DeprecationWarning` naming the new
path. :func:`install` puts the finder on :data:`sys.meta_path`; ``clperiod/__init__.py``
calls it.

Not aliased: ``clperiod.lombscargle`` and ``clperiod.supersmoother`` (the functions), and
``clperiod.kepler``, ``clperiod.singlepulse``, ``clperiod.io``, ``clperiod.dask`` and
``clperiod.pipeline`` (packages that hand on the same public names).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType

__all__ = ["KEPT", "MOVED", "install"]

#: Old module path -> new module path.
MOVED = {
    "clperiod.angles": "clperiod.engine.angles",
    "clperiod.device": "clperiod.engine.devices",
    "clperiod.kernels": "clperiod.engine.kernels",
    "clperiod.planning": "clperiod.engine.planner",
    "clperiod.scheduler": "clperiod.engine.scheduler",
    "clperiod.workers": "clperiod.engine.workers",
    "clperiod.multiterm": "clperiod.periodograms.multiterm",
    "clperiod.smoothing": "clperiod.periodograms.smoothing",
    "clperiod.stats": "clperiod.periodograms.stats",
    "clperiod.standardize": "clperiod.periodograms.standardize",
    "clperiod.sort": "clperiod.periodograms.folding",
    "clperiod.host": "clperiod.periodograms.inputs",
    "clperiod.orbits": "clperiod.kepler.orbits",
    "clperiod.rvmodel": "clperiod.kepler.rvmodel",
    "clperiod.rvsearch": "clperiod.kepler.rvsearch",
    "clperiod.clustering": "clperiod.singlepulse.clustering",
    "clperiod.pulsefiles": "clperiod.singlepulse.files",
    "clperiod.catalog_files": "clperiod.io.readers",
    "clperiod.catalog_formats": "clperiod.io.formats",
    "clperiod.frames": "clperiod.io.frames",
    "clperiod.results_files": "clperiod.io.results",
    "clperiod.tables": "clperiod.io.tables",
    "clperiod.file_errors": "clperiod.io.file_errors",
    "clperiod.grouping": "clperiod.io.grouping",
    "clperiod.chunking": "clperiod.io.chunks",
    "clperiod.disposal": "clperiod.io.disposal",
    "clperiod.runlock": "clperiod.pipeline.runlock",
    "clperiod.distributed": "clperiod.dask.workers",
}

#: Old paths that stay public without a warning: ``clperiod.orbits`` is an attribute of
#: ``clperiod`` (in its ``__all__``), so ``import clperiod.orbits`` keeps working quietly too.
KEPT = frozenset({"clperiod.orbits"})


class _MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds the old paths of :data:`MOVED` and loads them as their new modules."""

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        if importlib.util.find_spec(new) is None:
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: it moved to {new!r}, which has since been removed",
                name=fullname,
            )
        return importlib.util.spec_from_loader(fullname, _AliasLoader(new))


class _AliasLoader(importlib.abc.Loader):
    """Puts the module at its new path into :data:`sys.modules` under the old name."""

    def __init__(self, new: str) -> None:
        self.new = new

    def exec_module(self, module: ModuleType) -> None:
        old = module.__name__
        if old not in KEPT:
            # stacklevel 2: the import statement (the import system's frames are skipped)
            warnings.warn(
                f"{old} moved to {self.new}; import it from there",
                DeprecationWarning,
                stacklevel=2,
            )
        # the import system returns what sys.modules holds under the old name once this
        # returns: the module at its new path, so both names give one module object
        sys.modules[old] = importlib.import_module(self.new)


def install() -> None:
    """Put the finder of old module paths on :data:`sys.meta_path` (once)."""
    if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder())
