"""Which cached agent-key lookups a process may still trust: one counter, shared by processes.

`agents.keycache` keeps, per process, what an agent key stood for (the key, its agent, the
agent's project and config) for at most `keycache.TTL` seconds, stamped with the counter as it
was read before the lookup. Every change that must reach the next request at once — a key
revoked, an agent disabled or enabled, a project paused or resumed, its config changed — calls
`bump()`, and every request through the cache reads the counter
(in the same Redis round trip as its rate limit): a changed counter means the entry is stale,
so the very next request after the change looks the key up again, in any process.

Why a counter read per request rather than Redis pub/sub: a subscriber thread hears a message
some time after the commit, so the next request could still be served from the old entry; a
counter read on the request's own round trip cannot be late. It costs no extra round trip
(pipelined with the rate limit's INCR). One counter for every project, not one each: the
counter must be read before the key is looked up, when its project is not known yet; such
changes are people's actions (rare), and each only makes every process look its keys up once
more.

`bump` counts at once (inside the writer's transaction: a test's never-committed transaction,
or a request of the same process right after) and again after the commit (a request that read
the counter between the first bump and the commit, and the old rows with it, is stale again).
What bumps nothing, because no cached entry can say otherwise afterwards: an agent's
registration (it leaves `enabled`, the role and the project as they were — it refuses a
disabled agent and another role — and the services lock and re-read the rest of the agent row);
an import's config (`boards.interop`: the project is new in that transaction, and no key of it
can exist before it commits); the defaults saved for a project without a config row
(`config_for_update`: the values `config_of` gave already). Deleted key and config rows are
counted by `agents.keycache.connect`.

Without Redis (the embedded, single-process deployment) the counter is this process's own.
With Redis unreachable, readers do not use their cache at all (`generation` is None), and a
writer that could not count leaves other processes' entries stale for at most the TTL.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from liza_site import redis_client
from liza_site.outages import REDIS

KEY = "liza:keygen"
_local = [0]  # without Redis: this process's counter


def _count() -> None:
    if not settings.REDIS_URL:
        _local[0] += 1
        return
    try:
        redis_client.client().incr(KEY)
    except Exception as exc:  # Redis's connection errors, whatever they are
        REDIS.failed(exc)


def bump() -> None:
    """Every cached key lookup is stale from now on (and again after the commit)."""
    _count()
    transaction.on_commit(_count)


def parse(value: bytes | str | int | None) -> int:
    """The counter as Redis answers a GET (None: never bumped)."""
    return int(value or 0)


def current() -> int | None:
    """The counter now (one round trip), or None when it cannot be read (Redis down)."""
    if not settings.REDIS_URL:
        return _local[0]
    if not REDIS.allow():
        return None
    try:
        value = redis_client.client().get(KEY)
    except Exception as exc:
        REDIS.failed(exc)
        return None
    REDIS.succeeded()
    return parse(value)
