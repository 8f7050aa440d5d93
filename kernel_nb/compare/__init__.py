"""Comparisons of an interpreted launch with its run on the GPU: the tolerance policy, buffer by
buffer, statement by statement, and what in a statement the GPU rounds differently.

An analysis over traces: it reads `kernel_nb.trace` and returns the result values defined there.
"""

from kernel_nb.compare.buffers import (
    MAX_POSITIONS,
    MAX_WRITERS,
    compare_buffer,
    ulp_distance,
    ulp_histogram,
)
from kernel_nb.compare.dot_reach import dot_fed_buffers, dot_fed_stores
from kernel_nb.compare.precision import StatementFacts, facts_of
from kernel_nb.compare.statements import MAX_LANES, RELAXED_FACTOR, Probe, compare_program, decode
from kernel_nb.compare.tolerance import EXACT, TF32, default_tolerance, tolerance_for, uses_tf32_dots
from kernel_nb.trace import ULP_EDGES, BufferComparison, Comparison, Divergence, Tolerance, ulp_bucket_labels

__all__ = [
    "EXACT",
    "MAX_LANES",
    "MAX_POSITIONS",
    "MAX_WRITERS",
    "RELAXED_FACTOR",
    "TF32",
    "ULP_EDGES",
    "BufferComparison",
    "Comparison",
    "Divergence",
    "Probe",
    "StatementFacts",
    "Tolerance",
    "compare_buffer",
    "compare_program",
    "decode",
    "default_tolerance",
    "dot_fed_buffers",
    "dot_fed_stores",
    "facts_of",
    "tolerance_for",
    "ulp_bucket_labels",
    "ulp_distance",
    "ulp_histogram",
    "uses_tf32_dots",
]
