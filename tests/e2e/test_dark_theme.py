"""Dark mode themes every surface (issue 25): with the system's dark scheme, no visible box of
the board, its drawer (fields, forms, the diff), or the other pages a person reads is painted
light — the drawer was white."""

from __future__ import annotations

import pytest
from django.utils import timezone

from tests.e2e.support import open_board, sign_in
from tests.lifecycle import World

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# Every element in view with a background (or a fill, in the SVG) lighter than a relative
# luminance of 0.3: a light surface on a dark page. Text colours are axe's business.
LIGHT_SURFACES = """() => {
    const lum = (c) => {
        const m = c.match(/rgba?\\(([^)]+)\\)/);
        if (!m) return null;
        const [r, g, b, a = 1] = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
        if (a < 0.5) return null;
        const f = (v) => {
            v /= 255;
            return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
        };
        return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const light = [];
    for (const el of document.querySelectorAll('body *')) {
        const r = el.getBoundingClientRect();
        if (!r.width || !r.height || r.right < 0 || r.bottom < 0) continue;
        if (r.left > innerWidth || r.top > innerHeight * 3) continue;
        const style = getComputedStyle(el);
        if (style.visibility === 'hidden' || style.display === 'none') continue;
        // In the SVG, the boxes of the dependency graph are surfaces; a chart's marks are data.
        if (el instanceof SVGElement && !el.matches('.node rect')) continue;
        const paint = el instanceof SVGElement ? style.fill : style.backgroundColor;
        const l = lum(paint);
        if (l !== null && l > 0.3) {
            const name = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '');
            light.push(`${name}.${[...el.classList].join('.')} ${paint}`);
        }
    }
    return [...new Set(light)];
}"""


@pytest.fixture
def world():
    world = World(now=timezone.now())
    world.sprint_started()
    world.unclaimed("T-next", sprint_scope="planned", description="Parse the sprint file")
    world.blocked("T-blocked", sprint_scope="planned", description="Which timezone?")
    world.change_summary("T-blocked")
    return world


def test_dark_mode_paints_no_surface_light(browser, server, world):
    context = browser.new_context(
        base_url=server.url, viewport={"width": 1440, "height": 900}, color_scheme="dark"
    )
    try:
        page = context.new_page()
        sign_in(page, world.admin)
        open_board(page, world.project.slug)
        assert page.evaluate(LIGHT_SURFACES) == []
        page.click('.card[data-key="T-blocked"]')
        page.wait_for_selector('#drawer:not([hidden]) .drawer-body[data-key="T-blocked"]')
        for details in page.locator("#drawer details").all():
            details.evaluate("d => d.open = true")
        assert page.evaluate(LIGHT_SURFACES) == []
        light = {}
        for path in ("inbox", "insights/", "activity/", "graph/", "settings", "plan/", "agents"):
            page.goto(f"/p/{world.project.slug}/{path}")
            light[path] = page.evaluate(LIGHT_SURFACES)
        page.goto("/")
        light["projects"] = page.evaluate(LIGHT_SURFACES)
        assert {path: found for path, found in light.items() if found} == {}
    finally:
        context.close()
