"""A failing launch as a standalone pytest file: the kernel, its inputs, and the failure asserted.

The file needs neither a notebook nor the user's code: it carries the kernel's source and its
helpers', recreates the globals they read (`Launch.kernel_globals`), and loads the buffers'
elements from an .npz beside it. Its first test runs the kernel with plain Triton and asserts the
symptom stock Triton shows (`_stock_check`), or skips saying why; its second runs the launch under
kernel_nb and asserts the same finding at the same line. Its fixed parts are in `reproducer_template`.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from kernel_nb.trace.buffer_map import BufferMap
from kernel_nb.trace.compare import Comparison
from kernel_nb.trace.kernel_text import IMPORTS, function_sources, globals_block, literal
from kernel_nb.trace.records import LAUNCH_ERROR, ArgumentInfo, Finding, Pid, SourceInfo
from kernel_nb.trace.reproducer_template import (
    FOUND,
    GPU_MISMATCH,
    GUARD_PAGES,
    GUARDED_MAIN,
    HEAD,
    HELPERS,
    KERNEL_NB,
    KERNEL_NB_COMPARED,
    MAIN,
    STOCK,
    STOCK_SAYS,
    WHERE,
)

_MIN_RED_ZONE = 4096  # elements of sentinel on each side of a buffer, at least
# farther out, a red zone (on a GPU) costs too much memory, and guard pages (under the interpreter)
# too much address space to reserve: the stock test skips
_MAX_RED_ZONE = 1 << 26
# the bits of the NaN that fills a float buffer's red zones: one with a payload of its own, so that
# a NaN the kernel stores there still changes them (the fp8 formats have no bits to spare)
_NAN_BITS = {
    **{"float16": 0x7E5A, "bfloat16": 0x7FDA, "float32": 0x7FC5A5A5, "float64": 0x7FF8A5A5A5A5A5A5},
    **{"float8_e4m3fn": 0x7F, "float8_e5m2": 0x7E, "float8_e4m3fnuz": -0x80, "float8_e5m2fnuz": -0x80},
}
_INTEGERS = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
_OVERFLOW = re.compile(r"int(\d+) overflow in '([-+*])'")
# what the file's `HEAD` imports: a kernel global of the same name must mean the same thing
_OWN: dict[str, tuple[str, Any]] = {
    **{m: ("module", m) for m in ("contextlib", "ctypes", "dataclasses", "json", "os", "subprocess", "sys")},
    **{"np": ("module", "numpy"), "pytest": ("module", "pytest"), "triton": ("module", "triton")},
    **{"tl": ("module", "triton.language"), "Path": ("from", ("pathlib", "Path"))},
}
_RACE = "a race depends on the order programs run in: fixed in the stock interpreter, free on a GPU"
_SKIPS = {
    "race_read_after_write": _RACE,
    "race_write": _RACE,
    "uninitialised_read": "stock Triton has no uninitialised memory to show: the buffers hold the saved inputs",
    "division_by_zero": "stock Triton gives no error for an integer division by zero",
    "shift_overflow": "stock Triton gives no error for a shift by the bit width or more",
    "undefined_cast": "stock Triton casts NaN and out-of-range floats to integers without a word",
    "precision_loss": "precision loss is measured against kernel_nb's fp64 shadow, which stock Triton lacks",
}


class LaunchData(Protocol):
    """What `write_pytest` reads of a launch (`kernel_nb.Launch`)."""

    index: int
    kernel: str
    grid: Pid
    args: list[ArgumentInfo]
    sources: dict[str, SourceInfo]
    findings: list[Finding]
    snapshot: Mapping[str, np.ndarray]
    kernel_globals: dict[str, tuple[str, Any]]
    buffers: dict[str, BufferMap]
    shadow: str | None
    comparison: Comparison | None


def write_pytest(
    launch: LaunchData, path: str | Path, *, finding: Finding | None = None
) -> tuple[Path, Path]:
    """Write a standalone pytest file that reproduces a launch's finding, and its inputs beside it.

    Args:
        launch: the launch, as recorded (with `kernel_globals` filled in).
        path: the .py file to write, or a directory to write `test_<kernel>_repro.py` in.
        finding: the finding to reproduce; by default the launch's first of severity "error",
            else its first.

    Returns:
        The test file and the .npz of the buffers' elements before the launch (same stem).

    Raises:
        ValueError: the launch has no finding; or an argument, a global or a source cannot be
            carried into a standalone file (the message names it).
    """
    if finding is None:
        finding = next((f for f in launch.findings if f.severity == "error"), None)
        finding = finding or next(iter(launch.findings), None)
    if finding is None:
        raise ValueError(f"{launch.kernel}: the launch has no findings: there is no failure to reproduce")
    target = Path(path)
    if target.is_dir():
        target = target / f"test_{launch.kernel}_repro.py"
    inputs = target.with_suffix(".npz")
    buffers, values = _arguments(launch)
    mode, detail, red_zone = _stock_check(launch, finding)
    error = finding.message.split(":", 1)[0] if finding.kind == LAUNCH_ERROR else None
    options: dict[str, Any] = {"shadow": launch.shadow} if launch.shadow is not None else {}
    if finding.kind == "uninitialised_read":  # kernel_nb tells such reads only of poisoned memory
        options["poison"] = (finding.arg,)

    guarded = mode in ("out_of_bounds_read", "out_of_bounds_write")
    compared = mode == "gpu_mismatch"
    expected, tolerance = _expected(launch, finding) if compared else ({}, None)
    text = (
        _docstring(launch, finding, mode, detail, inputs.name)
        + HEAD
        + globals_block(launch.kernel, launch.kernel_globals, _OWN, "the test file")
    )
    line = None
    for file, def_line, source in function_sources(launch.kernel, launch.kernel_globals, launch.sources):
        text += "\n\n" + source
        if file == finding.file and finding.line is not None:
            lines = source.count("\n") - 1  # from its `def` on
            if def_line <= finding.line < def_line + lines:
                line = text.count("\n") - lines + 1 + finding.line - def_line
    constants = {
        "_GRID": tuple(launch.grid),
        "_BUFFERS": {name: spec for name, (spec, _) in buffers.items()},
        "_VALUES": values,
        "_INPUTS": inputs.name,
        "_KIND": finding.kind,
        "_ERROR": error,
        "_LINE": line,
        "_ARG": finding.arg,
        "_RED_ZONE": red_zone,
        "_OUT_OF_BOUNDS": _nearest_out_of_bounds(launch, finding) if guarded else None,
        "_ASSERT_MESSAGE": _assert_message(finding) if mode == "assert" else None,
        "_USES_LIBDEVICE": any(
            t in IMPORTS and "libdevice" in repr(d) for t, d in launch.kernel_globals.values()
        ),
        "_KERNEL_NB_OPTIONS": options,
        **({"_TOLERANCE": tolerance, "_GPU_OPTIONS": _gpu_options(launch)} if compared else {}),
    }
    text += f"\n\n_KERNEL = {launch.kernel}\n"
    for name, value in constants.items():
        shown = literal(value)
        if len(shown) > 96 and isinstance(value, dict):  # one item a line
            shown = "{\n" + "".join(f"    {literal(k)}: {literal(v)},\n" for k, v in value.items()) + "}"
        text += f"{name} = {shown}\n"
    stock = STOCK[mode].replace("@REASON@", literal(detail)) + (GUARD_PAGES if guarded else "")
    stock += GPU_MISMATCH if compared else ""
    check = FOUND["error" if error is not None else "line" if line is not None else "kind"]
    kernel_nb = KERNEL_NB_COMPARED if compared else KERNEL_NB.replace("@CHECK@", check)
    text += HELPERS + stock + kernel_nb + (GUARDED_MAIN if guarded else MAIN)
    target.write_text(text)
    arrays = {name: bits for name, (_, bits) in buffers.items()} | expected
    np.savez(inputs, **arrays)  # type: ignore[arg-type]
    return target, inputs


_Spec = tuple[str, tuple[int, ...], tuple[int, ...], int]


def _arguments(launch: LaunchData) -> tuple[dict[str, tuple[_Spec, np.ndarray]], dict[str, Any]]:
    """Per buffer its (dtype, shape, strides, sentinel) and its span as signed-integer bits (the
    form every dtype, bf16 and fp8 included, travels in); the other arguments' values."""
    buffers: dict[str, tuple[_Spec, np.ndarray]] = {}
    values: dict[str, Any] = {}
    for arg in launch.args:
        refused = f"{launch.kernel}: argument {arg.name} cannot be exported"
        if arg.kind == "buffer":
            if arg.dtype not in (*_NAN_BITS, *_INTEGERS) or any(s < 0 for s in arg.strides):
                raise ValueError(f"{refused}: torch has no tensor of {arg.dtype} with strides {arg.strides}")
            span = np.ascontiguousarray(np.asarray(launch.snapshot[arg.name]).reshape(-1))
            spec = (arg.dtype, tuple(arg.shape), tuple(arg.strides), _sentinel(arg.dtype))
            buffers[arg.name] = (spec, span.view(np.dtype(f"i{span.dtype.itemsize}")))
            continue
        try:
            literal(arg.value)
        except ValueError:
            raise ValueError(f"{refused}: {arg.kind} {arg.value!r} has no literal form") from None
        if arg.kind not in ("scalar", "constexpr", "none", "tuple"):
            raise ValueError(f"{refused}: {arg.kind} {arg.value}")
        values[arg.name] = arg.value
    return buffers, values


def _sentinel(dtype: str) -> int:
    """What fills a buffer's red zones, as the file's signed-integer bits: NaN for floats, the most
    negative integer (unsigned: the largest), True for bools."""
    if dtype in _NAN_BITS or dtype == "bool":
        return _NAN_BITS.get(dtype, 1)
    info = np.iinfo(np.dtype(dtype))
    extreme = np.array(info.min if info.min < 0 else info.max, np.dtype(dtype))
    return int(extreme.view(np.dtype(f"i{extreme.itemsize}")))


def _stock_check(launch: LaunchData, finding: Finding) -> tuple[str, str, int]:
    """What the stock test asserts: (mode, detail, red zone in elements).

    Measured on triton 3.9's interpreter: loads, stores and atomics copy raw memory with no bounds
    check (an out-of-bounds load returns what lies there, a store overwrites it), touching every
    lane the mask lets through, whether its value is used or not, and no other lane; so a buffer
    flush against a PROT_NONE page faults exactly when an access of kernel_nb's reaches past it,
    and not when it reads the element next to the page. tl.device_assert does nothing unless the
    builder's options say debug, and then raises AssertionError(message) wrapped in
    InterpreterError, as do its overflow checks of integer + - * below 64 bits.
    """
    if finding.kind == LAUNCH_ERROR:
        error = finding.message.split(":", 1)[0]
        if error == "KernelMemoryError":
            return _out_of_bounds(launch, finding)
        if error == "KernelDeadlockError":
            return "skip", "stock Triton would wait forever where kernel_nb found the programs deadlocked", 0
        return ("assert" if error == "KernelAssertionError" else "raises"), error, 0
    if finding.kind in ("nan_origin", "inf_origin"):
        return finding.kind, "", 0
    if finding.kind == "gpu_mismatch":
        comparison = launch.comparison
        if comparison is None or finding.arg not in [b.arg for b in comparison.mismatching]:
            return "skip", f"the launch holds no comparison in which {finding.arg} is out of tolerance", 0
        return "gpu_mismatch", "", 0
    if finding.kind == "int_overflow":
        found = _OVERFLOW.search(finding.message)
        if found is not None and int(found[1]) < 64:
            return "assert", "", 0
        return "skip", "stock Triton checks the overflow of integers narrower than 64 bits only", 0
    return "skip", _SKIPS.get(finding.kind, f"stock Triton shows nothing of a {finding.kind} finding"), 0


def _out_of_bounds(launch: LaunchData, finding: Finding) -> tuple[str, str, int]:
    """A refused access the stock test can meet: under the interpreter at a guard page (see
    `_nearest_out_of_bounds`), on a GPU in red zones that reach past every element it went to."""
    refused = _refused(launch, finding)
    if not refused:
        why = "misaligned, read-only, or at an address no argument leads to"
        return "skip", f"the access was refused as {why}, which stock Triton does not check", 0
    reach = max(outside for _, outside in refused)
    spans = [int(np.asarray(s).size) for s in launch.snapshot.values()]
    red_zone = max(_MIN_RED_ZONE, *spans) + reach
    if red_zone > _MAX_RED_ZONE:
        why = "too far for red zones or guard pages"
        return "skip", f"the access lands {reach} elements outside {finding.arg}, {why}", 0
    reads = re.search(r"\b(?:tl\.|descriptor )load of ", finding.message) is not None
    return ("out_of_bounds_read" if reads else "out_of_bounds_write"), "", red_zone


def _expected(launch: LaunchData, finding: Finding) -> tuple[dict[str, np.ndarray], tuple[float, float]]:
    """The interpreter's span of the mismatching buffer after the launch, as signed-integer bits
    under the .npz key "expected.<arg>", and the (rtol, atol) it was judged by: where part of it
    fell under a second rule (tf32 dots' stores), the looser of the two for all of it, so that
    an element out of that tolerance is out of the one the comparison applied."""
    assert launch.comparison is not None
    buffer = next(b for b in launch.comparison.mismatching if b.arg == finding.arg)
    rules = [buffer.tolerance, *([buffer.relaxed[0]] if buffer.relaxed is not None else [])]
    cpu = np.ascontiguousarray(np.asarray(buffer.cpu).reshape(-1))
    bits = cpu.view(np.dtype(f"i{cpu.dtype.itemsize}"))
    tolerance = (max(float(r.rtol) for r in rules), max(r.floor(cpu) for r in rules))
    return {f"expected.{buffer.arg}": bits}, tolerance


def _gpu_options(launch: LaunchData) -> dict[str, Any]:
    """How the compared launch was compiled, where it differs from Triton's default."""
    fused = launch.comparison is None or getattr(launch.comparison, "fp_fusion", True)
    return {} if fused else {"enable_fp_fusion": False}


def _refused(launch: LaunchData, finding: Finding) -> list[tuple[int, int]]:
    """The accesses to the finding's argument kernel_nb refused at its line: per access its first
    out-of-bounds element (the lowest) and how many elements outside the argument that one lies."""
    bmap = launch.buffers.get(finding.arg) if finding.arg is not None else None
    los = [lo for _, line, lo in (bmap.oob if bmap is not None else ()) if line == finding.line]
    return [(lo, max(-lo, lo - bmap.size + 1, 0)) for lo in los] if bmap is not None else []


def _nearest_out_of_bounds(launch: LaunchData, finding: Finding) -> tuple[str | None, int]:
    """(argument, element offset) of the refused access whose element lies nearest its argument.

    Under the stock interpreter the access faults once one of its lanes lies in a guard page: the
    file puts the argument flush against guard pages on the side this element lies (before its
    start where it is negative), reaching as far as it. An access that leaves by the start has the
    farthest of its elements before the start recorded, so its guard covers them all."""
    lo, _ = min(_refused(launch, finding), key=lambda refused: refused[1])
    return finding.arg, lo


def _assert_message(finding: Finding) -> str | None:
    """The text of the AssertionError stock Triton raises, where the finding tells it."""
    overflow = _OVERFLOW.search(finding.message) if finding.kind == "int_overflow" else None
    if overflow is not None:
        operation = {"+": "add", "-": "sub", "*": "mul"}[overflow[2]]
        return f"int{overflow[1]} overflow detected for operation {operation}"
    found = re.search(r"device_assert failed: (.*) \(lanes [^()]*\)$", finding.message)
    return found[1] if found else None


def _docstring(launch: LaunchData, finding: Finding, mode: str, detail: str, inputs: str) -> str:
    where = f"line {finding.line} of {Path(finding.file or '?').name}" if finding.line is not None else "?"
    message = finding.message.replace("\\", "/").replace('"""', "'''")
    found = "error class" if finding.kind == LAUNCH_ERROR else "finding"
    what = finding.message.split(":", 1)[0] if finding.kind == LAUNCH_ERROR else finding.kind
    stock = STOCK_SAYS["skip" if mode == "skip" else mode].format(arg=finding.arg, detail=detail)
    return (
        f'"""{launch.kernel}: {what} at {where}, reproduced with plain Triton.\n\n'
        + "\n".join(textwrap.wrap(message, 100))
        + f"\n\nLaunch {launch.index} of {launch.kernel}, written out by kernel_nb: the kernel's source and its\n"
        "helpers', the globals they read, the grid, the scalar and constexpr arguments, and the buffers'\n"
        f"elements before the launch ({inputs}).\n\n"
        + "\n".join(textwrap.wrap(f"test_stock_triton: {stock}.", 100))
        + "\n"
        + "\n".join(textwrap.wrap(f"test_kernel_nb: {_kernel_nb_says(finding, mode, found)}.", 100))
        + "\n"
        + WHERE
    )


def _kernel_nb_says(finding: Finding, mode: str, found: str) -> str:
    if mode == "gpu_mismatch":
        return (
            "kernel_nb compares the interpreted launch with the compiled one again, at the same "
            f"tolerance, and finds {finding.arg} out of it"
        )
    return f"kernel_nb interprets the launch again and reports the same {found} at the same line"
