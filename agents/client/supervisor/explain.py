"""`--dry-run` and `--explain`: what the supervisor would do, and the exact spawn it would run,
without registering, claiming or spawning; a part of `Supervisor` (loop.py)."""

from __future__ import annotations

import shlex
from pathlib import Path

from agents.client import gitops
from agents.client.supervisor.options import STOPPED, Assignment, normalise_role
from agents.client.supervisor.prompt import build_prompt


class ExplainMixin:
    # -- dry run -------------------------------------------------------------------------------

    def dry_run(self) -> int:
        """What the supervisor would do now, without registering, claiming or spawning."""
        config = self.client.get("config")
        integration = config.get("integration_branch") or "integration"
        body = self.client.work(role=normalise_role(self.o.role)).body
        self.say(f"repository {self.repo}, integration branch {integration}")
        self.say(f"/work: {body.get('reason')} (work={body.get('work')}, exit={body.get('exit')})")
        role = normalise_role(self.o.role) or "the key's role"
        try:
            base = gitops.base_commit(self.repo, integration, self.o.remote)
        except gitops.GitError as error:
            base = f"unavailable ({error})"
        if self.o.remote:
            self.say(
                f"shared remote {self.o.remote}: would fetch before each claim, push task "
                f"branches after each coder spawn, merge into {self.o.remote}/{integration}"
            )
        if role == "coder":
            self.say(f"would claim-next with base_commit {base}, prepare .worktrees/<task>")
        elif role == "code_reviewer":
            self.say(f"would merge {body.get('merge') or 'nothing'}, then review claim-next")
        self.say(f"would spawn: {' '.join(self.o.command) or self.o.agent_profile.name}")
        return STOPPED

    def explain(self) -> int:
        """`--explain`: the exact command, environment (secrets redacted) and prompt the next
        spawn would run, for a stand-in task; registers, claims and spawns nothing."""
        body = self.client.work().body
        self.agent = {"agent_id": body.get("agent") or "?", "role": body.get("role")}
        self.config = self.client.get("config")
        self.integration = self.config.get("integration_branch") or "integration"
        self.state = gitops.state_dir(self.repo, self.agent["agent_id"])
        self.key_file = (
            str(Path(self.o.key_file).resolve()) if self.o.key_file else str(self.state / "key")
        )
        task = None
        if self.role in ("coder", "code_reviewer"):
            task = {
                "key": "<task>", "iteration": 1, "description": "<the task's description>",
                "done_when": "<its done_when>", "base_commit": "<base>",
                "review_commit": "<review commit>", "assigned_to": "<coder>",
            }  # fmt: skip
        a = Assignment(
            task=task, worktree=gitops.worktree_path(self.repo, "<task>") if task else None
        )
        prompt = self.state / "prompt-explain.md"
        prompt.parent.mkdir(parents=True, exist_ok=True)
        prompt.write_text(build_prompt(self, a))
        cwd = a.worktree if self.role == "coder" and a.worktree else self.repo
        session, invocation, env = self.invocation(a, prompt, Path(cwd))
        print(f"profile: {self.o.agent_profile.name} ({self.o.agent_profile.channel})")
        print("command:")
        print("  " + self.redact(" ".join(shlex.quote(arg) for arg in invocation.command)))
        print(f"cwd: {cwd}")
        print("environment (LIZA_* and the profile's; the key only as a file):")
        for name in sorted(k for k in env if k.startswith("LIZA_") or k in invocation.env):
            value = env[name]
            if (
                any(w in name for w in ("KEY", "SECRET", "TOKEN", "PASSWORD"))
                and name != "LIZA_KEY_FILE"
            ):
                value = "[redacted]"
            print(f"  {name}={self.redact(value)}")
        for path, text in invocation.files.items():
            print(f"file {path} (0600):")
            print("  " + self.redact(text).replace("\n", "\n  "))
        print("prompt:")
        print(self.redact(session.prompt))
        return STOPPED
