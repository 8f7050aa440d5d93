"""A CuPy stand-in on host memory, for the GPU side's logic below the device: staging, copy-back,
waiting, and a CUDA context that a launch can lose to a sticky error as a real one does."""

from __future__ import annotations

from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np

ILLEGAL_ADDRESS = (700, "cudaErrorIllegalAddress: an illegal memory access was encountered")
INVALID_VALUE = (1, "cudaErrorInvalidValue: invalid argument")


class CUDARuntimeError(RuntimeError):
    """CuPy's error: CUDA's status and its words."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status


class FakeCupy(ModuleType):
    """`cupy` as kernel_nb.gpu calls it. `lose(error)` leaves a sticky error: every later call raises it."""

    def __init__(self) -> None:
        super().__init__("cupy")
        self.sticky: tuple[int, str] | None = None
        self.buffers: list[FakeBuffer] = []
        cupy = self

        class Device:
            def __init__(self, index: int) -> None:
                self.index = index

            def __enter__(self) -> Device:
                cupy.call()
                return self

            def __exit__(self, *exc: Any) -> None:
                return None

        class Event:
            def __init__(self, **flags: Any) -> None:
                cupy.call()
                self.ptr = id(self)

            def record(self) -> None:
                cupy.call()

            @property
            def done(self) -> bool:  # as CuPy's: False for ever once the context is lost
                return cupy.sticky is None

        def event_query(ptr: int) -> int:
            return 0 if cupy.sticky is None else cupy.sticky[0]

        def synchronize() -> None:
            cupy.call()

        def properties(index: int) -> dict[str, Any]:
            return {"name": b"Fake H200", "major": 9, "minor": 0}

        runtime = SimpleNamespace(
            CUDARuntimeError=CUDARuntimeError,
            deviceSynchronize=synchronize,
            eventQuery=event_query,
            getDeviceProperties=properties,
            getDeviceCount=lambda: 1,
        )
        self.cuda = SimpleNamespace(Device=Device, Event=Event, runtime=runtime)
        self.uint8 = np.uint8

    def call(self) -> None:
        if self.sticky is not None:
            raise CUDARuntimeError(*self.sticky)

    def lose(self, error: tuple[int, str] = ILLEGAL_ADDRESS) -> None:
        self.sticky = error

    def asarray(self, data: np.ndarray) -> FakeBuffer:
        self.call()
        buffer = FakeBuffer(self, np.array(data))
        self.buffers.append(buffer)
        return buffer

    def zeros(self, size: int, dtype: Any) -> FakeBuffer:
        return self.asarray(np.zeros(size, dtype))


class FakeBuffer:
    """A device buffer: its bytes in host memory, its address theirs."""

    def __init__(self, cupy: FakeCupy, array: np.ndarray) -> None:
        self.cupy = cupy
        self.array = array
        self.data = SimpleNamespace(ptr=int(array.ctypes.data))

    def get(self) -> np.ndarray:
        self.cupy.call()
        return self.array.copy()


def install(monkeypatch: Any) -> FakeCupy:
    """Put a FakeCupy where kernel_nb.gpu finds CuPy, with every device check passing."""
    import sys

    import kernel_nb.gpu.device as gpu_device

    cupy = FakeCupy()
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(gpu_device, "require", lambda device=0, **kwargs: None)
    monkeypatch.setattr(gpu_device, "cupy_module", lambda: cupy)
    return cupy


def staged(args: tuple[Any, ...], index: int) -> np.ndarray:
    """The host bytes behind the staged buffer that argument `index` of a faked launch points into."""
    pointer = args[index]
    return pointer.owner.array
