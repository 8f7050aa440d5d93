"""kernel_nb.record on the GPU: compiled launches on torch CUDA tensors (CuPy memory among them) captured
(device memory copied to the host before and after), replayed on the CPU, within tolerance."""

from __future__ import annotations

import numpy as np
import pytest

import kernel_nb
from kernel_nb.record import Recording
from tests.record import kernels as k


def test_torch_cuda_launches_replay_on_the_cpu_within_tolerance(tmp_path):
    torch = pytest.importorskip("torch")
    x = torch.randn(5000, device="cuda")
    y = torch.randn(5000, device="cuda")
    out = torch.empty(5000, device="cuda")
    expected = (x + y).cpu().numpy()  # before the copy kernel writes y
    with kernel_nb.record() as recording:
        k.add_kernel[(40,)](x, y, out, 5000, BLOCK=128)
        k.scale_kernel[(40,)](out, 5000, 0.25, BLOCK=128)
        k.tuned_copy_kernel[lambda meta: ((5000 + meta["BLOCK"] - 1) // meta["BLOCK"],)](out, y, 5000)
    torch.cuda.synchronize()
    assert [launch.kernel for launch in recording][:2] == ["add_kernel", "scale_kernel"]
    assert all(launch.device == "cuda:0" for launch in recording)
    add, scale = recording[0], recording[1]
    # each launch's bytes as they were when it ran, not as later launches left them
    np.testing.assert_array_equal(add.arguments(after=True)["out_ptr"], expected)
    np.testing.assert_array_equal(scale.arguments()["x_ptr"], expected)
    np.testing.assert_array_equal(scale.arguments(after=True)["x_ptr"], expected * np.float32(0.25))
    loaded = Recording.load(recording.save(tmp_path / "gpu"))
    for recorded in loaded:
        comparison = recorded.replay().comparison
        assert comparison.ok, comparison.report()
    print(loaded.table())


def test_cupy_memory_reaches_a_compiled_launch_through_torch_and_a_wrong_element_is_found():
    # Triton's launcher takes what has data_ptr(), which a CuPy array has not: CuPy memory
    # reaches a compiled kernel as a torch tensor over it (DLPack), and is recorded as torch's
    torch = pytest.importorskip("torch")
    cupy = pytest.importorskip("cupy")
    x = cupy.arange(3000, dtype=cupy.float32)
    y = cupy.ones(3000, dtype=cupy.float32)
    out = cupy.zeros(3000, dtype=cupy.float32)
    with kernel_nb.record() as recording:
        with pytest.raises(TypeError):  # Triton's own refusal, unchanged by the recording
            k.add_kernel[(24,)](x, y, out, 3000, BLOCK=128)
        k.add_kernel[(24,)](*(torch.from_dlpack(a) for a in (x, y, out)), 3000, BLOCK=128)
    torch.cuda.synchronize()
    [add] = recording
    assert add.device == "cuda:0" and add.leaves[0].library == "torch"
    np.testing.assert_array_equal(cupy.asnumpy(out), np.arange(3000, dtype=np.float32) + 1)
    assert add.replay().comparison.ok
    add.outputs[add.leaves[2].region].view(np.float32)[2999] = -1.0
    [buffer] = add.replay().comparison.mismatching
    assert buffer.positions.tolist() == [2999]


def test_a_library_forward_and_backward_on_the_gpu_replay_on_the_cpu_within_tolerance():
    torch = pytest.importorskip("torch")
    pytest.importorskip("liger_kernel")
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction

    a = torch.randn(64, 512, device="cuda", requires_grad=True)
    b = torch.randn(64, 512, device="cuda", requires_grad=True)
    with kernel_nb.record() as recording:
        LigerSiLUMulFunction.apply(a, b).sum().backward()
    torch.cuda.synchronize()
    assert [r.kernel for r in recording] == ["_swiglu_forward_kernel", "_swiglu_backward_kernel"]
    for recorded in recording:
        comparison = recorded.replay().comparison
        print(comparison.report())
        assert comparison.ok, comparison.report()


def test_a_compiled_kernel_launched_straight_is_captured_through_the_launch_hooks():
    torch = pytest.importorskip("torch")
    x, y = torch.randn(5000, device="cuda"), torch.randn(5000, device="cuda")
    compiled = k.add_kernel[(40,)](x, y, torch.empty_like(x), 5000, BLOCK=128)  # JITFunction.run's result
    out = torch.zeros_like(x)
    with kernel_nb.record() as recording:
        compiled[(40, 1, 1)](x, y, out, 5000, 128)  # no JITFunction.run: the launcher alone
        k.add_kernel[(40,)](x, y, out, 5000, BLOCK=128)  # through run: captured there, once
    torch.cuda.synchronize()
    assert [(r.kernel, r.grid) for r in recording] == [("add_kernel", (40, 1, 1))] * 2
    assert recording.seen == 2
    straight = recording[0]
    assert straight.values == {"n": 5000, "BLOCK": 128} and straight.written == ["out_ptr"]
    np.testing.assert_array_equal(straight.arguments(after=True)["out_ptr"], (x + y).cpu().numpy())
    for recorded in recording:
        comparison = recorded.replay().comparison
        assert comparison.ok, comparison.report()


def test_the_launches_torch_compile_generates_are_captured_where_they_go_through_triton(monkeypatch):
    # inductor launches through a static CUDA launcher of its own by default, which no Triton hook
    # sees; with it off, its launchers are Triton's, and the hooks take them
    torch = pytest.importorskip("torch")
    import torch._inductor.config as inductor

    a, b = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
    if hasattr(inductor, "use_static_cuda_launcher"):
        monkeypatch.setattr(inductor, "use_static_cuda_launcher", False)
    torch._dynamo.reset()
    fused = torch.compile(lambda a, b: torch.sigmoid(a * b) + a)
    expected = fused(a, b)  # compiled here, outside the recording
    with kernel_nb.record() as recording:
        got = fused(a, b)
    torch.cuda.synchronize()
    torch.testing.assert_close(got, expected)
    print(recording.table())
    assert recording.seen == len(recording) == 1
    [recorded] = recording
    assert recorded.kernel.startswith("triton_") and recorded.written
    comparison = recorded.replay().comparison
    assert comparison.ok, comparison.report()


def test_a_recorded_launch_replays_on_this_gpu_to_the_statement_where_it_diverges():
    torch = pytest.importorskip("torch")
    from tests.divergence import kernels as dk

    x = torch.tensor(
        np.where(np.arange(256) % 7 == 0, np.nan, np.arange(256)).astype(np.float32), device="cuda"
    )
    out = torch.zeros(256, dtype=torch.int32, device="cuda")
    with kernel_nb.record() as recording:
        dk.nan_cast_kernel[(2,)](x, out, BLOCK=128)
    torch.cuda.synchronize()
    [recorded] = recording
    launch = recorded.replay(kernel_nb.Options(numerics="stock"), divergence=True, pids=[(1, 0, 0)])
    divergence = launch.divergence
    assert divergence is not None and divergence.error is None, divergence
    print(divergence.report())
    _, first = divergence.first
    assert (first.name, first.line) == ("n", dk.LINES["nan_cast"])
