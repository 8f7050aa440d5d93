"""Fixtures for the example notebooks' tests: a real ipykernel started with this interpreter."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from notebook_support import NOTEBOOKS, ROOT

RunNotebook = Callable[[str], nbformat.NotebookNode]


@pytest.fixture(scope="session")
def run_notebook(tmp_path_factory: pytest.TempPathFactory) -> RunNotebook:
    """Execute a notebook of notebooks/ (by name, in that directory) with this interpreter's ipykernel.

    Each notebook runs once per test session; its tests share the result. Cells tagged
    ``raises-exception`` may fail; any other error raises `CellExecutionError`.
    """
    spec = tmp_path_factory.mktemp("kernelspec") / "kernels" / "kernel-nb-test"
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

    executed: dict[str, nbformat.NotebookNode] = {}

    def run(name: str) -> nbformat.NotebookNode:
        if name in executed:
            return executed[name]
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        km = AsyncKernelManager(
            kernel_name="kernel-nb-test",
            kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(spec.parent)]),
        )
        client = NotebookClient(
            nb, km=km, timeout=300, resources={"metadata": {"path": str(NOTEBOOKS)}}, store_widget_state=True
        )
        executed[name] = client.execute(cleanup_kc=True, env=env)
        return executed[name]

    return run
