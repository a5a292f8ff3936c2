import sys

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpResponse, JsonResponse
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from boards.errors import Contention, Unavailable, contention, database_unavailable
from liza_site.exceptions import envelope
from liza_site.security import LoginForm

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves its start-up script as a file: no inline script, so the CSP holds.
    path(
        "api/v1/docs/",
        SpectacularSwaggerSplitView.as_view(url_name="api-schema"),
        name="api-docs",
    ),
    path("api/v1/projects/<slug:slug>/", include("boards.api.urls")),
    path("login/", auth_views.LoginView.as_view(authentication_form=LoginForm), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("boards.urls")),
]


def handler400(request, exception=None):
    """A request Django refuses before any view runs (e.g. a body over
    DATA_UPLOAD_MAX_MEMORY_SIZE): the envelope for the API, Django's page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse(envelope("bad_request", "Bad request."), status=400)
    from django.views.defaults import bad_request

    return bad_request(request, exception)


def handler404(request, exception=None):
    """JSON for the API (the envelope), Django's page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse(envelope("not_found", "Not found."), status=404)
    from django.views.defaults import page_not_found

    return page_not_found(request, exception)


# Rendered without templates or context processors: while the database is down, nothing that
# might query it (the user, the session) may run.
UNAVAILABLE_PAGE = (
    "<!doctype html><html lang=en><meta charset=utf-8><title>Liza Board: unavailable</title>"
    "<h1>Liza Board is unavailable for a moment</h1>"
    "<p>The database cannot be reached. Nothing you sent was half-applied; "
    "reload this page in a few seconds.</p></html>"
)


BUSY_PAGE = (
    "<!doctype html><html lang=en><meta charset=utf-8><title>Liza Board: busy</title>"
    "<h1>Liza Board was busy with another change to the same rows</h1>"
    "<p>Nothing you sent was applied; send it again.</p></html>"
)


def handler500(request):
    """A database that cannot be reached is a 503 with Retry-After (a restart or failover, not a
    bug: the request may be retried as is); rows busy with another transaction (`contention`:
    a deadlock, a timeout) a 409 with Retry-After; anything else stays a 500."""
    exc = sys.exc_info()[1]
    reason = contention(exc) if exc is not None else None
    if reason is not None or (exc is not None and database_unavailable(exc)):
        error = Contention(reason) if reason is not None else Unavailable()
        if request.path.startswith("/api/"):
            response = JsonResponse(error.as_envelope(), status=error.status_code)
        else:
            page = BUSY_PAGE if reason is not None else UNAVAILABLE_PAGE
            response = HttpResponse(page, status=error.status_code)
        response["Retry-After"] = str(error.RETRY_AFTER)
        return response
    if request.path.startswith("/api/"):
        return JsonResponse(envelope("server_error", "Internal server error."), status=500)
    from django.views.defaults import server_error

    return server_error(request)
