"""People's notification preferences (issue 24), read for the settings page and the API."""

from __future__ import annotations

from boards.coordination.models.projects import Membership, Project
from boards.watch.models import NotificationPreference


def notification_preferences(*, project: Project, user) -> NotificationPreference:
    """`user`'s choices in `project`; unsaved defaults (nothing sent) when they made none."""
    found = NotificationPreference.objects.filter(project=project, user=user).first()
    return found or NotificationPreference(project=project, user=user)


def members_notifications(*, project: Project) -> list[tuple[Membership, NotificationPreference]]:
    """Every member of `project` with their choices (for the admin, who sets chat webhooks)."""
    prefs = {
        pref.user_id: pref
        for pref in NotificationPreference.objects.filter(project=project).select_related("user")
    }
    members = Membership.objects.filter(project=project).select_related("user")
    return [
        (m, prefs.get(m.user_id) or NotificationPreference(project=project, user=m.user))
        for m in members.order_by("user__username")
    ]
