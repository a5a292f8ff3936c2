"""The agent-key lookup of the hot path (heartbeat, claim-next), cached in this process.

What a bearer token stands for — the key, its agent, the agent's project and the project's
config: `agents.selectors.agent_key_row`, one statement — is kept per process for at most `TTL`
seconds, at most `MAX_ENTRIES` tokens (the least recently used go first), stamped with
`liza_site.key_generation`'s counter read *before* the lookup. An entry is used only while the
counter still has that value: revoking a key, disabling or enabling an agent, pausing or
resuming a project or changing its config bumps it, so the very next request, in any process,
looks the key up again (tests/agents/test_keycache.py). So does deleting a key or a config row
by any ORM delete (`connect`, at start-up): deleting an agent cascades to its keys, and a project
with a key cannot be deleted (issuing the key wrote an event, and the event log protects its
project). The TTL bounds what no bump covers (a row changed or deleted by hand in the
database); boards.api.hot answers a key whose rows are gone by then as DRF does, not with a 500.

The entry keeps the statement's row, not models: every request builds its own objects from it
(services change what they are given), and the services lock and re-read the agent row before
they act on it, as they did without the cache.
"""

from __future__ import annotations

import hmac
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime

from django.db.models.signals import post_delete

from agents.models import AgentKey
from agents.selectors import KEY_HASH_AT, agent_key_from_row, agent_key_row, key_prefix
from boards.coordination.models.projects import ProjectConfig
from liza_site import key_generation
from liza_site.metrics import KEYCACHE_LOOKUPS

# Sized for a fleet (issue 26, bench/fleet.py): 10,000 agents heartbeating every 30 s over two
# worker processes. A process sees an agent again only about every workers × interval (each
# request lands on any worker), so a TTL at the 30 s interval served almost nothing from the
# cache (/metrics' liza_keycache_lookups: 2 % hits at 10,000 agents, 13 % at 2,500), each miss a
# statement and a second Redis round trip. 300 s covers two to four workers at the default 60 s
# heartbeat. It bounds only what no bump covers: a row changed by hand in the database.
TTL = 300.0  # seconds
# Every key of such a fleet, with room: an entry is ~2 KB (tracemalloc, a key of a 500-agent
# project), so at most ~32 MB a process. 4,096 held not half the fleet.
MAX_ENTRIES = 16384
clock = time.monotonic


@dataclass
class _Entry:
    row: tuple
    generation: int
    expires: float
    # `last_used_at` as this process last wrote it (agents.services.agent_key_used writes it
    # at most once a minute: the row's own value would make it write on every request).
    last_used_at: datetime | None = None


_entries: OrderedDict[str, _Entry] = OrderedDict()
_lock = threading.Lock()


@dataclass(frozen=True)
class Held:
    """What the cache holds for a token: its key (new objects), and the counter its entry was
    stamped with — the key stands only if the counter still has that value."""

    key: AgentKey
    generation: int


def held(plain: str) -> Held | None:
    """The key the cache holds for `plain` (an entry younger than `TTL` whose secret matches),
    before the counter is read: its principal can then be counted in the same round trip as
    the counter's read (boards.api.hot). Use it only if `generation` is the counter as read
    then; else `lookup` with that counter."""
    prefix = key_prefix(plain)
    if prefix is None:
        return None
    with _lock:
        entry = _entries.get(prefix)
        if entry is None or clock() >= entry.expires:
            return None
        _entries.move_to_end(prefix)
    return _held(entry, AgentKey.hash(plain))


def trusted(found: Held) -> AgentKey:
    """`found`'s key, used as it is: the counter read for the request is its stamp."""
    KEYCACHE_LOOKUPS.labels(outcome="hit").inc()
    return found.key


def _held(entry: _Entry, digest: str) -> Held | None:
    if not hmac.compare_digest(entry.row[KEY_HASH_AT], digest):
        return None
    key = agent_key_from_row(entry.row)
    if entry.last_used_at is not None:
        key.last_used_at = entry.last_used_at
    return Held(key, entry.generation)


def lookup(plain: str, generation: int | None) -> AgentKey | None:
    """The active key for `plain` (as `agent_key_lookup`), from the cache when its entry is
    younger than `TTL` and was stamped with `generation`, the counter as read for this request
    (None: it could not be read, so the cache is not used)."""
    prefix = key_prefix(plain)
    if prefix is None:
        return None
    digest = AgentKey.hash(plain)
    if generation is not None:
        with _lock:
            entry = _entries.get(prefix)
            if entry is not None:
                if entry.generation == generation and clock() < entry.expires:
                    _entries.move_to_end(prefix)
                else:
                    del _entries[prefix]
                    entry = None
        found = _held(entry, digest) if entry is not None else None
        if found is not None:
            return trusted(found)
    KEYCACHE_LOOKUPS.labels(outcome="miss").inc()
    row = agent_key_row(prefix=prefix)
    if row is None or not hmac.compare_digest(row[KEY_HASH_AT], digest):
        return None
    if generation is not None:
        with _lock:
            _entries[prefix] = _Entry(row=row, generation=generation, expires=clock() + TTL)
            _entries.move_to_end(prefix)
            while len(_entries) > MAX_ENTRIES:
                _entries.popitem(last=False)
    return agent_key_from_row(row)


def used(key: AgentKey) -> None:
    """Remember the key's `last_used_at` after `agent_key_used` (a no-op for an old entry)."""
    entry = _entries.get(key.prefix)
    if entry is not None and entry.row[KEY_HASH_AT] == key.key_hash:
        entry.last_used_at = key.last_used_at


def size() -> int:
    return len(_entries)


def clear() -> None:
    with _lock:
        _entries.clear()


def _row_deleted(sender, instance, **kwargs) -> None:
    key_generation.bump()


def connect() -> None:
    """Count every deleted key and config row (AgentsConfig.ready): however it is deleted — the
    shell, a queryset, a cascade from its agent — Django sends `post_delete` for each row of a
    model that has a receiver (such rows are never fast-deleted), inside the delete's
    transaction, so `bump` counts again after its commit."""
    for model in (AgentKey, ProjectConfig):
        post_delete.connect(
            _row_deleted, sender=model, dispatch_uid=f"liza-keycache-{model._meta.model_name}"
        )
