"""The grouping collector: one finding per (kind, line, argument), the first program shown."""

import numpy as np

from kernel_nb.checks import MAX_ELEMENTS, Observations
from tests.checks.helpers import NamedLaunch, site


def test_a_bug_in_many_programs_is_one_finding_showing_the_first_program():
    observations = Observations()
    for p in (2, 0, 1):
        observations.add(
            "race_write", "error", site((p, 0, 0)), arg="out", elements=np.array([p]), detail=f"d{p}"
        )
    [finding] = observations.findings(NamedLaunch())
    assert finding.message == "k:7 pid=(0,0,0): d0 (in 3 programs; the first shown)"
    assert (finding.pid, finding.arg, finding.elements.tolist()) == ((0, 0, 0), "out", [0])


def test_a_detail_given_as_a_function_is_worded_only_for_the_program_shown():
    observations = Observations()
    worded = []

    def detail(p):
        def word():
            worded.append(p)
            return f"d{p}"

        return word

    for p in (2, 0, 1):
        observations.add("race_write", "error", site((p, 0, 0)), arg="out", detail=detail(p))
    [finding] = observations.findings(NamedLaunch())
    assert finding.message == "k:7 pid=(0,0,0): d0 (in 3 programs; the first shown)"
    assert worded == [0]


def test_findings_come_in_program_then_line_order():
    observations = Observations()
    observations.add("nan_origin", "error", site((1, 0, 0), line=3), detail="a")
    observations.add("int_overflow", "warning", site((0, 0, 0), line=9), detail="b")
    observations.add("inf_origin", "warning", site((0, 0, 0), line=4), detail="c")
    assert [f.message for f in observations.findings(NamedLaunch())] == [
        "k:4 pid=(0,0,0): c",
        "k:9 pid=(0,0,0): b",
        "k:3 pid=(1,0,0): a",
    ]


def test_merge_keeps_the_earlier_program_and_counts_both():
    first, batch = Observations(), Observations()
    first.add("race_write", "error", site((3, 0, 0)), arg="out", detail="late")
    batch.add("race_write", "error", site((1, 0, 0)), arg="out", detail="early")
    first.merge(batch)
    [finding] = first.findings(NamedLaunch())
    assert finding.message == "k:7 pid=(1,0,0): early (in 2 programs; the first shown)"
    assert first.seen("race_write", (3, 0, 0)) and not first.seen("nan_origin", (3, 0, 0))


def test_elements_kept_are_bounded():
    observations = Observations()
    observations.add("uninitialised_read", "error", site(), elements=np.arange(MAX_ELEMENTS + 10))
    [finding] = observations.findings(NamedLaunch())
    assert finding.elements.size == MAX_ELEMENTS


def test_no_observations_no_findings():
    assert Observations().findings(NamedLaunch()) == []
