"""Reference single-pulse search (boxcar matched filtering), written for clarity.

Restates the search of issue 5 (after Adámek & Armour's AstroAccelerate
single-pulse detector, shared/papers/004, and its BoxDIT plan, spec
peers_kepler_sps.md §3.1) in double-precision NumPy, for every row of a
de-dispersed ``(n_dm, n_t)`` plane:

1. :func:`statistics`: mean and population standard deviation of every row
   over its finite samples, optionally with 3 iterations of 3-sigma clipping;
   ``z = (x - mu) / sigma``, non-finite samples set to 0;
2. :func:`decimate`: decimation in time, ``z_k[i] = z_{k-1}[2i] + z_{k-1}[2i+1]``;
3. :func:`boxcar_plan`: widths 1..32 on ``z_0`` and 17..32 on ``z_k``
   (native ``w * 2**k``) up to ``max_width`` ("dit"), or 1..``max_width`` on ``z_0`` ("full");
4. :func:`boxcar_sums` and :func:`boxcar_sigma`: ``B_{k,w}(i) = sum_{j<w} z_k[i+j]``
   for ``i + w <= len(z_k)``, normalised by the boxcar's standard deviation
   from the level's autocovariance ("exact") or by the paper's linear
   interpolation between ``w = 1`` and the level's widest boxcar (eqs. 4-5, "approx");
5. :func:`search`: per (row, level, i) the best SNR over the level's widths
   (the first maximum in ascending width) is a detection when it reaches the threshold.

Decisions beyond the issue's definitions: rows without finite samples have
``mu = sigma = NaN``; widths longer than a level's series are left out of
that level (so ``Nmax`` of "approx" is the widest boxcar that fits); a width
whose sigma is not positive (an anti-correlated series can give
``sigma^2 <= 0`` in "exact") gives no SNR.

The "approx" of this module takes ``s1`` and ``sN`` from the level's
autocovariance. clperiod's device "approx" measures them as AstroAccelerate
does, on decimated series: ``s1`` = 1 at level 0 (the normalisation) and the
standard deviation of ``z_k`` above it, ``sN`` = that of ``z_k`` decimated by
``2**ceil(log2 wmax)``; ``tests/singlepulse/test_boxcar.py::test_noise_tables_match_numpy``
checks that definition directly, and the device's "exact" against this module.

Nothing here imports ``clperiod``; speed is secondary (cumulative sums per level).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]

#: Boxcar widths on the full-resolution series (BoxDIT's first 32 taps).
FIRST_LEVEL_WIDTHS = 32
#: Decimated widths of every later level: 17..32, i.e. 16 per octave.
DIT_WIDTHS = (17, 32)
#: Sigma clipping of ``robust`` statistics: keep ``|x - mu| <= CLIP * sigma``, ITERATIONS times.
CLIP = 3.0
ITERATIONS = 3

#: Fields of the detections returned by :func:`search`.
DETECTION_DTYPE = np.dtype([("dm_index", np.int64), ("dm", np.float64), ("start", np.int64),
                            ("width", np.int64), ("time", np.float64), ("snr", np.float64)])


def _mean_std(x: FloatArray, keep: NDArray[np.bool_]) -> tuple[FloatArray, FloatArray]:
    """Row means and population standard deviations of the kept samples (NaN for none)."""
    n = keep.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = np.where(keep, x, 0.0).sum(axis=1) / n
        var = (np.where(keep, x - mu[:, None], 0.0) ** 2).sum(axis=1) / n
    return mu, np.sqrt(var)


def statistics(x: ArrayLike, robust: bool = False) -> tuple[FloatArray, FloatArray]:
    """Mean and population standard deviation of every row over its finite samples.

    With ``robust``, :data:`ITERATIONS` times: recompute both over the finite
    samples with ``|x - mu| <= CLIP * sigma`` for the previous ``mu, sigma``.
    There is no consistency factor: for Gaussian noise the clipped sigma
    converges to about 0.985 of the true one.
    """
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    finite = np.isfinite(x)
    mu, sigma = _mean_std(x, finite)
    for _ in range(ITERATIONS if robust else 0):
        with np.errstate(invalid="ignore"):
            keep = finite & (np.abs(x - mu[:, None]) <= CLIP * sigma[:, None])
        mu, sigma = _mean_std(x, keep)
    return mu, sigma


def normalize(x: ArrayLike, robust: bool = False) -> tuple[FloatArray, NDArray[np.bool_]]:
    """``z = (x - mu) / sigma`` (0 at non-finite samples) and the rows that can be searched.

    A row can be searched when its sigma is finite and positive.
    """
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    mu, sigma = statistics(x, robust)
    ok = np.isfinite(sigma) & (sigma > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (x - mu[:, None]) / sigma[:, None]
    return np.where(np.isfinite(x) & ok[:, None], z, 0.0), ok


def decimate(z: FloatArray) -> FloatArray:
    """One decimation-in-time step along the last axis: sums of sample pairs (odd tail dropped)."""
    m = z.shape[-1] // 2
    return z[..., 0 : 2 * m : 2] + z[..., 1 : 2 * m : 2]


def boxcar_plan(
    max_width: int, plan: Literal["dit", "full"] = "dit"
) -> list[tuple[int, NDArray[np.int64]]]:
    """Levels and decimated widths of the boxcar search, up to native width ``max_width``.

    "dit": level 0 with widths ``1..min(32, max_width)``, then levels ``k = 1, 2, ...``
    with decimated widths 17..32 (native ``w * 2**k``) that are ``<= max_width``,
    as long as a level has one. "full": level 0 with every width ``1..max_width``.
    """
    if max_width < 1:
        raise ValueError(f"max_width must be >= 1, got {max_width}")
    if plan == "full":
        return [(0, np.arange(1, max_width + 1))]
    if plan != "dit":
        raise ValueError(f"plan must be 'dit' or 'full', got {plan!r}")
    levels = [(0, np.arange(1, min(FIRST_LEVEL_WIDTHS, max_width) + 1))]
    k = 1
    while DIT_WIDTHS[0] << k <= max_width:
        widths = np.arange(DIT_WIDTHS[0], DIT_WIDTHS[1] + 1)
        levels.append((k, widths[widths << k <= max_width]))
        k += 1
    return levels


def boxcar_sums(z: FloatArray, width: int) -> FloatArray:
    """``B(i) = sum_{j<width} z[..., i + j]`` for ``i + width <= n`` (no padding)."""
    c = np.concatenate([np.zeros(z.shape[:-1] + (1,)), np.cumsum(z, axis=-1)], axis=-1)
    return c[..., width:] - c[..., :-width]


def autocovariance(z: FloatArray, max_lag: int) -> FloatArray:
    """``g(l) = sum_t z[t] z[t+l] / (n - l)`` for ``l < max_lag`` (no mean subtraction), per row."""
    n = z.shape[-1]
    return np.stack([np.sum(z[..., : n - lag] * z[..., lag:], axis=-1) / (n - lag)
                     for lag in range(max_lag)], axis=-1)


def boxcar_sigma(z: FloatArray, widths: NDArray[np.int64],
                 snr_mode: Literal["approx", "exact"] = "approx") -> FloatArray:
    """Standard deviation of the boxcar sums of every width, per row: ``(n_rows, n_widths)``.

    "exact": ``sigma_w^2 = w g(0) + 2 sum_{l=1}^{w-1} (w - l) g(l)``.
    "approx" (paper eqs. 4-5): ``sigma_w = sqrt(w) s1 + (w - 1) / (Nmax - 1) (sN - sqrt(Nmax) s1)``
    with ``s1 = sqrt(g(0))``, ``Nmax = widths[-1]`` (the largest) and ``sN`` its exact sigma;
    ``sqrt(w) s1`` when ``Nmax == 1``. Widths must not exceed ``z.shape[-1]``.

    ``g`` holds any pulse in ``z``, so a bright pulse raises its own sigma: a
    top-hat of SNR ``S`` and native width ``W`` in a row of ``n`` samples is
    reported at about ``S / sqrt(1 + (2/3) S**2 W / n)`` in either mode.
    """
    g = autocovariance(z, int(widths[-1]))

    def exact(w: int) -> FloatArray:
        lags = np.arange(1, w)
        return np.sqrt(np.maximum(w * g[..., 0] + 2 * g[..., 1:w] @ (w - lags), 0.0))

    if snr_mode == "exact":
        return np.stack([exact(int(w)) for w in widths], axis=-1)
    if snr_mode != "approx":
        raise ValueError(f"snr_mode must be 'approx' or 'exact', got {snr_mode!r}")
    nmax, s1 = int(widths[-1]), np.sqrt(g[..., :1])
    sigma = np.sqrt(widths) * s1
    if nmax > 1:
        sigma = sigma + (widths - 1) / (nmax - 1) * (exact(nmax)[..., None] - np.sqrt(nmax) * s1)
    return sigma


def search(
    x: ArrayLike,
    dm: ArrayLike,
    tsamp: float,
    *,
    max_width: int = 32,
    threshold: float = 6.0,
    plan: Literal["dit", "full"] = "dit",
    snr_mode: Literal["approx", "exact"] = "approx",
    robust: bool = False,
) -> np.ndarray:
    """Boxcar single-pulse search of a de-dispersed ``(n_dm, n_t)`` plane.

    Parameters
    ----------
    x
        The plane, one row per DM trial.
    dm
        DM of every row (only copied into the detections).
    tsamp
        Sampling time (only used for the ``time`` field).
    max_width, plan
        The boxcar plan (:func:`boxcar_plan`).
    threshold
        Smallest reported SNR.
    snr_mode
        Boxcar sigma (:func:`boxcar_sigma`).
    robust
        Sigma-clipped row statistics (:func:`statistics`).

    Returns
    -------
    numpy.ndarray
        Detections (:data:`DETECTION_DTYPE`) sorted by ``(dm_index, start, width)``:
        for every (row, level, position ``i``) whose best SNR reaches ``threshold``,
        ``start = i * 2**k`` and ``width = w * 2**k`` (native samples) of the
        best width ``w``, and ``time = (start + width // 2) * tsamp``, the boxcar centre.
    """
    z, ok = normalize(x, robust)
    dm = np.asarray(dm, dtype=np.float64)
    if dm.shape != (z.shape[0],):
        raise ValueError(f"dm must have one value per row ({z.shape[0]}), got shape {dm.shape}")
    rows, z = np.flatnonzero(ok), z[ok]
    none = np.zeros(0, dtype=np.int64)
    found = [(none, none, none, np.zeros(0))]
    level = 0
    for k, widths in boxcar_plan(max_width, plan):
        for _ in range(k - level):
            z = decimate(z)
        level = k
        widths = widths[widths <= z.shape[-1]]
        if not widths.size:
            break
        sigma = boxcar_sigma(z, widths, snr_mode)
        best = np.full((z.shape[0], z.shape[-1] - widths[0] + 1), -np.inf)
        best_w = np.zeros(best.shape, dtype=np.int64)
        for j, w in enumerate(widths):
            s = sigma[:, j, None]
            with np.errstate(invalid="ignore", divide="ignore"):
                snr = np.where(s > 0, boxcar_sums(z, w) / s, -np.inf)
            better = snr > best[:, : snr.shape[-1]]
            best[:, : snr.shape[-1]][better] = snr[better]
            best_w[:, : snr.shape[-1]][better] = w
        r, i = np.nonzero(best >= threshold)
        found.append((rows[r], i << k, best_w[r, i] << k, best[r, i]))
    dm_index, start, width, snr = (np.concatenate(f) for f in zip(*found, strict=True))
    out = np.zeros(len(snr), dtype=DETECTION_DTYPE)
    out["dm_index"], out["start"], out["width"], out["snr"] = dm_index, start, width, snr
    out["dm"] = dm[out["dm_index"]]
    out["time"] = (out["start"] + out["width"] // 2) * tsamp
    return np.sort(out, order=["dm_index", "start", "width"])
