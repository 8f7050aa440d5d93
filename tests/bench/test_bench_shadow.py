"""bench/bench_shadow.py times a case with and without the fp64 shadow, in fresh processes."""

import json
import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bench_shadow.py"


def test_it_reports_the_shadow_against_the_plain_run(tmp_path):
    saved = tmp_path / "shadow.json"
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--quick",
            "--processes",
            "1",
            "--repeats",
            "1",
            "--cases",
            "flash_attention",
            "--json",
            str(saved),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    row = next(line for line in done.stdout.splitlines() if line.startswith("flash_attention"))
    ratios = re.findall(r"(\d+\.\d+)x", row)
    assert len(ratios) == 2 and all(float(r) > 0 for r in ratios), row
    processes = json.loads(saved.read_text())["processes"]["flash_attention"]
    assert processes["plain"][0]["how"] == processes["shadow"][0]["how"] == "batched"
    assert processes["shadow"][0]["warm"] > 0
