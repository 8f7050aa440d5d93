"""The probed variant's outputs are checked against the plain compiled run's on every compared launch."""

import copy

import numpy as np

import kernel_nb
from kernel_nb.compare.drift import probe_drift
from kernel_nb.gpu.instrument import PROBE, instrument, read_log
from kernel_nb.gpu.probe import ProbeRun, addresses_from_log, analyse
from kernel_nb.trace import Drift
from tests.divergence.support import interpret
from tests.engine import kernels as k


def _probed_add(bump, fp_fusion=True):
    x, y = np.arange(300, dtype=np.float32), np.ones(300, np.float32)
    args, kwargs = (x, y, np.zeros(300, np.float32), 300), {"BLOCK": 128}
    launch = interpret(k.add_kernel, (3,), args, kwargs)
    probed = instrument(k.add_kernel, launch, [(1, 0, 0)])
    log = np.zeros(probed.layout.total_bytes, np.uint8)
    copies = copy.deepcopy(args)
    with kernel_nb.interpret(kernel_nb.Options(capture=False, detect=False)):
        probed.kernel[(3,)](*copies, **kwargs, **{PROBE: log})
    logs = read_log(probed.layout, log)
    plain = {"out_ptr": copies[2].copy()}
    bump(plain["out_ptr"])
    result = ProbeRun(logs, addresses_from_log(launch, logs), outputs={"out_ptr": copies[2]})
    return analyse(launch, probed, result, plain=plain, fp_fusion=fp_fusion)


def test_a_probed_run_that_wrote_what_the_plain_run_wrote_says_nothing():
    divergence = _probed_add(lambda out: None)
    assert divergence.probe_drift == ()
    assert divergence.notes == []


def test_a_probed_run_that_wrote_other_last_bits_is_named_with_how_much():
    def bump(out):
        out[[5, 260]] = np.nextafter(out[[5, 260]], np.float32(np.inf))
        out[7] = np.nextafter(np.nextafter(out[7], np.float32(0)), np.float32(0))

    divergence = _probed_add(bump)
    assert divergence.probe_drift == (Drift("out_ptr", 3, 300, 3.0517578125e-05, 2),)
    assert divergence.notes == [
        "the probed variant wrote other values than the plain compiled run (out_ptr: 3 of 300 elements differ "
        "(max abs 3.05e-05, max 2 ulp)): logging the statements changed how the compiler scheduled them, so "
        "the GPU values above are the probed run's, which can differ from the plain run's in these last bits; "
        "`--exact-probe` (GpuOptions(exact_probe=True)) compiles both without fp fusion, which keeps the "
        "compiler from contracting them differently"
    ]
    assert "note: the probed variant wrote other values" in divergence.report()


def test_a_probe_that_drifts_without_fp_fusion_says_so_and_suggests_nothing():
    def bump(out):
        out[5] = np.nextafter(out[5], np.float32(np.inf))

    divergence = _probed_add(bump, fp_fusion=False)
    assert len(divergence.notes) == 1
    assert divergence.notes[0].endswith("in these last bits, even without fp fusion")


def test_probe_drift_compares_bits_so_nans_in_the_same_places_agree():
    a = np.array([1.0, np.nan, 3.0], np.float32)
    assert probe_drift({"o": a}, {"o": a.copy()}) == []
    assert probe_drift({"o": a}, {"o": np.array([1.0, np.nan, 4.0], np.float32)}) == [
        Drift("o", 1, 3, 1.0, 4194304)
    ]
