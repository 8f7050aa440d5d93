"""The static fallback: what a notebook without the widget's JavaScript shows."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from kernel_nb.view import static


def test_a_scalar_is_its_number_and_an_array_a_heatmap() -> None:
    ax = Figure().add_subplot()
    static.draw_selected(ax, np.array(3, np.int32), "k pid=(0, 0, 0) s")
    assert [t.get_text() for t in ax.texts] == ["k pid=(0, 0, 0) s\n= 3"] and not ax.images
    ax = Figure().add_subplot()
    static.draw_selected(ax, np.arange(4, dtype=np.float32).reshape(2, 2), "k pid=(0, 0, 0) a")
    assert len(ax.images) == 1


def test_no_value_says_why() -> None:
    ax = Figure().add_subplot()
    static.draw_selected(ax, None, "k: this program did not run")
    assert [t.get_text() for t in ax.texts] == ["k: this program did not run"]


def test_with_a_shadow_the_png_shows_the_error_beside_the_value() -> None:
    import io

    import triton
    from matplotlib.image import imread

    import kernel_nb
    from kernel_nb.trace import COMPANION_KINDS
    from tests.engine import shadow_kernels as k

    rng = np.random.default_rng(0)
    m, n, d, bm = 48, 16, 8, 16
    x = (10 + rng.random((m, d))).astype(np.float32)
    y = (x[:n] + 0.01 * rng.standard_normal((n, d))).astype(np.float32)
    out = np.zeros((m, n), np.float32)
    with kernel_nb.interpret(shadow="fp64", budget_bytes=24 << 10) as session:
        k.gram_distances[(triton.cdiv(m, bm),)](x, y, out, m, N=n, D=d, BM=bm)
    launch = session.trace[0]
    stmt = next(s.id for s in launch.statements if s.name == "d" and s.kind not in COMPANION_KINDS)
    last = launch.pid_of(2)  # past the budget: replayed with its shadow
    assert not launch.programs[last].kept
    for pid in (launch.pid_of(0), last):
        value, _, error = static._selected(session.trace, 0, pid, stmt, ())
        assert np.array_equal(value, launch.precision(pid, "d").value)
        assert np.array_equal(error, launch.precision(pid, "d").ulps)
        png = imread(io.BytesIO(static.render_png(session.trace, 0, pid, stmt, ())))
        assert png.shape[1] == 12 * 80  # value and error side by side, at 80 dpi
    # without a shadow: the value alone
    with kernel_nb.interpret() as plain:
        k.gram_distances[(triton.cdiv(m, bm),)](x, y, out, m, N=n, D=d, BM=bm)
    stmt = next(s.id for s in plain.trace[0].statements if s.name == "d")
    assert static._selected(plain.trace, 0, plain.trace[0].pid_of(0), stmt, ())[2] is None
    png = imread(io.BytesIO(static.render_png(plain.trace, 0, plain.trace[0].pid_of(0), stmt, ())))
    assert png.shape[1] == 7 * 80
