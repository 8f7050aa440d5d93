"""Runs fuzz cases, each in a process of its own: `python -m tests.fuzz.child kernel_nb|stock < cases.json`.

The child imports numpy, torch, Triton (and kernel_nb, or sets TRITON_INTERPRET=1 for stock) once,
then forks one process per case, so that a case that kills its process (a wild write, a read-only
mapping written) shows as that case's exit signal and costs no more than a fork. Each case writes
what happened as one JSON object to a pipe; the child prints one JSON line per case:
{"id", "exit": "ok" | "signal SIGSEGV" | "exit 3" | "timeout", "result": {...} | null, "stderr"}.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import sys
import tempfile
import threading
import time
import traceback
from typing import Any

# Every case may take this much address space beyond what the child holds before it runs: a launch
# that grows past it gets a MemoryError (a failed case) instead of taking the machine's memory.
ADDRESS_SPACE_ALLOWANCE = 4 << 30


def main() -> None:
    mode = sys.argv[1]
    if mode == "stock":
        os.environ["TRITON_INTERPRET"] = "1"
    else:
        os.environ.pop("TRITON_INTERPRET", None)
    cases = json.load(sys.stdin)
    import numpy
    import torch

    torch.set_num_threads(1)
    import triton  # noqa: F401

    from tests.fuzz import build, kernels

    if mode == "kernel_nb":
        import kernel_nb

        warm = numpy.arange(8, dtype=numpy.float32)
        with kernel_nb.interpret():
            kernels.copy_kernel[(1,)](warm, warm.copy(), 8, BLOCK=8)
    names = build.namespace()
    for case in cases:
        print(json.dumps(_fork(case, mode, names)), flush=True)


def _fork(case: dict, mode: str, names: dict[str, Any]) -> dict:
    with tempfile.TemporaryFile() as err:
        return _fork_into(case, mode, names, err)


def _fork_into(case: dict, mode: str, names: dict[str, Any], err: Any) -> dict:
    """Run one case in a forked process whose stderr goes to `err`."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        os.dup2(err.fileno(), 2)
        status = 0
        try:
            result = run_case(case, mode, names)
        except BaseException:
            result = {"harness": traceback.format_exc()}
            status = 3
        with os.fdopen(write_end, "w") as out:
            json.dump(result, out, default=repr)
        os._exit(status)
    os.close(write_end)
    chunks, deadline = [], time.monotonic() + case["timeout"]
    timed_out = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            os.kill(pid, signal.SIGKILL)
            break
        ready, _, _ = select.select([read_end], [], [], left)
        if ready:
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    err.seek(0)
    stderr = err.read().decode(errors="replace")[-3000:]
    if timed_out:
        exit_text = "timeout"
    elif os.WIFSIGNALED(status):
        exit_text = f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    elif os.WEXITSTATUS(status):
        exit_text = f"exit {os.WEXITSTATUS(status)}"
    else:
        exit_text = "ok"
    try:
        result = json.loads(b"".join(chunks)) if chunks else None
    except ValueError:
        result = None
    return {"id": case["id"], "exit": exit_text, "result": result, "stderr": stderr}


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def run_case(case: dict, mode: str, base: dict[str, Any]) -> dict:
    """Build the case's values, launch, and say what happened to the launch and to the arrays."""
    import faulthandler

    import numpy as np

    from tests.fuzz import build

    faulthandler.enable()
    limit = _status("VmSize") + ADDRESS_SPACE_ALLOWANCE
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    names = dict(base)
    values: dict[str, Any] = {}
    names["A"] = values
    for name, expr in [*case["args"], *case["kwargs"]]:
        values[name] = names[name] = eval(expr, names)
    grid = eval(case["grid"], names)
    kernel = getattr(names["K"], case["kernel"])
    inputs = {
        name: np.array(a, copy=True) for name, v in values.items() if (a := build.as_numpy(v)) is not None
    }
    if mode == "stock":
        try:
            passed = {name: _to_torch(v) for name, v in values.items()}
        except (TypeError, ValueError, RuntimeError) as why:
            return {"infeasible": f"{type(why).__name__}: {why}"}
    else:
        passed = values
    positional = [passed[name] for name, _ in case["args"]]
    keywords = {name: passed[name] for name, _ in case["kwargs"]}
    spans = [span for v in values.values() for span in build.memory_spans(v)]
    before = build.snapshot(spans)

    stop = threading.Event()

    def interrupt() -> None:
        started = time.monotonic()
        for at in case["interrupts"]:
            if stop.wait(max(0.0, started + at - time.monotonic())):
                return
            os.kill(os.getpid(), signal.SIGINT)

    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the peak resident size starts again from here
    resident = _status("VmRSS")
    error: BaseException | None = None
    timer = threading.Thread(target=interrupt, daemon=True)
    started = time.perf_counter()
    try:
        timer.start()
        if mode == "stock":
            kernel[grid](*positional, **keywords)
        else:
            import kernel_nb

            options = kernel_nb.Options(**{k: eval(e, names) for k, e in case["options"]})
            with kernel_nb.interpret(options):
                kernel[grid](*positional, **keywords)
    except BaseException as caught:
        error = caught
    finally:
        stop.set()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    seconds = time.perf_counter() - started
    peak = _status("VmHWM") - resident
    after = build.snapshot(spans)
    result: dict[str, Any] = {
        "seconds": round(seconds, 3),
        "peak_bytes": peak,
        "argument_bytes": sum(hi - lo for lo, hi in spans),
        "changed": sorted({_owner(values, spans[i]) for i in range(len(spans)) if before[i] != after[i]}),
    }
    if error is not None:
        result["error"] = {
            "class": type(error).__name__,
            "module": type(error).__module__,
            "bases": [c.__name__ for c in type(error).__mro__],
            "message": str(error),
        }
        return result
    result["digests"] = {name: build.digest(v) for name, v in values.items() if build.as_numpy(v) is not None}
    if case["reference"] is not None:
        expected = eval(case["reference"], {**names, "S": inputs})
        result["wrong"] = sorted(
            name for name, want in expected.items() if not build.same_values(values[name], want)
        )
    return result


def _owner(values: dict[str, Any], span: tuple[int, int]) -> str:
    from tests.fuzz import build

    for name, value in values.items():
        if span in build.memory_spans(value):
            return name
    return "?"


def _to_torch(value: Any) -> Any:
    """What stock Triton takes for a value: numpy arrays become torch tensors over the same memory."""
    import numpy as np

    from tests.fuzz import build

    if isinstance(value, np.ndarray):
        plain = type(value) is np.ndarray or isinstance(value, np.memmap)
        if value.dtype.byteorder == ">" or any(s < 0 for s in value.strides) or not plain:
            raise TypeError(f"stock Triton takes no {type(value).__name__} of {value.dtype}")
        return build.torch_of(value)
    if isinstance(value, tuple):
        return tuple(_to_torch(v) for v in value)
    return value


if __name__ == "__main__":
    main()
