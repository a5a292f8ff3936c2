"""Idempotent writes (docs/decisions.md "Idempotency-Key")."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction

from agents.models import (
    Agent,
    IdempotentRequest,
)
from boards.errors import (
    IdempotencyKeyReused,
)

# -- idempotent writes (docs/decisions.md "Idempotency-Key") --------------------------------------

IDEMPOTENCY_TTL = timedelta(hours=24)


def idempotent_request_begin(
    *, agent: Agent, key: str, method: str, path: str, fingerprint: str, now: datetime
) -> tuple[IdempotentRequest, bool]:
    """Claim `key` for this request, or find the answer already given to it.

    Must run inside the transaction that applies the write (the API wraps the whole request).
    Returns `(record, True)` when this request is the first: the caller applies it and then
    calls `idempotent_request_finish`. Returns `(record, False)` for a retry: the stored answer.
    A concurrent retry blocks on the unique (agent, key) index until the first attempt's
    transaction ends, then replays its answer (or, if it rolled back, applies the write itself).
    """
    # Expired keys of this agent go first (bounded: one agent's day of writes).
    IdempotentRequest.objects.filter(agent=agent, created_at__lt=now - IDEMPOTENCY_TTL).delete()
    try:
        with transaction.atomic():
            record = IdempotentRequest.objects.create(
                agent=agent,
                key=key,
                fingerprint=fingerprint,
                method=method,
                path=path,
                created_at=now,
            )
        return record, True
    except IntegrityError:
        record = IdempotentRequest.objects.get(agent=agent, key=key)
    if record.fingerprint != fingerprint:
        raise IdempotencyKeyReused(
            message=f"Idempotency-Key {key!r} was first used for {record.method} {record.path} "
            "with another body; use a fresh key for a new request",
            details={"field": "Idempotency-Key"},
        )
    return record, False


def idempotent_request_finish(*, record: IdempotentRequest, status_code: int, body: Any) -> None:
    """Store the answer the first request got, for its retries to replay."""
    record.status_code = status_code
    record.body = body
    record.save(update_fields=["status_code", "body"])


def idempotent_request_abandon(*, record: IdempotentRequest) -> None:
    """Forget a key whose request failed on the server's side: its retry is applied anew."""
    record.delete()


def idempotent_requests_purge(*, now: datetime) -> int:
    """Delete every idempotency record older than its 24 hours (agents that stopped sending
    keys would otherwise keep theirs); returns how many went."""
    deleted, _ = IdempotentRequest.objects.filter(created_at__lt=now - IDEMPOTENCY_TTL).delete()
    return deleted
