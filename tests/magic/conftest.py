"""Fixtures for the magic's tests: an IPython shell with the extension loaded, and a real kernel."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from tkernel_support import KERNELS, ROOT

from kernel_nb.magic import TKernelMagics


@pytest.fixture
def ip() -> Iterator[InteractiveShell]:
    """The test session's IPython shell, with a fresh namespace, fresh magics and the test kernels."""
    shell = InteractiveShell.instance()
    shell.run_line_magic("reset", "-f")
    shell.run_line_magic("reload_ext", "kernel_nb")
    result = shell.run_cell(KERNELS)
    result.raise_error()
    yield shell


@pytest.fixture
def magics(ip: InteractiveShell) -> TKernelMagics:
    instance = ip.magics_manager.registry["TKernelMagics"]
    assert isinstance(instance, TKernelMagics)
    return instance


RunNotebook = Callable[..., nbformat.NotebookNode]


@pytest.fixture
def run_notebook(tmp_path: Path) -> RunNotebook:
    """Execute a notebook in a real ipykernel started with this interpreter (not a machine-wide kernelspec)."""
    spec = tmp_path / "kernels" / "kernel-nb-test"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "kernel_nb test", "language": "python"})
    )
    # The checkout under test comes first, installed or not.
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }

    def run(
        nb: nbformat.NotebookNode,
        *,
        allow_errors: bool = False,
        kernel_env: dict[str, str] | None = None,
        **client_options: object,
    ) -> nbformat.NotebookNode:
        km = AsyncKernelManager(
            kernel_name="kernel-nb-test",
            kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(spec.parent)]),
        )
        client = NotebookClient(
            nb,
            km=km,
            timeout=300,
            allow_errors=allow_errors,
            resources={"metadata": {"path": str(tmp_path)}},
            **client_options,
        )
        return client.execute(cleanup_kc=True, env={**env, **(kernel_env or {})})

    return run
