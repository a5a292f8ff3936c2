"""32 coders drain 1,000 tasks through the REST API of a real ASGI server (SPEC §6, §11).

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
import threading
import time
from collections import Counter, defaultdict

import httpx
import pytest
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from agents.services import agent_key_issue
from boards.models import Event, Task
from boards.services.kernel import SYSTEM
from boards.services.tasks import task_create, task_finalize
from tests.factories import ProjectFactory, register

pytestmark = pytest.mark.django_db(transaction=True)

TASKS = 1000
CODERS = 32
PROBE_EVERY = 8  # a waiting coder tries a second claim every 8th round
DEADLINE_S = 300  # the whole drain; each request also has its own timeout


def _queue(project, now) -> list[str]:
    keys = [f"task-{i:04d}" for i in range(TASKS)]
    with transaction.atomic():  # one commit for the whole queue
        planner = register(project, "planner-1", now=now)
        for i, key in enumerate(keys):
            task_create(
                project=project, actor=planner, key=key, description=f"Drain {key}",
                priority=1 + i % 5, spec_ref=f"specs/{key}.md", done_when="claimed once",
                now=now,
            )  # fmt: skip
            task_finalize(task=Task.objects.get(project=project, key=key), actor=planner, now=now)
    return keys


def test_32_coders_drain_1000_tasks_through_the_api(asgi_server):
    now = timezone.now()
    project = ProjectFactory()
    keys = _queue(project, now)
    pairs = []
    for i in range(1, CODERS + 1):
        coder = register(project, f"coder-{i}", now=now)
        reviewer = register(project, f"code-reviewer-{i}", now=now)
        pairs.append(
            (
                coder.agent_id,
                agent_key_issue(actor=SYSTEM, agent=coder, now=now)[1],
                agent_key_issue(actor=SYSTEM, agent=reviewer, now=now)[1],
            )
        )
    base = f"/api/v1/projects/{project.slug}"
    claims: list[tuple[str, str]] = []
    unexpected: list[str] = []
    probes = Counter()
    lock = threading.Lock()
    barrier = threading.Barrier(CODERS, timeout=60)
    deadline = time.monotonic() + DEADLINE_S

    def drive(coder_id: str, coder_key: str, reviewer_key: str) -> None:
        def client(key: str) -> httpx.Client:
            return httpx.Client(
                base_url=asgi_server.url + base,
                headers={"Authorization": f"Bearer {key}"},
                timeout=30,
            )

        def expect(response: httpx.Response, status: int, code: str | None = None) -> bool:
            body = response.json() if response.content else {}
            if response.status_code == status and (
                code is None or body.get("error", {}).get("code") == code
            ):
                return True
            with lock:
                unexpected.append(
                    f"{coder_id} {response.request.method} {response.request.url.path} → "
                    f"{response.status_code} {response.text[:300]}"
                )
            return False

        with client(coder_key) as coder, client(reviewer_key) as reviewer:
            barrier.wait()
            rounds = 0
            while time.monotonic() < deadline:
                r = coder.post("/tasks/claim-next", json={"base_commit": "base0001"})
                if not expect(r, 200):
                    return
                task = r.json()["task"]
                if task is None:
                    return
                if (task["status"], task["assigned_to"]) != ("CLAIMED", coder_id):
                    with lock:
                        unexpected.append(f"{coder_id} got {task['key']} as {task}")
                    return
                key = task["key"]
                with lock:
                    claims.append((coder_id, key))
                commit = f"{coder_id}-{rounds:04d}"
                r = coder.post(
                    f"/tasks/{key}/request-review",
                    json={"review_commit": commit, "tree_clean": True},
                )
                if not expect(r, 200) or r.json()["task"]["status"] != "READY_FOR_REVIEW":
                    return
                if rounds % PROBE_EVERY == 0:
                    # WAITING for the verdict: a second claim must be refused.
                    r = coder.post("/tasks/claim-next", json={"base_commit": "base0001"})
                    if not expect(r, 409, "conflict"):
                        return
                    with lock:
                        probes[coder_id] += 1
                r = reviewer.post(f"/tasks/{key}/review/claim")
                if not expect(r, 201):
                    return
                r = reviewer.post(
                    f"/tasks/{key}/verdict",
                    json={"verdict": "APPROVED", "review_commit": commit, "reason": "Looks right"},
                )
                if not expect(r, 200) or r.json()["task"]["status"] != "APPROVED":
                    return
                rounds += 1
            with lock:
                unexpected.append(f"{coder_id} still draining after {DEADLINE_S} s")

    def guarded(coder_id: str, coder_key: str, reviewer_key: str) -> None:
        try:
            drive(coder_id, coder_key, reviewer_key)
        except Exception as exc:  # a transport error is a failure too, not a thread warning
            with lock:
                unexpected.append(f"{coder_id}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=guarded, args=pair, daemon=True) for pair in pairs]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE_S + 60)
    elapsed = time.monotonic() - started
    assert not any(t.is_alive() for t in threads), "a client thread hung"
    requests = 4 * len(claims) + sum(probes.values()) + CODERS
    print(
        f"\n{len(claims)} tasks drained by {CODERS} coders in {elapsed:.1f} s: "
        f"{requests} requests, {requests / elapsed:.0f} requests/s, "
        f"{len(claims) / elapsed:.0f} claims/s"
    )
    assert unexpected == [], "\n".join(unexpected[:20]) + "\n" + asgi_server.log_tail()

    # Every task claimed exactly once, as the clients saw it and as the event log has it.
    claimed_keys = Counter(key for _, key in claims)
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
    refused = Event.objects.filter(project=project, outcome="rejected")
    assert Counter(refused.values_list("actor_id", "action")) == {
        (coder, "claim_failed"): n for coder, n in probes.items()
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
