"""A recorded launch interpreted on the CPU, with everything recorded, and compared with what the
launch really wrote: the same comparison, buffer by buffer and under the same tolerance policy,
as ``%%tkernel compare`` makes (`kernel_nb.gpu.launch_diff`), the recorded outputs standing for
the GPU's side.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from kernel_nb.gpu.arguments import describe
from kernel_nb.gpu.launch_diff import compare_launch
from kernel_nb.gpu.runner import GpuLaunch
from kernel_nb.gpu.session import GpuOptions
from kernel_nb.gpu.session import divergence as gpu_divergence
from kernel_nb.options import Options
from kernel_nb.session import interpret
from kernel_nb.trace import Launch


class Recorded(Protocol):
    """What `replay` reads of a launch (`kernel_nb.record.RecordedLaunch`)."""

    index: int
    kernel: str
    module: str
    qualname: str
    grid: tuple[int, int, int]
    options: dict[str, Any]
    leaves: Any  # LeafSpec: name, region
    inputs: list[np.ndarray]
    outputs: list[np.ndarray | None]
    device: str
    seconds: float
    jit: Any
    jit_note: str

    def arguments(self, after: bool = False) -> dict[str, Any]: ...


def replay(
    recorded: Recorded,
    options: Options | None = None,
    *,
    divergence: bool = False,
    pids: Any = None,
    **tolerance: Any,
) -> Launch:
    """Interpret a recorded launch on the CPU from its recorded inputs.

    Args:
        recorded: the launch.
        options: the interpreter's options (`kernel_nb.Options`).
        divergence: also run the recorded launch on this machine's GPU, compiled with every
            statement's values kept, and find where chosen programs first diverge from the
            interpreter (`kernel_nb.gpu.divergence`, as ``%%tkernel compare`` does); the
            comparison is then that GPU run's. Needs a GPU.
        pids: with `divergence`, the programs to look at (default: the program that wrote the
            first mismatching element, else program (0, 0, 0)).
        **tolerance: `rtol`, `atol`, or `tolerance="shadow"` (which runs the interpreter with an
            fp64 shadow and judges each element by it), as for ``%%tkernel compare``.

    Returns:
        The interpreted launch. Where the recording holds what the launch wrote, its `comparison`
        holds the interpreter's results against those, buffer by buffer. With `divergence`, its
        `divergence` holds where the programs first diverge, and its `comparison` this GPU's run.

    Raises:
        GpuUnavailableError: `divergence` on a machine without a usable GPU.
        ValueError: the kernel is not defined in this process (a recording loaded before the
            notebook or module that defines it ran), or a tolerance field is unknown.
        KernelError: the interpreted launch failed (its `launch` holds what was recorded).
    """
    unknown = set(tolerance) - ({"rtol", "atol"} if divergence else {"rtol", "atol", "tolerance"})
    if unknown:
        raise ValueError(f"replay takes rtol, atol and tolerance, not {', '.join(sorted(unknown))}")
    jit = recorded.jit
    if jit is None:
        why = recorded.jit_note or f"{recorded.module}.{recorded.qualname} is not defined in this process"
        raise ValueError(
            f"{recorded.kernel}: {why}: import it, or run the cell that defines it, then load the "
            "recording again"
        )
    gpu = GpuOptions(mode="compare", **tolerance)
    if options is None:
        options = Options(shadow="fp64" if gpu.tolerance == "shadow" else None)
    arguments = recorded.arguments()
    launch_args = {**arguments, **recorded.options}
    if divergence:
        with gpu_divergence(options, pids=pids, **tolerance) as diverging:
            jit[recorded.grid](**launch_args)
        return diverging.trace[0]
    described = describe(jit.fn, (), arguments)
    with interpret(options) as session:
        jit[recorded.grid](**launch_args)
    launch = session.trace[0]
    cpu = described.snapshot()
    # the replay's regions, in the order describe found them, each to its recorded one
    order = [_recorded_region(recorded, region.leaves[0].name) for region in described.regions]
    before = [recorded.inputs[r] for r in order]
    after = [recorded.outputs[r] if recorded.outputs[r] is not None else recorded.inputs[r] for r in order]
    ran = GpuLaunch(
        recorded.index, recorded.kernel, recorded.grid, f"recorded on {recorded.device}", recorded.seconds
    )
    launch.comparison = compare_launch(launch, described, before, cpu, after, ran, gpu)
    return launch


def _recorded_region(recorded: Recorded, name: str) -> int:
    return next(leaf.region for leaf in recorded.leaves if leaf.name == name)
