"""`ast_nodes.walk` and `fix_locations` give what `ast.walk` and `ast.fix_missing_locations` give,
on kernels as the rewrite leaves them (new nodes without locations among parsed ones)."""

import ast
import copy
import inspect
import textwrap

import pytest

from kernel_nb.engine import rewrite
from kernel_nb.engine.ast_nodes import fix_locations, walk
from tests.engine import kernels

KERNELS = [
    kernels.add_kernel,
    kernels.softmax_kernel,
    kernels.matmul_kernel,
    kernels.layer_norm_fwd,
    kernels.causal_attention_fwd,
]


def _rewritten_tree(jit):
    """The kernel's tree as `rewrite` builds it, before locations are filled in."""
    fn = jit.fn
    lines, start = inspect.getsourcelines(fn)
    tree = ast.parse("\n" * (start - 1) + textwrap.dedent("".join(lines)))
    fdef = tree.body[0]
    fdef.decorator_list = []
    instrumenter = rewrite._Instrumenter(True, {start + 3})
    _, instrumenter.reads, instrumenter.locals = rewrite.name_facts(fdef)
    fdef.body = instrumenter.block(fdef.body)
    return tree


@pytest.mark.parametrize("jit", KERNELS, ids=lambda k: k.fn.__name__)
def test_walk_gives_ast_walks_nodes_in_its_order(jit):
    tree = _rewritten_tree(jit)
    assert [id(n) for n in walk(tree)] == [id(n) for n in ast.walk(tree)]
    for stmt in tree.body[0].body:
        assert [id(n) for n in walk(stmt)] == [id(n) for n in ast.walk(stmt)]


@pytest.mark.parametrize("jit", KERNELS, ids=lambda k: k.fn.__name__)
def test_fix_locations_fills_in_what_ast_fills_in(jit):
    tree = _rewritten_tree(jit)
    missing = [n for n in ast.walk(tree) if "lineno" in n._attributes and not hasattr(n, "lineno")]
    assert missing  # the rewrite's own nodes have none yet
    theirs = ast.fix_missing_locations(copy.deepcopy(tree))
    ours = fix_locations(tree)
    assert ast.dump(ours, include_attributes=True) == ast.dump(theirs, include_attributes=True)
    compile(ours, "<kernel>", "exec")


def test_fix_locations_keeps_a_node_with_no_end_and_takes_the_parents_end():
    tree = ast.parse("x = f(1)\n")
    call = tree.body[0].value
    call.end_lineno = call.end_col_offset = None
    call.args.append(ast.Name("y", ast.Load()))
    theirs = ast.fix_missing_locations(copy.deepcopy(tree))
    assert ast.dump(fix_locations(tree), include_attributes=True) == ast.dump(theirs, include_attributes=True)
