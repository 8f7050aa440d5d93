"""A batch's programs made at once are the programs the constructor makes, and a trace saved when
`ProgramTrace` lived in `kernel_nb.trace.launch` still loads."""

import dataclasses
import pickle

import numpy as np

from kernel_nb.trace import BatchPrograms, Launch, ProgramTable, ProgramTrace, Trace
from kernel_nb.trace.columns import Events, RecordBlock, Records, SummaryColumns


def _block(rows: int) -> RecordBlock:
    values = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4)
    return RecordBlock(0, 0, (), (), "fp32", (4,), SummaryColumns.of(values), values, [None] * rows)


def test_a_batch_is_what_the_constructor_makes():
    pids = [(i, 0, 0) for i in range(5)]
    kept = [True, False, True, True, False]
    records, events = [_block(5)], []
    made = BatchPrograms(pids, np.array(kept), records, events)
    assert len(made) == 5 and not made._made  # nothing made until asked for
    for row, (pid, keep) in enumerate(zip(pids, kept)):
        expected = ProgramTrace(
            pid, Records.shared(records, row, keep), Events.shared(events, row, keep), kept=keep
        )
        program = made[row]
        assert made[row] is program  # made once
        # every field set (a field added to ProgramTrace and not to `BatchPrograms` is an unset slot)
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


def test_a_cut_program_keeps_no_values_whether_made_before_or_after():
    pids = [(i, 0, 0) for i in range(4)]
    records = [_block(4)]
    made = BatchPrograms(pids, np.ones(4, bool), records, [])
    early = made[1]  # made while kept
    made.cut(np.array([1, 2]))
    assert made.kept_now().tolist() == [True, False, False, True]
    for row in (1, 2):
        assert not made[row].kept and made[row].records[0].value is None
    assert made[1] is early
    np.testing.assert_array_equal(made[3].records[0].value, records[0].values[3])


def test_a_table_makes_the_programs_of_its_rows_when_asked_for():
    pids = [(i, 0, 0) for i in range(6)]
    batch = BatchPrograms(pids, np.ones(6, bool), [_block(6)], [])
    table = ProgramTable([((9, 0, 0), ProgramTrace((9, 0, 0), stdout="own"))])
    table.add_rows(batch, np.array([4, 1, 5]))
    assert list(table) == [(9, 0, 0), (4, 0, 0), (1, 0, 0), (5, 0, 0)] and not batch._made
    assert (0, 0, 0) not in table and (4, 0, 0) in table and len(table) == 4
    assert table[(1, 0, 0)] is batch[1] and list(batch._made) == [1]
    assert table[(9, 0, 0)].stdout == "own"
    table.ordered(lambda pid: pid[0])
    assert list(table) == [(1, 0, 0), (4, 0, 0), (5, 0, 0), (9, 0, 0)]
    del table[(4, 0, 0)]
    table[(5, 0, 0)] = replaced = ProgramTrace((5, 0, 0), kept=True)
    assert table[(5, 0, 0)] is replaced and len(table) == 3
    assert table == {p: table[p] for p in [(1, 0, 0), (5, 0, 0), (9, 0, 0)]}


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


def test_a_table_is_saved_as_the_dict_of_its_programs():
    batch = BatchPrograms([(i, 0, 0) for i in range(3)], np.array([True, False, True]), [_block(3)], [])
    table = ProgramTable()
    table.add_rows(batch)
    loaded = pickle.loads(pickle.dumps(table))
    assert type(loaded) is dict and list(loaded) == list(table)
    assert [p.kept for p in loaded.values()] == [True, False, True]
    np.testing.assert_array_equal(loaded[(2, 0, 0)].records[0].value, batch.records[0].values[2])


def test_rows_added_are_entered_when_the_table_is_first_read_in_the_order_they_came():
    first = BatchPrograms([(i, 0, 0) for i in range(3)], np.ones(3, bool), [_block(3)], [])
    second = BatchPrograms([(i, 1, 0) for i in range(2)], np.ones(2, bool), [_block(2)], [])
    table = ProgramTable()
    table.add_rows(first, np.array([2, 0]))
    table.add_rows(second)
    table.add_rows(first, np.array([], np.int64))  # nothing: no entry, no batch held for it
    assert table._entries == {}  # not entered yet
    table[(7, 7, 0)] = own = ProgramTrace((7, 7, 0))  # after the rows before it
    table.add_rows(first, np.array([1]))
    assert list(table) == [(2, 0, 0), (0, 0, 0), (0, 1, 0), (1, 1, 0), (7, 7, 0), (1, 0, 0)]
    assert table[(1, 1, 0)] is second[1] and table[(7, 7, 0)] is own and table[(1, 0, 0)] is first[1]
    assert len(table._batches) == 3
