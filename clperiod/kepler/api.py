"""Kepler's equation and Keplerian radial-velocity models on the device (Ford 2009).

* :func:`solve`: the eccentric anomaly ``E`` of ``E - e sin E = M`` for arrays
  of any shape, with Danby's quartic-convergence iteration from
  ``E0 = M + 0.85 e sign(sin M)`` and a bounded number of steps
  (``cl_kernels/kepler.mako``); ``full=True`` adds the true anomaly's sine and
  cosine and a per-element status.
* :func:`radial_velocity`, :func:`chi2`, :func:`loglike`: velocities and
  goodness of fit of ``n_models`` multi-planet models at once, with
  per-instrument offsets and jitter and a polynomial trend
  (``cl_kernels/rvmodel.mako``); only per-model scalars leave the device.
* :class:`RVLikelihood`: a vectorised log-likelihood callable for population
  samplers; :func:`search`: a random search over a parameter box with the
  planet's K and the offsets solved linearly.

Several selected devices (``device=`` or ``CLPERIOD_DEVICE``, e.g. ``all``)
share every function's elements or models: they are cut into items, at least
:data:`clperiod.engine.scheduler.BATCHES_PER_DEVICE` per device when there are
enough, which each device takes as it finishes the last
(:class:`clperiod.kepler.rvmodel.MultiDeviceEvaluator`). All devices use the same
solver and phase arithmetic, and each model keeps the kernel layout of a
one-device call, so on devices of one kind the results are bitwise those of
one device, in input order; :func:`search` draws each batch of trial orbits
from its own random stream, so it finds the same orbits on any number of
devices.

Conventions are radvel's (see :mod:`clperiod.kepler.orbits`): ``w`` is the star's
argument of periastron, ``v = K (cos(f + w) + e cos w)`` is positive when the
star recedes, and the mean anomaly is ``M = 2 pi (t - t_ref) / P + M0``.

Phases lose nothing to large times: the kernels take the times from an
origin within the data (``t_ref`` if it lies there, else the middle of the
data) and each planet's phase at that origin from the exact difference of
the epochs, whole periods removed before the division, with ``M0`` reduced
modulo 2 pi at rounding level (:mod:`clperiod.engine.angles`). With barycentric
dates and the default ``t_ref = 0`` the fp64 velocities are as accurate as
with ``t_ref`` inside the data (a few 1e-12 K), in every basis.
"""

from __future__ import annotations

import enum
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyopencl as cl

from clperiod import checks
from clperiod.catalog import refuse_masked
from clperiod.engine import kernels
from clperiod.engine.devices import (
    DeviceInfo,
    get_context,
    get_queue,
    require_fp64,
    select_devices,
    upload,
)
from clperiod.engine.scheduler import run_on_devices, split_range
from clperiod.engine.staging import PINNED_POOL
from clperiod.kepler import orbits
from clperiod.kepler.rvmodel import (
    ModelStatus,
    MultiDeviceEvaluator,
    Observations,
    Precision,
    model_params,
    per_model,
    shared_kepler_method,
)
from clperiod.kepler.rvsearch import SearchResult, search

__all__ = [
    "KeplerSolution",
    "KeplerStatus",
    "ModelStatus",
    "RVLikelihood",
    "SearchResult",
    "chi2",
    "empty_params",
    "loglike",
    "radial_velocity",
    "search",
    "solve",
]


#: Work-group size of the solve kernel (64-256 measured best on the H100).
SOLVE_LOCAL_SIZE = 128
#: With several devices, a solve is cut into items of at least this many
#: elements (2.7 MB of copies in fp64).
SOLVE_MIN_ELEMENTS = 1 << 16


class KeplerStatus(enum.IntEnum):
    """Per-element status of :func:`solve` (NaN results unless OK)."""

    OK = 0
    BAD_ECCENTRICITY = 1  # e < 0 or e >= 1
    NOT_FINITE = 2  # M or e is NaN or infinite (fp32: or beyond the float32 range)
    NOT_CONVERGED = 3  # the bounded iteration did not reach 1e-6 (never seen)


@dataclass(frozen=True)
class KeplerSolution:
    """Eccentric anomaly, true anomaly (sine, cosine) and status per element."""

    eccentric_anomaly: np.ndarray
    sin_true_anomaly: np.ndarray
    cos_true_anomaly: np.ndarray
    status: np.ndarray


def solve(
    mean_anomaly,
    eccentricity,
    *,
    precision: Literal["fp64", "fp32"] = "fp64",
    method: Literal["auto", "danby", "markley"] = "auto",
    full: bool = False,
    device=None,
) -> np.ndarray | KeplerSolution:
    """Solve ``E - e sin E = M`` element-wise on the device.

    Parameters
    ----------
    mean_anomaly, eccentricity
        Arrays (or scalars) broadcast against each other; radians, any
        revolution: every finite ``M`` is reduced modulo 2 pi on the device
        at rounding level (Payne-Hanek beyond 2^25, fp32 2^11), so the true
        anomaly is that of the exact ``M`` whatever its size.
    precision
        ``"fp64"`` (residual ``|E - e sin E - M|`` at rounding level, below
        1e-12 up to e = 0.99) or ``"fp32"`` (``M`` and ``e`` rounded to
        float32 first; ``|M|`` beyond 3.4e38 gives ``NOT_FINITE``).
    method
        ``"danby"``: Ford 2009's quartic iteration, stopping when converged
        (at most 8 / 6 steps); ``"markley"``: Markley (1995)'s cubic starter
        and one fifth-order correction, a fixed cost with no loop; ``"auto"``:
        Markley on GPUs (faster there), Danby elsewhere.
    full
        Also return the true anomaly's sine and cosine and the status.
    device
        Device selection; several devices share the elements (results as
        on one device, see :mod:`clperiod.kepler`).

    Returns
    -------
    ndarray or KeplerSolution
        ``E`` in the revolution of ``M``, ``M + (E_m - m)`` rounded once
        (``m``: ``M`` reduced; same shape as the broadcast inputs; NaN where
        ``e`` is outside ``[0, 1)`` or an input is not finite), or the full
        :class:`KeplerSolution`.
    """
    checks.choice("precision", precision, ("fp64", "fp32"))
    refuse_masked("mean_anomaly", mean_anomaly)
    refuse_masked("eccentricity", eccentricity)
    m, e = np.broadcast_arrays(np.asarray(mean_anomaly), np.asarray(eccentricity))
    for name, a in (("mean_anomaly", m), ("eccentricity", e)):
        if not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)):
            raise TypeError(f"{name} must be real numbers, got dtype {a.dtype}")
    devices = select_devices(device)
    chosen = shared_kepler_method(devices, method)
    fp64 = precision == "fp64"
    if fp64:
        for info in devices:
            require_fp64(info)
    dtype = np.float64 if fp64 else np.float32
    shape, n = m.shape, m.size
    outputs = [np.empty(n, dtype=dtype) for _ in range(3)] + [np.empty(n, dtype=np.int8)]
    if n:
        with np.errstate(over="ignore"):  # beyond float32: infinite, NOT_FINITE
            inputs = [np.ascontiguousarray(a.ravel(), dtype=dtype) for a in (m, e)]
        run_on_devices(
            devices,
            split_range(0, n, len(devices), SOLVE_MIN_ELEMENTS),
            lambda info, item: _solve_range(info, chosen, inputs, outputs, *item),
        )
    big_e, sin_f, cos_f, status = (out.reshape(shape) for out in outputs)
    if not full:
        return big_e
    return KeplerSolution(big_e, sin_f, cos_f, status)


def _solve_range(
    info: DeviceInfo,
    method: str,
    inputs: list[np.ndarray],
    outputs: list[np.ndarray],
    lo: int,
    hi: int,
) -> None:
    """Solve elements ``[lo, hi)`` of the flat ``inputs`` (M, e) on ``info``
    into the same rows of ``outputs`` (E, sin f, cos f, status)."""
    context, queue, n = get_context(info), get_queue(info), hi - lo
    real = "double" if inputs[0].dtype == np.float64 else "float"
    (kernel,) = kernels.get_kernels(context, "kepler", ("kepler_solve",), real=real, method=method)
    mf = cl.mem_flags
    buffers = [upload(queue, a[lo:hi]) for a in inputs]
    buffers += [cl.Buffer(context, mf.WRITE_ONLY, out[lo:hi].nbytes) for out in outputs]
    kernel.set_args(*buffers[:2], np.int64(n), *buffers[2:])
    cl.enqueue_nd_range_kernel(
        queue, kernel, (-(-n // SOLVE_LOCAL_SIZE) * SOLVE_LOCAL_SIZE,), (SOLVE_LOCAL_SIZE,)
    )
    for out, buffer in zip(outputs, buffers[2:], strict=True):
        cl.enqueue_copy(queue, out[lo:hi], buffer)
    queue.finish()


def empty_params(n_models: int, n_planets: int, device=None) -> np.ndarray:
    """A page-locked float64 array ``(n_models, n_planets, 5)`` for parameters.

    Filling this array instead of an ordinary one lets :func:`chi2`,
    :func:`loglike` and :class:`RVLikelihood` (fp64 and mixed precision on
    fp64 devices, every basis) upload parameters straight to the
    device at the bus speed, skipping a host copy; results are identical.
    The memory is page-locked through the first device of ``device``; the
    other devices of a multi-device call upload from it directly where the
    platform shares page-locked memory among its devices (NVIDIA's, see
    :func:`clperiod.engine.staging.serves`), and elsewhere copy their models
    into their own page-locked staging first, as from an ordinary array. It
    returns to a pool when the array is garbage-collected.
    """
    info = select_devices(device)[0]
    return PINNED_POOL.empty(info, (int(n_models), int(n_planets), 5), np.float64)


def radial_velocity(
    t,
    params,
    *,
    basis: str = orbits.STANDARD,
    t_ref: float = 0.0,
    instrument=None,
    offsets=None,
    trend=None,
    precision: Precision = "fp64",
    device=None,
) -> np.ndarray:
    """Radial velocities of Keplerian models at times ``t``.

    Parameters
    ----------
    t
        Observation times, shape ``(n_obs,)``.
    params
        Per-planet parameters, shape ``(..., n_planets, 5)`` in ``basis``
        (:data:`clperiod.kepler.orbits.BASES`; default ``(P, K, e, w, M0)``).
    basis, t_ref
        Parameter basis and the reference epoch of ``M0`` and of the trend.
    instrument, offsets
        Instrument label of each observation and per-model offsets, shape
        ``(..., n_inst)`` (instruments in sorted label order) or a mapping
        ``{label: offset}``.
    trend
        ``(..., 2)``: ``dvdt`` and ``curv`` of ``dvdt (t - t_ref) +
        curv (t - t_ref)^2``.
    precision
        ``"fp64"``, ``"mixed"`` (phase in double or double-single, the rest
        in single) or ``"fp32"``.
    device
        Device selection; several devices share the models (results as on
        one device, see :mod:`clperiod.kepler`).

    Returns
    -------
    ndarray
        Shape ``(..., n_obs)``; NaN rows for models with invalid parameters
        (``P <= 0``, ``e`` outside ``[0, 1)``, non-finite values).
    """
    p, batch = model_params(params, basis)
    refuse_masked("t", t)
    t = np.asarray(t)
    obs = Observations.build(t, np.zeros(np.shape(t)), np.ones(np.shape(t)), instrument, t_ref)
    if p.shape[0] == 0:
        return np.empty((*batch, obs.n_obs))
    evaluator = MultiDeviceEvaluator(
        obs, n_planets=p.shape[1], basis=basis, precision=precision, layout="split", device=device
    )
    v = evaluator.velocities(p).astype(np.float64, copy=False)
    offsets = obs.per_instrument("offsets", offsets, batch)
    if offsets is not None:
        v += offsets[:, obs.code]
    if trend is not None:
        tr = _trend_array(trend, batch)
        dt = obs.t - obs.t_ref
        v += tr[:, :1] * dt + tr[:, 1:] * dt**2
    return v.reshape((*batch, obs.n_obs)).astype(evaluator.real_dtype, copy=False)


def _trend_array(trend, batch: tuple[int, ...]) -> np.ndarray:
    """Trend coefficients ``(dvdt, curv)`` as float64 ``(n_models, 2)``."""
    a = np.asarray(trend)
    if a.dtype == object or not (
        np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)
    ):
        raise TypeError(f"trend must be real numbers, got dtype {a.dtype}")
    if a.shape[-1:] != (2,):
        raise ValueError(f"trend must end in an axis of 2 (dvdt, curv), got shape {a.shape}")
    return per_model("trend", a, batch)


_EVALUATORS: OrderedDict[tuple, MultiDeviceEvaluator] = OrderedDict()
_EVALUATORS_KEPT = 4
_EVALUATORS_LOCK = threading.Lock()


@contextmanager
def _evaluator(obs: Observations, **options) -> Iterator[MultiDeviceEvaluator]:
    """A :class:`MultiDeviceEvaluator` for these observations and options
    (``device``: a tuple of ``pyopencl.Device``), reused across calls: the
    last few are kept, so repeated calls on the same data skip the set-up and
    reuse device and page-locked buffers. One evaluator serves one call at a
    time (a concurrent call builds its own)."""
    key = (
        obs.t.tobytes(),
        obs.v.tobytes(),
        obs.sigma.tobytes(),
        obs.code.tobytes(),
        obs.instruments,
        obs.t_ref,
        tuple(sorted(options.items(), key=lambda kv: kv[0])),
    )
    with _EVALUATORS_LOCK:
        evaluator = _EVALUATORS.pop(key, None)
    if evaluator is None:
        evaluator = MultiDeviceEvaluator(obs, **options)
    yield evaluator
    with _EVALUATORS_LOCK:
        _EVALUATORS[key] = evaluator
        while len(_EVALUATORS) > _EVALUATORS_KEPT:
            _EVALUATORS.popitem(last=False)


def _evaluate(
    statistic,
    t,
    v_obs,
    sigma,
    params,
    basis,
    t_ref,
    instrument,
    offsets,
    jitter,
    trend,
    precision,
    layout,
    memory,
    phase_arithmetic,
    kepler_method,
    device,
):
    p, batch = model_params(params, basis)
    obs = Observations.build(t, v_obs, sigma, instrument, t_ref)
    n = p.shape[0]
    extras = [
        obs.per_instrument("offsets", offsets, batch),
        obs.per_instrument("jitter", jitter, batch),
        None if trend is None else _trend_array(trend, batch),
    ]
    degree = 0 if trend is None else 2
    if n == 0:
        return np.empty(batch), np.empty(batch, np.int32)
    with _evaluator(
        obs,
        n_planets=p.shape[1],
        basis=basis,
        statistic=statistic,
        offsets=extras[0] is not None,
        jitter=extras[1] is not None,
        trend=degree,
        precision=precision,
        layout=layout,
        memory=memory,
        phase_arithmetic=phase_arithmetic,
        kepler_method=kepler_method,
        device=tuple(d.device for d in select_devices(device)),
    ) as evaluator:
        out = evaluator(p, *extras)
    return out["statistic"].reshape(batch), out["status"].reshape(batch)


_STAT_DOC = """
    Parameters
    ----------
    t, v_obs, sigma
        Observation times, velocities and uncertainties, shape ``(n_obs,)``;
        all finite, ``sigma > 0``.
    params
        Per-planet parameters, shape ``(..., n_planets, 5)`` in ``basis``.
    basis, t_ref
        Parameter basis (:data:`clperiod.kepler.orbits.BASES`) and reference epoch.
    instrument
        Instrument label per observation (default: one instrument).
    offsets, jitter
        Per-model offset and jitter of each instrument, ``(..., n_inst)``
        (sorted label order) or ``{label: value}``; jitter is added to
        ``sigma`` in quadrature.
    trend
        ``(..., 2)``: ``dvdt``, ``curv`` about ``t_ref``.
    precision
        ``"mixed"`` (default: orbital phase in double, or double-single on
        devices without fp64, the rest in single precision with
        Kahan-compensated sums), ``"fp64"`` or ``"fp32"``. The phase is
        formed without cancellation for any ``t_ref`` and epochs (e.g.
        barycentric dates with ``t_ref = 0``), see :mod:`clperiod.kepler`.
    layout, memory
        ``"auto"`` (planned), or force ``"fused"``/``"split"`` kernels and
        ``"constant"``/``"local"``/``"global"`` memory for the observations.
    phase_arithmetic
        With ``precision="mixed"``: ``"auto"``, ``"double"`` or
        ``"double_single"``; with ``"fp32"``: ``"auto"`` (each planet's phase
        at the origin formed in the kernel in double on devices with fp64)
        or ``"host"`` (from the host in float64, as without fp64).
    kepler_method
        ``"auto"`` (Markley's fixed-cost solver on GPUs, Danby's iteration
        elsewhere), ``"danby"`` or ``"markley"``; see :func:`solve`.
    device
        Device selection; several devices share the models (results as on
        one device, see :mod:`clperiod.kepler`).
"""


def chi2(
    t,
    v_obs,
    sigma,
    params,
    *,
    basis: str = orbits.STANDARD,
    t_ref: float = 0.0,
    instrument=None,
    offsets=None,
    jitter=None,
    trend=None,
    precision: Precision = "mixed",
    layout: str = "auto",
    memory: str = "auto",
    phase_arithmetic: str = "auto",
    kepler_method: str = "auto",
    device=None,
) -> np.ndarray:
    return _evaluate(
        "chi2",
        t,
        v_obs,
        sigma,
        params,
        basis,
        t_ref,
        instrument,
        offsets,
        jitter,
        trend,
        precision,
        layout,
        memory,
        phase_arithmetic,
        kepler_method,
        device,
    )[0]


def loglike(
    t,
    v_obs,
    sigma,
    params,
    *,
    basis: str = orbits.STANDARD,
    t_ref: float = 0.0,
    instrument=None,
    offsets=None,
    jitter=None,
    trend=None,
    precision: Precision = "mixed",
    layout: str = "auto",
    memory: str = "auto",
    phase_arithmetic: str = "auto",
    kepler_method: str = "auto",
    device=None,
) -> np.ndarray:
    return _evaluate(
        "loglike",
        t,
        v_obs,
        sigma,
        params,
        basis,
        t_ref,
        instrument,
        offsets,
        jitter,
        trend,
        precision,
        layout,
        memory,
        phase_arithmetic,
        kepler_method,
        device,
    )[0]


chi2.__doc__ = (
    """chi^2 of each model: ``sum((v_obs - model)^2 / (sigma^2 + jitter^2))``.
"""
    + _STAT_DOC
    + """
    Returns
    -------
    ndarray
        float64, shape ``params.shape[:-2]``; NaN for models with invalid
        parameters (see :class:`ModelStatus`).
"""
)
loglike.__doc__ = (
    """Gaussian log-likelihood of each model (radvel's ``loglike_jitter``):
    ``-0.5 sum(r^2 / s^2 + ln(2 pi s^2))`` with ``s^2 = sigma^2 + jitter^2``.
"""
    + _STAT_DOC
    + """
    Returns
    -------
    ndarray
        float64, shape ``params.shape[:-2]``; NaN for invalid models.
"""
)


class RVLikelihood:
    """Vectorised Gaussian log-likelihood of Keplerian models for samplers.

    ``theta`` holds, in this order: the 5 ``basis`` parameters of each
    planet, then (if ``offsets``) one offset per instrument, then (if
    ``jitter``) one jitter per instrument, then ``trend`` coefficients
    (``dvdt``, then ``curv``); ``names`` lists them. Calling with
    ``(n_walkers, ndim)`` returns ``(n_walkers,)`` (emcee's
    ``vectorize=True``), with ``-inf`` for invalid parameters (``P <= 0``,
    ``e`` outside ``[0, 1)``, non-finite values), so priors only need to add
    their own terms.

    Parameters
    ----------
    t, v_obs, sigma, instrument
        The radial velocities (as for :func:`chi2`).
    n_planets
        Planets per model.
    basis
        Parameter basis (:data:`clperiod.kepler.orbits.BASES`).
    t_ref
        Reference epoch of ``M0`` and the trend (default: middle of the span).
    offsets, jitter
        Whether each instrument's offset and jitter are parameters (else 0).
    trend
        Degree of the polynomial trend (0, 1 or 2).
    precision, layout, memory, phase_arithmetic, kepler_method, device
        As for :func:`chi2`.
    """

    def __init__(
        self,
        t,
        v_obs,
        sigma,
        *,
        n_planets: int,
        basis: str = orbits.STANDARD,
        instrument=None,
        t_ref: float | None = None,
        offsets: bool = True,
        jitter: bool = True,
        trend: int = 0,
        precision: Precision = "mixed",
        layout: str = "auto",
        memory: str = "auto",
        phase_arithmetic: str = "auto",
        kepler_method: str = "auto",
        device=None,
    ) -> None:
        if not isinstance(n_planets, (int, np.integer)) or n_planets < 1:
            raise ValueError(f"n_planets must be a positive integer, got {n_planets!r}")
        t_arr = np.asarray(t, dtype=np.float64)
        if t_ref is None:
            t_ref = 0.5 * (float(np.min(t_arr)) + float(np.max(t_arr))) if t_arr.size else 0.0
        self.observations = Observations.build(t, v_obs, sigma, instrument, t_ref)
        self.n_planets, self.basis, self.trend = int(n_planets), basis, trend
        self.fit_offsets, self.fit_jitter = bool(offsets), bool(jitter)
        self._evaluator = MultiDeviceEvaluator(
            self.observations,
            n_planets=self.n_planets,
            basis=basis,
            statistic="loglike",
            offsets=self.fit_offsets,
            jitter=self.fit_jitter,
            trend=trend,
            precision=precision,
            layout=layout,
            memory=memory,
            phase_arithmetic=phase_arithmetic,
            kepler_method=kepler_method,
            device=device,
        )
        words = basis.split()
        inst = self.observations.instruments
        self.names: list[str] = [f"{w}{j + 1}" for j in range(self.n_planets) for w in words]
        self.names += [f"gamma_{i}" for i in inst] if self.fit_offsets else []
        self.names += [f"jit_{i}" for i in inst] if self.fit_jitter else []
        self.names += ["dvdt", "curv"][:trend]

    @property
    def ndim(self) -> int:
        """Length of a parameter vector."""
        return len(self.names)

    def unpack(self, theta) -> dict[str, np.ndarray | None]:
        """Split ``theta`` ``(..., ndim)`` into ``params`` ``(n, n_planets, 5)``,
        ``offsets``, ``jitter`` ``(n, n_inst)`` and ``trend`` ``(n, 2)``."""
        th = np.asarray(theta, dtype=np.float64)
        if th.shape[-1:] != (self.ndim,):
            raise ValueError(
                f"theta must end in an axis of {self.ndim} values {self.names}, "
                f"got shape {th.shape}"
            )
        th = th.reshape(-1, self.ndim)
        n_inst = len(self.observations.instruments)
        at = 5 * self.n_planets
        out: dict[str, np.ndarray | None] = {
            "params": np.ascontiguousarray(th[:, :at].reshape(-1, self.n_planets, 5))
        }
        for name, fitted in (("offsets", self.fit_offsets), ("jitter", self.fit_jitter)):
            out[name] = np.ascontiguousarray(th[:, at : at + n_inst]) if fitted else None
            at += n_inst if fitted else 0
        if self.trend:
            trend = np.zeros((th.shape[0], 2))
            trend[:, : self.trend] = th[:, at:]
            out["trend"] = trend
        else:
            out["trend"] = None
        return out

    def __call__(self, theta) -> np.ndarray | float:
        """Log-likelihood of ``theta`` ``(ndim,)`` or ``(..., ndim)``."""
        batch = np.shape(theta)[:-1]
        parts = self.unpack(theta)
        params = parts["params"]
        assert params is not None  # unpack always gives the orbits
        if params.shape[0] == 0:
            return np.empty(batch)
        out = self._evaluator(params, parts["offsets"], parts["jitter"], parts["trend"])
        good = (out["status"] == ModelStatus.OK) & np.isfinite(out["statistic"])
        lnl = np.where(good, out["statistic"], -np.inf)
        return float(lnl[0]) if batch == () else lnl.reshape(batch)
