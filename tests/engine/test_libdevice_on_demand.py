"""kernel_nb's libdevice (about a sixth of the package's import, mostly its tables) is imported by
the first libdevice call a launch makes, with or without an fp64 shadow, not with kernel_nb."""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice
    import kernel_nb

    LOADED = "kernel_nb.engine.libdevice"

    @triton.jit
    def scale(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.exp(tl.load(x_ptr + offs)) * 3.0)

    @triton.jit
    def log1p(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        y = libdevice.log1p(tl.load(x_ptr + offs))
        tl.store(out_ptr + offs, y)

    print("imported", LOADED in sys.modules)
    x = np.linspace(0.0, 2.0, 512, dtype=np.float32)
    out = np.zeros_like(x)
    with kernel_nb.interpret(shadow="fp64") as session:
        scale[(2,)](x, out, BLOCK=256)
    print("shadowed launch", LOADED in sys.modules)
    with kernel_nb.interpret(shadow="fp64") as session:
        log1p[(2,)](x, out, BLOCK=256)
    y = session.trace[0].precision((1, 0, 0), "y")
    print("libdevice launch", LOADED in sys.modules)
    print("fp64 shadow", bool(np.allclose(y.shadow, np.log1p(x[256:].astype(np.float64)), rtol=1e-14)))
    """
)


def test_libdevice_is_imported_by_the_first_launch_that_calls_it(tmp_path):
    script = tmp_path / "launches.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == [
        "imported False",
        "shadowed launch False",
        "libdevice launch True",
        "fp64 shadow True",
    ]
