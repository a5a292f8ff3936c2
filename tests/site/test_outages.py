"""One log line per Redis outage, also for channels_redis's receive task (issue #27 finding 10).

During a Redis outage channels_redis's receive loop logged "Unexpected exception in receive
task" with a traceback, once per worker, before our own probe had noticed. Its loggers carry
`liza_site.outages.OncePerOutage` (settings.LOGGING): a record holding a connection error now
starts the outage — our one WARNING — and is dropped, as is everything after it until Redis
answers again. The loggers, the filter and the connection error are the real ones.
"""

from __future__ import annotations

import logging

import pytest
import redis

from liza_site.outages import REDIS
from tests.live_server import free_port


@pytest.fixture
def redis_up():
    REDIS.succeeded()
    yield
    REDIS.succeeded()  # the outage was this test's alone


def _refused() -> BaseException:
    try:
        redis.Redis(port=free_port(), socket_connect_timeout=1).ping()
    except redis.exceptions.ConnectionError as exc:
        return exc
    raise AssertionError("a closed port answered")


@pytest.mark.parametrize("module", ["channels_redis.pubsub", "channels_redis.core"])
def test_the_receive_tasks_tracebacks_become_one_outage_line(caplog, redis_up, module):
    library = logging.getLogger(module)
    caplog.set_level(logging.WARNING)
    error = _refused()
    for _ in range(5):  # the receive loop retries every second
        try:
            raise error
        except redis.exceptions.ConnectionError:
            library.exception("Unexpected exception in receive task")
    outage = [r for r in caplog.records if r.name == "liza.outages"]
    assert [r.getMessage().split(" (")[0] for r in outage] == ["Redis unreachable"]
    assert not [r for r in caplog.records if r.name.startswith("channels_redis")]
    assert REDIS.down

    REDIS.succeeded()  # the probe's next round trip
    assert [r.getMessage().split(" after")[0] for r in caplog.records[-1:]] == [
        "Redis reachable again"
    ]


def test_a_record_without_a_connection_error_still_passes(caplog, redis_up):
    caplog.set_level(logging.INFO)
    logging.getLogger("channels_redis.core").warning("something else")
    assert [r.getMessage() for r in caplog.records] == ["something else"]
    assert not REDIS.down
