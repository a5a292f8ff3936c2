"""Where a webhook may go: a public address (SSRF guard), checked when the URL is saved
(`config_update`) and again when the watcher sends (`boards.watch.services.webhooks`). An IPv6
address that embeds an IPv4 one (IPv4-mapped, 6to4, Teredo, NAT64) is judged by that one too.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

from boards.errors import ProtocolValidationError

SECRET_MIN_LENGTH = 16


class WebhookRefused(ValueError):
    """The URL may not be sent to (not http(s), unresolvable, or not a public address)."""


NAT64_PREFIX = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052's well-known prefix


NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")  # RFC 8215: a network's own NAT64


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """The IPv4 addresses an IPv6 address carries to, with the scheme's name: a packet to
    2002:7f00:1:: (6to4), a Teredo address or 64:ff9b::7f00:1 (NAT64) reaches the IPv4 inside."""
    found: list[tuple[str, ipaddress.IPv4Address]] = []
    if ip.ipv4_mapped is not None:
        found.append(("IPv4-mapped", ip.ipv4_mapped))
    if ip.sixtofour is not None:
        found.append(("6to4", ip.sixtofour))
    if ip.teredo is not None:
        server, client = ip.teredo
        found += [("Teredo", client), ("Teredo server", server)]
    if ip in NAT64_PREFIX:
        found.append(("NAT64", ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)))
    return found


def _kind(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    # The most telling name first: 169.254.x is both link-local and private to Python.
    for kind in ("loopback", "link_local", "unspecified", "multicast", "private", "reserved"):
        if getattr(ip, f"is_{kind}"):
            return kind.replace("_", "-")
    return "" if ip.is_global else "non-global"


def _address_kind(address: str) -> str:
    """'' for a public (global) address, else what it is ("loopback address"). An IPv6
    address that embeds an IPv4 one (IPv4-mapped, 6to4, Teredo, NAT64) is judged by that one
    as well."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in NAT64_LOCAL:
            return "private address (local-use NAT64)"
        for scheme, inner in _embedded_ipv4(ip):
            kind = _kind(inner)
            if kind and scheme == "IPv4-mapped":
                return f"{kind} address"
            if kind:
                return f"{kind} address by {scheme} ({inner})"
        if ip.ipv4_mapped is not None or ip in NAT64_PREFIX:
            return ""  # a public IPv4 address, spelt in IPv6
    kind = _kind(ip)
    return f"{kind} address" if kind else ""


def resolve_webhook_url(url: str) -> list[str]:
    """The addresses `url`'s host resolves to, every one of them public; raises
    `WebhookRefused` saying why not. Without the private-address rule (allowed): []."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookRefused("must be an http or https URL with a host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise WebhookRefused("has an invalid port") from exc
    if settings.LIZA_WEBHOOK_ALLOW_PRIVATE:
        return []
    try:
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise WebhookRefused(f"host {parts.hostname} does not resolve") from exc
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    for address in addresses:
        kind = _address_kind(address)
        if kind:
            raise WebhookRefused(
                f"host {parts.hostname} resolves to {address}, a {kind}: refused "
                "(webhooks go to public addresses unless LIZA_WEBHOOK_ALLOW_PRIVATE is set)"
            )
    if not addresses:
        raise WebhookRefused(f"host {parts.hostname} does not resolve")
    return addresses


def check_webhook_url(url: str, *, field: str = "escalation_webhook") -> None:
    """At save: a 400 naming `field` for a URL the sender would refuse."""
    try:
        resolve_webhook_url(url)
    except WebhookRefused as exc:
        raise ProtocolValidationError(field, str(exc)) from exc


def check_webhook_secret(secret: str) -> None:
    if secret and len(secret) < SECRET_MIN_LENGTH:
        raise ProtocolValidationError(
            "webhook_secret", f"at least {SECRET_MIN_LENGTH} characters (or empty to remove it)"
        )
