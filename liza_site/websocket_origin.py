"""Which pages may open a board websocket: the server's own origin and an explicit allow-list.

A browser sends the cookies of this site with any websocket a page opens to it, whatever site
the page is on; the Origin header is what tells them apart. The check compares scheme, host and
port (channels' matching, default ports filled in) against

* the server's own origin: the scheme of the connection (`https` for `wss`, or what the proxy
  header of SECURE_PROXY_SSL_HEADER says), and the Host header, which must be one of
  ALLOWED_HOSTS; and
* WEBSOCKET_ALLOWED_ORIGINS (`LIZA_WEBSOCKET_ALLOWED_ORIGINS`, by default
  DJANGO_CSRF_TRUSTED_ORIGINS, the list Django's CSRF check trusts for forms).

A socket without an Origin header (not a browser) is refused as well.
"""

from __future__ import annotations

from urllib.parse import urlparse

from channels.security.websocket import OriginValidator, WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin1")
    return None


def _scheme(scope) -> str:
    proxy = settings.SECURE_PROXY_SSL_HEADER
    if proxy:
        # "HTTP_X_FORWARDED_PROTO" → the header x-forwarded-proto, as Django reads it for HTTP.
        name = proxy[0].removeprefix("HTTP_").replace("_", "-").lower().encode()
        forwarded = _header(scope, name)
        if forwarded is not None:
            return "https" if forwarded.split(",")[0].strip() == proxy[1] else "http"
    return "https" if scope.get("scheme") == "wss" else "http"


def own_origin(scope) -> str | None:
    host = _header(scope, b"host")
    if not host:
        return None
    domain, _ = split_domain_port(host)
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return None
    return f"{_scheme(scope)}://{host}"


class SameOriginValidator(OriginValidator):
    def __init__(self, application) -> None:
        super().__init__(application, allowed_origins=[])

    async def __call__(self, scope, receive, send):
        if scope["type"] != "websocket":
            raise ValueError("SameOriginValidator guards websockets only")
        origin = _header(scope, b"origin")
        allowed = list(settings.WEBSOCKET_ALLOWED_ORIGINS)
        own = own_origin(scope)
        if own is not None:
            allowed.append(own)
        parsed = urlparse(origin) if origin else None
        if (
            parsed is not None
            and parsed.scheme
            and any(
                pattern != "*" and self.match_allowed_origin(parsed, pattern) for pattern in allowed
            )
        ):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)
