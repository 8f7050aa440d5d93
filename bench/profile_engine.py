"""Where a launch's time goes: the first launch in a fresh process and a warm one, profiled.

    python bench/profile_engine.py [--cases vector_add,flash_attention] [--top 25] [--quick]

Each case runs in a fresh process (imports and inputs made first, as bench_engine times them):
its first launch and then a warm one are profiled with cProfile, and the functions of kernel_nb
(and of Triton's interpreter, which the engine drives) are listed by their own time and by the
time spent under them. cProfile adds a cost per Python call, so the totals run above
bench_engine's times; the shares are what to read.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WATCHED = ("kernel_nb", "triton/runtime/interpreter.py", "numpy/_core")


def _short(path: str) -> str:
    for marker in ("kernel_nb/", "triton/", "numpy/"):
        at = path.find(marker)
        if at >= 0:
            return path[at:]
    return path


def _table(profile: cProfile.Profile, top: int) -> str:
    stats = pstats.Stats(profile)
    rows = [
        (own, under, calls, f"{_short(file)}:{line}({name})")
        for (file, line, name), (_, calls, own, under, _) in stats.stats.items()  # type: ignore[attr-defined]
        if any(w in file for w in WATCHED) or file == "~"
    ]
    out = io.StringIO()
    for title, key in (("own time", 0), ("time under", 1)):
        out.write(f"  by {title} (ms):\n")
        for row in sorted(rows, key=lambda r: -r[key])[:top]:
            out.write(
                f"    {row[0] * 1000:8.1f} own {row[1] * 1000:8.1f} under {row[2]:7d} calls  {row[3]}\n"
            )
    return out.getvalue()


def child(name: str, quick: bool, top: int) -> None:
    import kernel_nb
    from bench.bench_engine import make_case

    launch, size = make_case(name, quick)

    def run() -> None:
        with kernel_nb.interpret():
            launch()

    for label in ("first", "warm"):
        profile = cProfile.Profile()
        start = time.perf_counter()
        profile.enable()
        run()
        profile.disable()
        took = time.perf_counter() - start
        print(f"== {name} ({size}), {label} launch: {took * 1000:.0f} ms under cProfile")
        print(_table(profile, top))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="vector_add,flash_attention")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.quick, args.top)
        return
    for name in args.cases.split(","):
        command = [sys.executable, __file__, "--child", name.strip(), "--top", str(args.top)]
        if args.quick:
            command.append("--quick")
        subprocess.run(command, check=True)


if __name__ == "__main__":
    main()
