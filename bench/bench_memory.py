"""Engine memory against its budget, and against stock TRITON_INTERPRET=1 in the same run.

    python bench/bench_memory.py [--cases chain,huge_grid,records] [--no-stock]

Each (case, side) runs in a fresh process and reports its peak resident memory above what it
held once its inputs were made, next to the launch's budget (`budget_bytes` of kept values plus
`working_set_bytes` of the batched strategy's programs run together). A watchdog ends a process
whose resident memory passes --limit (so a case that grows without bound is reported, not left to
take the machine), and one that runs past --timeout is ended. Cases:

- chain: 2**25 fp32 elements, a kernel of 50 statements (BLOCK=1024, 32768 programs).
- huge_grid: a no-op kernel on a grid of (2**31-1,), interrupted by a SIGINT from a timer
  thread after 5 s: how it ends, how long the interrupt took to end it, and its memory.
- records: 10000 programs looping 1000 times, two records per iteration (20 M records).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CASES = ["chain", "huge_grid", "records"]
INTERRUPT_AFTER_S = 5.0


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _watch(limit: int, started: float) -> None:
    """End the process once its memory passes `limit`, reporting that it did."""

    def watch() -> None:
        while True:
            if _rss() > limit:
                print(
                    json.dumps({"outcome": f"passed {limit >> 20} MiB after {time.time() - started:.1f} s"})
                )
                sys.stdout.flush()
                os._exit(0)
            time.sleep(0.05)

    threading.Thread(target=watch, daemon=True).start()


def _case(name: str, stock: bool) -> tuple[Any, str]:
    """The launch of a case (inputs made) and its size as text."""
    from bench import memory_kernels as mk

    wrap: Any = (lambda a: __import__("torch").from_numpy(a)) if stock else (lambda a: a)
    if name == "chain":
        n, block = 1 << 25, 1024
        x, out = wrap(np.ones(n, np.float32)), wrap(np.zeros(n, np.float32))
        return (lambda: mk.chain_kernel[(n // block,)](x, out, n, BLOCK=block)), "2**25 x 50 statements"
    if name == "huge_grid":
        x = wrap(np.zeros(1, np.float32))
        return (lambda: mk.noop_kernel[(2**31 - 1,)](x)), "grid (2**31-1,), SIGINT after 5 s"
    if name == "records":
        programs = 10000
        out = wrap(np.zeros(programs, np.float32))
        return (lambda: mk.loop_kernel[(programs,)](out, STEPS=1000)), "10000 programs x 1000 x 2 records"
    raise ValueError(name)


def child(side: str, name: str, limit: int) -> None:
    """One case on one side, in a fresh process."""
    launch, size = _case(name, stock=side == "stock")
    budget = ""
    if side == "stock":
        run = launch
    else:
        import kernel_nb
        from kernel_nb.options import Options

        options = Options()
        budget = f"{(options.budget_bytes + getattr(options, 'working_set_bytes', 0)) >> 20} MiB"

        def run() -> None:
            with kernel_nb.interpret():
                launch()

    before = _rss()
    started = time.time()
    _watch(before + limit, started)
    interrupted_at: list[float] = []
    if name == "huge_grid":

        def interrupt() -> None:
            interrupted_at.append(time.time())
            os.kill(os.getpid(), signal.SIGINT)

        threading.Timer(INTERRUPT_AFTER_S, interrupt).start()
    try:
        run()
        outcome = "finished"
    except KeyboardInterrupt as exc:
        outcome = type(exc).__name__
    ended = time.time()
    result = {
        "size": size,
        "seconds": ended - started,
        "peak_mib": (_peak_rss() - before) / 2**20,
        "outcome": outcome,
        "budget": budget,
    }
    if interrupted_at:
        result["after_interrupt_s"] = ended - interrupted_at[0]
    print(json.dumps(result))


def _in_process(name: str, side: str, limit: int, timeout: int) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    if side == "stock":
        env["TRITON_INTERPRET"] = "1"
    command = [sys.executable, __file__, "--child", side, name, "--limit", str(limit >> 20)]
    try:
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, check=False, cwd=ROOT, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return {"outcome": f"still running after {timeout} s (ended)"}
    lines = done.stdout.strip().splitlines()
    if not lines:
        tail = done.stderr.strip().splitlines()
        return {"outcome": f"failed: {tail[-1] if tail else done.returncode}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases")
    parser.add_argument("--no-stock", action="store_true", help="skip stock TRITON_INTERPRET=1")
    parser.add_argument("--limit", type=int, default=6144, help="MiB above the inputs a process may take")
    parser.add_argument("--timeout", type=int, default=900, help="seconds a process may run")
    parser.add_argument("--child", nargs=2, metavar=("SIDE", "CASE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    limit = args.limit << 20
    if args.child:
        child(args.child[0], args.child[1], limit)
        return
    sides = ["kernel_nb"] if args.no_stock else ["kernel_nb", "stock"]
    print(f"{'case':<10} {'side':<10} {'size':<36} {'s':>7} {'peak MiB':>9} {'budget':>8}  outcome")
    peaks: dict[tuple[str, str], float] = {}
    for name in args.cases.split(","):
        for side in sides:
            r = _in_process(name, side, limit, args.timeout)
            peak = r.get("peak_mib", float("nan"))
            peaks[name, side] = peak
            outcome = r["outcome"]
            if "after_interrupt_s" in r:
                outcome += f" ({r['after_interrupt_s']:.2f} s after the SIGINT)"
            print(
                f"{name:<10} {side:<10} {r.get('size', ''):<36} {r.get('seconds', float('nan')):>7.1f}"
                f" {peak:>9.1f} {r.get('budget', ''):>8}  {outcome}"
            )
        if "stock" in sides and peaks[name, "stock"] > 0:
            print(
                f"{'':<10} {'ratio':<10} kernel_nb / stock peak: {peaks[name, 'kernel_nb'] / peaks[name, 'stock']:.2f}"
            )
    print("peak MiB = peak RSS above the inputs; budget = budget_bytes + working_set_bytes")


if __name__ == "__main__":
    main()
