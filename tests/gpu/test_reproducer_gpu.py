"""The written reproducers of the planted bugs (tests/trace), run compiled on the GPU: each file's
stock test shows its bug there and not in the fixed twin, and its kernel_nb test passes."""

from __future__ import annotations

import os

import pytest

from kernel_nb.trace.reproducer import write_pytest
from tests.trace import test_reproducer as written

# the race is the one planted bug whose stock test skips everywhere: its outcome depends on the
# order programs run in
CASES = [case for case in written.CASES if case != "race"]


@pytest.mark.parametrize("case", CASES)
def test_the_written_file_shows_the_bug_on_the_gpu_and_not_its_fix(tmp_path, case):
    kernel, grid, inputs, _, (bug, fix), _ = written.CASES[case]
    test_file, _ = write_pytest(written._interpreted(kernel, grid, *inputs(), BLOCK=8), tmp_path)
    fixed = written._fixed(test_file, bug, fix)
    outcomes = _outcomes_compiled(tmp_path, test_file, fixed)
    assert outcomes[f"{test_file.stem}::test_stock_triton"] == ("passed", ""), outcomes
    assert outcomes[f"{test_file.stem}::test_kernel_nb"] == ("passed", ""), outcomes
    assert outcomes[f"{fixed.stem}::test_stock_triton"][0] == "failed", outcomes


def _outcomes_compiled(tmp_path, *files):
    """`written._outcomes`, with the files' choice left to the driver: compiled on this GPU."""
    import subprocess
    import sys
    import xml.etree.ElementTree as ET
    from pathlib import Path

    report = tmp_path / "report.xml"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run = subprocess.run([*command, *map(str, files)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert report.exists(), run.stdout + run.stderr
    outcomes = {}
    for case in ET.parse(report).iter("testcase"):
        name = f"{Path(case.get('classname').replace('.', '/')).name}::{case.get('name')}"
        found = [c for c in case if c.tag in ("failure", "error", "skipped")]
        outcome = {"failure": "failed", "error": "failed", "skipped": "skipped"}.get(
            found[0].tag if found else "", "passed"
        )
        outcomes[name] = (outcome, found[0].get("message", "")[:300] if found else "")
    return outcomes
