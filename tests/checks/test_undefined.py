"""Undefined integer and cast behaviour: wording, and a buggy kernel with its clean twin."""

import numpy as np

from kernel_nb.checks import Observations, undefined
from tests.checks.helpers import NamedLaunch, site
from tests.engine import detector_kernels as dk


def _messages(report):
    observations = Observations()
    report(observations)
    return [(f.kind, f.severity, f.message) for f in observations.findings(NamedLaunch())]


def test_wording():
    lanes = np.array([2, 3])
    assert _messages(
        lambda o: undefined.int_overflow(o, site(), lanes, bits=32, symbol="*", exact=2**31)
    ) == [
        (
            "int_overflow",
            "warning",
            "k:7 pid=(0,0,0): int32 overflow in '*' in 2 lanes [2, 3] (exact value 2147483648 wraps); "
            "compute offsets in int64, e.g. x.to(tl.int64)",
        )
    ]
    assert _messages(lambda o: undefined.division_by_zero(o, site(), lanes, remainder=True)) == [
        ("division_by_zero", "warning", "k:7 pid=(0,0,0): integer remainder by zero in 2 lanes [2, 3]")
    ]
    assert _messages(lambda o: undefined.shift_overflow(o, site(), lanes, amount=32, bits=32)) == [
        (
            "shift_overflow",
            "warning",
            "k:7 pid=(0,0,0): shift by 32 of a 32-bit integer in 2 lanes [2, 3]; shifts by >= the bit "
            "width are undefined",
        )
    ]
    assert _messages(
        lambda o: undefined.undefined_cast(o, site(), lanes, target="int32", first=float("nan"))
    ) == [
        (
            "undefined_cast",
            "warning",
            "k:7 pid=(0,0,0): float-to-int32 cast of NaN or out-of-range values in 2 lanes [2, 3] "
            "(first: nan); NVIDIA GPUs saturate (NaN -> 0), other backends and C leave the result undefined",
        )
    ]


def test_division_by_zero_and_its_clean_twin(interpret):
    a = np.arange(16, dtype=np.int32)
    b = np.ones(16, np.int32)
    b[[3, 7]] = 0
    with interpret() as session:
        dk.divide_kernel[(1,)](a, b, np.zeros_like(a), 16, BLOCK=16)
    assert [f.kind for f in session.trace[0].findings] == ["division_by_zero"]
    with interpret() as session:
        dk.divide_kernel[(1,)](a, np.ones_like(b), np.zeros_like(a), 16, BLOCK=16)
    assert session.trace[0].findings == []


def test_overflowing_offsets_and_their_clean_twin(interpret):
    out = np.zeros(1024, np.float32)
    with interpret() as session:
        dk.scaled_offsets_kernel[(1,)](out, out, 1024, SCALE=4_000_000, BLOCK=1024)
    assert [f.kind for f in session.trace[0].findings] == ["int_overflow"]
    with interpret() as session:
        dk.scaled_offsets_kernel_clean[(1,)](out, out, 1024, SCALE=4_000_000, BLOCK=1024)
    assert session.trace[0].findings == []
