"""Compiled launches on the GPU, side by side with the interpreter.

Plain Python::

    import kernel_nb.gpu

    with kernel_nb.gpu.run(device=0) as session:         # %%tkernel gpu
        add_kernel[grid](x, y, out, n, BLOCK=1024)        # numpy arrays: staged through CuPy
    with kernel_nb.gpu.compare(keep="gpu") as session:    # %%tkernel compare
        add_kernel[grid](x, y, out, n, BLOCK=1024)
    print(session.trace[0].comparison.verdict())
    with kernel_nb.gpu.divergence(pids=[(3, 0, 0)]) as session:   # compare + statement by statement
        add_kernel[grid](x, y, out, n, BLOCK=1024)
    print(session.trace[0].divergence.report())       # the first statement where GPU and CPU diverge
    with kernel_nb.gpu.interpret_with_ir() as session:    # %%tkernel interpret --ir (no GPU needed)
        add_kernel[grid](x, y, out, n, BLOCK=1024)
    print(session.trace[0].artifacts.stages["ptx"])
    print(kernel_nb.gpu.find_missing())                   # None, or what this machine lacks for a GPU run

Nothing here imports Jupyter, and CuPy is imported only when a device is asked for.
"""

from kernel_nb.gpu.compile import CompileError, artifacts_of, compile_for_target
from kernel_nb.gpu.device import CudaContextLost, GpuUnavailableError, Missing, find_missing
from kernel_nb.gpu.grid import GridError
from kernel_nb.gpu.instrument import InstrumentError, ProbedKernel, instrument
from kernel_nb.gpu.probe import ProbeRun, locate_divergence, run_probed
from kernel_nb.gpu.runner import GpuLaunch, GpuLaunchError, GpuTrace, launch_on_gpu
from kernel_nb.gpu.session import GpuOptions, GpuSession, compare, divergence, interpret_with_ir, run

__all__ = [
    "CompileError",
    "CudaContextLost",
    "GpuLaunch",
    "GpuLaunchError",
    "GpuOptions",
    "GpuSession",
    "GpuTrace",
    "GpuUnavailableError",
    "GridError",
    "InstrumentError",
    "Missing",
    "ProbeRun",
    "ProbedKernel",
    "artifacts_of",
    "compare",
    "compile_for_target",
    "divergence",
    "find_missing",
    "instrument",
    "interpret_with_ir",
    "launch_on_gpu",
    "locate_divergence",
    "run",
    "run_probed",
]
