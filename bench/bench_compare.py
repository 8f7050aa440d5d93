"""Where `kernel_nb.gpu.compare` spends its time, on a GPU: interpret / GPU / diff, per launch.

    python bench/bench_compare.py [--quick] [--processes 3]

Every case runs in fresh processes (a user's first `%%tkernel compare` is a first launch in a fresh
process): the process reports the import of kernel_nb, the session's entry, the first launch's
steps and the median of warm launches' steps, as `Comparison.seconds` records them. Arrays are CuPy
arrays on the device, as a GPU user's are. Needs CuPy and a CUDA device.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CASES = ["vector_add", "softmax", "matmul", "layer_norm", "flash_attention"]
STEPS = ["interpret", "gpu", "diff"]


def child(name: str, quick: bool, repeats: int) -> None:
    started = time.perf_counter()
    import kernel_nb.gpu as kernel_nb_gpu

    imported = time.perf_counter() - started
    import cupy

    from bench.bench_engine import make_case

    launch, size = make_case(name, quick, wrap=cupy.asarray)
    cupy.cuda.Device().synchronize()

    rules: list[str] = []

    def once() -> dict[str, float]:
        clock = time.perf_counter()
        with kernel_nb_gpu.compare(divergence=False) as session:
            entered = time.perf_counter() - clock
            launch()
        total = time.perf_counter() - clock
        comparison = session.trace[-1].comparison
        assert comparison is not None
        rules.append(comparison.rules())
        return {"enter": entered, **comparison.seconds, "total": total, "ok": float(comparison.ok)}

    first = once()
    warm = [once() for _ in range(repeats)]
    median = {step: statistics.median(w[step] for w in warm) for step in warm[0]}
    print(json.dumps({"size": size, "import": imported, "first": first, "warm": median, "rules": rules[0]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--repeats", type=int, default=3, help="warm launches per process")
    parser.add_argument("--processes", type=int, default=3, help="fresh processes per case")
    parser.add_argument(
        "--cases", default=",".join(CASES), help="comma-separated subset of " + ",".join(CASES)
    )
    parser.add_argument("--child", metavar="CASE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.quick, args.repeats)
        return
    print(
        f"{'case':<16} {'size':<28} {'when':<6} {'import':>7} {'enter':>7}"
        + "".join(f" {s:>9}" for s in STEPS)
        + f" {'total':>7}  verdict"
    )
    for name in args.cases.split(","):
        runs: list[dict[str, Any]] = []
        for _ in range(args.processes):
            command = [sys.executable, __file__, "--child", name, "--repeats", str(args.repeats)]
            if args.quick:
                command.append("--quick")
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(f"{name}: failed: {(done.stderr.strip().splitlines() or ['no output'])[-1]}")
                break
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        if not runs:
            continue
        print(f"{name:<16} tolerances: {runs[0]['rules']}")
        for when in ("first", "warm"):
            med = {k: statistics.median(r[when][k] for r in runs) for k in runs[0][when]}
            imported = statistics.median(r["import"] for r in runs) if when == "first" else 0.0
            print(
                f"{name:<16} {runs[0]['size']:<28} {when:<6} {imported:>7.3f} {med['enter']:>7.3f}"
                + "".join(f" {med.get(s, float('nan')):>9.3f}" for s in STEPS)
                + f" {med['total']:>7.3f}  {'MATCH' if med['ok'] else 'MISMATCH'}"
            )
    print(
        f"seconds, median of {args.processes} fresh processes (warm: of {args.repeats} launches each);"
        " gpu = the compiled launch with its compile and copies; diff = every buffer's comparison"
    )


if __name__ == "__main__":
    main()
