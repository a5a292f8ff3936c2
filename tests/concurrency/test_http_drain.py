"""Coders drain a queue through the REST API of a real ASGI server (SPEC §6, §11).

CI-sized: 100 tasks, 10 coders. The same drain at 1,000 tasks and 32 coders is a benchmark,
`bench/http_drain.py` (bench/README.md); the client loop is that script's `drain`.

Each coder is a client thread with its own key, next to a reviewer thread-mate with its own
key. A coder holds one task at a time and, after requesting review, waits (WAITING) until the
verdict (seed 000 agent machine), so the loop is the protocol's own: claim-next →
request-review → review claim → verdict APPROVED → claim-next … until claim-next answers
`task: null`. Every few rounds the waiting coder also tries to claim a second task, which the
server must refuse.

Checked afterwards, from the database: one `claimed` Event per task, every task APPROVED after
exactly one review round, no coder ever holding two tasks, no refused attempt but the probes,
and no response outside the expected ones.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict

import pytest
from django.db.models import Count
from django.utils import timezone

from bench.http_drain import drain, queue
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db(transaction=True)

# About ten rounds a coder, so every coder probes a second claim two or three times (rounds 0,
# 4, 8), and ten clients keep the server's request queue full on two cores.
TASKS = 100
CODERS = 10
PROBE_EVERY = 4
DEADLINE_S = 90  # the whole drain, at most; ~10 s here with the machine shared and loaded


def test_coders_drain_a_queue_through_the_api_with_no_double_claim(asgi_server):
    project = ProjectFactory()
    keys, pairs = queue(project, tasks=TASKS, coders=CODERS, now=timezone.now())

    result = drain(
        asgi_server.url, project.slug, pairs, deadline_s=DEADLINE_S, probe_every=PROBE_EVERY
    )
    print(
        f"\n{len(result.claims)} tasks drained by {CODERS} coders in {result.elapsed:.1f} s: "
        f"{result.requests} requests, {result.requests / result.elapsed:.0f} requests/s"
    )
    assert not result.hung, "a client thread hung"
    problems = "\n".join(result.unexpected[:20])
    assert result.unexpected == [], problems + "\n" + asgi_server.log_tail()

    # Every task claimed exactly once, as the clients saw it and as the event log has it.
    claimed_keys = Counter(key for _, key in result.claims)
    assert sorted(claimed_keys) == keys
    assert set(claimed_keys.values()) == {1}
    per_task = Event.objects.filter(project=project, action="claimed").values("task__key")
    assert {
        row["task__key"]: row["n"] for row in per_task.annotate(n=Count("id"))
    } == dict.fromkeys(keys, 1)
    # Every task went through exactly one review round and ended APPROVED.
    assert set(Task.objects.filter(project=project).values_list("status", flat=True)) == {
        "APPROVED"
    }
    submitted = Event.objects.filter(project=project, action="ready_for_review")
    assert Counter(submitted.values_list("task__key", flat=True)) == dict.fromkeys(keys, 1)
    # The probes are the only refused attempts: each a claim while waiting for a verdict.
    assert sum(result.probes.values()) >= CODERS  # every coder probed at least once
    refused = Event.objects.filter(project=project, outcome="rejected")
    assert Counter(refused.values_list("actor_id", "action")) == {
        (coder, "claim_failed"): n for coder, n in result.probes.items()
    }
    # No coder ever held two tasks: in the log, each coder's next claim comes after the
    # approval that released it from the previous one.
    approved_at = dict(
        Event.objects.filter(project=project, action="approved", to_status="APPROVED").values_list(
            "task_id", "id"
        )
    )
    held = defaultdict(list)
    for event_id, coder, task_id in Event.objects.filter(
        project=project, action="claimed", outcome="applied"
    ).values_list("id", "actor_id", "task_id"):
        held[coder].append((event_id, approved_at[task_id]))
    assert len(held) == CODERS  # every coder took part
    for coder, spans in held.items():
        spans.sort()
        overlaps = [(a, b) for a, b in itertools.pairwise(spans) if b[0] < a[1]]
        assert overlaps == [], f"{coder} held two tasks at once: {overlaps[:3]}"
    assert not Task.objects.filter(project=project, status="CLAIMED").exists()
