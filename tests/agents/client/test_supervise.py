"""`liza supervise` end to end: a real server process, real `liza supervise` processes, and tiny
scripted agent commands (this file's AGENTS) working in a temporary git repository.

Every delay of the supervisor is shortened through its flags; what the supervisors did is read
back from the database and from git.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from agents.models import Agent, Run
from agents.selectors import recent_crashes
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Review
from boards.coordination.services.projects import config_update
from boards.protocol import TaskStatus
from tests.agents.client.gitrepo import git, new_repo
from tests.api.helpers import key_for
from tests.lifecycle import World

pytestmark = pytest.mark.django_db(transaction=True)

FAST = [
    "--poll-interval", "0.3", "--heartbeat-interval", "0.5", "--restart-delay", "0.2",
    "--crash-delay", "0.2",
]  # fmt: skip

# The scripted agents: each reads the LIZA_* contract and speaks through `liza` itself.
AGENT_LIB = """
import json, os, subprocess, sys
E = os.environ
def liza(*args, check=True):
    done = subprocess.run([sys.executable, "-m", "agents.client.cli", "--json", *args],
                          capture_output=True, text=True)
    if check and done.returncode:
        print("liza", *args, "->", done.returncode, done.stdout, done.stderr, flush=True)
        sys.exit(42 if done.returncode == 42 else 1)
    return json.loads(done.stdout) if done.stdout.strip() else None
def git(*args, cwd=None):
    return subprocess.run(["git", *args], cwd=cwd or E["LIZA_WORKTREE"], check=True,
                          capture_output=True, text=True).stdout.strip()
"""

CODER = (
    AGENT_LIB
    + """
key, wt = E["LIZA_TASK"], E["LIZA_WORKTREE"]
assert os.getcwd() == os.path.realpath(wt), (os.getcwd(), wt)
assert "LIZA_KEY" not in E and oct(os.stat(E["LIZA_KEY_FILE"]).st_mode & 0o777) == "0o600"
prompt = open(E["LIZA_PROMPT_FILE"]).read()
assert "=== ASSIGNED TASK ===" in prompt and key in prompt
print("working on", key, "key", open(E["LIZA_KEY_FILE"]).read().strip(), flush=True)
with open(os.path.join(wt, key + ".txt"), "a") as f:
    f.write(E.get("CONTENT", "done") + "\\n")
git("add", "-A"); git("commit", "-q", "-m", "work on " + key)
liza("submit", key, "--commit", git("rev-parse", "HEAD"), "--tree-clean")
sys.exit(42)
"""
)

REVIEWER = (
    AGENT_LIB
    + """
key = E["LIZA_TASK"]
assert "=== REVIEW TASK ===" in open(E["LIZA_PROMPT_FILE"]).read()
task = liza("task", "show", key)
liza("review", "verdict", key, "APPROVED", "--commit", task["review_commit"])
sys.exit(42)
"""
)


def write_agent(tmp_path: Path, name: str, source: str) -> list[str]:
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return [sys.executable, str(path)]


@pytest.fixture
def repo(tmp_path) -> Path:
    """A repository with one commit on main and an `integration` branch."""
    return new_repo(
        tmp_path / "repo",
        {"README": "project\n", ".gitignore": ".worktrees/\n"},
        email="agents@example.com",
        name="Agents",
    )


@pytest.fixture
def world():
    # Registered long ago: every lease is dead, so the supervisors may register these ids.
    return World(now=timezone.now() - timedelta(hours=3))


class Supervisors:
    def __init__(self, server, world: World, repo: Path, tmp_path: Path) -> None:
        self.server, self.world, self.repo, self.tmp = server, world, repo, tmp_path
        self.procs: list[subprocess.Popen[str]] = []

    def start(self, agent_id: str, command: list[str], *extra: str, **env: str):
        key_file = self.tmp / f"{agent_id}.key"
        key_file.write_text(key_for(self.world.agent(agent_id)))
        key_file.chmod(0o600)
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agents.client.cli",
                "supervise",
                *FAST,
                *extra,
                "--",
                *command,
            ],
            cwd=self.repo,
            env={
                **os.environ,
                "LIZA_URL": self.server.url,
                "LIZA_PROJECT": self.world.project.slug,
                "LIZA_KEY_FILE": str(key_file),
                "PYTHONPATH": str(Path(__file__).resolve().parents[3]),
                **env,
            },
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        """Every supervisor killed with the agents it started (each in a process group of its
        own, which a supervisor's SIGKILL leaves running), then the server's requests of theirs
        still under way let finish: the test's tables are emptied next, and a write under way
        deadlocked with that once (CI, a run's row)."""
        for proc in self.procs:
            if proc.poll() is None:
                for child in _children(proc.pid):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(child, signal.SIGKILL)
                proc.kill()
            proc.wait()
        _wait_for_quiet_database()


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc: no dependency for one question)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            after_name = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(after_name[1]) == pid:
            children.append(int(stat.parent.name))
    return children


def _wait_for_quiet_database(timeout: float = 15) -> None:
    """Until no other session of the test database is inside a statement or a transaction."""
    from django.db import connection

    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND state <> 'idle'"
            )
            if cursor.fetchone()[0] == 0:
                return
            time.sleep(0.1)


@pytest.fixture
def supervisors(cli_server, world, repo, tmp_path):
    team = Supervisors(cli_server, world, repo, tmp_path)
    yield team
    team.stop()


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str]:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise AssertionError(f"the supervisor did not stop:\n{out}") from None
    return proc.returncode, out


def finish_all(*procs: subprocess.Popen[str], timeout: float = 90) -> list[tuple[int, str]]:
    """Every process's exit and output; all their outputs in the failure when one hangs."""
    outputs: list[str] = [""] * len(procs)
    readers = [
        threading.Thread(target=lambda i=i, p=p: outputs.__setitem__(i, p.stdout.read()))
        for i, p in enumerate(procs)
    ]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + timeout
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for other in procs:
                other.kill()
            for reader in readers:
                reader.join()
            raise AssertionError("a supervisor did not stop:\n" + "\n---\n".join(outputs)) from None
    for reader in readers:
        reader.join()
    return [(proc.returncode, out) for proc, out in zip(procs, outputs, strict=True)]


def ended_runs(world: World) -> int:
    return Run.objects.filter(project=world.project, ended__isnull=False).count()


def leases_of_seconds(world: World) -> None:
    """Leases of 3 s (1 s heartbeats, 1 s grace): a stopped or killed agent's lease lapses
    within the test."""
    config_update(
        project=world.project,
        actor=world.admin,
        now=timezone.now(),
        lease_duration=3,
        heartbeat_interval=1,
        lease_grace=1,
    )


def wait_for(predicate, timeout: float = 60, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_coder_and_a_reviewer_supervisor_take_a_task_to_merged(supervisors, world, repo):
    world.unclaimed("T1")
    coder = supervisors.start("coder-1", write_agent(supervisors.tmp, "coder", CODER))
    reviewer = supervisors.start("code-reviewer-1", write_agent(supervisors.tmp, "rev", REVIEWER))

    (coder_exit, coder_out), (reviewer_exit, reviewer_out) = finish_all(coder, reviewer)

    assert (coder_exit, reviewer_exit) == (0, 0), coder_out + reviewer_out
    task = world.task("T1")
    assert task.status == TaskStatus.MERGED, coder_out + reviewer_out
    # Merged into integration: the reviewer's supervisor merged the reviewed commit.
    assert task.merge_commit == git(repo, "rev-parse", "integration")
    assert git(repo, "show", "integration:T1.txt") == "done"
    assert not (repo / ".worktrees" / "T1").exists()
    assert "task/T1" not in git(repo, "branch", "--list")
    assert "T1: MERGED into integration" in reviewer_out
    assert "role complete" in coder_out
    # One run each, exit 42 (submitted, verdict given), the coder's key redacted.
    runs = {r.agent.agent_id: r for r in Run.objects.filter(project=world.project)}
    assert runs["coder-1"].exit_code == 42 and runs["coder-1"].task.key == "T1"
    assert runs["code-reviewer-1"].exit_code == 42
    assert "working on T1 key [redacted]" in runs["coder-1"].output
    assert "liza_" not in runs["coder-1"].output


def test_no_wrapper_an_exit_after_protocol_progress_is_a_sessions_end_not_a_crash(
    supervisors, world, repo
):
    """Issue 23 §2: a coding CLI exits 0 or 1 whatever it did. The coder submits and exits 1,
    the reviewer gives its verdict and exits 0: neither is a crash (the session moved the
    protocol), both stop once `/work` says their role is complete; the task is merged."""
    world.unclaimed("T1")
    coder = supervisors.start(
        "coder-1",
        write_agent(supervisors.tmp, "coder", CODER.replace("sys.exit(42)", "sys.exit(1)")),
    )
    reviewer = supervisors.start(
        "code-reviewer-1",
        write_agent(supervisors.tmp, "rev", REVIEWER.replace("sys.exit(42)", "sys.exit(0)")),
    )

    (coder_exit, coder_out), (reviewer_exit, reviewer_out) = finish_all(coder, reviewer)

    assert (coder_exit, reviewer_exit) == (0, 0), coder_out + reviewer_out
    assert world.task("T1").status == TaskStatus.MERGED
    runs = {r.agent.agent_id: r for r in Run.objects.filter(project=world.project)}
    assert (runs["coder-1"].exit_code, runs["coder-1"].progress) == (1, True)
    assert not runs["coder-1"].crashed
    assert "the agent exited 1 after protocol progress" in coder_out, coder_out
    assert "crashed" not in coder_out
    assert not Event.objects.filter(project=world.project, action="agent_crashed").exists()
    assert "role complete; stopping" in reviewer_out


def test_a_non_zero_exit_with_no_progress_is_a_crash(supervisors, world):
    """The other half of the rule: exit 1 having done nothing on the board is a crash."""
    world.unclaimed("T1")
    proc = supervisors.start(
        "coder-1", write_agent(supervisors.tmp, "idle", AGENT_LIB + "\nsys.exit(1)\n")
    )
    code, out = finish(proc)
    assert code == 12, out
    runs = Run.objects.filter(project=world.project)
    assert [(r.exit_code, r.progress, r.crashed) for r in runs] == [(1, False, True)] * 3


def test_supervisors_started_before_the_plan_wait_for_it_and_stop_once_the_goal_is_done(
    supervisors, world, repo
):
    """The defect this pins: a coder or reviewer supervisor started before the planner wrote
    its first task was told "role complete" and exited 0. Under an open goal it waits without
    spawning, works the tasks when they come, and stops only once the goal is COMPLETED."""
    from boards.coordination.models.projects import Goal
    from boards.coordination.services.goals import goal_complete, goal_create

    goal = goal_create(
        project=world.project, actor=world.planner, description="Ship", now=timezone.now()
    )
    # This coder reads seed 000's table literally: no UNCLAIMED task left, it exits 0.
    literal = CODER.replace("\nsys.exit(42)\n", "\nsys.exit(0)\n")
    assert literal != CODER
    coder = supervisors.start("coder-1", write_agent(supervisors.tmp, "coder", literal))
    reviewer = supervisors.start("code-reviewer-1", write_agent(supervisors.tmp, "rev", REVIEWER))
    time.sleep(2)  # several of their polls (--poll-interval 0.3)
    assert (coder.poll(), reviewer.poll()) == (None, None)
    assert not Run.objects.filter(project=world.project).exists()

    world.unclaimed("T1")  # the planner's first task
    wait_for(lambda: world.task("T1").status == TaskStatus.MERGED, what="T1 merged")
    time.sleep(1)  # every task ended, the goal still open: the planner's turn, not an end
    assert (coder.poll(), reviewer.poll()) == (None, None)

    goal_complete(goal=goal, actor=world.planner, reason="T1 merged", now=timezone.now())

    (coder_exit, coder_out), (reviewer_exit, reviewer_out) = finish_all(coder, reviewer)
    assert (coder_exit, reviewer_exit) == (0, 0), coder_out + reviewer_out
    assert f"waiting: goal {goal.goal_id} is IN_PROGRESS" in coder_out, coder_out
    # Its agent's exit 0 with T1 in review did not stop it: /work said work may still come.
    assert "the agent exited 0, but the role is not complete" in coder_out, coder_out
    assert "role complete; stopping" in coder_out and "role complete; stopping" in reviewer_out
    assert Goal.objects.get(pk=goal.pk).status == "COMPLETED"
    assert Run.objects.filter(project=world.project, task__key="T1").count() == 2


def test_a_collision_exits_6(supervisors, world):
    # coder-1's session is alive elsewhere.
    Agent.objects.filter(project=world.project, agent_id="coder-1").update(
        lease_expires=timezone.now() + timedelta(minutes=30)
    )
    proc = supervisors.start("coder-1", [sys.executable, "-c", "pass"])
    code, out = finish(proc)
    assert code == 6, out
    assert "collision" in out


CRASHER = AGENT_LIB + "\nprint('boom', flush=True)\nsys.exit(3)\n"


def test_a_crash_loop_stops_the_supervisor(supervisors, world):
    world.unclaimed("T1")
    proc = supervisors.start("coder-1", write_agent(supervisors.tmp, "crash", CRASHER))

    code, out = finish(proc)

    assert code == 12, out
    assert "crash loop: the agent crashed 3 times" in out
    runs = list(Run.objects.filter(project=world.project).order_by("started"))
    assert [r.exit_code for r in runs] == [3, 3, 3]
    assert [r.restart_reason for r in runs] == ["start", "crash: exit 3", "crash: exit 3"]
    assert all(r.crashed and r.output == "boom" for r in runs)
    crashes = recent_crashes(
        agent=world.agent("coder-1"), window=timedelta(minutes=5), now=timezone.now()
    )
    assert len(crashes) == 3
    assert Event.objects.filter(project=world.project, action="agent_crashed").count() == 3


def test_the_supervisors_own_error_is_said_tried_again_and_stops_it_when_it_recurs(
    supervisors, world, repo
):
    """A failure of the supervisor's own (here the machine's: each prompt file's path taken by
    a directory) is printed with its traceback and the round tried again; the third within
    the crash window stops it with exit 13. The claim it made stays its own."""
    world.unclaimed("T1")
    state = repo / ".git" / "liza" / "coder-1"
    for spawn in (1, 2, 3):
        (state / f"prompt-{spawn}.md").mkdir(parents=True)
    proc = supervisors.start("coder-1", write_agent(supervisors.tmp, "crash", CRASHER))

    code, out = finish(proc)

    assert code == 13, out
    assert out.count("internal error:\nTraceback") == 3, out
    assert out.count("IsADirectoryError") == 3, out
    assert out.count("trying again in 0.2 s") == 2, out
    assert "the supervisor failed 3 times within 300 s; stopping (exit 13)" in out
    assert not Run.objects.filter(project=world.project).exists()  # the agent never started
    task = world.task("T1")
    assert (task.status, task.assigned_to) == ("CLAIMED", "coder-1")


SLEEPY = AGENT_LIB + "\nimport time\nprint('started', flush=True)\ntime.sleep(60)\n"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_is_forwarded_and_the_task_handed_off(supervisors, world, signum):
    world.unclaimed("T1")
    proc = supervisors.start("coder-1", write_agent(supervisors.tmp, "sleep", SLEEPY))
    wait_for(lambda: Run.objects.filter(project=world.project).exists(), what="the agent to start")
    time.sleep(0.5)

    proc.send_signal(signum)
    code, out = finish(proc, timeout=30)

    assert code == 0, out
    task = world.task("T1")
    assert task.status == TaskStatus.CLAIMED and task.handoff_pending
    assert "T1: handed off" in out
    run = Run.objects.get(project=world.project)
    assert run.exit_code == -signum
    # A stop the supervisor caused is never a crash: it would count towards "in error".
    assert run.stopped_by == f"signal {signal.Signals(signum).name}" and not run.crashed
    assert not Event.objects.filter(project=world.project, action="agent_crashed").exists()


def test_a_stopped_reviewer_supervisor_gives_its_review_back_and_restarted_takes_it_again(
    supervisors, world
):
    """Left open, the review would hold its slot until its lease and grace lapsed. Given back
    as its session stopping, not as the reviewer's judgement: the lone reviewer, restarted (an
    operator's restart, a reboot), is offered it again instead of waiting for a human."""
    # Leases of seconds, as over a reboot: the identity lapses before the restart even where
    # the stopped supervisor could not give it up (that it does: the next test).
    leases_of_seconds(world)
    world.ready_for_review("T1")
    sleepy = write_agent(supervisors.tmp, "sleep", SLEEPY)
    proc = supervisors.start("code-reviewer-1", sleepy)
    wait_for(lambda: Run.objects.filter(project=world.project).exists(), what="the agent to start")
    assert Review.objects.get(task=world.task("T1"), closed_at__isnull=True).reviewer == (
        "code-reviewer-1"
    )

    proc.send_signal(signal.SIGTERM)
    code, out = finish(proc, timeout=30)

    assert code == 0, out
    assert "T1: review given back" in out
    assert world.task("T1").status == TaskStatus.READY_FOR_REVIEW
    assert not Review.objects.filter(task=world.task("T1"), closed_at__isnull=True).exists()
    released = Event.objects.get(project=world.project, action="review_released")
    assert released.detail == "the supervisor of code-reviewer-1 was stopped by signal SIGTERM"
    assert released.data["stopping"] is True

    lapsed = world.agent("code-reviewer-1").lease_expires
    wait_for(lambda: timezone.now() > lapsed, what="the stopped reviewer's lease to lapse")
    proc = supervisors.start("code-reviewer-1", sleepy)
    wait_for(
        lambda: Run.objects.filter(project=world.project).count() == 2,
        what="the restarted reviewer's agent",
    )
    again = Review.objects.get(task=world.task("T1"), closed_at__isnull=True)
    assert again.reviewer == "code-reviewer-1"
    runs = Run.objects.filter(project=world.project).order_by("started")
    assert [r.task.key for r in runs] == ["T1", "T1"]
    proc.send_signal(signal.SIGTERM)
    code, out = finish(proc, timeout=30)
    assert code == 0 and "T1: review given back" in out, out


def test_stopped_supervisors_give_up_their_identities_and_restarted_at_once_register_again(
    supervisors, world
):
    """A supervisor stopped by a signal (Ctrl+C, a deploy) gives its agent's identity up as it
    stops (SPEC §5.2 "→ (deregistered)"; the original Liza deletes its registry entry on exit):
    the same id started again at once registers, where it exited 6 (collision) until the lease
    ran out (minutes). A coder waiting for work, which holds nothing to hand off, and a
    reviewer holding a review, which it gives back first, alike."""
    world.ready_for_review("T1")  # coder-1's: no work for coder-2, a review for the reviewer
    sleepy = write_agent(supervisors.tmp, "sleep", SLEEPY)
    ids = ("coder-2", "code-reviewer-1")
    outs: list[tuple[str, str]] = []

    def registered(times: int) -> bool:
        return all(
            Event.objects.filter(project=world.project, actor_id=i, action="restarted").count()
            == times
            for i in ids
        )

    for session in (1, 2):
        procs = [supervisors.start(i, sleepy) for i in ids]
        wait_for(
            lambda n=session, procs=procs: (
                registered(n) or any(p.poll() is not None for p in procs)
            ),
            what=f"session {session}'s registrations",
        )
        exited = [finish(p) for p in procs if p.poll() is not None]
        assert not exited, exited  # a collision: exit 6
        wait_for(
            lambda n=session: Run.objects.filter(project=world.project).count() == n,
            what=f"session {session}'s review",
        )
        assert Review.objects.get(task=world.task("T1"), closed_at__isnull=True).reviewer == (
            "code-reviewer-1"
        )
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        (coder_exit, coder_out), (reviewer_exit, reviewer_out) = finish_all(*procs, timeout=30)

        assert (coder_exit, reviewer_exit) == (0, 0), coder_out + reviewer_out
        assert "T1: review given back" in reviewer_out
        outs.append((coder_out, reviewer_out))

    now = timezone.now()
    for agent_id, said in zip(ids, zip(*outs, strict=True), strict=True):
        assert all(f"{agent_id} left: its id is free to register again" in o for o in said), said
        assert not world.agent(agent_id).has_live_lease(now)
    left = Event.objects.filter(project=world.project, action="deregistered")
    assert sorted(left.values_list("actor_id", flat=True)) == sorted(ids * 2)


def test_a_leave_the_server_does_not_answer_is_said_in_one_line_and_stops_nothing():
    """The server away as the supervisor stops: the identity stays held until its lease lapses
    (as before leaving existed), and the stop goes on with the exit code it had."""
    from agents.client.http import Client
    from agents.client.supervisor import Options, Supervisor

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{free.getsockname()[1]}"  # closed once the block ends
    said: list[str] = []
    client = Client(url, "demo", "liza_key", retries=0)
    supervisor = Supervisor(
        Options(url=url, project="demo", key="liza_key", command=["true"]),
        client=client,
        say=said.append,
    )
    supervisor.agent = {"agent_id": "coder-1", "role": "coder"}

    supervisor.leave()  # raises nothing

    assert len(said) == 1 and said[0].startswith("leaving failed: unreachable: "), said


def test_a_restarted_supervisor_resumes_a_handed_off_task_working_and_hands_off_again(
    supervisors, world
):
    """The next session of a handed-off task is WORKING on it (it was left IDLE while holding
    the task), so its own handoff frees the identity: the third session registers (it exited 6,
    collision, until the lease ran out)."""
    world.unclaimed("T1")
    for session in (1, 2, 3):
        proc = supervisors.start("coder-1", write_agent(supervisors.tmp, "sleep", SLEEPY))
        wait_for(
            lambda n=session: Run.objects.filter(project=world.project).count() == n,
            what=f"session {session}'s agent",
        )
        agent = world.agent("coder-1")
        assert (agent.status, agent.current_task.key) == ("WORKING", "T1")
        proc.send_signal(signal.SIGTERM)
        code, out = finish(proc, timeout=30)
        assert code == 0 and "T1: handed off" in out, out
        assert world.agent("coder-1").status == "HANDOFF"
    runs = Run.objects.filter(project=world.project).order_by("started")
    assert [r.task.key for r in runs] == ["T1"] * 3
    assert not any(r.crashed for r in runs)


def test_an_agent_that_ignores_sigterm_is_killed_after_the_grace_and_the_task_handed_off(
    supervisors, world
):
    """The signal handler only forwards the signal and sets an alarm (it may take no lock):
    the alarm's SIGKILL ends an agent that will not stop, and the supervisor goes on to hand
    the task off and exit 0."""
    world.unclaimed("T1")
    stubborn = AGENT_LIB + (
        "\nimport signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('started', flush=True)\ntime.sleep(60)\n"
    )
    proc = supervisors.start(
        "coder-1", write_agent(supervisors.tmp, "stubborn", stubborn), "--terminate-grace", "1"
    )
    wait_for(lambda: Run.objects.filter(project=world.project).exists(), what="the agent to start")
    time.sleep(0.5)

    proc.send_signal(signal.SIGTERM)
    code, out = finish(proc, timeout=30)

    assert code == 0, out
    run = Run.objects.get(project=world.project)
    assert run.exit_code == -signal.SIGKILL, out
    task = world.task("T1")
    assert task.status == TaskStatus.CLAIMED and task.handoff_pending
    assert "T1: handed off" in out


def test_dry_run_registers_nothing(supervisors, world):
    world.unclaimed("T1")
    proc = supervisors.start("coder-1", ["true"], "--dry-run", "--role", "coder")
    code, out = finish(proc)
    assert code == 0, out
    assert "would claim-next with base_commit" in out
    assert world.task("T1").status == TaskStatus.UNCLAIMED
    assert not Run.objects.filter(project=world.project).exists()


# An agent that works on its first spawn only after a pause came and went: it heartbeats until
# the server says stop (exit 42), the supervisor waits the pause out, and its next spawn codes.
PAUSED_FIRST = (
    AGENT_LIB
    + """
import time
marker = os.path.join(E["MARKERS"], E["LIZA_TASK"] + ".first")
if not os.path.exists(marker):
    open(marker, "w").close()
    print("first spawn: heartbeating", flush=True)
    while True:
        liza("heartbeat")
        time.sleep(0.2)
"""
    + CODER.removeprefix(AGENT_LIB)
)


def test_a_pause_stops_the_agent_with_42_and_continue_restarts_it(supervisors, world, tmp_path):
    from boards.coordination.services.projects import project_pause, project_resume

    world.unclaimed("T1")
    proc = supervisors.start(
        "coder-1", write_agent(tmp_path, "paused", PAUSED_FIRST), MARKERS=str(tmp_path)
    )
    wait_for(lambda: (tmp_path / "T1.first").exists(), what="the first spawn")

    project_pause(project=world.project, actor=world.admin, reason="Hold", now=timezone.now())
    wait_for(
        lambda: Run.objects.filter(project=world.project, ended__isnull=False).exists(),
        what="the first run to end",
    )
    time.sleep(1)  # the supervisor now waits without spawning
    assert Run.objects.filter(project=world.project).count() == 1
    first = Run.objects.get(project=world.project)
    # The agent's own heartbeat (exit 42) or the supervisor's (`stop`) saw the pause first.
    assert first.exit_code == 42 or first.stopped_by == "paused", first.output

    project_resume(project=world.project, actor=world.admin, now=timezone.now())
    wait_for(lambda: ended_runs(world) == 2, what="the second spawn")
    assert world.task("T1").status == TaskStatus.READY_FOR_REVIEW
    proc.send_signal(signal.SIGTERM)
    code, out = finish(proc)
    assert code == 0, out
    second = Run.objects.filter(project=world.project).order_by("started").last()
    assert second.restart_reason in ("exit_42", "paused") and second.exit_code == 42, out
    assert "waiting: project" in out


def test_drafts_are_waited_for_without_spawning_then_worked(supervisors, world, tmp_path):
    from boards.coordination.services.tasks import task_finalize

    world.draft("T1")
    proc = supervisors.start("coder-1", write_agent(tmp_path, "coder", CODER))
    time.sleep(2)
    assert not Run.objects.filter(project=world.project).exists()
    assert proc.poll() is None  # not role complete: the DRAFT may be finalized

    task_finalize(task=world.task("T1"), actor=world.planner, now=timezone.now())
    wait_for(lambda: world.task("T1").status == TaskStatus.READY_FOR_REVIEW, what="the work")
    proc.send_signal(signal.SIGTERM)
    code, out = finish(proc)
    assert code == 0, out
    assert Run.objects.get(project=world.project).task.key == "T1"


SLEEPER = (
    AGENT_LIB
    + """
import time
open(os.path.join(E["MARKERS"], "agent.pid"), "w").write(str(os.getpid()))
print("working slowly", flush=True)
time.sleep(120)
"""
)


def test_a_killed_coders_task_is_taken_over_after_its_lease_expires(
    supervisors, world, tmp_path, repo
):
    leases_of_seconds(world)
    world.unclaimed("T1")
    first = supervisors.start(
        "coder-1", write_agent(tmp_path, "sleeper", SLEEPER), MARKERS=str(tmp_path)
    )
    wait_for(lambda: (tmp_path / "agent.pid").exists(), what="coder-1's agent")
    assert world.task("T1").assigned_to == "coder-1"
    first.kill()  # SIGKILL: no handoff, no goodbye
    os.kill(int((tmp_path / "agent.pid").read_text()), signal.SIGKILL)
    first.wait()

    # Seed 000: a coder with nothing claimable is role-complete, so coder-2 comes once the
    # lease (3 s) and its grace (1 s) have lapsed; claim-next then takes the task over.
    lapsed = world.task("T1").lease_expires + timedelta(seconds=1)
    wait_for(lambda: timezone.now() > lapsed, what="the lease to lapse")
    second = supervisors.start("coder-2", write_agent(tmp_path, "coder", CODER))
    try:
        wait_for(
            lambda: Run.objects.filter(agent__agent_id="coder-2", ended__isnull=False).exists(),
            timeout=60,
            what="coder-2 to take T1 over",
        )
    finally:
        second.send_signal(signal.SIGTERM)
        _, out = finish(second)
        print(out)
    task = world.task("T1")
    assert task.assigned_to == "coder-2" and "coder-1" in task.failed_by, out
    # coder-2 started a fresh branch: coder-1's worktree went with its claim.
    assert git(repo, "show", f"{task.review_commit}:T1.txt") == "done"


REJECTING_ONCE = (
    AGENT_LIB
    + """
key = E["LIZA_TASK"]
task = liza("task", "show", key)
liza("review", "verdict", key, "APPROVED", "--commit", task["review_commit"])
sys.exit(42)
"""
)


def test_an_integration_failure_is_reported_and_reclaimed(supervisors, world, tmp_path, repo):
    world.unclaimed("T1")
    # integration moves on under the task: the same file, another line.
    (repo / "T1.txt").write_text("somebody else\n")
    coder = supervisors.start("coder-1", write_agent(tmp_path, "coder", CODER))
    wait_for(lambda: world.task("T1").status == TaskStatus.READY_FOR_REVIEW, what="the work")
    coder.send_signal(signal.SIGTERM)
    finish(coder)
    git(repo, "checkout", "-q", "integration")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a conflicting change")
    git(repo, "checkout", "-q", "main")

    reviewer = supervisors.start("code-reviewer-1", write_agent(tmp_path, "rev", REVIEWER))
    wait_for(
        lambda: world.task("T1").status == TaskStatus.INTEGRATION_FAILED, what="the failed merge"
    )
    reviewer.send_signal(signal.SIGTERM)
    _, reviewer_out = finish(reviewer)
    assert "T1: INTEGRATION_FAILED" in reviewer_out and "CONFLICT" in reviewer_out
    event = Event.objects.filter(project=world.project, action="integration_failed").get()
    assert "CONFLICT" in event.detail or "CONFLICT" in str(event.data)

    # Any coder re-claims it as an integration fix, in the kept worktree.
    fixer = supervisors.start("coder-2", write_agent(tmp_path, "coder", CODER))
    wait_for(lambda: world.task("T1").status == TaskStatus.READY_FOR_REVIEW, what="the fix")
    fixer.send_signal(signal.SIGTERM)
    finish(fixer)
    task = world.task("T1")
    assert task.integration_fix and task.assigned_to == "coder-2"
    assert git(repo, "rev-list", "--count", f"{task.base_commit}..{task.review_commit}") == "2"


def test_a_lease_lost_while_the_agent_runs_terminates_it_and_restarts(supervisors, world, tmp_path):
    from boards.coordination.services.tasks import task_release_claim

    world.unclaimed("T1")
    proc = supervisors.start(
        "coder-1", write_agent(tmp_path, "sleeper", SLEEPER), MARKERS=str(tmp_path)
    )
    wait_for(lambda: (tmp_path / "agent.pid").exists(), what="the agent")
    agent_pid = int((tmp_path / "agent.pid").read_text())
    (tmp_path / "agent.pid").unlink()

    # An admin takes the claim back: the next heartbeat is 409 lease_lost (exit 42).
    task_release_claim(task=world.task("T1"), actor=world.admin, reason="stuck", now=timezone.now())
    wait_for(lambda: ended_runs(world) == 1, what="the agent to be stopped")
    wait_for(lambda: (tmp_path / "agent.pid").exists(), what="the restarted agent")
    proc.send_signal(signal.SIGTERM)
    code, out = finish(proc)

    first, second = Run.objects.filter(project=world.project).order_by("started")[:2]
    assert first.stopped_by == "lease_lost" and first.exit_code == -signal.SIGTERM, out
    assert second.restart_reason == "lease_lost"
    with pytest.raises(ProcessLookupError):
        os.kill(agent_pid, 0)  # the first agent is gone
    assert code == 0


def test_an_agent_that_left_while_it_runs_is_stopped_and_the_supervisor_exits_8(
    supervisors, world, tmp_path
):
    """Its identity given up behind its supervisor's back (`liza leave` with its key, after a
    handoff): the next heartbeat is 409 not_registered (exit 8). The supervisor stops the
    agent, neither restarts it nor heartbeats on (no session would hear it), does not leave a
    second time, and exits 8."""
    from agents.services import agent_handoff, agent_leave

    world.unclaimed("T1")
    proc = supervisors.start(
        "coder-1", write_agent(tmp_path, "sleeper", SLEEPER), MARKERS=str(tmp_path)
    )
    wait_for(lambda: (tmp_path / "agent.pid").exists(), what="the agent")
    agent_pid = int((tmp_path / "agent.pid").read_text())
    agent_handoff(
        agent=world.agent("coder-1"),
        task=world.task("T1"),
        now=timezone.now(),
        summary="stopped by hand",
        next_action="resume",
    )
    agent_leave(project=world.project, agent=world.agent("coder-1"), now=timezone.now())
    code, out = finish(proc)

    assert code == 8, out
    assert "coder-1 is not registered (it left): the agent was stopped; stopping (exit 8)" in out
    (run,) = Run.objects.filter(project=world.project)  # not restarted
    assert (run.stopped_by, run.exit_code, run.reason) == (
        "not_registered",
        -signal.SIGTERM,
        "the agent left",
    )
    with pytest.raises(ProcessLookupError):
        os.kill(agent_pid, 0)  # the agent is gone
    left = Event.objects.filter(project=world.project, action="deregistered")
    assert left.count() == 1  # its own, by hand: the supervisor did not leave again
    refused = Event.objects.filter(project=world.project, action="heartbeat_failed")
    assert list(refused.values_list("data__code", flat=True)) == ["not_registered"]
    assert not world.agent("coder-1").has_live_lease(timezone.now())


def test_a_superseded_supervisor_stops_at_its_next_ask_and_does_not_end_the_newer_session(
    supervisors, world
):
    """Two supervisors of coder-2 (no work for it yet: both wait). The first's lease lapses while it
    waits (a hung process, a partition), and the second registers the id again (session 3:
    the world's registration was 1). The first's next `/work`, sent with its generation, is
    `not_registered` (exit 8): it stops by itself, said in one line, without leaving — a leave
    would be refused too (tests/api/test_views_agents.py) — and the second session lives on.
    Before the fence, its late leave ended the healthy session; before `/work` was fenced, it
    waited on ("work is in progress elsewhere") until it was stopped."""
    world.ready_for_review("T1")  # coder-1's: no work for coder-2, but its role not complete
    leases_of_seconds(world)
    sleepy = write_agent(supervisors.tmp, "sleep", SLEEPY)

    def registrations() -> int:
        return Event.objects.filter(
            project=world.project, actor_id="coder-2", action="restarted"
        ).count()

    first = supervisors.start("coder-2", sleepy)
    wait_for(lambda: registrations() == 1, what="the first registration")
    wait_for(
        lambda: not world.agent("coder-2").has_live_lease(timezone.now()),
        what="the first session's lease to lapse",
    )
    second = supervisors.start("coder-2", sleepy)
    wait_for(lambda: registrations() == 2 or second.poll() is not None, what="the second")
    assert second.poll() is None, finish(second)

    code, first_out = finish(first)  # by itself: no signal sent

    assert code == 8, first_out
    assert "liza: not_registered: session 2 of coder-2 was superseded by session 3" in (
        first_out
    ), first_out
    assert "leaving" not in first_out
    live = world.agent("coder-2")
    assert (live.left_at, live.generation) == (None, 3)
    assert not Event.objects.filter(project=world.project, action="deregistered").exists()
    assert not Event.objects.filter(project=world.project, action="agent_leave_failed").exists()
    assert second.poll() is None, finish(second)
    second.send_signal(signal.SIGTERM)
    code, second_out = finish(second)
    assert (code, "coder-2 left: its id is free to register again" in second_out) == (0, True)


GENERATION_SAYER = (
    AGENT_LIB
    + """
import time
open(os.path.join(E["MARKERS"], "generation"), "w").write(E.get("LIZA_GENERATION", "none"))
time.sleep(120)
"""
)


def test_the_agent_is_started_with_its_sessions_generation(supervisors, world, tmp_path):
    """LIZA_GENERATION: the supervisor's registration (the world's was 1), which the agent's
    `liza` and `liza mcp` send (test_cli.py: a superseded one exits 8)."""
    world.unclaimed("T1")
    supervisors.start(
        "coder-1", write_agent(tmp_path, "sayer", GENERATION_SAYER), MARKERS=str(tmp_path)
    )
    said = tmp_path / "generation"
    wait_for(lambda: said.exists() and said.read_text(), what="the agent")
    assert said.read_text() == "2" == str(world.agent("coder-1").generation)


def shared_remote(repo: Path, tmp_path: Path, *names: str) -> tuple[Path, dict[str, Path]]:
    """A bare copy of `repo` as the remote, and a clone of it per machine name."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(remote))
    machines = {}
    for name in names:
        machines[name] = tmp_path / name
        git(tmp_path, "clone", "-q", str(remote), str(machines[name]))
        git(machines[name], "config", "user.email", f"{name}@example.com")
        git(machines[name], "config", "user.name", name)
    return remote, machines


def test_agents_on_two_machines_share_a_remote(supervisors, world, repo, tmp_path):
    """A bare repository as the shared remote, one clone per machine: the coder's supervisor
    pushes task/T1 from its clone, the reviewer's supervisor fetches it into its own, and its
    merge lands on the remote's integration."""
    remote, machines = shared_remote(repo, tmp_path, "coder-machine", "reviewer-machine")
    world.unclaimed("T1")
    coder = supervisors.start(
        "coder-1",
        write_agent(tmp_path, "coder", CODER),
        "--repo", str(machines["coder-machine"]), "--remote", "origin",
    )  # fmt: skip
    reviewer = supervisors.start(
        "code-reviewer-1",
        write_agent(tmp_path, "rev", REVIEWER),
        "--repo", str(machines["reviewer-machine"]),
        LIZA_REMOTE="origin",
    )  # fmt: skip

    (coder_exit, coder_out), (reviewer_exit, reviewer_out) = finish_all(coder, reviewer)

    assert (coder_exit, reviewer_exit) == (0, 0), coder_out + reviewer_out
    task = world.task("T1")
    assert task.status == TaskStatus.MERGED, coder_out + reviewer_out
    assert "T1: pushed task/T1 to origin" in coder_out
    # The coder's commit is on the remote's integration, merged from the reviewer's clone.
    assert task.merge_commit == git(remote, "rev-parse", "integration")
    assert git(remote, "show", "integration:T1.txt") == "done"
    assert git(remote, "log", "-1", "--format=%ae", task.review_commit) == (
        "coder-machine@example.com"
    )
    assert "T1: MERGED into integration" in reviewer_out
    # The merged branch is gone from the remote; the reviewer's clone kept no worktree of it.
    assert git(remote, "branch", "--list", "task/*") == ""
    assert not (machines["reviewer-machine"] / ".worktrees" / "T1.review").exists()
    # The original repository was never touched: each machine worked in its own clone.
    assert git(repo, "rev-parse", "integration") == git(repo, "rev-parse", "main")
    assert not (repo / ".worktrees").exists()


def test_an_unknown_remote_is_a_usage_error(supervisors, world):
    proc = supervisors.start("coder-1", ["true"], "--remote", "nowhere")
    code, out = finish(proc)
    assert code == 2, out
    assert "no git remote 'nowhere'" in out
    assert not Run.objects.filter(project=world.project).exists()


COMMIT_THEN_CRASH = (
    AGENT_LIB
    + """
with open(os.path.join(E["LIZA_WORKTREE"], "T1.txt"), "a") as f:
    f.write("half done\\n")
git("add", "-A"); git("commit", "-q", "-m", "half of T1")
sys.exit(3)
"""
)


def test_a_crashed_coders_commits_are_pushed_all_the_same(supervisors, world, repo, tmp_path):
    remote, machines = shared_remote(repo, tmp_path, "coder-machine")
    world.unclaimed("T1")
    proc = supervisors.start(
        "coder-1",
        write_agent(tmp_path, "crash", COMMIT_THEN_CRASH),
        "--repo", str(machines["coder-machine"]), "--remote", "origin",
    )  # fmt: skip

    code, out = finish(proc)

    assert code == 12, out  # the crash loop stopped it, after three spawns ...
    # ... each of whose commits reached the remote: the kept branch, pushed after every exit.
    assert git(remote, "rev-list", "--count", "main..task/T1") == "3", out
    assert git(remote, "show", "task/T1:T1.txt").splitlines() == ["half done"] * 3
    assert out.count("T1: pushed task/T1 to origin") == 3
    assert world.task("T1").status == TaskStatus.CLAIMED
