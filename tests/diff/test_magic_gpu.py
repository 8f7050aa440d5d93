"""%%tkernel gpu / compare / interpret --ir in a real IPython shell, with the GPU side faked."""

import numpy as np
import pytest

pytest.importorskip("IPython", reason="a test of the notebook side")

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import kernel_nb.gpu.device as gpu_device
import kernel_nb.gpu.session as gpu_session
from kernel_nb.gpu.runner import GpuLaunch
from tests.machine import FakeMachine

KERNELS = """\
import numpy as np
import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)

x = np.arange(1000, dtype=np.float32)
y = np.ones(1000, dtype=np.float32)
out = np.zeros(1000, dtype=np.float32)
"""
ADD = "add_kernel[(4,)](x, y, out, 1000, BLOCK=256)"


@pytest.fixture
def ip():
    shell = InteractiveShell.instance()
    shell.run_line_magic("reset", "-f")
    shell.run_line_magic("reload_ext", "kernel_nb")
    shell.run_cell(KERNELS).raise_error()
    return shell


@pytest.fixture
def fake_gpu(monkeypatch):
    """The device launcher replaced by numpy (element 600 off by one); no device check."""

    def launch_on_gpu(run, kernel, grid, args, kwargs, *, index, device, sass):
        x, y, out, n = args
        out[:n] = x[:n] + y[:n]
        out[600] += 1.0
        return GpuLaunch(index, "add_kernel", (4, 1, 1), f"fake GPU {device}", 0.0)

    monkeypatch.setattr(gpu_session, "launch_on_gpu", launch_on_gpu)
    monkeypatch.setattr(gpu_device, "require", lambda device=0, **kwargs: None)


def test_compare_prints_a_verdict_shows_the_viewer_and_a_figure(ip, fake_gpu, capsys):
    shown = []
    ip.display_pub.publish = lambda data, metadata=None, **kw: shown.append(data)
    result = ip.run_cell(f"%%tkernel compare --keep cpu --name cmp\n{ADD}")
    assert result.error_in_exec is None
    out = capsys.readouterr().out
    assert out.startswith("#0 add_kernel: MISMATCH in out_ptr: 1 of 1000 out of tolerance")
    trace = ip.user_ns["_tk"]
    assert ip.user_ns["cmp"] is trace and trace[0].comparison.buffers[0].writers == [((2, 0, 0), 1)]
    assert ip.user_ns["out"][600] == 601.0  # --keep cpu
    assert any(
        "image/png" in data and "application/vnd.jupyter.widget-view+json" not in data for data in shown
    )


def test_compare_with_shadow_tolerance_runs_a_shadow_and_judges_by_it(ip, fake_gpu, capsys):
    result = ip.run_cell(f"%%tkernel compare --tolerance shadow --quiet\n{ADD}")
    assert result.error_in_exec is None
    launch = ip.user_ns["_tk"][0]
    (buffer,) = launch.comparison.buffers
    assert launch.shadow == "fp64" and buffer.tolerance.reason.startswith("fp64 shadow")
    # an addition of exact inputs: the shadow promises the result to a few ulps, so the GPU's
    # element off by one is out of tolerance, and it alone
    assert buffer.mismatches == 1 and list(buffer.positions) == [600]


def test_gpu_mode_binds_the_gpu_launches(ip, fake_gpu):
    ip.run_cell(f"%%tkernel gpu --quiet --device 3\n{ADD}").raise_error()
    launches = ip.user_ns["_tk"]
    assert launches[0].device == "fake GPU 3" and ip.user_ns["out"][600] == 602.0


def test_interpret_ir_keeps_the_artifacts(ip):
    ip.run_cell(f"%%tkernel interpret --ir --target cuda:80 --quiet\n{ADD}").raise_error()
    launch = ip.user_ns["_tk"][0]
    assert launch.artifacts.target == "cuda:80" and "ptx" in launch.artifacts.stages


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("interpret --rtol 1e-3", "--rtol belongs to %%tkernel compare, not to %%tkernel interpret"),
        ("gpu --keep cpu", "--keep belongs to %%tkernel compare, not to %%tkernel gpu"),
        (
            "interpret --device 1",
            "--device belongs to %%tkernel gpu or %%tkernel compare, not to %%tkernel interpret",
        ),
        (
            "interpret --target cuda:80",
            "--target picks the target of --ir: write %%tkernel interpret --ir --target cuda:80",
        ),
        ("compare --atol -1", "atol must be a finite number >= 0, got -1.0"),
    ],
)
def test_flag_errors(ip, line, message):
    result = ip.run_cell(f"%%tkernel {line}\nout[:] = 7")
    assert isinstance(result.error_in_exec, UsageError)
    assert str(result.error_in_exec) == message
    assert not ip.user_ns["out"].any()


def test_no_cupy_says_what_to_install(ip, monkeypatch, tmp_path):
    FakeMachine(cupy="missing").install(monkeypatch, tmp_path)
    result = ip.run_cell(f"%%tkernel gpu\n{ADD}")
    assert type(result.error_in_exec).__name__ == "GpuUnavailableError"
    assert 'pip install "kernel-nb[gpu]"' in str(result.error_in_exec)
    assert not ip.user_ns["out"].any()
    assert np.array_equal(ip.user_ns["x"], np.arange(1000, dtype=np.float32))


def test_gpu_defaults_of_the_line_magic_reach_later_compare_cells(ip, fake_gpu, capsys):
    ip.run_cell("%tkernel --rtol 0.5 --keep cpu --quiet").raise_error()
    ip.run_cell(f"%%tkernel compare\n{ADD}").raise_error()
    [buffer] = ip.user_ns["_tk"][0].comparison.buffers
    assert buffer.tolerance.rtol == 0.5
    assert buffer.mismatches == 0  # 601 against 602 is within half of it
    assert ip.user_ns["out"][600] == 601.0  # --keep cpu
    assert capsys.readouterr().out == ""  # --quiet

    ip.run_cell(f"%%tkernel compare --rtol 0\n{ADD}").raise_error()
    assert ip.user_ns["_tk"][0].comparison.buffers[0].tolerance.rtol == 0.0  # the cell's own flag wins

    ip.run_cell("%tkernel --reset").raise_error()
    ip.run_cell(f"%%tkernel compare --quiet\n{ADD}").raise_error()
    assert ip.user_ns["_tk"][0].comparison.buffers[0].mismatches == 1
    assert ip.user_ns["out"][600] == 602.0


def test_gpu_defaults_stay_out_of_the_modes_they_do_not_belong_to(ip, fake_gpu):
    ip.run_cell("%tkernel --rtol 1e-3 --keep cpu --device 3 --quiet").raise_error()
    ip.run_cell(f"%%tkernel interpret\n{ADD}").raise_error()
    ip.run_cell(f"%%tkernel gpu\n{ADD}").raise_error()
    assert ip.user_ns["_tk"][0].device == "fake GPU 3"


def test_line_magic_refuses_a_bad_gpu_default(ip):
    result = ip.run_cell("%tkernel --atol -1")
    assert isinstance(result.error_in_exec, UsageError)
    assert str(result.error_in_exec) == "atol must be a finite number >= 0, got -1.0"


def test_a_compare_cell_whose_interpreter_fails_shows_the_gpu_side_the_viewer_and_the_error(
    ip, fake_gpu, capsys
):
    shown = []
    ip.display_pub.publish = lambda data, metadata=None, **kw: shown.append(data)
    result = ip.run_cell(
        "%%tkernel compare\nadd_kernel[(4,)](x, y, out, 1100, BLOCK=256)"
    )  # n past the arrays
    assert type(result.error_in_exec).__name__ == "KernelMemoryError"
    out = capsys.readouterr().out
    assert out.startswith("#0 add_kernel: the interpreter failed (add_kernel:")
    assert out.splitlines()[0].endswith("; the GPU ran it and wrote out_ptr")
    launch = ip.user_ns["_tk"][0]
    assert launch.status == "error" and launch.findings[0].kind == "launch_error"
    assert (ip.user_ns["out"] == 0).all()  # the failed launch leaves the arrays as they were
    assert any("application/vnd.jupyter.widget-view+json" in data for data in shown)
