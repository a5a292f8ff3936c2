"""Who is asking, as the brute-force and rate limits count it, and what a locked-out login sees.

One rule for the client's address (django-axes' lockouts and the API's rate limits both call
`client_ip`): the socket's address, unless the deployment says how many proxies stand in front
(`LIZA_NUM_PROXIES`); then the address the outermost trusted proxy saw. A client-supplied
X-Forwarded-For is otherwise ignored, so nobody escapes a limit by inventing addresses.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def client_ip(request: HttpRequest) -> str:
    remote = request.META.get("REMOTE_ADDR", "") or ""
    proxies = settings.NUM_PROXIES
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if proxies <= 0 or not forwarded:
        return remote
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    # Each trusted proxy appended the address it received from; the client's is the one the
    # outermost of them appended.
    return hops[-proxies] if len(hops) >= proxies else (hops[0] if hops else remote)


def lockout_response(request: HttpRequest, original_response=None, credentials=None):
    """django-axes' answer to a locked-out sign-in: 429, Retry-After, the login page's look."""
    seconds = int(settings.AXES_COOLOFF_TIME.total_seconds())
    response: HttpResponse = render(
        request,
        "registration/locked_out.html",
        {"minutes": max(1, seconds // 60)},
        status=429,
    )
    response["Retry-After"] = str(seconds)
    return response
