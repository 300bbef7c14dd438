"""Read de-dispersed time series and write single-pulse candidates in peer formats.

Inputs (a DM x time array for :func:`clperiod.singlepulse.search`):

* PRESTO ``.dat`` time series (raw little-endian float32, one file per DM)
  with the ``.inf`` metadata beside them (:func:`read_presto_inf`,
  :func:`read_presto_dat`, :func:`read_presto_series`);
* a 2-D ``.npy`` array ``(n_dm, n_t)``, memory-mapped (:func:`read_npy_series`).

Outputs (:func:`write_candidates` picks the writer from the file name; each
file is written under an exclusive temporary name and moved into place when
complete, ``clperiod.io.results.atomic_path``):

=================  ==================  ==============================================
format             file name           layout
=================  ==================  ==============================================
singlepulse        ``*.singlepulse``   PRESTO: ``# DM Sigma Time (s) Sample Downfact``
heimdall           ``*.cand``          9 tab-separated columns and a trailing tab
astroaccelerate    ``*.aa.bin``        float32 little-endian ``[dm, time, snr, width]``
npy                ``*.npy``           the structured array (``np.save``)
csv                ``*.csv``           a header line and every field
=================  ==================  ==============================================

Conventions, and where the peers differ from clperiod's candidate record:

* **Width.** clperiod stores the boxcar width in native samples, as PRESTO
  (``Downfact``) and AstroAccelerate do. Heimdall stores a filter index with
  width = 2**filter; the heimdall writer prints ``round(log2(width))``, so a
  width that is not a power of two is rounded to the nearest one in log2
  (3 -> 2, i.e. 4 samples; 6 -> 3, i.e. 8 samples).
* **Time.** ``sample`` is the boxcar centre in native samples of the input and
  ``time = sample * tsamp`` seconds from the first sample (no MJD, no
  ``tstart``: AstroAccelerate's ``tstart`` is taken as 0). The peers also
  report approximately the boxcar centre. PRESTO's ``Sample`` indexes its
  ``.dat``, which is clperiod's native resolution when the ``.dat`` files are
  the input.
* **S/N.** Every file carries clperiod's S/N (boxcar sum minus its mean, over
  its standard deviation; see :func:`clperiod.singlepulse.search`). The
  peers define theirs differently: PRESTO ``Sigma`` = sum / RMS / sqrt(width)
  after its own detrending; heimdall normalises by MAD x 1.4862 and divides by
  sqrt(width); AstroAccelerate uses (sum - mu_W) / sigma_W with sigma_W
  interpolated between decimation levels. Values agree only up to these
  conventions.
* **DM trial.** Heimdall's ``dm_trial`` column is ``dm_index``, the row of
  the DM x time array (for PRESTO inputs the rows are sorted by DM).
* **One file for all DMs.** PRESTO writes one ``.singlepulse`` per ``.dat``;
  here one file holds every DM, its rows sorted by DM then sample (the
  per-DM files concatenated), with the header written only when there are
  candidates, as PRESTO does.
* **Precision.** Heimdall prints floats with 6 significant digits; here the
  S/N keeps 6, the DM 9 and the time 12 so nothing is lost (parsers read
  either). AstroAccelerate's records are float32, so the time there carries
  about 7 significant digits.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from clperiod.io.file_errors import text_errors
from clperiod.io.results import atomic_path

__all__ = [
    "FORMATS",
    "read_heimdall_cand",
    "read_npy_series",
    "read_presto_dat",
    "read_presto_inf",
    "read_presto_series",
    "read_singlepulse",
    "write_astroaccelerate",
    "write_candidates",
    "write_heimdall_cand",
    "write_singlepulse",
]

#: Output formats of :func:`write_candidates`: name -> file-name suffix.
FORMATS: dict[str, str] = {
    "singlepulse": ".singlepulse",
    "heimdall": ".cand",
    "astroaccelerate": ".aa.bin",
    "npy": ".npy",
    "csv": ".csv",
}

# .inf label (the text before " = ", matched as a prefix since the C and Python
# writers of PRESTO word some labels differently) -> (key, type).
_INF_KEYS: dict[str, tuple[str, type]] = {
    "Data file name without suffix": ("basename", str),
    "Telescope used": ("telescope", str),
    "Instrument used": ("instrument", str),
    "Object being observed": ("object", str),
    "J2000 Right Ascension": ("ra", str),
    "J2000 Declination": ("dec", str),
    "Data observed by": ("observer", str),
    "Epoch of observation (MJD)": ("epoch", float),
    "Barycentered?": ("barycentered", int),
    "Number of bins in the time series": ("n_samples", int),
    "Width of each time series bin (sec)": ("tsamp", float),
    "Any breaks in the data?": ("breaks", int),
    "Type of observation": ("waveband", str),
    "Beam diameter (arcsec)": ("beam_diameter", float),
    "Dispersion measure (cm-3 pc)": ("dm", float),
    "Central freq of low channel (Mhz)": ("lofreq", float),
    "Total bandwidth (Mhz)": ("bandwidth", float),
    "Number of channels": ("n_channels", int),
    "Channel bandwidth (Mhz)": ("channel_width", float),
    "Data analyzed by": ("analyst", str),
    "On/Off bin pair": ("onoff", int),
}
# A padded label, then "=" after white space (labels such as "(1=yes, 0=no)"
# hold an "=" without it), then the value.
_INF_LINE = re.compile(r"^(.*?\S)\s+=(.*)$")

_SINGLEPULSE_HEADER = "# DM      Sigma      Time (s)     Sample    Downfact\n"
_SINGLEPULSE_ROW = "%7.2f %7.2f %13.6f %10d     %3d\n"
_SINGLEPULSE_DTYPE = np.dtype(
    [("dm", "f8"), ("snr", "f4"), ("time", "f8"), ("sample", "i8"), ("width", "i4")]
)
_HEIMDALL_ROW = "%.6g\t%d\t%.12g\t%d\t%d\t%.9g\t%d\t%d\t%d\t\n"
_HEIMDALL_DTYPE = np.dtype(
    [
        ("snr", "f4"),
        ("sample", "i8"),
        ("time", "f8"),
        ("filter", "i4"),
        ("dm_index", "i4"),
        ("dm", "f8"),
        ("members", "i4"),
        ("begin", "i8"),
        ("end", "i8"),
    ]
)


# ---------------------------------------------------------------------- readers


def read_presto_inf(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a PRESTO ``.inf`` metadata file.

    Each line is a padded label, ``=`` and a value; the free text after
    ``Any additional notes:`` is kept as ``notes``.

    Parameters
    ----------
    path : path-like
        The ``.inf`` file.

    Returns
    -------
    dict
        Known labels under short keys with typed values: ``basename``,
        ``telescope``, ``instrument``, ``object``, ``ra``, ``dec``,
        ``observer``, ``epoch`` (MJD), ``barycentered``, ``n_samples``,
        ``tsamp`` (s), ``breaks``, ``waveband``, ``beam_diameter``, ``dm``
        (pc cm^-3), ``lofreq``, ``bandwidth``, ``n_channels``,
        ``channel_width``, ``analyst``; ``onoff`` (list of (on, off) bin
        pairs) when the data have breaks; ``notes``. Other labels are kept
        verbatim (whitespace collapsed) with string values.

    Raises
    ------
    ValueError
        A numeric field is not a number (the message names the file, line and
        label).
    """
    path = Path(path)
    info: dict[str, Any] = {}
    with open(path, encoding="latin-1") as handle:
        lines = handle.read().splitlines()
    for number, line in enumerate(lines, start=1):
        if line.strip().startswith("Any additional notes"):
            info["notes"] = "\n".join(text.strip() for text in lines[number:]).strip()
            break
        match = _INF_LINE.match(line)
        if match is None:
            continue
        label, value = " ".join(match[1].split()), match[2].strip()
        key, kind = next(
            ((k, t) for prefix, (k, t) in _INF_KEYS.items() if label.startswith(prefix)),
            (label, str),
        )
        try:
            if key == "onoff":
                info.setdefault(key, []).append(tuple(int(v) for v in value.split(",")))
            else:
                info[key] = kind(value)
        except ValueError:
            what = "a number" if kind is float else "integers" if key == "onoff" else "an integer"
            raise ValueError(
                f"{path}: line {number}: {label!r} must be {what}, got {value!r}"
            ) from None
    return info


def read_presto_dat(path: str | os.PathLike[str]) -> tuple[np.ndarray, dict[str, Any]]:
    """Read one PRESTO time series (``.dat``) and its ``.inf``.

    Parameters
    ----------
    path : path-like
        The ``.dat`` file (raw little-endian float32); the ``.inf`` of the
        same basename must sit beside it.

    Returns
    -------
    series : numpy.ndarray
        float32, length ``info["n_samples"]``.
    info : dict
        :func:`read_presto_inf` of the ``.inf``.

    Raises
    ------
    FileNotFoundError
        The ``.dat`` or its ``.inf`` is missing.
    ValueError
        The ``.inf`` lacks the sample count or time step, or the file length
        disagrees with it.
    """
    info = _dat_info(Path(path))
    return _read_dat(Path(path), info["n_samples"]), info


def read_presto_series(
    paths: list[str | os.PathLike[str]],
    *,
    require_finite: bool = False,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Read PRESTO ``.dat`` files, one per DM, into a DM x time array.

    Parameters
    ----------
    paths : list of path-like
        ``.dat`` files, each with its ``.inf`` beside it, in any order.
    require_finite : bool
        Raise for a NaN or infinite sample, naming the file and the sample
        (a search with ``nan_policy="raise"`` would name only the row).

    Returns
    -------
    data : numpy.ndarray
        float32, shape (n_dm, n_t), rows sorted by DM.
    dm : numpy.ndarray
        float64 DM of each row (pc cm^-3).
    tsamp : float
        Sampling time (s).

    Raises
    ------
    ValueError
        No files, an ``.inf`` without a DM, a file whose time step or
        length differs from the first file's (the message names it), a
        non-finite sample with ``require_finite``; and the errors of
        :func:`read_presto_dat`. Every file's size is checked before the
        array is allocated.
    """
    if not paths:
        raise ValueError("no .dat files given")
    files = [Path(p) for p in paths]
    infos = [_dat_info(p) for p in files]
    first, tsamp, n_t = files[0], infos[0]["tsamp"], infos[0]["n_samples"]
    for path, info in zip(files, infos, strict=True):
        if "dm" not in info:
            raise ValueError(f"{_inf_path(path)}: no 'Dispersion measure (cm-3 pc)' line")
        if not math.isclose(info["tsamp"], tsamp, rel_tol=1e-9):
            raise ValueError(
                f"{path}: time step {info['tsamp']} s differs from {tsamp} s of {first}"
            )
        if info["n_samples"] != n_t:
            raise ValueError(f"{path}: {info['n_samples']} samples differ from {n_t} of {first}")
        _check_dat_size(path, n_t)
    dm = np.array([info["dm"] for info in infos], dtype=np.float64)
    order = np.argsort(dm, kind="stable")
    data = np.empty((len(files), n_t), dtype=np.float32)
    for row, index in enumerate(order):
        data[row] = _read_dat(files[index], n_t)
        if require_finite:
            _check_finite(files[index], data[row], tsamp)
    return data, dm[order], tsamp


def read_npy_series(
    path: str | os.PathLike[str],
    dm: np.ndarray | list[float] | None = None,
    *,
    dm_start: float | None = None,
    dm_step: float | None = None,
    tsamp: float,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Memory-map a DM x time ``.npy`` array and attach its DMs.

    Parameters
    ----------
    path : path-like
        A 2-D ``.npy`` array (n_dm, n_t) of real numbers; it is opened with
        ``mmap_mode="r"`` so a large file is not read whole.
    dm : array_like, optional
        DM of each row; or give ``dm_start`` and ``dm_step``.
    dm_start, dm_step : float, optional
        Row ``i`` has DM ``dm_start + i * dm_step``.
    tsamp : float
        Sampling time (s).

    Returns
    -------
    data : numpy.memmap
        The array in its stored dtype (not converted).
    dm : numpy.ndarray
        float64 DM of each row.
    tsamp : float

    Raises
    ------
    ValueError
        Not a 2-D real array, a DM specification missing, duplicated or of
        the wrong length, or a ``tsamp`` that is not positive.
    """
    path = Path(path)
    try:
        data = np.load(path, mmap_mode="r")
    except (ValueError, EOFError) as error:  # e.g. an object array, a truncated header
        raise ValueError(f"{path}: not a readable .npy array ({error})") from None
    if not isinstance(data, np.ndarray) or data.ndim != 2 or data.dtype.kind not in "fiu":
        shape = getattr(data, "shape", None)
        dtype = getattr(data, "dtype", type(data).__name__)
        raise ValueError(
            f"{path}: expected a 2-D (n_dm, n_t) real array, got shape {shape} dtype {dtype}"
        )
    n_dm = data.shape[0]
    if dm is not None and (dm_start is not None or dm_step is not None):
        raise ValueError("give either dm or dm_start and dm_step, not both")
    if dm is None:
        if dm_start is None or dm_step is None:
            raise ValueError(f"{path}: give the DMs: dm, or dm_start and dm_step")
        dm = dm_start + dm_step * np.arange(n_dm, dtype=np.float64)
    dm = np.asarray(dm, dtype=np.float64)
    if dm.shape != (n_dm,) or not np.all(np.isfinite(dm)):
        raise ValueError(f"{path}: expected {n_dm} finite DMs (one per row), got shape {dm.shape}")
    return data, dm, _check_tsamp(tsamp, path)


def read_singlepulse(path: str | os.PathLike[str]) -> np.ndarray:
    """Read a PRESTO ``.singlepulse`` file.

    Returns
    -------
    numpy.ndarray
        Structured array with fields ``dm``, ``snr``, ``time``, ``sample``,
        ``width`` (PRESTO's DM, Sigma, Time, Sample, Downfact); empty for an
        empty file.
    """
    return _read_table(Path(path), _SINGLEPULSE_DTYPE)


def read_heimdall_cand(path: str | os.PathLike[str]) -> np.ndarray:
    """Read a heimdall ``.cand`` file.

    Returns
    -------
    numpy.ndarray
        Structured array with fields ``snr``, ``sample``, ``time``,
        ``filter`` (log2 of the width), ``dm_index``, ``dm``, ``members``,
        ``begin``, ``end``.
    """
    return _read_table(Path(path), _HEIMDALL_DTYPE)


# ---------------------------------------------------------------------- writers


def write_singlepulse(path: str | os.PathLike[str], cands: np.ndarray) -> None:
    """Write candidates as a PRESTO ``.singlepulse`` file.

    Rows ``"%7.2f %7.2f %13.6f %10d     %3d"`` (DM, S/N, time, sample,
    width), sorted by DM then sample, after PRESTO's header line; an empty
    file when there are no candidates.
    """
    names = ("dm", "snr", "time", "sample", "width")
    _require(cands, names)
    rows = cands[np.lexsort((cands["sample"], cands["dm"]))]
    with atomic_path(path) as temporary, open(temporary, "w") as handle:
        if len(rows):
            handle.write(_SINGLEPULSE_HEADER)
        columns = (rows[n] for n in names)
        handle.writelines(_SINGLEPULSE_ROW % row for row in zip(*columns, strict=True))


def write_heimdall_cand(path: str | os.PathLike[str], cands: np.ndarray) -> None:
    """Write candidates as a heimdall ``.cand`` file.

    Nine tab-separated columns and a trailing tab: snr, sample, time, filter
    (``round(log2(width))``; widths that are not powers of two are rounded),
    dm_trial (``dm_index``), dm, members, begin, end.
    """
    names = ("snr", "sample", "time", "width", "dm_index", "dm", "members", "begin", "end")
    _require(cands, names)
    columns = [cands[n] for n in names]
    columns[3] = np.rint(np.log2(cands["width"])).astype(np.int64)  # heimdall's filter index
    with atomic_path(path) as temporary, open(temporary, "w") as handle:
        handle.writelines(_HEIMDALL_ROW % row for row in zip(*columns, strict=True))


def write_astroaccelerate(path: str | os.PathLike[str], cands: np.ndarray) -> None:
    """Write candidates as AstroAccelerate's binary: float32 ``[dm, time, snr, width]``.

    Little-endian, one quadruplet per candidate, no header; read back with
    ``np.fromfile(path, dtype="<f4").reshape(-1, 4)``.
    """
    names = ("dm", "time", "snr", "width")
    _require(cands, names)
    values = np.column_stack([cands[n] for n in names]).astype("<f4").reshape(-1, 4)
    with atomic_path(path) as temporary:
        values.tofile(temporary)


def write_candidates(
    path: str | os.PathLike[str], cands: np.ndarray, format: str | None = None
) -> str:
    """Write candidates in one of :data:`FORMATS`.

    Parameters
    ----------
    path : path-like
        The output file.
    cands : numpy.ndarray
        Structured array of :func:`clperiod.singlepulse.search`.
    format : {"singlepulse", "heimdall", "astroaccelerate", "npy", "csv"}, optional
        Default: from the file name (``.singlepulse``, ``.cand``,
        ``.aa.bin``, ``.npy``, ``.csv``).

    Returns
    -------
    str
        The format written.

    Raises
    ------
    ValueError
        Unknown format, a file name that names none, or fields missing from
        ``cands``.
    """
    if format is None:
        name = Path(path).name
        format = next((f for f, suffix in FORMATS.items() if name.endswith(suffix)), None)
        if format is None:
            raise ValueError(
                f"{path}: cannot tell the format from the name; use a suffix of "
                f"{', '.join(FORMATS.values())} or give format"
            )
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    if format == "npy":
        # a handle: np.save would append ".npy"
        with atomic_path(path) as temporary, open(temporary, "wb") as handle:
            np.save(handle, np.asarray(cands))
    elif format == "csv":
        _write_csv(path, cands)
    else:
        {
            "singlepulse": write_singlepulse,
            "heimdall": write_heimdall_cand,
            "astroaccelerate": write_astroaccelerate,
        }[format](path, cands)
    return format


# ---------------------------------------------------------------------- helpers


def _inf_path(dat: Path) -> Path:
    return dat.with_name(dat.name.removesuffix(".dat") + ".inf")


def _dat_info(dat: Path) -> dict[str, Any]:
    """The ``.inf`` of a ``.dat``, checked for the sample count and time step."""
    inf = _inf_path(dat)
    if not inf.is_file():
        raise FileNotFoundError(f"{dat}: no PRESTO metadata file {inf} beside it")
    info = read_presto_inf(inf)
    for key, label in (
        ("n_samples", "Number of bins in the time series"),
        ("tsamp", "Width of each time series bin (sec)"),
    ):
        if key not in info:
            raise ValueError(f"{inf}: no {label!r} line")
    if info["n_samples"] < 1:
        raise ValueError(
            f"{inf}: 'Number of bins in the time series' must be at least 1, got "
            f"{info['n_samples']}"
        )
    _check_tsamp(info["tsamp"], inf)
    return info


def _check_dat_size(dat: Path, n_samples: int) -> None:
    """The ``.dat`` holds ``n_samples`` float32 values (its .inf's count)."""
    size = dat.stat().st_size
    if size != 4 * n_samples:
        raise ValueError(
            f"{dat}: {size} bytes, but its .inf gives {n_samples} float32 samples "
            f"({4 * n_samples} bytes)"
        )


def _read_dat(dat: Path, n_samples: int) -> np.ndarray:
    _check_dat_size(dat, n_samples)
    return np.fromfile(dat, dtype="<f4").astype(np.float32, copy=False)


def _check_finite(dat: Path, series: np.ndarray, tsamp: float) -> None:
    """Raise for the first NaN or infinite sample of a ``.dat``, naming file and sample."""
    bad = np.flatnonzero(~np.isfinite(series))
    if bad.size:
        k = int(bad[0])
        raise ValueError(
            f"{dat}: sample {k} (t = {k * tsamp:.9g} s) is {series[k]}, and "
            f"{bad.size} sample(s) in all are not finite; search with "
            "nan_policy='mask' to leave them out"
        )


def _check_tsamp(tsamp: float, path: Path) -> float:
    tsamp = float(tsamp)
    if not (math.isfinite(tsamp) and tsamp > 0):
        raise ValueError(f"{path}: the sampling time must be positive and finite, got {tsamp}")
    return tsamp


def _require(cands: np.ndarray, names: tuple[str, ...]) -> None:
    missing = [n for n in names if n not in (cands.dtype.names or ())]
    if missing:
        raise ValueError(f"candidates lack the field(s) {missing}; got {cands.dtype.names}")


def _read_table(path: Path, dtype: np.dtype) -> np.ndarray:
    """Whitespace-separated rows (``#`` comments) into a structured array."""
    with text_errors(path), open(path, encoding="utf-8") as handle:
        rows = [line for line in handle if line.split("#", 1)[0].strip()]
    if not rows:
        return np.empty(0, dtype=dtype)
    try:
        return np.loadtxt(rows, dtype=dtype, ndmin=1)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def _write_csv(path: str | os.PathLike[str], cands: np.ndarray) -> None:
    def fmt(kind: np.dtype) -> str:
        if kind.kind in "iu":
            return "%d"
        return "%.9g" if kind.kind == "f" and kind.itemsize == 4 else "%.17g"

    names = cands.dtype.names or ()
    with atomic_path(path) as temporary:
        np.savetxt(
            temporary,
            np.asarray(cands),
            delimiter=",",
            header=",".join(names),
            comments="",
            fmt=[fmt(cands.dtype[n]) for n in names],
        )
