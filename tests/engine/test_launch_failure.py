"""A failed launch holds its error as its first finding: kind, program, line, argument and loop
iteration, in both strategies (the batched one gives a failing launch to the serial one)."""

import pickle
from pathlib import Path

import numpy as np
import pytest

import kernel_nb
from kernel_nb.errors import KernelCompileError
from kernel_nb.trace import Finding, Trace
from tests.engine import failing_kernels as k

FILE = k.__file__.removesuffix("c")


def _line(text: str) -> int:
    lines = Path(FILE).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def _failed(launch, *args, **kwargs):
    """Run one launch that must fail; return the error and the session's launch."""
    with pytest.raises(kernel_nb.KernelError) as info, kernel_nb.interpret(**kwargs) as session:
        launch(*args)
    [failed] = session.trace.launches
    assert info.value.launch is failed
    assert failed.status == "error"
    return info.value, failed


def test_an_out_of_bounds_load_in_a_loop_is_the_first_finding():
    src = np.arange(46, dtype=np.float32)  # the last row of a 4x12 matrix is two elements short
    src[1] = np.nan  # program 0 loads a NaN: a finding of the programs that ran before the error
    dst = np.zeros(48, np.float32)
    before = dst.copy()

    error, launch = _failed(lambda: k.row_blocks_kernel[(4,)](src, dst, 12, 12, 1, BLOCK=4))

    line = _line("tile = tl.load(src")
    # the guard's own words after the location are its tests' to pin down; the finding carries them whole
    message = str(error)
    assert message.startswith(f"row_blocks_kernel:{line} pid=(3,0,0): tl.load of src_ptr reads ")
    assert (error.pid, error.line, error.iteration) == ((3, 0, 0), line, (2,))
    first, *rest = launch.findings
    assert (first.kind, first.severity, first.message) == (
        "launch_error",
        "error",
        f"KernelMemoryError: {message}",
    )
    assert (first.launch, first.pid, first.file, first.line, first.arg, first.iteration) == (
        0,
        (3, 0, 0),
        FILE,
        line,
        "src_ptr",
        (2,),
    )
    assert [f.kind for f in rest] == ["nan_origin"]
    assert rest[0].iteration is None  # the detectors' findings say no iteration
    assert dst.tobytes() == before.tobytes()


def test_the_clean_twin_has_no_findings():
    src = np.arange(48, dtype=np.float32)
    dst = np.zeros(48, np.float32)
    with kernel_nb.interpret() as session:
        k.row_blocks_kernel[(4,)](src, dst, 12, 12, 1, BLOCK=4)
    assert session.trace[0].status == "ok"
    assert session.trace[0].findings == []
    assert (dst == src).all()


def test_a_failed_device_assert_names_the_program_and_the_iteration():
    x = np.repeat(np.array([-5.0, 1.0], np.float32), 4)  # program 1 reaches 3.0 in its second step
    out = np.zeros(8, np.float32)

    error, launch = _failed(lambda: k.assert_in_loop_kernel[(2,)](x, out, 3.0, STEPS=5, BLOCK=4))

    line = _line('tl.device_assert(acc < limit, "acc stays below the limit")')
    [first] = launch.findings
    assert first.message == f"KernelAssertionError: {error}"
    assert str(error).startswith(
        f"assert_in_loop_kernel:{line} pid=(1,0,0): device_assert failed: acc stays below the limit"
    )
    assert (first.pid, first.line, first.arg, first.iteration) == ((1, 0, 0), line, None, (1,))
    assert error.iteration == (1,)
    assert not out.any()


def test_a_failure_in_a_helper_has_the_helpers_line_and_the_kernels_iteration():
    x = np.zeros(8, np.float32)
    out = np.zeros(8, np.float32)

    _, launch = _failed(lambda: k.helper_in_loop_kernel[(2,)](x, out, 3.0, STEPS=5, BLOCK=4))

    first = launch.findings[0]
    assert first.message.startswith(
        f"KernelAssertionError: helper_in_loop_kernel:{_line('x below the limit')} pid=(0,0,0): "
    )
    assert (first.kind, first.pid, first.line, first.iteration) == (
        "launch_error",
        (0, 0, 0),
        _line("x below the limit"),
        (2,),
    )


def test_an_exception_outside_loops_has_the_empty_iteration():
    x = np.zeros(8, np.float32)
    out = np.zeros(8, np.float32)

    error, launch = _failed(lambda: k.raising_kernel[(2,)](x, out, BLOCK=4))

    line = _line("y = x + tl.zeros")
    assert isinstance(error, KernelCompileError)
    [first] = launch.findings
    assert first.message == f"KernelCompileError: {error}"
    assert str(error).startswith(
        f"raising_kernel:{line} pid=(0,0,0): ValueError: Cannot make_shape_compatible"
    )
    assert (first.pid, first.line, first.arg, first.iteration) == ((0, 0, 0), line, None, ())


def test_without_capture_the_iteration_is_not_known():
    src = np.arange(46, dtype=np.float32)
    dst = np.zeros(48, np.float32)

    error, launch = _failed(lambda: k.row_blocks_kernel[(4,)](src, dst, 12, 12, 1, BLOCK=4), capture=False)

    assert error.iteration is None
    first = launch.findings[0]
    assert (first.kind, first.pid, first.arg, first.iteration) == ("launch_error", (3, 0, 0), "src_ptr", None)


def test_the_error_finding_is_saved_and_loaded(tmp_path):
    src = np.arange(46, dtype=np.float32)
    dst = np.zeros(48, np.float32)
    _, launch = _failed(lambda: k.row_blocks_kernel[(4,)](src, dst, 12, 12, 1, BLOCK=4))

    Trace([launch]).save(tmp_path / "failed.knb")
    [loaded] = Trace.load(tmp_path / "failed.knb")

    assert loaded.status == "error"
    assert loaded.findings[0].kind == "launch_error"
    assert loaded.findings[0].iteration == (2,)


def test_findings_saved_before_the_iteration_field_load_with_none():
    old = Finding("nan_origin", "warning", "k:3 pid=(0,0,0): x is NaN", 0, (0, 0, 0), "k.py", 3)
    del old.__dict__["iteration"]  # as a finding pickled before the field existed
    assert pickle.loads(pickle.dumps(old)).iteration is None


def test_a_pickled_error_keeps_its_iteration():
    error = kernel_nb.KernelMemoryError(
        "k:3 pid=(1,0,0): refused", kernel="k", line=3, pid=(1, 0, 0), iteration=(4,)
    )
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), copy.pid, copy.iteration) == (
        kernel_nb.KernelMemoryError,
        str(error),
        (1, 0, 0),
        (4,),
    )
