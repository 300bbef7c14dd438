"""Device evaluation of Keplerian RV models: data preparation, planning, launches.

:class:`Observations` validates RV data and sorts it by instrument once;
:class:`ModelEvaluator` compiles ``cl_kernels/rvmodel.mako`` for one data set,
statistic and precision, keeps the observations on the device, picks the
kernel layout and the memory for the observations (:func:`plan`), and
evaluates any number of models in batches, returning only per-model scalars.
:class:`MultiDeviceEvaluator` runs one on each selected device and spreads
the models over them. The public functions live in :mod:`clperiod.kepler`.
"""

from __future__ import annotations

import enum
import functools
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar, cast

import numpy as np
import pyopencl as cl

from clperiod import checks
from clperiod.catalog import refuse_masked
from clperiod.engine import angles, kernels
from clperiod.engine.devices import (
    DeviceInfo,
    get_context,
    get_queue,
    require_fp64,
    select_devices,
    upload,
)
from clperiod.engine.planner import Buffer, MemoryBudget, items_that_fit
from clperiod.engine.scheduler import run_on_devices, split_range
from clperiod.engine.staging import (
    PINNED_POOL,
    copies_in_place,
    in_parts,
    parallel_copy,
    result_array,
)
from clperiod.kepler import orbits

__all__ = [
    "ModelEvaluator",
    "ModelStatus",
    "MultiDeviceEvaluator",
    "Observations",
    "Plan",
    "device_items",
    "model_params",
    "plan",
    "shared_choices",
    "shared_kepler_method",
]

Precision = Literal["fp64", "fp32", "mixed"]
PRECISIONS = ("fp64", "fp32", "mixed")
#: Observations per work-item of the split layout's velocity kernel.
VELOCITY_BLOCK = 32
#: Models per launch at most (fewer where their buffers do not fit the
#: device: :attr:`Plan.batch_models`).
BATCH_MODELS = 1 << 18
#: Sets of device buffers a model evaluation cycles through: one batch uploads
#: while the previous one computes.
SLOTS = 2
#: Below this many models per compute unit the fused kernel (one work-item
#: per model) cannot fill the device and the split layout is used.
FUSED_MIN_MODELS_PER_CU = 1024
#: Launches per multi-device item at least, where every device still gets an
#: item: each item fills and drains its device's pipeline (the first upload,
#: the last kernel and the result copies, about three launches' time), which
#: items of four launches paid for a quarter of the run
#: (bench/results/2026-11-26_h200x2_kepler_host_waits.json).
ITEM_LAUNCHES = 16
LOCAL_SIZE = 128


class ModelStatus(enum.IntEnum):
    """Per-model status (the statistic is NaN unless OK)."""

    OK = 0
    BAD_PARAMETERS = 1  # P <= 0, e outside [0, 1) or a non-finite parameter
    NOT_CONVERGED = 2  # a Kepler solve did not converge (never seen)
    DEGENERATE = 3  # profile: the planet's signal is not constrained by the data


def _real_array(name: str, value, ndim: int | None = None) -> np.ndarray:
    refuse_masked(name, value)
    a = np.asarray(value)
    if a.dtype == object or not (
        np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)
    ):
        raise TypeError(f"{name} must be real numbers, got dtype {a.dtype}")
    a = np.asarray(a, dtype=np.float64)
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
    t_origin
        Origin of the times on the device: ``t_ref`` when it lies within the
        observations' span, else the middle of the span, so that
        ``t - t_origin`` and the phases formed from it stay small.
    """

    t: np.ndarray
    v: np.ndarray
    sigma: np.ndarray
    code: np.ndarray
    instruments: tuple[str, ...]
    t_ref: float
    order: np.ndarray
    seg: np.ndarray
    t_origin: float

    @classmethod
    def build(cls, t, v, sigma, instrument=None, t_ref: float = 0.0) -> Observations:
        """Validate and group; raises on anything the kernels cannot use."""
        t = _real_array("t", t, 1)
        v = _real_array("v_obs", v, 1)
        sigma = _real_array("sigma", sigma, 1)
        if not (t.size == v.size == sigma.size):
            raise ValueError(
                f"t, v_obs and sigma differ in length: {t.size}, {v.size}, {sigma.size}"
            )
        if t.size == 0:
            raise ValueError("no observations")
        for name, a in (("t", t), ("v_obs", v), ("sigma", sigma)):
            bad = ~np.isfinite(a)
            if bad.any():
                raise ValueError(
                    f"{name} has {bad.sum()} non-finite values (first at row "
                    f"{int(np.argmax(bad))}); drop those observations first"
                )
        if (sigma <= 0).any():
            raise ValueError(
                f"sigma must be positive; row {int(np.argmax(sigma <= 0))} is "
                f"{sigma[sigma <= 0][0]}"
            )
        t_ref = float(t_ref)
        if not math.isfinite(t_ref):
            raise ValueError(f"t_ref must be finite, got {t_ref}")
        labels: tuple[str, ...]
        if instrument is None:
            labels, code = ("0",), np.zeros(t.size, dtype=np.int64)
        else:
            raw = np.asarray(instrument)
            if raw.shape != t.shape:
                raise ValueError(
                    f"instrument must give one label per observation, got shape {raw.shape}"
                )
            names, code = np.unique(raw.astype(str), return_inverse=True)
            labels = tuple(str(x) for x in names)
        order = np.argsort(code, kind="stable")
        seg = np.searchsorted(code[order], np.arange(len(labels) + 1)).astype(np.int32)
        first, last = float(t.min()), float(t.max())
        t_origin = t_ref if first <= t_ref <= last else 0.5 * first + 0.5 * last
        return cls(t, v, sigma, code, labels, t_ref, order, seg, t_origin)

    @property
    def n_obs(self) -> int:
        """Number of observations."""
        return self.t.size

    def per_instrument(self, name: str, value, batch: tuple[int, ...]) -> np.ndarray | None:
        """Offsets or jitter as ``(n_models, n_inst)`` float64, or None.

        ``value`` is an array broadcastable to ``batch + (n_inst,)``
        (instruments in the order of :attr:`instruments`) or a mapping
        ``{label: value}`` naming every instrument.
        """
        if value is None:
            return None
        n_inst = len(self.instruments)
        if isinstance(value, dict):
            unknown = set(map(str, value)) - set(self.instruments)
            missing = set(self.instruments) - set(map(str, value))
            if unknown or missing:
                raise ValueError(
                    f"{name}: unknown instruments {sorted(unknown)}, missing "
                    f"{sorted(missing)}; the data have {list(self.instruments)}"
                )
            lookup = {str(k): val for k, val in value.items()}
            value = np.stack(
                np.broadcast_arrays(
                    *(np.asarray(lookup[i], dtype=np.float64) for i in self.instruments)
                ),
                axis=-1,
            )
        a = _real_array(name, value)
        if a.ndim == 0 and n_inst == 1:
            a = a.reshape(1)
        if a.shape[-1:] != (n_inst,):
            raise ValueError(
                f"{name} must end in an axis of {n_inst} instruments "
                f"{list(self.instruments)}, got shape {a.shape}"
            )
        return per_model(name, a, batch)


def per_model(name: str, value: np.ndarray, batch: tuple[int, ...]) -> np.ndarray:
    """``value`` of shape ``(..., k)`` broadcast to ``batch + (k,)`` and
    flattened to ``(n_models, k)`` (contiguous float64)."""
    a = np.asarray(value, dtype=np.float64)
    try:
        full = np.broadcast_to(a, batch + a.shape[-1:])
    except ValueError:
        raise ValueError(
            f"{name} of shape {a.shape} does not broadcast to the models' batch shape {batch}"
        ) from None
    return np.ascontiguousarray(full.reshape(-1, a.shape[-1]))


def model_params(params, basis: str) -> tuple[np.ndarray, tuple[int, ...]]:
    """Parameters as ``(n_models, n_planets, 5)`` float64 and the batch shape.

    ``params`` has shape ``(..., n_planets, 5)``; the leading axes are the
    batch shape of the result.
    """
    orbits.check_basis(basis)
    p = _real_array("params", params)
    if p.ndim < 2 or p.shape[-1] != 5 or p.shape[-2] == 0:
        raise ValueError(
            f"params must have shape (..., n_planets, 5) with n_planets >= 1, got {p.shape}"
        )
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
    method: str
    batch_models: int = BATCH_MODELS  # models per launch

    @property
    def double_params(self) -> bool:
        """Whether the kernels read the parameters in float64 and form each
        planet's phase at the origin themselves (phases ``"double"`` and
        ``"float_device"``); else the host computes it (``"ds"``, ``"float"``)."""
        return self.phase in ("double", "float_device")

    @property
    def result(self) -> str:
        """The type the kernels write results in: ``"double"`` on devices
        that do double arithmetic (the float values stored exactly), so that
        they copy straight into the float64 arrays returned; else ``real``."""
        return "double" if self.real == "double" or self.double_params else "float"

    def layout_for(self, n_models: int) -> str:
        """The fused layout (one work-item per model, Ford's second
        implementation) when there are enough models to fill the device,
        else split (velocities of model x observation-block work-items, then
        the statistic)."""
        if self.layout != "auto":
            return self.layout
        return "fused" if n_models >= FUSED_MIN_MODELS_PER_CU * self.compute_units else "split"


#: The values of ``phase_arithmetic`` for each precision.
_PHASE_CHOICES = {
    "fp64": ("auto",),
    "fp32": ("auto", "host"),
    "mixed": ("auto", "double", "double_single"),
}


def _phase_choice(precision: str, info: DeviceInfo, phase_arithmetic: str) -> str:
    """The kernels' phase arithmetic (render parameter ``phase``)."""
    checks.choice(
        "phase_arithmetic", phase_arithmetic, ("auto", "double", "double_single", "host")
    )
    if phase_arithmetic not in _PHASE_CHOICES[precision]:
        raise ValueError(
            f"phase_arithmetic={phase_arithmetic!r} does not apply to "
            f"precision={precision!r}; choose from {_PHASE_CHOICES[precision]}"
        )
    if precision == "fp64":
        return "double"
    if precision == "fp32":
        return "float_device" if phase_arithmetic == "auto" and info.fp64 else "float"
    if phase_arithmetic == "double" or (phase_arithmetic == "auto" and info.fp64):
        require_fp64(info)
        return "double"
    return "ds"


def choose_kepler_method(info: DeviceInfo, method: str) -> str:
    """The Kepler solver: ``"markley"`` (fixed cost) on GPUs, where it
    measured 1.7x (fp64) and 1.1x (fp32) faster than Danby's iteration on
    the H100, and ``"danby"`` elsewhere (1.2-1.9x faster on PoCL)."""
    checks.choice("kepler_method", method, ("auto", "danby", "markley"))
    if method == "auto":
        return "markley" if info.kind == "gpu" else "danby"
    return method


def shared_kepler_method(devices: Sequence[DeviceInfo], method: str) -> str:
    """:func:`choose_kepler_method` for several devices: Markley's solver only
    when it is every device's choice (all GPUs), so that an element gets the
    same arithmetic on any of them."""
    methods = {choose_kepler_method(info, method) for info in devices}
    return "markley" if methods == {"markley"} else "danby"


def shared_choices(
    devices: Sequence[DeviceInfo], precision: str, phase_arithmetic: str, kepler_method: str
) -> tuple[str, str]:
    """``phase_arithmetic`` and ``kepler_method`` that every device of a
    multi-device run uses: double-precision phase (``precision="mixed"``)
    and fp32 phase coefficients formed on the device only when all have
    fp64, the solver of :func:`shared_kepler_method`. With one device these
    are that device's own choices."""
    if phase_arithmetic == "auto" and not all(info.fp64 for info in devices):
        phase_arithmetic = {"mixed": "double_single", "fp32": "host"}.get(precision, "auto")
    elif precision == "mixed" and phase_arithmetic == "auto":
        phase_arithmetic = "double"
    return phase_arithmetic, shared_kepler_method(devices, kepler_method)


def plan(
    info: DeviceInfo,
    n_obs: int,
    n_inst: int,
    precision: str,
    layout: str = "auto",
    memory: str = "auto",
    phase_arithmetic: str = "auto",
    method: str = "auto",
    *,
    n_planets: int = 1,
    statistic: str = "chi2",
) -> Plan:
    """Choose the arithmetic, the Kepler solver, the kernel layout, where
    observations live and the models per launch.

    With ``layout="auto"`` the layout is chosen per launch
    (:meth:`Plan.layout_for`). Observations go to constant memory when they
    fit the device's constant buffer, else to local memory, else stay global.
    A launch takes up to :data:`BATCH_MODELS` models, fewer where the
    buffers of :data:`SLOTS` launches (:func:`_model_buffers`) do not fit
    the device beside the observations.
    """
    checks.choice("precision", precision, PRECISIONS)
    if precision == "fp64":
        require_fp64(info)
    phase = _phase_choice(precision, info, phase_arithmetic)
    real = "double" if precision == "fp64" else "float"
    checks.choice("layout", layout, ("auto", "fused", "split"))
    time_bytes = {"double": 8, "ds": 8, "float": 4, "float_device": 4}[phase]
    obs_bytes = n_obs * (time_bytes + 2 * (8 if real == "double" else 4))
    obs_bytes += 4 * (n_inst + 1)
    constant_ok = (
        obs_bytes <= info.device.max_constant_buffer_size and info.device.max_constant_args >= 4
    )
    local_ok = obs_bytes + 64 <= info.local_mem
    checks.choice("memory", memory, ("auto", "constant", "local", "global"))
    if memory == "auto":
        memory = "constant" if constant_ok else "local" if local_ok else "global"
    elif (memory == "constant" and not constant_ok) or (memory == "local" and not local_ok):
        raise ValueError(
            f"memory={memory!r}: {n_obs} observations ({obs_bytes} bytes) do not fit "
            f"the {memory} memory of {info.label}"
        )
    chosen = Plan(
        real, phase, layout, memory, info.compute_units, choose_kepler_method(info, method)
    )
    batch = items_that_fit(
        _model_buffers(chosen, n_planets, n_inst, statistic),
        MemoryBudget.of(info, held=obs_bytes),
        most=BATCH_MODELS,
        size=n_obs,
        least=LOCAL_SIZE,
        item="model",
        unit="observations",
    )
    if batch < BATCH_MODELS:  # whole work-groups (the buffers hold padded launches)
        batch -= batch % LOCAL_SIZE
    return replace(chosen, batch_models=batch)


def _model_buffers(
    chosen: Plan, n_planets: int, n_inst: int, statistic: str
) -> tuple[Buffer, ...]:
    """The device buffers of a launch, per model (its observations the units):
    parameters, phase coefficients, offsets, jitters and trend (counted
    whether or not the models carry them), results and, unless the layout
    is fused, velocities at every observation; one set per slot."""
    real_size = 8 if chosen.real == "double" else 4
    profile = statistic == "profile"
    per_model = (
        n_planets * 5 * (8 if chosen.double_params else 4)
        + (0 if chosen.double_params else n_planets * 4 * 4)
        + (2 * n_inst + 2) * real_size
        + real_size
        + 4
    )
    if profile:
        per_model += (1 + n_inst) * real_size  # K and the offsets
    buffers = [Buffer("parameters, extras and results", per_item=per_model, count=SLOTS)]
    if chosen.layout != "fused":
        buffers.append(
            Buffer("velocities", per_unit=real_size, count=SLOTS * (2 if profile else 1))
        )
    return tuple(buffers)


def _ds(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    hi = x.astype(np.float32)
    return hi, (x - hi.astype(np.float64)).astype(np.float32)


def _phase_at_origin(
    per: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    tau: np.ndarray,
    ecc_form: str,
    time_form: str,
    t_origin: float,
    t_ref: float,
) -> np.ndarray:
    """Orbital phase at ``t_origin`` in turns, in ``[-0.5, 0.5]``, of planets
    with parameters ``(per, K, a, b, tau)`` (float64 columns, to about 1e-16
    for any finite values): ``(t_origin - epoch) / P + M_epoch / 2 pi`` with
    epoch ``t_ref`` and ``M_epoch = M0`` (``m0``), ``tp`` and 0, or ``tc``
    and the mean anomaly at conjunction. The kernels do the same for
    ``phase="double"``; ``per`` and ``tau`` are overwritten."""
    with np.errstate(divide="ignore", invalid="ignore"):  # bad P: flagged by the kernel
        if time_form == "m0":
            turns = angles.reduce_angle(tau, out=tau)
            turns /= 2 * np.pi
            if t_origin != t_ref:
                turns += angles.turns_between(t_origin, t_ref, per)
        else:
            turns = angles.turns_between(t_origin, tau, per)
        if time_form == "tc":
            turns += _conjunction_mean_anomaly(a, b, ecc_form) / (2 * np.pi)
        turns -= np.rint(turns, out=per)
        return turns


def _conjunction_mean_anomaly(a: np.ndarray, b: np.ndarray, ecc_form: str) -> np.ndarray:
    """:func:`orbits.conjunction_mean_anomaly` of the parameters ``(a, b)``; for
    ``secosw_sesinw`` the direction of periastron is ``(a, b) / sqrt(e)`` (``(1,
    0)`` for e = 0), as the kernels take it."""
    if ecc_form == "e_w":
        return orbits.conjunction_mean_anomaly(a, b)
    e = a * a + b * b
    root = np.sqrt(e)
    circular = root == 0
    root[circular] = 1.0
    cos_w, sin_w = a / root, b / root
    cos_w[circular], sin_w[circular] = 1.0, 0.0
    return orbits.conjunction_mean_anomaly_from_cos_sin(e, cos_w, sin_w)


def _phase_coefficients(
    out: np.ndarray,
    rows: np.ndarray,
    ecc_form: str,
    time_form: str,
    t_origin: float,
    t_ref: float,
    low_parts: bool = True,
) -> None:
    """The double-single ``(inv P, phi0)`` of parameter rows ``(P, K, a, b, tau)``
    as ``out[:, 0:2]`` (hi, lo of 1 / P) and ``out[:, 2:4]`` (hi, lo of
    :func:`_phase_at_origin`); only the high parts (all that ``phase="float"``
    reads) unless ``low_parts``. Runs over blocks of :data:`_COEFF_BLOCK`
    rows, whose temporaries stay in cache."""
    for lo in range(0, rows.shape[0], _COEFF_BLOCK):
        block, dest = rows[lo : lo + _COEFF_BLOCK], out[lo : lo + _COEFF_BLOCK]
        per, tau = block[:, 0].copy(), block[:, 4].copy()
        with np.errstate(divide="ignore"):
            inv_p = np.divide(1.0, per)
        phi0 = _phase_at_origin(
            per, block[:, 2], block[:, 3], tau, ecc_form, time_form, t_origin, t_ref
        )
        for column, value in ((0, inv_p), (2, phi0)):
            _store_float_pair(
                dest[:, column : column + 2] if low_parts else dest[:, column], value
            )


def _store_float_pair(out: np.ndarray, value: np.ndarray) -> None:
    """``value`` rounded to float32 into ``out`` (one column), or as the
    float32 pair hi + lo (two columns)."""
    hi = out if out.ndim == 1 else out[:, 0]
    with np.errstate(invalid="ignore", over="ignore"):
        np.copyto(hi, value, casting="same_kind")
        if out.ndim == 2:
            np.subtract(value, hi, out=out[:, 1], casting="same_kind")


#: Parameter rows per thread at least for the double-single coefficients.
_COEFF_PART = 1 << 15
#: Parameter rows per block of the coefficients' float64 arithmetic.
_COEFF_BLOCK = 1 << 14


@dataclass(frozen=True)
class _DeviceObservations:
    """Observations on the device as the kernels read them, in instrument
    order: times from ``t_origin`` (in the plan's phase arithmetic),
    velocities, weights (variances with jitter, else inverse variances) and
    the instrument segments."""

    buffers: tuple[cl.Buffer, ...]
    nbytes: tuple[int, ...]
    n_obs: int
    local: bool  # the kernels copy them to local memory
    log_norm: float  # n log(2 pi), plus sum(log sigma^2) without jitter
    centre: np.ndarray | None  # "profile": each instrument's mean velocity, subtracted

    def args(self) -> list:
        """The kernels' observation arguments."""
        args = [*self.buffers, np.int32(self.n_obs)]
        if self.local:
            args += [cl.LocalMemory(max(n, 4)) for n in self.nbytes]
        return args


def _upload_observations(
    queue: cl.CommandQueue, obs: Observations, plan: Plan, real_dtype, profile: bool, jitter: bool
) -> _DeviceObservations:
    """Upload the observations in the form the kernels of ``plan`` read."""
    order = obs.order
    dt = obs.t[order] - obs.t_origin
    v = obs.v[order]
    centre = None
    if profile:
        # centre each instrument (its offset absorbs any constant) so the
        # single-precision sums do not cancel; added back to the offsets
        centre = np.array([v[a:b].mean() for a, b in zip(obs.seg[:-1], obs.seg[1:], strict=True)])
        v = v - np.repeat(centre, np.diff(obs.seg))
    var = obs.sigma[order] ** 2
    w = var if jitter else 1.0 / var
    if plan.phase == "double":
        t_dev = dt
    elif plan.phase == "ds":
        t_dev = np.stack(_ds(dt), axis=-1)
    else:
        t_dev = dt.astype(np.float32)
    log_norm = obs.n_obs * math.log(2 * math.pi)
    if not jitter:
        log_norm += float(np.log(var).sum())
    arrays = [
        np.ascontiguousarray(a)
        for a in (t_dev, v.astype(real_dtype), w.astype(real_dtype), obs.seg)
    ]
    return _DeviceObservations(
        tuple(upload(queue, a) for a in arrays),
        tuple(a.nbytes for a in arrays),
        obs.n_obs,
        plan.memory == "local",
        log_norm,
        centre,
    )


#: The evaluator's kernels.
_KERNELS = ("rv_fused", "rv_velocity", "rv_statistic")

Method = TypeVar("Method", bound=Callable[..., Any])


def _one_call_at_a_time(method: Method) -> Method:
    """``method`` of a :class:`ModelEvaluator`, one call at a time (the calls
    of several threads share its device buffers)."""

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        with self._calling:
            return method(self, *args, **kwargs)

    return cast(Method, call)


class ModelEvaluator:
    """Compiled kernels and device-resident observations for one data set.

    Everything is fixed at construction: the plan, the kernels and the
    observations on the device. Calls only reuse (and grow) the two sets of
    device buffers that batches go through. Threads may share an evaluator:
    its calls take turns, each on the calling thread's queue.

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
    precision, layout, memory, phase_arithmetic, kepler_method
        See :func:`plan`.
    device
        Device selection; the first selected device is used
        (:class:`MultiDeviceEvaluator` uses all).
    """

    def __init__(
        self,
        obs: Observations,
        *,
        n_planets: int,
        basis: str = orbits.STANDARD,
        statistic: str = "chi2",
        offsets: bool = False,
        jitter: bool = False,
        trend: int = 0,
        precision: Precision = "mixed",
        layout: str = "auto",
        memory: str = "auto",
        phase_arithmetic: str = "auto",
        kepler_method: str = "auto",
        device=None,
    ) -> None:
        checks.choice("statistic", statistic, ("chi2", "loglike", "profile"))
        if statistic == "profile" and offsets:
            raise ValueError("profile solves the offsets; do not pass them")
        if trend not in (0, 1, 2):
            raise ValueError(f"trend must be 0, 1 or 2 (polynomial degree), got {trend!r}")
        self.obs = obs
        self.info = select_devices(device)[0]
        self.basis = basis
        self.ecc_form, self.time_form = orbits.check_basis(basis)
        self.statistic, self.has_offsets, self.has_jitter = statistic, offsets, jitter
        self.trend = trend
        self.n_planets = n_planets
        n_inst = len(obs.instruments)
        self.plan = plan(
            self.info,
            obs.n_obs,
            n_inst,
            precision,
            layout,
            memory,
            phase_arithmetic,
            kepler_method,
            n_planets=n_planets,
            statistic=statistic,
        )
        self.real_dtype = np.float64 if self.plan.real == "double" else np.float32
        self.result_dtype = np.float64 if self.plan.result == "double" else np.float32
        self.context = get_context(self.info)
        self._kernel_params = dict(
            real=self.plan.real,
            phase=self.plan.phase,
            n_planets=n_planets,
            ecc_form=self.ecc_form,
            time_form=self.time_form,
            n_inst=n_inst,
            statistic=statistic,
            offsets=offsets,
            jitter=jitter,
            trend=trend,
            space=self.plan.memory,
            method=self.plan.method,
            result=self.plan.result,
        )
        self._calling = threading.Lock()  # calls share the slots: one at a time
        # built now, so that a build error surfaces here
        kernels.get_kernels(self.context, "rvmodel", _KERNELS, **self._kernel_params)
        self._observations = _upload_observations(
            self.queue, obs, self.plan, self.real_dtype, statistic == "profile", jitter
        )
        self._slots: dict[int, _Slot] = {}  # the batches' device buffers, made on first use

    @property
    def queue(self) -> cl.CommandQueue:
        """The calling thread's compute queue on the device."""
        return get_queue(self.info)

    @property
    def _kernels(self) -> dict[str, cl.Kernel]:
        """The calling thread's kernel objects (a launch sets a kernel's
        arguments before enqueuing it, so threads must not share them)."""
        found = kernels.get_kernels(self.context, "rvmodel", _KERNELS, **self._kernel_params)
        return dict(zip(_KERNELS, found, strict=True))

    # ---------------------------------------------------------------- staging
    def _stage_params(self, slot: _Slot, p: np.ndarray) -> None:
        """Write parameters as the kernel reads them (and, for phases "ds"
        and "float", the coefficients (inv P, phi0) per planet) into the
        slot's page-locked staging arrays."""
        if slot.staged is not None:
            slot.staged.wait()  # the previous upload from this staging is done
        parallel_copy(slot.staging[: p.size], p)
        if not self.plan.double_params:
            rows = np.asarray(p, np.float64).reshape(-1, 5)
            coeff = slot.staging_coeff[: 4 * rows.shape[0]].reshape(-1, 4)
            obs = self.obs
            in_parts(
                rows.shape[0],
                lambda lo, hi: _phase_coefficients(
                    coeff[lo:hi],
                    rows[lo:hi],
                    self.ecc_form,
                    self.time_form,
                    obs.t_origin,
                    obs.t_ref,
                    low_parts=self.plan.phase == "ds",
                ),
                min_part=_COEFF_PART,
            )

    # ---------------------------------------------------------------- launch
    @_one_call_at_a_time
    def __call__(
        self,
        params: np.ndarray,
        offsets: np.ndarray | None = None,
        jitter: np.ndarray | None = None,
        trend: np.ndarray | None = None,
        *,
        layout: str | None = None,
        out: dict[str, np.ndarray] | None = None,
    ) -> dict[str, np.ndarray]:
        """Evaluate ``params`` of shape ``(n_models, n_planets, 5)``.

        Batches of :attr:`Plan.batch_models` go through two sets of device buffers:
        the upload of one batch (copy queue) overlaps the kernels of the
        previous one (compute queue).

        Parameters
        ----------
        params, offsets, jitter, trend
            Per-model arrays (the extras as the evaluator was built for).
        layout
            ``"fused"`` or ``"split"`` for every launch; by default each
            launch's from the plan (:meth:`Plan.layout_for`).
        out
            Arrays to write the results into (as returned, ``n_models``
            rows); by default new ones (:func:`~clperiod.engine.staging.result_array`).
            The devices copy straight into page-locked ones.

        Returns
        -------
        dict
            ``"statistic"`` (float64, NaN unless status OK), ``"status"``
            (int32) and, for ``"profile"``, ``"k"`` and ``"offsets"``.
        """
        n_models = params.shape[0]
        n_inst = len(self.obs.instruments)
        profile = self.statistic == "profile"
        if out is None:
            shapes = _result_shapes(n_models, n_inst, profile, np.float64)
            out = {
                name: result_array([self.info], shape, dtype)
                for name, (shape, dtype) in shapes.items()
            }
        # results go to page-locked memory: reads into pageable memory block
        # the host until the kernel is done, which would serialise the
        # pipeline; straight into ``out`` where it is such memory of the
        # kernels' result type, else through page-locked staging
        direct = self.result_dtype == np.float64 and all(
            copies_in_place(array, self.info) for array in out.values()
        )
        host = out
        if not direct:
            shapes = _result_shapes(n_models, n_inst, profile, self.result_dtype)
            host = {
                name: PINNED_POOL.empty(self.info, shape, dtype)
                for name, (shape, dtype) in shapes.items()
            }
        keep = []  # host arrays and copies in flight (an event dropped early
        # would wait for its copy in its destructor, holding the GIL)
        batch = self.plan.batch_models
        uploaded: tuple[_Slot, int, int] | None = None  # its kernels not queued yet

        def run(slot: _Slot, start: int, stop: int) -> None:
            self.launch(slot, stop - start, layout)
            for name, buffer in slot.results(profile).items():
                keep.append(
                    cl.enqueue_copy(self.queue, host[name][start:stop], buffer, is_blocking=False)
                )

        for i, start in enumerate(range(0, n_models, batch)):
            stop = min(n_models, start + batch)
            slot = self._slot(i % 2, stop - start)
            # stage this batch while the previous one's upload completes, then
            # queue the previous kernels before waiting for this slot's last ones
            staged = self._stage(slot, params[start:stop])
            if uploaded is not None:
                run(*uploaded)
            keep.append(
                self._upload(
                    slot,
                    staged,
                    *(None if a is None else a[start:stop] for a in (offsets, jitter, trend)),
                )
            )
            uploaded = (slot, start, stop)
        if uploaded is not None:
            run(*uploaded)
        self.queue.finish()
        if not direct:
            for name, value in host.items():
                parallel_copy(out[name], value)
        if profile:
            out["offsets"] += self._observations.centre
        return out

    def _slot(self, index: int, n: int) -> _Slot:
        slot = self._slots.get(index)
        if slot is None or slot.capacity < n:
            slot = self._slots[index] = _Slot(self, max(n, min(self.plan.batch_models, 2 * n)))
        return slot

    def _stage(self, slot: _Slot, params: np.ndarray) -> np.ndarray:
        """The batch's parameters as they are uploaded: ``params`` itself when
        already page-locked (:func:`clperiod.kepler.empty_params`), else their
        copy in the slot's staging memory (after its previous upload)."""
        direct = (
            self.plan.double_params
            and params.dtype == np.float64
            and copies_in_place(params, self.info)
        )
        if direct:
            return params
        self._stage_params(slot, params)
        return slot.staging[: params.size]

    def _upload(self, slot: _Slot, staged: np.ndarray, offsets, jitter, trend) -> list[np.ndarray]:
        """Enqueue the copies of one batch (parameters from :meth:`_stage`) into
        ``slot``, once the slot's previous kernels are done; returns the host
        arrays to keep alive."""
        arrays = [(slot.params, staged)]
        if not self.plan.double_params:
            arrays.append((slot.coeff, slot.staging_coeff[: 4 * (staged.size // 5)]))
        real = self.real_dtype
        for buffer, value in ((slot.offsets, offsets), (slot.jitter, jitter), (slot.trend, trend)):
            if value is not None:
                arrays.append((buffer, np.ascontiguousarray(value, dtype=real)))
        if slot.done is not None:
            slot.done.wait()  # on the host: see launch()
        copy_queue = get_queue(self.info, role="copy")
        events = [
            cl.enqueue_copy(copy_queue, buffer, array, is_blocking=False)
            for buffer, array in arrays
        ]
        copy_queue.flush()
        slot.uploaded = events
        slot.staged = events[-1]  # the copy queue is in order
        return [array for _, array in arrays]

    def prepare(self, params, offsets=None, jitter=None, trend=None) -> _Slot:
        """Upload one batch (for benchmarks that time :meth:`launch` alone)."""
        slot = self._slot(0, params.shape[0])
        self._upload(slot, self._stage(slot, params), offsets, jitter, trend)
        get_queue(self.info, role="copy").finish()
        slot.n = params.shape[0]
        return slot

    def launch(self, slot: _Slot, n: int | None = None, layout: str | None = None) -> None:
        """Enqueue the kernels for the first ``n`` models uploaded to ``slot``
        (``layout``: ``"fused"`` or ``"split"``, by default the plan's), once
        the uploads are done.

        The uploads are awaited on the host, not through the kernels' wait
        lists: NVIDIA's OpenCL returns from an enqueue whose wait list holds
        unfinished events of another queue only when they finish, and pyopencl
        holds the interpreter lock through kernel enqueues, so every other
        device's thread would stall meanwhile
        (bench/results/2026-11-26_h200x2_kepler_host_waits.json).
        """
        n = slot.n if n is None else n
        queue, real = self.queue, self.real_dtype
        _await_uploads(slot)
        padded = -(-n // LOCAL_SIZE) * LOCAL_SIZE
        head = self._model_args(slot, n)
        tail = [slot.out, slot.out_k, slot.out_gamma, slot.status]
        if (layout or self.plan.layout_for(n)) == "fused":
            slot.done = self._kernels["rv_fused"](
                queue,
                (padded,),
                (LOCAL_SIZE,),
                *head,
                real(self._observations.log_norm),
                *self._observations.args(),
                *tail,
            )
        else:
            vel, gvel = self._velocities(slot, n, self.statistic == "profile")
            slot.done = self._kernels["rv_statistic"](
                queue,
                (padded,),
                (LOCAL_SIZE,),
                *head,
                real(self._observations.log_norm),
                *self._observations.args(),
                np.int64(slot.padded),
                vel,
                gvel,
                *tail,
            )

    def _model_args(self, slot: _Slot, n: int) -> list:
        """The kernels' leading arguments: models, parameters and extras."""
        obs, ptype = self.obs, np.float64 if self.plan.double_params else np.float32
        with np.errstate(over="ignore"):  # times beyond float32: "ds" and "float" skip them
            times = [ptype(obs.t_origin), ptype(obs.t_ref), ptype(obs.t_origin - obs.t_ref)]
        return [
            np.int32(n),
            slot.params,
            slot.coeff,
            *times,
            slot.offsets,
            slot.jitter,
            slot.trend,
        ]

    def _velocities(self, slot: _Slot, n: int, profile: bool) -> tuple[cl.Buffer, cl.Buffer]:
        """Enqueue rv_velocity for the first ``n`` models of ``slot`` (after its
        uploads); returns the vel[obs][model] (and gvel) buffers."""
        queue, n_obs = self.queue, self.obs.n_obs
        vel, gvel = slot.velocity_buffers(profile)
        cl.enqueue_fill_buffer(queue, slot.status, np.int32(0), 0, n * 4)
        self._kernels["rv_velocity"](
            queue,
            (-(-n // LOCAL_SIZE) * LOCAL_SIZE, -(-n_obs // VELOCITY_BLOCK)),
            (LOCAL_SIZE, 1),
            *self._model_args(slot, n),
            self._observations.buffers[0],
            np.int32(n_obs),
            np.int32(VELOCITY_BLOCK),
            np.int64(slot.padded),
            vel,
            gvel,
            slot.status,
        )
        return vel, gvel

    @_one_call_at_a_time
    def velocities(self, params: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Keplerian velocity sums ``(n_models, n_obs)`` at the observation
        times (input order), without offsets or trend; NaN for bad models.
        Written into ``out`` (of that shape and :attr:`real_dtype`) if given."""
        if self.statistic == "profile":
            raise ValueError("velocities() needs an evaluator built for 'chi2' or 'loglike'")
        n, n_obs = params.shape[0], self.obs.n_obs
        queue, real = self.queue, self.real_dtype
        result = np.empty((n, n_obs), real) if out is None else out
        inverse = np.argsort(self.obs.order)
        for start in range(0, n, self.plan.batch_models):
            stop = min(n, start + self.plan.batch_models)
            m = stop - start
            slot = self._slot(0, m)
            self._upload(slot, self._stage(slot, params[start:stop]), None, None, None)
            _await_uploads(slot)
            vel, _ = self._velocities(slot, m, False)
            host = np.empty((n_obs, slot.padded), real)
            cl.enqueue_copy(queue, host, vel)
            slot.done = None
            result[start:stop] = host[:, :m].T[:, inverse]
        return result


def _await_uploads(slot: _Slot) -> None:
    """Wait on the host (without the interpreter lock) for the slot's uploads."""
    if slot.uploaded:
        cl.wait_for_events(slot.uploaded)
        slot.uploaded = []


def _result_shapes(
    n_models: int, n_inst: int, profile: bool, real: type[np.generic]
) -> dict[str, tuple[tuple[int, ...], type[np.generic]]]:
    """Shape and type of each result of ``n_models`` models: ``real`` values,
    int32 statuses (``"profile"``: also ``k`` and the offsets)."""
    shapes: dict[str, tuple[tuple[int, ...], type[np.generic]]] = {
        "statistic": ((n_models,), real),
        "status": ((n_models,), np.int32),
    }
    if profile:
        shapes.update(k=((n_models,), real), offsets=((n_models, n_inst), real))
    return shapes


class _Slot:
    """One set of device buffers for a batch of up to ``capacity`` models."""

    def __init__(self, ev: ModelEvaluator, capacity: int) -> None:
        ctx, size = ev.context, np.dtype(ev.real_dtype).itemsize
        result_size = np.dtype(ev.result_dtype).itemsize
        n_inst = len(ev.obs.instruments)
        profile = ev.statistic == "profile"
        mf = cl.mem_flags
        self.context, self.n_obs = ctx, ev.obs.n_obs
        self.capacity = capacity
        self.padded = -(-capacity // LOCAL_SIZE) * LOCAL_SIZE
        self.n = 0
        psize = 8 if ev.plan.double_params else 4

        def buf(count: int, itemsize: int) -> cl.Buffer:
            return cl.Buffer(ctx, mf.READ_WRITE, max(count, 1) * itemsize)

        self.params = buf(capacity * ev.n_planets * 5, psize)
        # page-locked staging: uploads run at bus speed and overlap kernels
        self.staging = PINNED_POOL.empty(
            ev.info, (capacity * ev.n_planets * 5,), np.float64 if psize == 8 else np.float32
        )
        n_coeff = 4 if ev.plan.double_params else capacity * ev.n_planets * 4
        self.staging_coeff = PINNED_POOL.empty(ev.info, (n_coeff,), np.float32)
        self.staged: cl.Event | None = None
        self.coeff = buf(n_coeff, 4)
        self.offsets = buf(capacity * n_inst if ev.has_offsets else 1, size)
        self.jitter = buf(capacity * n_inst if ev.has_jitter else 1, size)
        self.trend = buf(capacity * 2 if ev.trend else 1, size)
        self.out = buf(capacity, result_size)
        self.out_k = buf(capacity if profile else 1, result_size)
        self.out_gamma = buf(capacity * n_inst if profile else 1, result_size)
        self.status = buf(capacity, 4)
        self._size = size
        self._velocity: tuple[cl.Buffer, cl.Buffer] | None = None
        self.done: cl.Event | None = None
        self.uploaded: list[cl.Event] = []

    def velocity_buffers(self, profile: bool) -> tuple[cl.Buffer, cl.Buffer]:
        """The split layout's ``vel`` (and, for profile, ``gvel``) buffers."""
        if self._velocity is None:
            count = self.n_obs * self.padded
            vel = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, count * self._size)
            gvel = cl.Buffer(
                self.context, cl.mem_flags.READ_WRITE, (count if profile else 1) * self._size
            )
            self._velocity = (vel, gvel)
        return self._velocity

    def results(self, profile: bool) -> dict[str, cl.Buffer]:
        """Output buffers by result name."""
        out = {"statistic": self.out, "status": self.status}
        if profile:
            out.update(k=self.out_k, offsets=self.out_gamma)
        return out


def device_items(plan: Plan, n_models: int, n_devices: int) -> list[tuple[int, int, str]]:
    """Cut ``n_models`` models into ``(lo, hi, layout)`` items for
    ``n_devices`` devices (:func:`clperiod.engine.scheduler.split_range`, with items
    of at least the models that fill a device of ``plan``). Each item lies
    within the full launches or within the last launch of a one-device call
    and carries that launch's layout, so that evaluating the items gives
    every model the arithmetic of the one-device call. Items hold at least
    :data:`ITEM_LAUNCHES` launches where each device still gets one."""
    full = n_models - n_models % plan.batch_models
    runs = (
        (0, full, plan.layout_for(plan.batch_models)),
        (full, n_models, plan.layout_for(n_models - full)),
    )
    fill = FUSED_MIN_MODELS_PER_CU * plan.compute_units  # models that fill a device
    size = max(fill, min(ITEM_LAUNCHES * plan.batch_models, full // n_devices))
    return [
        (lo, hi, layout)
        for start, stop, layout in runs
        for lo, hi in split_range(start, stop, n_devices, size)
    ]


Item = TypeVar("Item")
Result = TypeVar("Result")


class MultiDeviceEvaluator:
    """A :class:`ModelEvaluator` on each selected device, sharing the models.

    Every device gets the same arithmetic (:func:`shared_choices`). A call's
    models are cut into items (:func:`device_items`) that the devices take as
    they finish (:func:`clperiod.engine.scheduler.run_on_devices`); each item keeps
    the layout that the first device's one-device call gives its models, so
    the results are those of a one-device run, in input order. With one
    device a call goes straight to its evaluator.

    Parameters
    ----------
    obs
        The observations.
    device
        Device selection; every selected device is used.
    precision, phase_arithmetic, kepler_method, **options
        As for :class:`ModelEvaluator`.
    """

    def __init__(
        self,
        obs: Observations,
        *,
        device=None,
        precision: Precision = "mixed",
        phase_arithmetic: str = "auto",
        kepler_method: str = "auto",
        **options,
    ) -> None:
        self.devices = select_devices(device)
        phase_arithmetic, kepler_method = shared_choices(
            self.devices, precision, phase_arithmetic, kepler_method
        )
        self.evaluators = [
            ModelEvaluator(
                obs,
                device=info,
                precision=precision,
                phase_arithmetic=phase_arithmetic,
                kepler_method=kepler_method,
                **options,
            )
            for info in self.devices
        ]
        first = self.evaluators[0]
        self.obs, self.plan, self.real_dtype = first.obs, first.plan, first.real_dtype
        self._by_device = dict(zip(self.devices, self.evaluators, strict=True))

    def map(
        self, items: Sequence[Item], work: Callable[[ModelEvaluator, Item], Result]
    ) -> list[Result]:
        """``work(evaluator, item)`` for every item on the devices as they
        free up; results in the order of ``items``."""
        return run_on_devices(
            self.devices, items, lambda info, item: work(self._by_device[info], item)
        )

    def __call__(
        self,
        params: np.ndarray,
        offsets: np.ndarray | None = None,
        jitter: np.ndarray | None = None,
        trend: np.ndarray | None = None,
    ) -> dict[str, np.ndarray]:
        """As :meth:`ModelEvaluator.__call__`, on all devices."""
        if len(self.evaluators) == 1:
            return self.evaluators[0](params, offsets, jitter, trend)
        n = params.shape[0]
        profile = self.evaluators[0].statistic == "profile"
        shapes = _result_shapes(n, len(self.obs.instruments), profile, np.float64)
        out = {
            name: result_array(self.devices, shape, dtype)
            for name, (shape, dtype) in shapes.items()
        }

        def work(evaluator: ModelEvaluator, item: tuple[int, int, str]) -> None:
            lo, hi, layout = item
            extras = (None if a is None else a[lo:hi] for a in (offsets, jitter, trend))
            evaluator(
                params[lo:hi],
                *extras,
                layout=layout,
                out={name: a[lo:hi] for name, a in out.items()},
            )

        self.map(device_items(self.plan, n, len(self.devices)), work)
        return out

    def velocities(self, params: np.ndarray) -> np.ndarray:
        """As :meth:`ModelEvaluator.velocities`, on all devices."""
        if len(self.evaluators) == 1:
            return self.evaluators[0].velocities(params)
        n = params.shape[0]
        result = np.empty((n, self.obs.n_obs), self.real_dtype)
        fill = FUSED_MIN_MODELS_PER_CU * self.plan.compute_units  # models that fill a device
        self.map(
            split_range(0, n, len(self.devices), fill),
            lambda evaluator, item: evaluator.velocities(
                params[item[0] : item[1]], out=result[item[0] : item[1]]
            ),
        )
        return result
