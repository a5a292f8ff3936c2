"""Task writes, one module per part of a task's life (seed 000's task machine):

- `planning`: create, edit, dependencies, finalize;
- `resolutions`: resolving BLOCKED (release, rescope, abandon);
- `claims`: a named claim, claim-next;
- `work`: the coder's request for review and block;
- `merges`: the approving reviewer's merge or integration failure;
- `overrides`: a human's override block, stuck-claim release, cancel, suspend, resume;
- `limits`: limits enforced by the system, per-task overrides;
- `holders`: the agent-side effects of all of these.

The entity's operations are re-exported here: `from boards.services import tasks` then
`tasks.task_claim(...)`.
"""

from boards.coordination.services.tasks.claims import task_claim, task_claim_next
from boards.coordination.services.tasks.limits import LIMIT_FIELDS, task_set_limits
from boards.coordination.services.tasks.merges import (
    task_report_integration_failure,
    task_report_merge,
)
from boards.coordination.services.tasks.overrides import (
    task_cancel,
    task_override_block,
    task_release_claim,
    task_resume,
    task_suspend,
)
from boards.coordination.services.tasks.planning import (
    task_create,
    task_edit,
    task_finalize,
    task_set_dependencies,
)
from boards.coordination.services.tasks.resolutions import task_abandon, task_release, task_rescope
from boards.coordination.services.tasks.work import task_block, task_submit_for_review

__all__ = [
    "LIMIT_FIELDS",
    "task_abandon",
    "task_block",
    "task_cancel",
    "task_claim",
    "task_claim_next",
    "task_create",
    "task_edit",
    "task_finalize",
    "task_override_block",
    "task_release",
    "task_release_claim",
    "task_report_integration_failure",
    "task_report_merge",
    "task_rescope",
    "task_resume",
    "task_set_dependencies",
    "task_set_limits",
    "task_submit_for_review",
    "task_suspend",
]
