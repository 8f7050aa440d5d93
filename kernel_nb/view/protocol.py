"""The messages between the viewer's Python side and its ESM (js/viewer.js).

Widget state holds only `ViewerMeta`: small, launch-wide metadata. Everything per program
travels on demand as a custom message: the browser sends a request, Python answers with one
reply whose `id` echoes the request's, plus binary buffers for array data. Replies never carry
NaN (JSON cannot): missing statistics are null.
"""

from __future__ import annotations

from typing import Literal, TypedDict

# Each reply's buffers stay far below the 10 MiB websocket cap (a 1024x1024 float32 view is 4 MiB).
MAX_VALUE_BYTES = 4 * 1024 * 1024
# Per axis of a drawn view: wider values are reduced block-wise, with a note saying so.
MAX_SIDE = 4096
# Categorical access maps are one byte per drawn element.
MAX_MAP_CELLS = 1024 * 1024


class SummaryPayload(TypedDict):
    min: float | None
    max: float | None
    mean: float | None
    nan: int
    inf: int
    size: int


class PrecisionMeta(TypedDict):
    """A statement's values against the fp64 shadow, over every program (kernel_nb.view.precision)."""

    dtype: str  # the real type whose ulps count the errors ("fp32", "bf16", ...)
    ulps: float | None  # the largest error of its values, in ulps (None: no finite one)
    own_ulps: float | None  # the largest error its own arithmetic made, given its operands
    nonfinite: int  # error elements that are NaN or Inf (a NaN, or an infinity on one side only)
    own_nonfinite: int


class StatementMeta(TypedDict):
    """A recorded statement. A shadow run's companion statements are not listed: the statement
    they go with carries their worst errors (`precision`), its records their records' indices."""

    id: int  # Statement.id: the statements listed are not indexed by it
    file: str
    line: int
    name: str
    function: str
    kind: str
    precision: PrecisionMeta | None  # None: no shadow, or no float value recorded


class SourceMeta(TypedDict):
    function: str
    file: str
    first_line: int
    text: str


class ArgMeta(TypedDict):
    name: str
    kind: str
    dtype: str
    shape: list[int]


class BufferMeta(TypedDict):
    arg: str
    size: int
    shape: list[int]
    written: bool
    never_written: int
    written_more_than_once: int
    oob: int


class FindingTarget(TypedDict):
    """Where a click on a finding takes the view (kernel_nb.view.findings)."""

    pid: list[int]
    stmt: int  # the statement whose value is shown; -1: none of this program
    iteration: list[int]


class _FindingRequired(TypedDict):
    kind: str
    severity: str
    message: str
    pid: list[int] | None
    file: str | None
    line: int | None
    arg: str | None
    elements: int


class FindingMeta(_FindingRequired, total=False):
    iteration: list[int] | None  # the loop iteration, where the finding knows it
    target: FindingTarget | None  # added by kernel_nb.view.findings; None: a launch-wide finding


class WriterMeta(TypedDict):
    pid: list[int] | None  # None: elements no interpreted program wrote
    count: int


class BufferComparisonMeta(TypedDict):
    arg: str
    dtype: str
    shape: list[int]
    size: int
    ok: bool
    line: str
    mismatches: int
    max_abs: float | None
    max_rel: float | None
    max_abs_at: list[int] | None
    max_ulp: int
    ulp_hist: list[int]
    nan_mismatches: int
    inf_mismatches: int
    rtol: float
    atol: float
    policy: str
    written_by: str
    writers: list[WriterMeta]


class ComparisonMeta(TypedDict):
    verdict: str
    ok: bool
    device: str
    kept: str
    tf32: bool
    ulp_labels: list[str]
    buffers: list[BufferComparisonMeta]


class ArtifactsMeta(TypedDict):
    target: str
    stages: list[str]
    sizes: list[int]
    missing: dict[str, str]
    metadata: dict[str, object]
    compiled_for_launch: bool


class StatementDiffMeta(TypedDict):
    seq: int
    stmt: int
    line: int
    name: str
    function: str
    call_path: list[str]
    iteration: list[int]
    dtype: str
    shape: list[int]
    status: str  # match, precision, diverge, missing, skipped (kernel_nb.compare.statements)
    reason: str
    size: int
    mismatches: int
    max_abs: float | None
    lanes: list[int]  # flat lanes shown: the first differing ones, else the first ones
    cpu: list[str]
    gpu: list[str]


class ProgramDivergenceMeta(TypedDict):
    pid: list[int]
    counts: dict[str, int]
    extra: int
    overflow: bool
    rows_total: int
    rows: list[StatementDiffMeta]


class FirstDivergenceMeta(TypedDict):
    pid: list[int]
    seq: int


class DivergenceMeta(TypedDict):
    report: str
    error: str | None
    device: str
    tf32: bool
    first: FirstDivergenceMeta | None
    programs: list[ProgramDivergenceMeta]
    notes: list[str]


class _LaunchRequired(TypedDict):
    index: int
    kernel: str
    grid: list[int]
    num_programs: int
    status: str
    error: str | None
    shadow: str | None  # "fp64" for a launch run with an fp64 shadow (Options.shadow)
    statements: list[StatementMeta]
    sources: list[SourceMeta]
    args: list[ArgMeta]
    buffers: list[BufferMeta]
    findings: list[FindingMeta]
    findings_total: int


class LaunchMeta(_LaunchRequired, total=False):
    comparison: ComparisonMeta | None  # added by kernel_nb.view.compare for compared launches
    divergence: DivergenceMeta | None  # added with it: the statement-by-statement comparison
    artifacts: ArtifactsMeta | None


class PaletteMeta(TypedDict):
    """The colours of values (kernel_nb.view.plot): colormap stops and the special values, as #rrggbb."""

    colormap: list[str]
    nan: str
    posinf: str
    neginf: str
    masked: str
    errormap: list[str]  # colormap stops of errors in ulps (drawn on a log scale)


class _ViewerRequired(TypedDict):
    launches: list[LaunchMeta]


class ViewerMeta(_ViewerRequired, total=False):
    palette: PaletteMeta  # added by kernel_nb.view.state with the comparisons


# Requests (browser → Python). `id` is echoed in the reply so stale replies can be dropped.


class ProgramRequest(TypedDict):
    type: Literal["program"]
    id: int
    launch: int
    pid: list[int]


class _ValueRequired(TypedDict):
    type: Literal["value"]
    id: int
    launch: int
    pid: list[int]
    source: Literal["record", "event"]
    index: int


class ValueRequest(_ValueRequired, total=False):
    field: Literal["values", "indices", "before"]  # events only; default "values"
    axes: list[int]  # the two axes drawn (rank ≥ 3); default the last two
    at: list[int]  # index along every axis; entries of drawn axes are ignored


class _FootprintRequired(TypedDict):
    type: Literal["footprint"]
    id: int
    launch: int
    pid: list[int]
    arg: str


class FootprintRequest(_FootprintRequired, total=False):
    iteration: list[int]  # only the accesses of this loop iteration (and loops inside it); default all


class BufferRequest(TypedDict):
    type: Literal["buffer"]
    id: int
    launch: int
    arg: str


class CompareRequest(TypedDict):
    type: Literal["compare"]
    id: int
    launch: int
    arg: str


class ArtifactRequest(TypedDict):
    type: Literal["artifact"]
    id: int
    launch: int
    stage: str


Request = ProgramRequest | ValueRequest | FootprintRequest | BufferRequest | CompareRequest | ArtifactRequest


# Replies (Python → browser).


class RecordEntry(TypedDict):
    index: int
    stmt: int
    seq: int
    iteration: list[int]
    call_path: list[str]
    dtype: str
    shape: list[int]
    summary: SummaryPayload
    pointer_arg: str | None
    # the indices of its shadow, error and own-error records (COMPANION_KINDS order); [] if none
    companions: list[int]


class EventEntry(TypedDict):
    index: int
    kind: str
    seq: int
    file: str
    line: int
    arg: str | None
    active: int
    lanes: int
    lo: int
    hi: int
    elements: str  # the elements as the table shows them (indices of an n-D argument's shape)


class ProgramReply(TypedDict):
    """A program's records (its shadow run's companion records are not listed: see RecordEntry)."""

    type: Literal["program"]
    id: int
    launch: int
    pid: list[int]
    kept: bool
    records: list[RecordEntry]
    events: list[EventEntry]
    stdout: str
    truncated: int  # records and events left out of a very long program


class Histogram(TypedDict):
    counts: list[int]
    lo: float | None
    hi: float | None


class ValueReply(TypedDict):
    """Buffers: [data (float32 or float64, row-major, `view_shape`), mask (uint8, 1 = active)?]."""

    type: Literal["value"]
    id: int
    label: str
    dtype: str
    shape: list[int]
    axes: list[int]
    at: list[int]
    view_shape: list[int]
    step: list[int]
    format: Literal["f4", "f8"]
    has_mask: bool
    summary: SummaryPayload
    hist: Histogram
    note: str


class MapReply(TypedDict):
    """Buffers: [codes (uint8, row-major, `view_shape`)], each code indexing `legend`."""

    type: Literal["footprint", "buffer"]
    id: int
    arg: str
    shape: list[int]
    size: int
    grid: list[int]  # the 2-D layout before reduction: element offset = row * grid[1] + col
    view_shape: list[int]
    step: list[int]
    legend: list[str]
    counts: list[int]
    oob: list[list[int]]  # [pid x, pid y, pid z, line, first offending element] per refused access
    note: str
    window: list[int]  # [first, last): the view rows the codes cover; rows outside are untouched (0)


class CompareReply(TypedDict):
    """Buffers: [cpu, gpu, |diff| (float32, row-major, `view_shape`), codes (uint8: 0 padding,
    1 within tolerance, 2 out of tolerance)]. `lo`/`hi` span the finite values of both sides."""

    type: Literal["compare"]
    id: int
    arg: str
    dtype: str
    shape: list[int]
    size: int
    grid: list[int]
    view_shape: list[int]
    step: list[int]
    lo: float
    hi: float
    diff_max: float | None
    mismatches: int
    note: str


class ArtifactReply(TypedDict):
    type: Literal["artifact"]
    id: int
    stage: str
    target: str
    text: str
    truncated: int  # characters left out


class ErrorReply(TypedDict):
    type: Literal["error"]
    id: int
    message: str


Reply = ProgramReply | ValueReply | MapReply | CompareReply | ArtifactReply | ErrorReply
