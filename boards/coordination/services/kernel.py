"""Kept only for `boards.api.views`, which imports `require_role` from here; the services'
shared parts now live by concern: `actors`, `authority`, `locking`, `audit` (events, attempts,
refusals), `edges` (transitions), `cleaning`. Remove once that import moves to `authority`."""

from boards.coordination.services.authority import require_role

__all__ = ["require_role"]
