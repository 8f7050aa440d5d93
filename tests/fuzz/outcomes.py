"""Running fuzz cases in their children and judging what came of them (for test_fuzz and report)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

from kernel_nb.options import DEFAULT_BUDGET
from tests.fuzz.cases import Case

ROOT = Path(__file__).resolve().parents[2]

# What a launch may hold beyond its budget, three times its arguments (the caller's arrays, the host
# copies and their snapshot) and what stock holds for the same launch: the working set of a batch
# and the interpreter's own.
MARGIN = 256 << 20


def run(selected: list[Case]) -> dict[str, dict]:
    """{"kernel_nb": {id: outcome}, "stock": {id: outcome}}: every case under kernel_nb, those marked
    for it under stock as well (the two children run side by side)."""
    results: dict[str, dict] = {"kernel_nb": {}, "stock": {}}
    stock = threading.Thread(
        target=_run_child, args=("stock", [c for c in selected if c.stock], results["stock"])
    )
    stock.start()
    _run_child("kernel_nb", selected, results["kernel_nb"])
    stock.join()
    return results


def _run_child(mode: str, selected: list[Case], into: dict) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("TRITON_INTERPRET", None)
    process = subprocess.run(
        [sys.executable, "-m", "tests.fuzz.child", mode],
        input=json.dumps([case.to_json() for case in selected]),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=False,
    )
    for line in process.stdout.splitlines():
        outcome = json.loads(line)
        into[outcome["id"]] = outcome
    into[None] = f"exit {process.returncode}: {process.stderr[-2000:]}"


def _names(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text) is not None


def _error_problems(case: Case, error: dict) -> list[str]:
    """What is wrong with the error a failed launch raised."""
    message, cls = error["message"], error["class"]
    problems = []
    clear = error["module"].startswith("kernel_nb") or {"TypeError", "ValueError"} & set(error["bases"])
    if not clear:
        problems.append(
            f"raised {cls} (from {error['module']}), neither a kernel_nb error nor a TypeError/ValueError"
        )
    if "\n" in message.strip():
        problems.append(f"the message has {message.strip().count(chr(10)) + 1} lines")
    if case.kernel not in message:
        problems.append(f"the message does not name the kernel {case.kernel}")
    if case.culprits and not any(_names(message, c) for c in case.culprits):
        problems.append(f"the message names none of {', '.join(case.culprits)}")
    return problems


def problems_of(case: Case, got: dict | None, stock: dict | None, child: str) -> list[str]:
    """Everything that went wrong in one case; empty when it held."""
    if got is None:
        return [f"the child printed no outcome for it ({child})"]
    if got["result"] and "harness" in got["result"]:
        return ["the case could not be built: " + got["result"]["harness"].strip().splitlines()[-1]]
    if got["exit"] != "ok":
        lines = [line.strip() for line in got["stderr"].splitlines()]
        fatal = [line for line in lines if line.startswith("Fatal Python error")]
        frames = [line for line in lines if line.startswith("File ")][:3]  # innermost first
        return [f"the process died ({got['exit']}): " + " | ".join(fatal + frames or lines[-4:])]
    result = got["result"]
    if "harness" in result:
        return ["the case could not be built: " + result["harness"].strip().splitlines()[-1]]
    problems = []
    error = result.get("error")
    if error is not None:
        text = f"{error['class']}: {error['message'].strip().splitlines()[0][:300] if error['message'].strip() else ''}"
        if result["changed"]:
            problems.append(f"the failed launch changed {', '.join(result['changed'])}")
        if error["class"] == "MemoryError":
            problems.append("it ran out of memory")
        interrupted = error["class"] == "LaunchInterrupted"
        if case.expect in ("ok", "interrupt_or_ok") and not interrupted:
            problems.append(f"the launch failed: {text}")
        elif case.expect == "interrupt" and not interrupted:
            problems.append(f"expected LaunchInterrupted, got {text}")
        elif case.expect == "error" and interrupted:
            problems.append(
                f"it ran until interrupted; expected an error naming {' or '.join(case.culprits) or case.kernel}"
            )
        if case.expect in ("error", "either", "interrupt_or_error") and not interrupted:
            problems += [f"{p} ({text})" for p in _error_problems(case, error)]
        if interrupted and case.kernel not in error["message"]:
            problems.append(f"LaunchInterrupted does not name the kernel: {text}")
    else:
        if case.expect in ("error", "interrupt", "interrupt_or_error"):
            wanted = (
                "LaunchInterrupted"
                if case.expect == "interrupt"
                else ("an error naming " + (" or ".join(case.culprits) or case.kernel))
            )
            problems.append(f"it ran to completion; expected {wanted}")
        if result.get("wrong"):
            problems.append(f"wrong values in {', '.join(result['wrong'])}")
        stock_result = (stock or {}).get("result") or {}
        if stock_result.get("digests") and "error" not in stock_result:
            differ = [n for n, d in stock_result["digests"].items() if result["digests"].get(n) != d]
            if differ:
                problems.append(f"differs from stock TRITON_INTERPRET=1 in {', '.join(differ)}")
    if case.memory:
        budget = next((int(eval(e)) for k, e in case.options if k == "budget_bytes"), DEFAULT_BUDGET)
        stock_peak = ((stock or {}).get("result") or {}).get("peak_bytes", 0)
        bound = budget + 3 * result["argument_bytes"] + stock_peak + MARGIN
        if result["peak_bytes"] > bound:
            problems.append(
                f"peak memory {result['peak_bytes'] >> 20} MiB over the bound of {bound >> 20} MiB "
                f"(budget {budget >> 20} MiB, arguments {result['argument_bytes'] >> 20} MiB)"
            )
    return problems
