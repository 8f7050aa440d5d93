"""kernel_nb.minimize: planted bugs shrink to a handful of programs and small inputs, each step a
real launch that fails the same way."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from xml.etree import ElementTree

import numpy as np
import pytest
import triton

import kernel_nb
from kernel_nb.minimize import Failure, LaunchSpec
from kernel_nb.minimize.moves import shrink_sizes, smaller_sizes
from kernel_nb.trace import LAUNCH_ERROR, Finding, Trace
from tests.minimize import kernels as k


def _line_of(kernel, text: str) -> int:
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _shrunk(result, programs: int, elements: int) -> None:
    assert result.launch.num_programs <= programs
    assert sum(a.size for a in result.arguments.values() if isinstance(a, np.ndarray)) <= elements
    assert not result.timed_out


def test_an_out_of_bounds_load_at_the_last_program_shrinks_to_one_program():
    launch = k.out_of_bounds_at_the_last_program()
    [error] = [f for f in launch.findings if f.kind == LAUNCH_ERROR]
    assert launch.num_programs == 257 and error.pid == (256, 0, 0) and error.arg == "x_ptr"

    result = kernel_nb.minimize(launch, progress=False)

    _shrunk(result, programs=1, elements=6)
    kept = result.finding
    assert kept.kind == LAUNCH_ERROR and kept.line == error.line and kept.arg == "x_ptr"
    assert kept.message.startswith("KernelMemoryError: add_unmasked_x:")
    # the arguments are the smallest launch's: n matches the arrays, the grid their blocks
    n, block = result.arguments["n"], result.arguments["BLOCK"]
    assert result.arguments["x_ptr"].shape == (n,) and result.grid == (-(-n // block), 1, 1)
    assert result.steps and result.launches_run >= len(result.steps)
    # the launch it started from is left as it was
    assert launch.num_programs == 257 and launch.snapshot["x_ptr"].shape == (4096 * 64 + 7,)


def test_each_step_is_a_real_launch_that_fails_the_same_way():
    result = kernel_nb.minimize(k.out_of_bounds_at_the_last_program(), progress=False)
    spec = LaunchSpec(
        k.add_unmasked_x,
        result.grid,
        {"x_ptr": "buffer", "y_ptr": "buffer", "out_ptr": "buffer", "n": "scalar", "BLOCK": "constexpr"},
        result.arguments,
        ((), (), ()),
    )
    again = spec.run(kernel_nb.Options())
    assert again is not None and result.failure.found_in(again) is not None
    # and the clean twin of the kernel does not fail on those arguments
    clean = LaunchSpec(k.add_masked, *(getattr(spec, f) for f in ("grid", "kinds", "values", "formulas")))
    ran = clean.run(kernel_nb.Options())
    assert ran is not None and ran.status == "ok" and result.failure.found_in(ran) is None


def test_a_grid_function_of_the_arguments_gives_the_smaller_grids():
    result = kernel_nb.minimize(k.out_of_bounds_at_the_last_program(grid_function=True), progress=False)
    _shrunk(result, programs=1, elements=12)


def test_a_race_shrinks_to_the_two_programs_that_race():
    launch = k.race_between_neighbours()
    assert launch.findings[0].kind == "race_write" and launch.num_programs == 128

    result = kernel_nb.minimize(launch, progress=False)

    _shrunk(result, programs=2, elements=4)
    assert result.finding.kind == "race_write" and result.finding.line == launch.findings[0].line


def test_a_smaller_block_takes_its_sizes_along():
    # two programs race on a bin whatever their block: the block shrinks with n, programs stay two
    launch = k.histogram_race()
    assert launch.findings[-1].kind == "race_write" and launch.num_programs == 64

    result = kernel_nb.minimize(launch, progress=False)

    _shrunk(result, programs=2, elements=3)
    assert (result.arguments["BLOCK"], result.arguments["n"], result.arguments["BINS"]) == (1, 2, 1)
    assert any(step.startswith("BLOCK: 64 → 1, n: ") for step in result.steps)


def test_nan_made_in_one_row_shrinks_to_that_row():
    launch = k.nan_from_one_row()
    [nan] = [f for f in launch.findings if f.kind == "nan_origin"]
    assert nan.pid == (300, 0, 0)

    result = kernel_nb.minimize(launch, progress=False)

    _shrunk(result, programs=1, elements=2)
    assert result.finding.kind == "nan_origin" and result.finding.line == nan.line
    # the row that makes the NaN is the one kept: its log is of a negative number
    assert (result.arguments["x_ptr"] < 0).any()


def test_what_to_keep_can_be_named():
    launch = k.nan_from_one_row(rows=8, cols=40, bad=(5, 3))
    by_kind = kernel_nb.minimize(launch, "nan_origin", progress=False)
    by_finding = kernel_nb.minimize(launch, launch.findings[0], progress=False)
    assert by_kind.finding.kind == by_finding.finding.kind == "nan_origin"

    def has_nan(candidate):
        return any(f.kind == "nan_origin" for f in candidate.findings)

    by_test = kernel_nb.minimize(launch, has_nan, progress=False)
    assert by_test.launch.num_programs == 1 and has_nan(by_test.launch)
    with pytest.raises(ValueError, match="no finding of kind 'race_write'"):
        kernel_nb.minimize(launch, "race_write", progress=False)


def test_a_launch_that_does_not_fail_has_nothing_to_keep():
    x = np.ones(100, np.float32)
    launch = k.interpreted(lambda: k.add_masked[(1,)](x, x, np.zeros_like(x), 100, BLOCK=128))
    with pytest.raises(ValueError, match="has no finding: there is nothing to keep"):
        kernel_nb.minimize(launch, progress=False)


def test_a_loaded_trace_cannot_run_again(tmp_path):
    launch = k.race_between_neighbours(n=512)
    Trace([launch]).save(tmp_path / "t.knb")
    loaded = Trace.load(tmp_path / "t.knb")[0]
    with pytest.raises(ValueError, match="holds no kernel to run again"):
        kernel_nb.minimize(loaded, progress=False)


def test_the_time_limit_gives_the_smallest_launch_so_far():
    launch = k.out_of_bounds_at_the_last_program()
    result = kernel_nb.minimize(launch, time_limit=0.0, progress=False)
    assert result.timed_out and result.launch is launch and result.steps == []
    assert "stopped at the time limit" in result.summary()


def test_progress_tells_each_step():
    lines: list[str] = []
    result = kernel_nb.minimize(k.nan_from_one_row(rows=16, cols=40, bad=(9, 3)), progress=lines.append)
    line = _line_of(k.row_log_sum, "logs = tl.log(x)")
    assert (
        lines[0]
        == f"minimize row_log_sum: keeping nan_origin at line {line}, from 16 programs, 656 array elements"
    )
    assert len(lines) == len(result.steps) + 2 and lines[-1] == result.summary()


def test_an_array_that_is_a_view_is_launched_again_with_its_layout():
    # column sums of a transposed view, one row too many: only the last column reads past the
    # array's memory, which its layout alone decides
    x = np.random.default_rng(2).random((64, 48), dtype=np.float32).T  # (48, 64), strides (1, 48)
    out = np.zeros(64, np.float32)
    launch = k.interpreted(lambda: k.column_sums[(64,)](x, out, 49, 1, 48, BLOCK=64))
    error = launch.findings[0]
    assert error.kind == LAUNCH_ERROR and error.pid == (63, 0, 0)

    spec = LaunchSpec.of(launch)
    np.testing.assert_array_equal(spec.values["x_ptr"], x)
    assert spec.values["x_ptr"].strides == x.strides
    again = spec.run(kernel_nb.Options())
    assert again is not None and Failure.of(launch).found_in(again) is not None
    assert kernel_nb.minimize(launch, progress=False).finding.pid == (63, 0, 0)


def test_smaller_sizes_keep_the_remainder_of_each_power_of_two():
    sizes = smaller_sizes(1031)
    assert sizes[:4] == [1, 2, 3, 4] and 1030 not in sizes and sizes[-1] < 1031
    assert 7 + 1024 not in sizes and 7 + 512 in sizes and 515 in sizes and sizes == sorted(set(sizes))


def test_a_failure_matches_kind_line_error_class_and_argument():
    launch = k.out_of_bounds_at_the_last_program(n=1024 * 4 + 3)
    failure = Failure.of(launch)
    assert (failure.kind, failure.error, failure.arg) == (LAUNCH_ERROR, "KernelMemoryError", "x_ptr")
    assert failure.describe() == f"KernelMemoryError at line {failure.line} on x_ptr"
    assert failure.found_in(launch) is launch.findings[0]
    assert failure.found_in(k.race_between_neighbours(n=512)) is None


def test_the_grid_is_found_from_sizes_and_blocks():
    n = 4096 * 3 + 5
    launch = k.out_of_bounds_at_the_last_program(n=n)
    spec = LaunchSpec.of(launch)
    assert spec.grid == (triton.cdiv(n, 1024), 1, 1)
    assert spec.formulas[0][0] == ((("scalar", "n", 0), ("constexpr", "BLOCK", 0)),)
    smaller = spec.with_values({"n": 100, "BLOCK": 16})
    assert smaller.grid == (7, 1, 1)


def test_ctrl_c_gives_the_smallest_launch_so_far():
    launch = k.nan_from_one_row(rows=64, cols=40, bad=(9, 3))
    judged = []

    def has_nan_until_interrupted(candidate):
        judged.append(candidate.num_programs)
        if len(judged) == 4:
            raise KeyboardInterrupt
        return any(f.kind == "nan_origin" for f in candidate.findings)

    result = kernel_nb.minimize(launch, has_nan_until_interrupted, progress=False)
    assert result.interrupted and not result.timed_out and len(judged) == 4
    assert result.launch.num_programs <= 64 and "interrupted" in result.summary()


@pytest.mark.parametrize(
    ("planted", "bug", "fix", "stock"),
    [
        (
            k.out_of_bounds_at_the_last_program,
            "x = tl.load(x_ptr + offsets)",
            "x = tl.load(x_ptr + offsets, mask=mask)",
            "passed",
        ),
        (k.nan_from_one_row, "logs = tl.log(x)", "logs = tl.log(tl.abs(x))", "passed"),
        (k.race_between_neighbours, "pid * (BLOCK // 2)", "pid * BLOCK", "skipped"),
    ],
    ids=["out_of_bounds", "nan", "race"],
)
def test_the_smallest_launch_as_a_test_file_fails_for_the_same_reason(tmp_path, planted, bug, fix, stock):
    result = kernel_nb.minimize(planted(), progress=False)
    test_file, inputs = result.to_pytest(tmp_path)
    with np.load(inputs) as saved:
        assert sum(saved[name].size for name in saved.files) <= 8
    fixed = test_file.with_name("test_fixed.py")
    fixed.write_text(test_file.read_text().replace(bug, fix))
    assert fixed.read_text() != test_file.read_text()

    outcomes = _outcomes(tmp_path, test_file, fixed)

    # under stock TRITON_INTERPRET=1 the small launch fails as the large one did (a race cannot
    # show in the interpreter's order: skipped, saying so); once fixed, the tests fail
    assert outcomes[f"{test_file.stem}::test_stock_triton"][0] == stock
    assert outcomes[f"{test_file.stem}::test_kernel_nb"] == ("passed", "")
    assert outcomes["test_fixed::test_kernel_nb"][0] == "failed"
    assert outcomes["test_fixed::test_stock_triton"][0] == ("failed" if stock == "passed" else stock)


def _outcomes(tmp_path, *files):
    """Run the files with pytest in a child process under TRITON_INTERPRET=1: per test
    ("stem::name") its outcome and message."""
    report = tmp_path / "report.xml"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"]
    run = subprocess.run(
        [*command, *map(str, files)],
        cwd=tmp_path,
        env={**os.environ, "TRITON_INTERPRET": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.exists(), run.stdout + run.stderr
    outcomes = {}
    for case in ElementTree.parse(report).iter("testcase"):
        found = [c for c in case if c.tag in ("failure", "error", "skipped")]
        outcome = {"failure": "failed", "error": "failed", "skipped": "skipped"}.get(
            found[0].tag if found else "", "passed"
        )
        name = f"{case.get('classname').split('.')[-1]}::{case.get('name')}"
        outcomes[name] = (outcome, found[0].get("message", "") if found else "")
    return outcomes


def test_arrays_are_cut_around_the_element_a_finding_names():
    # as a GPU mismatch names them: the elements out of tolerance, and their writer
    n = 1 << 16
    x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    launch = k.interpreted(lambda: k.add_masked[(n // 1024,)](x, y, np.zeros_like(x), n, BLOCK=1024))
    spec = LaunchSpec.of(launch)
    named = Finding(
        kind="gpu_mismatch",
        severity="error",
        message="",
        arg="out_ptr",
        pid=(48, 0, 0),
        elements=np.array([50001]),
    )

    what, first = next(shrink_sizes(spec, named))

    assert what == "n: 65536 → 1 (arrays from element 50001)"
    assert first.values["x_ptr"].tolist() == [50001.0] and first.values["n"] == 1 and first.grid == (1, 1, 1)


def test_a_gpu_mismatch_is_kept_only_by_a_launch_the_interpreter_finished():
    # a replayed recording whose output differs at one element is a launch out of tolerance, as
    # a compare session's is; a smaller candidate whose interpreted run stopped (an access out of
    # bounds) fails another way, whatever the GPU read there
    from kernel_nb.record import record

    x, y, out = np.arange(64, dtype=np.float32), np.ones(64, np.float32), np.zeros(64, np.float32)
    with kernel_nb.interpret(), record() as recording:
        k.add_masked[(2,)](x, y, out, 64, BLOCK=32)
    [recorded] = recording
    recorded.outputs[recorded.leaves[2].region].view(np.float32)[40] = -1.0
    launch = recorded.replay()
    failure = Failure.of(launch, "gpu_mismatch")
    found = failure.found_in(launch)
    assert found is not None and found.arg == "out_ptr" and found.elements.tolist() == [40]
    launch.status = "error"
    assert failure.found_in(launch) is None
