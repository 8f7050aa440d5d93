"""Kernels made while TRITON_INTERPRET=1 is set (the stock interpreter's InterpretedFunction, helpers
and triton.language's own @jit functions included) run under kernel_nb as plain kernels do, and the
stock interpreter has them back when the session ends. Each case runs in a fresh process, since
@triton.jit reads the variable as it decorates."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_nb.engine import triton_compat

ROOT = Path(__file__).resolve().parents[2]

KERNELS = """
import json, sys
import numpy as np
import triton
import triton.language as tl
import kernel_nb
from kernel_nb.engine import triton_compat

@triton.jit
def _doubled(x):
    return x * 2

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, _doubled(x) + tl.load(y_ptr + offsets, mask=mask), mask=mask)

@triton.jit
def row_sum_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * BLOCK + tl.arange(0, BLOCK))
    tl.store(out_ptr + row, tl.sum(x, axis=0) + x.max(axis=0))

@triton.jit
def unmasked_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, x)

@triton.autotune(configs=[triton.Config({"BLOCK": 4}), triton.Config({"BLOCK": 8})], key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def tuned_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + EVEN, mask=mask)

found = {"type": type(add_kernel).__name__}
"""

CASES = {
    "values_and_helper": """
x, y = np.arange(10, dtype=np.float32), np.ones(10, np.float32)
out = np.zeros(10, np.float32)
with kernel_nb.interpret(strategy=STRATEGY) as session:
    add_kernel[(2,)](x, y, out, 10, BLOCK=8)
launch = session.trace[0]
found["out"] = out.tolist()
found["helper_line_recorded"] = any(s.function == "_doubled" for s in launch.statements)
found["findings"] = [f.kind for f in launch.findings]
""",
    "reductions_and_members": """
x = np.arange(32, dtype=np.float32).reshape(4, 8)
out = np.zeros(4, np.float32)
with kernel_nb.interpret(strategy=STRATEGY):
    row_sum_kernel[(4,)](x, out, BLOCK=8)
found["out"] = out.tolist()
""",
    "out_of_bounds": """
x, out = np.arange(10, dtype=np.float32), np.full(16, -1.0, np.float32)
try:
    with kernel_nb.interpret(strategy=STRATEGY):
        unmasked_kernel[(2,)](x, out, BLOCK=8)
except kernel_nb.KernelError as error:
    found["error"] = type(error).__name__
    found["line"] = error.line
    found["arg"] = error.launch.findings[0].arg
found["out_unchanged"] = bool((out == -1).all())
""",
    "autotune_and_heuristics": """
x, out = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
with kernel_nb.interpret(autotune_config=1, strategy=STRATEGY) as session:
    tuned_kernel[lambda meta: (triton.cdiv(8, meta["BLOCK"]),)](x, out, 8)
found["out"] = out.tolist()
found["grid"] = list(session.trace[0].grid)
""",
    "stock_after_the_session": """
import torch
patched = ("run", "__getitem__", "__call__", "__get__")
before = {name: vars(type(add_kernel)).get(name) for name in patched}
with kernel_nb.interpret():
    pass
x, y = torch.arange(10, dtype=torch.float32), torch.ones(10)
out = torch.zeros(10)
add_kernel[(2,)](x, y, out, 10, BLOCK=8)
found["out"] = out.tolist()
found["restored"] = all(vars(type(add_kernel)).get(name) is before[name] for name in patched)
found["interpreted_only"] = triton_compat.interpreted_only(add_kernel)
""",
}


def _run(case: str, strategy: str, directory: Path) -> dict:
    env = {
        **os.environ,
        "TRITON_INTERPRET": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    # a file, as Triton reads a kernel's source from one
    script = directory / "interpreted_kernels.py"
    script.write_text(f"STRATEGY = {strategy!r}\n" + KERNELS + CASES[case] + "\nprint(json.dumps(found))\n")
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert found["type"] == "InterpretedFunction"  # the variable took effect
    return found


def test_a_kernel_and_its_helper_run_with_their_statements_recorded(strategy, tmp_path):
    found = _run("values_and_helper", strategy, tmp_path)
    assert found["out"] == [2.0 * i + 1 for i in range(10)]
    assert found["helper_line_recorded"] and found["findings"] == []


def test_triton_language_own_jit_functions_and_tensor_members_run(strategy, tmp_path):
    found = _run("reductions_and_members", strategy, tmp_path)
    assert found["out"] == [sum(range(8 * r, 8 * r + 8)) + 8 * r + 7 for r in range(4)]


def test_an_out_of_bounds_access_is_refused_and_the_arrays_stay_as_they_were(strategy, tmp_path):
    found = _run("out_of_bounds", strategy, tmp_path)
    assert (found["error"], found["arg"], found["out_unchanged"]) == ("KernelMemoryError", "x_ptr", True)
    # the file's first line sets the strategy
    assert found["line"] == KERNELS.splitlines().index("    x = tl.load(x_ptr + offsets)") + 2


@pytest.mark.skipif(
    triton_compat.INTERPRETED_RUN_PER_KERNEL,
    reason="this Triton's interpreter makes `run` per kernel, which autotune and heuristics call: "
    "they reach the stock interpreter",
)
def test_autotune_and_heuristics_wrap_an_interpreted_function(strategy, tmp_path):
    found = _run("autotune_and_heuristics", strategy, tmp_path)
    assert found["out"] == [float(i + 1) for i in range(8)]  # BLOCK 8 (config 1): 8 % 8 == 0
    assert found["grid"] == [1, 1, 1]


def test_the_stock_interpreter_has_its_kernels_back_after_the_session(strategy, tmp_path):
    pytest.importorskip("torch")
    found = _run("stock_after_the_session", strategy, tmp_path)
    assert found["out"] == [2.0 * i + 1 for i in range(10)]
    assert found["restored"] and found["interpreted_only"]
