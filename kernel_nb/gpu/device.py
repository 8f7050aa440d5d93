"""Finding the GPU: what is missing before a kernel can run compiled, said in the order a user can act on.

`find_missing` is the one place that decides. It looks, in this order, for an NVIDIA GPU, a CUDA
driver that sees it, CuPy (with the wheel that matches the driver's CUDA version), the device asked
for, and a Triton that can launch (or, for `need="compile"`, compile) there. The GPU and the driver
are found through the driver library itself (libcuda, through ctypes) and the PCI bus, so a machine
without CuPy learns first that it has no GPU, not that it lacks a package it cannot use.

Nothing is imported at module import: a machine without CuPy or a GPU imports kernel_nb.gpu and
only learns what is missing when it asks for a device.

A kernel that faults on the device (an illegal address, a misaligned access, a trap) leaves a
"sticky" error in the process's CUDA context: every later CUDA call returns it, until the process
ends. `sticky_error` is the one test for it, and `device_scope`, where every launch meets the
device, applies it before the launch and after any failure inside: `CudaContextLost` is then the
same one line whichever CuPy, torch or Triton call met the error first, at the fault and at every
launch after it.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from kernel_nb.engine import triton_compat

INSTALL = 'pip install "kernel-nb[gpu]"'
INSTEAD = (
    "%%tkernel interpret runs the same cell on the CPU, and %%tkernel interpret --ir also shows the "
    "TTIR, TTGIR, LLIR and PTX the GPU would run"
)
Piece = Literal["gpu", "driver", "cupy", "device", "triton", "context"]
Need = Literal["launch", "device", "compile"]
# Where the kernel lists PCI devices (Linux): an NVIDIA display controller is vendor 0x10de, class 0x03xxxx.
PCI_DEVICES = Path("/sys/bus/pci/devices")
_NVIDIA = "0x10de"
_DRIVER_LIBRARIES = {"linux": ("libcuda.so.1", "libcuda.so"), "win32": ("nvcuda.dll",)}
_CUDA_ERROR_NO_DEVICE = 100
_COMPUTE_CAPABILITY = (75, 76)  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR
# The errors after which the CUDA context cannot be used again (the runtime's and the driver's codes
# agree): illegal address, launch timeout, device assert, hardware stack error, illegal instruction,
# misaligned address, invalid address space, invalid PC, launch failure.
STICKY_ERRORS = frozenset({700, 702, 710, 714, 715, 716, 717, 718, 719})


class GpuUnavailableError(RuntimeError):
    """No usable GPU: the message says what is missing and how to get it; `missing` names the piece."""

    def __init__(self, message: str, missing: Piece | None = None) -> None:
        super().__init__(message)
        self.missing = missing

    def _render_traceback_(self) -> list[str]:
        """IPython shows this one line instead of a traceback into CuPy or Triton."""
        return [f"{type(self).__name__}: {self}"]


class CudaContextLost(GpuUnavailableError):
    """A sticky CUDA error: this process's CUDA context is gone and only a restart brings it back.

    Attributes:
        kernel: the kernel whose launch met it.
        device: the CUDA device.
        error: CUDA's words for it ("cudaErrorIllegalAddress: an illegal memory access was encountered").
        earlier: the error was there before this launch began (an earlier launch faulted).
    """

    def __init__(self, kernel: str, device: int, error: str, *, earlier: bool) -> None:
        if earlier:
            what = f"the CUDA context of GPU {device} is gone since an earlier launch faulted ({error})"
        else:
            what = f"the launch faulted on GPU {device} ({error}) and the CUDA context is gone"
        super().__init__(
            f"{kernel}: {what}: a sticky error fails every later CUDA call in this process; restart the "
            "Python process (in Jupyter: restart the kernel) to use the GPU again, and run the cell with "
            "%%tkernel interpret to find the bad access",
            "context",
        )
        self.kernel = kernel
        self.device = device
        self.error = error
        self.earlier = earlier


@dataclass(frozen=True)
class Missing:
    """The first piece a compiled launch lacks, and what to do about it."""

    piece: Piece
    message: str

    def error(self) -> GpuUnavailableError:
        return GpuUnavailableError(self.message, self.piece)


@dataclass(frozen=True)
class Driver:
    """What the CUDA driver library reports: its CUDA version and its devices' capabilities."""

    version: int  # 12040 for CUDA 12.4
    capabilities: tuple[int, ...]  # per device, as Triton spells them: 90 for sm_90

    @property
    def cuda(self) -> str:
        return f"{self.version // 1000}.{self.version % 1000 // 10}"

    @property
    def cupy_wheel(self) -> str:
        """The CuPy wheel built for this driver's CUDA major version."""
        return f"cupy-cuda{self.version // 1000}x"


def find_missing(device: int = 0, *, need: Need = "launch", target: str = "cuda") -> Missing | None:
    """What stands between this machine and a compiled kernel, or None when nothing does.

    Args:
        device: the CUDA device a launch would use.
        need: "launch": run compiled kernels on `device` (`%%tkernel gpu`, `compare`); "device":
            the GPU, its driver, CuPy and `device`, without asking Triton's launcher (which imports
            torch and starts CUDA on Triton before 3.8: a launch asks it); "compile": only compile
            for a target (`%%tkernel interpret --ir`), which needs no GPU.
        target: for "compile", the backend compiled for ("cuda" or "hip").
    """
    if need == "compile":
        return _triton_backend_missing(target)
    driver = probe_driver()
    if isinstance(driver, Missing):
        return driver
    cupy = _import_cupy(driver)
    if isinstance(cupy, Missing):
        return cupy
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # CuPy's runtime built for a newer CUDA than the driver's
        if getattr(exc, "status", None) in STICKY_ERRORS:
            return None  # nothing is missing: the launch says the context is gone, naming its kernel
        return Missing(
            "cupy",
            f"CuPy does not run on this driver ({_first_line(exc)}): the driver supports CUDA "
            f"{driver.cuda}; install the CuPy wheel for it: pip install {driver.cupy_wheel}",
        )
    if not 0 <= device < count:
        plural = "s" * (count != 1)
        return Missing(
            "device", f"--device {device}: this machine has {count} CUDA device{plural} (0 to {count - 1})"
        )
    if need == "device":
        return None
    missing = _triton_launcher_missing()
    if missing is not None and sticky_error(cupy, device) is not None:
        return None  # Triton met the lost context, not a missing piece: the launch says so
    return missing


def require(device: int = 0, *, need: Need = "launch", target: str = "cuda") -> None:
    """`find_missing`, raised.

    Raises:
        GpuUnavailableError: the first missing piece, in words.
    """
    missing = find_missing(device, need=need, target=target)
    if missing is not None:
        raise missing.error()


def require_device(device: int) -> ModuleType:
    """Check that `device` can run compiled Triton kernels; returns CuPy.

    Raises:
        GpuUnavailableError: no GPU, no driver, no CuPy, no such device, or a Triton that cannot launch here.
    """
    require(device)
    return cupy_module()


def cupy_module() -> ModuleType:
    """CuPy, imported.

    Raises:
        GpuUnavailableError: CuPy is not installed or does not load.
    """
    driver = probe_driver()
    cupy = _import_cupy(driver if isinstance(driver, Driver) else None)
    if isinstance(cupy, Missing):
        raise cupy.error()
    return cupy


def probe_driver() -> Driver | Missing:
    """Ask the CUDA driver library (not CuPy) for its version and devices; the GPU or driver if missing."""
    library, reason = _driver_library()
    if library is None:
        if _nvidia_pci_devices():
            return Missing(
                "driver",
                f"this machine has an NVIDIA GPU but no CUDA driver loads ({reason}): install the NVIDIA "
                f"driver (nvidia-smi then lists the GPU); until then {INSTEAD}",
            )
        return _no_gpu()
    status = library.cuInit(0)
    if status == _CUDA_ERROR_NO_DEVICE:
        return _no_gpu(driver_seen=True)
    # a sticky status is a lost context, not a driver that does not start: the launch says so
    if status != 0 and status not in STICKY_ERRORS:
        return Missing(
            "driver",
            f"the CUDA driver does not start ({_driver_error(library, status)}): check the NVIDIA driver "
            f"with nvidia-smi (a driver older than the CUDA it is asked for, or a GPU in a bad state); "
            f"until then {INSTEAD}",
        )
    version, count = ctypes.c_int(0), ctypes.c_int(0)
    library.cuDriverGetVersion(ctypes.byref(version))
    if library.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return _no_gpu(driver_seen=True)
    capabilities = []
    for index in range(count.value):
        handle, major, minor = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0)
        library.cuDeviceGet(ctypes.byref(handle), index)
        library.cuDeviceGetAttribute(ctypes.byref(major), _COMPUTE_CAPABILITY[0], handle)
        library.cuDeviceGetAttribute(ctypes.byref(minor), _COMPUTE_CAPABILITY[1], handle)
        capabilities.append(major.value * 10 + minor.value)
    return Driver(version.value, tuple(capabilities))


def describe(device: int) -> str:
    """The device in words: "GPU 0: NVIDIA H200 (sm_90)"."""
    cupy = cupy_module()
    props = cupy.cuda.runtime.getDeviceProperties(device)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return f"GPU {device}: {name} (sm_{props['major']}{props['minor']})"


def capability(device: int) -> int | None:
    """The device's compute capability as Triton spells it (90 for sm_90); None without such a device."""
    driver = probe_driver()
    if isinstance(driver, Missing) or not 0 <= device < len(driver.capabilities):
        return None
    return driver.capabilities[device]


@contextmanager
def device_scope(device: int, kernel: str = "kernel") -> Iterator[Any]:
    """Make `device` current for CuPy, for torch when it is loaded, and so for Triton's launcher.

    Yields CuPy.

    Raises:
        GpuUnavailableError: no usable device.
        CudaContextLost: the device holds a sticky error, from before the scope (`earlier`) or met
            inside it; the error that met it is the cause.
    """
    cupy = require_device(device)
    began = False
    try:
        with ExitStack() as stack:
            stack.enter_context(cupy.cuda.Device(device))
            torch = sys.modules.get("torch")
            # Triton before 3.8 asks torch for the current device and stream
            if torch is not None and torch.cuda.is_available():
                stack.enter_context(torch.cuda.device(device))
            check_context(device, kernel, cupy)
            began = True
            yield cupy
    except CudaContextLost:
        raise
    except Exception as exc:
        error = sticky_error(cupy, device)
        if error is None:
            raise
        raise CudaContextLost(kernel, device, error, earlier=not began) from exc


def check_context(device: int, kernel: str, cupy: ModuleType | None = None) -> None:
    """Refuse a launch on a device whose CUDA context a sticky error has taken.

    Raises:
        CudaContextLost: with `earlier` set.
    """
    error = sticky_error(cupy or cupy_module(), device)
    if error is not None:
        raise CudaContextLost(kernel, device, error, earlier=True)


def sticky_error(cupy: Any, device: int) -> str | None:
    """The sticky error `device` holds, in CUDA's words, or None.

    A sticky error comes back from every CUDA call, so asking never clears it; the question is an
    event recorded and queried, which does not wait for work still running (a kernel that spins
    would make a synchronize wait for ever). Once the event tells of a sticky error nothing runs any
    more, and a synchronize returns at once with CUDA's words for it.
    """
    try:
        with cupy.cuda.Device(device):
            probe = cupy.cuda.Event(block=False, disable_timing=True)
            probe.record()
            status = _event_status(cupy, probe)
            if status not in STICKY_ERRORS:
                return None
            cupy.cuda.runtime.deviceSynchronize()
    except Exception as exc:  # CuPy's CUDARuntimeError carries CUDA's status; other failures say nothing
        return str(exc) if getattr(exc, "status", None) in STICKY_ERRORS else None
    return f"CUDA error {status}"


_NOT_READY = 600  # cudaErrorNotReady: the event's work is still running


def _event_status(cupy: Any, event: Any) -> int:
    """CUDA's status of an event: 0 done, 600 still running, else the error the device holds.

    `Event.done` is no answer here: after a fault it stays False for ever, so a wait on it would hang.
    """
    runtime = cupy.cuda.runtime
    try:
        return int(runtime.eventQuery(event.ptr))
    except runtime.CUDARuntimeError as exc:
        return int(exc.status)


def wait(cupy: Any) -> None:
    """Wait for the current device's work, answering Ctrl-C while it runs.

    A blocking synchronize holds the interpreter in C until the kernel ends, so a kernel that spins
    would hang the process beyond reach of Ctrl-C; polling an event leaves the wait to Python. The
    closing synchronize reports the device's errors.
    """
    done = cupy.cuda.Event(block=False, disable_timing=True)
    done.record()
    pause = 1e-5
    while _event_status(cupy, done) == _NOT_READY:
        time.sleep(pause)
        pause = min(pause * 2, 0.01)
    cupy.cuda.runtime.deviceSynchronize()


def _no_gpu(*, driver_seen: bool = False) -> Missing:
    hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
    if driver_seen and hidden is not None:
        where = f"the CUDA driver sees no GPU (CUDA_VISIBLE_DEVICES={hidden!r} hides them?)"
    elif driver_seen:
        where = "the CUDA driver is installed but sees no GPU"
    else:
        where = "no NVIDIA GPU on this machine"
    return Missing(
        "gpu",
        f"{where}: %%tkernel gpu and %%tkernel compare run the compiled kernel on one; {INSTEAD}",
    )


def _import_cupy(driver: Driver | None) -> ModuleType | Missing:
    wheel = driver.cupy_wheel if driver is not None else "cupy-cuda12x"
    cuda = f" (this driver's CUDA is {driver.cuda})" if driver is not None else ""
    try:
        import cupy
    except ImportError:
        return Missing(
            "cupy",
            "CuPy is not installed: %%tkernel gpu and %%tkernel compare run kernels on CuPy device arrays; "
            f"{INSTALL} (CuPy for CUDA 12), or the wheel for this driver: pip install {wheel}{cuda}",
        )
    except Exception as exc:  # a CuPy built for another CUDA raises its own errors at import
        return Missing(
            "cupy",
            f"CuPy is installed but does not load ({_first_line(exc)}); install the CuPy wheel that "
            f"matches the driver: pip install {wheel}{cuda}",
        )
    return cupy


def _triton_launcher_missing() -> Missing | None:
    import triton

    major, minor = (int(p) for p in triton.__version__.split(".")[:2])
    if (major, minor) < (3, 8):
        try:
            import torch  # noqa: F401
        except ImportError:
            return Missing(
                "triton",
                f"triton {triton.__version__} launches compiled kernels through torch, which is not installed: "
                "pip install torch, or pip install 'triton>=3.8', which launches without it",
            )
    try:
        triton_compat.current_device()
    except Exception as exc:
        return Missing(
            "triton",
            f"triton {triton.__version__} finds no GPU driver it can launch on ({_first_line(exc)}); "
            f"check that torch sees the GPU (torch.cuda.is_available()); until then {INSTEAD}",
        )
    return None


def _triton_backend_missing(target: str) -> Missing | None:
    import triton

    try:
        backends = triton_compat.backend_names()
    except Exception as exc:  # a Triton without its backends package cannot compile at all
        return Missing("triton", f"triton {triton.__version__} has no compiler backends ({_first_line(exc)})")
    name = {"cuda": "nvidia", "hip": "amd"}.get(target, target)
    if name not in backends:
        have = ", ".join(sorted(backends)) or "none"
        return Missing(
            "triton",
            f"triton {triton.__version__} cannot compile for {target}: its {name} backend is not installed "
            f"(backends here: {have}); install the triton wheel from PyPI, which has it",
        )
    return None


def _driver_library() -> tuple[Any, str]:
    names = _DRIVER_LIBRARIES.get(sys.platform)
    if names is None:
        return None, f"CUDA has no driver for {sys.platform}"
    reasons = []
    for name in names:
        try:
            return ctypes.CDLL(name), ""
        except OSError as exc:
            reasons.append(str(exc).strip() or name)
    return None, reasons[0]


def _driver_error(library: Any, status: int) -> str:
    text = ctypes.c_char_p()
    try:
        library.cuGetErrorName(status, ctypes.byref(text))
    except Exception:
        text.value = None
    return f"{text.value.decode()} ({status})" if text.value else f"CUDA error {status}"


def _nvidia_pci_devices() -> int:
    count = 0
    try:
        entries = list(PCI_DEVICES.iterdir())
    except OSError:
        return 0
    for entry in entries:
        try:
            vendor = (entry / "vendor").read_text().strip()
            kind = (entry / "class").read_text().strip()
        except OSError:
            continue
        count += vendor == _NVIDIA and kind.startswith("0x03")
    return count


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
