"""The product's settings, with the two knobs the claim benchmark turns.

`LIZA_BENCH_POOL=N` puts Django's psycopg connection pool (max N connections per process) in
place of a new PostgreSQL connection per request (`CONN_MAX_AGE=0`, the product's default).
`LIZA_BENCH_CHANNEL_PREFIX` keeps the benchmark's board broadcasts off the channel names of
anything else using the same Redis (pub/sub channels ignore Redis database numbers).
"""

import os

from liza_site.settings import *  # noqa: F403
from liza_site.settings import CHANNEL_LAYERS, DATABASES

_pool = int(os.environ.get("LIZA_BENCH_POOL", "0"))
if _pool:
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": min(4, _pool),
        "max_size": _pool,
        "timeout": 30,
    }

_prefix = os.environ.get("LIZA_BENCH_CHANNEL_PREFIX")
if _prefix and "CONFIG" in CHANNEL_LAYERS["default"]:
    CHANNEL_LAYERS["default"]["CONFIG"]["prefix"] = _prefix

# `LIZA_BENCH_STOCK_LAYER=1`: Channels' own in-memory layer, as before liza_site/channel_layer.py
# (its expiry sweep on every receive), for before/after runs of `bench/board.py --layer memory`.
if os.environ.get("LIZA_BENCH_STOCK_LAYER") and "CONFIG" not in CHANNEL_LAYERS["default"]:
    CHANNEL_LAYERS["default"]["BACKEND"] = "channels.layers.InMemoryChannelLayer"
