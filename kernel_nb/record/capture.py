"""`kernel_nb.record`: launches run as they would, and the chosen ones are captured on the way.

The launches are taken where Triton starts them, `JITFunction.run` (compiled, on the GPU) and the
stock interpreter's `run` (TRITON_INTERPRET=1, on the CPU), the innermost call under autotune and
heuristics, which gets the arguments, the config's and the heuristics' values included. Inside a
`kernel_nb.interpret` block the run it reaches is kernel_nb's own, and the launches captured are
interpreted ones. Compiled launches that no `run` starts (a `CompiledKernel` launched straight,
the launchers torch.compile generates) are taken through Triton's launch hooks
(`triton_compat.compiled_launches`), which see every launch Triton's launcher makes; torch.compile
launches through a static CUDA launcher of its own by default, which no Triton hook sees
(`torch._inductor.config.use_static_cuda_launcher = False` before compiling hands its launches to
Triton's launcher).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_nb.engine import NamespaceSnapshot, triton_compat
from kernel_nb.engine.arrays import is_descriptor, is_tuple
from kernel_nb.gpu.arguments import describe
from kernel_nb.gpu.grid import resolve_grid
from kernel_nb.record.carried import carried_source
from kernel_nb.record.recorded import LeafSpec, RecordedLaunch, Recording

DEFAULT_BUDGET = 1 << 30  # bytes of captured arrays, inputs and outputs together
_PLAIN = (bool, int, float, str, type(None))


class RecordSession:
    """A block whose launches run as usual, the chosen ones captured into `recording`.

    Args:
        kernel: capture only launches of the kernel of this name (None: every kernel).
        every: capture every `every`-th launch of those (1: all).
        max_launches: capture at most this many (None: no limit).
        budget_bytes: capture no launch that would take the recording past this many bytes.
    """

    def __init__(
        self,
        kernel: str | None = None,
        every: int = 1,
        max_launches: int | None = None,
        budget_bytes: int = DEFAULT_BUDGET,
    ) -> None:
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be an int >= 1, got {every!r}")
        if max_launches is not None and (not isinstance(max_launches, int) or max_launches < 0):
            raise ValueError(f"max_launches must be an int >= 0 or None, got {max_launches!r}")
        self.kernel, self.every, self.max_launches, self.budget_bytes = (
            kernel,
            every,
            max_launches,
            budget_bytes,
        )
        self.recording = Recording()
        self._matching = 0
        self._benchmarking = 0
        self._running = 0  # intercepted runs under way
        self._snapshot: NamespaceSnapshot | None = None
        self._hooks: ExitStack | None = None
        self._sources: dict[Any, tuple[str | None, str]] = {}

    def __enter__(self) -> Recording:
        if self._snapshot is not None:
            raise RuntimeError("this record block is already open")
        self._snapshot = NamespaceSnapshot([*triton_compat.JIT_TYPES, triton_compat.AUTOTUNER])
        for cls in triton_compat.JIT_TYPES:
            self._hook(cls)
        bench = getattr(triton_compat.AUTOTUNER, triton_compat.AUTOTUNE_BENCH, None)
        if bench is not None:
            session = self

            def timed(tuner: Any, *args: Any, **kwargs: Any) -> Any:
                # the autotuner times each config by launching it many times: those launches are
                # counted, not captured; the one it then makes with the config it chose is
                session._benchmarking += 1
                try:
                    return bench(tuner, *args, **kwargs)
                finally:
                    session._benchmarking -= 1

            setattr(triton_compat.AUTOTUNER, triton_compat.AUTOTUNE_BENCH, timed)
        self._hooks = ExitStack()
        self._hooks.enter_context(triton_compat.compiled_launches(self._compiled, self._end))
        return self.recording

    def __exit__(self, *exc: Any) -> None:
        if self._hooks is not None:
            self._hooks.close()
            self._hooks = None
        if self._snapshot is not None:
            self._snapshot.restore()
            self._snapshot = None

    def _hook(self, cls: Any) -> None:
        session = self
        if cls is triton_compat.INTERPRETED_FUNCTION and triton_compat.INTERPRETED_RUN_PER_KERNEL:
            # triton 3.4: launches go through the kernel's __getitem__ to a run made per kernel
            def launcher(kernel: Any, grid: Any) -> Any:
                return lambda *args, **kwargs: session._launch(
                    lambda: kernel.run(*args, grid=grid, **kwargs), kernel, grid, args, kwargs
                )

            cls.__getitem__ = launcher
            return
        original = cls.run

        def run(kernel: Any, *args: Any, grid: Any, warmup: bool = False, **kwargs: Any) -> Any:
            def call() -> Any:
                return original(kernel, *args, grid=grid, warmup=warmup, **kwargs)

            if warmup:
                return call()
            return session._launch(call, kernel, grid, args, kwargs)

        cls.run = run

    def _launch(
        self, call: Any, kernel: Any, grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if self._benchmarking:
            self.recording.benchmark_launches += 1
            return call()
        self._running += 1  # the compiled launch under this call is this launch (see _compiled)
        try:
            pending = self._begin(kernel, grid, args, kwargs)
            result = call()
            if pending is not None:
                self._end(pending)
            return result
        finally:
            self._running -= 1

    def _compiled(self, jit: Any, grid: tuple[int, ...], args: tuple[Any, ...]) -> _Pending | None:
        """A compiled launch that no intercepted run started (a CompiledKernel launched straight,
        a Triton launcher torch.compile generated), as the launch hooks see it just before it starts."""
        if self._running or self._benchmarking:
            return None
        return self._begin(jit, grid, args, {})

    def _begin(
        self, kernel: Any, grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> _Pending | None:
        """Count a launch and, where it is chosen and fits the budget, snapshot its arrays before
        it runs (None: not captured, or the reason is in the recording's `skipped`)."""
        index = self.recording.seen
        self.recording.seen += 1
        fn = triton_compat.innermost_jit(kernel).fn
        name = fn.__name__
        if self.kernel is not None and name != self.kernel:
            return None
        self._matching += 1
        if (self._matching - 1) % self.every:
            return None
        if self.max_launches is not None and len(self.recording.launches) >= self.max_launches:
            self.recording.skipped.append((index, name, f"past --max {self.max_launches}"))
            return None
        try:
            arguments = describe(fn, args, kwargs)
            sizes = resolve_grid(name, grid, arguments.meta())
        except Exception as exc:  # the launch itself says what is wrong with it
            self.recording.skipped.append((index, name, f"not captured: {exc}"))
            return None
        nbytes = sum(r.hi - r.lo for r in arguments.regions)
        if self.recording.nbytes + 2 * nbytes > self.budget_bytes:
            over = f"its arrays ({nbytes / 2**20:.1f} MiB, twice) would pass the budget of {self.budget_bytes / 2**20:.0f} MiB"
            self.recording.skipped.append((index, name, over))
            return None
        values, refused = _values(arguments, fn)
        if refused is not None:
            self.recording.skipped.append((index, name, refused))
            return None
        before = arguments.snapshot()
        return _Pending(index, name, kernel, fn, sizes, arguments, values, before, time.perf_counter())

    def _end(self, pending: _Pending) -> None:
        """Snapshot a captured launch's arrays after it and add it to the recording."""
        seconds = time.perf_counter() - pending.clock
        arguments, before = pending.arguments, pending.before
        after = arguments.snapshot()  # a device copy waits for the launch, on its stream
        leaves = [
            LeafSpec(
                leaf.name,
                leaf.dtype.name,
                tuple(leaf.shape),
                tuple(leaf.strides),
                arguments.regions.index(arguments.region_of(leaf)),
                leaf.ptr - arguments.region_of(leaf).lo,
                leaf.space,
                leaf.library,
            )
            for leaf in arguments.leaves
        ]
        spaces = sorted({leaf.space for leaf in leaves}) or ["host"]
        jit = triton_compat.innermost_jit(pending.kernel)
        source, note = self._source(jit)
        self.recording.launches.append(
            RecordedLaunch(
                index=pending.index,
                kernel=pending.name,
                module=str(pending.fn.__module__),
                qualname=_qualname(pending.kernel, pending.fn),
                grid=pending.grid,
                values=pending.values,
                options=dict(arguments.extra),
                leaves=leaves,
                inputs=before,
                outputs=[None if np.array_equal(b, a) else a for b, a in zip(before, after)],
                device=", ".join(spaces),
                seconds=seconds,
                source=source,
                source_note=note,
                jit=jit,
            )
        )

    def _source(self, jit: Any) -> tuple[str | None, str]:
        """`carried_source` of a kernel, once per kernel a block captures."""
        if jit not in self._sources:
            self._sources[jit] = carried_source(jit)
        return self._sources[jit]


@dataclass
class _Pending:
    """A launch being captured: what `_begin` found, for `_end` once it has run."""

    index: int
    name: str
    kernel: Any
    fn: Any
    grid: tuple[int, int, int]
    arguments: Any
    values: dict[str, Any]
    before: list[np.ndarray]
    clock: float


def _values(arguments: Any, fn: Any) -> tuple[dict[str, Any], str | None]:
    """The arguments that are not arrays, as plain values (tuples as `RecordedLaunch.values` holds
    them); or why the launch cannot be captured."""
    arrays = {leaf.name for leaf in arguments.leaves}
    values: dict[str, Any] = {}
    for name, value in arguments.bound.arguments.items():
        if name in arrays:
            continue
        plain, refused = _plain(name, value, arrays)
        if refused is not None:
            return {}, refused
        values[name] = plain
    return values, None


def _plain(path: str, value: Any, arrays: set[str]) -> tuple[Any, str | None]:
    """One argument (or tuple item) as plain data, an array as {"array": path}; or why not."""
    if path in arrays:
        return {"array": path}, None
    if is_descriptor(value):
        base, refused = _plain(f"{path}.base", value.base, arrays)
        if refused is not None:
            return None, refused
        fields: dict[str, Any] = {"base": base}
        for field in dataclasses.fields(value):
            if field.name != "base":
                item = getattr(value, field.name)
                fields[field.name] = [int(i) for i in item] if isinstance(item, (list, tuple)) else item
        if not all(isinstance(v, (*_PLAIN, list)) for k, v in fields.items() if k != "base"):
            return None, f"argument {path} is a tensor descriptor of fields a recording does not take"
        return {"descriptor": fields}, None
    if is_tuple(value):
        if type(value) is not tuple:
            return None, f"argument {path} is a {type(value).__name__}, which a recording does not take yet"
        items = []
        for i, item in enumerate(value):
            plain, refused = _plain(f"{path}.{i}", item, arrays)
            if refused is not None:
                return None, refused
            items.append(plain)
        return {"tuple": items}, None
    plain = triton_compat.unwrap_constexpr(value)
    if isinstance(plain, np.generic):
        plain = plain.item()
    if not isinstance(plain, _PLAIN):
        return None, f"argument {path} is a {type(plain).__name__}, which a recording does not take yet"
    return plain, None


def _qualname(kernel: Any, fn: Any) -> str:
    """The name the kernel object is found by in its module: the outermost wrapper's (autotune,
    heuristics), which is what the module binds."""
    module = sys.modules.get(fn.__module__)
    for name, value in vars(module).items() if module is not None else ():
        inner = value
        while inner is not None and not isinstance(inner, triton_compat.JIT_TYPES):
            inner = getattr(inner, "fn", None)
        if inner is not None and getattr(inner, "fn", None) is fn:
            return str(name)
    return str(fn.__qualname__)


def record(
    kernel: str | None = None,
    *,
    every: int = 1,
    max_launches: int | None = None,
    budget_bytes: int = DEFAULT_BUDGET,
) -> RecordSession:
    """A block whose Triton launches run as they would (compiled on the GPU, or under the stock
    interpreter), the chosen ones captured: kernel, grid, arguments, and the array arguments'
    bytes before and after the launch (device arrays copied to the host).

    Use it as ``with kernel_nb.record() as recording:``; then ``recording[i].replay()`` interprets
    launch i on the CPU with everything recorded and compares it with what really ran, and
    ``recording.save(path)`` / ``kernel_nb.Recording.load(path)`` carry it to another machine.

    Args:
        kernel: capture only this kernel's launches (by name).
        every: capture every `every`-th of them.
        max_launches: capture at most this many.
        budget_bytes: the most bytes the captured arrays may take; a launch that would pass it is
            left out (the recording's table says so).
    """
    return RecordSession(kernel, every, max_launches, budget_bytes)
