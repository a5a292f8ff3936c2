"""Live board access that ends when access ends (docs/security.md "Live boards").

A board socket is joined after a membership check (`boards.board.live.consumers`). Whatever ends
that access afterwards — the membership deleted, the user deactivated, deleted, stripped of staff
or given a new password, the session signed out — must also end the socket, in whichever
process it lives. These receivers publish `access.changed` to the user's own group
(`events.user_group`) after the commit; each socket of that user then checks again, before it
sends anything else, and closes if the user may no longer read the board.

Model signals, against the project's habit of publishing from services: memberships and users
are also edited through Django's own admin and auth views, and a revocation that depends on
every writer remembering to call it would be missed by the first one that does not.

A role change within a project (admin → member → viewer) keeps the socket open: every role may
read the board, and the board stream carries nothing role-specific (it is rendered once for
every socket of a project). It is still re-checked, which costs one query per open socket.
"""

from __future__ import annotations

from importlib import import_module
from types import SimpleNamespace

from django.conf import settings
from django.contrib import auth
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_out
from django.db.models.signals import post_delete, post_save

from boards.coordination import outbox as events
from boards.coordination.models.projects import Membership, Project
from boards.coordination.selectors.access import human_role


def board_access_holds(*, session_key: str | None, user_id: int, project_id: int) -> bool:
    """Whether the session a socket was opened with still gives `user_id` a role in the project.

    Read afresh from the session store and the database, as a new request would be: a session
    signed out, expired or invalidated by a password change, an inactive or deleted user, a
    membership gone — each answers False.
    """
    if not session_key:
        return False
    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    user = auth.get_user(SimpleNamespace(session=store))
    if not user.is_authenticated or user.pk != user_id:
        return False
    project = Project.objects.filter(pk=project_id).first()
    return project is not None and human_role(user, project) is not None


# Saves of a user that cannot change access: the login itself stamps last_login.
_HARMLESS_USER_FIELDS = frozenset({"last_login"})


def _membership_changed(sender, instance: Membership, **kwargs) -> None:
    events.access_changed(instance.user_id)


def _user_saved(sender, instance, created: bool, update_fields=None, **kwargs) -> None:
    if created or (update_fields is not None and set(update_fields) <= _HARMLESS_USER_FIELDS):
        return
    events.access_changed(instance.pk)


def _user_deleted(sender, instance, **kwargs) -> None:
    events.access_changed(instance.pk)


def _logged_out(sender, request, user, **kwargs) -> None:
    # Sent by django.contrib.auth.logout before it flushes the session, so the key is known.
    if user is not None:
        session = getattr(request, "session", None)
        events.access_changed(user.pk, ended_session=getattr(session, "session_key", None))


def connect() -> None:
    user_model = get_user_model()
    post_save.connect(_membership_changed, sender=Membership, dispatch_uid="liza-access-m-save")
    post_delete.connect(_membership_changed, sender=Membership, dispatch_uid="liza-access-m-del")
    post_save.connect(_user_saved, sender=user_model, dispatch_uid="liza-access-u-save")
    post_delete.connect(_user_deleted, sender=user_model, dispatch_uid="liza-access-u-del")
    user_logged_out.connect(_logged_out, dispatch_uid="liza-access-logout")
