import pytest


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings):
    # Worlds make human users; PBKDF2 would cost ~0.3 s per test for passwords nobody types.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
