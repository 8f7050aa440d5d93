"""Nothing a user passes can kill the process, corrupt an array or run silently wrong.

Each case of `cases.generate` runs in a process of its own (`child.py`) under kernel_nb, and, where
it should succeed and stock Triton can take its values, under stock TRITON_INTERPRET=1 too. A case
passes when its process exits normally; a failed launch left every array bit-identical and raised
a kernel_nb error or a TypeError/ValueError whose message is one line naming the kernel and the
argument (or grid) at fault; a successful launch gave what numpy and stock give; and, for the
memory cases, the launch's peak memory stayed within the budget, the arguments and a fixed margin
(`outcomes.problems_of`). `--fuzz-long` adds ten times as many cases.
"""

from __future__ import annotations

import pytest

from tests.fuzz import outcomes as judged
from tests.fuzz.cases import Case, generate, with_id_prefix

SEED = 1717
COUNT = 300


def selected_cases(long: bool = False) -> list[Case]:
    selected = generate(SEED, COUNT)
    if long:
        floor = len(generate(SEED, 0))
        selected += with_id_prefix(generate(SEED + 1, 10 * COUNT)[floor:], "long-")
    return selected


def pytest_generate_tests(metafunc):
    if "case" in metafunc.fixturenames:
        selected = selected_cases(metafunc.config.getoption("fuzz_long", default=False))
        metafunc.parametrize("case", selected, ids=[case.id for case in selected])


@pytest.fixture(scope="module")
def outcomes(request):
    """What came of the cases this run selected (all of them run once, together)."""
    selected = [
        item.callspec.params["case"]
        for item in request.session.items
        if item.module is request.module and "case" in getattr(getattr(item, "callspec", None), "params", {})
    ]
    return judged.run(selected)


def test_case(case, outcomes):
    kernel_nb, stock = outcomes["kernel_nb"], outcomes["stock"]
    problems = judged.problems_of(case, kernel_nb.get(case.id), stock.get(case.id), kernel_nb.get(None, ""))
    assert not problems, f"{case.title}: " + "; ".join(problems)


def test_a_case_that_kills_its_process_is_reported_as_its_exit_signal():
    crash = Case(
        id="crash",
        family="harness",
        kernel="copy_kernel",
        args=(("src_ptr", '__import__("ctypes").string_at(0)'),),
        grid="(1,)",
        expect="ok",
    )
    alive = Case(id="alive", family="harness", kernel="count_kernel", args=(("counter_ptr", "np.zeros(1, np.int32)"),),
                 grid="(3,)", expect="ok", reference='{"counter_ptr": np.array([3], np.int32)}')  # fmt: skip
    results = judged.run([crash, alive])["kernel_nb"]
    assert results["crash"]["exit"] == "signal SIGSEGV"
    assert judged.problems_of(crash, results["crash"], None, "")[0].startswith(
        "the process died (signal SIGSEGV)"
    )
    assert (
        judged.problems_of(alive, results["alive"], None, "") == []
    )  # the next case runs in a process of its own


def test_a_failed_launch_that_changed_an_array_is_reported():
    case = Case(
        id="x", family="harness", kernel="copy_kernel", args=(), grid="(1,)", expect="error", culprits=("n",)
    )
    error = {"class": "ArgumentError", "module": "kernel_nb.engine.arrays", "bases": ["ArgumentError", "TypeError"],
             "message": "copy_kernel: argument n is 2**70; pass an int64"}  # fmt: skip
    got = {"exit": "ok", "stderr": "", "result": {"changed": ["dst_ptr"], "error": error}}
    assert judged.problems_of(case, got, None, "") == ["the failed launch changed dst_ptr"]
    got["result"]["changed"] = []
    assert judged.problems_of(case, got, None, "") == []
    error["message"] = "copy_kernel: bad argument\nplease pass another"
    assert judged.problems_of(case, got, None, "") == [
        "the message has 2 lines (ArgumentError: copy_kernel: bad argument)",
        "the message names none of n (ArgumentError: copy_kernel: bad argument)",
    ]
