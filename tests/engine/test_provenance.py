"""Pointer provenance and the memory guard: a pointer may touch only the memory of the argument it
was derived from, at aligned addresses, and write only where the caller's memory may be written."""

import inspect
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb


def _line(kernel, text):
    """The source line number of the first line of `kernel` that holds `text`."""
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


@triton.jit
def shifted_store(src_ptr, dst_ptr, shift, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs - shift, tl.load(src_ptr + offs))


@triton.jit
def shifted_load(src_ptr, dst_ptr, shift, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs + shift))


@triton.jit
def far_store(x_ptr, y_ptr, far):
    tl.store(x_ptr + far, 1.0)


@triton.jit
def selected_store(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    # even lanes from x, odd lanes from y, which runs past y's end
    ptrs = tl.where(offs % 2 == 0, x_ptr + offs // 2, y_ptr + offs)
    tl.store(ptrs, 3.0)


@triton.jit
def walking_store(x_ptr, y_ptr, steps, BLOCK: tl.constexpr):
    ptrs = y_ptr + tl.arange(0, BLOCK)
    for _ in range(steps):
        ptrs += BLOCK
    tl.store(ptrs, 1.0)


@triton.jit
def byte_cast_store(x_ptr, y_ptr, shift):
    bytes_ptr = y_ptr.to(tl.pointer_type(tl.int8)) + shift
    tl.store(bytes_ptr.to(tl.pointer_type(tl.float32)), 1.0)


@triton.jit
def absolute_store(x_ptr, address):
    # a negative int64 cast to a pointer: the address 2**64 + address
    tl.store(address.to(tl.int64).to(tl.pointer_type(tl.float32)), tl.load(x_ptr))


@triton.jit
def copy_kernel(src_ptr, dst_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs))


@triton.jit
def add_one_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.atomic_add(x_ptr + tl.arange(0, BLOCK), 1.0)


@triton.jit
def misaligned_load(x_ptr, out_ptr, shift):
    ptr = (x_ptr.to(tl.pointer_type(tl.int8)) + shift).to(tl.pointer_type(tl.float32))
    tl.store(out_ptr, tl.load(ptr))


def _refused(launch):
    """The KernelMemoryError a launch raises, as text."""
    with kernel_nb.interpret(), pytest.raises(kernel_nb.KernelMemoryError) as info:
        launch()
    return str(info.value)


# -- a pointer keeps its origin ------------------------------------------------------------------


def test_a_store_that_lands_in_another_argument_is_refused_and_names_its_origin():
    src = np.arange(1024, dtype=np.float32)
    dst = np.full(1024, 7.0, np.float32)
    saved = src.copy(), dst.copy()
    line = _line(shifted_store, "tl.store")
    # 2048 elements below dst is where the arguments' host copies once put src
    assert _refused(lambda: shifted_store[(1,)](src, dst, 2048, BLOCK=1024)) == (
        f"shifted_store:{line} pid=(0,0,0): tl.store of dst_ptr writes elements [-2048, -1024) but "
        "dst_ptr has 1024 (1024 of 1024 active lanes out of bounds); "
        "the offsets (or the grid) are wrong: a mask would only hide it"
    )
    assert src.tobytes() == saved[0].tobytes() and dst.tobytes() == saved[1].tobytes()


def test_a_load_that_lands_in_another_argument_is_refused_and_names_its_origin():
    src = np.arange(1024, dtype=np.float32)
    dst = np.full(1024, 7.0, np.float32)
    line = _line(shifted_load, "tl.load")
    assert _refused(lambda: shifted_load[(1,)](src, dst, 2048, BLOCK=1024)) == (
        f"shifted_load:{line} pid=(0,0,0): tl.load of src_ptr reads elements [2048, 3072) but "
        "src_ptr has 1024 (1024 of 1024 active lanes out of bounds); "
        "the offsets (or the grid) are wrong: a mask would only hide it"
    )
    assert (dst == 7.0).all()


def test_a_far_access_names_the_argument_it_was_derived_from():
    x, y = np.zeros(4, np.float32), np.zeros(4, np.float32)
    line = _line(far_store, "tl.store")
    # far above x: every other argument lies below the address, y nearest
    assert _refused(lambda: far_store[(1,)](x, y, 1 << 40)) == (
        f"far_store:{line} pid=(0,0,0): tl.store of x_ptr writes element 1099511627776 but x_ptr has 4 "
        "(1 of 1 active lanes out of bounds); "
        "the offsets (or the grid) are wrong: a mask would only hide it"
    )
    assert not x.any() and not y.any()


def test_a_pointer_keeps_its_origin_through_a_select():
    x, y = np.zeros(64, np.float32), np.zeros(64, np.float32)
    line = _line(selected_store, "tl.store")
    assert _refused(lambda: selected_store[(1,)](x, y, BLOCK=128)) == (
        f"selected_store:{line} pid=(0,0,0): tl.store of y_ptr writes elements [65, 128) but y_ptr has 64 "
        "(32 of 128 active lanes out of bounds: lanes[65:128:2]); add a mask, e.g. mask=offsets < n"
    )
    assert not x.any() and not y.any()


def test_a_pointer_keeps_its_origin_through_a_loop():
    x, y = np.zeros(256, np.float32), np.zeros(64, np.float32)
    line = _line(walking_store, "tl.store")
    with kernel_nb.interpret(), pytest.raises(kernel_nb.KernelMemoryError) as info:
        walking_store[(1,)](x, y, 2, BLOCK=32)  # two steps of 32 take y's pointers past its end
    assert str(info.value) == (
        f"walking_store:{line} pid=(0,0,0): tl.store of y_ptr writes elements [64, 96) but y_ptr has 64 "
        "(32 of 32 active lanes out of bounds); "
        "the offsets (or the grid) are wrong: a mask would only hide it"
    )
    assert not x.any() and not y.any()


def test_a_pointer_keeps_its_origin_through_casts():
    x, y = np.zeros(16, np.float32), np.zeros(16, np.float32)
    line = _line(byte_cast_store, "tl.store")
    assert _refused(lambda: byte_cast_store[(1,)](x, y, -64)) == (
        f"byte_cast_store:{line} pid=(0,0,0): tl.store of y_ptr writes element -16 but y_ptr has 16 "
        "(1 of 1 active lanes out of bounds); "
        "the offsets (or the grid) are wrong: a mask would only hide it"
    )
    assert not x.any() and not y.any()


def test_in_bounds_accesses_through_casts_and_selects_still_run():
    x, y = np.zeros(64, np.float32), np.zeros(128, np.float32)
    with kernel_nb.interpret():
        selected_store[(1,)](x, y, BLOCK=128)
        byte_cast_store[(1,)](x, y, 8)
    assert x.tolist() == [3.0] * 64
    assert y[1::2].tolist() == [3.0] * 64 and y[2] == 1.0 and y[0] == 0.0


# -- addresses at the top of the address space ---------------------------------------------------


def test_an_address_within_an_item_of_two_to_the_64_is_out_of_bounds():
    x = np.ones(4, np.float32)
    line = _line(absolute_store, "tl.store")
    for address in (-2, -4):
        assert _refused(lambda address=address: absolute_store[(1,)](x, address)) == (
            f"absolute_store:{line} pid=(0,0,0): tl.store writes address {2**64 + address:#x}, which no array "
            "argument's pointer leads to (1 of 1 active lanes); a pointer must be derived from an array "
            "argument and stay inside it"
        )


def test_a_wrapping_address_does_not_kill_the_process(tmp_path, strategy):
    script = tmp_path / "wrap.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import numpy as np, triton, triton.language as tl, kernel_nb

            @triton.jit
            def top(x_ptr, address):
                tl.store(address.to(tl.int64).to(tl.pointer_type(tl.float32)), 1.0)

            x = np.zeros(4, np.float32)
            try:
                with kernel_nb.interpret(strategy={strategy!r}):
                    top[(1,)](x, -2)
            except kernel_nb.KernelMemoryError as e:
                print("refused")
            print("alive", x.sum())
            """
        )
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["refused", "alive 0.0"]


# -- alignment -----------------------------------------------------------------------------------


def test_a_misaligned_access_is_refused_before_it_is_made():
    x, out = np.arange(4, dtype=np.float32), np.full(1, 5.0, np.float32)
    line = _line(misaligned_load, "tl.load")
    assert _refused(lambda: misaligned_load[(1,)](x, out, 6)) == (
        f"misaligned_load:{line} pid=(0,0,0): tl.load of x_ptr reads at a misaligned address, element "
        "offset 1.5 (byte 6) of x_ptr: a fp32 access needs 4-byte alignment, as on the GPU (1 of 1 active "
        "lanes); a pointer moved in bytes (through a cast) must land on whole elements"
    )
    assert out.tolist() == [5.0]


def test_an_aligned_access_through_a_byte_pointer_runs():
    x, out = np.arange(4, dtype=np.float32), np.zeros(1, np.float32)
    with kernel_nb.interpret():
        misaligned_load[(1,)](x, out, 8)
    assert out.tolist() == [2.0]


# -- read-only arguments -------------------------------------------------------------------------


def _read_only_store_message(kernel, name, elements):
    atomic = kernel is add_one_kernel
    line = _line(kernel, "tl.atomic_add" if atomic else "tl.store")
    op, verb = ("tl.atomic_fadd", "accesses") if atomic else ("tl.store", "writes")
    return (
        f"{kernel.fn.__name__}:{line} pid=(0,0,0): {op} of {name} {verb} elements {elements} but {name} is "
        "read-only (its array may not be written); pass a writable array, e.g. a copy"
    )


def test_a_store_into_a_read_only_array_is_refused():
    src = np.ones(16, np.float32)
    dst = np.zeros(16, np.float32)
    dst.flags.writeable = False
    assert _refused(lambda: copy_kernel[(1,)](src, dst, BLOCK=16)) == _read_only_store_message(
        copy_kernel, "dst_ptr", "[0, 16)"
    )
    assert not dst.any()


def test_a_store_into_the_bytes_behind_frombuffer_is_refused():
    raw = bytes(64)
    dst = np.frombuffer(raw, np.float32)
    assert _refused(lambda: copy_kernel[(1,)](np.ones(16, np.float32), dst, BLOCK=16)) == (
        _read_only_store_message(copy_kernel, "dst_ptr", "[0, 16)")
    )
    assert raw == bytes(64)


def test_an_atomic_on_a_read_only_array_is_refused():
    x = np.zeros(8, np.float32)
    x.flags.writeable = False
    assert _refused(lambda: add_one_kernel[(1,)](x, BLOCK=8)) == _read_only_store_message(
        add_one_kernel, "x_ptr", "[0, 8)"
    )
    assert not x.any()


def test_loads_from_read_only_arrays_still_run():
    raw = np.arange(16, dtype=np.float32).tobytes()
    src = np.frombuffer(raw, np.float32)
    dst = np.zeros(16, np.float32)
    with kernel_nb.interpret():
        copy_kernel[(1,)](src, dst, BLOCK=16)
    assert dst.tolist() == list(range(16))


def test_a_poisoned_read_only_argument_is_never_written_back():
    src = np.arange(16, dtype=np.float32)
    src.flags.writeable = False
    dst = np.zeros(16, np.float32)
    with kernel_nb.interpret(poison=("src_ptr",), detect=()):
        copy_kernel[(1,)](src, dst, BLOCK=16)
    assert src.tolist() == list(range(16))


def test_a_store_through_a_writable_alias_of_a_read_only_view_runs():
    x = np.zeros(16, np.float32)
    view = x[:]
    view.flags.writeable = False
    with kernel_nb.interpret():
        copy_kernel[(1,)](view, x, BLOCK=16)  # reads the read-only view, writes the array itself
        copy_kernel[(1,)](np.ones(16, np.float32), x, BLOCK=16)
    assert x.tolist() == [1.0] * 16


@triton.jit
def fill_two_kernel(ro_ptr, rw_ptr, ro_count, rw_count, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(rw_ptr + offs, 2.0, mask=offs < rw_count)
    tl.store(ro_ptr + offs, 1.0, mask=offs < ro_count)


def test_only_the_writable_part_of_a_partly_read_only_memory_is_written():
    x = np.arange(32, dtype=np.float32)
    ro, rw = x[:16], x[8:]  # one memory: bytes of elements 0..7 are only in the read-only view
    ro.flags.writeable = False
    line = _line(fill_two_kernel, "tl.store(ro_ptr")
    assert _refused(lambda: fill_two_kernel[(1,)](ro, rw, 16, 24, BLOCK=32)) == (
        f"fill_two_kernel:{line} pid=(0,0,0): tl.store of ro_ptr writes elements [0, 8) but ro_ptr is "
        "read-only (its array may not be written); pass a writable array, e.g. a copy"
    )
    assert x.tolist() == list(range(32))
    with kernel_nb.interpret(poison=("ro_ptr",), detect=()):  # poison fills the read-only view's copy
        fill_two_kernel[(1,)](ro, rw, 0, 24, BLOCK=32)
    assert x.tolist() == list(range(8)) + [2.0] * 24


_MEMMAP_SCRIPT = """
import numpy as np, triton, triton.language as tl, kernel_nb

@triton.jit
def copy_kernel(src_ptr, dst_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs))

np.zeros(16, np.float32).tofile({path!r})
dst = np.memmap({path!r}, np.float32, mode="r")
{wrap}
try:
    with kernel_nb.interpret(strategy={strategy!r}):
        copy_kernel[(1,)](np.ones(16, np.float32), dst, BLOCK=16)
except kernel_nb.KernelMemoryError as e:
    print(str(e).split(": ", 1)[1])
print("alive", float(np.asarray(np.memmap({path!r}, np.float32, mode="r")).sum()))
"""


@pytest.mark.parametrize("library", ["numpy", "torch"])
def test_a_read_only_memmap_as_an_output_is_refused_and_the_process_lives(tmp_path, strategy, library):
    if library == "torch":
        pytest.importorskip("torch")
        wrap = "import torch, warnings\nwarnings.simplefilter('ignore')\ndst = torch.from_numpy(dst)"
    else:
        wrap = ""
    script = tmp_path / "memmap.py"
    script.write_text(_MEMMAP_SCRIPT.format(path=str(tmp_path / "data.bin"), wrap=wrap, strategy=strategy))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == [
        "tl.store of dst_ptr writes elements [0, 16) but dst_ptr is read-only (its array may not be "
        "written); pass a writable array, e.g. a copy",
        "alive 0.0",
    ]


# -- tensor descriptors --------------------------------------------------------------------------


@triton.jit
def descriptor_rows_kernel(src_ptr, dst_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    src = tl.make_tensor_descriptor(src_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    dst = tl.make_tensor_descriptor(dst_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    row = tl.program_id(0) * BLOCK_M
    for col in range(0, N, BLOCK_N):
        dst.store([row, col], src.load([row, col]) + 1.0)


def test_tensor_descriptor_loads_and_stores_run_as_stock_runs_them():
    x = np.arange(12 * 40, dtype=np.float32).reshape(12, 40)
    out = np.zeros_like(x)
    with kernel_nb.interpret() as session:
        descriptor_rows_kernel[(3,)](x, out, 12, 40, BLOCK_M=4, BLOCK_N=16)
    np.testing.assert_array_equal(out, x + 1.0)
    launch = session.trace[0]
    assert launch.status == "ok"
    assert [(e.kind, e.arg) for e in launch.program(0).events] == [
        ("load", "src_ptr"),
        ("store", "dst_ptr"),
    ] * 3


@triton.jit
def descriptor_args_kernel(src, dst, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0) * 4
    for col in range(0, N, BLOCK_N):
        dst.store([row, col], src.load([row, col]) * 2.0)


def test_tensor_descriptor_arguments_load_and_store_past_ragged_edges():
    torch = pytest.importorskip("torch")
    from triton.tools.tensor_descriptor import TensorDescriptor

    x = torch.arange(10 * 36, dtype=torch.float32).reshape(10, 36)
    out = torch.zeros_like(x)
    with kernel_nb.interpret() as session:
        descriptor_args_kernel[(3,)](
            TensorDescriptor.from_tensor(x, [4, 16]),
            TensorDescriptor.from_tensor(out, [4, 16]),
            36,
            BLOCK_N=16,
        )
    assert torch.equal(out, x * 2.0)  # the blocks past row 10 and column 36 are padded, then cut
    assert session.trace[0].buffers["dst.base"].writes.sum() == 10 * 36


def test_offsets_that_overflow_by_two_to_the_63_bytes_name_the_origin():
    x, y = np.zeros(4, np.float32), np.zeros(4, np.float32)
    line = _line(far_store, "tl.store")
    message = _refused(lambda: far_store[(1,)](x, y, 2**61))  # 2**61 float32 elements: 2**63 bytes
    assert message.startswith(f"far_store:{line} pid=(0,0,0): tl.store of x_ptr writes address 0x")
    assert message.endswith(
        ", 2**63 bytes away from x_ptr and outside every array argument (1 of 1 active lanes); the "
        "offsets overflowed: check their arithmetic (int64 products of large indices)"
    )
    assert not x.any() and not y.any()
