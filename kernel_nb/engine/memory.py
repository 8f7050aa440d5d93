"""Caller memory and its private host copies, each in a window of the kernel's address space.

A region of overlapping array arguments (an in-place kernel given the same array twice, views of
one base) is one `Memory`: one host copy, read from the caller's memory (host, torch CUDA or CuPy)
and written back to it, byte-swapped where the caller's elements are big-endian.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from kernel_nb.engine import allocator, arrays, shared_inputs
from kernel_nb.engine.arrays import ArgumentError

# Every Memory gets a window of the kernel's address space of its own: the kernel's pointers are
# addresses in these windows, never host addresses, so that a pointer carries the memory it was
# derived from through all arithmetic, selects, casts and loops (see addresses.AddressMap). The
# windows lie above every user-space address (57 bits, five-level paging) and below 2**63, so that
# they stay positive as int64; a memory's data sits in the middle of its window, keeping its
# caller's address modulo 4096 (the alignment a GPU access sees), and a pointer has to move by
# 2**43 bytes to leave it.
WINDOW_BITS = 44
WINDOWS_START = 1 << 57
WINDOW_COUNT = ((1 << 63) - WINDOWS_START) >> WINDOW_BITS
_PAGE = 4096
# Bytes written back at a time (see _host_access).
_PIECE = 1 << 20
# Bytes exchanged at a time (see _exchange): a piece of each side and the held copy stay in a
# core's L2 (commonly 512 KiB to 2 MiB) between the three copies. Exchanging 16 MiB took 1.3-1.6
# ms in 256 KiB pieces against 1.7-1.9 in 1 MiB ones, and vector add 2**22's warm launch, which
# writes its output back so, 14.4-15.5 ms against 16.3-16.4 (three processes each, interleaved).
_EXCHANGE_PIECE = 256 << 10
# every block private copies live in, by id, while it lives (see `holds_copy`)
_BLOCKS: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()


def window_base(window: int, caller_lo: int) -> int:
    """The kernel's address of byte 0 of a memory in window `window` (see WINDOW_BITS)."""
    return WINDOWS_START + (window << WINDOW_BITS) + (1 << (WINDOW_BITS - 1)) + caller_lo % _PAGE


@dataclass(eq=False)
class Memory:
    """One region of caller memory and its private host copy.

    `read` gives the caller's memory (a view of host memory, or a fresh host copy of device
    memory) to fill the copy from; `write` puts a buffer back. The kernel's pointers into the copy
    are addresses in the memory's window (`base` on); `host` is where the copy really is.

    A host memory's copy is filled on first use (`lazy`): until the launch writes to it, its loads
    read the caller's memory (`current`, or its address: see AddressMap.host), which holds the same
    bytes, so that an argument the launch only reads is copied only when the launch ends, to keep
    its inputs (BoundArguments.commit).

    A batched load fills it read-only instead (`freeze`): the loaded tiles are then views of
    bytes that never change, which the recorder keeps as they are instead of copying them, and
    which are the launch's inputs. The first write fills a writable copy from it (`copy`); the
    read-only one stays as `inputs`.
    """

    space: str  # "host", "cuda:0" ...
    lo: int  # caller address range [lo, hi)
    hi: int
    read: Callable[[], np.ndarray]
    write: Callable[[np.ndarray], None]
    arena: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint8))  # the copy's bytes
    window: int = 0
    # byte ranges [lo, hi) of the copy that caller memory lets be written (its writeable arguments)
    writable: list[tuple[int, int]] = field(default_factory=list)
    lazy: bool = False  # the copy is not filled yet (see the class docstring)
    frozen: bool = False  # the copy is filled read-only and not written yet (see `freeze`)
    # the bytes before the launch, where a frozen copy was then written (see the class docstring)
    inputs: np.ndarray | None = None
    # one host argument's bytes as they are (what `lazy` memories are): written back by exchange
    direct: bool = False
    # byte ranges [lo, hi) of the copy not filled yet: a copy made by `overwritten` is filled
    # only where no write replaced every byte, and only when something else uses it
    unfilled: list[tuple[int, int]] = field(default_factory=list)

    @property
    def copy(self) -> np.ndarray:
        """The private copy, to write: filled from the caller's memory first if it was not yet."""
        self._fill_rest()
        if self.lazy:
            self.fill()
        if self.frozen:
            self.inputs, self.arena = self.arena, _aligned(self.size)
            self.arena[...] = self.inputs
            self.frozen = False
        return self.arena

    def fill(self) -> None:
        if self.lazy:
            # allocated now, not with the others: made late in a launch, it takes memory that the
            # launch's values gave back rather than pages never touched
            self.arena = _aligned(self.size)
            self.arena[...] = self.read()
            self.lazy = False

    def overwritten(self, lo: int, hi: int) -> np.ndarray:
        """The private copy, to write every byte of [lo, hi): a copy not filled yet is made, or
        kept, without filling those bytes, which the write replaces. An output that the launch
        writes whole, as most are, is then never copied from the caller's memory."""
        if self.lazy:
            self.arena = _aligned(self.size)
            self.unfilled = [(0, self.size)]  # first: a copy never counts as filled unless it is
            self.lazy = False
        if not self.unfilled:
            return self.copy
        self.unfilled = [
            piece
            for a, b in self.unfilled
            for piece in ((a, min(b, lo)), (max(a, hi), b))
            if piece[0] < piece[1]
        ]
        return self.arena

    def _fill_rest(self) -> None:
        """Fill what `overwritten` left unfilled, from the caller's memory (which the launch leaves
        as it is until it ends): before anything reads or writes the copy another way."""
        if self.unfilled:
            source = self.read()
            for lo, hi in self.unfilled:
                self.arena[lo:hi] = source[lo:hi]
            self.unfilled = []

    def freeze(self) -> None:
        """Fill a lazy copy read-only: what is read from it stays as it was read. A live copy of
        the same host memory, made by another launch and still equal to it, serves instead (see
        shared_inputs.py)."""
        if self.lazy:
            shared = shared_inputs.find(self.lo, self.hi, self.read()) if self.space == "host" else None
            if shared is None:
                self.fill()
                self.arena.flags.writeable = False
                if self.space == "host":
                    shared_inputs.remember(self.lo, self.hi, self.arena)
            else:
                self.arena, self.lazy = shared, False
            self.frozen = True

    def unwrite(self) -> None:
        """Back to the read-only inputs where the copy was frozen before a write (replays wrote it)."""
        if self.inputs is not None:
            self.arena, self.inputs, self.frozen = self.inputs, None, True

    def current(self) -> np.ndarray:
        """The memory's bytes as the launch has them now, to read: the copy, or while it is not
        filled the caller's memory (which the launch has not written)."""
        self._fill_rest()
        return self.read() if self.lazy else self.arena

    @property
    def read_only_inputs(self) -> np.ndarray | None:
        """The launch's inputs, read-only, where this memory holds them: the frozen copy, or the
        one a write left behind (None: neither)."""
        if self.inputs is not None:
            return self.inputs
        return self.arena if self.frozen else None

    def holds_inputs(self, array: np.ndarray) -> bool:
        """Whether `array` is a view of bytes of this memory that stay the launch's inputs."""
        inputs = self.read_only_inputs
        return inputs is not None and base_array(array) is base_array(inputs)

    def address(self, write: bool) -> int:
        """Host address of the copy's first byte: to write, of the writable copy (filled first);
        to read, of what `current` gives (the caller's memory while not filled)."""
        self._fill_rest()
        if write:
            return int(self.copy.ctypes.data)
        return self.lo if self.lazy else int(self.arena.ctypes.data)

    @property
    def base(self) -> int:
        """The kernel's address of the copy's first byte (in the memory's window)."""
        return window_base(self.window, self.lo)

    @property
    def size(self) -> int:
        return self.hi - self.lo

    @property
    def host(self) -> int:
        """Host address of the writable copy (filled first: a lazy copy is allocated when filled)."""
        return self.address(write=True)

    @property
    def read_only(self) -> bool:
        """No byte of it may be written."""
        return not self.writable

    @property
    def all_writable(self) -> bool:
        return self.writable == [(0, self.size)]

    def exchange(self) -> bool:
        """Write the copy back by exchanging its bytes with the caller's, where the memory is
        `direct` and all writable: the copy then holds the inputs, read-only (frozen), and serves
        as their snapshot, where a copy of the caller's memory would otherwise be made first.
        Returns whether it did (else nothing changed)."""
        if not (self.direct and self.all_writable) or self.lazy or self.frozen or self.inputs is not None:
            return False  # (a copy frozen before it was written holds the inputs already)
        self._fill_rest()
        _exchange(arrays.host_bytes(self.lo, self.hi), self.arena)
        self.arena.flags.writeable = False
        self.frozen = True
        return True

    def write_back(self) -> None:
        """Put the copy back into caller memory, never into bytes that may not be written."""
        if self.read_only or self.lazy or self.frozen:  # never written
            return
        data = self.copy
        if not self.all_writable:
            # keep what the caller holds outside the writable ranges (the write leaves equal bytes)
            data = np.array(self.read())
            for lo, hi in self.writable:
                data[lo:hi] = self.copy[lo:hi]
        self.write(data)


def copy_regions(leaves: list[arrays.ArrayLeaf]) -> tuple[list[Memory], dict[str, Memory]]:
    """Give each region of overlapping leaves one Memory and copy it to the host.

    The copies are laid out in one arena, in argument order, each 64-byte aligned; the i-th
    memory gets window i, so the kernel's addresses, hence every address-derived record, are the
    same from run to run.

    Raises:
        ArgumentError: more array arguments than there are windows.
    """
    rank = {id(leaf): i for i, leaf in enumerate(leaves)}
    groups = sorted(arrays.regions(leaves), key=lambda r: min(rank[id(leaf)] for leaf in r.leaves))
    if len(groups) > WINDOW_COUNT:
        raise ArgumentError(f"a launch takes at most {WINDOW_COUNT} separate arrays, not {len(groups)}")
    # a copy filled on first use (see Memory) is allocated then
    lazy = [_lazy(r) for r in groups]
    slots = [0 if later else _align(r.hi - r.lo) for r, later in zip(groups, lazy)]
    arena = _block(sum(slots) + 64)  # each copy is written whole
    offset = (-arena.ctypes.data) % 64
    memories = []
    memory_of: dict[str, Memory] = {}
    for window, (region, slot, later) in enumerate(zip(groups, slots, lazy)):
        memory = _memory(region, None if later else arena[offset : offset + (region.hi - region.lo)])
        memory.window = window
        memory.writable = _merged(
            (leaf.lo - region.lo, leaf.hi - region.lo) for leaf in region.leaves if leaf.writeable
        )
        memories.append(memory)
        memory_of.update((leaf.name, memory) for leaf in region.leaves)
        offset += slot
    return memories, memory_of


def _merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        elif hi > lo:
            out.append((lo, hi))
    return out


def _align(n: int) -> int:
    return (n + 63) // 64 * 64


def _aligned(size: int) -> np.ndarray:
    """`size` bytes starting at a multiple of 64."""
    block = _block(size + 64)
    offset = (-block.ctypes.data) % 64
    return block[offset : offset + size]


def _block(size: int) -> np.ndarray:
    block = allocator.small_pages(size)
    _BLOCKS[id(block)] = block
    return block


def holds_copy(array: np.ndarray) -> bool:
    """Whether `array` shows bytes of a private copy of caller memory (which stores change, and
    whose read-only inputs stay the launch's): not a value an operation made."""
    whole = base_array(array)
    return _BLOCKS.get(id(whole)) is whole


def _exchange(a: np.ndarray, b: np.ndarray) -> None:
    """Exchange the bytes of two arrays of one size, in pieces: no temporary their size to fault in."""
    held = np.empty(min(_EXCHANGE_PIECE, a.size), np.uint8)
    for start in range(0, a.size, _EXCHANGE_PIECE):
        x, y = a[start : start + _EXCHANGE_PIECE], b[start : start + _EXCHANGE_PIECE]
        h = held[: x.size]
        h[...] = x
        x[...] = y
        y[...] = h


def base_array(array: np.ndarray) -> np.ndarray:
    """The array `array` is a view of (itself if none)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _lazy(region: arrays.Region) -> bool:
    """Whether a region's copy is filled on first use: a host memory of one argument in native
    byte order, read where it is until then."""
    return region.space == "host" and len(region.leaves) == 1 and not region.leaves[0].byteswapped


def _memory(region: arrays.Region, copy: np.ndarray | None) -> Memory:
    """The region's Memory, its copy filled into `copy` (None: filled on first use)."""
    members = region.leaves
    if len(members) == 1:
        read, write = _access(members[0])
    elif region.space == "host":
        read, write = _swapped(_host_access(region.lo, region.hi), arrays.swap_itemsize(region))
    else:
        lo, hi = region.lo, region.hi
        accesses = [(m.lo, m.hi, *_access(m)) for m in members]

        # several device views of one allocation: read each member into its place, write each back
        def read() -> np.ndarray:
            out = np.zeros(hi - lo, np.uint8)
            for m_lo, m_hi, m_read, _ in accesses:
                out[m_lo - lo : m_hi - lo] = m_read()
            return out

        def write(data: np.ndarray) -> None:
            for m_lo, m_hi, _, m_write in accesses:
                m_write(data[m_lo - lo : m_hi - lo])

    if copy is None:
        return Memory(region.space, region.lo, region.hi, read, write, lazy=True, direct=True)
    copy[...] = read()
    return Memory(region.space, region.lo, region.hi, read, write, copy)


Access = tuple[Callable[[], np.ndarray], Callable[[np.ndarray], None]]


def _access(leaf: arrays.ArrayLeaf) -> Access:
    """How to read a leaf's span of caller memory and write it back."""
    if leaf.space == "host":
        return _swapped(_host_access(leaf.lo, leaf.hi), leaf.dtype.itemsize if leaf.byteswapped else 0)
    if leaf.library == "torch":
        return _torch_device_access(leaf)
    region = arrays.Region(leaf.space, leaf.lo, leaf.hi, [leaf])
    return region.read, region.write


def _host_access(lo: int, hi: int) -> Access:
    def read() -> np.ndarray:
        return arrays.host_bytes(lo, hi)  # the caller copies it into the arena

    def write(data: np.ndarray) -> None:
        # only what differs: a read-only input sharing the region stays untouched. Compared in
        # 8-byte words where the region allows (a word that differs lies in writable memory, a
        # page being all one or the other), and copied plainly where every word differs. In
        # pieces, with one mask reused: no temporary the size of the region to fault in
        target = arrays.host_bytes(lo, hi)
        data = np.ascontiguousarray(data).reshape(-1)
        if lo % 8 == 0 and target.size % 8 == 0:
            target, data = target.view(np.uint64), data.view(np.uint64)
        piece = _PIECE // target.itemsize
        changed = np.empty(min(piece, target.size), bool)
        for start in range(0, target.size, piece):
            t, d = target[start : start + piece], data[start : start + piece]
            mask = np.not_equal(t, d, out=changed[: t.size])
            if mask.all():
                t[...] = d
            elif mask.any():
                np.copyto(t, d, where=mask)

    return read, write


def _swapped(access: Access, itemsize: int) -> Access:
    """An access whose copy holds the caller's elements in native byte order: the caller's bytes
    swapped in `itemsize` steps on the way in and back on the way out (0: as they are). Every
    element of a span starts a multiple of its size from the span's start, so one swap of the
    whole span serves strided arrays too (the bytes between elements are swapped there and back)."""
    if not itemsize:
        return access
    read, write = access
    unit = np.dtype(f"u{itemsize}")

    def read_native() -> np.ndarray:
        return np.ascontiguousarray(read()).view(unit).byteswap().view(np.uint8)

    def write_native(data: np.ndarray) -> None:
        write(np.ascontiguousarray(data).view(unit).byteswap().view(np.uint8))

    return read_native, write_native


def _torch_device_access(leaf: arrays.ArrayLeaf) -> Access:
    """A torch CUDA tensor's span, through torch (CuPy may not be there)."""
    import torch

    storage = leaf.array.untyped_storage()
    base = int(storage.data_ptr())
    nbytes = int(storage.nbytes())
    whole = torch.empty(0, dtype=torch.uint8, device=leaf.array.device).set_(storage, 0, (nbytes,), (1,))
    lo, hi = leaf.lo - base, leaf.hi - base

    def read() -> np.ndarray:
        return whole[lo:hi].cpu().numpy().copy()

    def write(data: np.ndarray) -> None:
        whole[lo:hi].copy_(torch.from_numpy(np.ascontiguousarray(data)))

    return read, write
