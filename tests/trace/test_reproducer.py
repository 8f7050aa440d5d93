"""A failing launch written out as a standalone pytest file and run in a fresh process, as a user
on a CPU would run it (TRITON_INTERPRET=1): its tests pass while the planted bug is in the kernel,
and fail once the bug is fixed in the written file, so they do not pass for nothing."""

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import kernel_nb
from kernel_nb.compare.buffers import compare_buffer
from kernel_nb.engine.kernel_globals import kernel_globals
from kernel_nb.trace.compare import Comparison, Tolerance
from kernel_nb.trace.reproducer import write_pytest
from tests.trace import repro_kernels as k


def _interpreted(kernel, grid, *args, **kwargs):
    """The launch kernel_nb records, failed or not, with its globals described."""
    try:
        with kernel_nb.interpret() as session:
            kernel[grid](*args, **kwargs)
    except kernel_nb.KernelError as error:
        launch = error.launch
    else:
        launch = session.trace[0]
    if not launch.kernel_globals:  # the engine fills them in where it does
        launch.kernel_globals = kernel_globals(kernel.fn)
    return launch


def _outcomes(tmp_path, *files):
    """Run the written files with pytest in a child process; per test ("file::name") its outcome
    ("passed", "failed" or "skipped") and message."""
    report = tmp_path / "report.xml"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"]
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    run = subprocess.run(
        [*command, *map(str, files)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert report.exists(), run.stdout + run.stderr
    outcomes = {}
    for case in ET.parse(report).iter("testcase"):
        name = f"{Path(case.get('classname').replace('.', '/')).name}::{case.get('name')}"
        found = [c for c in case if c.tag in ("failure", "error", "skipped")]
        outcome = {"failure": "failed", "error": "failed", "skipped": "skipped"}.get(
            found[0].tag if found else "", "passed"
        )
        outcomes[name] = (outcome, found[0].get("message", "") if found else "")
    return outcomes


def _fixed(test_file, bug, fix):
    """A copy of the written test file with the bug fixed in the kernel's source."""
    text = test_file.read_text()
    assert text.count(bug) == 1
    fixed = test_file.with_name(test_file.stem.replace("_repro", "_fixed") + ".py")
    fixed.write_text(text.replace(bug, fix))
    return fixed


def _constant(test_file, name):
    return re.search(rf"^{name} = (.*)$", test_file.read_text(), re.MULTILINE)[1]


def _floats(n):
    return np.arange(n, dtype=np.float32)


def _row_log_inputs(negative_row):
    """Four rows of six, every other column of a wider array (strides (12, 2)); one row negative."""
    wide = np.ones((4, 12), np.float32) + np.arange(12, dtype=np.float32)
    if negative_row is not None:
        wide[negative_row, ::2] = -1.0
    x = wide[:, ::2]
    return x, np.zeros((4, 6), np.float32), 6, x.strides[0] // 4, x.strides[1] // 4


def _scaled_inputs():
    return np.arange(20, dtype=np.int32) * 300, np.zeros(20, np.int32), 20


# name: kernel, grid, arguments, the finding (kind, the buggy line), the bug and its fix, and
# what the stock test does with the bug ("passed", or "skipped" with the reason)
CASES = {
    "out_of_bounds_load": (
        k.block_sum_kernel,
        (3,),
        lambda: (_floats(20), np.zeros(3, np.float32), 20),
        ("launch_error", "x = tl.load(x_ptr + offsets)"),
        ("tl.load(x_ptr + offsets)", "tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)"),
        "passed",
    ),
    "out_of_bounds_store": (
        k.copy_kernel,
        (3,),
        lambda: (_floats(20), np.zeros(20, np.float32), 20),
        ("launch_error", "tl.store(out_ptr + offsets, x)"),
        ("tl.store(out_ptr + offsets, x)", "tl.store(out_ptr + offsets, x, mask=offsets < n)"),
        "passed",
    ),
    "unmasked_load_masked_store": (
        k.doubled_kernel,
        (3,),
        lambda: (_floats(20), np.zeros(20, np.float32), 20),
        ("launch_error", "x = tl.load(x_ptr + offsets)"),
        ("tl.load(x_ptr + offsets)", "tl.load(x_ptr + offsets, mask=mask)"),
        "passed",
    ),
    "read_before_the_start": (
        k.difference_kernel,
        (3,),
        lambda: (_floats(24), np.zeros(24, np.float32), 24),
        ("launch_error", "previous = tl.load(x_ptr + offsets - 1)"),
        ("tl.load(x_ptr + offsets - 1)", "tl.load(x_ptr + offsets - 1, mask=mask & (offsets > 0))"),
        "passed",
    ),
    "read_past_a_strided_view": (
        k.strided_rows_kernel,
        (4,),
        lambda: _row_log_inputs(negative_row=None),
        ("launch_error", "x = tl.load(x_ptr + row * stride_row + cols * stride_col)"),
        ("cols * stride_col)", "cols * stride_col, mask=cols < n_cols)"),
        "passed",
    ),
    "read_far_past_the_end": (
        k.window_kernel,
        (2,),
        lambda: (_floats(20), np.zeros(16, np.float32), 10_000, 16),
        ("launch_error", "x = tl.load(x_ptr + start + offsets, mask=mask)"),
        ('"start": 10000', '"start": 4'),
        "passed",
    ),
    "nan_in_one_row": (
        k.row_log_kernel,
        (4,),
        lambda: _row_log_inputs(negative_row=2),
        ("nan_origin", "y = tl.log(x)"),
        ("y = tl.log(x)", "y = tl.log(tl.abs(x))"),
        "passed",
    ),
    "device_assert": (
        k.checked_sqrt_kernel,
        (3,),
        lambda: (np.where(_floats(20) == 13, np.float32(-2), _floats(20)), np.zeros(20, np.float32), 20),
        ("launch_error", 'tl.device_assert(x >= 0, "x holds no negative value")'),
        ("tl.device_assert(x >= 0,", "tl.device_assert(x == x,"),
        "passed",
    ),
    "helper_and_global_constant": (
        k.shifted_sqrt_kernel,
        (3,),
        lambda: (_floats(20), np.zeros(20, np.float32), 20),
        ("nan_origin", "root = tl.sqrt(x - OFFSET)"),
        ("OFFSET = tl.constexpr(4.0)", "OFFSET = tl.constexpr(0.0)"),
        "passed",
    ),
    "libdevice_call": (
        k.tanh_kernel,
        (3,),
        lambda: (_floats(20), np.zeros(20, np.float32), 20),
        ("launch_error", "tl.store(out_ptr + offsets, libdevice.tanh(x))"),
        ("libdevice.tanh(x))", "libdevice.tanh(x), mask=offsets < n)"),
        "skipped: the stock interpreter cannot run libdevice calls: run this file on a GPU",
    ),
    "int_overflow": (
        k.scaled_index_kernel,
        (3,),
        _scaled_inputs,
        ("int_overflow", "tl.store(out_ptr + offsets, x * 1000000, mask=offsets < n)"),
        ("x * 1000000", "x.to(tl.int64) * 1000000"),
        "passed",
    ),
    "race": (
        k.last_writer_kernel,
        (3,),
        lambda: (_floats(24), np.zeros(1, np.float32)),
        ("race_write", "tl.store(out_ptr, total)"),
        ("tl.store(out_ptr, total)", "tl.atomic_add(out_ptr, total)"),
        "skipped: a race depends on the order programs run in: fixed in the stock interpreter, free on a GPU",
    ),
}


# the out-of-bounds cases: the argument and element the written file puts a guard page at (the
# nearest of those the access went to: the farthest before a start, the first past an end)
GUARDED = {
    "out_of_bounds_load": ("x_ptr", 20),
    "out_of_bounds_store": ("out_ptr", 20),
    "unmasked_load_masked_store": ("x_ptr", 20),
    "read_before_the_start": ("x_ptr", -1),
    "read_past_a_strided_view": ("x_ptr", 48),
    "read_far_past_the_end": ("x_ptr", 10_000),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_written_file_reproduces_the_bug_and_not_its_fix(tmp_path, case):
    kernel, grid, inputs, (kind, buggy_line), (bug, fix), stock = CASES[case]
    launch = _interpreted(kernel, grid, *inputs(), BLOCK=8)
    assert launch.findings[0].kind == kind
    test_file, npz = write_pytest(launch, tmp_path)
    assert (test_file.name, npz.name) == (f"test_{launch.kernel}_repro.py", f"test_{launch.kernel}_repro.npz")
    # the line the file names is the buggy line of the source it carries
    line = int(_constant(test_file, "_LINE"))
    assert test_file.read_text().splitlines()[line - 1].strip() == buggy_line

    fixed = _fixed(test_file, bug, fix)
    outcomes = _outcomes(tmp_path, test_file, fixed)
    reproduced = outcomes[f"{test_file.stem}::test_stock_triton"]
    assert (reproduced[0] if stock == "passed" else f"{reproduced[0]}: {reproduced[1]}") == stock
    assert outcomes[f"{test_file.stem}::test_kernel_nb"] == ("passed", "")
    assert outcomes[f"{fixed.stem}::test_kernel_nb"][0] == "failed"
    assert outcomes[f"{fixed.stem}::test_stock_triton"][0] == ("failed" if stock == "passed" else "skipped")
    if case in GUARDED:  # the fixed launch ran to its end, reading the elements next to the guard pages
        message = outcomes[f"{fixed.stem}::test_stock_triton"][1].splitlines()[0]
        assert message == (
            "AssertionError: the launch exited with status 0, not killed by SIGSEGV: no access reached a guard page"
        )


# run by a child process on a written file: where _guarded puts the span of the argument the access
# leaves, and what /proc/self/maps says may be done at the bytes of the elements around it
_GUARD_PROBE = """
import importlib.util, json, sys
import numpy as np
import torch

spec = importlib.util.spec_from_file_location("written", sys.argv[1])
written = importlib.util.module_from_spec(spec)
spec.loader.exec_module(written)
arg, element = written._OUT_OF_BOUNDS
with np.load(written.Path(sys.argv[1]).with_name(written._INPUTS)) as saved:
    bits = saved[arg]
span = written._guarded(torch, arg, bits)
np.testing.assert_array_equal(span.numpy(), bits)
maps = [line.split() for line in open("/proc/self/maps")]

def access(k):
    at = [span.data_ptr() + k * bits.itemsize + byte for byte in (0, bits.itemsize - 1)]
    found = {m[1] for a in at for m in maps if int(m[0].split("-")[0], 16) <= a < int(m[0].split("-")[1], 16)}
    return "/".join(sorted(found))

edge = 0 if element < 0 else bits.size - 1
step = -1 if element < 0 else 1
print(json.dumps([access(edge - step), access(edge), access(edge + step), access(element)]))
"""


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads the memory map Linux shows")
@pytest.mark.parametrize("case", list(GUARDED))
def test_the_guard_pages_lie_flush_against_the_span_and_reach_the_access(tmp_path, case):
    kernel, grid, inputs, *_ = CASES[case]
    test_file, _ = write_pytest(_interpreted(kernel, grid, *inputs(), BLOCK=8), tmp_path)
    assert _constant(test_file, "_OUT_OF_BOUNDS") == repr(GUARDED[case]).replace("'", '"')
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    run = subprocess.run(
        [sys.executable, "-c", _GUARD_PROBE, str(test_file)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    # the span's edge element and its neighbour inside are readable and writable; the element past
    # the edge and the element the access went to lie in pages no access may touch
    assert json.loads(run.stdout) == ["rw-p", "rw-p", "---p", "---p"]


def test_a_launch_without_findings_has_nothing_to_reproduce(tmp_path):
    launch = _interpreted(k.row_log_kernel, (4,), *_row_log_inputs(negative_row=None), BLOCK=8)
    assert launch.findings == []
    with pytest.raises(ValueError) as raised:
        write_pytest(launch, tmp_path)
    assert str(raised.value) == "row_log_kernel: the launch has no findings: there is no failure to reproduce"


def test_the_clean_twin_of_the_assert_has_nothing_to_reproduce(tmp_path):
    launch = _interpreted(k.checked_sqrt_kernel, (3,), _floats(20), np.zeros(20, np.float32), 20, BLOCK=8)
    assert launch.findings == []
    with pytest.raises(ValueError, match="the launch has no findings"):
        launch.to_pytest(tmp_path)


def test_to_pytest_writes_the_file_it_is_given(tmp_path):
    launch = _interpreted(k.copy_kernel, (3,), _floats(20), np.zeros(20, np.float32), 20, BLOCK=8)
    test_file, npz = launch.to_pytest(tmp_path / "test_copy.py")
    assert (test_file, npz) == (tmp_path / "test_copy.py", tmp_path / "test_copy.npz")
    assert _constant(test_file, "_INPUTS") == '"test_copy.npz"'
    with np.load(npz) as saved:
        assert sorted(saved) == ["out_ptr", "x_ptr"]
        np.testing.assert_array_equal(saved["x_ptr"].view(np.float32), _floats(20))


def test_a_global_no_file_can_recreate_is_refused(tmp_path):
    launch = _interpreted(k.weighted_copy_kernel, (3,), _floats(20), np.zeros(20, np.float32), 20, BLOCK=8)
    assert launch.findings[0].kind == "launch_error"
    with pytest.raises(ValueError) as raised:
        write_pytest(launch, tmp_path)
    assert str(raised.value) == "weighted_copy_kernel: global WEIGHT cannot be recreated (np.float32(0.5))"
    assert not list(tmp_path.iterdir())


def test_a_buffer_with_negative_strides_is_refused(tmp_path):
    x = _floats(20)[::-1]
    launch = _interpreted(k.block_sum_kernel, (3,), x, np.zeros(3, np.float32), 20, BLOCK=8)
    with pytest.raises(ValueError) as raised:
        write_pytest(launch, tmp_path)
    assert str(raised.value) == (
        "block_sum_kernel: argument x_ptr cannot be exported: torch has no tensor of float32 with strides (-1,)"
    )


def _compared(launch, cpu, gpu_out):
    """`launch` as a compare session leaves it, with `gpu_out` for what the GPU wrote to out_ptr:
    the comparison is made by kernel_nb's own buffer comparison, the GPU's side stands in."""
    before = np.asarray(launch.snapshot["out_ptr"])
    buffer = compare_buffer(
        "out_ptr", before, cpu, gpu_out, shape=cpu.shape, tolerance=Tolerance(rtol=1e-3, atol=1e-5)
    )
    launch.comparison = Comparison(launch=0, kernel=launch.kernel, device="a stand-in", buffers=[buffer])
    return launch


def test_a_gpu_mismatch_is_written_with_the_interpreters_results_and_its_tolerance(tmp_path):
    from kernel_nb.minimize.failure import MISMATCH, Failure

    out = np.zeros(20, np.float32)
    launch = _interpreted(k.checked_sqrt_kernel, (3,), _floats(20), out, 20, BLOCK=8)
    gpu_out = np.sqrt(_floats(20))
    gpu_out[13] += 0.5
    launch = _compared(launch, out, gpu_out)
    finding = Failure.of(launch, MISMATCH).found_in(launch)
    test_file, npz = write_pytest(launch, tmp_path, finding=finding)

    assert _constant(test_file, "_TOLERANCE") == "(0.001, 1e-05)"
    assert _constant(test_file, "_GPU_OPTIONS") == "{}"
    with np.load(npz) as saved:
        assert sorted(saved) == ["expected.out_ptr", "out_ptr", "x_ptr"]
        np.testing.assert_array_equal(saved["expected.out_ptr"].view(np.float32), out)
    outcomes = _outcomes(tmp_path, test_file)
    stock, kernel_nb_test = (
        outcomes[f"{test_file.stem}::{t}"] for t in ("test_stock_triton", "test_kernel_nb")
    )
    assert stock[0] == "skipped" and "the mismatch is the GPU's" in stock[1]
    assert kernel_nb_test[0] == "skipped"

    # the file's own judgement of a GPU's span (red zones about it), as the GPU run would use it
    torch = pytest.importorskip("torch")
    module = _imported(test_file)
    zone = module._RED_ZONE
    memory = torch.full((20 + 2 * zone,), float("nan"))
    memory[zone : zone + 20] = torch.from_numpy(gpu_out)
    assert module._out_of_tolerance(torch, memory) == [13]
    memory[zone + 13] = float(out[13]) * (1 + 5e-4)  # within rtol
    assert module._out_of_tolerance(torch, memory) == []


def _imported(test_file):
    """The written file as a module, imported under the stock interpreter's switch."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(test_file.stem, test_file)
    module = importlib.util.module_from_spec(spec)
    saved = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        spec.loader.exec_module(module)
    finally:
        os.environ.pop("TRITON_INTERPRET") if saved is None else os.environ.__setitem__(
            "TRITON_INTERPRET", saved
        )
    return module
