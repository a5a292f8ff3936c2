"""Django admin for the boards app (SPEC §7: "Django admin covers every model, with transitions
as admin actions through the same services").

The admin is one more caller of the services (STYLE.md "Where things live"):

- `status` is a protected FSM field: it is read-only in every form, and it only ever moves
  through an admin action that calls the service of that transition with `actor=request.user`
  and `now=timezone.now()`. A refusal becomes an error message for that row, never a 500.
- Domain rows (goals, sprints, tasks, reviews, records, breaker, alerts) are created by
  services only: no add or delete here, and their change forms are view-only except the few
  fields listed in `editable_fields`, which carry no protocol meaning and are saved with
  `update_fields` so a form never writes back a stale copy of anything a service owns.
- The log (Event, SpecChange) is append-only (SPEC §4.1): no add, change or delete for anyone.

The admin is one adapter over every domain, like the REST API: this package sets up the site and
imports one module per group of rows (`projects`, `tasks`, `records`, `webhooks`), where the
registrations live. The shared machinery (view-only bases, the action runner) is `base`;
`agents/admin.py` uses it too.
"""

from __future__ import annotations

from django.contrib import admin

# The registrations, imported for their effect on the admin site.
from boards.admin import projects, records, tasks, webhooks  # noqa: F401
from liza_site.security import AdminLoginForm

admin.site.site_header = "Liza Board administration"
admin.site.site_title = "Liza Board admin"
admin.site.index_title = "Projects, boards and agents"
admin.site.login_form = AdminLoginForm  # length limits before authenticate() (no 500)
