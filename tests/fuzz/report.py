"""The fuzz run as a table: `python -m tests.fuzz.report [--long]` prints one row per failing case."""

from __future__ import annotations

import sys

from tests.fuzz import outcomes
from tests.fuzz.test_fuzz import selected_cases


def main() -> None:
    selected = selected_cases(long="--long" in sys.argv)
    results = outcomes.run(selected)
    failing = 0
    print("| case | launch | what happened |")
    print("|---|---|---|")
    for case in selected:
        problems = outcomes.problems_of(
            case,
            results["kernel_nb"].get(case.id),
            results["stock"].get(case.id),
            results["kernel_nb"].get(None, ""),
        )
        if problems:
            failing += 1
            cell = "; ".join(problems).replace("|", "\\|")
            print(f"| {case.id} | `{case.title}` | {cell} |")
    print(f"\n{failing} of {len(selected)} cases fail")


if __name__ == "__main__":
    main()
