import pytest


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings):
    # World() makes a human admin; PBKDF2 would cost ~0.3 s per test for a password nobody uses.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
