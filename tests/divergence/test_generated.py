"""The probed variants' source files: in a directory of their own that nothing imports by accident, gone at exit."""

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import kernel_nb
from kernel_nb.gpu import generated
from tests.divergence import kernels as dk
from tests.divergence.support import probe_on_cpu

ROOT = Path(__file__).resolve().parents[2]


def _search(**options):
    args = (np.zeros(512, np.float32), np.zeros(512, np.float32), 3)
    return probe_on_cpu(dk.race_kernel, (4,), args, {"BLOCK": 128}, [(1, 0, 0)], **options)


def test_a_divergence_search_leaves_nothing_that_shadows_the_package():
    _, probed, divergence = _search(gpu={"order": "reverse"})
    assert divergence.first is not None
    home = generated.process_directory()
    assert home.parent == Path(tempfile.gettempdir()) and home.name.startswith("kernel-nb-")
    assert not home.name.isidentifier()
    assert probed.files and all(Path(f).parent == home for f in probed.files.values())
    # a Python started in the temp directory imports the package, not a folder of generated files
    found = subprocess.run(
        [sys.executable, "-c", "import kernel_nb; print(kernel_nb.__file__, hasattr(kernel_nb, 'interpret'))"],
        capture_output=True, text=True, cwd=tempfile.gettempdir(), check=True,
    )  # fmt: skip
    assert found.stdout.split() == [kernel_nb.__file__, "True"]
    assert not (Path(tempfile.gettempdir()) / "kernel_nb").exists()


def test_the_process_directory_is_removed_when_the_process_exits():
    code = (
        "from tests.divergence.test_generated import _search\n"
        "_, probed, _ = _search()\n"
        "print(next(iter(probed.files.values())))\n"
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    written = Path(child.stdout.strip().splitlines()[-1])
    assert written.name.startswith("race_kernel_") and written.parent.name.startswith("kernel-nb-")
    assert not written.parent.exists()


def test_a_chosen_directory_keeps_the_sources(tmp_path):
    from kernel_nb.gpu.instrument import instrument
    from tests.divergence.support import interpret

    args = (np.zeros(512, np.float32), np.zeros(512, np.float32), 3)
    launch = interpret(dk.race_kernel, (4,), args, {"BLOCK": 128})
    probed = instrument(dk.race_kernel, launch, [(0, 0, 0)], directory=tmp_path / "probes")
    [path] = probed.files.values()
    assert Path(path).parent == tmp_path / "probes"
    assert Path(path).read_text() == probed.sources["race_kernel"]


def test_the_folder_older_versions_left_is_removed_only_when_it_holds_nothing_else(tmp_path):
    legacy = tmp_path / "kernel_nb" / "instrumented"
    legacy.mkdir(parents=True)
    (legacy / "add_kernel_bd4bb3e319e230c7.py").write_text("# generated\n")
    generated._remove_legacy_directory(tmp_path)
    assert not (tmp_path / "kernel_nb").exists()

    legacy.mkdir(parents=True)
    (legacy / "add_kernel_bd4bb3e319e230c7.py").write_text("# generated\n")
    (legacy / "notes.txt").write_text("someone else's\n")
    generated._remove_legacy_directory(tmp_path)
    assert (legacy / "notes.txt").exists()
