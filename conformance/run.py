"""Triton's own language tests, run by stock TRITON_INTERPRET=1 and by kernel_nb in the same run.

    python -m conformance.run [--tests ../shared/triton-tests] [--workers 2] [-k EXPR] [--bf16] [--shadow]

Both sides run `pytest -m interpreter --device cpu test/unit/language/` in the tests' folder, the
way Triton's CI runs its interpreter tests; kernel_nb's side adds `-p conformance.plugin`, which
runs every test inside `kernel_nb.interpret()` with TRITON_INTERPRET unset. The table that follows
counts passed / failed / skipped per test family (a test function, over its parameters), and lists
every case stock passes and kernel_nb does not. `--bf16` lifts the tests' "bfloat16 is not supported
in the interpreter" skips on kernel_nb's side (conformance.plugin's --lift-bf16-skips) and reports
those cases on their own. `--shadow` runs kernel_nb's side with the fp64 shadow, which must pass
every case the plain run does. The exit status is 1 when kernel_nb fails a case stock passes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTCOMES = ("passed", "failed", "skipped")


def run_side(name: str, tests: Path, out: Path, workers: int, extra: list[str], env: dict[str, str]) -> Path:
    """Run one side's pytest; returns its JUnit XML."""
    report = out / f"{name}.xml"
    command = [
        sys.executable, "-m", "pytest", "-m", "interpreter", "--device", "cpu", "test/unit/language/",
        "-p", "no:cacheprovider", "-q", "--tb=line", "-o", "addopts=", f"--junitxml={report}", *extra,
    ]  # fmt: skip
    if workers > 1:
        command += ["-n", str(workers)]
    started = time.monotonic()
    print(f"== {name}: {' '.join(command[1:])}", flush=True)
    with (out / f"{name}.log").open("w") as log:
        subprocess.run(command, cwd=tests, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    print(f"   {time.monotonic() - started:.0f} s, log in {out / f'{name}.log'}", flush=True)
    return report


def outcomes(report: Path) -> dict[str, str]:
    """Each case's outcome ("passed", "failed" or "skipped"), by its id "file::name[params]"."""
    found = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        file = case.get("classname", "").rsplit(".", 1)[-1]
        kinds = {child.tag for child in case}
        if kinds & {"failure", "error"}:
            outcome = "failed"
        elif "skipped" in kinds:
            outcome = "skipped"
        else:
            outcome = "passed"
        key = f"{file}::{case.get('name')}"
        # an error in teardown adds a second entry for a case: the worse outcome counts
        if found.get(key) != "failed":
            found[key] = outcome
    return found


def family(case: str) -> str:
    return case.split("[", 1)[0]


def table(stock: dict[str, str], ours: dict[str, str], title: str) -> list[str]:
    """The per-family table and the totals, as lines."""
    counts: dict[str, dict[str, Counter[str]]] = defaultdict(
        lambda: {"stock": Counter(), "kernel_nb": Counter()}
    )
    for case in sorted(set(stock) | set(ours)):
        counts[family(case)]["stock"][stock.get(case, "skipped")] += 1
        counts[family(case)]["kernel_nb"][ours.get(case, "skipped")] += 1
    width = max([len(f) for f in counts] + [len(title)])
    head = f"{title:<{width}}  {'stock pass/fail/skip':>21}  {'kernel_nb pass/fail/skip':>24}"
    lines = [head, "-" * len(head)]
    total = {"stock": Counter(), "kernel_nb": Counter()}
    for name, sides in sorted(counts.items()):
        cells = []
        for side in ("stock", "kernel_nb"):
            total[side].update(sides[side])
            cells.append("/".join(str(sides[side][o]) for o in OUTCOMES))
        mark = "  <" if sides["kernel_nb"]["passed"] < sides["stock"]["passed"] else ""
        lines.append(f"{name:<{width}}  {cells[0]:>21}  {cells[1]:>24}{mark}")
    lines.append("-" * len(head))
    cells = ["/".join(str(total[side][o]) for o in OUTCOMES) for side in ("stock", "kernel_nb")]
    lines.append(f"{'total':<{width}}  {cells[0]:>21}  {cells[1]:>24}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--tests", default=str(ROOT.parent / "shared" / "triton-tests"), help="Triton's tests"
    )
    parser.add_argument(
        "--out", default=str(ROOT / "test-artifacts" / "conformance"), help="logs and reports"
    )
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers per side")
    parser.add_argument("-k", dest="select", help="pytest -k expression (both sides)")
    parser.add_argument("--bf16", action="store_true", help="also run kernel_nb with the bf16 skips lifted")
    parser.add_argument(
        "--shadow", action="store_true", help="run the kernel_nb side with the fp64 shadow (shadow='fp64')"
    )
    args = parser.parse_args(argv)
    tests = Path(args.tests).resolve()
    if not (tests / "test" / "unit" / "language").is_dir():
        print(f"no Triton tests at {tests} (expected test/unit/language/ there)")
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    extra = ["-k", args.select] if args.select else []
    base = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    base["PYTHONDONTWRITEBYTECODE"] = "1"  # the tests' folder may be read-only
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), base.get("PYTHONPATH")]))
    stock = outcomes(run_side("stock", tests, out, args.workers, extra, {**base, "TRITON_INTERPRET": "1"}))
    plugin = ["-p", "conformance.plugin", *(["--kernel-nb-shadow"] if args.shadow else [])]
    ours = outcomes(run_side("kernel_nb", tests, out, args.workers, plugin + extra, base))
    lines = table(stock, ours, "family")
    regressions = sorted(c for c, o in stock.items() if o == "passed" and ours.get(c) != "passed")
    lines += ["", f"stock passes, kernel_nb does not: {len(regressions)}"]
    lines += [f"  {case}" for case in regressions]
    if args.bf16:
        lifted = outcomes(
            run_side("kernel_nb-bf16", tests, out, args.workers, [*plugin, "--lift-bf16-skips", *extra], base)
        )
        bf16 = {
            c for c, o in lifted.items() if "bfloat16" in c and o != "skipped" and ours.get(c) == "skipped"
        }
        lines += ["", f"bf16 cases the interpreter's skips leave out: {len(bf16)}"]
        lines += table(
            {c: stock.get(c, "skipped") for c in bf16}, {c: lifted[c] for c in bf16}, "bf16 family"
        )
        failing = sorted(c for c in bf16 if lifted[c] == "failed")
        lines += [f"  failed: {case}" for case in failing]
    text = "\n".join(lines)
    print(text)
    (out / "report.txt").write_text(text + "\n")
    return 1 if regressions else 0


if __name__ == "__main__":
    raise SystemExit(main())
