"""Record launches where they really run, and replay any of them on the CPU.

`record` opens a block whose launches run as usual (compiled on the GPU, or under the stock
interpreter) and captures the chosen ones into a `Recording`; `RecordedLaunch.replay` interprets one
with everything recorded and compares it with what really ran.
"""

from kernel_nb.record.capture import DEFAULT_BUDGET, RecordSession, record
from kernel_nb.record.recorded import LeafSpec, RecordedLaunch, Recording
from kernel_nb.record.replay import replay

__all__ = ["DEFAULT_BUDGET", "LeafSpec", "RecordSession", "RecordedLaunch", "Recording", "record", "replay"]
