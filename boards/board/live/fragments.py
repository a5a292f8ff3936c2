"""Card fragments (issue #26): each card rendered once per change, shared by every process.

A card's markup (`boards/_card.html`) is stored in Django's cache (Redis in production, so every
web and websocket process shares it) under a key made of the task's id and its version
(`selectors.cards.CardVersion`: a digest of the row's version, its waiting-on keys, its open
reviews and whether each is live, its open alerts, its running run, the project's security
reviewers) salted with what else every card of the project reads (the project's settings, the
template and the code that builds a card, the language). A change to any of these is a new
key: nothing is ever invalidated, an old fragment is simply no longer asked for (and expires).

The board page reads the versions of its shown cards (one narrow statement, the digests
computed by the database: no work per card in Python), fetches their fragments in one round
trip, and reads the full rows of, and renders, only the missing ones (one statement, always
made, empty when nothing is missing: the page costs the same queries whether the cache is
warm or not). A live event renders its card under the same key, so the next page render, in
any process, reuses it.
"""

from __future__ import annotations

import hashlib
import inspect
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cache

from django.conf import settings
from django.core.cache import cache as shared
from django.db.models import QuerySet
from django.template.loader import get_template, render_to_string
from django.utils import translation

from boards.board.selectors import cards as card_selectors
from boards.board.selectors.cards import Card, CardVersion, card_versions, cards_of_ids
from liza_site.outages import REDIS

# A day: a fragment nobody asked for since is dropped by the cache itself.
FRAGMENT_TTL = 24 * 3600
# Bumped by hand when what a key covers changes meaning (the code's own text is hashed too).
FRAGMENT_FORMAT = 1
# A process keeps the fragments it used last, by key: a warm page then reads nothing from the
# shared cache but what changed. The key names one version exactly, so a copy never goes stale.
LOCAL_FRAGMENTS = 8192
_local: OrderedDict[str, str] = OrderedDict()
# Views and consumers may render from several threads of one process: the copies' reads and
# evictions happen under one lock (a check-then-read could otherwise lose a key mid-way).
_local_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class CardFragment:
    """A shown card as the page lays it out: its column, its key, its markup."""

    key: str
    status: str
    html: str


@cache
def _code_digest() -> str:
    """The card's template and the module that builds a card: a deploy that changes either
    does not read the fragments the previous code wrote."""
    source = get_template("boards/_card.html").template.source + inspect.getsource(card_selectors)
    return hashlib.blake2b(f"{FRAGMENT_FORMAT}\0{source}".encode(), digest_size=8).hexdigest()


def project_salt(project_id: int, config) -> str:
    """What every card of the project reads besides the rows its version covers (the security
    reviewers among them): the settings (iteration and review-cycle limits, the lease grace),
    and the template, code, language and database the markup came from."""
    fields = tuple(getattr(config, f.attname) for f in config._meta.concrete_fields)
    parts = (
        _code_digest(),
        translation.get_language(),
        settings.DATABASES["default"].get("NAME"),
        project_id,
        fields,
    )
    return hashlib.blake2b(repr(parts).encode(), digest_size=12).hexdigest()


def fragment_key(version: CardVersion) -> str:
    """The shared cache key of a card's fragment: its task and its version (salted)."""
    return f"card:{version.id}:{version.stamp}"


def render_card(card: Card) -> str:
    """A card's markup: the template stays the one source of it."""
    return render_to_string("boards/_card.html", {"card": card})


def _remember(key: str, html: str) -> None:
    with _local_lock:
        _local[key] = html
        _local.move_to_end(key)
        while len(_local) > LOCAL_FRAGMENTS:
            _local.popitem(last=False)


def forget_local() -> None:
    """Empty this process's copies (a new process; tests and the cold benchmark)."""
    with _local_lock:
        _local.clear()


def _shared(call, default):
    """`call()` on the shared cache; `default` while its Redis is down (a board renders its
    cards itself then, and the outage is logged once: `liza_site.outages.REDIS`)."""
    if not settings.REDIS_URL:
        return call()  # this process's own memory (the embedded default)
    if not REDIS.allow():
        return default
    try:
        value = call()
    except Exception as exc:  # any Redis failure: the page does without the shared copies
        REDIS.failed(exc)
        return default
    REDIS.succeeded()
    return value


def _fetch(keys: list[str]) -> dict[str, str]:
    """The fragments of `keys` this process has, then the others in one shared round trip."""
    with _local_lock:
        found = {key: html for key in keys if (html := _local.get(key)) is not None}
    missing = [key for key in keys if key not in found]
    if missing:
        fetched = _shared(lambda: shared.get_many(missing), {})
        for key, html in fetched.items():
            _remember(key, html)
        found.update(fetched)
    return found


def _store(fragments: dict[str, str]) -> None:
    for key, html in fragments.items():
        _remember(key, html)
    if fragments:
        _shared(lambda: shared.set_many(fragments, timeout=FRAGMENT_TTL), None)


def page_fragments(queryset: QuerySet, *, project, config, now) -> list[CardFragment]:
    """The shown cards of a board page, in `queryset`'s order: two statements whatever their
    number or the cache's state (the versions; the missing cards' rows, empty when none is
    missing) and at most one shared cache round trip to read, one to write."""
    salt = project_salt(project.pk, config)
    versions = card_versions(queryset, config=config, now=now, salt=salt)
    keys = [fragment_key(version) for version in versions]
    found = _fetch(keys)
    missing = [version.id for version, key in zip(versions, keys, strict=True) if key not in found]
    rendered: dict[str, str] = {}
    fresh: dict[int, tuple[str, str]] = {}
    for version, card in cards_of_ids(missing, config=config, now=now, salt=salt):
        # Stored under the version it was rendered from (it may be newer than the one read
        # just before, if the task moved in between: then this page shows the newer card).
        key = fragment_key(version)
        rendered[key] = render_card(card)
        fresh[version.id] = (version.status, rendered[key])
    _store(rendered)
    out = []
    for version, key in zip(versions, keys, strict=True):
        if version.id in fresh:
            status, html = fresh[version.id]
            out.append(CardFragment(version.key, status, html))
        elif key in found:
            out.append(CardFragment(version.key, version.status, found[key]))
    return out


def card_fragment(*, version: CardVersion, card: Card) -> str:
    """The markup of one card whose version and content were just read (a live event): the
    shared fragment when another process rendered it already, else rendered and shared."""
    key = fragment_key(version)
    html = _fetch([key]).get(key)
    if html is None:
        html = render_card(card)
        _store({key: html})
    return html
