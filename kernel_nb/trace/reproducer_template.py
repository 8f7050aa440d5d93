"""The fixed text of the test file `reproducer.write_pytest` writes, in the order it comes there.

`HEAD` (imports, and the choice between the stock interpreter and a GPU), then the kernel's
sources and constants, which the writer adds; `HELPERS`; the stock test, one of `STOCK` by what
stock Triton shows of the finding, with `GUARD_PAGES` after it for an out-of-bounds access;
`KERNEL_NB`, whose check is one of `FOUND`; and its `__main__`, `MAIN` or `GUARDED_MAIN`. `STOCK_SAYS`
words each stock test for the file's docstring, and `WHERE` ends that docstring.
"""

from __future__ import annotations

# how the stock test of an out-of-bounds access runs, in both places it can run
_SEEN_OUT_OF_BOUNDS = (
    "under the stock interpreter the buffers lie flush against inaccessible guard pages and the "
    "launch, run in a child process, dies of SIGSEGV at the out-of-bounds access, as a memory checker "
    "stops a kernel at an illegal address; on a GPU they lie in larger allocations whose red zones "
    "hold a sentinel (NaN, or an extreme integer)"
)
STOCK_SAYS = {
    "out_of_bounds_read": _SEEN_OUT_OF_BOUNDS
    + ", which the out-of-bounds load brings into a buffer (where it brings none, the file falls back"
    " on the guard pages)",
    "out_of_bounds_write": _SEEN_OUT_OF_BOUNDS + ", and the store changes one of {arg}",
    "assert": "the launch raises the failed assert (with the stock interpreter's debug option on)",
    "raises": "the launch raises, as kernel_nb's run raised {detail}",
    "nan_origin": "a buffer holds NaN where it held none before the launch",
    "inf_origin": "a buffer holds Inf where it held none before the launch",
    "gpu_mismatch": "compiled on a GPU, the launch leaves elements of {arg} out of tolerance of what "
    "the interpreter computed (saved in the .npz); under the stock interpreter it skips: the interpreter's "
    "side is the reference",
    "skip": "skipped: {detail}",
}

WHERE = """
Where it runs: on the CPU under TRITON_INTERPRET=1 (torch CPU tensors), or compiled on a GPU (torch
CUDA tensors) when the CUDA driver reports a device and TRITON_INTERPRET is not 1. The file asks the
driver (cuInit and cuDeviceGetCount of libcuda, through ctypes) before it imports Triton, because
@triton.jit reads TRITON_INTERPRET as it decorates; torch.cuda would import torch first and fail or
take seconds where no driver is. Set TRITON_INTERPRET to choose. kernel_nb runs the launch in a child
process with TRITON_INTERPRET=0: it interprets plain JITFunctions, not the stock interpreter's.
\"\"\"
"""

HEAD = """
import contextlib
import ctypes
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest


def _cuda_device_usable():
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    return cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0


if not _cuda_device_usable():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
"""

HELPERS = '''

def _device(torch):
    """The device of the buffers: the CPU under the stock interpreter, else the GPU."""
    if not isinstance(_KERNEL, triton.JITFunction):
        if _USES_LIBDEVICE:
            pytest.skip("the stock interpreter cannot run libdevice calls: run this file on a GPU")
        return "cpu"
    if not torch.cuda.is_available():
        pytest.skip("TRITON_INTERPRET is not 1 but torch sees no CUDA device")
    return "cuda"


def _stock_arguments(torch, device):
    """The arguments, each buffer inside a larger allocation with _RED_ZONE elements of its
    sentinel on both sides; and the allocations, as signed-integer bits."""
    args, memories = dict(_VALUES), {}
    with np.load(Path(__file__).with_name(_INPUTS)) as saved:
        for name, (dtype, shape, strides, sentinel) in _BUFFERS.items():
            span = saved[name]
            bits = np.full(span.size + 2 * _RED_ZONE, sentinel, span.dtype)
            bits[_RED_ZONE : _RED_ZONE + span.size] = span
            memories[name] = torch.from_numpy(bits).to(device)
            args[name] = memories[name].view(getattr(torch, dtype)).as_strided(shape, strides, _RED_ZONE)
    return args, memories


def _launch(torch, device, args, **options):
    _KERNEL[_GRID](**args, **options)
    if device == "cuda":
        torch.cuda.synchronize()


def _new(torch, args, before, what):
    """The buffers that hold `what` (NaN, Inf, or their red zones' sentinel: NaN for floats, else
    its bits) where they held none before the launch."""

    def holds(tensor, sentinel):
        values = tensor.cpu()
        if values.dtype.is_floating_point:
            return torch.isinf(values.double()) if what == "inf" else torch.isnan(values.double())
        bits = values.view(getattr(torch, f"int{8 * values.element_size()}"))
        return bits == sentinel if what == "sentinel" else torch.zeros_like(bits, dtype=torch.bool)

    return [n for n, spec in _BUFFERS.items() if (holds(args[n], spec[3]) & ~holds(before[n], spec[3])).any()]


@contextlib.contextmanager
def _interpreter_debug():
    """The stock interpreter skips tl.device_assert and its integer overflow checks unless its
    builder's options say debug, and no public switch sets that (TRITON_DEBUG and debug=True
    reach compiled kernels only): set it for the launch, restored after."""
    if isinstance(_KERNEL, triton.JITFunction):
        yield
        return
    from triton.runtime import interpreter

    builder = getattr(interpreter, "interpreter_builder", None)
    if builder is None or not dataclasses.is_dataclass(builder.options):
        pytest.skip("this Triton's interpreter has no debug option to turn its asserts on")
    saved = builder.options
    builder.options = dataclasses.replace(saved, debug=True)
    try:
        yield
    finally:
        builder.options = saved

'''

_SETUP = """
def test_stock_triton():
    torch = pytest.importorskip("torch")
    device = _device(torch)
"""
_ARGUMENTS = "    args, memories = _stock_arguments(torch, device)\n"
# the stock interpreter checks no bounds: a child process meets the access at a guard page instead
_GUARDED = _SETUP + '    if device == "cpu":\n        _assert_faults()\n        return\n' + _ARGUMENTS
_BEFORE = "    before = {name: args[name].cpu().clone() for name in _BUFFERS}\n"
_RUN = _SETUP + _ARGUMENTS + _BEFORE + "    _launch(torch, device, args)\n"
STOCK = {
    "out_of_bounds_read": _GUARDED
    + _BEFORE
    + """    _launch(torch, device, args)
    reached = _new(torch, args, before, "sentinel")
    if not reached and not _USES_LIBDEVICE:
        # what the compiled load read out of bounds reached no buffer (a masked store dropped it,
        # say): under the stock interpreter the access itself meets a guard page
        _assert_faults()
        return
    assert reached, "the out-of-bounds load brought no red-zone sentinel into any buffer"
""",
    "out_of_bounds_write": _GUARDED
    + """    _launch(torch, device, args)
    red = np.r_[0:_RED_ZONE, -_RED_ZONE:0]
    changed = [n for n, m in memories.items() if (m.cpu().numpy()[red] != _BUFFERS[n][3]).any()]
    assert _ARG in changed, f"the out-of-bounds store changed no red zone of {_ARG} (changed: {changed})"
""",
    "nan_origin": _RUN
    + '    assert _new(torch, args, before, "nan"), "no buffer holds NaN it did not hold"\n',
    "inf_origin": _RUN
    + '    assert _new(torch, args, before, "inf"), "no buffer holds Inf it did not hold"\n',
    "assert": _SETUP
    + _ARGUMENTS
    + """    with _interpreter_debug(), pytest.raises(Exception) as raised:
        _launch(torch, device, args, debug=True)
    if device == "cpu" and _ASSERT_MESSAGE is not None:
        assert _ASSERT_MESSAGE in str(raised.value)
""",
    "raises": _SETUP
    + _ARGUMENTS
    + "    with pytest.raises(Exception):\n        _launch(torch, device, args)\n",
    "gpu_mismatch": _SETUP
    + """    if device == "cpu":
        pytest.skip("the mismatch is the GPU's, against the interpreter's results saved beside this file")
"""
    + _ARGUMENTS
    + """    _launch(torch, device, args, **_GPU_OPTIONS)
    far = _out_of_tolerance(torch, memories[_ARG])
    assert far, f"the GPU's {_ARG} is within tolerance (rtol, atol = {_TOLERANCE}) of the interpreter's"
    print(f"{_ARG}: {len(far)} elements out of tolerance, the first at span offsets {far[:8]}")
""",
    "skip": "\ndef test_stock_triton():\n    pytest.skip(@REASON@)\n",
}

GUARD_PAGES = '''

def _assert_faults():
    """Run the launch in a child process on buffers flush against guard pages (`_guarded`) and
    assert that it dies of SIGSEGV at the kernel's line, as a memory checker stops a kernel at an
    illegal address: the stock interpreter reads and writes the lanes its mask lets through, all of
    them and no others, with no bounds check, so an out-of-bounds lane meets a guard page even
    where its value is never stored."""
    import signal

    if os.name != "posix":
        pytest.skip("guard pages need mmap and mprotect")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    run = subprocess.run(
        [sys.executable, __file__, "--guard-pages"], env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == -signal.SIGSEGV, (
        f"the launch exited with status {run.returncode}, not killed by SIGSEGV: no access reached a "
        f"guard page\\n{run.stderr[-4000:]}"
    )
    if _LINE is not None:
        at = f'File "{__file__}", line {_LINE} in '
        assert at in run.stderr, f"the launch faulted, but not at line {_LINE}:\\n{run.stderr[-4000:]}"


def _guarded(torch, name, bits):
    """The span `bits` of buffer `name`, alone in an anonymous mmap between pages that no access
    may touch (PROT_NONE): its end flush against the pages after it, or, for the buffer the
    out-of-bounds access leaves by its start, its start flush against the pages before it; these
    reach past the element the access went to, in pages of this machine's size."""
    import mmap

    page = mmap.PAGESIZE
    arg, element = _OUT_OF_BOUNDS
    before = name == arg and element < 0
    reach = ((-element if before else element - bits.size + 1) if name == arg else 1) * bits.itemsize
    guard = max(1, -(-reach // page)) * page
    data = max(1, -(-bits.nbytes // page)) * page
    memory = mmap.mmap(-1, guard + data + guard, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    start = ctypes.addressof(ctypes.c_char.from_buffer(memory))
    no_access = 0  # PROT_NONE, which the mmap module does not name
    for at in (start, start + guard + data):
        if libc.mprotect(at, guard, no_access) != 0:
            raise OSError(ctypes.get_errno(), "mprotect refused to make a guard page")
    # torch makes no tensor of no elements over a buffer: one element, then a view of none
    count = max(bits.size, 1)
    first = guard if before else guard + data - count * bits.itemsize
    span = torch.frombuffer(memory, dtype=getattr(torch, bits.dtype.name), count=count, offset=first)
    span = span[: bits.size] if before else span[count - bits.size :]
    span.copy_(torch.from_numpy(bits))
    return span


def _guarded_launch():
    """The child process of `_assert_faults`: the launch on guarded buffers, under the stock
    interpreter, with faulthandler's traceback of the fault on stderr."""
    import faulthandler

    import torch

    faulthandler.enable()
    args = dict(_VALUES)
    with np.load(Path(__file__).with_name(_INPUTS)) as saved:
        for name, (dtype, shape, strides, _) in _BUFFERS.items():
            span = _guarded(torch, name, saved[name])
            args[name] = span.view(getattr(torch, dtype)).as_strided(shape, strides, span.storage_offset())
    _KERNEL[_GRID](**args)
'''

GPU_MISMATCH = """

def _out_of_tolerance(torch, memory):
    "\""The span offsets of buffer `memory` (with its red zones) whose GPU value lies out of
    |gpu - cpu| <= atol + rtol * |cpu| of the interpreter's, or is NaN on one side only."\""
    rtol, atol = _TOLERANCE
    with np.load(Path(__file__).with_name(_INPUTS)) as saved:
        bits = saved[f"expected.{_ARG}"]
    dtype = getattr(torch, _BUFFERS[_ARG][0])
    cpu = torch.from_numpy(bits).view(dtype).double()
    gpu = memory.cpu()[_RED_ZONE : _RED_ZONE + bits.size].view(dtype).double()
    close = ((gpu - cpu).abs() <= atol + rtol * cpu.abs()) | (gpu == cpu) | (gpu.isnan() & cpu.isnan())
    return torch.nonzero(~close).flatten().tolist()
"""

KERNEL_NB_COMPARED = '''

def test_kernel_nb():
    pytest.importorskip("kernel_nb")
    pytest.importorskip("cupy")
    if not isinstance(_KERNEL, triton.JITFunction):
        pytest.skip("kernel_nb compares the interpreter with the compiled kernel: run this file on a GPU")
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    run = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert _ARG in found["mismatching"], found


def _kernel_nb_run():
    """The launch under kernel_nb's comparison with the GPU, on numpy arrays, at the tolerance it
    was judged by: the buffers out of it."""
    import kernel_nb.gpu
    import ml_dtypes

    args = dict(_VALUES)
    with np.load(Path(__file__).with_name(_INPUTS)) as saved:
        for name, (dtype, shape, strides, _) in _BUFFERS.items():
            span = saved[name].view(np.dtype(getattr(ml_dtypes, dtype, dtype)))
            args[name] = np.lib.stride_tricks.as_strided(span, shape, [s * span.itemsize for s in strides])
    rtol, atol = _TOLERANCE
    with kernel_nb.gpu.compare(kernel_nb.Options(**_KERNEL_NB_OPTIONS), rtol=rtol, atol=atol) as session:
        _KERNEL[_GRID](**args)
    comparison = session.trace[0].comparison
    return {"mismatching": [b.arg for b in comparison.mismatching], "report": comparison.report()}
'''

FOUND = {
    "error": '(found["error"], found["line"]) == (_ERROR, _LINE)',
    "line": '[_KIND, _LINE] in found["findings"]',
    "kind": '_KIND in [kind for kind, _ in found["findings"]]',
}
KERNEL_NB = '''

def test_kernel_nb():
    pytest.importorskip("kernel_nb")
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    run = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert @CHECK@, found


def _kernel_nb_run():
    """The launch under kernel_nb, on numpy arrays: its error and findings."""
    import kernel_nb
    import ml_dtypes

    args = dict(_VALUES)
    with np.load(Path(__file__).with_name(_INPUTS)) as saved:
        for name, (dtype, shape, strides, _) in _BUFFERS.items():
            span = saved[name].view(np.dtype(getattr(ml_dtypes, dtype, dtype)))
            args[name] = np.lib.stride_tricks.as_strided(span, shape, [s * span.itemsize for s in strides])
    error = launch = None
    try:
        with kernel_nb.interpret(**_KERNEL_NB_OPTIONS) as session:
            _KERNEL[_GRID](**args)
        launch = session.trace[0]
    except kernel_nb.KernelError as exc:
        error, launch = exc, exc.launch
    return {
        "error": None if error is None else type(error).__name__,
        "line": getattr(error, "line", None),
        "findings": [[f.kind, f.line] for f in launch.findings] if launch is not None else [],
    }
'''
MAIN = """

if __name__ == "__main__":
    print(json.dumps(_kernel_nb_run()))
"""
GUARDED_MAIN = """

if __name__ == "__main__":
    if sys.argv[1:] == ["--guard-pages"]:
        _guarded_launch()
    else:
        print(json.dumps(_kernel_nb_run()))
"""
