"""The process's one Redis client, for our own commands (board sequence numbers, rate limits).

redis-py's client is thread-safe and keeps a pool of connections, so one per process serves
every request. Django's cache is not a substitute on the hot path: under ASGI each request runs
in a context of its own, gets a new cache object and so a new connection, which cost every API
request a connect and a handshake (~14 % of a heartbeat worker's samples, bench/README.md
"Lean rows and one Redis client").
Short timeouts: a rate limit or a publish must not hang a request when Redis is slow.
"""

from __future__ import annotations

from functools import lru_cache

from django.conf import settings


@lru_cache(maxsize=1)
def client():
    import redis

    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1)
