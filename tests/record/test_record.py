"""kernel_nb.record on the CPU: launches run as they would, under the stock interpreter
(TRITON_INTERPRET=1, torch CPU tensors, in a child process) or inside a kernel_nb.interpret block,
and the chosen ones are captured; a recording saved there is loaded here and each launch replayed,
interpreted with everything recorded and compared with what really ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kernel_nb
from kernel_nb.record import Recording
from tests.record import kernels as k

ROOT = Path(__file__).resolve().parents[2]

# run by a child under the stock interpreter: the cell of a user who records what their code launches
_STOCK_SCRIPT = """
import json, sys
import torch
import kernel_nb
from tests.record import kernels as k

x = torch.arange(100, dtype=torch.float32)
y = torch.full((100,), 0.5)
out = torch.zeros(100)
with kernel_nb.record(**json.loads(sys.argv[2])) as recording:
    k.add_kernel[(4,)](x, y, out, 100, BLOCK=32)
    k.scale_kernel[(4,)](out, 100, 3.0, BLOCK=32)
    k.add_kernel[(2,)](x, x, out, 64, BLOCK=32)
recording.save(sys.argv[1])
print(json.dumps({"type": type(k.add_kernel).__name__, "table": recording.table(),
                  "out": out.tolist(), "y": y.tolist()}))
"""


def _stock(tmp_path: Path, **record: object) -> tuple[dict, Recording]:
    env = {
        **os.environ,
        "TRITON_INTERPRET": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    script = _STOCK_SCRIPT
    saved = tmp_path / "recorded.npz"
    run = subprocess.run(
        [sys.executable, "-c", script, str(saved), json.dumps(record)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert found["type"] == "InterpretedFunction"  # the launches ran under the stock interpreter
    return found, Recording.load(saved)


def test_stock_launches_are_captured_saved_and_replayed_here_matching_what_ran(tmp_path):
    pytest.importorskip("torch")
    found, recording = _stock(tmp_path)
    # the launches ran as they would have: add, scale in place, add again
    x = np.arange(100, dtype=np.float32)
    assert found["out"][:64] == (2 * x[:64]).tolist() and found["out"][64:] == (3 * (x[64:] + 0.5)).tolist()
    assert [launch.kernel for launch in recording] == ["add_kernel", "scale_kernel", "add_kernel"]
    assert recording.seen == 3 and recording.skipped == []
    table = found["table"].splitlines()
    assert table[0].startswith("3 of 3 launches captured")
    assert table[2].split()[:4] == ["0", "add_kernel", "4x1x1", "host"]

    add, scale, again = recording
    # saved there, found here: the kernel's module is importable
    assert add.jit is k.add_kernel and scale.jit is k.scale_kernel
    assert (add.grid, add.values, add.written) == ((4, 1, 1), {"n": 100, "BLOCK": 32}, ["out_ptr"])
    assert scale.values == {"n": 100, "factor": 3.0, "BLOCK": 32} and scale.written == ["x_ptr"]
    # scale's input is what add wrote
    np.testing.assert_array_equal(scale.arguments()["x_ptr"], add.arguments(after=True)["out_ptr"])
    # x passed twice: one region, both names on it
    assert len(again.inputs) == 2 and again.leaves[0].region == again.leaves[1].region

    for recorded in recording:
        launch = recorded.replay()
        assert launch.comparison is not None and launch.comparison.ok, launch.comparison.report()
        assert launch.kernel == recorded.kernel and launch.grid == recorded.grid


def test_a_recorded_output_the_interpreter_does_not_reproduce_is_a_mismatch_at_its_element(tmp_path):
    pytest.importorskip("torch")
    _, recording = _stock(tmp_path, kernel="add_kernel", max_launches=1)
    [add] = recording
    out = add.leaves[2]
    written = add.outputs[out.region].view(np.float32)
    written[70] += 1.0  # what a GPU that computed element 70 wrongly would have left
    comparison = add.replay().comparison
    [buffer] = comparison.mismatching
    assert (buffer.arg, buffer.positions.tolist(), buffer.writers) == ("out_ptr", [70], [((2, 0, 0), 1)])
    assert comparison.verdict().startswith("#0 add_kernel: MISMATCH in out_ptr: 1 of 100 out of tolerance")


def test_the_kernel_every_and_max_choices_say_what_they_left_out(tmp_path):
    pytest.importorskip("torch")
    _, recording = _stock(tmp_path, kernel="add_kernel", max_launches=1)
    assert [launch.index for launch in recording] == [0] and recording.seen == 3
    assert recording.skipped == [(2, "add_kernel", "past --max 1")]
    _, every = _stock(tmp_path, every=2)
    assert [launch.index for launch in every] == [0, 2]
    _, small = _stock(tmp_path, budget_bytes=1000)
    assert [launch.kernel for launch in small] == ["scale_kernel"]  # 400 bytes, twice
    assert [why.split(" (")[0] for _, _, why in small.skipped] == ["its arrays"] * 2


def test_launches_inside_an_interpret_block_are_captured_as_kernel_nb_ran_them():
    x, y, out = np.arange(50, dtype=np.float32), np.ones(50, np.float32), np.zeros(50, np.float32)
    with kernel_nb.interpret() as session, kernel_nb.record() as recording:
        k.add_kernel[(2,)](x, y, out, 50, BLOCK=32)
    assert len(session.trace) == 1 and (out == x + 1).all()
    [recorded] = recording
    assert recorded.device == "host" and recorded.written == ["out_ptr"]
    replayed = recorded.replay()
    assert replayed.comparison.ok
    np.testing.assert_array_equal(recorded.arguments(after=True)["out_ptr"], x + 1)
    np.testing.assert_array_equal(recorded.arguments()["out_ptr"], np.zeros(50, np.float32))


def test_an_autotuned_launch_is_captured_with_the_config_it_ran(tmp_path):
    x, out = np.arange(100, dtype=np.float32), np.zeros(100, np.float32)
    with kernel_nb.interpret(autotune_config=1), kernel_nb.record() as recording:
        k.tuned_copy_kernel[lambda meta: (-(-100 // meta["BLOCK"]),)](x, out, 100)
    [tuned] = recording
    assert tuned.values == {"n": 100, "BLOCK": 32} and tuned.grid == (4, 1, 1)
    assert tuned.qualname == "tuned_copy_kernel" and tuned.jit is k.tuned_copy_kernel.fn
    assert tuned.replay().comparison.ok
    # loaded, it is found by the name the module binds (the autotuner) and replayed as it ran
    loaded = Recording.load(recording.save(tmp_path / "tuned"))
    assert loaded[0].jit is k.tuned_copy_kernel.fn and loaded[0].replay().comparison.ok


def test_a_recording_whose_module_is_not_here_replays_the_source_it_carries(tmp_path):
    x, y, out = np.arange(50, dtype=np.float32), np.ones(50, np.float32), np.zeros(50, np.float32)
    with kernel_nb.interpret(), kernel_nb.record() as recording:
        k.add_kernel[(2,)](x, y, out, 50, BLOCK=32)
    assert "def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):" in recording[0].source
    recording[0].module = "notebook_that_is_not_here"
    loaded = Recording.load(recording.save(tmp_path / "carried"))
    [launch] = loaded
    assert launch.jit is not k.add_kernel and launch.jit.fn.__module__.startswith(
        "kernel_nb_recorded_add_kernel"
    )
    replayed = launch.replay()
    assert replayed.comparison.ok and replayed.kernel == "add_kernel"
    # where its module is importable and holds the same source: that kernel, whose file the viewer shows
    recording[0].module = k.__name__
    assert Recording.load(recording.save(tmp_path / "here"))[0].jit is k.add_kernel


def test_a_kernel_whose_source_differs_from_what_ran_replays_what_ran(tmp_path):
    x, y, out = np.arange(50, dtype=np.float32), np.ones(50, np.float32), np.zeros(50, np.float32)
    with kernel_nb.interpret(), kernel_nb.record() as recording:
        k.add_kernel[(2,)](x, y, out, 50, BLOCK=32)
    # the carried text stands for what ran: made to differ from the module's kernel (as a kernel
    # edited since the launch differs), it is the one replayed, and its x * 2 is not what was recorded
    recording[0].source = recording[0].source.replace("x + y", "x * 2")
    [launch] = Recording.load(recording.save(tmp_path / "edited"))
    assert launch.jit is not k.add_kernel
    comparison = launch.replay().comparison
    assert not comparison.ok


def test_a_recording_whose_kernel_is_not_defined_here_says_so_on_replay(tmp_path):
    x, y, out = np.arange(50, dtype=np.float32), np.ones(50, np.float32), np.zeros(50, np.float32)
    with kernel_nb.interpret(), kernel_nb.record() as recording:
        k.add_kernel[(2,)](x, y, out, 50, BLOCK=32)
    recording[0].module = "notebook_that_is_not_here"
    recording[0].source, recording[0].source_note = None, "a global no module can recreate"
    loaded = Recording.load(recording.save(tmp_path / "gone"))
    with pytest.raises(ValueError) as raised:
        loaded[0].replay()
    assert str(raised.value).startswith(
        "add_kernel: notebook_that_is_not_here.add_kernel is not defined in this process and its "
        "source was not carried (a global no module can recreate)"
    )


def test_a_carried_kernel_brings_its_helpers_and_the_globals_they_read(tmp_path):
    from tests.trace import repro_kernels

    x, out = np.arange(20, dtype=np.float32) + 4, np.zeros(20, np.float32)
    with kernel_nb.interpret(), kernel_nb.record() as recording:
        repro_kernels.shifted_sqrt_kernel[(3,)](x, out, 20, BLOCK=8)
    source = recording[0].source
    assert "OFFSET = tl.constexpr(4.0)" in source and "def _shifted_sqrt(x):" in source
    recording[0].module = "notebook_that_is_not_here"
    [launch] = Recording.load(recording.save(tmp_path / "helpers"))
    assert launch.jit is not repro_kernels.shifted_sqrt_kernel
    assert launch.replay().comparison.ok


def test_a_tuple_of_arrays_and_numbers_is_recorded_and_rebuilt_on_replay(tmp_path):
    x, y, out = np.arange(40, dtype=np.float32), np.ones(40, np.float32), np.zeros(40, np.float32)
    with kernel_nb.interpret(), kernel_nb.record() as recording:
        k.pair_add_kernel[(2,)]((x, y), out, 40, (2.0, 1.0), BLOCK=32)
    [recorded] = recording
    assert [leaf.name for leaf in recorded.leaves] == ["pair.0", "pair.1", "out_ptr"]
    assert recorded.values["pair"] == {"tuple": [{"array": "pair.0"}, {"array": "pair.1"}]}
    [launch] = Recording.load(recording.save(tmp_path / "tuples"))
    pair = launch.arguments()["pair"]
    assert (
        isinstance(pair, tuple)
        and np.array_equal(pair[0], x)
        and launch.arguments()["scale_shift"] == (2.0, 1.0)
    )
    np.testing.assert_array_equal(launch.arguments(after=True)["out_ptr"], (x + y) * 2 + 1)
    assert launch.replay().comparison.ok


def test_a_tensor_descriptor_is_recorded_and_rebuilt_on_replay(tmp_path):
    torch = pytest.importorskip("torch")
    from triton.tools.tensor_descriptor import TensorDescriptor

    x = torch.arange(16 * 8, dtype=torch.float32).reshape(16, 8)
    out = torch.zeros((8, 16), dtype=torch.float32)
    with kernel_nb.interpret(), kernel_nb.record() as recording:
        k.transpose_tile[(1,)](
            TensorDescriptor.from_tensor(x, [16, 8]), TensorDescriptor.from_tensor(out, [8, 16])
        )
    [recorded] = recording
    assert [leaf.name for leaf in recorded.leaves] == ["src.base", "dst.base"]
    assert recorded.values["src"]["descriptor"]["block_shape"] == [16, 8]
    [launch] = Recording.load(recording.save(tmp_path / "descriptors"))
    src = launch.arguments()["src"]
    assert isinstance(src, TensorDescriptor) and torch.equal(src.base, x)
    np.testing.assert_array_equal(launch.arguments(after=True)["dst"].base.numpy(), x.T.numpy())
    assert launch.replay().comparison.ok


def test_a_replay_that_looks_for_the_diverging_statement_needs_a_gpu():
    import kernel_nb.gpu as gpu

    x, y, out = np.arange(50, dtype=np.float32), np.ones(50, np.float32), np.zeros(50, np.float32)
    with kernel_nb.interpret(), kernel_nb.record() as recording:
        k.add_kernel[(2,)](x, y, out, 50, BLOCK=32)
    if gpu.find_missing() is None:
        pytest.skip("this machine has a GPU: tests/gpu/test_record_gpu.py replays with divergence there")
    with pytest.raises(gpu.GpuUnavailableError):
        recording[0].replay(divergence=True)
