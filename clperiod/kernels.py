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
from pathlib import Path
from typing import Any

import pyopencl as cl
from mako.lookup import TemplateLookup

__all__ = ["KernelBuildError", "kernel_dir", "render", "get_kernels"]

_LOG_LINE = re.compile(r"<(?:source|kernel)>:(\d+):|\.cl:(\d+):\d+:")


class KernelBuildError(RuntimeError):
    """An OpenCL program failed to build; carries the build log and source path."""


@functools.cache
def kernel_dir() -> Path:
    """Folder holding the ``.mako`` templates (inside the wheel or the checkout)."""
    here = Path(__file__).resolve().parent
    packaged = here / "cl_kernels"  # wheel layout: clperiod/cl_kernels
    return packaged if packaged.is_dir() else here.parent / "cl_kernels"  # source checkout


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


_program_cache: dict[tuple, cl.Program] = {}
_program_lock = threading.Lock()


def _build(context: cl.Context, template: str, params: tuple) -> cl.Program:
    source = render(template, **dict(params))
    try:
        return cl.Program(context, source).build()
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


def get_program(context: cl.Context, template: str, **params: Any) -> cl.Program:
    """Build (once per context and parameter set) and return a program."""
    key = (context.int_ptr, template, tuple(sorted(params.items())))
    with _program_lock:
        program = _program_cache.get(key)
    if program is None:
        program = _build(context, template, key[2])
        with _program_lock:
            program = _program_cache.setdefault(key, program)
    return program


_kernel_cache = threading.local()


def get_kernels(
    context: cl.Context, template: str, names: tuple[str, ...], **params: Any
) -> tuple[cl.Kernel, ...]:
    """Kernel objects ``names`` of a program, cached per thread."""
    cache = _kernel_cache.__dict__.setdefault("kernels", {})
    key = (context.int_ptr, template, names, tuple(sorted(params.items())))
    kernels = cache.get(key)
    if kernels is None:
        program = get_program(context, template, **params)
        kernels = tuple(cl.Kernel(program, name) for name in names)
        cache[key] = kernels
    return kernels
