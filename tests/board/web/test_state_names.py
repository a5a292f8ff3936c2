"""State names in the board's column headings wrap at their underscores (`breakable`), never
mid-word, and stay plain text for anything that reads them."""

from __future__ import annotations

from django.template import Context, Template

from boards.templatetags.states import breakable


def test_a_state_name_may_break_after_each_underscore_only():
    assert breakable("READY_FOR_REVIEW") == "READY_<wbr>FOR_<wbr>REVIEW"
    assert breakable("SUPERSEDED") == "SUPERSEDED"


def test_what_it_is_given_is_escaped_before_the_breaks_are_added():
    rendered = Template("{% load states %}{{ name|breakable }}").render(
        Context({"name": "<b>A_B</b>"})
    )
    assert rendered == "&lt;b&gt;A_<wbr>B&lt;/b&gt;"
