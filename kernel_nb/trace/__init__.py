"""What an interpreted launch recorded: plain data over numpy arrays.

A `Trace` holds one `Launch` per kernel launch. A launch holds, per program id, the values of
every recorded statement (`Record`), every memory access (`MemoryEvent`) and what the program
printed; launch-wide per-buffer access maps (`BufferMap`); the `Finding`s of the detectors; and,
after a run on the GPU, its `Comparison` and `Divergence`. Nothing here imports Triton or
Jupyter: a trace can be saved, loaded and inspected anywhere.
"""

from kernel_nb.trace.aggregates import Aggregate
from kernel_nb.trace.buffer_map import BufferMap
from kernel_nb.trace.columns import (
    Deferred,
    DeferredSummaries,
    EventBlock,
    Events,
    RecordBlock,
    Records,
    SummaryColumns,
    repeated,
    summary_rows,
)
from kernel_nb.trace.compare import (
    SHOWN,
    ULP_EDGES,
    BufferComparison,
    Comparison,
    Divergence,
    Drift,
    ProgramDivergence,
    StatementDiff,
    Status,
    Tolerance,
    ulp_bucket_labels,
)
from kernel_nb.trace.launch import Launch, Precision, ProgramTrace, Trace
from kernel_nb.trace.program import BatchPrograms, ProgramTable
from kernel_nb.trace.records import (
    COMPANION_KINDS,
    LAUNCH_ERROR,
    ArgumentInfo,
    Artifacts,
    Finding,
    MemoryEvent,
    Pid,
    Record,
    Severity,
    SourceInfo,
    Statement,
    Summary,
    as_pid,
)
from kernel_nb.trace.row_forms import GatheredRows, TileRows
from kernel_nb.trace.statement_errors import StatementErrors

__all__ = [
    "COMPANION_KINDS",
    "LAUNCH_ERROR",
    "SHOWN",
    "ULP_EDGES",
    "Aggregate",
    "ArgumentInfo",
    "Artifacts",
    "BatchPrograms",
    "BufferComparison",
    "BufferMap",
    "Comparison",
    "Deferred",
    "DeferredSummaries",
    "Divergence",
    "Drift",
    "EventBlock",
    "Events",
    "Finding",
    "GatheredRows",
    "Launch",
    "MemoryEvent",
    "Pid",
    "Precision",
    "ProgramDivergence",
    "ProgramTable",
    "ProgramTrace",
    "Record",
    "RecordBlock",
    "Records",
    "Severity",
    "SourceInfo",
    "Statement",
    "StatementDiff",
    "StatementErrors",
    "Status",
    "Summary",
    "SummaryColumns",
    "TileRows",
    "Tolerance",
    "Trace",
    "as_pid",
    "repeated",
    "summary_rows",
    "ulp_bucket_labels",
]
