"""The machine's GPU pieces, faked where kernel_nb meets them: the PCI bus, the driver library, CuPy, Triton's driver.

`FakeMachine` stands in for each piece at its import boundary (`ctypes.CDLL` for libcuda, the
`cupy` module, the PCI device folder, Triton's active driver), so `kernel_nb.gpu.device` runs its
real checks against it. `has_nvidia_gpu()` tells, without kernel_nb, whether the real machine has one.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import kernel_nb.gpu.device as gpu_device


def has_nvidia_gpu() -> bool:
    """Whether this machine has an NVIDIA GPU or its driver, asked without kernel_nb."""
    pci = Path("/sys/bus/pci/devices")
    on_bus = pci.is_dir() and any(
        (d / "vendor").read_text().strip() == "0x10de" for d in pci.iterdir() if (d / "vendor").exists()
    )
    return on_bus or Path("/dev/nvidiactl").exists() or ctypes.util.find_library("cuda") is not None


class FakeDriver:
    """libcuda's entry points that kernel_nb calls, answering like a driver with `capabilities` devices."""

    def __init__(self, init_status: int, version: int, capabilities: tuple[int, ...]) -> None:
        self.init_status = init_status
        self.version = version
        self.capabilities = capabilities

    def cuInit(self, flags: int) -> int:
        return self.init_status

    def cuDriverGetVersion(self, out: Any) -> int:
        out._obj.value = self.version
        return 0

    def cuDeviceGetCount(self, out: Any) -> int:
        out._obj.value = len(self.capabilities)
        return 0

    def cuDeviceGet(self, out: Any, index: int) -> int:
        out._obj.value = index
        return 0

    def cuDeviceGetAttribute(self, out: Any, attribute: int, device: Any) -> int:
        major, minor = divmod(self.capabilities[device.value], 10)
        out._obj.value = major if attribute == 75 else minor
        return 0

    def cuGetErrorName(self, status: int, out: Any) -> int:
        out._obj.value = {999: b"CUDA_ERROR_UNKNOWN", 804: b"CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"}.get(
            status, b"CUDA_ERROR_INVALID_VALUE"
        )
        return 0


@dataclass
class FakeMachine:
    """Which pieces the faked machine has. Install with `install(monkeypatch, tmp_path)`."""

    pci_gpus: int = 1
    driver: bool = True  # libcuda loads
    init_status: int = 0  # what cuInit returns (100: no device)
    driver_version: int = 12040
    capabilities: tuple[int, ...] = (90,)
    cupy: str = "works"  # "missing", "broken" (fails at import), "old-driver" (its runtime refuses), "works"
    triton_driver: bool = True

    def install(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        pci = tmp_path / "pci"
        for i in range(3):
            entry = pci / f"0000:00:0{i}.0"
            entry.mkdir(parents=True)
            gpu = i < self.pci_gpus
            (entry / "vendor").write_text("0x10de\n" if gpu else "0x8086\n")
            (entry / "class").write_text("0x030200\n" if gpu else "0x060000\n")
        monkeypatch.setattr(gpu_device, "PCI_DEVICES", pci)

        real_cdll = ctypes.CDLL
        fake = FakeDriver(self.init_status, self.driver_version, self.capabilities)

        def cdll(name: str, *args: Any, **kwargs: Any) -> Any:
            if not name.startswith(("libcuda", "nvcuda")):
                return real_cdll(name, *args, **kwargs)
            if not self.driver:
                raise OSError(f"{name}: cannot open shared object file: No such file or directory")
            return fake

        monkeypatch.setattr(ctypes, "CDLL", cdll)
        if (
            self.cupy == "broken"
        ):  # a real package on the path whose import fails, as a CuPy for another CUDA does
            (tmp_path / "site" / "cupy").mkdir(parents=True)
            (tmp_path / "site" / "cupy" / "__init__.py").write_text(
                'raise RuntimeError("CuPy failed to load libnvrtc.so.13: cannot open shared object file")\n'
            )
            monkeypatch.syspath_prepend(str(tmp_path / "site"))
            monkeypatch.delitem(sys.modules, "cupy", raising=False)
        else:
            monkeypatch.setitem(sys.modules, "cupy", self._cupy())

        import triton.runtime

        launches = self.triton_driver

        class ActiveDriver:
            def get_current_device(self) -> int:
                if not launches:
                    raise RuntimeError("0 active drivers ([]). There should only be one.")
                return 0

        monkeypatch.setattr(triton.runtime.driver, "_active", ActiveDriver())

    def _cupy(self) -> ModuleType | None:
        if self.cupy == "missing":
            return None  # `import cupy` raises ImportError
        cupy = ModuleType("cupy")
        cupy.cuda = ModuleType("cupy.cuda")  # type: ignore[attr-defined]
        count = len(self.capabilities)
        old = self.cupy == "old-driver"

        class Runtime:
            @staticmethod
            def getDeviceCount() -> int:
                if old:
                    raise RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")
                return count

        cupy.cuda.runtime = Runtime  # type: ignore[attr-defined]
        return cupy
