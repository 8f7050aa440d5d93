"""The Triton versions kernel_nb supports, and the error naming them where a name is missing."""

from __future__ import annotations

from typing import Any

import triton

SUPPORTED = ((3, 4), (3, 9))


class UnsupportedTritonError(RuntimeError):
    """The installed Triton lacks an interpreter name kernel_nb relies on."""


def triton_version() -> tuple[int, int]:
    major, minor = triton.__version__.split(".")[:2]
    return int(major), int(minor)


def require(module: Any, name: str) -> Any:
    try:
        return getattr(module, name)
    except AttributeError:
        lo, hi = SUPPORTED
        raise UnsupportedTritonError(
            f"triton {triton.__version__} has no {module.__name__}.{name}; kernel_nb supports triton "
            f"{lo[0]}.{lo[1]} to {hi[0]}.{hi[1]}: pip install 'triton>={lo[0]}.{lo[1]},<{hi[0]}.{hi[1] + 1}'"
        ) from None
