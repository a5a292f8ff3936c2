"""The insights page's SVG charts (boards/insights/web/charts.py): what is drawn stays inside the
drawing and nothing is drawn over anything else (the legend of eleven states, the edge labels of
the cumulative flow diagram)."""

from __future__ import annotations

import itertools
import re

import pytest

from boards.insights.web import charts
from boards.insights.web.charts import LEGEND_CHAR, WIDTH, Series
from boards.protocol import TASK_STATES


def _viewbox(svg: str) -> tuple[float, float]:
    _, _, w, h = (float(v) for v in re.search(r'viewBox="([^"]+)"', svg).group(1).split())
    return w, h


def _legend(svg: str) -> list[tuple[float, float, str]]:
    """(x, y, name) of each legend entry's text."""
    return [
        (float(x), float(y), name)
        for x, y, name in re.findall(
            r'<g class="legend-item [^"]+">.*?<text x="([\d.]+)" y="([\d.]+)">([^<]+)</text>', svg
        )
    ]


@pytest.mark.parametrize("count", [2, 6, len(TASK_STATES)])
def test_legend_entries_never_overlap_and_stay_inside_the_drawing(count):
    states = list(TASK_STATES)[:count]
    days = [f"11-{d:02d}" for d in range(12, 26)]
    svg = charts.stacked_area("cfd", "Cumulative flow", days, [
        Series(state, [1.0] * len(days)) for state in states
    ])  # fmt: skip
    width, height = _viewbox(svg)
    entries = _legend(svg)
    assert [name for _, _, name in entries] == states
    for (x, y, name), (next_x, next_y, _) in itertools.pairwise(entries):
        if next_y == y:  # the same row: the next entry starts after this one's text
            assert next_x >= x + len(name) * LEGEND_CHAR, (name, x, next_x)
        else:  # a new row, below
            assert next_y > y
    assert all(x + len(name) * LEGEND_CHAR <= width for x, _, name in entries)
    assert all(y <= height for _, y, _ in entries)
    # Eleven states do not fit one row: the drawing grows to hold the rows it needs.
    rows = len({y for _, y, _ in entries})
    assert (rows > 1) == (count == len(TASK_STATES))
    assert height == charts.HEIGHT + (rows - 1) * charts.LEGEND_ROW


def test_the_area_charts_last_label_hangs_inwards():
    days = [f"11-{d:02d}" for d in range(12, 26)]
    svg = charts.stacked_area("cfd", "Cumulative flow", days, [Series("MERGED", [1.0] * 14)])
    labels = re.findall(r'<text class="x-label[^"]*" x="([\d.]+)" y="[\d.]+" text-anchor="(\w+)">'
                        r"([^<]+)<", svg)  # fmt: skip
    first, *_, last = labels
    # The first sits over the y axis's margin, centred; the last would cross the right border.
    assert (float(first[0]), first[1], first[2]) == (charts.LEFT, "middle", "11-12")
    assert (float(last[0]), last[1], last[2]) == (WIDTH - 2, "end", "11-25")
    assert all(anchor == "middle" for _, anchor, _ in labels[:-1])
