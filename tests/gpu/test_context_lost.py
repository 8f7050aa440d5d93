"""A kernel that stores far out of bounds, run compiled on a real GPU: the fault and every later
launch say that the CUDA context is gone. The fault runs in a subprocess, whose CUDA context it
takes for the rest of that process."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = """
import json
import os

import numpy as np
import triton
import triton.language as tl

import kernel_nb.gpu as gpu


@triton.jit
def far_store_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets + (1 << 40), 1.0, mask=offsets < n)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def attempt(make_session, launch):
    try:
        with make_session():
            launch()
    except Exception as exc:
        return {"type": type(exc).__name__, "message": str(exc), "earlier": getattr(exc, "earlier", None),
                "lines": exc._render_traceback_() if hasattr(exc, "_render_traceback_") else None}
    return {"type": None}


x = np.ones(1024, np.float32)
out = np.full(1024, 3.0, np.float32)
results = {
    "fault": attempt(gpu.run, lambda: far_store_kernel[(1,)](out, 1024, BLOCK=1024)),
    "fault_left_out": bool((out == 3.0).all()),
    "gpu": attempt(gpu.run, lambda: add_kernel[(4,)](x, x, out, 1024, BLOCK=256)),
    "compare": attempt(gpu.compare, lambda: add_kernel[(4,)](x, x, out, 1024, BLOCK=256)),
    "left_out": bool((out == 3.0).all()),
}
print(json.dumps(results), flush=True)
os._exit(0)  # tearing down CuPy and torch on a lost context can fail on its own; the results are out
"""

ILLEGAL_ADDRESS = "cudaErrorIllegalAddress: an illegal memory access was encountered"
TAIL = (
    ": a sticky error fails every later CUDA call in this process; restart the Python process (in Jupyter: "
    "restart the kernel) to use the GPU again, and run the cell with %%tkernel interpret to find the bad access"
)


def test_an_illegal_address_says_the_context_is_gone_then_and_at_every_later_launch(tmp_path):
    script = tmp_path / "fault.py"
    script.write_text(textwrap.dedent(SCRIPT))
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
        },
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps(results, indent=1))
    fault = results["fault"]
    assert (fault["type"], fault["earlier"]) == ("CudaContextLost", False), fault
    assert fault["message"] == (
        f"far_store_kernel: the launch faulted on GPU 0 ({ILLEGAL_ADDRESS}) and the CUDA context is gone"
        + TAIL
    )
    assert fault["lines"] == [f"CudaContextLost: {fault['message']}"]
    assert results["fault_left_out"]
    for later in ("gpu", "compare"):
        lost = results[later]
        assert (lost["type"], lost["earlier"]) == ("CudaContextLost", True), (later, lost)
        assert lost["message"] == (
            f"add_kernel: the CUDA context of GPU 0 is gone since an earlier launch faulted ({ILLEGAL_ADDRESS})"
            + TAIL
        )
    assert results["left_out"]
