"""Session behaviour: interception of every launch kind, exact restore, options, replay, save/load."""

import gc
import io
import pdb
import types
import weakref

import numpy as np
import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime import interpreter

import kernel_nb
from kernel_nb.engine.patches import NamespaceSnapshot, routed_language
from tests.engine import kernels as k


def _compile_for_cuda(kernel):
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    source = ASTSource(fn=kernel, signature=signature, constexprs={"BLOCK": 128})
    return triton.compile(source, target=GPUTarget("cuda", 90, 32))


def test_compile_after_interpret_in_the_same_process():
    x = np.ones(300, np.float32)
    out = np.zeros_like(x)
    language_before = dict(vars(tl))
    tensor_before = dict(vars(tl.tensor))
    np_dtype_before = interpreter._get_np_dtype
    with kernel_nb.interpret():
        k.add_kernel[(3,)](x, x, out, 300, BLOCK=128)
        k.helper_kernel[(3,)](x, out, 300, 2.0, BLOCK=128)
    assert dict(vars(tl)) == language_before
    assert dict(vars(tl.tensor)) == tensor_before
    assert interpreter._get_np_dtype is np_dtype_before
    compiled = _compile_for_cuda(k.add_kernel)
    assert "ld.global" in compiled.asm["ptx"]


def test_jit_helpers_cannot_be_called_outside_a_kernel_after_the_session():
    with kernel_nb.interpret():
        pass
    with pytest.raises(RuntimeError, match="outside of the scope of a kernel"):
        k._scale_shift(1, 2, 3)


def test_nested_sessions_fail_loudly():
    with kernel_nb.interpret(), pytest.raises(RuntimeError, match="cannot be nested"):
        with kernel_nb.interpret():
            pass


def test_patches_are_restored_after_an_error():
    run_before = type(k.add_kernel).run
    np_dtype_before = interpreter._get_np_dtype
    x = np.ones(10, np.float32)
    with pytest.raises(kernel_nb.KernelMemoryError), kernel_nb.interpret():
        k.add_kernel_no_mask[(1,)](x, x, x, 10, BLOCK=16)
    assert type(k.add_kernel).run is run_before
    assert interpreter._get_np_dtype is np_dtype_before


def test_the_interpreters_numpy_types_are_answered_as_it_answers_them_while_a_launch_runs():
    own = interpreter._get_np_dtype
    types = [getattr(tl, name) for name in dir(tl) if isinstance(getattr(tl, name), tl.dtype)]
    types += [
        tl.pointer_type(tl.float32),
        tl.pointer_type(tl.int8),
        tl.block_type(tl.pointer_type(tl.float16), [4]),
    ]
    types += [tl.block_type(t, [2, 8]) for t in types if not isinstance(t, tl.block_type)]
    expected = {}
    for t in types:
        try:
            expected[str(t)] = own(t)
        except KeyError:  # a type the interpreter holds no numpy type for (tl.void, fp8e4b15 ...)
            expected[str(t)] = KeyError
    seen = {}

    @triton.jit
    def probe(x_ptr):
        tl.store(x_ptr, tl.load(x_ptr) + 1)

    def answers():
        for _ in range(2):  # the second time from what the first remembered
            for t in types:
                try:
                    got = interpreter._get_np_dtype(t)
                except KeyError:
                    got = KeyError
                assert seen.setdefault(str(t), got) == got

    x = np.zeros(1, np.int32)
    with kernel_nb.interpret():
        probe[(1,)](x)
        with routed_language():  # the scope every launch runs in
            assert interpreter._get_np_dtype is not own
            answers()
    assert x[0] == 1
    assert seen == expected and len(seen) > 20


@triton.autotune(
    configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128}, num_warps=8)], key=["n"]
)
@triton.jit
def autotuned_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=offsets < n), mask=offsets < n)


@pytest.mark.parametrize("config, programs", [(0, 5), (1, 3)])
def test_autotune_runs_the_chosen_config_without_benchmarking(config, programs):
    x = np.arange(300, dtype=np.float32)
    out = np.zeros_like(x)
    grid = lambda meta: (triton.cdiv(300, meta["BLOCK"]),)  # noqa: E731
    with kernel_nb.interpret(autotune_config=config) as session:
        autotuned_copy[grid](x, out, 300)
    np.testing.assert_array_equal(out, x)
    assert len(session.trace[0].programs) == programs


@triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n"])})
@triton.jit
def heuristic_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=offsets < n), mask=offsets < n)


def test_heuristics():
    x = np.arange(100, dtype=np.float32)
    out = np.zeros_like(x)
    with kernel_nb.interpret() as session:
        heuristic_copy[(1,)](x, out, 100)
    np.testing.assert_array_equal(out, x)
    assert session.trace[0].records(0, name="offsets")[0].shape == (128,)


def test_records_have_names_shapes_and_counts():
    x = np.arange(512, dtype=np.float32)
    y, out = x.copy(), np.zeros_like(x)
    with kernel_nb.interpret() as session:
        k.add_kernel[(2,)](x, y, out, 500, BLOCK=256)
    launch = session.trace[0]
    names = [(s.name, s.kind) for s in launch.statements]
    assert names == [
        ("x_ptr", "arg"), ("y_ptr", "arg"), ("out_ptr", "arg"), ("n", "arg"), ("BLOCK", "arg"),
        ("pid", "assign"), ("offsets", "assign"), ("mask", "assign"), ("x", "assign"), ("y", "assign"),
    ]  # fmt: skip
    records = launch.program(1).records
    assert [launch.statements[r.stmt].name for r in records] == [n for n, _ in names]
    by_name = {launch.statements[r.stmt].name: r for r in records}
    assert by_name["offsets"].shape == (256,) and by_name["offsets"].dtype == "int32"
    np.testing.assert_array_equal(by_name["offsets"].value, np.arange(256, 512))
    assert by_name["mask"].summary.mean == pytest.approx(244 / 256)
    assert by_name["x"].summary.max == 499.0  # masked lanes load 0
    assert by_name["pid"].shape == () and by_name["pid"].value == 1
    assert by_name["x_ptr"].pointer_arg == "x_ptr" and by_name["x_ptr"].value == 0
    events = launch.program(1).events
    assert [(e.kind, e.arg, e.active, e.lo, e.hi) for e in events] == [
        ("load", "x_ptr", 244, 256, 500), ("load", "y_ptr", 244, 256, 500), ("store", "out_ptr", 244, 256, 500)
    ]  # fmt: skip
    store = events[2]
    np.testing.assert_array_equal(store.before[store.mask], 0.0)
    np.testing.assert_array_equal(store.values[store.mask], 2 * x[256:500])
    assert launch.buffers["out_ptr"].never_written().tolist() == list(range(500, 512))


def test_budget_keeps_summaries_for_all_and_replays_the_rest():
    x = np.arange(64 * 16, dtype=np.float32)
    out = np.zeros_like(x)
    with kernel_nb.interpret() as session:
        k.add_kernel[(16,)](x, x, out, x.size, BLOCK=64)
    per_program = session.trace[0].kept_bytes // 16
    with kernel_nb.interpret(budget_bytes=per_program + 1) as session:
        k.add_kernel[(16,)](x, x, out, x.size, BLOCK=64)
    launch = session.trace[0]
    kept = [pid for pid, p in launch.programs.items() if p.kept]
    assert kept == [(0, 0, 0), (1, 0, 0)]  # the budget lasts for the first programs only
    assert launch.kept_bytes == 2 * per_program
    assert all(p.records and p.records[-1].summary.size == 64 for p in launch.programs.values())
    assert launch.programs[(9, 0, 0)].records[-1].value is None
    replayed = launch.program(9)  # replayed from the snapshot of the inputs
    assert replayed.kept
    np.testing.assert_array_equal(launch.value(9, "x"), x[9 * 64 : 10 * 64])
    np.testing.assert_array_equal(out, 2 * x)  # replay left the results alone
    maps = launch.buffers
    assert maps["out_ptr"].writes.tolist() == [1] * x.size  # and the launch's access maps
    assert maps["x_ptr"].reads.tolist() == [1] * x.size and maps["x_ptr"].last_writer.max() == -1


def test_pid_selection():
    x = np.arange(64 * 4, dtype=np.float32)
    with kernel_nb.interpret(pids=((2, 0, 0),)) as session:
        k.copy_kernel[(4,)](x, np.zeros_like(x), x.size, BLOCK=64)
    assert [pid for pid, p in session.trace[0].programs.items() if p.kept] == [(2, 0, 0)]


def test_no_capture_still_guards_and_records_memory():
    x = np.arange(128, dtype=np.float32)
    out = np.zeros_like(x)
    with kernel_nb.interpret(capture=False) as session:
        k.copy_kernel[(2,)](x, out, 128, BLOCK=64)
    np.testing.assert_array_equal(out, x)
    launch = session.trace[0]
    assert launch.statements == [] and all(not p.records for p in launch.programs.values())
    assert [e.kind for e in launch.programs[(1, 0, 0)].events] == ["load", "store"]


def test_launch_option_interprets_only_that_launch():
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    with kernel_nb.interpret(launch=0) as session:
        k.copy_kernel[(1,)](x, out, 64, BLOCK=64)
        with pytest.raises(Exception) as info:
            k.copy_kernel[(1,)](x, out, 64, BLOCK=64)
    assert len(session.trace) == 1
    assert not isinstance(info.value, kernel_nb.KernelError)


def test_reverse_order_gives_the_same_result_for_independent_programs():
    x = np.arange(300, dtype=np.float32)
    out = np.zeros_like(x)
    with kernel_nb.interpret(order="reverse") as session:
        k.add_kernel[(3,)](x, x, out, 300, BLOCK=128)
    np.testing.assert_array_equal(out, 2 * x)
    assert list(session.trace[0].programs) == [(2, 0, 0), (1, 0, 0), (0, 0, 0)]


def test_breakpoint_stops_in_the_chosen_program():
    x = np.arange(256, dtype=np.float32)
    out = np.zeros_like(x)
    line = k.add_kernel.fn.__code__.co_firstlineno + 5  # x = tl.load(...)
    stdout = io.StringIO()
    debugger = lambda: pdb.Pdb(stdin=io.StringIO("p offsets\ncontinue\n"), stdout=stdout)  # noqa: E731
    with kernel_nb.interpret(breakpoints=(line,), break_pid=(1, 0, 0), debugger=debugger):
        k.add_kernel[(2,)](x, x, out, 256, BLOCK=128)
    shown = stdout.getvalue()
    assert f"kernels.py({line})add_kernel()" in shown
    assert "array([128, 129, 130" in shown and shown.count("(Pdb)") == 2  # program 1 only
    np.testing.assert_array_equal(out, 2 * x)


def test_save_and_load(tmp_path):
    x = np.arange(128, dtype=np.float32)
    out = np.zeros_like(x)
    with kernel_nb.interpret() as session:
        k.add_kernel[(2,)](x, x, out, 128, BLOCK=64)
    path = tmp_path / "trace.knb"
    session.trace.save(path)
    loaded = kernel_nb.Trace.load(path)
    np.testing.assert_array_equal(loaded[0].value(1, "x"), x[64:])
    assert loaded[0].statements == session.trace[0].statements
    assert loaded.summary() == session.trace.summary()
    (tmp_path / "bad").write_bytes(b"nope")
    with pytest.raises(ValueError, match="not a kernel_nb trace"):
        kernel_nb.Trace.load(tmp_path / "bad")


@pytest.mark.parametrize("strategy", ["auto", "serial"])
def test_a_launch_is_freed_as_soon_as_nobody_holds_it(strategy):
    """No reference cycle keeps a launch (and its arrays) alive until a garbage collection."""
    x, y, out = np.ones(1000, np.float32), np.ones(1000, np.float32), np.zeros(1000, np.float32)
    with kernel_nb.interpret(strategy=strategy) as session:
        k.add_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    launch = weakref.ref(session.trace[-1])
    gc.disable()
    try:
        del session
        assert launch() is None
    finally:
        gc.enable()


def test_save_and_load_keeps_the_buffer_maps(tmp_path, strategy):
    """The batched strategy's maps add each batch's marks in when read: a saved trace holds the
    counts themselves."""
    x = np.arange(1000, dtype=np.float32)
    out = np.zeros_like(x)
    with kernel_nb.interpret() as session:
        k.add_kernel[(4,)](x, x, out, 1000, BLOCK=256)
    launch = session.trace[0]
    assert launch.strategy == ("batched" if strategy == "auto" else "serial")
    path = tmp_path / "trace.knb"
    session.trace.save(path)
    loaded = kernel_nb.Trace.load(path)[0]
    expected_writers = np.repeat(np.arange(4, dtype=np.int32), 256)[:1000]
    for trace in (loaded, launch):
        np.testing.assert_array_equal(trace.buffers["x_ptr"].reads, np.full(1000, 1, np.int32))
        np.testing.assert_array_equal(trace.buffers["out_ptr"].writes, np.full(1000, 1, np.int32))
        np.testing.assert_array_equal(trace.buffers["out_ptr"].last_writer, expected_writers)
        assert trace.buffers["out_ptr"].written and not trace.buffers["x_ptr"].written


def test_kernels_are_parsed_once_across_sessions(monkeypatch):
    """Every `%%tkernel` cell opens a session: a kernel's rewritten source is kept across them,
    except for functions with a closure, whose cells may hold other values next time."""
    from kernel_nb.engine import rewrite

    parsed = []
    original = rewrite.rewrite
    monkeypatch.setattr(rewrite, "rewrite", lambda fn, **kw: parsed.append(fn.__name__) or original(fn, **kw))

    def closure_kernel(scale):
        @triton.jit
        def scaled(x_ptr, out_ptr, BLOCK: tl.constexpr):
            offsets = tl.arange(0, BLOCK)
            tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) * scale)

        return scaled

    x = np.arange(64, dtype=np.float32)
    for factor in (2.0, 3.0):
        out = np.zeros_like(x)
        with kernel_nb.interpret():
            k.add_kernel[(1,)](x, x, out, 64, BLOCK=64)
        np.testing.assert_array_equal(out, 2 * x)
        with kernel_nb.interpret():
            closure_kernel(factor)[(1,)](x, out, BLOCK=64)
        np.testing.assert_array_equal(out, factor * x)
    assert parsed.count("add_kernel") <= 1  # once, or not at all if an earlier test parsed it
    assert parsed.count("scaled") == 2


def test_only_the_arguments_a_launch_wrote_are_copied_back(monkeypatch, strategy):
    """Inputs the kernel only read already hold what the launch left there: copying them back
    would cost a pass over each. A poisoned argument is copied back whether written or not."""
    from kernel_nb.engine import args

    copied = []
    bind = args.bind

    def counting_bind(*a, **kw):
        bound = bind(*a, **kw)
        for memory in bound.memories:
            write, exchange = memory.write, memory.exchange
            memory.write = lambda data, write=write: copied.append(data.nbytes) or write(data)

            def exchanging(memory=memory, exchange=exchange):  # written back by exchange instead
                done = exchange()
                if done:
                    copied.append(memory.size)
                return done

            memory.exchange = exchanging
        return bound

    monkeypatch.setattr(args, "bind", counting_bind)
    monkeypatch.setattr(kernel_nb.engine.launch, "bind", counting_bind)
    x, y = np.arange(1000, dtype=np.float32), np.ones(2000, np.float32)
    out = np.zeros(1000, np.float32)
    with kernel_nb.interpret():
        k.add_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    np.testing.assert_array_equal(out, x + 1)
    assert copied == [out.nbytes]
    copied.clear()
    with kernel_nb.interpret(poison=("y_ptr",)):
        k.add_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    assert sorted(copied) == sorted([out.nbytes, y.nbytes])


@pytest.mark.parametrize("enabled", [True, False])
def test_the_garbage_collector_is_paused_during_a_launch_and_left_as_it_was(enabled):
    during = []
    x, y, out = np.arange(1000, dtype=np.float32), np.ones(1000, np.float32), np.zeros(1000, np.float32)
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        with kernel_nb.interpret(progress=lambda done, total: during.append(gc.isenabled())):
            k.add_kernel[(4,)](x, y, out, 1000, BLOCK=256)
        assert gc.isenabled() == enabled
        with pytest.raises(kernel_nb.KernelError), kernel_nb.interpret():  # also after a failure
            k.add_kernel_no_mask[(4,)](x, y, out, 1000, BLOCK=256)
        assert gc.isenabled() == enabled
    finally:
        gc.enable() if was else gc.disable()
    assert during and not any(during)
    np.testing.assert_array_equal(out, x + 1)


@triton.jit
def _same_table(t_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + tl.program_id(0) * BLOCK + offs, tl.load(t_ptr + offs))


@pytest.mark.parametrize("programs", [255, 256, 300])
def test_an_element_every_program_reads_counts_every_read(programs, strategy):
    # one batch, whose counts take the smallest type that holds a read per program
    table = np.arange(64, dtype=np.float32)
    out = np.zeros(programs * 64, np.float32)
    with kernel_nb.interpret() as session:
        _same_table[(programs,)](table, out, BLOCK=64)
    launch = session.trace[0]
    assert launch.strategy == ("batched" if strategy == "auto" else "serial")
    np.testing.assert_array_equal(launch.buffers["t_ptr"].reads, np.full(64, programs, np.int32))
    np.testing.assert_array_equal(out.reshape(programs, 64), np.broadcast_to(table, (programs, 64)))


@triton.jit
def _shared_tiles(t_ptr, out_ptr, STRIDE: tl.constexpr, BLOCK: tl.constexpr):
    # programs 4k..4k+3 all read tile k: a stretch of t (STRIDE 1) or every other element of one
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    tile = tl.load(t_ptr + (pid // 4) * BLOCK * STRIDE + offs * STRIDE)
    tl.store(out_ptr + pid * BLOCK + offs, tile)


@pytest.mark.parametrize("stride", [1, 2])
def test_tiles_that_programs_share_count_a_read_per_program(stride, strategy):
    programs, block = 24, 64
    table = np.arange(programs // 4 * block * stride, dtype=np.float32)
    out = np.zeros(programs * block, np.float32)
    with kernel_nb.interpret() as session:
        _shared_tiles[(programs,)](table, out, STRIDE=stride, BLOCK=block)
    launch = session.trace[0]
    assert launch.strategy == ("batched" if strategy == "auto" else "serial")
    expected = np.zeros(table.size, np.int64)
    expected[::stride] = 4
    np.testing.assert_array_equal(launch.buffers["t_ptr"].reads, expected)
    np.testing.assert_array_equal(out.reshape(-1, 4, block)[:, 0], table[::stride].reshape(-1, block))


def _changed(spaces, before):
    """(space index, name) of every attribute that differs from `before` (but `__annotations__`,
    which reading a class's members makes as it goes)."""
    return {
        (i, name)
        for i, (space, old) in enumerate(zip(spaces, before))
        for name in set(vars(space)) | set(old)
        if vars(space).get(name, before) is not old.get(name, before) and name != "__annotations__"
    }


@pytest.mark.skipif(
    not hasattr(interpreter, "_LangPatchScope"), reason="Triton before 3.6 patches without a scope"
)
def test_every_launch_routes_what_the_interpreter_routes_and_puts_it_back():
    from kernel_nb.engine import triton_compat

    spaces = triton_compat.language_namespaces()
    before = [dict(vars(space)) for space in spaces]

    def stub():
        pass

    probe = types.FunctionType(stub.__code__, {"tl": tl, "core": tl.core})
    snapshot = NamespaceSnapshot(spaces)  # (the scope's own restore leaves class attributes behind)
    interpreter._patch_lang(probe)
    stock = _changed(spaces, before)
    snapshot.restore()
    assert stock and not _changed(spaces, before)
    for _ in range(3):  # the first launch, and those after it
        with routed_language():
            routed = _changed(spaces, before)
            assert stock <= routed  # (and the libdevice and indexing routes of its own)
            assert tl.static_range(2, 5) == range(2, 5)  # the interpreter's range
        assert not _changed(spaces, before)
