"""The prompt of one spawn (the original's prompt builder sections, §2.4)."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any, Protocol

from agents.client import gitops, playbooks, wire
from agents.client.errors import LizaError
from agents.client.http import Client
from agents.client.supervisor.options import Assignment, Options


class Prompted(Protocol):
    """What the prompt reads of the supervisor (agents.client.supervisor.loop), named here so
    that the loop imports the prompt and not the other way round."""

    o: Options
    client: Client
    agent: dict[str, Any]
    repo: Path | None
    integration: str


def _field(task: dict[str, Any], name: str) -> str:
    value = task.get(name)
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "-"
    return str(value) if value not in (None, "") else "-"


def _task_section(heading: str, a: Assignment, *, commits: list[str], then: list[str]) -> list[str]:
    """What a coder and a reviewer are both told of their task, around what only one of them is:
    the commits it works from (`commits`) and what it must keep to (`then`)."""
    task = a.task or {}
    return [
        f"=== {heading} ===",
        f"Task: {task['key']}",
        f"Worktree: {a.worktree}",
        *commits,
        f"Iteration: {task['iteration']}",
        f"Description: {task['description']}",
        f"DONE WHEN: {_field(task, 'done_when')}",
        *then,
    ]


def build_prompt(s: Prompted, a: Assignment) -> str:
    agent = s.agent
    try:
        goal = s.client.goal().get("description", "-")
    except LizaError:
        goal = "no goal yet"
    sections = [
        "=== BOOTSTRAP CONTEXT ===",
        f"Mode: Liza {agent['role']}",
        f"Agent: {agent['agent_id']}",
        f"Project: {s.o.project} on {s.o.url}",
        f"Repository: {s.repo} (integration branch: {s.integration})",
        f"Goal: {goal}",
        "Rules: never claim, merge or create worktrees: the supervisor does. When the board "
        "says stop (lease lost, paused, checkpoint, aborted), end the session. Work silently.",
        "",
    ]
    task = a.task or {}
    if agent["role"] == "coder" and task:
        sections += _task_section(
            "ASSIGNED TASK",
            a,
            commits=[
                f"Branch: {gitops.branch_of(task['key'])} (base commit "
                f"{_field(task, 'base_commit')})"
            ],
            then=[f"SCOPE: {_field(task, 'scope')}", f"Spec: {_field(task, 'spec_ref')}"],
        )
        if task.get("integration_fix"):
            sections.append(
                f"INTEGRATION FIX: merge {f'{s.o.remote}/' if s.o.remote else ''}"
                f"{s.integration} into this branch and resolve the conflicts only; the "
                "implementation was already reviewed."
            )
        if task["iteration"] > 1 and task.get("rejection_reason"):
            sections += [
                "",
                "=== PRIOR REJECTION FEEDBACK (MUST ADDRESS) ===",
                task["rejection_reason"],
            ]
        if a.handoff:
            sections += [
                "",
                "=== HANDOFF ===",
                f"From: {a.handoff.get('agent')}",
                f"Summary: {a.handoff.get('summary')}",
                f"Next action: {a.handoff.get('next_action')}",
            ]
        sections.append("")
    elif agent["role"] == "code_reviewer" and task:
        sections += _task_section(
            "REVIEW TASK",
            a,
            commits=[
                f"Base commit: {_field(task, 'base_commit')}",
                f"Review commit: {_field(task, 'review_commit')}",
                f"Author: {_field(task, 'assigned_to')}",
            ],
            then=[f"Prior rejection: {_field(task, 'rejection_reason')}", ""],
        )
    elif agent["role"] == "planner":
        tasks = s.client.tasks()
        sections += ["=== PLANNING CONTEXT ===", f"WAKE TRIGGER: {wake_trigger(tasks)}"]
        counts = collections.Counter(t["status"] for t in tasks)
        sections.append(
            "SPRINT STATE: "
            + (", ".join(f"{status} {n}" for status, n in sorted(counts.items())) or "no tasks")
        )
        sections.append("")
    sections += [
        "=== PLAYBOOK ===",
        playbooks.render(agent["role"], s.o.agent_profile, s.repo, s.o.usage),
        "",
    ]
    return "\n".join(sections)


def wake_trigger(tasks: list[dict[str, Any]]) -> str:
    """The first trigger that applies, in the original's order."""
    statuses = [t["status"] for t in tasks]
    if not tasks:
        return "INITIAL_PLANNING"
    if wire.BLOCKED in statuses:
        return "BLOCKED_TASKS"
    if wire.INTEGRATION_FAILED in statuses:
        return wire.INTEGRATION_FAILED  # the trigger has the state's name
    if any(len(t.get("failed_by") or []) >= 2 for t in tasks):
        return "HYPOTHESIS_EXHAUSTED"
    return "UNKNOWN"
