"""Measure, on a CUDA GPU, what every libdevice function returns, for kernel_nb's CPU model of it.

    python tests/gpu/make_libdevice_fixtures.py [OUT.npz]

For each function of `triton.language.extra.cuda.libdevice` and each dtype signature of its table,
one small `@triton.jit` kernel calls the function on special values (NaN, ±Inf, ±0, subnormals,
integer and rounding boundaries) and seeded random values. Inputs and outputs are saved under
`"<symbol>/in0"`, ..., `"<symbol>/out"`, with `"meta/triton"`, `"meta/device"` and `"meta/skipped"`
(JSON: symbol → why it did not run). The result is committed as
tests/engine/fixtures/libdevice_gpu.npz and checked on the CPU by
tests/engine/test_libdevice_gpu_fixture.py. Needs triton, torch and numpy only; one process, a few
minutes (most of it compiling one kernel per signature).
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import itertools
import json
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "engine" / "fixtures" / "libdevice_gpu.npz"
BLOCK = 1024
NUMPY = {"fp32": np.float32, "fp64": np.float64, "int32": np.int32, "int64": np.int64,
         "uint32": np.uint32, "uint64": np.uint64}  # fmt: skip


@dataclass(frozen=True)
class Signature:
    """One row of a libdevice function's table: `function(args) -> result` calls `symbol`."""

    function: str
    symbol: str
    args: tuple[str, ...]
    result: str


def signatures() -> list[Signature]:
    """Every (function, dtype signature) of Triton's CUDA libdevice, read from its source.

    Each function is `core.extern_elementwise("", "", [args], {(core.dtype(...), ...): ("__nv_x",
    core.dtype(...))}, ...)`; reading the tables from the source keeps this script in step with
    whichever Triton the GPU machine has.
    """
    from triton.language.extra.cuda import libdevice

    tree = ast.parse(inspect.getsource(libdevice))
    found = []
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, ast.Dict):
                continue
            for key, value in zip(node.keys, node.values):
                if not (isinstance(key, ast.Tuple) and isinstance(value, ast.Tuple)):
                    continue
                args = tuple(_dtype_name(e) for e in key.elts)
                symbol = value.elts[0]
                if isinstance(symbol, ast.Constant) and isinstance(symbol.value, str):
                    found.append(Signature(fn.name, symbol.value, args, _dtype_name(value.elts[1])))
    return found


def _dtype_name(node: ast.expr) -> str:
    assert isinstance(node, ast.Call) and isinstance(node.args[0], ast.Constant)
    return str(node.args[0].value)


def kernel_source(sigs: list[Signature]) -> str:
    """A module with one kernel per signature: load each argument, call the function, store."""
    lines = [
        "import triton",
        "import triton.language as tl",
        "from triton.language.extra.cuda import libdevice",
        "",
    ]
    for index, sig in enumerate(sigs):
        params = ", ".join(f"in{i}_ptr" for i in range(len(sig.args)))
        lines += [
            "",
            "@triton.jit",
            f"def k_{index}(out_ptr, {params}, n, BLOCK: tl.constexpr):",
            "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
            "    mask = offs < n",
        ]
        lines += [f"    a{i} = tl.load(in{i}_ptr + offs, mask=mask)" for i in range(len(sig.args))]
        call_args = ", ".join(f"a{i}" for i in range(len(sig.args)))
        lines.append(f"    tl.store(out_ptr + offs, libdevice.{sig.function}({call_args}), mask=mask)")
    return "\n".join(lines) + "\n"


def load_kernels(sigs: list[Signature], directory: Path) -> list:
    """Write the kernels to a real file (Triton reads a kernel's source through `inspect`), import it."""
    path = directory / "libdevice_fixture_kernels.py"
    path.write_text(kernel_source(sigs))
    spec = importlib.util.spec_from_file_location("libdevice_fixture_kernels", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [getattr(module, f"k_{index}") for index in range(len(sigs))]


# ---------------------------------------------------------------------------------------------
# Inputs: special values of each dtype plus seeded random values covering each argument's range.


def float_specials(dtype: type) -> np.ndarray:
    info = np.finfo(dtype)
    tiny, eps = float(info.tiny), float(info.eps)
    sub_min = float(info.smallest_subnormal)
    big = [1e10, 1e30, 2.0**31, 2.0**32, 2.0**63, 2.0**64, 2.0**31 - 128, 2.0**32 - 256, 2.0**24, 2.0**23]
    if dtype == np.float64:
        big += [1e300, 2.0**52, 2.0**53, 2.0**31 - 0.5, 2.0**32 - 0.5, 2.0**63 - 1024, 2.0**64 - 2048]
        small = [1e-300, 1e-310, 2.0**-1022 * 1.5]
    else:
        small = [1e-38, 1e-40, 2.0**-126 * 1.5]
    values = [0.0, 1.0, 0.5, 1.5, 2.0, 2.5, 3.0, 3.5, 0.1, 0.25, 0.75, 10.0, 100.0, np.pi, np.pi / 2,
              np.pi / 4, 0.49999997, 0.50000006, 1 - eps / 2, 1 + eps, 1e-3, 1e3, 88.72, 87.3, 103.5,
              126.5, 149.5, 709.7, 745.2, 1e-7, 1e-20, 4.0, 8.0, 127.9,
              float(info.max), tiny, tiny * (1 - eps), sub_min, sub_min * 3, *big, *small]  # fmt: skip
    values = np.array(values, dtype=np.float64).astype(dtype)
    return np.concatenate([values, -values, np.array([np.inf, -np.inf, np.nan], dtype=dtype)])


def float_crossed(dtype: type, count: int) -> np.ndarray:
    """The special values that are crossed with each other for functions of several arguments."""
    info = np.finfo(dtype)
    tiny, sub, big = float(info.tiny), float(info.smallest_subnormal), float(info.max)
    values = [0.0, -0.0, 1.0, -1.0, 2.5, np.inf, np.nan, tiny, sub, big, 1e-3, -np.inf, -1.5, 0.5, 3.0,
              -tiny, -sub, -big, 1e10, -1e10, 2.0**31, 100.0, 2.0**-30, 7.0]  # fmt: skip
    return np.array(values[:count], dtype=dtype)


def int_specials(dtype: type) -> np.ndarray:
    info = np.iinfo(dtype)
    bits = info.bits
    values = [0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 33, 63, 64, 100, 255, 256, 0xFFFF, 0x10000, 0x12345678,
              2**24, 2**24 + 1, 2**31 - 1, 2**23 + 1, 126, 127, 128, 149, 150, 252, 253, 1022, 1023, 1074,
              1075, 2200, 0x7777, 0x8888, 0x3210]  # fmt: skip
    if bits == 64:
        values += [2**53, 2**53 + 1, 2**62, 2**63 - 1, 0x123456789ABCDEF0 & (2**63 - 1), 2**32, 2**32 + 1]
    values = [v for v in values if v <= info.max]
    if info.min < 0:
        values += [-v for v in values if -v >= info.min] + [int(info.min), int(info.min) + 1]
    else:
        values += [int(info.max), int(info.max) - 1, 2 ** (bits - 1), 2 ** (bits - 1) + 1]
    return np.array(sorted(set(values)), dtype=dtype)


def float_random(dtype: type, rng: np.random.Generator, n: int) -> np.ndarray:
    """A mix: small uniform ranges (domains of inverse functions), wide log-uniform magnitudes,
    integers and half-integers (rounding ties), and raw bit patterns (every exponent, NaN payloads)."""
    k = n // 8
    wide = 126 if dtype == np.float32 else 1020
    sign = rng.choice([-1.0, 1.0], size=k)
    parts = [
        rng.uniform(-1, 1, k),
        rng.uniform(0, 2, k),
        rng.uniform(-10, 10, k),
        sign * 2.0 ** rng.uniform(-40, 40, k),
        sign * 2.0 ** rng.uniform(-wide - 20, wide + 1, k),
        np.round(rng.uniform(-1e6, 1e6, k)) + rng.choice([0.0, 0.5, -0.5], size=k),
        1.0 + 2.0 ** rng.uniform(-30, 8, k),
    ]
    values = np.concatenate(parts).astype(dtype)
    uint = np.uint32 if dtype == np.float32 else np.uint64
    raw = rng.integers(0, np.iinfo(uint).max, size=n - values.size, dtype=uint, endpoint=True).view(dtype)
    return np.concatenate([values, raw])


def int_random(dtype: type, rng: np.random.Generator, n: int) -> np.ndarray:
    info = np.iinfo(dtype)
    half = n // 2
    full = rng.integers(info.min, info.max, size=half, dtype=dtype, endpoint=True)
    small = rng.integers(max(int(info.min), -300), 300, size=n - half, dtype=dtype, endpoint=True)
    return np.concatenate([full, small])


def int_argument_range(sig: Signature) -> tuple[int, int] | None:
    """Bessel orders: libdevice loops over the order, so a random 2**31 would spin for seconds."""
    if sig.function in ("jn", "yn"):
        return (-3, 130)
    return None


def inputs(sig: Signature, rng: np.random.Generator, n_random: int = 1024) -> list[np.ndarray]:
    """Columns of equal length: special values (crossed for several arguments) then random rows."""
    specials = []
    for dtype_name in sig.args:
        dtype = NUMPY[dtype_name]
        values = float_specials(dtype) if dtype_name.startswith("fp") else int_specials(dtype)
        bounds = int_argument_range(sig) if not dtype_name.startswith("fp") else None
        if bounds is not None:
            values = np.concatenate([values[(values >= bounds[0]) & (values <= bounds[1])],
                                     np.arange(-3, 12, dtype=dtype), np.array([128, 129], dtype=dtype)])  # fmt: skip
        specials.append(values)
    if len(sig.args) == 1:
        crossed = [specials[0]]
    else:
        per_arg = {2: 24, 3: 11, 4: 6}[len(sig.args)]
        picks = [
            float_crossed(NUMPY[name], per_arg) if name.startswith("fp") else _spread(values, per_arg)
            for values, name in zip(specials, sig.args)
        ]
        crossed = [np.array(column, dtype=NUMPY[name])
                   for column, name in zip(zip(*itertools.product(*picks)), sig.args)]  # fmt: skip
    columns = []
    for i, dtype_name in enumerate(sig.args):
        dtype = NUMPY[dtype_name]
        bounds = int_argument_range(sig) if not dtype_name.startswith("fp") else None
        if dtype_name.startswith("fp"):
            random = float_random(dtype, rng, n_random)
        elif bounds is not None:
            random = rng.integers(bounds[0], bounds[1], size=n_random, dtype=dtype, endpoint=True)
        else:
            random = int_random(dtype, rng, n_random)
        columns.append(np.concatenate([crossed[i] if len(sig.args) > 1 else specials[0], random]))
    _relate(sig, columns, rng)
    return columns


def _spread(values: np.ndarray, count: int) -> np.ndarray:
    """`count` values spread over the special list, always keeping its last entries (Inf, NaN)."""
    if values.size <= count:
        return values
    index = np.unique(np.concatenate([np.linspace(0, values.size - 4, count - 3).astype(int),
                                      np.arange(values.size - 3, values.size)]))  # fmt: skip
    return values[index]


def _relate(sig: Signature, columns: list[np.ndarray], rng: np.random.Generator) -> None:
    """Rows where float arguments are related (b = -a, b ≈ a, c = -a*b): the cancellations and
    near-ties that directed rounding and fmod/remainder are sensitive to."""
    floats = [i for i, name in enumerate(sig.args) if name.startswith("fp")]
    if len(floats) < 2:
        return
    first, second = columns[floats[0]], columns[floats[1]]
    n = first.size
    rows = rng.choice(np.arange(n - 1024, n), size=768, replace=False)
    third = rows[:256], rows[256:512], rows[512:]
    dtype = first.dtype.type
    with np.errstate(all="ignore"):
        second[third[0]] = -first[third[0]]
        second[third[1]] = first[third[1]] * dtype(1 + rng.uniform(-1e-6, 1e-6, 256))
        if len(floats) >= 3:
            columns[floats[2]][third[2]] = -(first[third[2]] * second[third[2]])
        else:
            second[third[2]] = first[third[2]] / dtype(rng.integers(1, 1000, 256))


# ---------------------------------------------------------------------------------------------
# Running on the GPU.


def run(kernel, sig: Signature, columns: list[np.ndarray]) -> np.ndarray:
    """Launch `kernel` on torch CUDA tensors; unsigned dtypes travel as signed ones, reinterpreted."""
    import torch
    import triton
    import triton.language as tl

    signed = {"uint32": (np.int32, tl.uint32), "uint64": (np.int64, tl.uint64)}

    def device(array: np.ndarray, name: str):
        if name in signed:
            tensor = torch.from_numpy(np.ascontiguousarray(array).view(signed[name][0])).cuda()
            return triton.reinterpret(tensor, signed[name][1])
        return torch.from_numpy(np.ascontiguousarray(array)).cuda()

    n = columns[0].size
    out = torch.zeros(n, dtype=getattr(torch, np.dtype(signed.get(sig.result, (NUMPY[sig.result],))[0]).name))
    out = out.cuda()
    out_arg = triton.reinterpret(out, signed[sig.result][1]) if sig.result in signed else out
    args = [device(column, name) for column, name in zip(columns, sig.args)]
    kernel[(triton.cdiv(n, BLOCK),)](out_arg, *args, n, BLOCK=BLOCK)
    torch.cuda.synchronize()
    return out.cpu().numpy().view(NUMPY[sig.result])


def main(path: Path) -> None:
    import torch
    import triton

    sigs = signatures()
    out: dict[str, np.ndarray] = {}
    skipped: dict[str, str] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="libdevice-fixtures-") as tmp:
        kernels = load_kernels(sigs, Path(tmp))
        for index, (sig, kernel) in enumerate(zip(sigs, kernels)):
            rng = np.random.default_rng(index)
            columns = inputs(sig, rng)
            try:
                result = run(kernel, sig, columns)
            except Exception as exc:  # a compile or launch failure is a finding, not a crash
                skipped[sig.symbol] = f"{type(exc).__name__}: {exc}".strip()[:2000]
                traceback.print_exc(limit=1)
                continue
            for i, column in enumerate(columns):
                out[f"{sig.symbol}/in{i}"] = column
            out[f"{sig.symbol}/out"] = result
            print(
                f"[{time.monotonic() - started:6.1f}s] {sig.symbol:24s} {sig.function}{sig.args}", flush=True
            )
    out["meta/triton"] = np.array(triton.__version__)
    out["meta/device"] = np.array(torch.cuda.get_device_name())
    out["meta/skipped"] = np.array(json.dumps(skipped, indent=1, sort_keys=True))
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **out)
    print(
        f"{len(sigs) - len(skipped)} of {len(sigs)} signatures recorded in {path}; skipped: {sorted(skipped)}"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT)
