"""Engine speed and memory against stock TRITON_INTERPRET=1, on the same kernels and sizes, in one run.

    python bench/bench_engine.py [--quick]

The stock interpreter needs torch tensors and reads TRITON_INTERPRET when kernels are decorated,
so it runs in a child process (started by this script) that sets the variable before importing the
kernels. Every (case, side) runs in fresh processes: stock, kernel_nb with capture (default
options) and kernel_nb without capture. Each process reports the median of a few repetitions and
its peak resident memory above what the inputs took. Every side runs in several processes
(--processes) and reports the median of theirs: a launch of a fraction of a second varies from
process to process with what the fresh heap costs (first touches of memory), and on a shared
machine both sides vary with what else runs.
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
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CASES = ["vector_add", "softmax", "matmul", "layer_norm", "flash_attention"]


def make_case(
    name: str, quick: bool, as_torch: bool = False, wrap: Callable[[np.ndarray], Any] | None = None
) -> tuple[Callable[[], None], str]:
    """A launch closure for one case (arguments prepared once), and its size as text.

    Arrays are numpy's, torch's (`as_torch`) or what `wrap` makes of numpy's (CuPy's, say).
    """
    import triton

    from tests.engine import kernels as k

    rng = np.random.default_rng(0)
    if wrap is None and as_torch:
        import torch

        wrap = torch.from_numpy
    elif wrap is None:
        wrap = lambda a: a  # noqa: E731

    def f32(*shape: int) -> Any:
        return wrap(rng.standard_normal(shape, dtype=np.float32))

    if name == "vector_add":
        n = 1 << (18 if quick else 22)
        x, y, out = f32(n), f32(n), f32(n)
        return (lambda: k.add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)), f"n={n}"
    if name == "softmax":
        rows, cols = (256 if quick else 4096), 1000
        x, out = f32(rows, cols), f32(rows, cols)
        return (lambda: k.softmax_kernel[(rows,)](out, x, cols, cols, cols, BLOCK=1024)), f"{rows}x{cols}"
    if name == "matmul":
        m = 128 if quick else 1024
        a, b, c = f32(m, m), f32(m, m), f32(m, m)
        grid = (m // 64, m // 64)
        return (
            lambda: k.matmul_kernel[grid](
                a, b, c, m, m, m, m, 1, m, 1, m, 1, BLOCK_M=64, BLOCK_N=64, BLOCK_K=64
            )
        ), f"{m}^3 fp32"
    if name == "layer_norm":
        rows, n = (256 if quick else 4096), 1024
        x, y, w, bias = f32(rows, n), f32(rows, n), f32(n), f32(n)
        mean, rstd = f32(rows), f32(rows)
        return (
            lambda: k.layer_norm_fwd[(rows,)](x, y, w, bias, mean, rstd, n, n, 1e-5, BLOCK=1024)
        ), f"{rows}x{n}"
    if name == "flash_attention":
        heads, seq, d = (2, 256, 64) if quick else (8, 1024, 64)
        q, kk, v, out = f32(heads, seq, d), f32(heads, seq, d), f32(heads, seq, d), f32(heads, seq, d)
        return (
            lambda: k.causal_attention_fwd[(seq // 64, heads)](
                q, kk, v, out, seq, 0.125, D=d, BLOCK_M=64, BLOCK_N=64
            )
        ), f"heads={heads} seq={seq} d={d} causal"
    raise ValueError(name)


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(side: str, name: str, quick: bool, repeats: int) -> None:
    """One case on one side, in a fresh process: median seconds and peak memory above the inputs."""
    launch, size = make_case(name, quick, as_torch=side == "stock")
    if side == "stock":
        run = launch
    else:
        import kernel_nb

        options: dict[str, Any] = {"capture": side == "capture"}
        ran: list[str] = []

        def run() -> None:
            with kernel_nb.interpret(**options) as session:
                launch()
            last = session.trace[-1]
            ran[:] = [last.strategy + (f" ({last.strategy_note})" if last.strategy_note else "")]

    before = _rss_mib()
    run()  # also the warm-up: source rewriting, first-call caches
    peak = _peak_rss_mib() - before
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    how = ran[0] if side != "stock" else ""
    print(json.dumps({"size": size, "seconds": statistics.median(times), "peak_mib": peak, "how": how}))


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--repeats", type=int, default=1, help="timed runs per process")
    parser.add_argument("--processes", type=int, default=3, help="processes per side")
    parser.add_argument("--child", nargs=2, metavar=("SIDE", "CASE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.quick, args.repeats)
        return

    results: dict[tuple[str, str], dict[str, Any]] = {}
    spread: dict[tuple[str, str], list[float]] = {}
    for name in CASES:
        for side in ("stock", "capture", "no-capture"):
            runs = [_in_process(name, side, args) for _ in range(args.processes)]
            failed = [r for r in runs if isinstance(r, str)]
            if failed:
                last = failed[0]
                # e.g. stock triton 3.6 with numpy >= 2.4 fails on range(n) with a runtime n
                print(f"{name} / {side} failed: {last}", file=sys.stderr)
                if side == "stock" and "torch" in last:
                    sys.exit(
                        "the stock interpreter needs torch: pip install torch"
                        " --index-url https://download.pytorch.org/whl/cpu"
                    )
                results[name, side] = {
                    "size": "",
                    "seconds": float("nan"),
                    "peak_mib": float("nan"),
                    "how": "failed",
                }
                continue
            done = [r for r in runs if isinstance(r, dict)]
            seconds = [r["seconds"] for r in done]
            spread[name, side] = seconds
            results[name, side] = {
                **done[0],
                "seconds": statistics.median(seconds),
                "peak_mib": max(r["peak_mib"] for r in done),
            }

    print(
        f"{'case':<16} {'size':<28} {'stock s':>8} {'capture s':>9} {'ratio':>6} {'no-cap s':>8} {'ratio':>6}"
        f" {'stock MiB':>9} {'capture MiB':>11} {'no-cap MiB':>10}"
    )
    for name in CASES:
        stock, cap, nocap = (results[name, side] for side in ("stock", "capture", "no-capture"))
        size = stock["size"] or cap["size"]
        print(
            f"{name:<16} {size:<28} {stock['seconds']:>8.3f} {cap['seconds']:>9.3f}"
            f" {stock['seconds'] / cap['seconds']:>5.2f}x {nocap['seconds']:>8.3f}"
            f" {stock['seconds'] / nocap['seconds']:>5.2f}x"
            f" {stock['peak_mib']:>9.1f} {cap['peak_mib']:>11.1f} {nocap['peak_mib']:>10.1f}"
        )
    print(
        "ratio = stock time / kernel_nb time (above 1: kernel_nb is faster); MiB = peak RSS above the inputs"
    )
    print(
        f"seconds: median of {args.repeats} run(s) after a warm-up run, per process, then the median"
        f" of {args.processes} processes (MiB: the largest)"
    )
    for name in CASES:
        for side in ("stock", "capture", "no-capture"):
            times = " ".join(f"{t:.3f}" for t in sorted(spread.get((name, side), [])))
            print(f"{name:<16} {side:<10} per process: {times}")
    for name in CASES:
        print(f"{name:<16} ran {results[name, 'capture'].get('how', '?')}")


if __name__ == "__main__":
    main()
