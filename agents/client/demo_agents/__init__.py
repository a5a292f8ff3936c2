"""Scripted agents (no LLM), one program per role, for the demo team under `liza supervise`.

`python -m agents.client.demo_agents.planner` (`.coder`, `.code_reviewer`). They follow the
supervisor's environment contract (common.Env) and the original's exit codes: 0 the role is
complete, 42 stop and let the supervisor restart (after a lost lease, a pause, or simply when
this session's work is done but the role's is not), anything else a crash.
"""
