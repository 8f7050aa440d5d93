"""Kernel source → an instrumented Python function.

The kernel's (or helper's) source is parsed, Triton's own interpreter rewrites are applied
(assignments become tensors, chained comparisons), then every assignment is followed by a call
that records the assigned value, every loop counts its iterations, and requested lines get a
breakpoint. The function is compiled with its original file name and line numbers, so tracebacks,
`pdb` and `breakpoint()` point at the user's source.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernel_nb.engine import triton_compat, waiting
from kernel_nb.engine.ast_nodes import fix_locations, walk
from kernel_nb.engine.control_checks import condition, loop_bound
from kernel_nb.engine.name_facts import binding_order, carried, expression_facts, name_facts, reads
from kernel_nb.engine.sites import Site, SiteWalker, argument_sites, ends_early, target_names

PROBE = "__tk__"
LOOP_BOUND = "__tk__bound"  # checks a range loop's bounds as the compiler does (`loop_bound`)
CONDITION = "__tk__condition"  # checks an if's or a while's condition as the compiler does


@dataclass(frozen=True)
class LocalStatement:
    """A recorded place, numbered within its function.

    Attributes:
        operands: the names the statement reads (for telling a NaN's origin from its carriers).
        makes_inf: the statement writes infinities on purpose (an inf literal, a load's other=).
        loads: the statement loads from memory.
    """

    line: int
    name: str
    kind: str
    operands: tuple[str, ...] = ()
    makes_inf: bool = False
    loads: bool = False


@dataclass(frozen=True)
class RewrittenFunction:
    """A kernel or helper, rewritten and compiled, ready to be bound to a launch."""

    name: str
    file: str
    first_line: int
    source: str
    code: types.CodeType
    statements: tuple[LocalStatement, ...]
    closure: tuple[tuple[str, Any], ...]
    # what the function's own source calls that makes its programs depend on running one at a
    # time, or the bookkeeping per element (see batched/run.py)
    calls_print: bool = False  # print, tl.device_print, tl.static_print
    breakpoints: tuple[str, ...] = ()  # breakpoint(), pdb.set_trace() and the like, by name
    calls_inline_asm: bool = False
    uses_atomics: bool = False

    def bind(self, fn_globals: dict[str, Any], probe: Any) -> Callable[..., Any]:
        """The function, defined in a private copy of its globals with the probe and Triton's names."""
        # libdevice stubs imported by name become the backend's functions, as the compiler maps them
        namespace = {name: triton_compat.libdevice_global(value) for name, value in fn_globals.items()}
        namespace.update(triton_compat.rewrite_globals())
        namespace.update((name, triton_compat.libdevice_global(value)) for name, value in self.closure)
        namespace[PROBE] = probe
        namespace[LOOP_BOUND] = loop_bound
        namespace[CONDITION] = condition
        exec(self.code, namespace)
        return namespace[self.name]


class SourceUnavailableError(RuntimeError):
    """The function has no source that `inspect` can find."""


_SHARED: OrderedDict[tuple[Any, ...], RewrittenFunction] = OrderedDict()
_SHARED_LIMIT = 256


def shared_rewrite(
    fn: Callable[..., Any],
    *,
    instrument: bool,
    breakpoints: tuple[int, ...] = (),
    source: tuple[str, int] | None = None,
    own: tuple[list[str], int] | None = None,
) -> RewrittenFunction:
    """`rewrite`, kept across sessions for functions without a closure: a code object stands for
    one source, and every `%%tkernel` cell opens a new session that would otherwise parse and
    compile the kernel and Triton's own helpers again. A closure's cells may hold other values on
    another call, so such functions are rewritten each time."""
    if fn.__closure__:
        return rewrite(fn, instrument=instrument, breakpoints=breakpoints, source=source, own=own)
    key = (fn.__code__, instrument, breakpoints, source)
    found = _SHARED.get(key)
    if found is None:
        found = _SHARED[key] = rewrite(
            fn, instrument=instrument, breakpoints=breakpoints, source=source, own=own
        )
        if len(_SHARED) > _SHARED_LIMIT:
            _SHARED.popitem(last=False)
    else:
        _SHARED.move_to_end(key)
    return found


class RewriteCache:
    """The rewritten functions of one session, and the sources `_unsafe_update_src` gave kernels.

    A cache: a function is rewritten again when its code, its breakpoints or its source change.
    """

    def __init__(self, breakpoints: tuple[int, ...]) -> None:
        self.breakpoints = breakpoints
        self._rewrites: dict[tuple[Any, ...], RewrittenFunction] = {}
        # sources that JITFunctions were given by _unsafe_update_src, by the function under them
        self.sources: dict[Callable[..., Any], tuple[str, int]] = {}
        # the lines JITFunctions read their function's source from when decorated (see `own_source`)
        self.own: dict[Callable[..., Any], tuple[list[str], int]] = {}

    def rewritten(self, fn: Callable[..., Any], *, instrument: bool) -> RewrittenFunction:
        """`fn` rewritten (instrumented: recorded, with the session's breakpoints)."""
        breakpoints = self.breakpoints if instrument else ()
        source = self.sources.get(fn)
        key = (fn.__code__, instrument, breakpoints, source)
        if key not in self._rewrites:
            self._rewrites[key] = shared_rewrite(
                fn, instrument=instrument, breakpoints=breakpoints, source=source, own=self.own.get(fn)
            )
        return self._rewrites[key]

    def waits(self, fn: Callable[..., Any]) -> str | None:
        """Where `fn` or a helper it calls may wait for another program (see waiting.waits), read
        from the lines its JITFunction kept."""
        return waiting.waits(fn, self.own.get(fn))

    def note_source(self, jit: Any) -> None:
        """Remember the source `jit` compiles when `_unsafe_update_src` replaced its function's own."""
        own = triton_compat.own_source(jit)
        if own is not None:
            self.own[jit.fn] = own
        updated = triton_compat.updated_source(jit)
        if updated is None:
            self.sources.pop(jit.fn, None)
        else:
            self.sources[jit.fn] = updated


def rewrite(
    fn: Callable[..., Any],
    *,
    instrument: bool,
    breakpoints: tuple[int, ...] = (),
    source: tuple[str, int] | None = None,
    own: tuple[list[str], int] | None = None,
) -> RewrittenFunction:
    """Parse and rewrite a kernel or helper function.

    Args:
        fn: the Python function under the @triton.jit.
        instrument: insert statement records and loop counters.
        breakpoints: file line numbers before whose statements the probe's `brk` is called.
        source: the text to rewrite instead of the function's own, and the file line it starts on
            (a JITFunction's source replaced by `_unsafe_update_src`, which is what Triton compiles).
        own: the function's own lines and the file line they start on, as its JITFunction read
            them (`inspect.getsourcelines` tokenizes the file again otherwise).

    Returns:
        The compiled function and its statement table.

    Raises:
        SourceUnavailableError: the source cannot be read (e.g. a function built with exec).
    """
    try:
        if source is not None:
            lines, start = source[0].splitlines(keepends=True), source[1]
        elif own is not None:
            lines, start = own
        else:
            lines, start = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(fn) or fn.__code__.co_filename
    except (OSError, TypeError) as exc:
        raise SourceUnavailableError(f"{fn.__name__}: cannot read its source ({exc})") from exc
    text = textwrap.dedent("".join(lines))
    # parsed at its file lines (blank lines before it), not moved there node by node afterwards
    tree = ast.parse("\n" * (start - 1) + text)
    fdef = next(node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))
    fdef.decorator_list = []
    tree.body = [fdef]
    for transformer in triton_compat.stock_transformers():
        tree = transformer.visit(tree)
    _check_conditions(tree.body)
    instrumenter = _Instrumenter(instrument, set(breakpoints))
    transformed = tree.body[0]
    assert isinstance(transformed, (ast.FunctionDef, ast.AsyncFunctionDef))
    fdef = transformed
    called, instrumenter.reads, instrumenter.locals = name_facts(fdef)
    arg_records = [s for site in argument_sites(fdef) for s in instrumenter.after(site)]
    fdef.body = arg_records + instrumenter.block(fdef.body)
    fix_locations(tree)
    code = compile(tree, filename=file, mode="exec")
    closure: tuple[tuple[str, Any], ...] = ()
    if fn.__closure__:
        closure = tuple(
            (name, cell.cell_contents) for name, cell in zip(fn.__code__.co_freevars, fn.__closure__)
        )
    return RewrittenFunction(
        name=fdef.name,
        file=file,
        first_line=start,
        source="".join(lines),
        code=code,
        statements=tuple(instrumenter.statements),
        closure=closure,
        calls_print=bool(called & {"print", "device_print", "static_print"}),
        breakpoints=tuple(name for name in ("breakpoint", "set_trace") if name in called),
        calls_inline_asm=any("inline_asm" in name for name in called),
        uses_atomics=any(name.startswith("atomic_") for name in called),
    )


def _check_conditions(body: list[ast.stmt]) -> None:
    """`if c:` and `while c:` become `if __tk__condition(c):` (see `condition`), through every body
    of statements (an `if` or a `while` is a statement: no expression holds one)."""
    for stmt in body:
        if isinstance(stmt, (ast.If, ast.While)):
            stmt.test = _checked(stmt.test)
        for field in stmt._fields:
            value = getattr(stmt, field, None)
            if isinstance(value, list) and value:
                if isinstance(value[0], ast.stmt):
                    _check_conditions(value)
                elif isinstance(value[0], (ast.excepthandler, ast.match_case)):
                    for part in value:
                        _check_conditions(part.body)


def _checked(test: ast.expr) -> ast.expr:
    return ast.copy_location(ast.Call(ast.Name(CONDITION, ast.Load()), [test], []), test)


class _Instrumenter(SiteWalker):
    """Puts a record of the value after every site, loop counters around loops, and the probe's
    `brk` before the statements of breakpoint lines."""

    def __init__(self, instrument: bool, breakpoints: set[int]) -> None:
        self.instrument = instrument
        self.breakpoints = breakpoints
        self.statements: list[LocalStatement] = []
        self.nodes: list[ast.AST] = []  # each statement's site's node
        self.loops = 0
        self.reads: Counter[str] = Counter()  # how often the function reads each name, as written
        self.locals: set[str] = set()  # the function's parameters and the names it assigns

    def after(self, site: Site) -> list[ast.stmt]:
        if not self.instrument:
            return []
        sid = len(self.statements)
        operands, makes_inf, loads = (
            ((), False, False) if site.reads is None else expression_facts(site.reads)
        )
        self.statements.append(
            LocalStatement(
                site.line, site.name, site.kind, operands=operands, makes_inf=makes_inf, loads=loads
            )
        )
        self.nodes.append(site.node)
        return [self._probe_call("record", site.node, ast.Constant(sid), ast.Name(site.name, ast.Load()))]

    def before(self, stmt: ast.stmt) -> list[ast.stmt]:
        return (
            [self._probe_call("brk", stmt, ast.Constant(stmt.lineno))]
            if stmt.lineno in self.breakpoints
            else []
        )

    def _probe_call(self, method: str, where: ast.AST, *args: ast.expr) -> ast.stmt:
        call = ast.Expr(
            ast.Call(ast.Attribute(ast.Name(PROBE, ast.Load()), method, ast.Load()), list(args), [])
        )
        return ast.copy_location(call, where)

    def loop(self, stmt: ast.For | ast.While) -> list[ast.stmt]:
        names = self._masked_range(stmt)  # before the body is instrumented: its names as written
        first, plain = len(self.statements), not ends_early(stmt)
        # the sites of the body's own statements (a nested loop's variables are not: it may not run)
        top = {id(s) for s in stmt.body if not isinstance(s, (ast.For, ast.While))} | {id(stmt)}
        body = self.block(stmt.body)
        stmt.orelse = self.block(stmt.orelse)
        head: list[ast.stmt] = []
        tail: list[ast.stmt] = []
        if names is not None:
            head, tail = self._carry(stmt, *names)
        if not self.instrument:
            stmt.body = head + body + tail
            return [stmt]
        head.insert(0, self._probe_call("loop_next", stmt))
        head.extend(self.loop_head(stmt))  # after the body's sites: the statement table's order
        stmt.body = head + body + tail
        every = [i for i in range(first, len(self.statements)) if plain and id(self.nodes[i]) in top]
        sites = [ast.Tuple([ast.Constant(i) for i in every], ast.Load())] if every else []
        return [self._probe_call("loop_enter", stmt, *sites), stmt, self._probe_call("loop_exit", stmt)]

    def _masked_range(self, stmt: ast.For | ast.While) -> tuple[list[str], list[str]] | None:
        """For `for x in range(...)` (or tl.range): route the range through the probe, which lets
        programs with different trip counts run the loop together (the batched strategy narrows
        each iteration to the programs still running, or masks the others). Returns the names the
        body assigns whose values outlive an iteration, and the function's own names whose values
        from before an iteration the body reads."""
        if not isinstance(stmt, ast.For) or not isinstance(stmt.iter, ast.Call):
            return None
        func = stmt.iter.func
        if not (
            (isinstance(func, ast.Name) and func.id == "range")
            or (isinstance(func, ast.Attribute) and func.attr == "range")
        ):
            return None
        call = stmt.iter
        stmt.iter = ast.copy_location(
            ast.Call(
                ast.Attribute(ast.Name(PROBE, ast.Load()), "range", ast.Load()),
                [func, *_checked_bounds(call.args)],
                call.keywords,
            ),
            call,
        )
        assigned: list[str] = []
        for node in stmt.body:
            for inner in walk(node):
                if isinstance(inner, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For)):
                    targets = inner.targets if isinstance(inner, ast.Assign) else [inner.target]
                    for target in targets:
                        assigned.extend(n for n in target_names(target) if n not in assigned)
        # only names whose values outlive an iteration need the finished programs' values kept:
        # those read after the loop (or anywhere outside it) and those carried from one iteration
        # into the next; the others are made afresh before every read
        inside = reads(stmt.body)
        order = binding_order(stmt.body)
        kept = [n for n in assigned if self.reads[n] > inside[n] or carried(order, n)]
        read = sorted(n for n in inside if n in self.locals and carried(order, n))
        return kept, read

    def _carry(
        self, stmt: ast.For | ast.While, names: list[str], read: list[str]
    ) -> tuple[list[ast.stmt], list[ast.stmt]]:
        """Statements for a loop whose programs may differ in trip count (see BatchRecorder): at the
        top of each iteration a snapshot of the function's names, then the names the body reads as
        the probe narrows them to the programs still running; at its end, the names assigned back
        (the finished programs' values kept, narrowed names made whole again)."""
        self.loops += 1
        saved = f"{PROBE}saved{self.loops}"
        narrowed, merged = f"{PROBE}narrowed{self.loops}", f"{PROBE}merged{self.loops}"
        locals_call = ast.Call(ast.Name("locals", ast.Load()), [], [])
        # only the names narrowed or merged: the others' values from the iteration before (the
        # body's temporaries, a tile per program each) would live on through the next iteration
        needed = ast.Tuple([ast.Constant(n) for n in names + [n for n in read if n not in names]], ast.Load())
        snapshot = ast.Assign(
            [ast.Name(saved, ast.Store())],
            ast.Call(
                ast.Attribute(ast.Name(PROBE, ast.Load()), "snapshot", ast.Load()), [locals_call, needed], []
            ),
        )
        narrow = ast.Assign(
            [ast.Name(narrowed, ast.Store())],
            ast.Call(
                ast.Attribute(ast.Name(PROBE, ast.Load()), "narrow", ast.Load()),
                [ast.Name(saved, ast.Load()), ast.Tuple([ast.Constant(n) for n in read], ast.Load())],
                [],
            ),
        )
        merge = ast.Assign(
            [ast.Name(merged, ast.Store())],
            ast.Call(
                ast.Attribute(ast.Name(PROBE, ast.Load()), "merge", ast.Load()),
                [
                    ast.Name(saved, ast.Load()),
                    locals_call,
                    ast.Tuple([ast.Constant(n) for n in names], ast.Load()),
                ],
                [],
            ),
        )
        head: list[ast.stmt] = [snapshot, narrow]
        if read:
            head.append(ast.If(ast.Name(narrowed, ast.Load()), _assign_from(narrowed, read), []))
        tail: list[ast.stmt] = [merge]
        back = names + [n for n in read if n not in names]
        if back:
            tail.append(ast.If(ast.Name(merged, ast.Load()), _assign_from(merged, back), []))
        return [ast.copy_location(h, stmt) for h in head], [ast.copy_location(t, stmt) for t in tail]


def _checked_bounds(args: list[ast.expr]) -> list[ast.expr]:
    """A range call's positional arguments, each passed through `loop_bound` with its role."""
    if any(isinstance(a, ast.Starred) for a in args) or not 1 <= len(args) <= 3:
        return args
    roles = ["upper bound"] if len(args) == 1 else ["lower bound", "upper bound", "step"][: len(args)]
    return [
        ast.copy_location(ast.Call(ast.Name(LOOP_BOUND, ast.Load()), [arg, ast.Constant(role)], []), arg)
        for arg, role in zip(args, roles)
    ]


def _assign_from(source: str, names: list[str]) -> list[ast.stmt]:
    """`if "x" in source: x = source["x"]` for each name."""
    return [
        ast.If(
            ast.Compare(ast.Constant(name), [ast.In()], [ast.Name(source, ast.Load())]),
            [
                ast.Assign(
                    [ast.Name(name, ast.Store())],
                    ast.Subscript(ast.Name(source, ast.Load()), ast.Constant(name), ast.Load()),
                )
            ],
            [],
        )
        for name in names
    ]
