"""Engine speed and memory against stock TRITON_INTERPRET=1 and a numpy floor, on the same kernels and sizes.

    python bench/bench_engine.py [--quick] [--cases vector_add,softmax] [--sides stock,kernel_nb,numpy]
                                 [--processes 3] [--repeats 3] [--no-capture] [--json PATH]

Every (case, side) runs in fresh processes, the sides taking turns process by process (stock,
kernel_nb, numpy, stock, ...) so that what else runs on a shared machine falls on all of them. A
process imports, prepares its inputs, then times its first launch (a user's first launch pays
Triton's and kernel_nb's first-call costs: source rewriting, caches, first touches of memory) and
the median of --repeats further launches, and reports its peak resident memory above the inputs
over those launches. The stock interpreter needs torch tensors and reads TRITON_INTERPRET when
kernels are decorated, so its process sets the variable before importing the kernels. kernel_nb
launches under `kernel_nb.interpret()` with default options; numpy runs `bench.numpy_floor`, the
same computation vectorised. Each side reports the median of its processes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CASES = ["vector_add", "softmax", "matmul_512", "matmul", "layer_norm", "flash_attention"]
SIDES = ["stock", "kernel_nb", "numpy"]
NO_CAPTURE = "no-capture"
EPS = 1e-5
SCALE = 0.125


@dataclass(frozen=True)
class Case:
    """One bench case: its launch, its numpy floor and the numpy arrays both read and write.

    `inputs` holds every array argument of the launch by name, before `wrap`; `outputs` names those
    the kernel writes, in the order `floor` returns them.
    """

    launch: Callable[[], None]
    floor: Callable[[], Any]
    size: str
    inputs: dict[str, np.ndarray]
    outputs: tuple[str, ...]


def build_case(
    name: str, quick: bool, as_torch: bool = False, wrap: Callable[[np.ndarray], Any] | None = None
) -> Case:
    """One case with its arguments prepared once.

    Arrays are numpy's, torch's (`as_torch`) or what `wrap` makes of numpy's (CuPy's, say).
    """
    import triton

    from bench import numpy_floor as floor
    from tests.engine import kernels as k

    rng = np.random.default_rng(0)
    if wrap is None and as_torch:
        import torch

        wrap = torch.from_numpy
    elif wrap is None:
        wrap = lambda a: a  # noqa: E731
    inputs: dict[str, np.ndarray] = {}

    def f32(name: str, *shape: int) -> Any:
        inputs[name] = rng.standard_normal(shape, dtype=np.float32)
        return wrap(inputs[name])

    if name == "vector_add":
        n = 1 << (18 if quick else 22)
        x, y, out = f32("x", n), f32("y", n), f32("out", n)
        return Case(
            lambda: k.add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024),
            lambda: floor.vector_add(inputs["x"], inputs["y"]),
            f"n={n}",
            inputs,
            ("out",),
        )
    if name == "softmax":
        rows, cols = (256 if quick else 4096), 1000
        x, out = f32("x", rows, cols), f32("out", rows, cols)
        return Case(
            lambda: k.softmax_kernel[(rows,)](out, x, cols, cols, cols, BLOCK=1024),
            lambda: floor.softmax(inputs["x"]),
            f"{rows}x{cols}",
            inputs,
            ("out",),
        )
    if name in ("matmul", "matmul_512"):
        m = (64 if name == "matmul_512" else 128) if quick else (512 if name == "matmul_512" else 1024)
        a, b, c = f32("a", m, m), f32("b", m, m), f32("c", m, m)
        grid = (m // 64, m // 64)
        return Case(
            lambda: k.matmul_kernel[grid](
                a, b, c, m, m, m, m, 1, m, 1, m, 1, BLOCK_M=64, BLOCK_N=64, BLOCK_K=64
            ),
            lambda: floor.matmul(inputs["a"], inputs["b"]),
            f"{m}^3 fp32",
            inputs,
            ("c",),
        )
    if name == "layer_norm":
        rows, n = (256 if quick else 4096), 1024
        x, y, w, bias = f32("x", rows, n), f32("y", rows, n), f32("w", n), f32("b", n)
        mean, rstd = f32("mean", rows), f32("rstd", rows)
        return Case(
            lambda: k.layer_norm_fwd[(rows,)](x, y, w, bias, mean, rstd, n, n, EPS, BLOCK=1024),
            lambda: floor.layer_norm(inputs["x"], inputs["w"], inputs["b"], EPS),
            f"{rows}x{n}",
            inputs,
            ("y", "mean", "rstd"),
        )
    if name == "flash_attention":
        heads, seq, d = (2, 256, 64) if quick else (8, 1024, 64)
        q, kk = f32("q", heads, seq, d), f32("k", heads, seq, d)
        v, out = f32("v", heads, seq, d), f32("out", heads, seq, d)
        return Case(
            lambda: k.causal_attention_fwd[(seq // 64, heads)](
                q, kk, v, out, seq, SCALE, D=d, BLOCK_M=64, BLOCK_N=64
            ),
            lambda: floor.causal_attention(inputs["q"], inputs["k"], inputs["v"], SCALE),
            f"heads={heads} seq={seq} d={d} causal",
            inputs,
            ("out",),
        )
    raise ValueError(name)


def make_case(
    name: str, quick: bool, as_torch: bool = False, wrap: Callable[[np.ndarray], Any] | None = None
) -> tuple[Callable[[], None], str]:
    """A launch closure for one case (arguments prepared once), and its size as text."""
    case = build_case(name, quick, as_torch, wrap)
    return case.launch, case.size


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _reset_peak() -> bool:
    """Start the peak resident memory afresh (Linux >= 4.0), so imports' transient peaks do not hide the launches'."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def _peak_rss_mib(reset: bool) -> float:
    if reset:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def time_launches(run: Callable[[], Any], repeats: int) -> tuple[float, list[float], float]:
    """The first call of `run` and `repeats` more, in seconds, and the peak RSS above what the
    process held before them, in MiB."""
    before = _rss_mib()
    reset = _reset_peak()
    start = time.perf_counter()
    run()
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return first, times, _peak_rss_mib(reset) - before


def child(side: str, name: str, quick: bool, repeats: int) -> None:
    """One case on one side, in a fresh process: first launch, warm launches, peak memory above the inputs."""
    how = ""
    if side in ("kernel_nb", NO_CAPTURE):
        import kernel_nb
        from kernel_nb.options import Options

    case = build_case(name, quick, as_torch=side == "stock")
    array_bytes = sum(a.nbytes for a in case.inputs.values())
    limit_mib = None
    if side == "stock":
        run: Callable[[], Any] = case.launch
    elif side == "numpy":
        run = case.floor
    else:
        options: dict[str, Any] = {"capture": side == "kernel_nb"}
        limit_mib = (4 * array_bytes + Options().budget_bytes) / 2**20
        ran: list[str] = []

        def run() -> None:
            with kernel_nb.interpret(**options) as session:
                case.launch()
            last = session.trace[-1]
            ran[:] = [last.strategy + (f" ({last.strategy_note})" if last.strategy_note else "")]

    first, times, peak = time_launches(run, repeats)
    if side in ("kernel_nb", NO_CAPTURE):
        how = ran[0]
    print(
        json.dumps(
            {
                "size": case.size,
                "first": first,
                "warm": statistics.median(times),
                "warm_runs": times,
                "peak_mib": peak,
                "array_bytes": array_bytes,
                "limit_mib": limit_mib,
                "how": how,
            }
        )
    )


def _in_process(name: str, side: str, args: argparse.Namespace) -> dict[str, Any] | str:
    """One (case, side) in a fresh process: its result, or the last line of its error."""
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    if side == "stock":
        env["TRITON_INTERPRET"] = "1"
    command = [sys.executable, __file__, "--child", side, name, "--repeats", str(args.repeats)]
    if args.quick:
        command.append("--quick")
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "no output"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians of the processes' times; the largest of their peaks, the one a limit must hold."""
    return {
        "size": runs[0]["size"],
        "first": statistics.median(r["first"] for r in runs),
        "warm": statistics.median(r["warm"] for r in runs),
        "peak_mib": max(r["peak_mib"] for r in runs),
        "limit_mib": runs[0]["limit_mib"],
        "how": runs[0]["how"],
    }


def _list(text: str, allowed: list[str], what: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in allowed]
    if unknown:
        sys.exit(f"unknown {what}: {', '.join(unknown)} (choose from {', '.join(allowed)})")
    return names


def _num(value: float | None, width: int, digits: int = 1) -> str:
    if value is None or value != value:
        return f"{'-':>{width}}"
    return f"{value:>{width}.{digits}f}"


def _ms(seconds: float | None, width: int = 0) -> str:
    """Milliseconds with the digits their size deserves: a numpy floor takes microseconds, stock seconds."""
    if seconds is None or seconds != seconds:
        return f"{'-':>{width}}"
    ms = seconds * 1e3
    digits = 0 if ms >= 1000 else 1 if ms >= 10 else 2 if ms >= 1 else 3
    return f"{ms:>{width}.{digits}f}"


def _ratio(top: float | None, bottom: float | None, width: int = 7) -> str:
    if top is None or bottom is None or top != top or bottom != bottom or bottom == 0:
        return f"{'-':>{width}}"
    ratio = top / bottom
    return f"{ratio:>{width - 1}.{0 if ratio >= 100 else 2}f}x"


def _print_table(cases: list[str], sides: list[str], summary: dict[str, dict[str, Any]]) -> None:
    def get(name: str, side: str, key: str) -> Any:
        return summary.get(name, {}).get(side, {}).get(key)

    nocap = NO_CAPTURE in sides
    head = (
        f"{'case':<16} {'size':<26} {'stock 1st':>9} {'knb 1st':>8} {'1st x':>7}"
        f" {'stock warm':>10} {'knb warm':>8} {'warm x':>7} {'numpy':>8} {'knb/np':>8}"
        f" {'stock MiB':>9} {'knb MiB':>8} {'np MiB':>7} {'limit MiB':>9} {'within':>6}"
    )
    if nocap:
        head += f" {'nocap 1st':>9} {'nocap warm':>10} {'nocap MiB':>9}"
    print(head)
    for name in cases:
        size = next((get(name, s, "size") for s in sides if get(name, s, "size")), "")
        peak, limit = get(name, "kernel_nb", "peak_mib"), get(name, "kernel_nb", "limit_mib")
        within = "-" if peak is None or limit is None else ("yes" if peak <= limit else "NO")
        row = (
            f"{name:<16} {size:<26} {_ms(get(name, 'stock', 'first'), 9)}"
            f" {_ms(get(name, 'kernel_nb', 'first'), 8)}"
            f" {_ratio(get(name, 'stock', 'first'), get(name, 'kernel_nb', 'first'))}"
            f" {_ms(get(name, 'stock', 'warm'), 10)} {_ms(get(name, 'kernel_nb', 'warm'), 8)}"
            f" {_ratio(get(name, 'stock', 'warm'), get(name, 'kernel_nb', 'warm'))}"
            f" {_ms(get(name, 'numpy', 'warm'), 8)}"
            f" {_ratio(get(name, 'kernel_nb', 'warm'), get(name, 'numpy', 'warm'), 8)}"
            f" {_num(get(name, 'stock', 'peak_mib'), 9, 1)} {_num(peak, 8, 1)}"
            f" {_num(get(name, 'numpy', 'peak_mib'), 7, 1)} {_num(limit, 9, 1)} {within:>6}"
        )
        if nocap:
            row += (
                f" {_ms(get(name, NO_CAPTURE, 'first'), 9)} {_ms(get(name, NO_CAPTURE, 'warm'), 10)}"
                f" {_num(get(name, NO_CAPTURE, 'peak_mib'), 9, 1)}"
            )
        print(row)


def _print_footer(args: argparse.Namespace, cases: list[str], sides: list[str], raw: dict[str, Any]) -> None:
    print(
        "times in ms; 1st = the first launch in a fresh process whose imports and inputs are ready (first-call"
        " costs included);\n"
        f"warm = median of the {args.repeats} launches after it in the same process; every time is the"
        f" median of {args.processes} process(es) per side;\n"
        "knb = kernel_nb: `with kernel_nb.interpret(): launch()`, default options (capture on)"
        + ("; nocap = the same with capture=False;\n" if NO_CAPTURE in sides else ";\n")
        + "1st x, warm x = stock / knb (above 1: kernel_nb is faster); numpy = bench/numpy_floor.py, the same"
        " computation vectorised (warm); knb/np = knb warm / numpy;\n"
        "MiB = peak RSS above the inputs over the first and warm launches, the largest of the processes;"
        " limit = 4 x the launch's array bytes + Options().budget_bytes; within = knb MiB <= limit"
    )
    print("per process (first / warm ms):")
    for name in cases:
        for side in sides:
            runs = raw.get(name, {}).get(side, [])
            values = " ".join(
                f"{_ms(r['first'])}/{_ms(r['warm'])}" if isinstance(r, dict) else "failed" for r in runs
            )
            print(f"  {name:<16} {side:<10} {values}")
    for name in cases:
        ran = [
            f"{runs[0]['how']} ({side})"
            for side in ("kernel_nb", NO_CAPTURE)
            if (runs := [r for r in raw.get(name, {}).get(side, []) if isinstance(r, dict)])
        ]
        if ran:
            print(f"  {name:<16} ran {', '.join(ran)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--repeats", type=int, default=3, help="warm launches per process after the first")
    parser.add_argument("--processes", type=int, default=3, help="processes per side")
    parser.add_argument(
        "--cases", default=",".join(CASES), help="comma-separated subset of " + ",".join(CASES)
    )
    parser.add_argument(
        "--sides", default=",".join(SIDES), help="comma-separated subset of " + ",".join(SIDES)
    )
    parser.add_argument("--no-capture", action="store_true", help="also kernel_nb with capture=False")
    parser.add_argument("--json", metavar="PATH", help="also write every process's results there")
    parser.add_argument("--child", nargs=2, metavar=("SIDE", "CASE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.quick, args.repeats)
        return

    cases = _list(args.cases, CASES, "case")
    sides = _list(args.sides, SIDES, "side") + ([NO_CAPTURE] if args.no_capture else [])
    raw: dict[str, dict[str, list[dict[str, Any] | str]]] = {}
    summary: dict[str, dict[str, Any]] = {}
    for name in cases:
        raw[name] = {side: [] for side in sides}
        for _ in range(args.processes):
            for side in sides:
                result = _in_process(name, side, args)
                raw[name][side].append(result)
                if isinstance(result, str):
                    # e.g. stock triton 3.6 with numpy >= 2.4 fails on range(n) with a runtime n
                    print(f"{name} / {side} failed: {result}", file=sys.stderr)
                    if side == "stock" and "torch" in result:
                        sys.exit(
                            "the stock interpreter needs torch: pip install torch"
                            " --index-url https://download.pytorch.org/whl/cpu"
                        )
        summary[name] = {}
        for side in sides:
            done = [r for r in raw[name][side] if isinstance(r, dict)]
            if done:
                summary[name][side] = _summary(done)

    _print_table(cases, sides, summary)
    _print_footer(args, cases, sides, raw)
    if args.json:
        Path(args.json).write_text(
            json.dumps({"args": vars(args), "summary": summary, "processes": raw}, indent=1) + "\n"
        )


if __name__ == "__main__":
    main()
