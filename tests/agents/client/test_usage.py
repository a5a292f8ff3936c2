"""Issue 24 (usage, first step): the usage and cost a coding CLI prints, per profile."""

from __future__ import annotations

import json

from agents.client.usage import Usage, UsageTally, parse_claude, parse_codex

CLAUDE_RESULT = {
    "type": "result",
    "subtype": "success",
    "total_cost_usd": 0.0421,
    "usage": {
        "input_tokens": 12,
        "output_tokens": 340,
        "cache_read_input_tokens": 9000,
        "cache_creation_input_tokens": 1500,
    },
    "modelUsage": {
        "claude-sonnet-4-5": {
            "inputTokens": 12,
            "outputTokens": 340,
            "cacheReadInputTokens": 9000,
            "cacheCreationInputTokens": 1500,
            "costUSD": 0.04,
        },
        "claude-haiku-4-5": {"inputTokens": 100, "outputTokens": 20, "costUSD": 0.0021},
    },
}


def test_claudes_result_event_per_model():
    usages = parse_claude(json.dumps(CLAUDE_RESULT))
    by = {u.model: u for u in usages}
    sonnet = by["claude-sonnet-4-5"]
    assert (sonnet.input_tokens, sonnet.output_tokens) == (12, 340)
    assert (sonnet.cache_read_tokens, sonnet.cache_write_tokens) == (9000, 1500)
    assert sonnet.cost_usd == 0.04 and by["claude-haiku-4-5"].cost_usd == 0.0021
    # Without modelUsage: the totals.
    bare = {k: v for k, v in CLAUDE_RESULT.items() if k != "modelUsage"}
    [total] = parse_claude(json.dumps(bare))
    assert (total.output_tokens, total.cost_usd) == (340, 0.0421)
    # Other events and plain text are not usage.
    assert parse_claude('{"type": "assistant", "message": {}}') is None
    assert parse_claude("Claude says hello") is None
    assert parse_claude('{"type": "result", "usage": {"input_tokens": -5}}')[0].input_tokens == 0


def test_codex_turns_add_up_and_profiles_keep_to_their_parser():
    tally = UsageTally("codex")
    turn = {
        "type": "turn.completed",
        "usage": {"input_tokens": 1000, "cached_input_tokens": 800, "output_tokens": 50},
    }
    assert tally.line(json.dumps(turn)) and tally.line(json.dumps(turn))
    assert not tally.line('{"type": "item.completed"}')
    [usage] = tally.by_model.values()
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (2000, 1600, 100)
    assert usage.cost_usd is None  # codex reports no cost
    assert parse_codex(json.dumps(CLAUDE_RESULT)) is None
    assert not UsageTally("claude").line(json.dumps(turn))
    assert not UsageTally("unknown").line(json.dumps(CLAUDE_RESULT))


def test_a_usage_entry_leaves_out_a_cost_the_cli_did_not_say():
    """`POST usage` gets every count, and the cost only when there is one (agent and supervisor
    alike: `Client.usage`, `LiveRun.report_usage`)."""
    assert Usage(model="opus", output_tokens=300).entry() == {
        "model": "opus",
        "input_tokens": 0,
        "output_tokens": 300,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }
    assert Usage(model="opus", cost_usd=0.125).entry()["cost_usd"] == 0.125
