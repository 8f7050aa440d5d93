"""Every float → int cast of the language, on NaN, infinities and each target's edges, against what an
NVIDIA H200 computed (fixtures/gpu_casts.npz, made by tests/gpu/make_cast_fixtures.py)."""

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import triton.language as tl

import kernel_nb
from kernel_nb.errors import KernelCompileError
from tests.engine import numerics_kernels as nk

GPU = np.load(Path(__file__).parent / "fixtures" / "gpu_casts.npz")
SOURCES = {
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float32": np.float32,
    "float64": np.float64,
}
TARGETS = {
    "int8": tl.int8, "int16": tl.int16, "int32": tl.int32, "int64": tl.int64,
    "uint8": tl.uint8, "uint16": tl.uint16, "uint32": tl.uint32, "uint64": tl.uint64,
}  # fmt: skip
BLOCK = 512


def test_the_fixture_holds_every_pair_the_compiler_takes():
    measured = {key for key in GPU.files if key.startswith("cast_")}
    assert measured == {f"cast_{s}_{d}" for s in SOURCES for d in TARGETS}
    assert str(GPU["device"]) == "NVIDIA H200"
    assert GPU["inputs_float64"].size <= BLOCK


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("source", sorted(SOURCES))
def test_float_to_int_cast_matches_the_gpu(source, target):
    x = GPU[f"inputs_{source}"].view(SOURCES[source])
    out = np.zeros(x.size, target)
    with kernel_nb.interpret(detect=False):
        nk.cast_kernel[(1,)](x, out, x.size, DST=TARGETS[target], BLOCK=BLOCK)
    gpu = GPU[f"cast_{source}_{target}"]
    differ = np.flatnonzero(out != gpu)
    assert differ.size == 0, (
        f"{differ.size} of {x.size} differ, e.g. {x[differ[:4]].astype(np.float64)} → "
        f"{out[differ[:4]]} (GPU: {gpu[differ[:4]]})"
    )


def test_nan_takes_the_top_bit_from_fp64_and_into_64_bits():
    nan = np.array([np.nan], np.float64)
    for dst, expected in [("int16", -32768), ("uint16", 32768), ("int32", -(2**31)), ("uint32", 2**31),
                          ("int64", -(2**63)), ("uint64", 2**63), ("int8", 0)]:  # fmt: skip
        out = np.zeros(1, dst)
        with kernel_nb.interpret(detect=False):
            nk.cast_kernel[(1,)](nan, out, 1, DST=TARGETS[dst], BLOCK=2)
        assert int(out[0]) == expected, dst


@pytest.mark.parametrize("source", [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2])
def test_fp8_to_int_is_refused_as_the_compiler_refuses_it(source):
    x = np.array([1.5, np.nan], source)
    out = np.zeros(2, np.int32)
    with pytest.raises(KernelCompileError) as info, kernel_nb.interpret():
        nk.cast_kernel[(1,)](x, out, 2, DST=tl.int32, BLOCK=2)
    assert info.value.line == nk.cast_kernel.fn.__code__.co_firstlineno + 4
    assert "AssertionError: cannot cast" in str(
        info.value
    )  # the language's own refusal, as the compiler gives it
    assert (out == 0).all()
