"""%%tkernel and %tkernel driven through an IPython shell, as a notebook cell would drive them."""

from __future__ import annotations

import _thread
import dataclasses
import importlib.util
import io
import pdb
import signal
import sys
import threading

import numpy as np
import pytest
import triton
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from tkernel_support import KERNELS, line_of

import kernel_nb
from kernel_nb import KernelError, KernelMemoryError, LaunchInterrupted, Trace
from kernel_nb.magic import TKernelMagics
from kernel_nb.options import format_bytes, parse_bytes
from kernel_nb.progress import Progress

ADD = "add_kernel[(4,)](x, y, out, 1000, BLOCK=256)"


def run(ip: InteractiveShell, source: str):
    return ip.run_cell(source, store_history=True)


def test_vector_add_runs_in_the_engine_and_binds_the_trace(ip, monkeypatch):
    shown: list[object] = []
    monkeypatch.setattr("kernel_nb.magic.cell_viewers.display", shown.append)

    result = run(ip, f"%%tkernel interpret\n{ADD}")

    assert result.error_in_exec is None
    ns = ip.user_ns
    np.testing.assert_array_equal(ns["out"], ns["x"] + ns["y"])
    trace = ns["_tk"]
    assert isinstance(trace, Trace)
    assert [launch.kernel for launch in trace] == ["add_kernel"]
    assert trace[0].grid == (4, 1, 1)
    np.testing.assert_array_equal(trace[0].value(1, "offsets"), np.arange(256, 512))
    np.testing.assert_array_equal(trace[0].value((3, 0, 0), "mask"), np.arange(768, 1024) < 1000)
    [viewer] = shown
    assert viewer is trace or type(viewer).__name__ == "TraceViewer"


def test_name_binds_the_trace_too_and_quiet_displays_nothing(ip, monkeypatch, capsys):
    shown: list[object] = []
    monkeypatch.setattr("kernel_nb.magic.cell_viewers.display", shown.append)

    result = run(ip, f"%%tkernel interpret --quiet --name tr\n{ADD}")

    assert result.error_in_exec is None
    assert ip.user_ns["tr"] is ip.user_ns["_tk"]
    assert shown == []
    assert capsys.readouterr() == ("", "")


def test_the_last_expression_is_the_cell_output(ip):
    result = run(ip, f"%%tkernel interpret --quiet\n{ADD}\nout[:3]")

    np.testing.assert_array_equal(result.result, [1.0, 2.0, 3.0])


def test_two_launches_in_one_cell(ip):
    result = run(
        ip, f"%%tkernel interpret --quiet\n{ADD}\nscale_kernel[(4,)](out, out, 1000, 2.0, BLOCK=256)"
    )

    assert result.error_in_exec is None
    assert [launch.kernel for launch in ip.user_ns["_tk"]] == ["add_kernel", "scale_kernel"]
    np.testing.assert_array_equal(ip.user_ns["out"], 2 * (ip.user_ns["x"] + 1))


def test_a_kernel_defined_in_the_magic_cell_reports_lines_as_the_editor_shows_them(ip, capsys):
    cell = """%%tkernel interpret

@triton.jit
def broken_kernel(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets) + tl.zeros((2 * BLOCK,), tl.float32)

broken_kernel[(1,)](x, BLOCK=8)
"""
    result = run(ip, cell)

    error = result.error_in_exec
    assert isinstance(error, KernelError)
    assert error.kernel == "broken_kernel"
    assert error.line == line_of(cell, "x = tl.load") == 6
    assert "line 6, in broken_kernel" in capsys.readouterr().out


def test_an_exception_in_a_kernel_fails_the_cell_at_the_kernel_line(ip, capsys):
    result = run(ip, "%%tkernel interpret\nshape_kernel[(4,)](x, out, 1000, BLOCK=256)")

    error = result.error_in_exec
    assert isinstance(error, KernelError)
    assert (error.kernel, error.pid) == ("shape_kernel", (0, 0, 0))
    assert error.line == line_of(KERNELS, "tl.zeros((2 * BLOCK,)")
    shown = capsys.readouterr().out
    # IPython shows the kernel's line, not the frames of the magic and the engine.
    assert "x = tl.load(x_ptr + offsets, mask=offsets < n) + tl.zeros((2 * BLOCK,), tl.float32)" in shown
    assert "Cannot make_shape_compatible" in shown
    assert "kernel_nb/engine" not in shown
    assert ip.user_ns["_tk"][0].status == "error"


def test_out_of_bounds_fails_the_cell_and_leaves_the_arrays_unchanged(ip, capsys):
    result = run(ip, "%%tkernel interpret\nunmasked_kernel[(4,)](x, out, BLOCK=256)")

    error = result.error_in_exec
    assert isinstance(error, KernelMemoryError)
    assert (error.kernel, error.pid) == ("unmasked_kernel", (3, 0, 0))
    assert str(error).startswith(
        f"unmasked_kernel:{line_of(KERNELS, 'x = tl.load(x_ptr + offsets)')} pid=(3,0,0): tl.load of x_ptr reads elements [1000, 1024)"
    )
    assert not ip.user_ns["out"].any()
    assert "KernelMemoryError" in capsys.readouterr().out
    assert run(ip, "1 + 1").result == 2


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("interpret --bogus", "unrecognized arguments: --bogus"),
        ("frobnicate", "argument mode: invalid choice: 'frobnicate'"),
        ("interpret --pids x", "argument --pids: cannot read program selection 'x'"),
        ("interpret --budget 12Q", "argument --budget: cannot read byte count '12Q'"),
        ("interpret --launch -1", "launch must be a non-negative launch index, got -1"),
        ("interpret --break 0", "breakpoints must be positive line numbers, got (0,)"),
        ("interpret --pid 1,0,0", "--pid picks the program that --break stops in: give --break LINE as well"),
        ("interpret --break 3 --pid 0:2", "--pid takes one program id such as 3 or 1,0,0, got '0:2'"),
        ("interpret --name 1x", "--name takes a variable name, got '1x'"),
    ],
)
def test_a_bad_flag_is_a_usage_error_and_runs_nothing(ip, line, message):
    result = run(ip, f"%%tkernel {line}\nout[:] = 7")

    assert isinstance(result.error_in_exec, UsageError)
    assert message in str(result.error_in_exec)
    assert not ip.user_ns["out"].any()
    assert "_tk" not in ip.user_ns


def test_help_lists_the_flags(ip, capsys):
    run(ip, "%%tkernel?")

    shown = capsys.readouterr().out
    for flag in (
        "--pids SEL",
        "--budget BYTES",
        "--no-capture",
        "--launch N",
        "--break LINE",
        "--pid PID",
        "--quiet",
    ):
        assert flag in shown
    assert "with kernel_nb.interpret(options) as session:" in shown


def test_pids_keeps_the_values_of_those_programs_only(ip):
    result = run(ip, f"%%tkernel interpret --quiet --pids 1,0,0;3\n{ADD}")

    assert result.error_in_exec is None
    launch = ip.user_ns["_tk"][0]
    assert sorted(pid for pid, program in launch.programs.items() if program.kept) == [(1, 0, 0), (3, 0, 0)]
    assert len(launch.programs) == 4


def test_budget_and_no_capture_reach_the_launch(ip):
    result = run(ip, f"%%tkernel interpret --quiet --budget 1M --no-capture\n{ADD}")

    assert result.error_in_exec is None
    launch = ip.user_ns["_tk"][0]
    assert launch.budget_bytes == 1 << 20
    assert all(not program.records for program in launch.programs.values())


def test_numerics_poison_order_detect_and_strategy_flags_reach_the_options(ip, magics, monkeypatch):
    seen = []
    original = kernel_nb.interpret

    def interpret(options=None, **overrides):
        seen.append(options)
        return original(options, **overrides)

    monkeypatch.setattr(kernel_nb, "interpret", interpret)
    line = (
        "%%tkernel interpret --quiet --numerics stock --poison out_ptr --order shuffle --seed 3 --no-detect "
        "--serial --shadow"
    )
    result = run(ip, f"{line}\n{ADD}")

    assert result.error_in_exec is None
    options = seen[-1]
    assert (
        options.numerics,
        options.poison,
        options.order,
        options.seed,
        options.detect,
        options.strategy,
        options.shadow,
    ) == ("stock", ("out_ptr",), "shuffle", 3, False, "serial", "fp64")
    assert ip.user_ns["_tk"][0].strategy == "serial"
    assert ip.user_ns["_tk"][0].shadow == "fp64"


def test_launch_interprets_only_that_launch_and_runs_the_others_as_usual(ip, monkeypatch):
    usual: list[str] = []

    def run_as_usual(kernel, *args, grid, warmup=False, **kwargs):  # stands in for a compiled GPU launch
        usual.append(kernel.fn.__name__)

    monkeypatch.setattr(triton.runtime.jit.JITFunction, "run", run_as_usual)
    result = run(
        ip, f"%%tkernel interpret --quiet --launch 1\nscale_kernel[(4,)](x, out, 1000, 2.0, BLOCK=256)\n{ADD}"
    )

    assert result.error_in_exec is None
    assert usual == ["scale_kernel"]
    assert [launch.kernel for launch in ip.user_ns["_tk"]] == ["add_kernel"]
    np.testing.assert_array_equal(ip.user_ns["out"], ip.user_ns["x"] + 1)


def test_launch_selects_the_first_launch(ip):
    result = run(ip, f"%%tkernel interpret --quiet --launch 0\n{ADD}")

    assert result.error_in_exec is None
    assert [launch.kernel for launch in ip.user_ns["_tk"]] == ["add_kernel"]


def test_break_stops_in_the_debugger_at_that_line_in_that_program(ip, magics):
    typed = io.StringIO("p offsets\ncontinue\n")
    shown = io.StringIO()
    stops = []

    def debugger() -> pdb.Pdb:
        stops.append(1)
        return pdb.Pdb(stdin=typed, stdout=shown, nosigint=True)

    magics.defaults = dataclasses.replace(magics.defaults, debugger=debugger)
    line = line_of(KERNELS, "mask = offsets < n")
    result = run(ip, f"%%tkernel interpret --quiet --break {line} --pid 1\n{ADD}")

    assert result.error_in_exec is None
    assert len(stops) == 1
    assert "256, 257, 258" in shown.getvalue()
    np.testing.assert_array_equal(ip.user_ns["out"], ip.user_ns["x"] + 1)


def test_break_uses_ipythons_debugger_by_default(ip, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("p offsets\ncontinue\n"))
    line = line_of(KERNELS, "mask = offsets < n")

    result = run(ip, f"%%tkernel interpret --quiet --break {line} --pid 3\n{ADD}")

    assert result.error_in_exec is None
    shown = capsys.readouterr().out
    assert "ipdb>" in shown
    assert "1021, 1022, 1023], dtype=int32)" in shown


@pytest.mark.parametrize("call", ["breakpoint()", "pdb.set_trace()"])
def test_breakpoint_and_set_trace_in_a_kernel_stop_in_pdb(ip, monkeypatch, capsys, call):
    cell = f"""
import pdb

@triton.jit
def stopping_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    {call}
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + 1)
"""
    run(ip, cell).raise_error()
    monkeypatch.setattr("sys.stdin", io.StringIO("p offsets\ncontinue\n" * 2))
    # pytest routes both to its own debugger, which reads the terminal: restore the standard ones.
    monkeypatch.setattr("pdb.set_trace", _set_trace)
    monkeypatch.setattr("sys.breakpointhook", _set_trace)

    handler = signal.getsignal(signal.SIGINT)
    try:
        result = run(ip, "%%tkernel interpret --quiet\nstopping_kernel[(2,)](x, out, BLOCK=8)")
    finally:
        signal.signal(signal.SIGINT, handler)  # pdb's `continue` leaves its own handler installed

    assert result.error_in_exec is None
    shown = capsys.readouterr().out
    assert "0, 1, 2, 3" in shown and "12, 13, 14, 15" in shown  # programs 0 and 1 each stopped
    np.testing.assert_array_equal(ip.user_ns["out"][:16], np.arange(16) + 1)


def _set_trace() -> None:
    pdb.Pdb().set_trace(sys._getframe().f_back)


def test_interrupt_ends_the_launch_and_leaves_the_arrays_unchanged(ip, capsys):
    cell = """
@triton.jit
def slow_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.load(x_ptr + offsets)
    for i in range(200):
        acc = acc + 1.0
    tl.store(out_ptr + offsets, acc)
"""
    run(ip, cell).raise_error()
    timer = threading.Timer(2.0, _thread.interrupt_main)
    timer.start()
    try:
        # one program at a time, so that the launch surely outlasts the timer
        result = run(ip, "%%tkernel interpret --serial\nslow_kernel[(1000,)](x, out, BLOCK=1)")
    finally:
        timer.cancel()

    error = result.error_in_exec
    assert isinstance(error, LaunchInterrupted)
    assert error.kernel == "slow_kernel"
    assert error.pid is not None
    captured = capsys.readouterr()
    assert f"interrupted: slow_kernel at pid ({error.pid[0]},0,0), arrays unchanged" in captured.out
    assert "Traceback" not in captured.out
    assert "interpreting" in captured.err  # the progress bar appeared after a second
    assert not ip.user_ns["out"].any()
    assert ip.user_ns["_tk"][0].status == "interrupted"


def test_line_magic_sets_and_shows_the_defaults(ip, magics, capsys):
    run(ip, "%tkernel --pids 0:2 --budget 1M --no-capture --quiet")
    run(ip, "%tkernel")

    assert capsys.readouterr().out == (
        "%%tkernel defaults (set with %tkernel FLAGS, forget with %tkernel --reset):\n"
        "  --pids        0,0,0;1,0,0\n"
        "  --budget      1M\n"
        "  --no-capture  on\n"
        "  --launch      every launch\n"
        "  --break       none\n"
        "  --pid         every program\n"
        "  --numerics    gpu\n"
        "  --poison      none\n"
        "  --order       serial\n"
        "  --seed        0\n"
        "  --no-detect   off\n"
        "  --shadow      off\n"
        "  --serial      off\n"
        "  --device      0\n"
        "  --keep        gpu\n"
        "  --tolerance   dtype\n"
        "  --rtol        per dtype\n"
        "  --atol        per dtype\n"
        "  --exact-probe off\n"
        "  --ir          off\n"
        "  --target      this GPU's, else cuda:90\n"
        "  --quiet       on\n"
    )
    run(ip, f"%%tkernel interpret\n{ADD}")
    assert capsys.readouterr().out == ""
    launch = ip.user_ns["_tk"][0]
    assert launch.budget_bytes == 1 << 20

    run(ip, "%tkernel --reset")
    assert magics.defaults == kernel_nb.Options()
    assert magics.quiet is False


def test_line_magic_lists_every_flag_that_keeps_a_default(ip, magics, capsys):
    run(ip, "%tkernel --numerics stock --poison out_ptr,x --order shuffle --seed 3 --no-detect --serial")
    capsys.readouterr()
    run(ip, "%tkernel")
    listed = capsys.readouterr().out.splitlines()[1:]

    parser = magics.tkernel.parser
    every_flag = [s for action in parser._actions for s in action.option_strings if s.startswith("--")]
    cell_only = ["--help", "--name", "--reset"]
    assert [line.split()[0] for line in listed] == [f for f in every_flag if f not in cell_only]
    assert [
        line for line in listed if line.split()[0] in {"--numerics", "--poison", "--order", "--seed"}
    ] == [
        "  --numerics    stock",
        "  --poison      out_ptr,x",
        "  --order       shuffle",
        "  --seed        3",
    ]
    assert "  --no-detect   on" in listed and "  --serial      on" in listed


def test_line_magic_defaults_of_other_flags_reach_the_next_cell(ip, magics):
    run(ip, "%tkernel --numerics stock --poison out_ptr --order reverse --serial --quiet")
    result = run(ip, f"%%tkernel interpret\n{ADD}")

    assert result.error_in_exec is None
    options = magics.defaults
    assert (options.numerics, options.poison, options.order, options.strategy) == (
        "stock",
        ("out_ptr",),
        "reverse",
        "serial",
    )
    assert ip.user_ns["_tk"][0].strategy == "serial"


def test_line_magic_refuses_a_mode_and_a_name(ip):
    for line in ("%tkernel interpret", "%tkernel --name tr"):
        assert isinstance(run(ip, line).error_in_exec, UsageError)


def test_reload_and_unload(ip):
    run(ip, "%load_ext kernel_nb")  # already loaded: harmless
    run(ip, "%reload_ext kernel_nb")
    assert run(ip, f"%%tkernel interpret --quiet\n{ADD}").error_in_exec is None

    run(ip, "%unload_ext kernel_nb")
    assert isinstance(run(ip, "%tkernel").error_in_exec, UsageError)
    run(ip, "%load_ext kernel_nb")
    assert isinstance(ip.magics_manager.registry["TKernelMagics"], TKernelMagics)


@pytest.mark.skipif(importlib.util.find_spec("kernel_nb.gpu") is not None, reason="the GPU runner exists")
@pytest.mark.parametrize("mode", ["gpu", "compare"])
def test_gpu_modes_say_the_runner_is_not_available_yet(ip, mode):
    result = run(ip, f"%%tkernel {mode}\nout[:] = 7")

    assert isinstance(result.error_in_exec, UsageError)
    assert str(result.error_in_exec) == (
        f"%%tkernel {mode}: the GPU runner is not available yet; use %%tkernel interpret to run on the CPU"
    )
    assert not ip.user_ns["out"].any()


@pytest.mark.parametrize(
    ("text", "count"),
    [("1000000", 1000000), ("64K", 65536), ("512M", 512 << 20), ("1g", 1 << 30), ("1.5GB", 3 << 29)],
)
def test_parse_bytes(text, count):
    assert parse_bytes(text) == count
    assert parse_bytes(format_bytes(count)) == count


def test_format_bytes():
    assert [format_bytes(n) for n in (0, 1000, 1024, 512 << 20, 3 << 29)] == [
        "0",
        "1000",
        "1K",
        "512M",
        "1536M",
    ]


class FakeBar:
    def __init__(self, total: int, log: list[str]) -> None:
        self.n = 0
        self.log = log
        log.append(f"open {total}")

    def update(self, n: float) -> None:
        self.n += n
        self.log.append(f"at {self.n}")

    def close(self) -> None:
        self.log.append("close")


def test_progress_shows_a_bar_only_after_the_delay_and_one_per_launch():
    now = [0.0]
    log: list[str] = []
    progress = Progress(1.0, clock=lambda: now[0], new_bar=lambda total: FakeBar(total, log))

    progress(1, 4)  # a quick launch: no bar
    now[0] = 0.5
    progress(4, 4)
    assert log == []

    now[0] = 10.0
    progress(1, 3)  # a new launch, slow
    now[0] = 11.5
    progress(2, 3)
    progress(3, 3)
    now[0] = 20.0
    progress(1, 3)  # the next launch starts its own clock
    now[0] = 20.5
    progress(2, 3)
    assert log == ["open 3", "at 2", "at 3", "close"]

    now[0] = 22.0
    progress(3, 3)  # that launch took 2 s: its bar opens late and closes at the end
    assert log[4:] == ["open 3", "at 3", "close"]

    now[0] = 30.0
    progress(1, 5)  # a launch that fails half-way leaves its bar to the cell's close()
    now[0] = 31.5
    progress(2, 5)
    progress.close()
    assert log[7:] == ["open 5", "at 2", "close"]
