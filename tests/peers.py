"""Optional third-party peers of clperiod's kernels, loaded for tests and benchmarks.

Each loader returns None when its peer is not installed, so that tests skip
cleanly (``pytest.mark.skipif(PEER is None, ...)``).

radvel is installed with ``pip install --no-deps radvel`` (scripts/setup_env.sh):
its own requirements (emcee, nbsphinx, jupyter, ultranest, tables, pandas, ...)
are not installed, and ``radvel/__init__.py`` imports emcee and nbsphinx. So
:func:`load_radvel` never runs that file: it registers a stub package module
``radvel`` (see :data:`RADVEL_STUB_DOC`) pointing at the installed directory and
imports only the submodules that need numpy alone.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import sys
import types
from collections.abc import Callable
from pathlib import Path

import numpy as np

RADVEL_STUB_DOC = ("Stub of the radvel package registered by clperiod's tests/peers.py: "
                   "radvel/__init__.py (emcee, nbsphinx, ...) was not run.")


def _radvel_package() -> types.ModuleType | None:
    """The ``radvel`` module in ``sys.modules``, registering the stub first if needed."""
    if "radvel" in sys.modules:
        return sys.modules["radvel"]
    spec = importlib.util.find_spec("radvel")  # runs no package code for a top-level name
    if spec is None or spec.submodule_search_locations is None:
        return None
    stub = types.ModuleType("radvel", RADVEL_STUB_DOC)
    stub.__path__ = list(spec.submodule_search_locations)
    stub.__spec__ = importlib.machinery.ModuleSpec("radvel", None, is_package=True)
    stub.__spec__.submodule_search_locations = stub.__path__
    sys.modules["radvel"] = stub
    return stub


def _function_from_source(path: str, name: str) -> Callable:
    """Compile one top-level function of a source file (its body may use only ``np``)."""
    tree = ast.parse(Path(path).read_text(), path)
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    # ``annotations`` is the __future__ feature imported above: radvel's
    # annotations name types (ArrayLike) that the namespace lacks
    code = compile(ast.Module([node], type_ignores=[]), path, "exec",
                   flags=annotations.compiler_flag, dont_inherit=True)
    namespace = {"np": np}
    exec(code, namespace)
    return namespace[name]


def load_radvel() -> types.SimpleNamespace | None:
    """radvel's Kepler solver, RV model and likelihood, without importing radvel's package.

    Returns
    -------
    types.SimpleNamespace or None
        None when radvel is not installed. Otherwise the attributes

        * ``version``: the installed distribution's version;
        * ``rv_drive_array(t, per, tp, e, om, k)`` and ``kepler_array(M, e)``:
          the C extension ``radvel._kepler`` (None if it does not import). It
          calls ``exit()``, ending the process, when its 30 solver steps do not
          converge, which happens from e ~ 0.998 on: call it with e <= 0.99
          only, as ``rv_drive`` does (it clamps e to 0.99);
        * ``rv_drive(t, [per, tp, e, om, k])``: ``radvel.kepler.rv_drive``
          (mean anomaly ``2 pi frac((t - tp) / per)``; w of the star);
        * ``timetrans_to_timeperi(tc, per, e, om)``,
          ``timeperi_to_timetrans(tp, per, e, om)``: from ``radvel.orbit``;
        * ``loglike_jitter(residuals, sigma, sigma_jit)``: from
          ``radvel.likelihood`` if it imports (it needs pandas), else compiled
          from that function's source text in the installed file;
        * ``Basis``: ``radvel.basis.Basis`` (conversions between
          parameterisations) if it imports, else None;
        * ``missing``: the reason of each import that failed, by module name.
    """
    package = _radvel_package()
    if package is None:
        return None
    missing: dict[str, str] = {}

    def optional(name: str) -> types.ModuleType | None:
        try:
            return importlib.import_module(name)
        except ImportError as error:
            missing[name] = str(error)
            return None

    kepler_c = optional("radvel._kepler")
    kepler = importlib.import_module("radvel.kepler")
    orbit = importlib.import_module("radvel.orbit")
    likelihood = optional("radvel.likelihood")
    basis = optional("radvel.basis")
    if likelihood is None:
        source = Path(package.__path__[0]) / "likelihood.py"
        loglike_jitter = _function_from_source(str(source), "loglike_jitter")
    else:
        loglike_jitter = likelihood.loglike_jitter
    return types.SimpleNamespace(
        version=importlib.metadata.version("radvel"),
        rv_drive_array=kepler_c and kepler_c.rv_drive_array,
        kepler_array=kepler_c and kepler_c.kepler_array,
        rv_drive=kepler.rv_drive,
        timetrans_to_timeperi=orbit.timetrans_to_timeperi,
        timeperi_to_timetrans=orbit.timeperi_to_timetrans,
        loglike_jitter=loglike_jitter,
        Basis=basis and basis.Basis,
        missing=missing,
    )


def load_nifty_ls() -> types.ModuleType | None:
    """nifty-ls (``nifty_ls``), the FINUFFT Lomb-Scargle peer; None when it is not installed.

    ``nifty_ls.lombscargle(t, y, dy, fmin=, fmax=, Nf=, ...)`` evaluates
    ``fmin + m (fmax - fmin) / (Nf - 1)``, ``m < Nf`` (``fmax`` included); ``t``,
    ``y`` and ``dy`` must share one dtype. Its power at ``f = 0`` is a rounding
    residue, not NaN.
    """
    try:
        return importlib.import_module("nifty_ls")
    except ImportError:
        return None


def load_p4j() -> types.ModuleType | None:
    """P4J (``P4J``), the multi-harmonic AOV peer; None when it is not installed.

    PyPI has only its source (1.1.2): ``pip install P4J`` compiles Cython
    extensions and needs a C compiler and the Python headers. It computes in
    float32 (``t``, ``y``, ``dy``, ``frac(t f)``); ``MultiBandPeriodogram`` fits
    one harmonic per band whatever ``Nharmonics`` is (spec §3.3).
    """
    try:
        return importlib.import_module("P4J")
    except ImportError:
        return None


def load_pyastronomy_pdm() -> types.ModuleType | None:
    """PyAstronomy's PDM (``PyAstronomy.pyTiming.pyPDM``); None when it is not installed.

    ``PyPDM(time, mag).pdmEquiBinCover(nbins, covers, Scanner(...))`` is the convention
    ``"pyastronomy"`` of ``tests/reference/pdm.py``; ``pdmEquiBin`` merges bins of fewer
    than 3 points with a neighbour. Unweighted, float64.
    """
    try:
        return importlib.import_module("PyAstronomy.pyTiming.pyPDM")
    except ImportError:
        return None
