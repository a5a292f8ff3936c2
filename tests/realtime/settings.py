"""The product's settings for the ASGI servers the realtime tests start.

Pub/sub channels ignore Redis database numbers: `LIZA_TEST_CHANNEL_PREFIX` keeps the test's
board groups apart from anything else publishing `board-<id>` on the same Redis server.
"""

import os

from liza_site.settings import *  # noqa: F403
from liza_site.settings import CHANNEL_LAYERS

_prefix = os.environ.get("LIZA_TEST_CHANNEL_PREFIX")
if _prefix and "CONFIG" in CHANNEL_LAYERS["default"]:
    CHANNEL_LAYERS["default"]["CONFIG"]["prefix"] = _prefix
