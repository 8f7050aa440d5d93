"""A trace carries its GPU comparison as plain data: it saves and loads with the launch."""

import ast
import pickle
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import kernel_nb
from kernel_nb import compare
from kernel_nb.trace import (
    Comparison,
    Divergence,
    Launch,
    ProgramDivergence,
    StatementDiff,
    Tolerance,
    Trace,
)


def _compared_trace() -> Trace:
    launch = Launch(index=0, kernel="scale_kernel", grid=(2, 1, 1), args=[])
    before = np.zeros(8, np.float32)
    cpu = np.arange(8, dtype=np.float32)
    buffer = compare.compare_buffer("y", before, cpu, cpu + np.float32(1e-3))
    assert buffer is not None
    launch.comparison = Comparison(launch=0, kernel="scale_kernel", device="H200", buffers=[buffer])
    statement = StatementDiff(
        stmt=0, seq=0, line=3, name="o", function="scale_kernel", call_path=(), iteration=(),
        dtype="i32", shape=(8,), status="match",
    )  # fmt: skip
    program = ProgramDivergence(pid=(0, 0, 0), statements=[statement])
    launch.divergence = Divergence(launch=0, kernel="scale_kernel", device="H200", programs=[program])
    return Trace([launch])


def test_a_saved_comparison_loads_with_its_launch(tmp_path):
    trace = _compared_trace()
    trace.save(tmp_path / "trace.knb")
    loaded = Trace.load(tmp_path / "trace.knb")[0]
    assert loaded.comparison is not None and loaded.divergence is not None
    assert loaded.comparison.report() == trace[0].comparison.report()
    assert loaded.divergence.report() == trace[0].divergence.report()
    np.testing.assert_array_equal(loaded.comparison.buffers[0].gpu, trace[0].comparison.buffers[0].gpu)


@pytest.mark.parametrize("former", ["kernel_nb.diff", "kernel_nb.divergence"])
def test_a_trace_naming_the_former_comparison_modules_loads(tmp_path, monkeypatch, former):
    """Files written when the result classes lived in kernel_nb.diff / kernel_nb.divergence."""
    trace = _compared_trace()
    module = types.ModuleType(former)
    for cls in (
        Tolerance,
        Comparison,
        type(trace[0].comparison.buffers[0]),
        Divergence,
        ProgramDivergence,
        StatementDiff,
    ):
        setattr(module, cls.__name__, cls)
        monkeypatch.setattr(cls, "__module__", former)
    monkeypatch.setitem(sys.modules, former, module)
    trace.save(tmp_path / "old.knb")
    assert former.encode() in (tmp_path / "old.knb").read_bytes()
    monkeypatch.undo()
    assert former not in sys.modules
    loaded = Trace.load(tmp_path / "old.knb")[0]
    assert type(loaded.comparison) is Comparison
    assert type(loaded.divergence) is Divergence
    assert loaded.comparison.report() == _compared_trace()[0].comparison.report()


def test_the_trace_package_imports_nothing_above_it():
    package = Path(kernel_nb.__file__).parent / "trace"
    allowed = ("kernel_nb.trace", "kernel_nb.numerics", "kernel_nb.distinct")
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kernel_nb"):
                assert node.module.startswith(allowed), f"{path.name} imports {node.module}"


def test_the_comparison_results_import_nothing_of_the_launch():
    text = (Path(kernel_nb.__file__).parent / "trace" / "compare.py").read_text()
    imported = {
        node.module for node in ast.walk(ast.parse(text)) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert "kernel_nb.trace.launch" not in imported
    assert "kernel_nb.trace" not in imported


def test_pickled_records_name_the_public_face():
    """The face re-exports every class a saved launch holds, so older files find them there too."""
    launch = _compared_trace()[0]
    for name in (
        "Launch",
        "ProgramTrace",
        "Record",
        "MemoryEvent",
        "Records",
        "Events",
        "BufferMap",
        "Finding",
    ):
        assert getattr(kernel_nb.trace, name).__name__ == name
    assert pickle.loads(pickle.dumps(launch)).kernel == "scale_kernel"
