"""The supervisor's claims (before spawning), the approving reviewer's merges and a coder's
pushes to the shared remote: its git side; a part of `Supervisor` (loop.py)."""

from __future__ import annotations

from agents.client import gitops, wire
from agents.client.errors import LizaError
from agents.client.supervisor.options import Assignment


class ClaimsMixin:
    # -- claims --------------------------------------------------------------------------------

    def claim(self) -> Assignment | None:
        """Claim before spawning. None: nothing to take now (or the task was blocked)."""
        if self.role == "planner":
            return Assignment()
        if self.role == "code_reviewer":
            body = self.client.review_claim_next()
            if not body.get("review"):
                return None
            task = body["task"]
            if self.o.remote:
                worktree = gitops.prepare_review_worktree(
                    self.repo, task["key"], remote=self.o.remote, commit=task["review_commit"]
                )
                if worktree is None:
                    self.say(
                        f"{task['key']}: the review commit {task['review_commit']} is not on "
                        f"{self.o.remote} yet (its coder's supervisor pushes when the agent "
                        "exits); waiting"
                    )
                    return None
            else:
                worktree = gitops.worktree_path(self.repo, task["key"])
            self.say(f"claimed the review of {task['key']} at {task['review_commit']}")
            return Assignment(task=task, review=body["review"], worktree=worktree)
        if self.o.remote:
            gitops.fetch(self.repo, self.o.remote)
        # before the claim (T4)
        base = gitops.base_commit(self.repo, self.integration, self.o.remote)
        task = self.client.claim_next(base_commit=base)
        if task is None:
            return None
        key = task["key"]
        keep = key in self.held or task["iteration"] > 1 or task["integration_fix"]
        try:
            worktree = gitops.prepare_worktree(
                self.repo, key, base=task["base_commit"] or base, keep=keep, remote=self.o.remote
            )
        except gitops.GitError as error:
            self.say(f"{key}: the worktree cannot be prepared; blocking it: {error}")
            self.client.block(
                key,
                reason=f"the supervisor could not prepare the worktree: {error}"[:2000],
                questions=["Can the repository or the task's branch be repaired?"],
                attempted=[f"prepare .worktrees/{key} on {gitops.branch_of(key)}"],
            )
            return None
        if self.o.remote:
            self.pushed[key] = gitops.remote_commit(self.repo, self.o.remote, gitops.branch_of(key))
        handoff = None
        if task.get("handoff_pending"):
            try:
                handoff = self.client.pickup(key)
            except LizaError as error:
                self.say(f"{key}: the handoff could not be read: {error.message}")
        self.say(f"claimed {key} (iteration {task['iteration']}) in {worktree}")
        return Assignment(task=task, worktree=worktree, handoff=handoff)

    # -- merges (the approving reviewer's supervisor, seed 000 T10/T11) ------------------------

    def merge_approved(self, keys: list[str]) -> None:
        for key in keys:
            task = self.client.task(key)
            try:
                if self.o.remote:
                    merged = gitops.merge_task_remote(
                        self.repo,
                        key,
                        integration=self.integration,
                        review_commit=task.get("review_commit") or "",
                        remote=self.o.remote,
                    )
                else:
                    merged = gitops.merge_task(
                        self.repo,
                        key,
                        integration=self.integration,
                        review_commit=task.get("review_commit") or "",
                    )
            except gitops.PushError as error:
                # Not the work's fault: the task stays APPROVED, /work lists it again.
                self.say(f"{key}: not merged yet, the remote did not take it: {error}")
                continue
            except gitops.GitError as error:
                self.say(f"{key}: INTEGRATION_FAILED: {error}")
                self.client.integration_failed(key, reason=str(error)[:2000])
                continue
            self.client.merge(key, merge_commit=merged)
            self.say(f"{key}: MERGED into {self.integration} at {merged[:12]}")
            try:
                gitops.remove_worktree(self.repo, key)
                if self.o.remote:
                    gitops.remove_review_worktree(self.repo, key)
                    gitops.delete_remote_branch(self.repo, self.o.remote, gitops.branch_of(key))
            except gitops.GitError as error:
                self.say(f"{key}: merged, but its worktree could not be removed: {error}")

    # -- the shared remote (a coder's pushes) ---------------------------------------------------

    def push(self, key: str) -> None:
        """Push the coder's `task/<key>` after its agent exits, unless the task is no longer
        this agent's (its new holder's branch is not to be overwritten). A failed push is said
        and tried again at every round while the task stays ours."""
        try:
            task = self.client.task(key)
        except LizaError as error:
            self.say(f"{key}: not pushed now, the task could not be read: {error.message}")
            self.unpushed.add(key)
            return
        if (
            task.get("assigned_to") != self.agent["agent_id"]
            or task["status"] in wire.TERMINAL_TASK_STATES
        ):
            self.unpushed.discard(key)
            return
        try:
            self.pushed[key] = gitops.push_task(
                self.repo, key, remote=self.o.remote or "", expected=self.pushed.get(key)
            )
        except gitops.GitError as error:
            self.unpushed.add(key)
            self.say(
                f"{key}: PUSH FAILED: {gitops.branch_of(key)} is not on {self.o.remote}; a "
                f"reviewer cannot see this work until it is (retrying every round): {error}"
            )
            return
        self.unpushed.discard(key)
        self.say(f"{key}: pushed {gitops.branch_of(key)} to {self.o.remote}")

    def push_pending(self) -> None:
        for key in sorted(self.unpushed):
            self.push(key)
