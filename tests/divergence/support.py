"""Running a probed variant without a GPU: interpreted by kernel_nb, on copies of the inputs."""

import copy

import numpy as np

import kernel_nb
from kernel_nb.gpu.compile import compile_for_target
from kernel_nb.gpu.instrument import PROBE, instrument, read_log
from kernel_nb.gpu.probe import ProbeRun, addresses_from_log, analyse


def interpret(kernel, grid, args, kwargs, **options):
    """The launch interpreted from copies of `args` (the caller's arrays stay as they are)."""
    args = copy.deepcopy(args)
    with kernel_nb.interpret(kernel_nb.Options(**options)) as session:
        kernel[grid](*args, **kwargs)
    return session.trace[0]


def probe_on_cpu(kernel, grid, args, kwargs, pids, *, cpu=None, gpu=None):
    """Interpret the launch (options `cpu`), then its probed variant (options `gpu`) as the "GPU".

    Returns (launch, probed, divergence).
    """
    launch = interpret(kernel, grid, args, kwargs, **(cpu or {}))
    probed = instrument(kernel, launch, pids)
    probe = np.zeros(probed.layout.total_bytes, np.uint8)
    copies = copy.deepcopy(args)
    options = {"capture": False, "detect": False, **(gpu or {})}
    with kernel_nb.interpret(kernel_nb.Options(**options)):
        probed.kernel[grid](*copies, **kwargs, **{PROBE: probe})
    logs = read_log(probed.layout, probe)
    divergence = analyse(launch, probed, ProbeRun(logs, addresses_from_log(launch, logs), tf32=True))
    return launch, probed, divergence


def compile_variant(probed, args, kwargs, target="cuda:90"):
    """The variant compiled for a CUDA target (no GPU needed); returns its artifacts."""
    probe = np.zeros(probed.layout.total_bytes, np.uint8)
    return compile_for_target(probed.kernel, tuple(args), {**kwargs, PROBE: probe}, target, sass=False)
