"""Finding the GPU: what is missing before a kernel can run compiled, said in the order a user can act on.

`find_missing` is the one place that decides. It looks, in this order, for an NVIDIA GPU, a CUDA
driver that sees it, CuPy (with the wheel that matches the driver's CUDA version), the device asked
for, and a Triton that can launch (or, for `need="compile"`, compile) there. The GPU and the driver
are found through the driver library itself (libcuda, through ctypes) and the PCI bus, so a machine
without CuPy learns first that it has no GPU, not that it lacks a package it cannot use.

Nothing is imported at module import: a machine without CuPy or a GPU imports kernel_nb.gpu and
only learns what is missing when it asks for a device.
"""

from __future__ import annotations

import ctypes
import os
import sys
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
Piece = Literal["gpu", "driver", "cupy", "device", "triton"]
Need = Literal["launch", "compile"]
# Where the kernel lists PCI devices (Linux): an NVIDIA display controller is vendor 0x10de, class 0x03xxxx.
PCI_DEVICES = Path("/sys/bus/pci/devices")
_NVIDIA = "0x10de"
_DRIVER_LIBRARIES = {"linux": ("libcuda.so.1", "libcuda.so"), "win32": ("nvcuda.dll",)}
_CUDA_ERROR_NO_DEVICE = 100
_COMPUTE_CAPABILITY = (75, 76)  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR


class GpuUnavailableError(RuntimeError):
    """No usable GPU: the message says what is missing and how to get it; `missing` names the piece."""

    def __init__(self, message: str, missing: Piece | None = None) -> None:
        super().__init__(message)
        self.missing = missing

    def _render_traceback_(self) -> list[str]:
        """IPython shows this one line instead of a traceback into CuPy or Triton."""
        return [f"{type(self).__name__}: {self}"]


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
        need: "launch": run compiled kernels on `device` (`%%tkernel gpu`, `compare`); "compile":
            only compile for a target (`%%tkernel interpret --ir`), which needs no GPU.
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
    return _triton_launcher_missing()


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
    if status != 0:
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
def device_scope(device: int) -> Iterator[Any]:
    """Make `device` current for CuPy, for torch when it is loaded, and so for Triton's launcher.

    Yields CuPy.
    """
    cupy = require_device(device)
    with ExitStack() as stack:
        stack.enter_context(cupy.cuda.Device(device))
        torch = sys.modules.get("torch")
        # Triton before 3.8 asks torch for the current device and stream
        if torch is not None and torch.cuda.is_available():
            stack.enter_context(torch.cuda.device(device))
        yield cupy


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
