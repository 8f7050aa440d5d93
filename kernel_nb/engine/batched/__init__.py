"""The batched strategy: a launch's programs run together, one numpy call serving them all.

`run` drives the batches; `builder` is the interpreter's builder for values with a leading program
axis, and `language` the parts of triton.language that read values; `tiles` and `access` describe
pointer blocks and accesses without an array per lane; `recorder` (with `loops`, for loops whose
trip count differs between programs, and `offsets`) and `guard` turn batched values and accesses
into the serial strategy's per-program records, events and findings; `intervals` keeps
per-program access ranges.
"""

import numpy.ma  # noqa: F401  # np.unique imports it on first call (numpy >= 2.3): at import, not in a launch

from kernel_nb.engine.batched.builder import BatchUnsupported
from kernel_nb.engine.batched.intervals import NeedsPrecise
from kernel_nb.engine.batched.run import BatchedRun, unsupported_reason

__all__ = ["BatchUnsupported", "BatchedRun", "NeedsPrecise", "unsupported_reason"]
