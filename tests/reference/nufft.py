"""Reference non-uniform FFTs and the NUFFT Lomb-Scargle periodogram, written for clarity.

This module restates ``shared/spec/methods_next.md`` §1 (cited below as "spec")
in vectorised float64 / complex128 NumPy. It is the oracle the OpenCL NUFFT
kernels are tested against; nothing here imports ``clperiod``.

* :func:`es_kernel_params`, :func:`fine_grid_size`, :func:`es_kernel` and
  :func:`kernel_fourier_transform` are the legacy "exponential of semicircle"
  (ES) kernel of FINUFFT <= 2.4 and cuFINUFFT (spec §1.3);
* :func:`spread` and :func:`interpolate` are the two grid operations, with
  periodic wrap;
* :func:`nufft1`, :func:`nufft2` and :func:`nufft3` are the type-1, -2 and -3
  transforms in the FINUFFT convention (spec §1.2); :func:`nudft1`,
  :func:`nudft2` and :func:`nudft3` are their direct sums, with the phases
  formed in ``np.longdouble``;
* :func:`lombscargle_nufft` is the periodogram on a regular grid through type-1
  transforms as nifty-ls maps it (spec §1.4), :func:`lombscargle_frequencies`
  the same on any frequencies through type-3 transforms (spec §1.5), and
  :func:`lombscargle_direct` the same sums by direct summation; all three share
  the post-processing of spec §1.1 (one term) or Palmer's chi^2 (``nterms > 1``).

Grid convention. The fine grid of ``n`` cells holds the points at the cell
coordinate ``xi = n * frac(x / 2 pi)`` (cell ``l`` sits at ``x = 2 pi l / n``),
without FINUFFT's half-box shift, so no output phase correction is needed.
A point adds ``c phi(2 (l - xi) / w)`` to the ``w`` cells ``l`` with
``-w/2 <= l - xi < w/2``. By Poisson summation
``sum_l phi(2 (l - xi) / w) e^{i theta l} = e^{i theta xi} sum_p psi(theta + 2 pi p)
e^{2 pi i p xi}``, where ``psi`` is the kernel's Fourier transform in cell
units (:func:`kernel_fourier_transform`). Every transform below keeps the term
``p = 0`` by dividing by ``psi(theta)`` at ``|theta| <= pi / upsampfac``; its error
is the aliases ``p != 0`` relative to ``psi(theta)``, which the ES rules of
spec §1.3 keep near ``eps``, plus a rounding floor ``~ eps_mach N max(1, |x|/pi)``.

Periodograms: the power is NaN at ``f = 0`` (astropy's ``cython`` gives NaN;
its ``chi2`` raises there), and, for ``nterms > 1``, the lowest frequencies
(``f`` below a few ``1 / T``) have nearly singular normal matrices, which
amplify the transforms' error.
"""

from __future__ import annotations

import contextlib
import functools
import math
import warnings
from collections.abc import Callable
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

FloatArray = NDArray[np.float64]
ComplexArray = NDArray[np.complex128]
Normalization = Literal["standard", "model", "log", "psd"]

#: Largest kernel width, in fine-grid cells (spec §1.3, ``MAX_NSPREAD``).
MAX_WIDTH = 16
#: Gauss-Legendre nodes of :func:`kernel_fourier_transform`: 30 already reach the
#: rounding floor (relative ~1e-13 for upsampfac 2, ~5e-11 at the band edge for 1.25).
QUADRATURE_NODES = 80
#: Frequencies per block of the direct sums (bounds their memory).
DIRECT_BLOCK = 256

NORMALIZATIONS = ("standard", "model", "log", "psd")


# {{{ the ES kernel (spec §1.3)


def es_kernel_params(
    eps: float, upsampfac: float, *, dtype: DTypeLike = np.float64
) -> tuple[int, float]:
    """Width ``w`` (cells) and shape ``beta`` of the legacy ES kernel for a tolerance.

    ``eps`` is first clamped up to the machine epsilon of ``dtype``. For
    ``upsampfac == 2``: ``w = ceil(log10(10 / eps))`` and ``beta = 2.30 w``
    (2.20 w if w = 2, 2.26 w if w = 3, 2.38 w if w = 4). Otherwise
    ``w = ceil(ln(1 / eps) / (pi sqrt(1 - 1/upsampfac)))`` and
    ``beta = 0.97 pi (1 - 1/(2 upsampfac)) w``. Then ``w >= 2``, and ``w`` is
    clipped to :data:`MAX_WIDTH` with a ``RuntimeWarning`` (the tolerance is then
    not reached); ``beta`` uses the clipped ``w``.
    """
    eps = float(eps)
    upsampfac = float(upsampfac)
    if not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"eps must be a positive finite number, got {eps!r}")
    if not (math.isfinite(upsampfac) and upsampfac > 1):
        raise ValueError(f"upsampfac must be a finite number > 1, got {upsampfac!r}")
    eps = max(eps, float(np.finfo(dtype).eps))
    if upsampfac == 2.0:
        width = max(2, math.ceil(math.log10(10.0 / eps)))
    else:
        width = max(2, math.ceil(math.log(1.0 / eps) / (math.pi * math.sqrt(1 - 1 / upsampfac))))
    if width > MAX_WIDTH:
        warnings.warn(
            f"eps={eps:g} at upsampfac={upsampfac:g} needs a kernel of {width} cells; "
            f"clipped to {MAX_WIDTH}, so the tolerance is not reached",
            RuntimeWarning,
            stacklevel=2,
        )
        width = MAX_WIDTH
    if upsampfac == 2.0:
        beta_per_cell = {2: 2.20, 3: 2.26, 4: 2.38}.get(width, 2.30)
    else:
        beta_per_cell = 0.97 * math.pi * (1 - 1 / (2 * upsampfac))
    return width, beta_per_cell * width


def next_smooth_even(n: int) -> int:
    """Smallest even integer ``>= n`` whose only prime factors are 2, 3 and 5."""
    m = max(2, int(n) + int(n) % 2)
    while True:
        rest = m
        for p in (2, 3, 5):
            while rest % p == 0:
                rest //= p
        if rest == 1:
            return m
        m += 2


def fine_grid_size(n_modes: int, upsampfac: float, width: int) -> int:
    """Fine-grid size ``N_f``: next 2·3·5-smooth even integer ``>= max(ceil(sigma N), 2 w)``."""
    return next_smooth_even(max(math.ceil(upsampfac * n_modes), 2 * width))


def es_kernel(z: ArrayLike, beta: float) -> FloatArray:
    """``phi(z) = exp(beta (sqrt(1 - z**2) - 1))`` for ``|z| <= 1``, else 0; ``phi(0) = 1``."""
    z = np.asarray(z, dtype=np.float64)
    inside = np.abs(z) <= 1
    root = np.sqrt(np.where(inside, 1 - z * z, 0.0))
    return np.where(inside, np.exp(beta * (root - 1)), 0.0)


@functools.cache
def _quadrature_rule(n_nodes: int) -> tuple[FloatArray, FloatArray]:
    """Gauss-Legendre nodes on ``[0, pi/2]`` (the angles) and their weights on ``[-1, 1]``."""
    nodes, weights = np.polynomial.legendre.leggauss(n_nodes)
    return 0.25 * np.pi * (nodes + 1), weights


def kernel_fourier_transform(theta: ArrayLike, width: int, beta: float) -> FloatArray:
    """Fourier transform of the kernel in cell units, by Gauss-Legendre quadrature.

    ``psi(theta) = integral over |u| <= w/2 of phi(2 u / w) e^{i theta u} du
    = w * integral_0^1 phi(v) cos(theta w v / 2) dv`` (real and even). The
    substitution ``v = sin(a)`` removes the square-root branch point of ``phi``
    at ``v = 1``: ``psi = w * integral_0^{pi/2} e^{beta (cos a - 1)}
    cos(theta w sin(a) / 2) cos(a) da``, an analytic integrand, on which
    :data:`QUADRATURE_NODES` Gauss-Legendre nodes converge to rounding.
    """
    angle, weights = _quadrature_rule(QUADRATURE_NODES)
    theta = np.asarray(theta, dtype=np.float64)
    cosines = np.cos(np.multiply.outer(theta, 0.5 * width * np.sin(angle)))
    integrand = np.exp(beta * (np.cos(angle) - 1)) * np.cos(angle)
    return 0.25 * np.pi * width * (cosines * (weights * integrand)).sum(axis=-1)


# }}}

# {{{ spreading and interpolation


def _stencil(xi: FloatArray, n_grid: int, width: int, beta: float
             ) -> tuple[NDArray[np.intp], FloatArray]:
    """Cells (wrapped into ``[0, n_grid)``) and kernel values of each point, shape ``(M, w)``."""
    first = np.ceil(xi - 0.5 * width)
    cells = first[:, None] + np.arange(width)
    values = es_kernel(2 * (cells - xi[:, None]) / width, beta)
    return np.mod(cells, n_grid).astype(np.intp), values


def spread(xi: ArrayLike, c: ArrayLike, n_grid: int, width: int, beta: float) -> ComplexArray:
    """Spread strengths ``c`` (``(B, M)``) at cell coordinates ``xi`` onto a periodic grid.

    Returns ``(B, n_grid)``: ``g[b, l] = sum_j c[b, j] phi(2 (l' - xi_j) / w)`` over
    the ``w`` cells ``l'`` with ``-w/2 <= l' - xi_j < w/2``, ``l = l' mod n_grid``.
    """
    xi = np.asarray(xi, dtype=np.float64)
    c = np.atleast_2d(np.asarray(c, dtype=np.complex128))
    cells, values = _stencil(xi, n_grid, width, beta)
    n_batch = c.shape[0]
    index = (np.arange(n_batch)[:, None, None] * n_grid + cells[None]).ravel()
    contributions = (c[:, :, None] * values[None]).ravel()
    size = n_batch * n_grid
    real = np.bincount(index, weights=contributions.real, minlength=size)
    imag = np.bincount(index, weights=contributions.imag, minlength=size)
    return (real + 1j * imag).reshape(n_batch, n_grid)


def interpolate(grid: ArrayLike, xi: ArrayLike, width: int, beta: float) -> ComplexArray:
    """Adjoint of :func:`spread`: ``(B, M)`` values ``sum_l g[b, l] phi(2 (l' - xi_j) / w)``."""
    grid = np.atleast_2d(np.asarray(grid, dtype=np.complex128))
    xi = np.asarray(xi, dtype=np.float64)
    cells, values = _stencil(xi, grid.shape[-1], width, beta)
    return (grid[:, cells] * values).sum(axis=-1)


def _grid_fft(grid: ComplexArray, isign: int) -> ComplexArray:
    """Unnormalised ``sum_l g[l] e^{isign 2 pi i k l / n}`` for every ``k`` (last axis)."""
    if isign > 0:
        return np.fft.ifft(grid, axis=-1, norm="forward")
    return np.fft.fft(grid, axis=-1)


# }}}

# {{{ transforms


def mode_indices(n_modes: int) -> NDArray[np.intp]:
    """The modes ``k = m - n_modes // 2`` of output index ``m`` (FINUFFT ``modeord=0``)."""
    return np.arange(n_modes) - n_modes // 2


def _points(x: ArrayLike, name: str) -> FloatArray:
    """``x`` as a 1-D finite float64 array."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite")
    return x


def _batch(c: ArrayLike, length: int, name: str) -> tuple[ComplexArray, bool]:
    """``c`` as a complex ``(B, length)`` batch, and whether it was 2-D."""
    c = np.asarray(c, dtype=np.complex128)
    if c.ndim not in (1, 2) or c.shape[-1] != length:
        raise ValueError(f"{name} must have shape ({length},) or (B, {length}), got {c.shape}")
    return np.atleast_2d(c), c.ndim == 2


def _isign(isign: int) -> int:
    """``isign`` checked to be +1 or -1."""
    if isign not in (1, -1):
        raise ValueError(f"isign must be +1 or -1, got {isign!r}")
    return isign


def _grid_coordinates(x: FloatArray, n_grid: int) -> FloatArray:
    """Cell coordinates ``n_grid * frac(x / 2 pi)`` of periodic points."""
    return n_grid * np.mod(x / (2 * np.pi), 1.0)


def nufft1(x: ArrayLike, c: ArrayLike, n_modes: int, eps: float = 1e-9,
           upsampfac: float = 2.0, isign: int = 1) -> ComplexArray:
    """Type-1 NUFFT: ``F[m] = sum_j c_j e^{isign i k x_j}``, ``k = m - n_modes // 2``.

    ``x`` is any real array (the transform is 2 pi periodic in ``x``); ``c`` is
    ``(M,)`` or a batch ``(B, M)`` sharing ``x``, and the result ``(n_modes,)`` or
    ``(B, n_modes)``. Spread onto the fine grid of :func:`fine_grid_size` with the
    kernel of :func:`es_kernel_params`, FFT, keep the ``n_modes`` central modes and
    divide by :func:`kernel_fourier_transform` at ``theta = 2 pi k / N_f``.
    """
    x = _points(x, "x")
    c, batched = _batch(c, x.size, "c")
    if int(n_modes) != n_modes or n_modes < 1:
        raise ValueError(f"n_modes must be a positive integer, got {n_modes!r}")
    width, beta = es_kernel_params(eps, upsampfac)
    n_grid = fine_grid_size(n_modes, upsampfac, width)
    grid = spread(_grid_coordinates(x, n_grid), c, n_grid, width, beta)
    k = mode_indices(int(n_modes))
    modes = _grid_fft(grid, _isign(isign))[:, k % n_grid]
    out = modes / kernel_fourier_transform(2 * np.pi * k / n_grid, width, beta)
    return out if batched else out[0]


def nufft2(x: ArrayLike, f: ArrayLike, eps: float = 1e-9, upsampfac: float = 2.0,
           isign: int = -1) -> ComplexArray:
    """Type-2 NUFFT: ``c_j = sum_m f[m] e^{isign i k x_j}``, ``k = m - N // 2``.

    ``f`` is ``(N,)`` or a batch ``(B, N)``; the result ``(M,)`` or ``(B, M)``.
    The adjoint steps of :func:`nufft1`: divide the modes by the kernel's
    Fourier transform, place them on the fine grid, FFT, interpolate at ``x``.
    FINUFFT's default sign for type 2 is -1.
    """
    x = _points(x, "x")
    f = np.asarray(f, dtype=np.complex128)
    if f.ndim not in (1, 2) or f.shape[-1] < 1:
        raise ValueError(f"f must have shape (N,) or (B, N) with N >= 1, got {f.shape}")
    batched = f.ndim == 2
    f = np.atleast_2d(f)
    n_modes = f.shape[-1]
    width, beta = es_kernel_params(eps, upsampfac)
    n_grid = fine_grid_size(n_modes, upsampfac, width)
    k = mode_indices(n_modes)
    grid = np.zeros((f.shape[0], n_grid), dtype=np.complex128)
    grid[:, k % n_grid] = f / kernel_fourier_transform(2 * np.pi * k / n_grid, width, beta)
    out = interpolate(_grid_fft(grid, _isign(isign)), _grid_coordinates(x, n_grid), width, beta)
    return out if batched else out[0]


def _centre_and_half_width(v: FloatArray) -> tuple[float, float]:
    """Midpoint and half-width of the range of ``v``."""
    lo, hi = float(v.min()), float(v.max())
    return 0.5 * (lo + hi), 0.5 * (hi - lo)


def type3_grid(x_half_width: float, s_half_width: float, upsampfac: float, width: int
               ) -> tuple[float, int]:
    """Cell size ``h`` and odd cell count ``n`` of the type-3 grid in ``x``.

    ``h = pi / (upsampfac * S)`` maps the targets into ``|theta| = |s - s_c| h <=
    pi / upsampfac``; ``n = 2 ceil(X / h + w / 2) + 1`` covers every point's
    kernel, so ``n ~ 2 upsampfac X S / pi + w`` (spec §1.5). ``S = 0`` (one
    target value) takes ``h = max(X, 1)``.
    """
    if s_half_width > 0:
        h = math.pi / (upsampfac * s_half_width)
    else:
        h = max(x_half_width, 1.0)
    return h, 2 * math.ceil(x_half_width / h + 0.5 * width) + 1


def nufft3(x: ArrayLike, c: ArrayLike, s: ArrayLike, eps: float = 1e-9,
           upsampfac: float = 2.0, isign: int = 1) -> ComplexArray:
    """Type-3 NUFFT: ``F[k] = sum_j c_j e^{isign i s_k x_j}`` for any real ``x`` and ``s``.

    ``c`` is ``(M,)`` or a batch ``(B, M)`` sharing ``x``; the result ``(K,)`` or
    ``(B, K)`` in the order of ``s`` (unsorted and repeated targets allowed).

    Method. With centres ``x_c``, ``s_c`` and half-widths ``X``, ``S``,
    ``F_k = e^{isign i s_k x_c} G(s_k - s_c)``, ``G(u) = sum_j c'_j e^{isign i u x'_j}``,
    ``x' = x - x_c``, ``c' = c e^{isign i s_c x'}``. On the grid of
    :func:`type3_grid` (cells ``l = -L..L`` at ``x' = l h``), spread
    ``b_l = sum_j c'_j phi(2 (l - x'_j / h) / w)``; then, by Poisson summation,
    ``G(u) = sum_l b_l e^{isign i l theta} / psi(theta)``, ``theta = u h``, up to the
    aliases ``psi(theta + 2 pi p) G(u + 2 pi p / h)``, ``p != 0``. The sum over
    ``l`` is a type-2 transform (:func:`nufft2`, same ``eps`` and ``upsampfac``).

    Error. The aliases are those of a type-1 transform with the same
    ``upsampfac``, ``w`` and ``beta`` (``|theta| <= pi / upsampfac``): about
    ``eps * sum|c|`` per target. The type-2 error is divided by ``psi(theta) /
    psi(0)`` (down to ~1e-3 at the band edge for upsampfac 1.25) but stays the
    smaller part. Unlike a periodogram's type 1, whose points fill only a narrow
    arc of the periodic box, the points fill the whole grid, so every target
    sees that error. Tested: relative l2 error ``<= 4 eps`` against
    :func:`nudft3` (spec §1.5 quotes ~1.4 times type 1's).
    """
    x = _points(x, "x")
    s = _points(s, "s")
    c, batched = _batch(c, x.size, "c")
    isign = _isign(isign)
    width, beta = es_kernel_params(eps, upsampfac)
    x_centre, x_half = _centre_and_half_width(x)
    s_centre, s_half = _centre_and_half_width(s)
    h, n_cells = type3_grid(x_half, s_half, upsampfac, width)
    x_shifted = x - x_centre
    c_shifted = c * np.exp(isign * 1j * s_centre * x_shifted)
    cells = spread(x_shifted / h + n_cells // 2, c_shifted, n_cells, width, beta)
    theta = (s - s_centre) * h
    inner = nufft2(theta, cells, eps, upsampfac, isign)
    phase = np.exp(isign * 1j * s * x_centre)
    out = inner * (phase / kernel_fourier_transform(theta, width, beta))
    return out if batched else out[0]


def _exp_phases(phase: NDArray[np.longdouble]) -> ComplexArray:
    """``e^{i phase}`` from long-double phases, rounded once to complex128."""
    return (np.cos(phase) + 1j * np.sin(phase)).astype(np.complex128)


def nudft3(x: ArrayLike, c: ArrayLike, s: ArrayLike, isign: int = 1) -> ComplexArray:
    """Direct ``F[k] = sum_j c_j e^{isign i s_k x_j}``; phases ``s_k x_j`` in long double.

    Blocks of :data:`DIRECT_BLOCK` targets; ``c`` is ``(M,)`` or ``(B, M)``.
    """
    x = _points(x, "x").astype(np.longdouble)
    s = _points(s, "s").astype(np.longdouble)
    c, batched = _batch(c, x.size, "c")
    out = np.empty((c.shape[0], s.size), dtype=np.complex128)
    for start in range(0, s.size, DIRECT_BLOCK):
        block = slice(start, start + DIRECT_BLOCK)
        out[:, block] = c @ _exp_phases(_isign(isign) * np.multiply.outer(x, s[block]))
    return out if batched else out[0]


def nudft1(x: ArrayLike, c: ArrayLike, n_modes: int, isign: int = 1) -> ComplexArray:
    """Direct type 1: :func:`nudft3` at the integer modes of :func:`mode_indices`."""
    return nudft3(x, c, mode_indices(n_modes), isign)


def nudft2(x: ArrayLike, f: ArrayLike, isign: int = -1) -> ComplexArray:
    """Direct type 2: ``c_j = sum_m f[m] e^{isign i k x_j}``; phases in long double."""
    f = np.asarray(f, dtype=np.complex128)
    k = mode_indices(f.shape[-1])
    return nudft3(k, f, x, isign)


# }}}

# {{{ Lomb-Scargle inputs


def _light_curve(t: ArrayLike, y: ArrayLike, dy: ArrayLike | None
                 ) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``t``, ``y``, ``dy`` as 1-D finite float64 arrays of one length (``dy=None`` is 1)."""
    t = _points(t, "t")
    y = _points(y, "y")
    if y.size != t.size or t.size == 0:
        raise ValueError(f"t and y must be non-empty and of one length, got {t.size}, {y.size}")
    dy = np.broadcast_to(np.asarray(1.0 if dy is None else dy, dtype=np.float64), t.shape)
    if not np.all(np.isfinite(dy) & (dy > 0)):
        raise ValueError("dy must be positive and finite")
    return t, y, dy


def _check_options(normalization: str, nterms: int) -> None:
    """Raise for an unknown normalization or ``nterms < 1``."""
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {normalization!r}")
    if int(nterms) != nterms or nterms < 1:
        raise ValueError(f"nterms must be an integer >= 1, got {nterms!r}")


class _Weighted:
    """Times from ``t_ref = t.min()``, normalised weights and the (centred) data.

    ``w = dy**-2 / sum(dy**-2)``; ``y_tilde = y - sum(w y)`` if ``center_data`` or
    ``fit_mean``, else ``y``; ``yy = sum(w y_tilde**2)``; ``weight_sum = sum(dy**-2)``.
    """

    def __init__(self, t: FloatArray, y: FloatArray, dy: FloatArray, centre: bool) -> None:
        inverse_variance = dy**-2.0
        self.weight_sum = float(inverse_variance.sum())
        self.tt = t - t.min()
        self.w = inverse_variance / self.weight_sum
        self.y_tilde = y - np.dot(self.w, y) if centre else y
        self.wy = self.w * self.y_tilde
        self.yy = float(np.dot(self.wy, self.y_tilde))


def _needs_window(k: int, nterms: int, fit_mean: bool) -> bool:
    """Whether the power needs the window sum ``sum w e^{i k omega t}`` (``k >= 1``)."""
    return k == 2 or nterms > 1 or fit_mean


# }}}

# {{{ trigonometric sums: direct, type 1 (regular grid), type 3 (any frequencies)


class _Sums:
    """Sums ``window[k] = sum w e^{i k wt}`` (k = 0..2H), ``data[h] = sum w y~ e^{i h wt}``.

    Arrays of shape ``(2H + 1, Nf)`` and ``(H + 1, Nf)``; ``window[0] = 1``,
    ``data[0] = sum w y~``; harmonics a power does not need stay 0.
    """

    def __init__(self, weighted: _Weighted, nterms: int, n_freq: int) -> None:
        self.window = np.zeros((2 * nterms + 1, n_freq), dtype=np.complex128)
        self.data = np.zeros((nterms + 1, n_freq), dtype=np.complex128)
        self.window[0] = 1.0
        self.data[0] = weighted.wy.sum()


def _fill_sums(sums: _Sums, weighted: _Weighted, nterms: int, fit_mean: bool,
               transform: Callable[[int, FloatArray], ComplexArray]) -> _Sums:
    """Fill ``sums`` with ``transform(k, strengths)`` (``(B, M)`` -> ``(B, Nf)``) per harmonic.

    Harmonic ``k`` transforms ``w`` (window) and/or ``w y~`` (data, ``k <= nterms``)
    together, as one batch.
    """
    for k in range(1, 2 * nterms + 1):
        window, data = _needs_window(k, nterms, fit_mean), k <= nterms
        strengths = [weighted.w] * window + [weighted.wy] * data
        out = transform(k, np.array(strengths))
        if window:
            sums.window[k] = out[0]
        if data:
            sums.data[k] = out[-1]
    return sums


def _direct_sums(weighted: _Weighted, freqs: FloatArray, nterms: int, fit_mean: bool) -> _Sums:
    """The sums by direct summation in float64, phases ``2 pi (k f)(t - t_ref)``."""

    def transform(k: int, strengths: FloatArray) -> ComplexArray:
        out = np.empty((strengths.shape[0], freqs.size), dtype=np.complex128)
        for start in range(0, freqs.size, DIRECT_BLOCK):
            block = slice(start, start + DIRECT_BLOCK)
            phase = 2 * np.pi * np.multiply.outer(weighted.tt, k * freqs[block])
            out[:, block] = strengths @ np.exp(1j * phase)
        return out

    return _fill_sums(_Sums(weighted, nterms, freqs.size), weighted, nterms, fit_mean, transform)


def _regular_grid_sums(weighted: _Weighted, fmin: float, df: float, nf: int, nterms: int,
                       fit_mean: bool, eps: float, upsampfac: float) -> _Sums:
    """The sums on ``fmin + m df`` by type-1 transforms (spec §1.4).

    Points ``k x`` with ``x = 2 pi df (t - t_ref)``; strengths times
    ``e^{i s k x}``, ``s = nf // 2 + fmin / df``, so that mode ``m - nf // 2`` plus
    ``s`` is ``f_m / df``. The phase is formed as ``2 pi k f_s (t - t_ref)`` with
    ``f_s = fmin + (nf // 2) df``.
    """
    x = 2 * np.pi * df * weighted.tt
    shift_frequency = fmin + (nf // 2) * df

    def transform(k: int, strengths: FloatArray) -> ComplexArray:
        shift = np.exp(2j * np.pi * k * shift_frequency * weighted.tt)
        return nufft1(k * x, strengths * shift, nf, eps, upsampfac, isign=1)

    return _fill_sums(_Sums(weighted, nterms, nf), weighted, nterms, fit_mean, transform)


def _type3_sums(weighted: _Weighted, freqs: FloatArray, nterms: int, fit_mean: bool,
                eps: float, upsampfac: float) -> _Sums:
    """The sums at any frequencies: type 3 with points ``2 pi (t - t_ref)``, targets ``k f``."""
    x = 2 * np.pi * weighted.tt

    def transform(k: int, strengths: FloatArray) -> ComplexArray:
        return nufft3(x, strengths, k * freqs, eps, upsampfac, isign=1)

    return _fill_sums(_Sums(weighted, nterms, freqs.size), weighted, nterms, fit_mean, transform)


# }}}

# {{{ power from the sums (spec §1.1)


def _single_term_power(sums: _Sums, fit_mean: bool) -> FloatArray:
    """Raw power ``YC^2/CC + YS^2/SS`` of the one-term periodogram (weights summing to 1)."""
    ch, sh = sums.data[1].real, sums.data[1].imag
    c1, s1 = sums.window[1].real, sums.window[1].imag
    c2, s2 = sums.window[2].real, sums.window[2].imag
    if fit_mean:
        tan_2wt = (s2 - 2 * s1 * c1) / (c2 - (c1 * c1 - s1 * s1))
    else:
        tan_2wt = s2 / c2
    cos_2wt = 1 / np.sqrt(1 + tan_2wt * tan_2wt)
    sin_2wt = tan_2wt * cos_2wt
    cos_wt = np.sqrt(0.5 * (1 + cos_2wt))
    sin_wt = np.sign(sin_2wt) * np.sqrt(0.5 * (1 - cos_2wt))
    yc = ch * cos_wt + sh * sin_wt
    ys = sh * cos_wt - ch * sin_wt
    cc = 0.5 * (1 + c2 * cos_2wt + s2 * sin_2wt)
    ss = 0.5 * (1 - c2 * cos_2wt - s2 * sin_2wt)
    if fit_mean:
        cc -= (c1 * cos_wt + s1 * sin_wt) ** 2
        ss -= (s1 * cos_wt - c1 * sin_wt) ** 2
    return yc * yc / cc + ys * ys / ss


def _normal_equations(sums: _Sums, nterms: int, fit_mean: bool
                      ) -> tuple[FloatArray, FloatArray]:
    """Palmer's normal matrix ``(Nf, P, P)`` and projections ``(Nf, P)``.

    Parameters ``[C0 (if fit_mean), S1, C1, ..., SH, CH]``; products of
    harmonics ``m, n`` from the window sums by product-to-sum identities.
    """
    cw, sw = sums.window.real, sums.window.imag
    # (harmonic, is_cosine) of each parameter; the constant is harmonic 0, cosine
    params = ([(0, True)] if fit_mean else []) + [
        (h, cosine) for h in range(1, nterms + 1) for cosine in (False, True)
    ]
    size = len(params)
    matrix = np.empty((cw.shape[1], size, size))
    for a, (m, cos_m) in enumerate(params):
        for b, (n, cos_n) in enumerate(params):
            diff, total = abs(m - n), m + n
            if cos_m and cos_n:
                entry = 0.5 * (cw[diff] + cw[total])
            elif not cos_m and not cos_n:
                entry = 0.5 * (cw[diff] - cw[total])
            else:  # sin(p wt) cos(q wt) = (sin((p + q) wt) + sin((p - q) wt)) / 2
                p, q = (n, m) if cos_m else (m, n)
                entry = 0.5 * (np.sign(p - q) * sw[diff] + sw[total])
            matrix[:, a, b] = entry
    data = np.stack([
        sums.data[h].real if cosine else sums.data[h].imag for h, cosine in params
    ], axis=-1)
    return matrix, data


def _quadratic_form(matrix: FloatArray, vector: FloatArray) -> FloatArray:
    """``v^T M^-1 v`` per frequency; NaN where ``M`` is singular."""
    try:
        return np.einsum("fp,fp->f", vector, np.linalg.solve(matrix, vector[..., None])[..., 0])
    except np.linalg.LinAlgError:
        out = np.full(vector.shape[0], np.nan)
        for i in range(vector.shape[0]):
            with contextlib.suppress(np.linalg.LinAlgError):
                out[i] = vector[i] @ np.linalg.solve(matrix[i], vector[i])
        return out


def _multi_term_power(sums: _Sums, nterms: int, fit_mean: bool, zero: NDArray[np.bool_]
                      ) -> FloatArray:
    """Raw chi^2 reduction ``b^T M^-1 b`` of the ``nterms``-harmonic model (weights sum to 1).

    Rows flagged ``zero`` (``f = 0``, where ``M`` is singular) get an identity matrix.
    """
    matrix, data = _normal_equations(sums, nterms, fit_mean)
    matrix[zero] = np.eye(matrix.shape[-1])
    return _quadratic_form(matrix, data)


def _power(sums: _Sums, freqs: FloatArray, weighted: _Weighted, *, fit_mean: bool,
           normalization: str, nterms: int) -> FloatArray:
    """Normalised power; NaN at ``f = 0`` (astropy's ``cython`` gives NaN there)."""
    zero = freqs == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        if nterms == 1:
            raw = _single_term_power(sums, fit_mean)
        else:
            raw = _multi_term_power(sums, nterms, fit_mean, zero)
        raw[zero] = np.nan
        if normalization == "standard":
            return raw / weighted.yy
        if normalization == "model":
            return raw / (weighted.yy - raw)
        if normalization == "log":
            return -np.log1p(-raw / weighted.yy)
        return raw * 0.5 * weighted.weight_sum


# }}}

# {{{ periodograms


def lombscargle_nufft(t: ArrayLike, y: ArrayLike, dy: ArrayLike | None, fmin: float,
                      df: float, nf: int, *, fit_mean: bool = True, center_data: bool = True,
                      normalization: Normalization = "standard", nterms: int = 1,
                      eps: float = 1e-9, upsampfac: float = 2.0) -> FloatArray:
    """Lomb-Scargle power on ``fmin + m df`` (``m = 0..nf-1``) through type-1 NUFFTs.

    astropy's semantics (``fit_mean``, ``center_data``, the four normalizations;
    ``nterms > 1`` as its ``chi2`` method). Times are shifted by ``t.min()``
    first (the power is invariant). One term takes three transforms (two with
    ``fit_mean=False``): ``(w y~, w)`` at points ``x``, ``w`` at ``2 x``;
    ``nterms = H`` takes ``2H``. NaN at ``f = 0``.
    """
    t, y, dy = _light_curve(t, y, dy)
    _check_options(normalization, nterms)
    fmin, df = float(fmin), float(df)
    if not (math.isfinite(fmin) and fmin >= 0):
        raise ValueError(f"fmin must be finite and >= 0, got {fmin!r}")
    if not (math.isfinite(df) and df > 0):
        raise ValueError(f"df must be finite and > 0, got {df!r}")
    if int(nf) != nf or nf < 1:
        raise ValueError(f"nf must be an integer >= 1, got {nf!r}")
    weighted = _Weighted(t, y, dy, center_data or fit_mean)
    sums = _regular_grid_sums(weighted, fmin, df, int(nf), nterms, fit_mean, eps, upsampfac)
    freqs = fmin + df * np.arange(int(nf), dtype=np.float64)
    return _power(sums, freqs, weighted, fit_mean=fit_mean, normalization=normalization,
                  nterms=nterms)


def _frequencies(freqs: ArrayLike) -> FloatArray:
    """``freqs`` as a non-empty 1-D array of finite frequencies ``>= 0``."""
    freqs = np.asarray(freqs, dtype=np.float64)
    if freqs.ndim != 1 or freqs.size == 0:
        raise ValueError(f"frequency must be a non-empty 1-D array, got shape {freqs.shape}")
    if not np.all(np.isfinite(freqs) & (freqs >= 0)):
        raise ValueError("frequency must be finite and >= 0")
    return freqs


def lombscargle_frequencies(t: ArrayLike, y: ArrayLike, dy: ArrayLike | None,
                            freqs: ArrayLike, *, fit_mean: bool = True,
                            center_data: bool = True,
                            normalization: Normalization = "standard", nterms: int = 1,
                            eps: float = 1e-9, upsampfac: float = 2.0) -> FloatArray:
    """Lomb-Scargle power at any frequencies (any order, repeats allowed) through type 3.

    As :func:`lombscargle_nufft`, with points ``2 pi (t - t_ref)`` and targets
    ``k freqs`` (spec §1.5).
    """
    t, y, dy = _light_curve(t, y, dy)
    _check_options(normalization, nterms)
    freqs = _frequencies(freqs)
    weighted = _Weighted(t, y, dy, center_data or fit_mean)
    sums = _type3_sums(weighted, freqs, nterms, fit_mean, eps, upsampfac)
    return _power(sums, freqs, weighted, fit_mean=fit_mean, normalization=normalization,
                  nterms=nterms)


def lombscargle_direct(t: ArrayLike, y: ArrayLike, dy: ArrayLike | None, freqs: ArrayLike,
                       *, fit_mean: bool = True, center_data: bool = True,
                       normalization: Normalization = "standard",
                       nterms: int = 1) -> FloatArray:
    """Lomb-Scargle power at any frequencies by direct float64 sums, ``O(N Nf)``.

    The same sums and post-processing as :func:`lombscargle_nufft`, with
    ``e^{2 pi i k f (t - t_ref)}`` evaluated directly.
    """
    t, y, dy = _light_curve(t, y, dy)
    _check_options(normalization, nterms)
    freqs = _frequencies(freqs)
    weighted = _Weighted(t, y, dy, center_data or fit_mean)
    sums = _direct_sums(weighted, freqs, nterms, fit_mean)
    return _power(sums, freqs, weighted, fit_mean=fit_mean, normalization=normalization,
                  nterms=nterms)


# }}}
