"""What the rewrite reads off a kernel's syntax tree for choosing the strategy: calls, not text."""

import triton
import triton.language as tl

from kernel_nb.engine.rewrite import rewrite


def printing(x_ptr):
    tl.device_print("x", tl.load(x_ptr))


def commented(x_ptr, out_ptr):
    # print(x) and tl.atomic_add(out_ptr, x) while debugging
    x = tl.load(x_ptr)
    tl.store(out_ptr, x)


def counting(x_ptr, out_ptr):
    tl.atomic_add(out_ptr, tl.load(x_ptr))


def stopping(x_ptr):
    breakpoint()


def test_calls_are_read_from_the_syntax_tree():
    facts = {fn.__name__: rewrite(fn, instrument=False) for fn in (printing, commented, counting, stopping)}
    assert facts["printing"].calls_print
    assert not facts["commented"].calls_print and not facts["commented"].uses_atomics
    assert facts["counting"].uses_atomics and not facts["counting"].calls_print
    assert facts["stopping"].breakpoints == ("breakpoint",)
    assert not any(f.calls_inline_asm for f in facts.values())


def test_a_commented_out_print_leaves_the_launch_batched():
    import numpy as np

    import kernel_nb

    kernel = triton.jit(commented)
    x, out = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    with kernel_nb.interpret(strategy="auto") as session:
        kernel[(1,)](x, out)
    assert session.trace[0].strategy == "batched"
    assert out[0] == x[0]
