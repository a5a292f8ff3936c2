"""Suite-wide fixtures. Database tests run on PostgreSQL (SPEC §2): real locks, real triggers."""

from __future__ import annotations

import pytest
from django.conf import settings

from tests.factories import T0

SUITE_SETTINGS = "tests.settings"


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    """The suite's settings even under an exported DJANGO_SETTINGS_MODULE=liza_site.settings,
    which pytest-django prefers to pyproject's `tests.settings`: the fast password hasher.
    (Servers started by tests/live_server.py load tests.settings themselves.)"""
    if settings.configured and settings.SETTINGS_MODULE != SUITE_SETTINGS:
        from tests import settings as suite

        settings.PASSWORD_HASHERS = suite.PASSWORD_HASHERS


def pytest_collection_modifyitems(config, items):
    uses_db = any("django_db" in item.keywords for item in items)
    vendor = settings.DATABASES["default"]["ENGINE"]
    if uses_db and "postgresql" not in vendor:
        pytest.exit(
            "Liza Board's tests run on PostgreSQL: set DATABASE_URL=postgres://... "
            "(the README's test command does).",
            returncode=2,
        )


@pytest.fixture
def now():
    return T0


@pytest.fixture
def world(db):
    from tests.lifecycle import World

    return World()
