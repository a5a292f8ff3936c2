"""`Authorization: Bearer <key>` for agents (SPEC §3): hashed keys found by their prefix."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from agents.models import Agent
from agents.selectors import agent_key_lookup
from agents.services import agent_key_used


class AgentPrincipal:
    """What `request.user` is for an agent: authenticated, never staff, carries the Agent."""

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False
    is_superuser = False

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def get_username(self) -> str:
        return self.agent.agent_id

    def __str__(self) -> str:
        return self.agent.agent_id


class AgentKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Malformed Authorization header.")
        try:
            plain = header[1].decode("ascii")
        except UnicodeDecodeError as exc:
            raise exceptions.AuthenticationFailed("Malformed API key.") from exc
        key = agent_key_lookup(plain=plain)
        if key is None:
            raise exceptions.AuthenticationFailed("Unknown or revoked API key.")
        if not key.agent.enabled:
            # Refused on every request, reads included (README): the key is genuine, so 403,
            # not 401; the agent's admin enables it again.
            raise exceptions.PermissionDenied(f"agent {key.agent.agent_id} is disabled")
        agent_key_used(key=key, now=timezone.now())
        return AgentPrincipal(key.agent), key

    def authenticate_header(self, request) -> str:
        # A 401 (not 403) for a missing or bad key: DRF needs a WWW-Authenticate value.
        return 'Bearer realm="liza"'


class AgentKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "agents.authentication.AgentKeyAuthentication"
    name = "agentKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "An agent API key."}
