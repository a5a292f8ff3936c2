"""Token usage and cost as a coding CLI reports them in its own output (issue 24), keyed by
agent profile name. Each parser reads one output line and returns the usage it reports (or
None); `UsageTally` adds them up per model for a run, which the supervisor reports to the
server (`POST usage`, by `agents.client.liverun`) with each heartbeat and at the run's end.

- `claude` (`claude -p --output-format stream-json`): the final `{"type": "result", …}` event
  carries `total_cost_usd`, `usage` (input, output, cache read / creation tokens) and
  `modelUsage` per model (`inputTokens`, `outputTokens`, `cacheReadInputTokens`,
  `cacheCreationInputTokens`, `costUSD`).
- `codex` (`codex exec --json`): each `{"type": "turn.completed", "usage": {…}}` event carries
  `input_tokens`, `cached_input_tokens` and `output_tokens` of that turn (no cost).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Usage:
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None  # None: the CLI did not say

    def entry(self) -> dict[str, Any]:
        """One model's entry of a `POST usage` report (a cost not said is left out)."""
        return {name: value for name, value in asdict(self).items() if value is not None}


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _event(line: str) -> dict | None:
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


# Where each report puts its token counts: input, output, cache read, cache write ("": none).
CLAUDE_PER_MODEL = (
    "inputTokens",
    "outputTokens",
    "cacheReadInputTokens",
    "cacheCreationInputTokens",
)
CLAUDE_TOTAL = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)
CODEX_TURN = ("input_tokens", "output_tokens", "cached_input_tokens", "")


def _usage(model: object, counts: dict, names: tuple[str, str, str, str], cost: object) -> Usage:
    """One Usage from a map of token counts kept under the CLI's own `names`."""
    tokens = [_int(counts.get(name)) for name in names]
    return Usage(
        str(model or ""), *tokens, cost_usd=float(cost) if isinstance(cost, int | float) else None
    )


def parse_claude(line: str) -> list[Usage] | None:
    event = _event(line)
    if event is None or event.get("type") != "result":
        return None
    per_model = event.get("modelUsage")
    if isinstance(per_model, dict) and per_model:
        return [
            _usage(model, u, CLAUDE_PER_MODEL, u.get("costUSD"))
            for model, u in per_model.items()
            if isinstance(u, dict)
        ]
    usage = event.get("usage") if isinstance(event.get("usage"), dict) else {}
    return [_usage(event.get("model"), usage, CLAUDE_TOTAL, event.get("total_cost_usd"))]


def parse_codex(line: str) -> list[Usage] | None:
    event = _event(line)
    if event is None or event.get("type") != "turn.completed":
        return None
    usage = event.get("usage")
    if not isinstance(usage, dict):
        return None
    return [_usage(event.get("model"), usage, CODEX_TURN, None)]


USAGE_PARSERS: dict[str, Callable[[str], list[Usage] | None]] = {
    "claude": parse_claude,
    "codex": parse_codex,
}


@dataclass
class UsageTally:
    """A run's usage per model, from the lines its profile's parser recognises."""

    profile: str
    by_model: dict[str, Usage] = field(default_factory=dict)

    def line(self, text: str) -> bool:
        parser = USAGE_PARSERS.get(self.profile)
        found = parser(text) if parser else None
        for usage in found or ():
            total = self.by_model.setdefault(usage.model, Usage(model=usage.model))
            total.input_tokens += usage.input_tokens
            total.output_tokens += usage.output_tokens
            total.cache_read_tokens += usage.cache_read_tokens
            total.cache_write_tokens += usage.cache_write_tokens
            if usage.cost_usd is not None:
                total.cost_usd = (total.cost_usd or 0.0) + usage.cost_usd
        return bool(found)
