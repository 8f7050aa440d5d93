// The messages between kernel_nb/view/protocol.py and the viewer, as types only (nothing runs).
// Each interface is the TypedDict of the same name; tests/view/test_protocol_types.py checks that
// they list the same fields, optional where Python's are (`?`). Python's `None` is `null` here.

export interface SummaryPayload {
  min: number | null;
  max: number | null;
  mean: number | null;
  nan: number;
  inf: number;
  size: number;
}

export interface PrecisionMeta {
  dtype: string;
  ulps: number | null;
  own_ulps: number | null;
  nonfinite: number;
  own_nonfinite: number;
}

export interface StatementMeta {
  id: number;
  file: string;
  line: number;
  name: string;
  function: string;
  kind: string;
  precision: PrecisionMeta | null;
}

export interface SourceMeta {
  function: string;
  file: string;
  first_line: number;
  text: string;
}

export interface ArgMeta {
  name: string;
  kind: string;
  dtype: string;
  shape: number[];
}

export interface BufferMeta {
  arg: string;
  size: number;
  shape: number[];
  written: boolean;
  never_written: number;
  written_more_than_once: number;
  oob: number;
}

export interface FindingTarget {
  pid: number[];
  stmt: number;
  iteration: number[];
}

export interface FindingMeta {
  kind: string;
  severity: string;
  message: string;
  pid: number[] | null;
  file: string | null;
  line: number | null;
  arg: string | null;
  elements: number;
  iteration?: number[] | null;
  target?: FindingTarget | null;
}

export interface WriterMeta {
  pid: number[] | null;
  count: number;
}

export interface BufferComparisonMeta {
  arg: string;
  dtype: string;
  shape: number[];
  size: number;
  ok: boolean;
  line: string;
  mismatches: number;
  max_abs: number | null;
  max_rel: number | null;
  max_abs_at: number[] | null;
  max_ulp: number;
  ulp_hist: number[];
  nan_mismatches: number;
  inf_mismatches: number;
  rtol: number;
  atol: number;
  policy: string;
  written_by: string;
  writers: WriterMeta[];
}

export interface ComparisonMeta {
  verdict: string;
  ok: boolean;
  device: string;
  kept: string;
  tf32: boolean;
  ulp_labels: string[];
  buffers: BufferComparisonMeta[];
}

export interface ArtifactsMeta {
  target: string;
  stages: string[];
  sizes: number[];
  missing: Record<string, string>;
  metadata: Record<string, unknown>;
  compiled_for_launch: boolean;
}

export interface StatementDiffMeta {
  seq: number;
  stmt: number;
  line: number;
  name: string;
  function: string;
  call_path: string[];
  iteration: number[];
  dtype: string;
  shape: number[];
  status: string;
  reason: string;
  size: number;
  mismatches: number;
  max_abs: number | null;
  lanes: number[];
  cpu: string[];
  gpu: string[];
}

export interface ProgramDivergenceMeta {
  pid: number[];
  counts: Record<string, number>;
  extra: number;
  overflow: boolean;
  rows_total: number;
  rows: StatementDiffMeta[];
}

export interface FirstDivergenceMeta {
  pid: number[];
  seq: number;
}

export interface DivergenceMeta {
  report: string;
  error: string | null;
  device: string;
  tf32: boolean;
  first: FirstDivergenceMeta | null;
  programs: ProgramDivergenceMeta[];
  notes: string[];
}

export interface LaunchMeta {
  index: number;
  kernel: string;
  grid: number[];
  num_programs: number;
  status: string;
  error: string | null;
  shadow: string | null;
  statements: StatementMeta[];
  sources: SourceMeta[];
  args: ArgMeta[];
  buffers: BufferMeta[];
  findings: FindingMeta[];
  findings_total: number;
  comparison?: ComparisonMeta | null;
  divergence?: DivergenceMeta | null;
  artifacts?: ArtifactsMeta | null;
}

export interface PaletteMeta {
  colormap: string[];
  nan: string;
  posinf: string;
  neginf: string;
  masked: string;
  errormap: string[];
}

export interface ViewerMeta {
  launches: LaunchMeta[];
  palette?: PaletteMeta;
}

// Requests (browser → Python); `id` comes back in the reply.

export interface ProgramRequest {
  type: "program";
  id: number;
  launch: number;
  pid: number[];
}

export interface ValueRequest {
  type: "value";
  id: number;
  launch: number;
  pid: number[];
  source: "record" | "event";
  index: number;
  field?: "values" | "indices" | "before";
  axes?: number[];
  at?: number[];
}

export interface FootprintRequest {
  type: "footprint";
  id: number;
  launch: number;
  pid: number[];
  arg: string;
  iteration?: number[];
}

export interface BufferRequest {
  type: "buffer";
  id: number;
  launch: number;
  arg: string;
}

export interface CompareRequest {
  type: "compare";
  id: number;
  launch: number;
  arg: string;
}

export interface ArtifactRequest {
  type: "artifact";
  id: number;
  launch: number;
  stage: string;
}

export type Request = ProgramRequest | ValueRequest | FootprintRequest | BufferRequest | CompareRequest | ArtifactRequest;

// Replies (Python → browser).

export interface RecordEntry {
  index: number;
  stmt: number;
  seq: number;
  iteration: number[];
  call_path: string[];
  dtype: string;
  shape: number[];
  summary: SummaryPayload;
  pointer_arg: string | null;
  companions: number[];
}

export interface EventEntry {
  index: number;
  kind: string;
  seq: number;
  file: string;
  line: number;
  arg: string | null;
  active: number;
  lanes: number;
  lo: number;
  hi: number;
  elements: string;
}

export interface ProgramReply {
  type: "program";
  id: number;
  launch: number;
  pid: number[];
  kept: boolean;
  records: RecordEntry[];
  events: EventEntry[];
  stdout: string;
  truncated: number;
}

export interface Histogram {
  counts: number[];
  lo: number | null;
  hi: number | null;
}

export interface ValueReply {
  type: "value";
  id: number;
  label: string;
  dtype: string;
  shape: number[];
  axes: number[];
  at: number[];
  view_shape: number[];
  step: number[];
  format: "f4" | "f8";
  has_mask: boolean;
  summary: SummaryPayload;
  hist: Histogram;
  note: string;
}

export interface MapReply {
  type: "footprint" | "buffer";
  id: number;
  arg: string;
  shape: number[];
  size: number;
  grid: number[];
  view_shape: number[];
  step: number[];
  legend: string[];
  counts: number[];
  oob: number[][];
  note: string;
  window: number[];
}

export interface CompareReply {
  type: "compare";
  id: number;
  arg: string;
  dtype: string;
  shape: number[];
  size: number;
  grid: number[];
  view_shape: number[];
  step: number[];
  lo: number;
  hi: number;
  diff_max: number | null;
  mismatches: number;
  note: string;
}

export interface ArtifactReply {
  type: "artifact";
  id: number;
  stage: string;
  target: string;
  text: string;
  truncated: number;
}

export interface ErrorReply {
  type: "error";
  id: number;
  message: string;
}

export type Reply = ProgramReply | ValueReply | MapReply | CompareReply | ArtifactReply | ErrorReply;
