"""Suite-wide fixtures. Database tests run on PostgreSQL (SPEC §2): real locks, real triggers."""

from __future__ import annotations

import pytest
from django.conf import settings

from tests.factories import T0


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
