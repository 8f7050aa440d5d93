"""The wheel as users get it: built from the checkout, installed into a fresh virtual environment, used there.

`pip install kernel-nb` gives a non-editable install, which the rest of the suite (an editable
install) never sees: a package missing from the wheel, or a widget asset left out, only shows here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Run inside the fresh environment, from a folder outside the checkout.
USE_THE_WHEEL = r"""
import importlib.metadata, json, sys
from pathlib import Path

import kernel_nb, kernel_nb.gpu, kernel_nb.magic
from kernel_nb.view.widget import TraceViewer

prefix = Path(sys.prefix).resolve()
checkout = Path(sys.argv[1]).resolve()
assert Path(kernel_nb.__file__).resolve().is_relative_to(prefix), kernel_nb.__file__
assert not [p for p in sys.path if p and Path(p).resolve().is_relative_to(checkout)], sys.path
direct = importlib.metadata.distribution("kernel-nb").read_text("direct_url.json")
assert direct is None or not json.loads(direct).get("dir_info", {}).get("editable"), direct
static = Path(kernel_nb.__file__).parent / "static"
assert TraceViewer._esm == (static / "viewer.js").read_text() and TraceViewer._css == (static / "viewer.css").read_text()

from IPython.core.interactiveshell import InteractiveShell

shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "kernel_nb")
shell.run_cell('''
import numpy as np
import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)

x = np.arange(1000, dtype=np.float32)
y = np.ones(1000, dtype=np.float32)
out = np.zeros(1000, dtype=np.float32)
''').raise_error()
shell.run_cell("%%tkernel interpret --quiet\nadd_kernel[(4,)](x, y, out, 1000, BLOCK=256)").raise_error()
ns = shell.user_ns
assert (ns["out"] == ns["x"] + ns["y"]).all()
launch = ns["_tk"][0]
assert launch.kernel == "add_kernel" and len(launch.programs) == 4
print("offsets of program 3 start at", int(launch.value((3, 0, 0), "offsets")[0]))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        check=True, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    [built] = out.glob("kernel_nb-*.whl")
    return built


def test_the_wheel_holds_every_package_and_the_widget_assets(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = {p.parent.relative_to(ROOT).as_posix() for p in (ROOT / "kernel_nb").rglob("__init__.py")}
    assert packages >= {"kernel_nb", "kernel_nb/engine", "kernel_nb/gpu", "kernel_nb/view"}
    missing = {p.relative_to(ROOT).as_posix() for p in (ROOT / "kernel_nb").rglob("*.py")} - names
    assert not missing, f"modules left out of the wheel: {sorted(missing)}"
    # The widget's assets, as setup.py ships them (js/ also holds the type checker's config, not shipped).
    for asset in sorted((ROOT / "js").glob("*.js")) + sorted((ROOT / "js").glob("*.css")):
        packed = zipfile.ZipFile(wheel).read(f"kernel_nb/static/{asset.name}")
        assert packed == asset.read_bytes(), asset.name
    assert not [n for n in names if n.startswith(("tests/", "bench/", "js/", "notebooks/"))]


def test_a_fresh_environment_runs_a_cell_from_the_wheel(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        capture_output=True, text=True, env=env, timeout=900,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr[-3000:]
    used = subprocess.run(
        [str(python), "-c", USE_THE_WHEEL, str(ROOT)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert used.returncode == 0, used.stderr[-3000:]
    assert used.stdout.strip().splitlines()[-1] == "offsets of program 3 start at 768"
