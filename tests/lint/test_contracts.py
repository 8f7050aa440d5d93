"""The lint contracts catch what they are there for: an import running up the layers or closing a
circle, hidden inside a function or under TYPE_CHECKING, and a long module with no reason given."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

sys.path.insert(0, str(ROOT / "tools"))
import module_sizes  # noqa: E402


def _contract_config(tmp_path: Path) -> None:
    text = (ROOT / "pyproject.toml").read_text()
    section = text[text.index("[tool.importlinter]") :]
    (tmp_path / "pyproject.toml").write_text(section)


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "kernel_nb", tmp_path / "kernel_nb", ignore=shutil.ignore_patterns("__pycache__"))
    _contract_config(tmp_path)
    return tmp_path / "kernel_nb"


def _lint(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_tree_keeps_both_contracts(tmp_path):
    _copy(tmp_path)
    result = _lint(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_import_up_the_layers_inside_a_function_is_refused(tmp_path):
    package = _copy(tmp_path)
    records = package / "trace" / "records.py"
    records.write_text(
        records.read_text() + "\n\ndef _view():\n    from kernel_nb import view\n\n    return view\n"
    )
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert "kernel_nb.trace.records -> kernel_nb.view" in result.stdout


def test_a_circle_under_type_checking_is_refused(tmp_path):
    package = _copy(tmp_path)
    records = package / "trace" / "records.py"
    records.write_text(
        records.read_text() + "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
        "    from kernel_nb.trace import launch  # noqa: F401\n"
    )
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert "No cycles are allowed in kernel_nb.trace" in result.stdout


def test_a_long_module_needs_its_reason_at_the_top(tmp_path):
    (tmp_path / "kernel_nb").mkdir()
    (tmp_path / "kernel_nb" / "long.py").write_text('"""A module."""\n' + "x = 1\n" * 600)
    (tmp_path / "kernel_nb" / "reasoned.py").write_text(
        '"""A module.\n\nWhy one module: its parts share one table.\n"""\n' + "x = 1\n" * 600
    )
    (tmp_path / "kernel_nb" / "short.py").write_text("x = 1\n" * 400)
    assert module_sizes.oversized(tmp_path) == [
        "kernel_nb/long.py: 601 lines and no 'Why one module:' at its top"
    ]
