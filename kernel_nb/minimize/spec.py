"""A launch as values to change and run again: its kernel, its grid and its arguments by name.

A grid is usually computed from the sizes and block sizes it is launched with (`cdiv(n, BLOCK)`),
but a launch records only the numbers. `LaunchSpec.of` finds, per grid axis, the arguments that
give it (a product of ceiling divisions of a size argument, or an array's dimension, by a
constexpr), so that a launch with smaller sizes or blocks gets the grid its caller would have
computed. An axis no such product gives stays as it is, and is shrunk on its own.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_nb import gpu
from kernel_nb.errors import KernelError, LaunchArgumentError
from kernel_nb.options import Options
from kernel_nb.session import interpret
from kernel_nb.trace import Launch

# where an int comes from: ("scalar", name, 0), ("constexpr", name, 0) or ("dim", array name, axis)
Ref = tuple[str, str, int]
# one factor of a grid axis: cdiv(size, block); block None: the size itself
Term = tuple[Ref, Ref | None]
# most alternative products kept per axis, and most factors in one
_FORMULAS = 4
_FACTORS = 2


class CannotRelaunch(ValueError):
    """The launch cannot be run again with other arguments (say why)."""


@dataclass(frozen=True)
class LaunchSpec:
    """A launch to run: `jit[grid](**values)`.

    Attributes:
        jit: the kernel (a JITFunction).
        grid: (x, y, z).
        kinds: per argument, in signature order, its kind ("buffer", "scalar", "constexpr", "none").
        values: per argument, its value: a numpy array for a buffer.
        formulas: per grid axis, the products of terms that give it (empty: none known).
        grid_function: the launch's grid function, where it was launched with one: it gives
            the axes no formula gives.
    """

    jit: Any
    grid: tuple[int, int, int]
    kinds: dict[str, str]
    values: dict[str, Any]
    formulas: tuple[tuple[tuple[Term, ...], ...], ...]
    grid_function: Callable[[dict[str, Any]], Any] | None = None

    @classmethod
    def of(cls, launch: Launch) -> LaunchSpec:
        """The launch's kernel, grid and arguments (buffers as they were before it ran).

        Raises:
            CannotRelaunch: the launch holds no kernel (a loaded trace), or an argument kind
                that cannot be rebuilt (tuples, tensor descriptors).
        """
        if launch.jit is None:
            raise CannotRelaunch(
                f"launch {launch.index} ({launch.kernel}) holds no kernel to run again: a trace "
                "loaded from disk has only data; minimize a launch of this session"
            )
        kinds: dict[str, str] = {}
        values: dict[str, Any] = {}
        for arg in launch.args:
            if arg.kind == "buffer":
                values[arg.name] = _rebuilt(launch.snapshot[arg.name], arg.shape, arg.strides)
            elif arg.kind in ("scalar", "constexpr", "none"):
                values[arg.name] = arg.value
            else:
                raise CannotRelaunch(
                    f"{launch.kernel}: argument {arg.name} is a {arg.kind} argument, which minimize "
                    "cannot rebuild (it takes arrays, scalars and constexprs)"
                )
            kinds[arg.name] = arg.kind
        grid = (launch.grid[0], launch.grid[1], launch.grid[2])
        function = launch.grid_spec if callable(launch.grid_spec) else None
        spec = cls(launch.jit, grid, kinds, values, (), function)
        return dataclasses.replace(spec, formulas=tuple(spec._formulas(axis) for axis in grid))

    # -- sizes ------------------------------------------------------------------------------------

    @property
    def programs(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def elements(self) -> int:
        return sum(int(v.size) for v in self.arrays().values())

    def arrays(self) -> dict[str, np.ndarray]:
        return {n: v for n, v in self.values.items() if self.kinds[n] == "buffer"}

    def ints(self, kind: str) -> dict[str, int]:
        """The arguments of `kind` ("scalar" or "constexpr") that are ints (not bools)."""
        return {
            n: int(v)
            for n, v in self.values.items()
            if self.kinds[n] == kind
            and isinstance(v, (int, np.integer))
            and not isinstance(v, (bool, np.bool_))
        }

    def complexity(self) -> tuple[int, int, int, int]:
        """What a smaller launch has less of: programs, elements, block sizes (constexprs that are
        powers of two, summed), then array elements that are not 0 or not whole numbers (each
        counted once per property)."""
        blocks = sum(v for v in self.ints("constexpr").values() if v > 1 and not v & (v - 1))
        busy = 0
        for array in self.arrays().values():
            if array.dtype.kind in "fc":
                with np.errstate(invalid="ignore"):
                    busy += int(np.count_nonzero(array)) + int(np.count_nonzero(array != np.round(array)))
            elif array.dtype.kind in "iub":
                busy += int(np.count_nonzero(array))
        return self.programs, self.elements, blocks, busy

    def key(self) -> tuple[Any, ...]:
        """Equal for specs that launch the same thing."""
        parts: list[Any] = [self.grid]
        for name, value in self.values.items():
            if isinstance(value, np.ndarray):
                digest = hashlib.blake2b(np.ascontiguousarray(value).tobytes(), digest_size=12)
                parts.append((name, value.shape, value.strides, str(value.dtype), digest.hexdigest()))
            else:
                parts.append((name, repr(value)))
        return tuple(parts)

    def value_of(self, ref: Ref) -> int:
        kind, name, axis = ref
        if kind == "dim":
            return int(self.values[name].shape[axis])
        return int(self.values[name])

    # -- changes ----------------------------------------------------------------------------------

    def with_values(self, values: dict[str, Any]) -> LaunchSpec:
        """The launch with some arguments replaced, its grid computed again where it is known
        how (see the module's docstring)."""
        spec = dataclasses.replace(self, values={**self.values, **values})
        grid = tuple(
            _evaluate(spec, formulas[0]) if formulas else axis
            for axis, formulas in zip(self.grid, self.formulas)
        )
        return dataclasses.replace(spec, grid=(grid[0], grid[1], grid[2]))

    def with_grid(self, axis: int, size: int) -> LaunchSpec:
        grid = list(self.grid)
        grid[axis] = size
        return dataclasses.replace(self, grid=(grid[0], grid[1], grid[2]))

    # -- running ----------------------------------------------------------------------------------

    def run(self, options: Options, compare: dict[str, Any] | None = None) -> Launch | None:
        """Interpret the launch; its trace, failed or not (None: it could not start, or failed
        before a program ran: a bad argument, a kernel that does not compile for these values).
        With `compare` (fields of `kernel_nb.gpu.GpuOptions`), also on the GPU, compared.

        Raises:
            kernel_nb.gpu.GpuUnavailableError: `compare` on a machine without a usable GPU.
        """
        session = interpret(options) if compare is None else gpu.compare(options, **compare)
        with session:
            try:
                self.jit[self.grid](**{n: _argument(v) for n, v in self.values.items()})
            except (KernelError, LaunchArgumentError):
                pass
            except (KeyboardInterrupt, MemoryError, gpu.GpuUnavailableError, gpu.CudaContextLost):
                raise
            except Exception:  # a candidate the kernel does not take: not the failure kept
                return None
        return session.trace.launches[-1] if session.trace.launches else None

    # -- grid formulas ----------------------------------------------------------------------------

    def _formulas(self, axis: int) -> tuple[tuple[Term, ...], ...]:
        """The products of ceiling divisions of a size by a block that give `axis` (see the
        module's docstring): block sizes first, scalars before dimensions."""
        if axis <= 1:
            return ()
        blocks: list[Ref | None] = [("constexpr", n, 0) for n, v in self.ints("constexpr").items() if v > 1]
        sizes: list[Ref] = [("scalar", n, 0) for n, v in self.ints("scalar").items() if v > 1]
        sizes += [
            ("dim", n, a) for n, array in self.arrays().items() for a, d in enumerate(array.shape) if d > 1
        ]
        terms: list[Term] = [(s, b) for b in [*blocks, None] for s in sizes]
        found: list[tuple[Term, ...]] = []
        for count in range(1, _FACTORS + 1):
            for product in itertools.combinations(terms, count):
                if _evaluate(self, product) == axis:
                    found.append(product)
                    if len(found) == _FORMULAS:
                        return tuple(found)
            if found:
                break
        return tuple(found)


def _called(
    function: Callable[[dict[str, Any]], Any] | None, values: dict[str, Any]
) -> tuple[int, ...] | None:
    """The grid `function` gives for these arguments, as three axes (None: no function, or one
    that fails or gives no grid for them)."""
    if function is None:
        return None
    try:
        grid = function(dict(values))
    except Exception:  # the user's function: a grid it cannot give is no grid
        return None
    grid = (grid,) if isinstance(grid, (int, np.integer)) else grid
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
        return None
    try:
        axes = [int(axis) for axis in grid]
    except (TypeError, ValueError):
        return None
    return (*axes, 1, 1, 1)[:3]


def _evaluate(spec: LaunchSpec, product: tuple[Term, ...]) -> int:
    total = 1
    for size, block in product:
        divisor = 1 if block is None else spec.value_of(block)
        total *= -(-spec.value_of(size) // max(divisor, 1))
    return total


def _rebuilt(span: np.ndarray, shape: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    """A buffer argument as the kernel saw it: `shape` and element `strides` over a copy of its span."""
    base = np.array(span)
    if not shape:
        return base
    itemsize = base.dtype.itemsize
    view = np.lib.stride_tricks.as_strided(base, shape, tuple(s * itemsize for s in strides), writeable=True)
    return view if base.size else base.reshape(shape)


def _argument(value: Any) -> Any:
    """An argument as the launch takes it: an array as a copy, so that no launch writes another's."""
    if isinstance(value, np.ndarray):
        if value.base is not None and not value.flags.c_contiguous:
            # the copy keeps the layout: strides the kernel is given stay true
            base = np.array(base_of(value))
            offset = value.__array_interface__["data"][0] - base_of(value).__array_interface__["data"][0]
            return np.ndarray(value.shape, value.dtype, base.data, offset, value.strides)
        return np.array(value)
    return value


def base_of(array: np.ndarray) -> np.ndarray:
    """The array `array` is a view of (itself if none)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def iter_symbols(spec: LaunchSpec) -> Iterator[int]:
    """The sizes of the launch, largest first: every int scalar's value and every dimension of a
    C-contiguous array above 1 (one size the arguments share is one symbol)."""
    found = {v for v in spec.ints("scalar").values() if v > 1}
    for array in spec.arrays().values():
        if array.flags.c_contiguous:
            found.update(d for d in array.shape if d > 1)
    yield from sorted(found, reverse=True)
