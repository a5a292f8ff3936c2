"""Insights in a real browser at 1440 × 900 (issue #13): the charts are drawn, inside the
screen's width, with the numbers computed by hand for tests/insights_history.py (the same ones
tests/insights/selectors/test_insights.py asserts), and each equals its table."""

from __future__ import annotations

import pytest

from tests.e2e.support import screenshot, sign_in
from tests.e2e.test_csp import RECORD_VIOLATIONS
from tests.factories import member
from tests.insights_history import build_history

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def svg_values(page, chart: str) -> list[tuple[str, str, float]]:
    """(series, label, value) of each bar the chart drew, where it drew something visible."""
    return page.evaluate(
        """(chart) => [...document.querySelectorAll(`#svg-${chart} rect.bar`)].map((r) => {
            return [r.dataset.series, r.dataset.label, Number(r.dataset.value)];
        })""",
        chart,
    )


def table_values(page, chart: str) -> list[list[str]]:
    return page.evaluate(
        """(chart) => [...document.querySelectorAll(`#table-${chart} tbody tr`)].map((row) =>
            [...row.querySelectorAll('td')].map((td) => td.dataset.value))""",
        chart,
    )


def test_the_charts_draw_the_hand_computed_numbers(browser, server):
    world = build_history()
    viewer = member(world.project, "viewer")
    context = browser.new_context(base_url=server.url, viewport={"width": 1440, "height": 900})
    context.set_default_timeout(10_000)
    context.add_init_script(RECORD_VIOLATIONS)  # the pages run under the strict CSP
    try:
        page = context.new_page()
        sign_in(page, viewer)
        # From the board's header, as a person gets there.
        page.goto(f"/p/{world.project.slug}/")
        with page.expect_navigation():
            page.click("a.insights-link")
        assert page.url.endswith(f"/p/{world.project.slug}/insights/")
        page.goto(f"/p/{world.project.slug}/insights/?from=2026-01-05&to=2026-01-07")
        page.wait_for_selector("#svg-cfd")

        # Every chart is drawn (a box on screen) and fits the width: no sideways scrolling.
        boxes = page.evaluate(
            """() => [...document.querySelectorAll('svg.chart-svg')].map((svg) => {
                const box = svg.getBoundingClientRect();
                return [svg.id, box.width, box.height];
            })"""
        )
        assert [name for name, _, _ in boxes] == [
            "svg-cfd",
            "svg-time_in_state",
            "svg-throughput",
            "svg-lead_cycle",
            "svg-review_rounds",
            "svg-cost_per_day",
            "svg-alerts",
        ]
        assert all(width > 300 and height > 100 for _, width, height in boxes)
        assert page.evaluate("document.documentElement.scrollWidth") <= 1440

        # The CFD: one layer per state that held a task, bottom-up, with its counts per day.
        layers = page.evaluate(
            """() => [...document.querySelectorAll('#svg-cfd path.layer')].map((p) =>
                [p.dataset.series, p.dataset.values])"""
        )
        assert layers == [
            ["MERGED", "0 1 2"],
            ["APPROVED", "0 1 0"],
            ["REJECTED", "1 0 0"],
            ["BLOCKED", "0 0 1"],
            ["DRAFT", "1 1 1"],
        ]
        # Throughput: one bar a day, equal to the table.
        assert svg_values(page, "throughput") == [
            ["merged", "01-05", 0],
            ["merged", "01-06", 1],
            ["merged", "01-07", 1],
        ]
        assert [row[1] for row in table_values(page, "throughput")] == ["0", "1", "1"]
        # Lead and cycle time percentiles (seconds): p50 and p90 of 27 h and 26 h, 25 h and 24.5 h.
        assert svg_values(page, "lead_cycle") == [
            ["p50", "lead time", 95400],
            ["p50", "cycle time", 89100],
            ["p90", "lead time", 96840],
            ["p90", "cycle time", 89820],
        ]
        assert table_values(page, "lead_cycle") == [
            ["lead time", "2", "95400.0", "96840.0", "97200.0"],
            ["cycle time", "2", "89100.0", "89820.0", "90000.0"],
        ]
        assert page.inner_text("#table-lead_cycle tbody tr:first-child td:nth-child(3)") == (
            "1d 02h"
        )
        # Review rounds: one task approved at the first review, one at the second.
        assert svg_values(page, "review_rounds") == [["approvals", "1", 1], ["approvals", "2", 1]]
        # Time in state: the p90 bars hold the table's p90 column.
        p90 = [value for series, _, value in svg_values(page, "time_in_state") if series == "p90"]
        table = table_values(page, "time_in_state")
        assert p90 == [float(row[3] or 0) for row in table]
        assert p90[0] == 212760  # DRAFT
        # The per-agent table: coder-1's two claims and its 50 % approval rate.
        agents = {row[0]: row for row in table_values(page, "agents")}
        assert agents["coder-1"][2:5] == ["2", "2", "50.0"]
        # A chart's tooltip names its value.
        title = page.text_content("#svg-throughput rect.bar:nth-of-type(2) title")
        assert title == "01-06 · merged: 1 tasks"
        screenshot(page, "insights")
        assert page.evaluate("window.__cspViolations") == []

        # An agent's page, from the board's agents panel.
        page.goto(f"/p/{world.project.slug}/")
        with page.expect_navigation():
            page.click('#agents a.agent-id:text-is("coder-3")')
        assert page.url.endswith(f"/p/{world.project.slug}/agents/coder-3/")
        history = page.inner_text("#agent-history")
        assert "blocked" in history and "claimed" in history
        assert page.evaluate("window.__cspViolations") == []
    finally:
        context.close()
