"""What the fp64 shadow costs: the bench cases interpreted with `shadow="fp64"` against without.

    python bench/bench_shadow.py [--quick] [--processes 3] [--repeats 2] [--cases vector_add,...]

Each case runs in fresh processes, the two sides taking turns: the first launch (imports and
inputs ready) and the median of the warm launches after it, default options otherwise. Reported
per case: both sides' times, shadow / plain as a ratio (the target: under 3x), peak RSS above the
inputs, and how many precision findings the shadow run made.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_engine import CASES, build_case, time_launches  # noqa: E402

SIDES = ("plain", "shadow")


def child(side: str, name: str, quick: bool, repeats: int) -> None:
    import kernel_nb

    case = build_case(name, quick, as_torch=False)
    options = {"shadow": "fp64"} if side == "shadow" else {}
    seen: dict[str, Any] = {}

    def run() -> None:
        with kernel_nb.interpret(**options) as session:
            case.launch()
        last = session.trace[-1]
        seen["findings"] = sum(f.kind == "precision_loss" for f in last.findings)
        seen["how"] = last.strategy

    first, times, peak = time_launches(run, repeats)
    print(
        json.dumps(
            {
                "size": case.size,
                "first": first,
                "warm": statistics.median(times),
                "peak_mib": peak,
                **seen,
            }
        )
    )


def _in_process(side: str, name: str, args: argparse.Namespace) -> dict[str, Any] | str:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    command = [sys.executable, __file__, "--child", side, name, "--repeats", str(args.repeats)]
    if args.quick:
        command.append("--quick")
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "no output"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--repeats", type=int, default=2, help="warm launches per process after the first")
    parser.add_argument("--processes", type=int, default=3, help="processes per side")
    parser.add_argument(
        "--cases", default=",".join(CASES), help="comma-separated subset of " + ",".join(CASES)
    )
    parser.add_argument("--json", metavar="PATH", help="also write every process's results there")
    parser.add_argument("--child", nargs=2, metavar=("SIDE", "CASE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.quick, args.repeats)
        return
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")
    raw: dict[str, dict[str, list[Any]]] = {}
    print(
        f"{'case':<16} {'plain 1st':>9} {'shadow 1st':>10} {'1st x':>6} {'plain warm':>10} {'shadow warm':>11}"
        f" {'warm x':>6} {'plain MiB':>9} {'shadow MiB':>10} {'findings':>8}"
    )
    for name in cases:
        raw[name] = {side: [] for side in SIDES}
        for _ in range(args.processes):
            for side in SIDES:
                result = _in_process(side, name, args)
                if isinstance(result, str):
                    print(f"{name} / {side} failed: {result}", file=sys.stderr)
                raw[name][side].append(result)
        done = {side: [r for r in raw[name][side] if isinstance(r, dict)] for side in SIDES}
        if not all(done.values()):
            continue
        first = {side: statistics.median(r["first"] for r in done[side]) for side in SIDES}
        warm = {side: statistics.median(r["warm"] for r in done[side]) for side in SIDES}
        peak = {side: max(r["peak_mib"] for r in done[side]) for side in SIDES}
        print(
            f"{name:<16} {first['plain'] * 1e3:9.1f} {first['shadow'] * 1e3:10.1f}"
            f" {first['shadow'] / first['plain']:5.2f}x {warm['plain'] * 1e3:10.1f} {warm['shadow'] * 1e3:11.1f}"
            f" {warm['shadow'] / warm['plain']:5.2f}x {peak['plain']:9.1f} {peak['shadow']:10.1f}"
            f" {done['shadow'][0]['findings']:>8}"
        )
    print(
        "times in ms, medians of the processes; 1st = the first launch in a fresh process; warm = the median "
        f"of {args.repeats} launches after it;\nx = shadow / plain; MiB = peak RSS above the inputs (largest "
        "process); findings = precision_loss findings of the shadow run"
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "processes": raw}, indent=1) + "\n")


if __name__ == "__main__":
    main()
