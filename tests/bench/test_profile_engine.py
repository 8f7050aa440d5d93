"""bench/profile_engine.py profiles a case's first and warm launch in a fresh process."""

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "profile_engine.py"


def test_it_lists_where_the_first_and_the_warm_launch_spend_their_time():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--cases", "vector_add", "--top", "4"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    out = done.stdout
    for label in ("first", "warm"):
        assert re.search(rf"== vector_add \(n=\d+\), {label} launch: \d+ ms", out), out
    # the engine's own functions are there, with their times
    assert re.search(r"\d+\.\d own +\d+\.\d under +\d+ calls  kernel_nb/engine/", out), out
    assert out.count("by own time") == 2 and out.count("by time under") == 2
