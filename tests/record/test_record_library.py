"""A real library's Triton kernels (Liger-Kernel, installed by make test), launched from its
torch.autograd.Function forward/backward pairs, captured and replayed: recorded under the stock
interpreter in one process and replayed in another, and recorded inside a kernel_nb.interpret
block for the ops the stock interpreter cannot run (it fails on their scalar arguments)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import kernel_nb
from kernel_nb.record import Recording

torch = pytest.importorskip("torch")
pytest.importorskip("liger_kernel")

ROOT = Path(__file__).resolve().parents[2]

_SOFTMAX = """
import sys
import torch
import kernel_nb
from liger_kernel.ops.softmax import LigerSoftmaxFunction

x = torch.randn(8, 200, generator=torch.Generator().manual_seed(0), requires_grad=True)
with kernel_nb.record() as recording:
    y = LigerSoftmaxFunction.apply(x)
    (y * torch.arange(200.0)).sum().backward()
recording.save(sys.argv[1])
"""


def test_a_forward_and_backward_recorded_under_the_stock_interpreter_replay_in_another_process(tmp_path):
    saved = tmp_path / "softmax.npz"
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    run = subprocess.run(
        [sys.executable, "-c", _SOFTMAX, str(saved)], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    recording = Recording.load(saved)
    assert [(r.module, r.kernel) for r in recording] == [
        ("liger_kernel.ops.softmax", "_softmax_single_block_forward_kernel"),
        ("liger_kernel.ops.softmax", "_softmax_single_block_backward_kernel"),
    ]
    for recorded in recording:
        assert recorded.jit is not None and recorded.device == "host"
        comparison = recorded.replay().comparison
        assert comparison.ok and comparison.buffers, comparison.report()


def test_library_ops_recorded_inside_an_interpret_block_replay_matching():
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction

    g = torch.Generator().manual_seed(1)
    a, b, x = (torch.randn(6, 128, generator=g, requires_grad=True) for _ in range(3))
    w, bias = torch.ones(128, requires_grad=True), torch.zeros(128, requires_grad=True)
    a0, b0 = a.detach().clone(), b.detach().clone()
    with kernel_nb.interpret() as session, kernel_nb.record() as recording:
        LigerSiLUMulFunction.apply(a, b).sum().backward()
        LigerLayerNormFunction.apply(x, w, bias, 1e-6).square().sum().backward()
    assert len(session.trace) == 4 and len(recording) == 4
    # the library computed what it computes on a GPU: d/da silu(a) * b
    torch.testing.assert_close(a.grad, torch.sigmoid(a0) * (1 + a0 * (1 - torch.sigmoid(a0))) * b0)
    for recorded in recording:
        assert recorded.module.startswith("liger_kernel.ops.")
        comparison = recorded.replay().comparison
        assert comparison.ok, comparison.report()
