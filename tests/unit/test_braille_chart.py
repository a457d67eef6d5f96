"""The metric panels' braille chart, as a pure function: layout, axes, lines and colours."""

from __future__ import annotations

import numpy as np

from cockpit.ui.widgets.run.braille import AXIS, BLANK, POINT, Chart, Series, render


def text(rows) -> list[str]:
    return ["".join(t for t, _ in row) for row in rows]


def dots(line: str) -> int:
    """How many braille dots a row of the canvas has lit."""
    return sum(bin(ord(c) - 0x2800).count("1") for c in line if 0x2800 < ord(c) <= 0x28FF)


def test_every_row_is_exactly_the_width_asked_for():
    x = np.arange(1, 101, dtype=float)
    chart = Chart([Series(x, np.sin(x / 7))], xlim=(1, 100), ylim=(-1, 1),
                  xticks=[(25, "25"), (50, "50"), (75, "75"), (100, "100")],
                  yticks=[(-1.0, "-1.0"), (0.0, "0.0"), (1.0, "1.0")])
    for width, height in ((40, 12), (78, 20), (9, 4)):
        rows = render(chart, width, height)
        assert len(rows) == height
        assert all(sum(len(t) for t, _ in row) == width for row in rows), (width, height)


def test_y_ticks_are_labelled_on_the_axis_and_x_ticks_marked_and_labelled_under_it():
    x = np.array([0.0, 100.0])
    chart = Chart([Series(x, np.array([0.0, 1.0]))], xlim=(0, 100), ylim=(0, 1),
                  xticks=[(0, "0"), (50, "50"), (100, "100")],
                  yticks=[(0.0, "0.0"), (0.5, "0.5"), (1.0, "1.0")])
    lines = text(render(chart, 30, 12))
    canvas, axis, labels = lines[:-2], lines[-2], lines[-1]
    assert canvas[0].startswith("1.0┤") and canvas[-1].startswith("0.0┤")
    assert sum(line.startswith("0.5┤") for line in canvas) == 1
    assert all(line[3] in "┤│" for line in canvas)  # the axis column, under every label
    assert axis.startswith("   └") and axis.count("┬") == 3
    for label in ("0", "50", "100"):
        col = labels.index(label if label != "0" else " 0 ") + (1 if label == "0" else 0)
        assert abs(axis.index("┬", col - 2) - (col + len(label) // 2)) <= 1, (label, axis, labels)


def test_a_rising_line_goes_from_the_bottom_left_to_the_top_right_without_gaps():
    chart = Chart([Series(np.array([0.0, 1.0]), np.array([0.0, 1.0]))], xlim=(0, 1), ylim=(0, 1))
    canvas = text(render(chart, 21, 12))[:-2]  # no y labels: a 1-cell axis column, 20 columns
    assert canvas[-1][1] != " " and canvas[0][-1] != " "
    assert all(dots(line) > 0 for line in canvas)  # every row of the canvas is crossed
    assert canvas[0][1] == " " and canvas[-1][-1] == " "


def test_each_series_wears_its_slot_and_blanks_are_background():
    x = np.arange(10, dtype=float)
    chart = Chart([Series(x, np.zeros(10)), Series(x, np.ones(10))], xlim=(0, 9), ylim=(-1, 2))
    rows = render(chart, 20, 10)
    slots = {slot for row in rows for _, slot in row}
    assert slots == {AXIS, BLANK, 0, 1}
    for row in rows:
        for t, slot in row:
            if slot == BLANK:
                assert t.strip() == ""
            if slot in (0, 1):
                assert all(0x2800 <= ord(c) <= 0x28FF for c in t)


def test_one_point_is_a_visible_mark_and_flat_or_empty_ranges_do_not_fail():
    chart = Chart([Series(np.array([5.0]), np.array([2.0]))], xlim=(4, 6), ylim=(1, 3))
    assert sum(line.count(POINT) for line in text(render(chart, 20, 8))) == 1
    flat = Chart([Series(np.array([1.0, 2.0]), np.array([3.0, 3.0]))], xlim=(1, 1), ylim=(3, 3))
    assert len(render(flat, 20, 8)) == 8
    assert len(render(Chart([], xlim=(0, 1), ylim=(0, 1)), 20, 8)) == 8
