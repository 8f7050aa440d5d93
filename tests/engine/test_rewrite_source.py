"""The source a launch rewrites is the one its @triton.jit read when it decorated the kernel: the
code that runs, even where the file on disk changed since (an edit not yet re-imported)."""

import importlib.util
import linecache
import sys
import textwrap

import numpy as np
import pytest

import kernel_nb
from kernel_nb.engine import triton_compat

KERNELS = """
import triton
import triton.language as tl


@triton.jit
def scale(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    {body}
    tl.store(out_ptr + offs, y)


@triton.jit
def wait_for_flag(flag_ptr, out_ptr):
    seen = tl.load(flag_ptr)
    {wait}
    tl.store(out_ptr + tl.program_id(0), seen)
"""

AS_WRITTEN = {"body": "y = x * 2.0", "wait": "seen += 1"}
EDITED = {"body": "y = x * 3.0 + 1.0", "wait": "while seen == 0:\n        seen = tl.load(flag_ptr)"}


@pytest.fixture
def edited_module(tmp_path):
    """A module of kernels, imported, whose file is then edited and not re-imported."""
    path = tmp_path / "edited_kernels.py"
    path.write_text(textwrap.dedent(KERNELS).format(**AS_WRITTEN))
    spec = importlib.util.spec_from_file_location("edited_kernels", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    path.write_text(textwrap.dedent(KERNELS).format(**EDITED) + "\n# edited\n")
    linecache.checkcache(str(path))
    yield module
    del sys.modules[spec.name]


def test_the_kernel_runs_as_decorated_when_its_file_changed(edited_module):
    if triton_compat.own_source(edited_module.scale) is None:
        pytest.skip("this Triton keeps no copy of a kernel's source (before 3.5)")
    x = np.arange(16, dtype=np.float32)
    out = np.zeros_like(x)
    with kernel_nb.interpret() as session:
        edited_module.scale[(1,)](x, out, BLOCK=16)
    np.testing.assert_array_equal(out, x * 2.0)  # the code that runs: what Python compiled
    launch = session.trace[-1]
    assert "x * 2.0" in launch.sources["scale"].text
    assert "x * 3.0" not in launch.sources["scale"].text


def test_the_wait_check_reads_the_source_as_decorated(edited_module, strategy):
    """The edited file has a spin loop; the code that runs has none: its programs run batched."""
    if strategy == "serial":
        pytest.skip("the strategy is what tells")
    if triton_compat.own_source(edited_module.wait_for_flag) is None:
        pytest.skip("this Triton keeps no copy of a kernel's source (before 3.5)")
    flag = np.ones(1, np.int32)
    out = np.zeros(4, np.int32)
    with kernel_nb.interpret() as session:
        edited_module.wait_for_flag[(4,)](flag, out)
    np.testing.assert_array_equal(out, 2)
    assert session.trace[-1].strategy == "batched"
