from django.contrib import admin
from django.http import JsonResponse
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from liza_site.exceptions import envelope

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/v1/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/v1/projects/<slug:slug>/", include("boards.api.urls")),
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
]


def handler404(request, exception=None):
    """JSON for the API (the envelope), Django's page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse(envelope("not_found", "Not found."), status=404)
    from django.views.defaults import page_not_found

    return page_not_found(request, exception)


def handler500(request):
    if request.path.startswith("/api/"):
        return JsonResponse(envelope("server_error", "Internal server error."), status=500)
    from django.views.defaults import server_error

    return server_error(request)
