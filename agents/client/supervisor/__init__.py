"""`liza supervise`: seed 000's supervisor for one agent, over the HTTP API (issue 12 §2).

It owns what an agent may not do itself: it registers the key's agent, waits for work without
spawning (polling `/work`, honouring Retry-After, waiting out a pause or a checkpoint, stopping
on an abort), claims **before** spawning (coders through claim-next with `base_commit`
computed first, reviewers through review claim-next), prepares the task's git worktree, writes
the prompt, spawns the agent command with the `LIZA_*` environment, heartbeats in the
background, and decides what the end of a session means without a wrapper (issue 23): 42
restarts after 2 s; any other exit asks `/work`: the role complete, it stops; else the next
session comes when there is work, unless the session crashed — a non-zero exit with no protocol
progress (restarted after 5 s; 3 crashes in 5 min stop it). It merges what its reviewer
approved, and reports each spawn to the server as a run.

The spawned command's environment (README "Supervisor"): LIZA_URL, LIZA_PROJECT, LIZA_KEY_FILE
(a 0600 file: the key itself is never in the environment), LIZA_ROLE, LIZA_AGENT_ID,
LIZA_GENERATION (its registration's: the agent's requests carry it), LIZA_TASK,
LIZA_WORKTREE, LIZA_PROMPT_FILE, LIZA_INTEGRATION_BRANCH, LIZA_BASE_COMMIT, LIZA_REPO,
LIZA_REMOTE (empty without a shared remote).

The package, one module a part: `loop` (the `Supervisor` class, its main loop and identity),
`claims` (claims, merges, a coder's pushes), `agent` (one spawn of the coding CLI and its
heartbeat), `restarts` (what an exit means, crash loops), `runs` (the runs the board shows),
`signals`, `explain` (`--dry-run`, `--explain`), `prompt` and `options`.
"""

from agents.client.supervisor.loop import Supervisor
from agents.client.supervisor.options import (
    CRASH_LOOP,
    OWN_ERRORS,
    STOPPED,
    Assignment,
    Options,
    Timing,
    normalise_role,
)
from agents.client.supervisor.prompt import build_prompt, wake_trigger

__all__ = [
    "CRASH_LOOP",
    "OWN_ERRORS",
    "STOPPED",
    "Assignment",
    "Options",
    "Supervisor",
    "Timing",
    "build_prompt",
    "normalise_role",
    "wake_trigger",
]
