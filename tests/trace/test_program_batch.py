"""A batch's programs made at once are the programs the constructor makes, and a trace saved when
`ProgramTrace` lived in `kernel_nb.trace.launch` still loads."""

import dataclasses

import numpy as np

from kernel_nb.trace import Launch, ProgramTrace, Trace
from kernel_nb.trace.columns import Events, RecordBlock, Records, SummaryColumns


def _block(rows: int) -> RecordBlock:
    values = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4)
    return RecordBlock(0, 0, (), (), "fp32", (4,), SummaryColumns.of(values), values, [None] * rows)


def test_a_batch_is_what_the_constructor_makes():
    pids = [(i, 0, 0) for i in range(5)]
    kept = [True, False, True, True, False]
    records, events = [_block(5)], []
    made = ProgramTrace.batch(pids, kept, records, events)
    for row, (pid, keep) in enumerate(zip(pids, kept)):
        expected = ProgramTrace(
            pid, Records.shared(records, row, keep), Events.shared(events, row, keep), kept=keep
        )
        program = made[row]
        # every field set (a field added to ProgramTrace and not to `batch` is an unset slot)
        for f in dataclasses.fields(ProgramTrace):
            mine, theirs = getattr(program, f.name), getattr(expected, f.name)
            if f.name in ("records", "events"):  # lists still to be made: what they will read
                assert type(mine) is type(theirs), f.name
                assert (mine.blocks, mine.row, mine.keep_values) == (
                    theirs.blocks,
                    theirs.row,
                    theirs.keep_values,
                )
                assert mine.blocks is theirs.blocks
            else:
                assert mine == theirs, f.name
        # each reads its own row of the shared block, the values only where kept
        assert len(program.records) == 1 and len(program.events) == 0
        value = program.records[0].value
        if keep:
            np.testing.assert_array_equal(value, records[0].values[row])
        else:
            assert value is None


def test_a_trace_saved_under_the_old_module_loads(tmp_path, monkeypatch):
    launch = Launch(index=0, kernel="k", grid=(1, 1, 1), args=[])
    launch.programs[(0, 0, 0)] = ProgramTrace((0, 0, 0), stdout="hello")
    path = tmp_path / "t.knb"
    Trace([launch]).save(path)
    assert b"kernel_nb.trace.program" in path.read_bytes()
    # the same trace as a version before the move saved it: the class named by its former module
    with monkeypatch.context() as patch:
        patch.setattr(ProgramTrace, "__module__", "kernel_nb.trace.launch")
        Trace([launch]).save(path)
    saved = path.read_bytes()
    assert b"kernel_nb.trace.launch" in saved and b"kernel_nb.trace.program" not in saved
    loaded = Trace.load(path)
    assert type(loaded[0].programs[(0, 0, 0)]) is ProgramTrace
    assert loaded[0].programs[(0, 0, 0)].stdout == "hello"
