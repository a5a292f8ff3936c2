"""Server-rendered SVG charts for the insights page (issue #13; docs/decisions.md "Insights").

No chart library and no script: each chart is an `<svg role="img">` with a title and a
description, every drawn value carries `data-value` and a `<title>` tooltip, and the same
numbers stand in a table next to it (and in its CSV). Colours come from CSS classes
(`s-<series>`), so dark mode and contrast live in the stylesheet; colour is never the only
signal (legend text, tooltips, the table).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT = 720, 260
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 12, 44
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
MAX_X_LABELS = 12
X_CHAR, X_CHAR_SMALL = 6.5, 5.5  # px an x label's character takes, normal and `small`

# Durations are drawn in the largest unit that keeps the axis readable (tables keep seconds).
UNITS = (("d", 86_400), ("h", 3_600), ("min", 60), ("s", 1))


@dataclass(frozen=True)
class Series:
    name: str
    values: list[float]
    css: str = ""

    @property
    def css_class(self) -> str:
        return "s-" + (self.css or self.name).lower().replace("_", "-")


def duration_unit(largest: float) -> tuple[str, int]:
    for name, seconds in UNITS:
        if largest >= 2 * seconds:
            return name, seconds
    return "s", 1


def _nice_max(value: float) -> float:
    """The axis top: 1, 2 or 5 × 10^k at or above `value` (at least 1)."""
    if value <= 1:
        return 1
    exponent = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * exponent:
            return step * exponent
    return 10 * exponent


def _number(value: float) -> str:
    return f"{value:g}" if value == int(value) else f"{value:.1f}"


def _divisions(top: float) -> int:
    """Grid lines that land on round numbers: 1 → halves, 2 → quarters, 5 and 10 → fifths."""
    leading = round(top / 10 ** math.floor(math.log10(top)))
    return {1: 2, 2: 4}.get(leading, 5)


def _frame(
    chart_id: str, title: str, description: str, top: float, unit: str, body, extra_rows: int = 0
) -> SafeString:
    n = _divisions(top)
    ticks = format_html_join(
        "",
        '<line class="grid" x1="{}" x2="{}" y1="{}" y2="{}"></line>'
        '<text class="y-label" x="{}" y="{}" text-anchor="end">{}</text>',
        (
            (LEFT, WIDTH - RIGHT, y, y, LEFT - 6, y + 4, _number(top * i / n))
            for i in range(n + 1)
            for y in [round(TOP + PLOT_H - PLOT_H * i / n, 1)]
        ),
    )
    return format_html(
        '<svg class="chart-svg" id="svg-{id}" viewBox="0 0 {w} {h}" role="img" '
        'aria-labelledby="{id}-title {id}-desc" preserveAspectRatio="xMinYMin meet">'
        '<title id="{id}-title">{title}</title><desc id="{id}-desc">{desc}</desc>'
        '<g class="axis">{ticks}<text class="unit" x="{ux}" y="{uy}">{unit}</text></g>{body}</svg>',
        id=chart_id,
        w=WIDTH,
        h=HEIGHT + extra_rows * LEGEND_ROW,
        title=title,
        desc=description,
        ticks=ticks,
        ux=4,
        uy=TOP + 4,
        unit=unit,
        body=body,
    )


def _x_labels(labels: list[str], centre) -> SafeString:
    every = max(1, math.ceil(len(labels) / MAX_X_LABELS))
    shown = [(i, label) for i, label in enumerate(labels) if i % every == 0 or i == len(labels) - 1]
    # Long labels (state names) would run into each other: smaller and ellipsed past the slot.
    room = PLOT_W / max(1, len(shown))
    fits = max((len(label) for _, label in shown), default=0) * X_CHAR <= room
    rows = []
    for i, label in shown:
        short = fits or len(label) * X_CHAR_SMALL <= room
        text = label if short else label[: int(room / X_CHAR_SMALL) - 1] + "…"
        x, anchor = round(centre(i), 1), "middle"
        # An area chart's first and last labels sit on the plot's edges: centred, they would
        # be cut by the drawing's border, so they hang inwards instead.
        half = len(text) * (X_CHAR if fits else X_CHAR_SMALL) / 2
        if x + half > WIDTH - 2:
            x, anchor = WIDTH - 2, "end"
        elif x - half < 2:
            x, anchor = 2, "start"
        rows.append(("" if fits else " small", x, HEIGHT - BOTTOM + 16, anchor, text, label))
    return format_html_join(
        "",
        '<text class="x-label{}" x="{}" y="{}" text-anchor="{}">{}<title>{}</title></text>',
        rows,
    )


LEGEND_ROW = 16  # px between legend rows
LEGEND_CHAR = 7.5  # px a legend character may take (the legend's font, upper case included)


def _legend(series: list[Series]) -> tuple[SafeString, int]:
    """The legend under the plot, each entry as wide as its name (READY_FOR_REVIEW is three
    times CLAIMED), wrapped onto more rows when a row is full; and the rows it needs beyond
    the first (the drawing grows by that much)."""
    items, x, row = [], LEFT, 0
    for s in series:
        width = 14 + len(s.name) * LEGEND_CHAR + 16
        if x > LEFT and x + width > WIDTH - RIGHT:
            x, row = LEFT, row + 1
        y = HEIGHT - 14 + row * LEGEND_ROW
        items.append((s.css_class, x, y, x + 14, y + 9, s.name))
        x += width
    html = format_html_join(
        "",
        '<g class="legend-item {}"><rect x="{}" y="{}" width="10" height="10"></rect>'
        '<text x="{}" y="{}">{}</text></g>',
        ((css, round(rx, 1), ry, round(tx, 1), ty, name) for css, rx, ry, tx, ty, name in items),
    )
    return html, row


def bars(
    chart_id: str,
    title: str,
    labels: list[str],
    series: list[Series],
    *,
    stacked: bool = False,
    unit: str = "",
    durations: bool = False,
) -> SafeString:
    """Vertical bars, one group (or stack) per label; one `rect.bar` per value, zeros included
    (height 0), so the drawing holds exactly the table's cells."""
    scale, shown_unit = 1, unit
    if durations:
        largest = max((v for s in series for v in s.values), default=0)
        shown_unit, scale = duration_unit(largest)
    if stacked:
        top = max((sum(s.values[i] for s in series) for i in range(len(labels))), default=0)
    else:
        top = max((v for s in series for v in s.values), default=0)
    top = _nice_max(top / scale)
    slot = PLOT_W / max(1, len(labels))
    width = slot * 0.8 / (1 if stacked else max(1, len(series)))
    rects = []
    base = [0.0] * len(labels)
    for k, s in enumerate(series):
        for i, value in enumerate(s.values):
            height = PLOT_H * (value / scale) / top
            x = LEFT + slot * i + slot * 0.1 + (0 if stacked else k * width)
            y = TOP + PLOT_H - height - (base[i] if stacked else 0)
            if stacked:
                base[i] += height
            shown = _number(value / scale) + (f" {shown_unit}" if shown_unit else "")
            rects.append(
                format_html(
                    '<rect class="bar {}" data-series="{}" data-label="{}" data-value="{}" '
                    'x="{}" y="{}" width="{}" height="{}"><title>{} · {}: {}</title></rect>',
                    s.css_class,
                    s.name,
                    labels[i],
                    _number(value),
                    round(x, 1),
                    round(y, 1),
                    round(width, 1),
                    round(height, 1),
                    labels[i],
                    s.name,
                    shown,
                )
            )
    legend, extra_rows = _legend(series) if len(series) > 1 else ("", 0)
    body = format_html(
        "{}{}{}",
        mark_safe("".join(rects)),  # each rect escaped by format_html above
        _x_labels(labels, lambda i: LEFT + slot * (i + 0.5)),
        legend,
    )
    description = "; ".join(
        f"{s.name}: " + ", ".join(f"{labels[i]} {_number(v)}" for i, v in enumerate(s.values))
        for s in series
    )[:1000]
    return _frame(chart_id, title, description, top, shown_unit, body, extra_rows)


def stacked_area(chart_id: str, title: str, labels: list[str], series: list[Series]) -> SafeString:
    """A stacked area (the cumulative flow diagram): the first series at the bottom; each layer
    is a `path.layer` whose `data-values` are its counts at the labels."""
    totals = [sum(s.values[i] for s in series) for i in range(len(labels))]
    top = _nice_max(max(totals, default=0))
    n = len(labels)

    def x(i: int) -> float:
        return LEFT + (PLOT_W * i / (n - 1) if n > 1 else PLOT_W / 2)

    def y(value: float) -> float:
        return round(TOP + PLOT_H - PLOT_H * value / top, 1)

    layers = []
    base = [0.0] * n
    for s in series:
        upper = [base[i] + s.values[i] for i in range(n)]
        if n == 1:  # a single moment: a bar-wide band
            points = [(x(0) - 20, y(upper[0])), (x(0) + 20, y(upper[0]))]
            lower = [(x(0) + 20, y(base[0])), (x(0) - 20, y(base[0]))]
        else:
            points = [(round(x(i), 1), y(upper[i])) for i in range(n)]
            lower = [(round(x(i), 1), y(base[i])) for i in reversed(range(n))]
        path = "M" + " L".join(f"{px},{py}" for px, py in points + lower) + " Z"
        layers.append(
            format_html(
                '<path class="layer {}" data-series="{}" data-values="{}" d="{}">'
                "<title>{}: {}</title></path>",
                s.css_class,
                s.name,
                " ".join(_number(v) for v in s.values),
                path,
                s.name,
                ", ".join(f"{labels[i]} {_number(v)}" for i, v in enumerate(s.values))[:500],
            )
        )
        base = upper
    legend, extra_rows = _legend(series)
    body = format_html(
        "{}{}{}",
        mark_safe("".join(layers)),  # each layer escaped by format_html above
        _x_labels(labels, x),
        legend,
    )
    description = (
        f"Tasks per state at the end of each day, {labels[0]} to {labels[-1]}" if labels else ""
    )
    return _frame(chart_id, title, description, top, "tasks", body, extra_rows)
