"""The memory guard, kernel errors, device_assert, prints and interrupts."""

import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb
from tests.engine import kernels as k
from tests.engine.kernels import add_kernel_no_mask

LOAD_LINE = add_kernel_no_mask.fn.__code__.co_firstlineno + 4  # x = tl.load(x_ptr + offsets)


def test_out_of_bounds_load_is_refused_with_a_clear_error():
    x, y = np.ones(1000, np.float32), np.ones(1000, np.float32)
    out = np.full(1000, 7.0, np.float32)
    with kernel_nb.interpret() as session, pytest.raises(kernel_nb.KernelMemoryError) as info:
        k.add_kernel_no_mask[(8,)](x, y, out, 1000, BLOCK=128)
    assert str(info.value) == (
        f"add_kernel_no_mask:{LOAD_LINE} pid=(7,0,0): tl.load of x_ptr reads elements [1000, 1024) but x_ptr "
        "has 1000 (24 of 128 active lanes out of bounds: lanes[104:128]); add a mask, e.g. mask=offsets < n"
    )
    error = info.value
    assert (error.kernel, error.line, error.pid) == ("add_kernel_no_mask", LOAD_LINE, (7, 0, 0))
    assert error.source_line.strip() == "x = tl.load(x_ptr + offsets)"
    # nothing was committed: programs 0..6 ran, but the caller's array is as it was
    np.testing.assert_array_equal(out, 7.0)
    launch = session.trace[0]
    assert launch.status == "error" and len(launch.programs) == 8
    assert launch.buffers["x_ptr"].oob == [(7, LOAD_LINE, 1000)]


def test_masked_lanes_that_still_escape_are_reported():
    x = np.ones(100, np.float32)
    out = np.zeros(100, np.float32)
    with kernel_nb.interpret(), pytest.raises(kernel_nb.KernelMemoryError, match="check the mask's bound"):
        k.copy_kernel[(1,)](x, out, 200, BLOCK=128)  # n larger than the arrays


def test_wild_pointer_does_not_kill_the_process(tmp_path):
    # a far-away address would crash the stock interpreter: run it in a child process to prove it lives
    code = textwrap.dedent(
        """
        import numpy as np, triton, triton.language as tl, kernel_nb

        @triton.jit
        def wild(x_ptr, n):
            tl.store(x_ptr + n, 1.0)

        x = np.zeros(4, np.float32)
        try:
            with kernel_nb.interpret():
                wild[(1,)](x, 1 << 40)
        except kernel_nb.KernelMemoryError as e:
            print("refused:", e)
        print("alive", x.sum())
        """
    )
    script = tmp_path / "wild.py"
    script.write_text(code)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "refused: wild:" in done.stdout and "tl.store of x_ptr writes element 1099511627776" in done.stdout
    assert "alive 0.0" in done.stdout


def test_exception_in_kernel_names_kernel_line_and_pid():
    x = np.ones(10, np.float32)
    with kernel_nb.interpret(), pytest.raises(kernel_nb.KernelError) as info:
        k.add_kernel[(1,)](x, x, x, 10, BLOCK=12)  # arange needs a power of two
    error = info.value
    assert error.kernel == "add_kernel" and error.pid == (0, 0, 0)
    assert error.line == k.add_kernel.fn.__code__.co_firstlineno + 3
    assert str(error).startswith(f"add_kernel:{error.line} pid=(0,0,0): ")
    assert "power of 2" in str(error) or "power of two" in str(error)


def test_device_assert():
    x = np.ones(256, np.float32)
    x[130] = -1
    with kernel_nb.interpret(), pytest.raises(kernel_nb.KernelAssertionError) as info:
        k.assert_kernel[(2,)](x, 256, BLOCK=128)
    line = k.assert_kernel.fn.__code__.co_firstlineno + 4
    assert str(info.value) == (
        f"assert_kernel:{line} pid=(1,0,0): device_assert failed: x must be non-negative (lanes 2; 1 of 128)"
    )


def test_prints_are_captured_per_program_and_still_shown(capsys):
    x = np.arange(8, dtype=np.float32)
    with kernel_nb.interpret() as session:
        k.print_kernel[(2,)](x, BLOCK=4)
    shown = capsys.readouterr().out
    launch = session.trace[0]
    assert "program [1]" in launch.programs[(1, 0, 0)].stdout
    assert "program [0]" not in launch.programs[(1, 0, 0)].stdout
    assert "[4. 5. 6. 7.]" in launch.programs[(1, 0, 0)].stdout
    assert "program [0]" in shown and "program [1]" in shown


@pytest.mark.parametrize("strategy", ["serial", "auto"])
def test_keyboard_interrupt_leaves_arrays_untouched(strategy):
    x = np.ones(64 * 50, np.float32)
    out = np.full_like(x, 3.0)
    calls = []

    def interrupt(done, total):
        calls.append(done)
        raise KeyboardInterrupt  # as the stop button does, after some programs have run

    with (
        kernel_nb.interpret(progress=interrupt, strategy=strategy) as session,
        pytest.raises(kernel_nb.LaunchInterrupted) as info,
    ):
        k.copy_kernel[(50,)](x, out, x.size, BLOCK=64)
    np.testing.assert_array_equal(out, 3.0)
    assert isinstance(info.value, KeyboardInterrupt)
    assert session.trace[0].status == "interrupted"
    assert calls == [1 if strategy == "serial" else 50]


class _InterruptedLength:
    """A shape whose length is asked of Python code, where Ctrl-C lands: numpy turns it into a TypeError."""

    def __len__(self):
        signal.raise_signal(signal.SIGINT)
        return 1

    def __getitem__(self, i):
        if i > 0:
            raise IndexError(i)
        return 1


def _interrupted_inside_numpy():
    return np.empty(_InterruptedLength())


@triton.jit
def numpy_interrupted_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    if tl.program_id(0) == 3:
        _interrupted_inside_numpy()  # plain Python, run by the interpreter
    tl.store(out_ptr + offsets, x + 1)


def test_an_interrupt_that_numpy_turns_into_a_type_error_still_interrupts(strategy):
    with pytest.raises(TypeError, match="expected a sequence of integers"):
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _interrupted_inside_numpy()  # what numpy makes of it outside a launch
    x = np.ones(64 * 8, np.float32)
    out = np.full_like(x, 3.0)
    with (
        kernel_nb.interpret(strategy=strategy) as session,
        pytest.raises(kernel_nb.LaunchInterrupted, match="numpy_interrupted_kernel: interrupted at pid="),
    ):
        numpy_interrupted_kernel[(8,)](x, out, BLOCK=64)
    np.testing.assert_array_equal(out, 3.0)
    assert session.trace[0].status == "interrupted"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_failing_progress_callback_is_not_reported_as_a_kernel_error():
    def broken(done, total):
        raise RuntimeError("progress callback broke")

    x = np.ones(64, np.float32)
    with (
        kernel_nb.interpret(progress=broken),
        pytest.raises(RuntimeError, match=r"^progress callback broke$"),
    ):
        k.copy_kernel[(1,)](x, np.zeros_like(x), 64, BLOCK=64)
