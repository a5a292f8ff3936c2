"""The secret key when DJANGO_SECRET_KEY is unset: generated once into a 0600 file, reused.

A key embedded in the source is public, so sessions and password-reset tokens signed with it can
be forged. Read before Django is configured (settings import this), so it uses nothing of it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path


def secret_key_from_file(path: Path) -> str:
    """The key stored at `path`, created (random, mode 0600) if the file does not exist yet.

    Several processes may start at once (two ASGI workers, a test's servers): the key is written
    to a private temporary file and hard-linked into place, which fails if another process got
    there first, so every process ends up reading the same complete key.
    """
    with contextlib.suppress(FileNotFoundError):
        return _read(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w") as stream:
            stream.write(secrets.token_urlsafe(50) + "\n")
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
    finally:
        temporary.unlink()
    return _read(path)


def _read(path: Path) -> str:
    key = path.read_text().strip()
    if len(key) < 32:
        raise RuntimeError(f"{path} holds no usable secret key: delete it or set DJANGO_SECRET_KEY")
    return key
