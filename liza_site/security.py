"""Who is asking, as the brute-force and rate limits count it, and what a locked-out login sees.

One rule for the client's address (django-axes' lockouts and the API's rate limits both call
`client_ip`): the socket's address, unless the deployment says how many proxies stand in front
(`LIZA_NUM_PROXIES`); then the address the outermost trusted proxy saw. A client-supplied
X-Forwarded-For is otherwise ignored, so nobody escapes a limit by inventing addresses.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.validators import MaxLengthValidator
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


class LoginForm(AuthenticationForm):
    """Django's sign-in form, with its length limits enforced before anyone is asked.

    `AuthenticationForm` sets the username's `max_length` after the field is built, so the
    limit never becomes a validator and a 20,000-character username reaches `authenticate()`
    — and the lockout log, whose column holds 255 (a 500, found by the HTML fuzz test). A name
    longer than any account's cannot sign in: refuse it as the form error it is.
    """

    PASSWORD_MAX_LENGTH = 4096

    def __init__(self, request=None, *args, **kwargs) -> None:
        super().__init__(request, *args, **kwargs)
        limits = {
            "username": self.fields["username"].max_length or 150,
            "password": self.PASSWORD_MAX_LENGTH,
        }
        for name, limit in limits.items():
            self.fields[name].validators.append(MaxLengthValidator(limit))


class AdminLoginForm(LoginForm, AdminAuthenticationForm):
    """The admin's sign-in form with the same limits (it is Django's, staff only)."""
