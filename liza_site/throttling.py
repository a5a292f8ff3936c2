"""API rate limits (DRF throttling): per agent key or signed-in user, and per client address.

Over the limit a request gets 429 with Retry-After in the JSON error envelope
(`liza_site.exceptions`). Rates are `N/s|min|hour|day` (LIZA_API_RATE_PER_KEY,
LIZA_API_RATE_PER_IP). Each is counted in fixed windows with one atomic increment — in Redis when
REDIS_URL is set, so every process counts together (one round trip on the process's shared
client, `liza_site.redis_client`; the agents' hot path counts both limits in one, `count_hot`),
else in this process's cache — instead of DRF's SimpleRateThrottle, which reads and rewrites
the list of every request's timestamp in the window (tens of thousands of entries at the
address limit) on each request.

A limiter that cannot reach its cache lets the request through: Redis being down must not stop
agents (SPEC §11); the lockouts that protect passwords live in the database (django-axes).
"""

from __future__ import annotations

import logging
import math
import time
from functools import cache
from typing import NamedTuple

from django.conf import settings
from django.core.cache import cache as default_cache
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from liza_site import redis_client
from liza_site.outages import REDIS
from liza_site.security import client_ip

logger = logging.getLogger(__name__)

_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """`"600/min"` → (600, 60): requests allowed per window, window length in seconds."""
    count, _, period = rate.partition("/")
    return int(count), _PERIODS[period.strip()[0]]


# INCR and EXPIRE as one command: a script runs atomically, as MULTI/EXEC did, but is one
# command to send and one reply to read instead of four (MULTI, INCR, EXPIRE, EXEC).
_INCREMENT = """
local count = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[1])
return count
"""


@cache
def _script(source: str):
    """`source` as redis-py's Script (EVALSHA, EVAL if Redis does not know it yet), made once per
    process: registering reaches no server, it only hashes the text."""
    return redis_client.client().register_script(source)


def increment(key: str, ttl: int) -> int:
    """The counter `key` after one more request, kept `ttl` seconds after its last one."""
    if settings.REDIS_URL:
        return int(_script(_INCREMENT)([key], [ttl], client=redis_client.client()))
    # add() starts the window's counter only if absent; incr() is atomic in the cache. A
    # counter that expired between the two raises ValueError: the request is let through.
    return 1 if default_cache.add(key, 1, ttl) else default_cache.incr(key)


class _FixedWindow(BaseThrottle):
    scope: str
    prefix = "liza:throttle"  # tests give each test counters of its own
    timer = staticmethod(time.time)
    # Read when a request is counted, so tests (and settings overrides) can change them.
    THROTTLE_RATES: dict[str, str] | None = None

    def ident(self, request) -> str | None:
        raise NotImplementedError

    def counter(self, request) -> tuple[str, int, int] | None:
        """This request's counter: its key, the limit, how long to keep it (None: not counted).
        Sets `wait()` for the answer if the count is over the limit."""
        ident = self.ident(request)
        if ident is None:
            return None
        rates = self.THROTTLE_RATES or api_settings.DEFAULT_THROTTLE_RATES
        limit, period = parse_rate(rates[self.scope])
        now = self.timer()
        window = int(now // period)
        self._wait = math.ceil((window + 1) * period - now)
        return f"{self.prefix}:{self.scope}:{ident}:{period}:{window}", limit, period + 1

    def allow_request(self, request, view) -> bool:
        counter = self.counter(request)
        if counter is None:
            return True
        key, limit, ttl = counter
        if not REDIS.allow():
            return True  # Redis down and backing off: not even a connection attempt
        try:
            count = increment(key, ttl)
        except ValueError:  # the process cache's counter expired between add() and incr()
            return True
        except Exception as exc:  # Redis's connection errors, whatever they are
            REDIS.failed(exc)  # logged once per outage, not once per request
            return True
        REDIS.succeeded()
        return count <= limit

    def wait(self) -> float:
        return getattr(self, "_wait", None)


class PrincipalRateThrottle(_FixedWindow):
    """One counter per agent API key (each key of an agent counts alone) or per human user."""

    scope = "principal"

    def ident(self, request) -> str | None:
        from agents.models import AgentKey

        if isinstance(request.auth, AgentKey):
            return f"key-{request.auth.pk}"
        if request.user is not None and request.user.is_authenticated:
            return f"user-{request.user.pk}"
        return None  # anonymous: counted by address only


class ClientAddressRateThrottle(_FixedWindow):
    """One counter per client address, whoever is signed in (liza_site.security.client_ip).

    Project endpoints count it before authentication (`count_address_first`), so requests with
    a wrong or missing key are limited too; it then counts once per request, not twice.
    """

    scope = "address"

    def allow_request(self, request, view) -> bool:
        if getattr(request, "_liza_address_counted", False):
            return True
        request._liza_address_counted = True
        return super().allow_request(request, view)

    def ident(self, request) -> str:
        return client_ip(request)


class HotCount(NamedTuple):
    """What `count_hot` counted and read in its one round trip."""

    address: bool  # within the address limit
    address_wait: float | None
    read: bytes | None  # the value of the key it read (None: no such key)
    principal: bool | None  # within the principal's limit; None: not counted
    principal_wait: float | None


# The address counted; then the principal, only if the address is within its limit and KEYS[2]
# (the key cache's counter) still holds ARGV[3] (what the caller's cached key was stamped with:
# else the key may no longer stand, and the caller counts it once it has looked it up); and
# KEYS[2] read. Lua's false is Redis's nil: "not counted", "no such key".
_COUNT_HOT = """
local address = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[1])
local read = redis.call('GET', KEYS[2])
local principal = false
if KEYS[3] and address <= tonumber(ARGV[2]) and (read or '0') == ARGV[3] then
    principal = redis.call('INCR', KEYS[3])
    redis.call('EXPIRE', KEYS[3], ARGV[4])
end
return {address, read, principal}
"""


def count_hot(request, principal_request=None, *, read: str, stamped: int = 0) -> HotCount | None:
    """The hot path's limits in one Redis round trip (boards.api.hot, with REDIS_URL): the
    request's address counted, `read` read, and `principal_request`'s principal counted too when
    the address is within its limit and `read` still holds `stamped`. The same counters, limits
    and Retry-After as the throttles above. None when Redis cannot answer (no limit, and nothing
    read). The request is marked counted for its address."""
    request._liza_address_counted = True
    address = ClientAddressRateThrottle()
    address_key, address_limit, address_ttl = address.counter(request)
    keys, args = [address_key, read], [address_ttl, address_limit, stamped]
    principal = PrincipalRateThrottle() if principal_request is not None else None
    counter = principal.counter(principal_request) if principal is not None else None
    if counter is not None:
        keys.append(counter[0])
        args.append(counter[2])
    if not REDIS.allow():
        return None  # Redis down and backing off: not even a connection attempt
    try:
        address_count, value, principal_count = _script(_COUNT_HOT)(
            keys, args, client=redis_client.client()
        )
    except Exception as exc:  # Redis's connection errors, whatever they are
        REDIS.failed(exc)
        return None
    REDIS.succeeded()
    within = principal_count is None or principal_count <= counter[1]
    return HotCount(
        address=address_count <= address_limit,
        address_wait=address.wait(),
        read=value,
        principal=None if principal_count is None else within,
        principal_wait=principal.wait() if principal is not None else None,
    )


def count_address_first(view, request) -> None:
    """The per-address limit, applied before authentication runs (DRF checks throttles after)."""
    throttle = ClientAddressRateThrottle()
    if not throttle.allow_request(request, view):
        view.throttled(request, throttle.wait())
