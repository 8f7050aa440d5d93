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


def _window(artist) -> object:  # type: ignore[no-untyped-def]
    return artist.get_window_extent(artist.figure.canvas.get_renderer())


def _attention_trace():  # type: ignore[no-untyped-def]
    import triton

    import kernel_nb
    from tests.engine import kernels as k

    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 128, 16), dtype=np.float32)
    kk, v, out = q.copy(), q.copy(), np.zeros_like(q)
    with kernel_nb.interpret() as session:
        k.causal_attention_fwd[(triton.cdiv(128, 32), 2)](
            q, kk, v, out, 128, 0.25, D=16, BLOCK_M=32, BLOCK_N=32
        )
    return session.trace


def test_the_title_is_whole_and_the_heatmap_at_the_left_with_square_cells() -> None:
    trace = _attention_trace()
    launch = trace[0]
    stmt = next(s.id for s in launch.statements if s.name == "acc" and s.line == max(
        t.line for t in launch.statements if t.name == "acc"))  # fmt: skip
    figure = static.selected_figure(trace, 0, (3, 1, 0), stmt, ())
    box = figure.bbox
    (title,) = figure.texts
    assert "causal_attention_fwd" in title.get_text() and "acc" in title.get_text()
    extent = _window(title)
    # the long title fits in the image: it used to be centred over the heatmap and cut off
    assert box.x0 <= extent.x0 and extent.x1 <= box.x1 and extent.y1 <= box.y1
    heatmap, bar = figure.axes
    where = _window(heatmap)
    assert where.x0 < 0.1 * box.width  # at the left, not centred in the figure
    assert abs(where.width - where.height / 32 * 16) < 1  # 32 x 16 cells, square
    assert where.y1 < extent.y0  # below the title
    assert _window(bar).x0 > where.x1  # the colour bar beside it
    png = static.render_png(trace, 0, (3, 1, 0), stmt, ())
    import io

    from matplotlib.image import imread

    assert imread(io.BytesIO(png)).shape[:2] == (int(box.height), int(box.width))


def test_a_strip_takes_a_short_image_and_a_thin_matrix_stays_visible() -> None:
    trace = _attention_trace()
    launch = trace[0]
    m_i = next(s.id for s in launch.statements if s.name == "m_i")
    strip = static.selected_figure(trace, 0, (0, 0, 0), m_i, ())
    assert strip.bbox.height < 0.5 * static.selected_figure(trace, 0, (0, 0, 0), -1, ()).bbox.height
    heatmap = strip.axes[0]
    assert _window(heatmap).width > 0.6 * strip.bbox.width
    # a 2 x 4096 value: square cells would make it a fraction of a pixel high
    fig = Figure(figsize=(7, 3.4), dpi=80)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    ax, _ = static._placed(fig, (2, 4096), 0, (560, 240), 1.0)
    assert _window(ax).height >= 39
