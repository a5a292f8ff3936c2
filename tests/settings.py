"""The product's settings as the test suite runs them: the test process and every server the
tests start as a subprocess (tests/live_server.py) load this module.

Only what makes tests cheaper without changing what they prove differs from liza_site.settings.
"""

import os

from django.conf import global_settings

from liza_site.settings import *  # noqa: F403
from liza_site.settings import CHANNEL_LAYERS

# Every World and factory user gets a password nobody types; PBKDF2's 10^6 rounds cost ~0.3 s
# a user (more on a loaded box), and a live server pays them again at each browser sign-in.
# MD5 is unsafe for real passwords and fine for these. The product's hashers stay listed after
# it, so a server still verifies a password hashed by a process on the product's settings.
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.MD5PasswordHasher",
    *global_settings.PASSWORD_HASHERS,
]

# Pub/sub channels ignore Redis database numbers: a live server that shares Redis with a test
# (tests/realtime) gets a channel prefix of that test's own, apart from anything else
# publishing `board-<id>` on the same Redis server.
_prefix = os.environ.get("LIZA_TEST_CHANNEL_PREFIX")
if _prefix and "CONFIG" in CHANNEL_LAYERS["default"]:
    CHANNEL_LAYERS["default"]["CONFIG"]["prefix"] = _prefix

# The tests' webhook receivers listen on 127.0.0.1 (tests/watch/services/test_webhooks.py
# turns this off to prove the refusal).
LIZA_WEBHOOK_ALLOW_PRIVATE = True
LIZA_WEBHOOK_TIMEOUT = 1.0

# WhiteNoise's scan of the static files once per process, not once per test client
# (tests/static.py): a third of an API test's time went to it.
MIDDLEWARE = [
    "tests.static.ScanOnceWhiteNoiseMiddleware"
    if entry == "whitenoise.middleware.WhiteNoiseMiddleware"
    else entry
    for entry in MIDDLEWARE  # noqa: F405
]

# A server a test starts on the test worker's Redis reads the worker's own key-cache counter
# (tests/conftest.py `_key_counter_of_this_worker`), so a pause, a resume or a revoke the test
# makes reaches the server's next request, as in production, instead of its cache's TTL.
_key_counter = os.environ.get("LIZA_TEST_KEY_COUNTER")
if _key_counter:
    from liza_site import key_generation

    key_generation.KEY = _key_counter
