"""Finding the GPU: CuPy, the CUDA driver, the device, and Triton's launcher, each with a clear message.

Nothing is imported at module import: a machine without CuPy or a GPU imports kernel_nb.gpu and
only learns what is missing when it asks for a device.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from types import ModuleType
from typing import Any

INSTALL = 'pip install "kernel-nb[gpu]"'


class GpuUnavailableError(RuntimeError):
    """No usable GPU: the message says what is missing and how to get it."""

    def _render_traceback_(self) -> list[str]:
        """IPython shows this one line instead of a traceback into CuPy or Triton."""
        return [f"{type(self).__name__}: {self}"]


def cupy_module() -> ModuleType:
    """CuPy, imported.

    Raises:
        GpuUnavailableError: CuPy is not installed or does not load.
    """
    try:
        import cupy
    except ImportError:
        raise GpuUnavailableError(
            "CuPy is not installed: %%tkernel gpu and %%tkernel compare run kernels on CuPy device arrays; "
            f"{INSTALL} (CuPy for CUDA 12; for CUDA 13: pip install cupy-cuda13x), "
            "or use %%tkernel interpret, which needs no GPU"
        ) from None
    except Exception as exc:  # a broken CUDA toolkit raises CuPy's own errors at import
        raise GpuUnavailableError(
            f"CuPy is installed but does not load ({_first_line(exc)}); reinstall the CuPy wheel that "
            "matches your CUDA version, e.g. pip install cupy-cuda12x"
        ) from None
    return cupy


def device_count() -> int:
    """How many CUDA devices CuPy sees (0 without CuPy or without a driver)."""
    try:
        cupy = cupy_module()
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def require_device(device: int) -> ModuleType:
    """Check that `device` can run compiled Triton kernels; returns CuPy.

    Raises:
        GpuUnavailableError: no CuPy, no driver, no such device, or a Triton that cannot launch here.
    """
    cupy = cupy_module()
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # CUDARuntimeError when no driver is loaded
        raise GpuUnavailableError(
            f"no usable CUDA driver ({_first_line(exc)}): install the NVIDIA driver on a machine with a GPU, "
            "or use %%tkernel interpret, which needs no GPU"
        ) from None
    if count == 0:
        raise GpuUnavailableError(
            "no CUDA device found: run on a machine with an NVIDIA GPU, or use %%tkernel interpret"
        )
    if not 0 <= device < count:
        raise GpuUnavailableError(
            f"--device {device}: this machine has {count} CUDA device{'s' * (count != 1)} (0 to {count - 1})"
        )
    _require_triton_launcher()
    return cupy


def describe(device: int) -> str:
    """The device in words: "GPU 0: NVIDIA H200 (sm_90)"."""
    cupy = cupy_module()
    props = cupy.cuda.runtime.getDeviceProperties(device)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return f"GPU {device}: {name} (sm_{props['major']}{props['minor']})"


def capability(device: int) -> int:
    """The device's compute capability as Triton spells it (90 for sm_90)."""
    cupy = cupy_module()
    return int(cupy.cuda.Device(device).compute_capability)


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


def _require_triton_launcher() -> None:
    import triton

    major, minor = (int(p) for p in triton.__version__.split(".")[:2])
    if (major, minor) < (3, 8):
        try:
            import torch  # noqa: F401
        except ImportError:
            raise GpuUnavailableError(
                f"triton {triton.__version__} launches compiled kernels through torch, which is not installed: "
                "pip install torch, or pip install 'triton>=3.8', which launches without it"
            ) from None
    try:
        from triton.runtime import driver

        driver.active.get_current_device()
    except Exception as exc:
        raise GpuUnavailableError(
            f"triton {triton.__version__} finds no GPU driver it can launch on ({_first_line(exc)}); "
            "check that torch sees the GPU (torch.cuda.is_available()) or use %%tkernel interpret"
        ) from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
