"""Compiled launches that no JITFunction.run starts, taken through Triton's launch hooks.

A compiled launch needs a GPU (tests/gpu/test_record_gpu.py launches real ones); here the two
calls a launcher makes around it are made as Triton's launchers make them: the compiled kernel's
`launch_metadata(grid, stream, *args)` just before the launch, the exit hook with that metadata
after it, and in between the kernel's effect on its arrays."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from triton import knobs
from triton.compiler.compiler import CompiledKernel

import kernel_nb
from kernel_nb.engine import triton_compat
from tests.record import kernels as k


def _compiled(jit):
    """What launch_metadata reads of a CompiledKernel (one made by a real compile needs a GPU)."""
    return SimpleNamespace(
        src=SimpleNamespace(fn=jit), name=jit.fn.__name__, function=0, _init_handles=lambda: None
    )


def _launch(compiled, grid, *args, effect):
    metadata = CompiledKernel.launch_metadata(compiled, grid, 0, *args)
    enter = knobs.runtime.launch_enter_hook
    if enter is not None:
        enter(metadata)
    effect()
    exit_hook = knobs.runtime.launch_exit_hook
    if exit_hook is not None:
        exit_hook(metadata)


def test_the_hooks_see_the_kernel_the_grid_and_every_argument_then_the_end_of_the_launch():
    x = np.arange(50, dtype=np.float32)
    seen, ended = [], []

    def before(jit, grid, args):
        seen.append((jit, grid, args))
        return len(seen)

    with triton_compat.compiled_launches(before, ended.append):
        _launch(_compiled(k.add_kernel), (2, 1, 1), x, x, x, 50, 32, effect=lambda: None)
    _launch(_compiled(k.add_kernel), (2, 1, 1), x, x, x, 50, 32, effect=lambda: None)  # none after it
    assert len(seen) == 1 and seen[0][0] is k.add_kernel and seen[0][1] == (2, 1, 1)
    assert seen[0][2][3:] == (50, 32) and all(a is x for a in seen[0][2][:3])
    assert ended == [1]
    assert CompiledKernel.launch_metadata.__name__ == "launch_metadata"


def test_a_compiled_launch_no_run_started_is_recorded_and_replays_matching():
    x, y = np.arange(50, dtype=np.float32), np.ones(50, np.float32)
    out = np.zeros(50, np.float32)

    def add():  # what the GPU does to the arrays between the two calls
        out[:] = x + y

    with kernel_nb.record() as recording:
        _launch(_compiled(k.add_kernel), (2, 1, 1), x, y, out, 50, 32, effect=add)
    [recorded] = recording
    assert (recorded.kernel, recorded.grid, recorded.values) == (
        "add_kernel",
        (2, 1, 1),
        {"n": 50, "BLOCK": 32},
    )
    assert recorded.written == ["out_ptr"]
    np.testing.assert_array_equal(recorded.arguments()["out_ptr"], np.zeros(50, np.float32))
    replayed = recorded.replay()
    assert replayed.comparison.ok, replayed.comparison.report()


def test_a_recording_inside_a_recording_each_capture_the_launch():
    x, y, out = np.arange(50, dtype=np.float32), np.ones(50, np.float32), np.zeros(50, np.float32)

    def add():
        out[:] = x + y

    with kernel_nb.record() as outer:
        with kernel_nb.record() as inner:
            _launch(_compiled(k.add_kernel), (2, 1, 1), x, y, out, 50, 32, effect=add)
    assert len(outer) == len(inner) == 1 and outer[0] is not inner[0]
    for recording in (outer, inner):
        assert recording[0].written == ["out_ptr"] and recording[0].replay().comparison.ok
