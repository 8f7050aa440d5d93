"""The engine: runs a Triton launch on the CPU program by program, recording every statement and
checking every memory access.

The shared core is `launch` (the Engine: bind, snapshot, pick a strategy, fall back, replay),
`serial` (the grid loop), `recorder`, the memory `guard`, `arith`, `args`, `rewrite`, `patches`,
`addresses` and the compat layer `triton_compat`; `batched/` is the batched strategy, built on the
core. The rest of kernel_nb imports this face, `args`, `rewrite` and
`triton_compat`, not the other modules; `kernel_globals` and `jit_functions` describe what a
kernel's source needs besides itself.
"""

from kernel_nb.engine.kernel_globals import jit_functions, kernel_globals
from kernel_nb.engine.launch import Engine
from kernel_nb.engine.patches import NamespaceSnapshot

__all__ = ["Engine", "NamespaceSnapshot", "jit_functions", "kernel_globals"]
