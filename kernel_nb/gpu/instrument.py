"""A kernel variant that also writes the values of chosen programs' statements into a probe buffer.

The interpreter's records of the chosen programs say which statements hold which values (dtype and
shape). From the kernel's source this module writes a new ``@triton.jit`` function that, after every
recorded assignment (and for the arguments and loop variables, as the interpreter records them),
appends the value to a log in one extra uint8 argument, ``_tk_probe``, but only in the chosen
programs. The kernel's @triton.jit helpers are rewritten the same way and receive the probe and the
program's slot as two extra leading arguments, so their statements are logged too, under every call
path. The variants are Python source files (Triton's JIT reads a function's source from its file),
executed in a copy of each function's own globals.

The probe buffer, in bytes::

    [0, header)                       one int32 cursor per chosen program: bytes used in its region
    header + slot * capacity, ...     the region of the slot-th chosen program: its log entries in
                                      execution order, each [int32 statement id, int32 0, the value]
                                      padded to 8 bytes, the value's elements in C order

A cursor is advanced with an atomic add, which needs no state carried through the kernel's control
flow or its helpers' return values; an entry that would not fit is dropped but still counted, so a
program that logged more than the interpreter recorded shows as an overflow, not as garbage.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import math
import os
import textwrap
from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import triton
import triton.language as tl

from kernel_nb.compare import StatementFacts, facts_of
from kernel_nb.engine import triton_compat
from kernel_nb.engine.sites import Site, SiteWalker, argument_sites
from kernel_nb.gpu.generated import sources_directory
from kernel_nb.numerics import NUMPY_TYPES
from kernel_nb.trace import Launch, Pid, Record

PROBE = "_tk_probe"
SLOT = "_tk_slot"
TL = "_tk_tl"
ENTRY_HEADER = 8
# Room for entries the interpreter did not record (a loop that runs longer on the GPU), per program.
SPARE = 4096
MAX_CAPACITY = (1 << 31) - 1

# Triton's element type names → (the name of the type in triton.language, the numpy dtype stored).
_TL_NAMES = {
    str(value): name
    for name, value in reversed(list(vars(tl).items()))
    if isinstance(value, tl.dtype) and not isinstance(value, tl.pointer_type) and str(value) != "void"
}
# Triton's type name → numpy's name of the type a value is logged as: bool values are stored as
# bytes; the fp8 types of AMD GPUs are not logged
_STORAGE: dict[str, str] = {
    name: "int8" if name == "int1" else NUMPY_TYPES.numpy_name(name)
    for name in NUMPY_TYPES
    if name not in ("fp8e4b8", "fp8e5b16")
}


class InstrumentError(RuntimeError):
    """The kernel cannot be instrumented (no source, a construct the generator does not handle)."""


@dataclass(frozen=True)
class ProbePoint:
    """A statement whose value the variant logs.

    Attributes:
        stmt: the `Statement` id in the launch.
        storage: the numpy dtype of the logged elements (pointers: int64 addresses; bool: int8).
        entry: bytes of one log entry (header and value, padded to 8).
        shape: the value's shape, or None when it differs between calls of a helper.
        rank: the value's number of dimensions.
    """

    stmt: int
    storage: str
    entry: int
    shape: tuple[int, ...] | None
    rank: int


@dataclass(frozen=True)
class ProbeLayout:
    """Where each chosen program's log lives in the probe buffer."""

    pids: tuple[Pid, ...]
    linear: tuple[int, ...]
    header: int
    capacity: int
    points: dict[int, ProbePoint] = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        return self.header + self.capacity * len(self.pids)


@dataclass(frozen=True)
class ProbedKernel:
    """The instrumented variant of a kernel, ready to launch with ``_tk_probe=<uint8 buffer>``.

    Attributes:
        kernel: the variant's JITFunction.
        original: the kernel's JITFunction.
        layout: the probe buffer's layout.
        sources: generated source text per function name (the kernel and each helper).
        files: the files they were written to.
        facts: per statement id, what its expression does (for telling precision from divergence).
        skipped: per statement id, why its value is not logged.
    """

    kernel: Any
    original: Any
    layout: ProbeLayout
    sources: dict[str, str]
    files: dict[str, str]
    facts: dict[int, StatementFacts]
    skipped: dict[int, str]


@dataclass
class ProgramLog:
    """The entries one chosen program logged: (statement id, raw bytes of the value), in order."""

    pid: Pid
    entries: list[tuple[int, bytes]]
    used: int
    overflow: bool


def instrument(
    kernel: Any, launch: Launch, pids: Iterable[Pid], *, directory: str | Path | None = None
) -> ProbedKernel:
    """Write, load and JIT-decorate the probed variant of `kernel` for `pids` of `launch`.

    Args:
        kernel: the launched kernel (a JITFunction, or an autotuner / heuristics around one).
        launch: its interpreted launch, whose records of `pids` give every logged value's type and shape.
        pids: the programs whose values are logged (each must have run in `launch`).
        directory: where the generated files go, and stay; default: this process's own directory,
            removed when it exits (`kernel_nb.gpu.generated`).

    Raises:
        InstrumentError: a program did not run, the source is unavailable, or the layout is too large.
    """
    jit = triton_compat.innermost_jit(kernel)
    chosen = tuple(pids)
    if not chosen:
        raise InstrumentError(f"{launch.kernel}: no program chosen to instrument")
    records: dict[Pid, list[Record]] = {}
    for pid in chosen:
        if pid not in launch.programs:
            raise InstrumentError(f"{launch.kernel}: program {pid} did not run in launch {launch.index}")
        records[pid] = launch.programs[pid].records
    points, skipped = _points(launch, records)
    capacity = max(sum(points[r.stmt].entry for r in records[pid] if r.stmt in points) for pid in chosen)
    capacity = -(-(capacity + capacity // 4 + SPARE) // 256) * 256
    if capacity > MAX_CAPACITY:
        raise InstrumentError(
            f"{launch.kernel}: the chosen programs' values need {capacity} bytes each, more than a probe "
            "region holds (2 GiB); choose fewer programs or a smaller problem"
        )
    header = -(-4 * len(chosen) // 256) * 256
    layout = ProbeLayout(chosen, tuple(launch.linear(p) for p in chosen), header, capacity, points)
    generator = _Generator(launch, layout, sources_directory(directory))
    variant = generator.function(jit, kernel=True)
    return ProbedKernel(
        kernel=variant,
        original=jit,
        layout=layout,
        sources=generator.sources,
        files=generator.files,
        facts=generator.facts,
        skipped={**skipped, **generator.skipped},
    )


def read_log(layout: ProbeLayout, data: np.ndarray) -> dict[Pid, ProgramLog]:
    """Split a probe buffer copied back from the device into each chosen program's entries."""
    raw = np.ascontiguousarray(data).view(np.uint8)
    cursors = raw[: 4 * len(layout.pids)].view(np.int32)
    logs = {}
    for slot, pid in enumerate(layout.pids):
        used = int(cursors[slot])
        region = raw[layout.header + slot * layout.capacity :][: min(used, layout.capacity)]
        entries, at = [], 0
        while at + ENTRY_HEADER <= region.size:
            stmt = int(region[at : at + 4].view(np.int32)[0])
            point = layout.points.get(stmt)
            if point is None or at + point.entry > region.size:
                break
            entries.append((stmt, region[at + ENTRY_HEADER : at + point.entry].tobytes()))
            at += point.entry
        logs[pid] = ProgramLog(pid, entries, used, used > layout.capacity)
    return logs


def storage_of(dtype: str) -> str | None:
    """The numpy dtype a value of Triton type `dtype` is logged as, or None when it cannot be."""
    if dtype.startswith("pointer<"):
        return "int64"
    return _STORAGE.get(dtype)


def _points(launch: Launch, records: dict[Pid, list[Record]]) -> tuple[dict[int, ProbePoint], dict[int, str]]:
    shapes: dict[int, set[tuple[int, ...]]] = defaultdict(set)
    dtypes: dict[int, set[str]] = defaultdict(set)
    for program in records.values():
        for r in program:
            shapes[r.stmt].add(r.shape)
            dtypes[r.stmt].add(r.dtype)
    points, skipped = {}, {}
    for stmt, kinds in dtypes.items():
        storages = {storage_of(d) for d in kinds}
        if None in storages or len(storages) != 1:
            skipped[stmt] = f"type {', '.join(sorted(kinds))} is not logged"
            continue
        storage = storages.pop()
        assert storage is not None
        ranks = {len(s) for s in shapes[stmt]}
        if len(ranks) != 1:
            skipped[stmt] = "its rank differs between calls"
            continue
        size = max(math.prod(s) for s in shapes[stmt]) * np.dtype(storage).itemsize
        shape = next(iter(shapes[stmt])) if len(shapes[stmt]) == 1 else None
        points[stmt] = ProbePoint(stmt, storage, ENTRY_HEADER + -(-size // 8) * 8, shape, ranks.pop())
    return points, skipped


class _Generator:
    """Writes the probed variants of a kernel and of the helpers it calls, each once."""

    def __init__(self, launch: Launch, layout: ProbeLayout, directory: Path) -> None:
        self.launch = launch
        self.layout = layout
        self.directory = directory
        self.variants: dict[Any, Any] = {}
        self.sources: dict[str, str] = {}
        self.files: dict[str, str] = {}
        self.facts: dict[int, StatementFacts] = {}
        self.skipped: dict[int, str] = {}
        self.names: dict[int, str] = {}
        self.functions = {(s.function, s.file) for s in launch.statements}

    def function(self, jit: Any, *, kernel: bool) -> Any:
        fn = jit.fn
        if fn.__code__ in self.variants:
            return self.variants[fn.__code__]
        try:
            # the source Triton compiles (and the interpreter runs): `_unsafe_update_src`'s, if given
            updated = triton_compat.updated_source(jit)
            lines, start = inspect.getsourcelines(fn) if updated is None else ([updated[0]], updated[1])
            file = inspect.getsourcefile(fn) or fn.__code__.co_filename
        except (OSError, TypeError) as exc:
            raise InstrumentError(f"{fn.__name__}: cannot read its source ({exc})") from exc
        tree = ast.parse(textwrap.dedent("".join(lines)))
        ast.increment_lineno(tree, start - 1)
        fdef = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
        fdef.decorator_list = []
        namespace = dict(fn.__globals__)
        if fn.__closure__:
            namespace.update(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__)))
        namespace[TL] = tl
        self.variants[fn.__code__] = None  # a helper that calls itself stays as it is
        _Calls(self, namespace).visit(fdef)
        body = _Body(self, fdef, file, kernel)
        fdef.body = body.prologue() + body.arguments() + body.block(fdef.body)
        if kernel:
            fdef.args.args.append(ast.arg(PROBE))
            fdef.args.defaults.append(ast.Constant(None))
        else:
            fdef.args.args[:0] = [ast.arg(PROBE), ast.arg(SLOT)]
        ast.fix_missing_locations(fdef)
        source = f"# kernel_nb: {fn.__name__} with probes, from {file}\n\n" + ast.unparse(fdef) + "\n"
        path = self._write(fn.__name__, source)
        exec(compile(source, str(path), "exec"), namespace)
        options: dict[str, Any] = {
            "debug": getattr(jit, "debug", None),
            "noinline": getattr(jit, "noinline", None),
        }
        if kernel:
            options["do_not_specialize"] = getattr(jit, "do_not_specialize", None)
        variant = triton.jit(namespace[fdef.name], **{k: v for k, v in options.items() if v is not None})
        self.variants[fn.__code__] = variant
        self.sources[fn.__name__] = source
        self.files[fn.__name__] = str(path)
        return variant

    def _write(self, name: str, source: str) -> Path:
        digest = hashlib.sha1(source.encode()).hexdigest()[:16]
        path = self.directory / f"{name}_{digest}.py"
        if not path.exists():
            self.directory.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(f".{os.getpid()}.tmp")
            partial.write_text(source)
            os.replace(partial, path)
        return path

    def helper(self, value: Any) -> Any | None:
        """The probed variant of a user @triton.jit helper the interpreter saw run, else None."""
        if not isinstance(value, triton_compat.JIT_FUNCTION):
            return None
        fn = value.fn
        if fn.__module__.startswith("triton."):
            return None
        try:
            file = inspect.getsourcefile(fn) or fn.__code__.co_filename
        except TypeError:
            return None
        if (fn.__name__, file) not in self.functions:
            return None
        return self.function(value, kernel=False)


class _Calls(ast.NodeTransformer):
    """Points calls of user helpers at their probed variants, passing the probe and the slot first."""

    def __init__(self, generator: _Generator, namespace: dict[str, Any]) -> None:
        self.generator = generator
        self.namespace = namespace
        self.count = 0

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        variant = self.generator.helper(_resolve(node.func, self.namespace))
        if variant is None:
            return node
        name = self.generator.names.setdefault(
            id(variant), f"_tk_{variant.fn.__name__}_{len(self.generator.names)}"
        )
        self.namespace[name] = variant
        node.func = ast.Name(name, ast.Load())
        node.args[:0] = [ast.Name(PROBE, ast.Load()), ast.Name(SLOT, ast.Load())]
        return node


def _resolve(expr: ast.expr, namespace: dict[str, Any]) -> Any:
    if isinstance(expr, ast.Name):
        return namespace.get(expr.id)
    if isinstance(expr, ast.Attribute):
        base = _resolve(expr.value, namespace)
        return None if base is None else getattr(base, expr.attr, None)
    return None


class _Body(SiteWalker):
    """Inserts a probe after each site the interpreter records (the same walk: engine.sites)."""

    def __init__(self, generator: _Generator, fdef: ast.FunctionDef, file: str, kernel: bool) -> None:
        self.g = generator
        self.fdef = fdef
        self.kernel = kernel
        ids: dict[tuple[int, str, str], deque[int]] = defaultdict(deque)
        for s in generator.launch.statements:
            if s.function == fdef.name and s.file == file:
                ids[(s.line, s.name, s.kind)].append(s.id)
        self.ids = ids

    def prologue(self) -> list[ast.stmt]:
        if not self.kernel:
            return []
        # The slot of this program among the chosen ones (-1: not chosen), from its linear index.
        terms = " + ".join(
            f"(_tk_linear == {lin}).to({TL}.int32) * {slot + 1}"
            for slot, lin in enumerate(self.g.layout.linear)
        )
        return _parse(
            f"_tk_linear = {TL}.program_id(0) + {TL}.num_programs(0) * ({TL}.program_id(1) + "
            f"{TL}.num_programs(1) * {TL}.program_id(2))\n"
            f"{SLOT} = -1 + {terms}\n"
        )

    def arguments(self) -> list[ast.stmt]:
        return [s for site in argument_sites(self.fdef) for s in self.after(site)]

    def after(self, site: Site) -> list[ast.stmt]:
        queue = self.ids.get((site.line, site.name, site.kind))
        if not queue:
            return []
        stmt = queue.popleft()
        self.g.facts[stmt] = facts_of([] if site.reads is None else [site.reads])
        point = self.g.layout.points.get(stmt)
        if point is None:
            return []
        return _parse(_probe_source(site.name, point, self.g.layout.capacity, self.g.layout.header))


def _probe_source(name: str, point: ProbePoint, capacity: int, header: int) -> str:
    element = _element_name(point.storage)
    index = _index(name, point.shape, point.rank)
    return (
        f"if {SLOT} >= 0:\n"
        f"    _tk_at = {TL}.atomic_add(({PROBE} + {SLOT} * 4).to({TL}.pointer_type({TL}.int32)), {point.entry})\n"
        f"    if _tk_at + {point.entry} <= {capacity}:\n"
        f"        _tk_entry = {PROBE} + ({header} + {SLOT}.to({TL}.int64) * {capacity} + _tk_at)\n"
        f"        {TL}.store(_tk_entry.to({TL}.pointer_type({TL}.int32)), {point.stmt})\n"
        f"        {TL}.store((_tk_entry + {ENTRY_HEADER}).to({TL}.pointer_type({TL}.{element})){index}, "
        f"{TL}.cast({name}, {TL}.{element}))\n"
    )


def _element_name(storage: str) -> str:
    triton_name = next(k for k, v in _STORAGE.items() if v == storage and k != "int1")
    return _TL_NAMES[triton_name]


def _index(name: str, shape: tuple[int, ...] | None, rank: int) -> str:
    """`` + <C-order element offsets>`` for a block value, empty for a scalar.

    A shape that differs between calls of a helper is read from the value when the helper compiles.
    """
    if rank == 0:
        return ""
    size = [f"{name}.shape[{i}]" for i in range(rank)] if shape is None else [str(n) for n in shape]
    parts = []
    for axis, extent in enumerate(size):
        lanes = f"{TL}.arange(0, {extent})"
        if len(size) > 1:
            lanes += "[" + ", ".join(":" if i == axis else "None" for i in range(len(size))) + "]"
        stride = " * ".join(size[axis + 1 :])
        parts.append(f"{lanes} * ({stride})" if stride else lanes)
    return " + (" + " + ".join(parts) + ")"


def _parse(source: str) -> list[ast.stmt]:
    return ast.parse(source).body
