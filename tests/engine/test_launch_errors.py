"""Launch setup errors: the grid, keywords, missing arguments and the pids selection, each refused
before anything runs with one line naming the kernel; and Ctrl-C at any point of a launch."""

import _thread
import signal
import threading
import time

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb
from kernel_nb.engine import args as engine_args
from kernel_nb.engine import launch as engine_launch
from kernel_nb.engine import memory as engine_memory
from tests.engine import kernels as k


def _inputs():
    x = np.arange(300, dtype=np.float32)
    return x, x + 1, np.full(300, 7.0, np.float32)


def _refused(grid, message, **kwargs):
    x, y, out = _inputs()
    before = [a.copy() for a in (x, y, out)]
    with pytest.raises(kernel_nb.LaunchArgumentError) as info, kernel_nb.interpret() as session:
        k.add_kernel[grid](x, y, out, 300, **({"BLOCK": 128} | kwargs))
    assert str(info.value) == message
    assert info.value.kernel == "add_kernel"
    assert session.launches == []
    for array, saved in zip((x, y, out), before):
        assert array.tobytes() == saved.tobytes()
    return info.value


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        (
            (2.5,),
            "add_kernel: grid (2.5,) has size 2.5 on axis 0, not an int; pass ints, e.g. triton.cdiv(n, BLOCK)",
        ),
        (
            "8",
            "add_kernel: grid '8' is not a tuple of 1 to 3 ints; launch as kernel[(x,)], kernel[(x, y, z)] or kernel[fn]",
        ),
        (
            None,
            "add_kernel: grid None is not a tuple of 1 to 3 ints; launch as kernel[(x,)], kernel[(x, y, z)] or kernel[fn]",
        ),
        (
            (3, "2"),
            "add_kernel: grid (3, '2') has size '2' on axis 1, not an int; pass ints, e.g. triton.cdiv(n, BLOCK)",
        ),
        ((-1,), "add_kernel: grid (-1,) has size -1 on axis 0; sizes are 0 or more"),
        ((1, 1, 1, 1), "add_kernel: grid (1, 1, 1, 1) has 4 axes; a grid has 1 to 3"),
        ((), "add_kernel: grid () has 0 axes; a grid has 1 to 3"),
        (
            (2**31,),
            "add_kernel: grid (2147483648,) has 2147483648 programs on axis 0, more than a GPU launches "
            "(2147483647); put more programs on axis 0 (up to 2147483647) or give each more work",
        ),
        (
            (1, 65536),
            "add_kernel: grid (1, 65536) has 65536 programs on axis 1, more than a GPU launches (65535); "
            "put more programs on axis 0 (up to 2147483647) or give each more work",
        ),
        (
            lambda meta: "abc",
            "add_kernel: the grid function's result 'abc' is not a tuple of 1 to 3 ints; launch as "
            "kernel[(x,)], kernel[(x, y, z)] or kernel[fn]",
        ),
        (
            lambda meta: (meta["BLOCKS"],),
            "add_kernel: the grid function raised KeyError: 'BLOCKS'; it is called with a dict of the "
            "launch's arguments by name (x_ptr, y_ptr, out_ptr, n, BLOCK)",
        ),
    ],
)
def test_bad_grids_are_refused_naming_the_kernel_and_the_grid(grid, message):
    error = _refused(grid, message)
    assert isinstance(error, (TypeError, ValueError))


def test_grids_of_integers_in_any_form_run():
    x, y, out = _inputs()
    with kernel_nb.interpret() as session:
        k.add_kernel[(np.int64(3),)](x, y, out, 300, BLOCK=128)
        k.add_kernel[[3, np.int32(1)]](x, y, out, 300, BLOCK=128)
        k.add_kernel[lambda meta: (300 // meta["BLOCK"] + 1,)](x, y, out, 300, BLOCK=128)
    assert [launch.grid for launch in session.launches] == [(3, 1, 1), (3, 1, 1), (3, 1, 1)]
    assert (out == x + y).all()


def test_a_misspelt_keyword_is_refused_with_the_parameters():
    _refused(
        (3,),
        "add_kernel: keyword BLOKC is neither a parameter nor a launch option; did you mean BLOCK? "
        "pass a parameter (x_ptr, y_ptr, out_ptr, n, BLOCK) or a launch option such as num_warps",
        BLOKC=3,
    )


def test_launch_options_are_taken():
    x, y, out = _inputs()
    with kernel_nb.interpret():
        k.add_kernel[(3,)](x, y, out, 300, BLOCK=128, num_warps=8, num_stages=2, num_ctas=1, maxnreg=128)
    assert (out == x + y).all()


def test_missing_and_surplus_arguments_are_refused():
    x, y, out = _inputs()
    with pytest.raises(kernel_nb.LaunchArgumentError) as info, kernel_nb.interpret():
        k.add_kernel[(3,)](x, y, out, 300)
    assert str(info.value) == (
        "add_kernel: argument BLOCK is missing; pass it (parameters: x_ptr, y_ptr, out_ptr, n, BLOCK)"
    )
    with pytest.raises(kernel_nb.LaunchArgumentError) as info, kernel_nb.interpret():
        k.add_kernel[(3,)](x, y, out, 300, 128, 1)
    assert str(info.value) == (
        "add_kernel: 6 positional arguments for 5 parameters; pass at most 5 "
        "(parameters: x_ptr, y_ptr, out_ptr, n, BLOCK)"
    )
    with pytest.raises(kernel_nb.LaunchArgumentError) as info, kernel_nb.interpret():
        k.add_kernel[(3,)](x, y, out, 300, 128, n=300)
    assert str(info.value) == (
        "add_kernel: argument n is given by position and by keyword; pass it once "
        "(parameters: x_ptr, y_ptr, out_ptr, n, BLOCK)"
    )


def test_a_pids_selection_outside_the_grid_is_refused():
    x, y, out = _inputs()
    with pytest.raises(kernel_nb.LaunchArgumentError) as info, kernel_nb.interpret(pids=((5, 0, 0),)):
        k.add_kernel[(3,)](x, y, out, 300, BLOCK=128)
    assert str(info.value) == (
        "add_kernel: pids (5,0,0) select no program of the grid (3, 1, 1); "
        "select pids (x, y, z) with x < 3, y < 1, z < 1"
    )
    assert (out == 7).all()


def _interrupt_in(seconds):
    threading.Timer(seconds, _thread.interrupt_main).start()


@pytest.mark.parametrize("step", ["bind", "snapshot", "grid"])
def test_ctrl_c_during_setup_is_a_launch_interrupted(monkeypatch, step):
    """Setup steps patched to be slow, so that the interrupt lands in them."""
    originals = {"bind": engine_launch.bind, "grid": engine_launch._resolve_grid}

    def slow(*args, **kwargs):
        time.sleep(5)
        return originals[step](*args, **kwargs)

    if step == "snapshot":
        original_inputs = engine_args.BoundArguments.inputs

        def slow_inputs(self):
            time.sleep(5)
            return original_inputs(self)

        monkeypatch.setattr(engine_args.BoundArguments, "inputs", slow_inputs)
    else:
        monkeypatch.setattr(engine_launch, {"bind": "bind", "grid": "_resolve_grid"}[step], slow)
    x, y, out = _inputs()
    _interrupt_in(0.5)
    with pytest.raises(kernel_nb.LaunchInterrupted) as info, kernel_nb.interpret():
        k.add_kernel[(3,)](x, y, out, 300, BLOCK=128)
    assert str(info.value) == (
        "add_kernel: interrupted before its programs ran or after they stopped; the arrays are unchanged"
    )
    assert (out == 7).all()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_second_ctrl_c_while_the_first_unwinds_is_the_same_launch_interrupted(monkeypatch):
    """The first Ctrl-C stops the programs; the second lands in the launch's clean-up (the
    detectors' finish, made slow) and must not surface as a bare KeyboardInterrupt."""
    from kernel_nb import checks

    finish = checks.finish

    def slow_finish(*args, **kwargs):
        if slow_finish.interrupted:
            _thread.interrupt_main()
            time.sleep(0.5)
        return finish(*args, **kwargs)

    slow_finish.interrupted = False
    monkeypatch.setattr(checks, "finish", slow_finish)
    original = engine_args.BoundArguments.commit
    x, y, out = _inputs()

    def progress(done, total):
        slow_finish.interrupted = True
        _thread.interrupt_main()
        time.sleep(0.5)

    with pytest.raises(kernel_nb.LaunchInterrupted) as info, kernel_nb.interpret(progress=progress):
        k.add_kernel[(3,)](x, y, out, 300, BLOCK=128)
    assert type(info.value) is kernel_nb.LaunchInterrupted
    assert str(info.value).startswith("add_kernel: interrupted at pid=")
    assert str(info.value).endswith("; the arrays are unchanged")
    assert (out == 7).all()
    assert engine_args.BoundArguments.commit is original


@triton.jit
def endless_kernel(out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for _ in range(0, n):
        acc += 1.0
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


@pytest.mark.parametrize("strategy", ["serial", "auto"])
def test_a_burst_of_presses_ends_the_launch_once(strategy):
    """Ctrl-C pressed three times in a row: the first stops the programs; the others land while the
    launch unwinds or just after, and are the same interrupt, not a bare KeyboardInterrupt."""
    out = np.full(64, 7.0, np.float32)

    def press_three_times():
        started = time.monotonic()
        for at in (0.3, 0.32, 0.45):  # the last after the launch has unwound
            time.sleep(max(0.0, started + at - time.monotonic()))
            _thread.interrupt_main()

    presses = threading.Thread(target=press_three_times)
    with pytest.raises(kernel_nb.LaunchInterrupted) as info, kernel_nb.interpret(strategy=strategy):
        presses.start()
        endless_kernel[(2,)](out, 2**62, BLOCK=64)
    presses.join()
    time.sleep(0.05)  # a press left pending would surface here
    assert type(info.value) is kernel_nb.LaunchInterrupted
    assert (out == 7).all()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize("byte_order", ["<", ">"])  # written back by exchange, by a write
def test_ctrl_c_while_results_are_written_back_is_held_until_they_all_are(monkeypatch, byte_order):
    host_access = engine_memory._host_access
    exchange = engine_memory._exchange

    def interrupted_access(lo, hi):
        read, write = host_access(lo, hi)

        def write_then_interrupt(data):
            _thread.interrupt_main()
            time.sleep(0.2)
            write(data)

        return read, write_then_interrupt

    def interrupted_exchange(a, b):
        _thread.interrupt_main()
        time.sleep(0.2)
        exchange(a, b)

    monkeypatch.setattr(engine_memory, "_host_access", interrupted_access)
    monkeypatch.setattr(engine_memory, "_exchange", interrupted_exchange)
    x, y, out = _inputs()
    out = out.astype(f"{byte_order}f4")
    with pytest.raises(kernel_nb.LaunchInterrupted) as info, kernel_nb.interpret():
        k.add_kernel[(3,)](x, y, out, 300, BLOCK=128)
    assert str(info.value) == (
        "add_kernel: interrupted while its results were written back, which was completed first; "
        "the launch finished and the arrays hold its results"
    )
    assert (out == x + y).all()
    assert info.value.launch.status == "ok"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            memoryview(bytearray(1200)),
            "add_kernel: argument x_ptr: a memoryview cannot be passed to a kernel; pass an array over its "
            "bytes, e.g. np.frombuffer(b, np.float32)",
        ),
        (
            np.float32,
            "add_kernel: argument x_ptr: a type cannot be passed to a kernel; make the parameter a "
            "tl.constexpr to pass a function or a type",
        ),
        (
            len,
            "add_kernel: argument x_ptr: a builtin_function_or_method cannot be passed to a kernel; make the "
            "parameter a tl.constexpr to pass a function or a type",
        ),
        (
            ...,
            "add_kernel: argument x_ptr: a ellipsis cannot be passed to a kernel; pass an int, a float or an "
            "array, or make the parameter a tl.constexpr",
        ),
    ],
)
def test_values_no_parameter_takes_are_refused_before_the_kernel_runs(value, message):
    _, y, out = _inputs()
    saved = out.copy()
    with pytest.raises(kernel_nb.LaunchArgumentError) as info, kernel_nb.interpret():
        k.add_kernel[(3,)](value, y, out, 300, BLOCK=128)
    assert str(info.value) == message
    assert out.tobytes() == saved.tobytes()


def test_a_decimal_scalar_is_refused_with_what_to_pass():
    x, y, out = _inputs()
    with pytest.raises(kernel_nb.LaunchArgumentError) as info, kernel_nb.interpret():
        k.add_kernel[(3,)](x, y, out, __import__("decimal").Decimal(300), BLOCK=128)
    assert str(info.value) == (
        "add_kernel: argument n: a Decimal cannot be passed to a kernel; pass int(x) or float(x)"
    )


def test_a_numpy_integer_for_a_constexpr_runs_as_its_value():
    x, y, out = _inputs()
    with kernel_nb.interpret():
        k.add_kernel[(3,)](x, y, out, 300, BLOCK=np.int64(128))
    np.testing.assert_array_equal(out, x + y)


def test_a_number_used_as_a_pointer_is_named_on_the_failing_line(strategy):
    _, y, out = _inputs()
    saved = out.copy()
    with (
        pytest.raises(kernel_nb.KernelError) as info,
        kernel_nb.interpret(kernel_nb.Options(strategy=strategy)),
    ):
        k.add_kernel[(3,)](7, y, out, 300, BLOCK=128)
    text = str(info.value)
    assert text.startswith("add_kernel:")
    assert text.endswith("; on this line x_ptr is 7 (an int scalar), not an array")
    assert "\n" not in text
    assert out.tobytes() == saved.tobytes()


def test_a_zero_d_array_for_a_scalar_is_named_on_the_failing_line():
    x, y, out = _inputs()
    saved = out.copy()
    with pytest.raises(kernel_nb.KernelError) as info, kernel_nb.interpret():
        k.add_kernel[(3,)](x, y, out, np.array(300, np.int32), BLOCK=128)
    assert str(info.value).endswith(
        "; on this line n is a 0-d int32 array, which the kernel receives as a pointer (pass int(x) or "
        "float(x) for a number)"
    )
    assert out.tobytes() == saved.tobytes()
