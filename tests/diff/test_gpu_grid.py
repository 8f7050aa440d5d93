"""A compiled launch's grid and program selection, refused before the device with the kernel named
(kernel_nb.gpu.grid), in gpu and compare sessions with the GPU side faked."""

import numpy as np
import pytest

import kernel_nb
import kernel_nb.gpu as gpu
from kernel_nb.gpu.grid import check_pids, resolve_grid
from kernel_nb.gpu.runner import GpuLaunch
from tests.engine import kernels as k


def test_grids_as_triton_takes_them():
    assert resolve_grid("k", (4,), {}) == (4, 1, 1)
    assert resolve_grid("k", [2, np.int64(3)], {}) == (2, 3, 1)
    assert resolve_grid("k", 5, {}) == (5, 1, 1)
    assert resolve_grid("k", (0,), {}) == (0, 1, 1)
    assert resolve_grid("k", lambda meta: (meta["n"] // meta["BLOCK"],), {"n": 1024, "BLOCK": 256}) == (
        4,
        1,
        1,
    )


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        (
            (2.5,),
            "add_kernel: grid (2.5,) has 2.5 on axis 0, not an integer; CUDA launches whole programs: "
            "round with triton.cdiv(n, BLOCK)",
        ),
        (
            "8",
            "add_kernel: grid '8' is not 1 to 3 sizes; pass a tuple such as (triton.cdiv(n, BLOCK),), or a "
            "callable returning one",
        ),
        (
            None,
            "add_kernel: grid None is not 1 to 3 sizes; pass a tuple such as (triton.cdiv(n, BLOCK),), or a "
            "callable returning one",
        ),
        (
            (1, 1, 1, 1),
            "add_kernel: grid (1, 1, 1, 1) is not 1 to 3 sizes; pass a tuple such as (triton.cdiv(n, BLOCK),), "
            "or a callable returning one",
        ),
        ((-1,), "add_kernel: grid (-1,) has -1 programs on axis 0; sizes must be >= 0"),
        (
            (True,),
            "add_kernel: grid (True,) has True on axis 0, not an integer; CUDA launches whole programs: "
            "round with triton.cdiv(n, BLOCK)",
        ),
        (
            (1, 70000),
            "add_kernel: grid (1, 70000) has 70000 programs on axis 1 (y), more than CUDA launches there "
            "(65535); put the extra programs on axis 0, which takes up to 2147483647",
        ),
        (
            (2**31,),
            "add_kernel: grid (2147483648,) has 2147483648 programs on axis 0 (x), more than CUDA launches "
            "there (2147483647); put the extra programs on axis 0, which takes up to 2147483647",
        ),
        (
            lambda meta: (meta["BLOKC"],),
            "add_kernel: the grid callable raised KeyError: 'BLOKC'; it is called with the kernel's arguments "
            "by name (meta['BLOCK']) and must return 1 to 3 sizes",
        ),
    ],
)
def test_grids_the_gpu_cannot_launch_are_one_line(grid, message):
    with pytest.raises(gpu.GridError) as caught:
        resolve_grid("add_kernel", grid, {"BLOCK": 256})
    assert str(caught.value) == message
    assert caught.value._render_traceback_() == [f"GridError: {message}"]


def test_pids_outside_the_grid():
    check_pids("add_kernel", "all", (4, 1, 1))
    check_pids("add_kernel", ((3, 0, 0),), (4, 1, 1))
    with pytest.raises(gpu.GridError) as caught:
        check_pids("add_kernel", ((9, 0, 0),), (4, 1, 1))
    assert str(caught.value) == (
        "add_kernel: pids (9,0,0) are outside the grid (4, 1, 1); choose programs with each axis below the "
        "grid's size on it"
    )
    many = tuple((0, y, 0) for y in range(8))
    with pytest.raises(gpu.GridError) as caught:
        check_pids("add_kernel", many, (4, 2, 1))
    assert str(caught.value).startswith("add_kernel: pids (0,2,0), (0,3,0), (0,4,0), (0,5,0) and 2 more are ")


def counting_gpu():
    calls = []

    def launcher(run, kernel, grid, args, kwargs, index):
        calls.append(index)
        x, y, out, n = args
        out[:n] = x[:n] + y[:n]
        return GpuLaunch(index, "add_kernel", (4, 1, 1), "fake GPU", 0.0)

    launcher.calls = calls
    return launcher


@pytest.mark.parametrize("mode", ["gpu", "compare"])
def test_a_selection_outside_the_grid_is_refused_before_either_side_runs(mode):
    x, y = np.arange(1000, dtype=np.float32), np.ones(1000, np.float32)
    out = np.full(1000, 3.0, np.float32)
    launcher = counting_gpu()
    options = kernel_nb.Options(pids=((1, 0, 0), (9, 0, 0)))
    session = gpu.GpuSession(options, gpu.GpuOptions(mode=mode), launcher=launcher)
    with pytest.raises(gpu.GridError) as caught, session:
        k.add_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    assert str(caught.value) == (
        "add_kernel: pids (9,0,0) are outside the grid (4, 1, 1); choose programs with each axis below the "
        "grid's size on it"
    )
    assert launcher.calls == [] and len(session.trace) == 0
    np.testing.assert_array_equal(out, 3.0)


def test_a_selection_inside_the_grid_runs_and_other_launches_are_not_held_to_it():
    x, y, out = np.arange(1000, dtype=np.float32), np.ones(1000, np.float32), np.zeros(1000, np.float32)
    launcher = counting_gpu()
    options = kernel_nb.Options(pids=((3, 0, 0),), launch=1)
    with gpu.GpuSession(
        options, gpu.GpuOptions(mode="compare", divergence=False), launcher=launcher
    ) as session:
        k.add_kernel[(2,)](x, y, out, 1000, BLOCK=512)  # launch 0: not selected, pids do not apply
        k.add_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    assert launcher.calls == [0, 1] and session.trace[0].comparison.ok
    np.testing.assert_array_equal(out, x + y)


def test_a_bad_grid_in_compare_mode_names_the_kernel_before_anything_runs():
    x, out = np.ones(1000, np.float32), np.full(1000, 3.0, np.float32)
    launcher = counting_gpu()
    session = gpu.GpuSession(
        kernel_nb.Options(pids=((0, 0, 0),)), gpu.GpuOptions(mode="compare"), launcher=launcher
    )
    with pytest.raises(gpu.GridError, match=r"^add_kernel: grid \(2\.5,\) has 2\.5 on axis 0"), session:
        k.add_kernel[(2.5,)](x, x, out, 1000, BLOCK=256)
    assert launcher.calls == []
    np.testing.assert_array_equal(out, 3.0)
