"""Render the Mako kernel templates in ``cl_kernels/``, build and cache them.

Every algorithm has one template; precision, memory strategy and the other
variant switches are render parameters. Programs are cached per
``(context, template, parameters)`` and kernels per thread (a ``cl.Kernel`` is
not safe to configure from two threads at once). Data shapes are never render
parameters, so a ragged catalog does not trigger recompiles.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyopencl as cl
from mako.lookup import TemplateLookup

__all__ = ["KernelBuildError", "declare_scalar_args", "get_kernels", "kernel_dir", "render"]

_LOG_LINE = re.compile(r"<(?:source|kernel)>:(\d+):|\.cl:(\d+):\d+:")


class KernelBuildError(RuntimeError):
    """An OpenCL program failed to build; carries the build log and source path."""


@functools.cache
def kernel_dir() -> Path:
    """Folder holding the ``.mako`` templates (inside the wheel or the checkout)."""
    package = Path(__file__).resolve().parent.parent
    packaged = package / "cl_kernels"  # wheel layout: clperiod/cl_kernels
    return packaged if packaged.is_dir() else package.parent / "cl_kernels"  # source checkout


@functools.cache
def _lookup() -> TemplateLookup:
    return TemplateLookup(directories=[str(kernel_dir())], strict_undefined=True)


def render(template: str, **params: Any) -> str:
    """Render ``cl_kernels/<template>.mako`` with the given parameters."""
    return _lookup().get_template(f"{template}.mako").render(**params)


def _source_excerpt(source: str, log: str) -> str:
    """The rendered source lines that the build log points at."""
    lines = source.splitlines()
    numbers = sorted({int(a or b) for a, b in _LOG_LINE.findall(log)})
    shown = []
    for number in numbers[:5]:
        for k in range(max(1, number - 2), min(len(lines), number + 2) + 1):
            shown.append(f"{k:5d}| {lines[k - 1]}")
        shown.append("     ...")
    return "\n".join(shown)


# A successful build's log (NVIDIA's compiler writes one for every large
# kernel: "Function ... is a kernel, so overriding noinline attribute") tells
# a user nothing to act on; PYOPENCL_COMPILER_OUTPUT=1 still shows each log.
warnings.filterwarnings(
    "ignore", message="Non-empty compiler output encountered", category=cl.CompilerWarning
)

_program_cache: dict[tuple, tuple[cl.Program, dict[str, str]]] = {}  # with its typedefs
_program_lock = threading.Lock()
_build_seconds = [0.0]  # wall time spent in _build, all threads
#: Programs keep their kernels' argument information, from which
#: :func:`get_kernels` declares the scalar argument types.
_BUILD_OPTIONS = ["-cl-kernel-arg-info"]
_TYPEDEF = re.compile(r"\btypedef\s+(\w+)\s+(\w+)\s*;")
#: OpenCL scalar types by name.
_SCALAR_TYPES: dict[str, type[np.generic]] = {
    "char": np.int8,
    "uchar": np.uint8,
    "short": np.int16,
    "ushort": np.uint16,
    "int": np.int32,
    "uint": np.uint32,
    "long": np.int64,
    "ulong": np.uint64,
    "float": np.float32,
    "double": np.float64,
}


def _build(context: cl.Context, template: str, params: tuple) -> tuple[cl.Program, dict]:
    """The built program and the typedefs of its source."""
    source = render(template, **dict(params))
    try:
        program = cl.Program(context, source).build(options=_BUILD_OPTIONS)
    except cl.Error as error:
        log = str(error)
        fd, path = tempfile.mkstemp(prefix=f"clperiod-{template}-", suffix=".cl")
        with os.fdopen(fd, "w") as handle:
            handle.write(source)
        raise KernelBuildError(
            f"building cl_kernels/{template}.mako with {dict(params)} failed on "
            f"{[d.name for d in context.devices]}; rendered source: {path}\n"
            f"{_source_excerpt(source, log)}\nbuild log:\n{log}"
        ) from error
    return program, {alias: name for name, alias in _TYPEDEF.findall(source)}


def get_program(context: cl.Context, template: str, **params: Any) -> cl.Program:
    """Build (once per context and parameter set) and return a program."""
    return _cached_program(context, template, params)[0]


def _cached_program(
    context: cl.Context, template: str, params: dict[str, Any]
) -> tuple[cl.Program, dict[str, str]]:
    key = (context.int_ptr, template, tuple(sorted(params.items())))
    with _program_lock:
        cached = _program_cache.get(key)
    if cached is None:
        started = time.perf_counter()
        built = _build(context, template, key[2])
        with _program_lock:
            _build_seconds[0] += time.perf_counter() - started
            cached = _program_cache.setdefault(key, built)
    return cached


def build_seconds() -> float:
    """Wall seconds this process has spent building programs (rendering the
    template, compiling or loading a cached binary); a program built before
    in this process costs nothing."""
    with _program_lock:
        return _build_seconds[0]


_kernel_cache = threading.local()


def get_kernels(
    context: cl.Context, template: str, names: tuple[str, ...], **params: Any
) -> tuple[cl.Kernel, ...]:
    """Kernel objects ``names`` of a program, cached per thread, with their
    scalar argument types declared (:func:`declare_scalar_args`)."""
    cache = _kernel_cache.__dict__.setdefault("kernels", {})
    key = (context.int_ptr, template, names, tuple(sorted(params.items())))
    kernels = cache.get(key)
    if kernels is None:
        program, typedefs = _cached_program(context, template, params)
        kernels = tuple(cl.Kernel(program, name) for name in names)
        for kernel in kernels:
            declare_scalar_args(kernel, typedefs)
        cache[key] = kernels
    return kernels


def declare_scalar_args(kernel: cl.Kernel, typedefs: dict[str, str] | None = None) -> bool:
    """Declare a kernel's scalar argument types to pyopencl, from the kernel's
    argument information (programs built with ``-cl-kernel-arg-info``).

    pyopencl then packs scalar arguments itself instead of trying each kind of
    argument in turn, so batches queue sooner
    (``bench/results/2026-11-22_h100-sxm_scalar_arg_dtypes.json``). Scalars must
    then be numbers (NumPy or Python) of the declared kind. ``typedefs`` maps
    type aliases of the source to OpenCL type names. Returns False, leaving
    the kernel as it was, where the information is missing or an argument is
    of a type outside :data:`_SCALAR_TYPES` (vectors, structs).
    """
    typedefs = typedefs or {}
    private = cl.kernel_arg_address_qualifier.PRIVATE
    types: list[type[np.generic] | None] = []
    try:
        for index in range(kernel.num_args):
            if kernel.get_arg_info(index, cl.kernel_arg_info.ADDRESS_QUALIFIER) != private:
                types.append(None)  # a buffer or local memory: as given
                continue
            name = kernel.get_arg_info(index, cl.kernel_arg_info.TYPE_NAME)
            name = typedefs.get(name, name)
            if name not in _SCALAR_TYPES:
                return False
            types.append(_SCALAR_TYPES[name])
    except cl.Error:  # no argument information
        return False
    kernel.set_scalar_arg_dtypes(types)
    return True
