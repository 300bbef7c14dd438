"""Device evaluation of Keplerian RV models: data preparation, planning, launches.

:class:`Observations` validates RV data and sorts it by instrument once;
:class:`ModelEvaluator` compiles ``cl_kernels/rvmodel.mako`` for one data set,
statistic and precision, keeps the observations on the device, picks the
kernel layout and the memory for the observations (:func:`plan`), and
evaluates any number of models in batches, returning only per-model scalars.
The public functions live in :mod:`clperiod.kepler`.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyopencl as cl

from . import kernels, orbits
from .device import DeviceInfo, get_context, get_queue, require_fp64, select_devices, upload

__all__ = ["ModelStatus", "Observations", "ModelEvaluator", "Plan", "plan", "model_params"]

Precision = Literal["fp64", "fp32", "mixed"]
PRECISIONS = ("fp64", "fp32", "mixed")
#: Observations per work-item of the split layout's velocity kernel.
VELOCITY_BLOCK = 32
#: Models per launch (bounds the parameter, output and velocity buffers).
BATCH_MODELS = 1 << 20
#: Below this many models per compute unit the fused kernel (one work-item
#: per model) cannot fill the device and the split layout is used.
FUSED_MIN_MODELS_PER_CU = 256
LOCAL_SIZE = 128


class ModelStatus(enum.IntEnum):
    """Per-model status (the statistic is NaN unless OK)."""

    OK = 0
    BAD_PARAMETERS = 1  # P <= 0, e outside [0, 1) or a non-finite parameter
    NOT_CONVERGED = 2  # a Kepler solve did not converge (never seen)
    DEGENERATE = 3  # profile: the planet's signal is not constrained by the data


def _real_array(name: str, value, ndim: int | None = None) -> np.ndarray:
    a = np.asarray(value)
    if a.dtype == object or not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)):
        raise TypeError(f"{name} must be real numbers, got dtype {a.dtype}")
    a = a.astype(np.float64)
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {a.shape}")
    return a


@dataclass(frozen=True)
class Observations:
    """Radial velocities of one star, validated and grouped by instrument.

    Attributes
    ----------
    t, v, sigma
        Times, velocities and uncertainties (float64, input order).
    code
        Instrument index of each observation (into ``instruments``).
    instruments
        Instrument labels, sorted (``("0",)`` when none were given).
    t_ref
        Reference epoch of the mean anomalies ``m0`` and of the trend.
    order
        Stable permutation that groups the observations by instrument.
    seg
        ``seg[i]:seg[i + 1]`` are instrument ``i``'s rows after ``order``.
    """

    t: np.ndarray
    v: np.ndarray
    sigma: np.ndarray
    code: np.ndarray
    instruments: tuple[str, ...]
    t_ref: float
    order: np.ndarray
    seg: np.ndarray

    @classmethod
    def build(cls, t, v, sigma, instrument=None, t_ref: float = 0.0) -> Observations:
        """Validate and group; raises on anything the kernels cannot use."""
        t = _real_array("t", t, 1)
        v = _real_array("v_obs", v, 1)
        sigma = _real_array("sigma", sigma, 1)
        if not (t.size == v.size == sigma.size):
            raise ValueError(f"t, v_obs and sigma differ in length: {t.size}, {v.size}, {sigma.size}")
        if t.size == 0:
            raise ValueError("no observations")
        for name, a in (("t", t), ("v_obs", v), ("sigma", sigma)):
            bad = ~np.isfinite(a)
            if bad.any():
                raise ValueError(f"{name} has {bad.sum()} non-finite values (first at row "
                                 f"{int(np.argmax(bad))}); drop those observations first")
        if (sigma <= 0).any():
            raise ValueError(f"sigma must be positive; row {int(np.argmax(sigma <= 0))} is "
                             f"{sigma[sigma <= 0][0]}")
        t_ref = float(t_ref)
        if not math.isfinite(t_ref):
            raise ValueError(f"t_ref must be finite, got {t_ref}")
        if instrument is None:
            labels, code = ("0",), np.zeros(t.size, dtype=np.int64)
        else:
            raw = np.asarray(instrument)
            if raw.shape != t.shape:
                raise ValueError(f"instrument must give one label per observation, got shape {raw.shape}")
            names, code = np.unique(raw.astype(str), return_inverse=True)
            labels = tuple(str(x) for x in names)
        order = np.argsort(code, kind="stable")
        seg = np.searchsorted(code[order], np.arange(len(labels) + 1)).astype(np.int32)
        return cls(t, v, sigma, code, labels, t_ref, order, seg)

    @property
    def n_obs(self) -> int:
        """Number of observations."""
        return self.t.size

    def per_instrument(self, name: str, value, n_models: int) -> np.ndarray | None:
        """Offsets or jitter as ``(n_models, n_inst)`` float64, or None.

        ``value`` is an array broadcastable to that shape (instruments in the
        order of :attr:`instruments`) or a mapping ``{label: value}`` naming
        every instrument.
        """
        if value is None:
            return None
        n_inst = len(self.instruments)
        if isinstance(value, dict):
            unknown = set(map(str, value)) - set(self.instruments)
            missing = set(self.instruments) - set(map(str, value))
            if unknown or missing:
                raise ValueError(f"{name}: unknown instruments {sorted(unknown)}, missing "
                                 f"{sorted(missing)}; the data have {list(self.instruments)}")
            lookup = {str(k): val for k, val in value.items()}
            value = np.stack(np.broadcast_arrays(*(np.asarray(lookup[i], dtype=np.float64)
                                                   for i in self.instruments)), axis=-1)
        a = _real_array(name, value)
        if a.shape[-1:] != (n_inst,) and not (a.ndim == 0 and n_inst == 1):
            raise ValueError(f"{name} must end in an axis of {n_inst} instruments "
                             f"{list(self.instruments)}, got shape {a.shape}")
        return np.ascontiguousarray(np.broadcast_to(a.reshape(a.shape[:-1] + (n_inst,)) if a.ndim
                                                    else a.reshape(1), (n_models, n_inst)))


def model_params(params, basis: str) -> tuple[np.ndarray, tuple[int, ...]]:
    """Parameters as ``(n_models, n_planets, 5)`` float64 and the batch shape.

    ``params`` has shape ``(..., n_planets, 5)``; the leading axes are the
    batch shape of the result.
    """
    orbits.check_basis(basis)
    p = _real_array("params", params)
    if p.ndim < 2 or p.shape[-1] != 5 or p.shape[-2] == 0:
        raise ValueError("params must have shape (..., n_planets, 5) with n_planets >= 1, "
                         f"got {p.shape}")
    batch = p.shape[:-2]
    return np.ascontiguousarray(p.reshape(-1, p.shape[-2], 5)), batch


@dataclass(frozen=True)
class Plan:
    """How a model evaluation runs: arithmetic, layout and observation memory."""

    real: str
    phase: str
    layout: str
    memory: str
    compute_units: int

    def layout_for(self, n_models: int) -> str:
        """The fused layout (one work-item per model, Ford's second
        implementation) when there are enough models to fill the device,
        else split (velocities of model x observation-block work-items, then
        the statistic)."""
        if self.layout != "auto":
            return self.layout
        return "fused" if n_models >= FUSED_MIN_MODELS_PER_CU * self.compute_units else "split"


def _phase_choice(precision: str, info: DeviceInfo, phase_arithmetic: str) -> str:
    if phase_arithmetic not in ("auto", "double", "double_single"):
        raise ValueError("phase_arithmetic must be 'auto', 'double' or 'double_single', "
                         f"got {phase_arithmetic!r}")
    if precision != "mixed":
        if phase_arithmetic != "auto":
            raise ValueError("phase_arithmetic applies to precision='mixed' only")
        return "double" if precision == "fp64" else "float"
    if phase_arithmetic == "double" or (phase_arithmetic == "auto" and info.fp64):
        require_fp64(info)
        return "double"
    return "ds"


def plan(info: DeviceInfo, n_obs: int, n_inst: int, precision: str, layout: str = "auto",
         memory: str = "auto", phase_arithmetic: str = "auto") -> Plan:
    """Choose the arithmetic, the kernel layout and where observations live.

    With ``layout="auto"`` the layout is chosen per launch
    (:meth:`Plan.layout_for`). Observations go to constant memory when they
    fit the device's constant buffer, else to local memory, else stay global.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "fp64":
        require_fp64(info)
    phase = _phase_choice(precision, info, phase_arithmetic)
    real = "double" if precision == "fp64" else "float"
    if layout not in ("auto", "fused", "split"):
        raise ValueError(f"layout must be 'auto', 'fused' or 'split', got {layout!r}")
    obs_bytes = n_obs * ({"double": 8, "ds": 8, "float": 4}[phase] + 2 * (8 if real == "double" else 4))
    obs_bytes += 4 * (n_inst + 1)
    constant_ok = obs_bytes <= info.device.max_constant_buffer_size and info.device.max_constant_args >= 4
    local_ok = obs_bytes + 64 <= info.local_mem
    if memory not in ("auto", "constant", "local", "global"):
        raise ValueError(f"memory must be 'auto', 'constant', 'local' or 'global', got {memory!r}")
    if memory == "auto":
        memory = "constant" if constant_ok else "local" if local_ok else "global"
    elif (memory == "constant" and not constant_ok) or (memory == "local" and not local_ok):
        raise ValueError(f"memory={memory!r}: {n_obs} observations ({obs_bytes} bytes) do not fit "
                         f"the {memory} memory of {info.label}")
    return Plan(real, phase, layout, memory, info.compute_units)


def _ds(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    hi = x.astype(np.float32)
    return hi, (x - hi.astype(np.float64)).astype(np.float32)


@dataclass
class _Batch:
    """Device buffers of one batch of models."""

    n: int
    layout: str
    padded: int
    head: list
    out: cl.Buffer
    out_k: cl.Buffer
    out_gamma: cl.Buffer
    status: cl.Buffer
    vel: cl.Buffer
    gvel: cl.Buffer


class ModelEvaluator:
    """Compiled kernels and device-resident observations for one data set.

    Parameters
    ----------
    obs
        The observations.
    n_planets, basis
        Planets per model and the parameter basis (:data:`orbits.BASES`).
    statistic
        ``"chi2"``, ``"loglike"`` or ``"profile"`` (last planet's K and the
        instrument offsets solved by linear least squares).
    offsets, jitter, trend
        Whether models carry offsets, jitters (per instrument) and a trend of
        degree ``trend`` (0, 1 or 2).
    precision, layout, memory, phase_arithmetic
        See :func:`plan`.
    device
        Device selection; the first selected device is used.
    """

    def __init__(self, obs: Observations, *, n_planets: int, basis: str = orbits.STANDARD,
                 statistic: str = "chi2", offsets: bool = False, jitter: bool = False,
                 trend: int = 0, precision: Precision = "mixed", layout: str = "auto",
                 memory: str = "auto", phase_arithmetic: str = "auto", device=None) -> None:
        if statistic not in ("chi2", "loglike", "profile"):
            raise ValueError(f"statistic must be 'chi2', 'loglike' or 'profile', got {statistic!r}")
        if statistic == "profile" and offsets:
            raise ValueError("profile solves the offsets; do not pass them")
        if trend not in (0, 1, 2):
            raise ValueError(f"trend must be 0, 1 or 2 (polynomial degree), got {trend!r}")
        self.obs = obs
        self.info = select_devices(device)[0]
        self.basis = basis
        self.ecc_form, self.time_form = orbits.check_basis(basis)
        self.statistic, self.has_offsets, self.has_jitter, self.trend = statistic, offsets, jitter, trend
        self.n_planets = n_planets
        n_inst = len(obs.instruments)
        self.plan = plan(self.info, obs.n_obs, n_inst, precision, layout, memory, phase_arithmetic)
        self.real_dtype = np.float64 if self.plan.real == "double" else np.float32
        self.context = get_context(self.info)
        self.queue = get_queue(self.info)
        self._kernels = dict(zip(("rv_fused", "rv_velocity", "rv_statistic"), kernels.get_kernels(
            self.context, "rvmodel", ("rv_fused", "rv_velocity", "rv_statistic"),
            real=self.plan.real, phase=self.plan.phase, n_planets=n_planets,
            ecc_form=self.ecc_form, time_form="m0" if self.time_form == "m0" else "tp",
            n_inst=n_inst, statistic=statistic, offsets=offsets, jitter=jitter, trend=trend,
            space=self.plan.memory)))
        self._upload_observations()

    # ------------------------------------------------------------------ data
    def _upload_observations(self) -> None:
        obs, order = self.obs, self.obs.order
        dt = obs.t[order] - obs.t_ref
        v = obs.v[order]
        if self.statistic == "profile":
            # centre each instrument (its offset absorbs any constant) so the
            # single-precision sums do not cancel; added back to the offsets
            self._centre = np.array([v[a:b].mean() for a, b in zip(obs.seg[:-1], obs.seg[1:])])
            v = v - np.repeat(self._centre, np.diff(obs.seg))
        var = obs.sigma[order] ** 2
        w = var if self.has_jitter else 1.0 / var
        phase = self.plan.phase
        if phase == "double":
            t_dev = dt
        elif phase == "ds":
            t_dev = np.stack(_ds(dt), axis=-1)
        else:
            t_dev = dt.astype(np.float32)
        log_norm = obs.n_obs * math.log(2 * math.pi)
        if not self.has_jitter:
            log_norm += float(np.log(var).sum())
        self.log_norm = log_norm
        self._obs_buffers = [upload(self.context, np.ascontiguousarray(a)) for a in (
            t_dev, v.astype(self.real_dtype), w.astype(self.real_dtype), obs.seg)]
        self._obs_nbytes = [np.ascontiguousarray(a).nbytes for a in (
            t_dev, v.astype(self.real_dtype), w.astype(self.real_dtype), obs.seg)]

    def _observation_args(self) -> list:
        args = [*self._obs_buffers, np.int32(self.obs.n_obs)]
        if self.plan.memory == "local":
            args += [cl.LocalMemory(max(n, 4)) for n in self._obs_nbytes]
        return args

    def _param_buffers(self, p: np.ndarray) -> tuple[cl.Buffer, cl.Buffer]:
        """Parameters (and double-single phase coefficients) for the device."""
        if self.time_form == "tc":
            std = orbits.convert(p, self.basis, self.basis.replace("tc", "tp"))
            p = std
        if self.plan.phase == "double":
            return upload(self.context, p.ravel()), upload(self.context, np.zeros(4, np.float32))
        if self.plan.phase == "ds":
            per, tau = p[..., 0], p[..., 4]
            inv_p = 1.0 / per
            phi0 = tau / (2 * np.pi) if self.time_form == "m0" else (self.obs.t_ref - tau) * inv_p
            phi0 = phi0 - np.floor(phi0)
            coeff = np.stack([*_ds(inv_p), *_ds(phi0)], axis=-1)
            return (upload(self.context, p.astype(np.float32).ravel()),
                    upload(self.context, coeff.reshape(-1)))
        return upload(self.context, p.astype(np.float32).ravel()), upload(
            self.context, np.zeros(4, np.float32))

    # ---------------------------------------------------------------- launch
    def __call__(self, params: np.ndarray, offsets: np.ndarray | None = None,
                 jitter: np.ndarray | None = None, trend: np.ndarray | None = None
                 ) -> dict[str, np.ndarray]:
        """Evaluate ``params`` of shape ``(n_models, n_planets, 5)``.

        Returns
        -------
        dict
            ``"statistic"`` (float64, NaN unless status OK), ``"status"``
            (int32) and, for ``"profile"``, ``"k"`` and ``"offsets"``.
        """
        n_models = params.shape[0]
        n_inst = len(self.obs.instruments)
        out = {"statistic": np.empty(n_models), "status": np.empty(n_models, np.int32)}
        if self.statistic == "profile":
            out["k"] = np.empty(n_models)
            out["offsets"] = np.empty((n_models, n_inst))
        for start in range(0, n_models, BATCH_MODELS):
            stop = min(n_models, start + BATCH_MODELS)
            part = self._run(params[start:stop],
                             *(None if a is None else a[start:stop] for a in (offsets, jitter, trend)))
            for name, value in part.items():
                out[name][start:stop] = value
        if self.statistic == "profile":
            out["offsets"] += self._centre
        return out

    def _run(self, params, offsets, jitter, trend) -> dict[str, np.ndarray]:
        batch = self.prepare(params, offsets, jitter, trend)
        self.launch(batch)
        return self.fetch(batch)

    def prepare(self, params, offsets=None, jitter=None, trend=None) -> _Batch:
        """Upload one batch of models (at most :data:`BATCH_MODELS`) and
        allocate its outputs."""
        n = params.shape[0]
        n_inst = len(self.obs.instruments)
        ctx, real = self.context, self.real_dtype
        size = np.dtype(real).itemsize
        param_buf, coeff_buf = self._param_buffers(params)
        extras = []
        for have, value in ((self.has_offsets, offsets), (self.has_jitter, jitter),
                            (self.trend > 0, trend)):
            extras.append(upload(ctx, np.ascontiguousarray(value, dtype=real).ravel()) if have
                          else upload(ctx, np.zeros(1, real)))
        t_ref = (np.float64 if self.plan.phase == "double" else np.float32)(self.obs.t_ref)
        profile = self.statistic == "profile"
        mf = cl.mem_flags
        layout = self.plan.layout_for(n)
        padded = -(-n // LOCAL_SIZE) * LOCAL_SIZE
        n_vel = self.obs.n_obs * padded if layout == "split" else 1
        return _Batch(
            n=n, layout=layout, padded=padded,
            head=[np.int32(n), param_buf, coeff_buf, t_ref, *extras],
            out=cl.Buffer(ctx, mf.WRITE_ONLY, n * size),
            out_k=cl.Buffer(ctx, mf.WRITE_ONLY, (n if profile else 1) * size),
            out_gamma=cl.Buffer(ctx, mf.WRITE_ONLY, (n * n_inst if profile else 1) * size),
            status=cl.Buffer(ctx, mf.READ_WRITE, n * 4),
            vel=cl.Buffer(ctx, mf.READ_WRITE, n_vel * size),
            gvel=cl.Buffer(ctx, mf.READ_WRITE, (n_vel if profile else 1) * size))

    def launch(self, b: _Batch) -> None:
        """Enqueue the kernels of one prepared batch."""
        queue, real = self.queue, self.real_dtype
        tail = [b.out, b.out_k, b.out_gamma, b.status]
        if b.layout == "fused":
            self._kernels["rv_fused"](queue, (b.padded,), (LOCAL_SIZE,), *b.head,
                                      real(self.log_norm), *self._observation_args(), *tail)
            return
        n_obs = self.obs.n_obs
        cl.enqueue_fill_buffer(queue, b.status, np.int32(0), 0, b.n * 4)
        self._kernels["rv_velocity"](
            queue, (b.padded, -(-n_obs // VELOCITY_BLOCK)), (LOCAL_SIZE, 1), *b.head,
            self._obs_buffers[0], np.int32(n_obs), np.int32(VELOCITY_BLOCK), np.int64(b.padded),
            b.vel, b.gvel, b.status)
        self._kernels["rv_statistic"](
            queue, (b.padded,), (LOCAL_SIZE,), *b.head, real(self.log_norm),
            *self._observation_args(), np.int64(b.padded), b.vel, b.gvel, *tail)

    def fetch(self, b: _Batch) -> dict[str, np.ndarray]:
        """Copy one batch's per-model results to the host."""
        queue, real = self.queue, self.real_dtype
        result = {"statistic": np.empty(b.n, real), "status": np.empty(b.n, np.int32)}
        cl.enqueue_copy(queue, result["statistic"], b.out)
        cl.enqueue_copy(queue, result["status"], b.status)
        if self.statistic == "profile":
            result["k"] = np.empty(b.n, real)
            result["offsets"] = np.empty((b.n, len(self.obs.instruments)), real)
            cl.enqueue_copy(queue, result["k"], b.out_k)
            cl.enqueue_copy(queue, result["offsets"], b.out_gamma)
        queue.finish()
        return result

    def velocities(self, params: np.ndarray) -> np.ndarray:
        """Keplerian velocity sums ``(n_models, n_obs)`` at the observation
        times (input order), without offsets or trend; NaN for bad models."""
        n, n_obs = params.shape[0], self.obs.n_obs
        ctx, queue, real = self.context, self.queue, self.real_dtype
        result = np.empty((n, n_obs), real)
        inverse = np.argsort(self.obs.order)
        for start in range(0, n, BATCH_MODELS):
            stop = min(n, start + BATCH_MODELS)
            m = stop - start
            param_buf, coeff_buf = self._param_buffers(params[start:stop])
            dummy = upload(ctx, np.zeros(1, real))
            t_ref = (np.float64 if self.plan.phase == "double" else np.float32)(self.obs.t_ref)
            stride = -(-m // LOCAL_SIZE) * LOCAL_SIZE
            vel = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, n_obs * stride * real().itemsize)
            status = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, m * 4)
            cl.enqueue_fill_buffer(queue, status, np.int32(0), 0, m * 4)
            self._kernels["rv_velocity"](
                queue, (stride, -(-n_obs // VELOCITY_BLOCK)), (LOCAL_SIZE, 1), np.int32(m),
                param_buf, coeff_buf, t_ref, dummy, dummy, dummy, self._obs_buffers[0],
                np.int32(n_obs), np.int32(VELOCITY_BLOCK), np.int64(stride), vel, dummy, status)
            host = np.empty((n_obs, stride), real)
            cl.enqueue_copy(queue, host, vel)
            queue.finish()
            result[start:stop] = host[:, :m].T[:, inverse]
        return result
