"""ml_dtypes (about 0.5 s to import) is imported when a launch first meets bf16 or fp8, not with
kernel_nb: a kernel of numpy's own types never waits for it."""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import triton
    import triton.language as tl
    import kernel_nb

    @triton.jit
    def scale(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 3.0)

    @triton.jit
    def through_bf16(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(tl.bfloat16).to(tl.float32))

    print("imported", "ml_dtypes" in sys.modules)
    x = np.linspace(-2, 2, 512, dtype=np.float32) + np.float32(1 / 3)
    out = np.zeros_like(x)
    with kernel_nb.interpret() as session:
        scale[(2,)](x, out, BLOCK=256)
    print("fp32 launch", "ml_dtypes" in sys.modules, bool((out == x * np.float32(3.0)).all()))
    with kernel_nb.interpret() as session:
        through_bf16[(2,)](x, out, BLOCK=256)
    import ml_dtypes
    print("bf16 launch", bool((out == x.astype(ml_dtypes.bfloat16).astype(np.float32)).all()))
    """
)


def test_ml_dtypes_is_imported_by_the_first_launch_that_needs_it(tmp_path):
    script = tmp_path / "launches.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    assert lines[:3] == ["imported False", "fp32 launch False True", "bf16 launch True"]
