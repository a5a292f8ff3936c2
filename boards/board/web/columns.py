"""A board column's frame (its heading, count, WIP limit, toggle and "more" line) around its cards.

The frame is `boards/_column.html`, rendered with exactly three names (the column, the filters,
the swimlane grouping) and remembered by this process under their values: a warm board then
draws eleven columns from memory instead of running the template engine over ~160 variables and
~200 conditions (4–5 ms of a 500-task page's CPU, bench/BOARD.md). The cards are the column's
own joined fragments (`boards.board.live.fragments`), placed between the frame's two halves, so
the frame does not depend on them, only on how many there are. A count that changes is a new
key, like a card's version: nothing is invalidated, the least recently used frames are dropped.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import fields, replace

from django.template.loader import render_to_string
from django.utils import translation
from django.utils.safestring import SafeString, mark_safe

from boards.board.selectors.board import BoardFilters, Column

# Where the cards go: markers no value drawn in the frame or the page can contain — an escaped
# value has no "<", and no template writes a NUL (a NUL a request sends is escaped text too).
_CARDS = "<\x00cards\x00>"
_SLOT, _SLOT_END = "<\x00slot ", "\x00>"
# Frames remembered per process: eleven columns a board, a few lanes, many boards.
LOCAL_FRAMES = 2048
_frames: OrderedDict[tuple, tuple[str, str]] = OrderedDict()
_frames_lock = threading.Lock()
# A column's values but its cards (counted instead) and their markup (placed between halves).
_NOT_FRAME = ("cards", "cards_html", "html")
_FRAME_FIELDS = tuple(f.name for f in fields(Column) if f.name not in _NOT_FRAME)


def _frame(column: Column, filters: BoardFilters) -> tuple[str, str]:
    """The column's markup before and after its cards."""
    # Every value the template can read is in the key: the column (its cards only by number),
    # the filters and the grouping, and the language the template is drawn in.
    values = tuple(getattr(column, name) for name in _FRAME_FIELDS)
    key = (values, len(column.cards), filters, translation.get_language())
    with _frames_lock:
        found = _frames.get(key)
        if found is not None:
            _frames.move_to_end(key)
            return found
    shell = replace(column, cards=[None] * len(column.cards), cards_html=mark_safe(_CARDS))
    context = {
        "column": shell,
        "filters": filters,
        "lanes_by": filters.lanes if column.lane is not None else None,
    }
    before, after = render_to_string("boards/_column.html", context).split(_CARDS)
    with _frames_lock:
        _frames[key] = (before, after)
        while len(_frames) > LOCAL_FRAMES:
            _frames.popitem(last=False)
    return before, after


class CardSlots:
    """A page's cards kept out of the template engine: each column's frame holds a slot (a
    short marker) where its cards go, and the rendered page is filled in one join at the end.
    Placed by the template instead, the ~400 KB of a 400-card board was copied again by every
    enclosing tag, block and template that joined its output (~2–4 ms of a page's CPU)."""

    def __init__(self) -> None:
        self._cards: list[list[str]] = []

    def column_html(self, column: Column, filters: BoardFilters) -> SafeString:
        """`boards/_column.html` for `column`, with the slot of its cards (fragments, escaped
        when each was rendered)."""
        before, after = _frame(column, filters)
        self._cards.append([card.html for card in column.cards])
        return mark_safe(f"{before}{_SLOT}{len(self._cards) - 1}{_SLOT_END}{after}")

    def fill(self, html: str) -> str:
        """`html` (the page, or a part of it, drawn with the slots) with the cards in them."""
        first, *slotted = html.split(_SLOT)
        pieces = [first]
        for part in slotted:
            n, rest = part.split(_SLOT_END, 1)
            pieces.extend(self._cards[int(n)])
            pieces.append(rest)
        return "".join(pieces)


def forget_frames() -> None:
    """Empty this process's frames (tests)."""
    with _frames_lock:
        _frames.clear()
